package io.ringmaster;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jgroups.JChannel;
import org.jgroups.View;

/**
 * A node's way out of a split view: JGroups installed one view id with two member lists (a race
 * in its merge handling, see docs/operations.md), and this node's list is the one no one else
 * has. JGroups' merge detection compares view ids only, so without a rejoin the split would last
 * until the next membership change. When a member of this node's view says that view does not
 * list it ({@link Gossip}), the node leaves the cluster and joins it again, on its own rejoin
 * thread, coming back as a new JGroups member (a new address) with the same id; its ring is
 * built from the new view like any other, so its listeners hear only what the new view changes.
 */
final class Rejoin {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /** How often failing rejoins are said at ERROR, after the first of a stretch. */
  static final Duration FAILURE_REPEAT = Duration.ofMinutes(1);

  private final RingmasterConfig config;
  /** The node's channel, which start() sets before the node may rejoin. */
  private final Supplier<JChannel> channel;
  /** Whether close() was called: from then on the node must not come back. */
  private final BooleanSupplier closing;
  /** Runs the rejoins; its thread starts only if the node ever rejoins. */
  private final ScheduledExecutorService thread;

  /**
   * Held by a rejoin from its first look at {@link #closing} to the end of its connect; a close()
   * takes it ({@link #awaitEnd}) before it leaves, so that it never leaves from the ring before the
   * rejoin, over a channel that is reconnecting.
   */
  final ReentrantLock lock = new ReentrantLock();
  /** A test seam: run on the rejoin thread, holding {@link #lock}, just before it connects again. */
  volatile Runnable beforeConnect = () -> { };
  private final AtomicLong rejoins = new AtomicLong();
  /** Set once start() has its first ring: from then on the node may rejoin. */
  private volatile boolean allowed;
  /** Set while a rejoin is queued or under way, so that reports of one split start one rejoin. */
  private final AtomicBoolean queued = new AtomicBoolean();
  /** Rejoin attempts failed in a row, and when one was last said at ERROR; under {@link #lock}. */
  private int failures;
  private long failureSaidAt;

  Rejoin(RingmasterConfig config, Supplier<JChannel> channel, BooleanSupplier closing,
         ScheduledExecutorService thread) {
    this.config = config;
    this.channel = channel;
    this.closing = closing;
    this.thread = thread;
  }

  /** Called once start() has its first ring: reports of a split start a rejoin from then on. */
  void allow() {
    allowed = true;
  }

  /** Rejoins that connected again ({@link RingmasterStats#rejoins()}). */
  long count() {
    return rejoins.get();
  }

  /**
   * Called on a JGroups thread when a member of this node's view says that view does not list
   * this node: queues one rejoin on the rejoin thread.
   */
  void later(View stale) {
    if (!allowed || closing.getAsBoolean() || !queued.compareAndSet(false, true)) {
      return;
    }
    try {
      thread.execute(() -> run(stale));
    } catch (RejectedExecutionException closed) {
      queued.set(false);
    } catch (Error e) { // no thread for the rejoin (out of memory, say): the next report tries again
      queued.set(false);
      Logs.quietly(() -> LOG.log(Level.ERROR, "{0}: cannot start rejoining the cluster: {1}",
          config.nodeId(), e));
    }
  }

  /**
   * Leaves the cluster and joins it again, if the channel is still in the view {@code stale} that
   * its peers did not install. An attempt that fails is retried every {@code gossipInterval} until
   * the node is connected again or closed. A join that no member answers leaves JGroups' connect()
   * with the node alone, as after a partition, for MERGE3 to merge back: that is logged, and not
   * retried.
   */
  private void run(View stale) {
    boolean retry = false;
    JChannel ch = channel.get();
    lock.lock();
    try {
      if (closing.getAsBoolean()) {
        return;
      }
      if (ch.isConnected()) {
        View v = ch.getView();
        if (v == null || !stale.getViewId().equals(v.getViewId())) {
          failures = 0;
          return; // a newer view came meanwhile: JGroups ended the split itself
        }
        // Quietly, as every line of a rejoin: a logger that throws must not keep the node split.
        Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: a member of view {1} does not list this node in"
            + " it: one view id with two member lists (a JGroups merge race); rejoining the cluster to end the split",
            config.nodeId(), stale.getViewId()));
        ch.disconnect();
      }
      if (closing.getAsBoolean()) {
        return; // closed while leaving: the LEAVING change is out, so the node must not come back
      }
      beforeConnect.run();
      ch.connect(config.clusterName());
      rejoins.incrementAndGet();
      failures = 0;
      View now = ch.getView();
      Logs.quietly(() -> {
        if (now != null && now.size() == 1 && stale.size() > 1) {
          LOG.log(Level.WARNING, "{0} rejoined {1} alone (view {2}): no member answered its join; it merges back"
              + " when MERGE3 finds the others", config.nodeId(), config.clusterName(), now.getViewId());
        } else {
          LOG.log(Level.INFO, "{0} rejoined {1}: view {2}", config.nodeId(), config.clusterName(),
              now == null ? "none" : now.getViewId());
        }
      });
    } catch (Exception | Error e) { // an Error too: nothing reads this task's future, so it would vanish
      retry = !closing.getAsBoolean();
      stopStackLeftHalfStarted(ch);
      logFailure(e, retry, System.nanoTime());
    } finally {
      lock.unlock();
      queued.set(false);
    }
    if (retry) {
      try {
        thread.schedule(() -> later(stale), config.gossipInterval().toMillis(), TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException closed) {
        Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: closing, no further rejoin", config.nodeId()));
      }
    }
  }

  /**
   * A failed rejoin attempt: the first of a stretch at ERROR with its stack trace, then at DEBUG,
   * with an ERROR again at most once a minute while they go on failing (an attempt every
   * {@code gossipInterval} would fill the log); at DEBUG when the node is closing. Quietly: a
   * logger that throws must not cancel the next attempt. Under {@link #lock}.
   *
   * @param nowNanos {@link System#nanoTime()}
   */
  void logFailure(Throwable e, boolean retry, long nowNanos) {
    int inARow = ++failures;
    long now = nowNanos;
    boolean say = retry && (inARow == 1 || now - failureSaidAt >= FAILURE_REPEAT.toNanos());
    if (say) {
      failureSaidAt = now;
    }
    String line = config.nodeId() + ": rejoining the cluster failed" + (inARow > 1 ? " (" + inARow
        + " attempts in a row; those between the ERROR lines at DEBUG)" : "") + "; next attempt in "
        + config.gossipInterval().toMillis() + " ms";
    Logs.quietly(() -> LOG.log(say ? Level.ERROR : Level.DEBUG, line, e));
  }

  /**
   * After a rejoin's connect failed: JGroups marks a stack started before it starts the protocols,
   * bottom up, and clears the mark only when it stops them. A protocol whose start threw (a
   * transport whose port was taken meanwhile, say) leaves those above it, the membership protocol
   * among them, never started, and the next connect would skip them all. Stopping the stack, as
   * JGroups' own close would, clears the mark; a stack already stopped (a connect that failed
   * after the start, or before it) is left as it is.
   */
  private void stopStackLeftHalfStarted(JChannel ch) {
    if (ch.isConnected()) {
      return;
    }
    try {
      ch.getProtocolStack().stopStack(config.clusterName());
    } catch (RuntimeException | Error e) {
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: stopping the stack after a failed rejoin failed:"
          + " {1}", config.nodeId(), e));
    }
  }

  /**
   * Waits for a rejoin under way to end, up to {@code timeoutMillis} (the time the LEAVING change
   * may take to queue). A rejoin looks at {@link #closing} before it disconnects and again before
   * it connects: closed during its connect, the node joins, and the LEAVING change comes from the
   * view it joined, with the channel connected for the hand-off; closed during its disconnect, it
   * does not join again, and the change comes from the ring before the rejoin, over a
   * disconnected channel (the other members have already seen it leave). A rejoin not ended in
   * time still ends before the channel closes. An interrupted caller does not wait, and keeps its
   * interrupt.
   */
  void awaitEnd(long timeoutMillis) {
    if (!lock.isLocked()) {
      return;
    }
    try {
      if (lock.tryLock(timeoutMillis, TimeUnit.MILLISECONDS)) {
        lock.unlock();
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the LEAVING change is still queued: see Ringmaster.leave
    }
    // Quietly: the leave that called this must still queue the LEAVING change.
    Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: a rejoin under way has not ended (waited at most {1}"
        + " ms); leaving from the ring before it", config.nodeId(), Long.toString(timeoutMillis)));
  }
}
