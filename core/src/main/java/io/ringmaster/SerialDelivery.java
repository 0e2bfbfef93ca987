package io.ringmaster;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Delivers events to one listener, one at a time and in order, on an executor. A listener that
 * throws is logged and keeps receiving; a listener that blocks holds up only itself, unless its
 * executor runs callbacks on the thread that launches them (a same-thread executor): then it holds
 * up that thread, and the launches after its own.
 *
 * <p>Publishing is two steps, so that no listener runs under the publisher's lock: {@link
 * #enqueue} under the lock (which fixes the order), then {@link #launch()} or
 * {@link #launchInTurn()} after it (where a same-thread executor runs the listener).
 */
final class SerialDelivery<E> implements Registration {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /**
   * The deliveries whose listeners the current thread is running, innermost first: a same-thread
   * listener's callback (its close(), say) can run another's, inline.
   */
  private static final ThreadLocal<Frame> DELIVERING = new ThreadLocal<>();

  /**
   * The delivery whose {@link #launchInTurn()} the current thread is in, handing its drain to the
   * executor (null in any other launch).
   */
  private static final ThreadLocal<SerialDelivery<?>> LAUNCHING = new ThreadLocal<>();

  /**
   * One delivery running on a thread, inside {@code outer} (null for the outermost); {@code inline}
   * if its executor runs it in the launch itself (a same-thread executor), in a batch of launches
   * ({@link #launchInTurn()}), so that the launches after this one wait for its callback.
   */
  private record Frame(SerialDelivery<?> delivery, Frame outer, boolean inline) {}

  private final String name;
  private final Consumer<E> listener;
  private final Executor executor;
  /**
   * Whether the executor is the application's: then a launch onto it that returns with the
   * executor shut down and the callback not started counts as refused (see {@link #launch()}).
   */
  private final boolean foreignExecutor;
  private final Object owner;
  private final Runnable onClose;
  private final LongAdder failures;
  /**
   * Callbacks queued behind a busy one at which a WARNING says the listener falls behind; once its
   * queue is empty again, an INFO line says it caught up, and a later lag is warned of again.
   */
  static final int LAG_WARNING = 64;

  private final ArrayDeque<E> queue = new ArrayDeque<>();
  /** The queue reached {@link #LAG_WARNING} since it was last empty. */
  private boolean lagging;
  /** The WARNING of {@link #lagging}, for the next {@link #launch()} to log: not under the publisher's lock. */
  private boolean lagWarningDue;
  /** Why an {@link #enqueue} could not queue its event (no memory): the next launch reports the removal. */
  private Throwable notQueued;
  /** Events queued or being delivered: a drain is launched or about to be. */
  private boolean running;
  /** A callback is running now (taken from the queue, not yet returned). */
  private boolean delivering;
  /** Set by the {@link #enqueue} that found the listener idle, until its {@link #launch()}. */
  private boolean launchPending;
  /**
   * Set by {@link #enqueueFirst} until {@link #launchFirst}: the thread adding the listener launches
   * its first callback itself, so that it is the one to see the executor refuse it.
   */
  private boolean held;
  private boolean closed;
  /** The thread running the listener's callbacks, or null between drains. */
  private volatile Thread runner;
  /** What the executor threw when it refused a callback, which removed the listener; else null. */
  private volatile Throwable refusal;
  /** What the executor threw when it refused the first callback ({@link #launchFirst}); else null. */
  private volatile Throwable firstRefusal;

  /** A delivery on an application's executor. */
  SerialDelivery(String name, Consumer<E> listener, Executor executor, Object owner, Runnable onClose) {
    this(name, listener, executor, true, owner, onClose, new LongAdder());
  }

  /**
   * @param foreignExecutor whether {@code executor} is the application's (not the node's own pool)
   * @param owner           the node, for {@link #callingExecutor}
   * @param onClose         removes the listener from its node, when closed or when its executor refuses
   * @param failures        counts the callbacks that threw (the node's, shared by its listeners)
   */
  SerialDelivery(String name, Consumer<E> listener, Executor executor, boolean foreignExecutor, Object owner,
                 Runnable onClose, LongAdder failures) {
    this.name = name;
    this.listener = listener;
    this.executor = executor;
    this.foreignExecutor = foreignExecutor;
    this.owner = owner;
    this.onClose = onClose;
    this.failures = failures;
  }

  /**
   * The executor of the node's listener whose callback the current thread is running, or null if
   * it runs none. close() does not wait for the node's other listeners on it, since a serial
   * executor runs them only afterwards.
   */
  static Executor callingExecutor(Object owner) {
    Frame innermost = DELIVERING.get();
    return innermost != null && innermost.delivery.owner == owner ? innermost.delivery.executor : null;
  }

  /** The deliveries of the node's listeners whose callbacks the current thread is running, innermost first. */
  static List<SerialDelivery<?>> runningOnCurrentThread(Object owner) {
    List<SerialDelivery<?>> out = new ArrayList<>(1);
    for (Frame f = DELIVERING.get(); f != null; f = f.outer) {
      if (f.delivery.owner == owner) {
        out.add(f.delivery);
      }
    }
    return out;
  }

  /**
   * Whether the current thread runs one of {@code running}'s callbacks inline, in a batch of
   * launches ({@link #launchInTurn()}, a same-thread executor): the launches after that one wait
   * for the callback to return. A callback on a pool's thread holds up nothing, nor does one
   * launched alone (a listener's first event on the thread adding it, a divergence report on the
   * gossip thread).
   */
  static boolean holdsUpLaunches(List<SerialDelivery<?>> running) {
    for (Frame f = DELIVERING.get(); f != null; f = f.outer) {
      if (f.inline && running.contains(f.delivery)) {
        return true;
      }
    }
    return false;
  }

  /** Whether the current thread is running this delivery's listener, inside another's or not. */
  private boolean runningOnThisThread() {
    for (Frame f = DELIVERING.get(); f != null; f = f.outer) {
      if (f.delivery == this) {
        return true;
      }
    }
    return false;
  }

  String name() {
    return name;
  }

  /** Whether the executor refused a callback, which removed the listener. */
  boolean refused() {
    return refusal != null;
  }

  /** Whether the executor refused the first callback ({@link #launchFirst}), which removed the listener. */
  boolean refusedFirst() {
    return firstRefusal != null;
  }

  /**
   * Fails if the executor refused the first callback, which removed the listener: for the call
   * that adds it, whose first callback (the current ownership) it launches, so that the caller
   * learns the listener will never be called instead of holding a registration that does nothing.
   * A later callback refused meanwhile (the first one ran) does not fail it: the listener was
   * added, and that refusal is logged as any later one is.
   */
  void requireAccepted() {
    Throwable refused = firstRefusal;
    if (refused != null) {
      throw new RejectedExecutionException(name + ": its executor refused a callback as the listener was"
          + " added (" + refused + "), so it was not added", refused);
    }
  }

  Executor executor() {
    return executor;
  }

  /** Whether an {@link #enqueue} asked for a launch that {@link #launch()} would make now. */
  synchronized boolean launchPending() {
    return launchPending && !held;
  }

  /** Queues an event and starts delivering it if the listener is idle. */
  void submit(E event) {
    if (enqueue(event)) {
      launch();
    }
  }

  /**
   * Queues an event. True if the caller must {@link #launch()} the delivery, after releasing any
   * lock it holds: the listener was idle, or there is something to log (it fell behind, or the
   * event could not be queued). Never throws: an event it cannot queue (no memory) removes the
   * listener, as a refused callback does, rather than leave it a sequence with a gap.
   */
  synchronized boolean enqueue(E event) {
    if (closed) {
      return false;
    }
    if (isLeaving(event) && owner instanceof Ringmaster node) {
      // Counted before it is queued: one that cannot be queued (no memory) is never handled, and
      // the node's hand-off is done only once every listener given the change returns from it.
      node.leavingQueued();
    }
    try {
      queue.add(event);
    } catch (RuntimeException | Error e) {
      closed = true;
      queue.clear();
      notQueued = e;
      notifyAll();
      return true;
    }
    if (queue.size() == LAG_WARNING && !lagging) {
      lagging = true;
      lagWarningDue = true;
    }
    boolean idle = !running;
    if (idle) {
      running = true;
      launchPending = true;
    }
    return idle || lagWarningDue;
  }

  /**
   * The WARNING of a listener that falls behind, once per lag: logged by the launch after the
   * event that made it so, outside this delivery's monitor (which its listener's thread takes at
   * each callback) and the publisher's lock (a logger may block), and quietly, since a logger that
   * throws must not fail the launches.
   */
  private void warnLagging() {
    synchronized (this) {
      if (!lagging) {
        return; // caught up meanwhile (its INFO line may be out already): nothing to warn of
      }
    }
    Logs.quietly(() -> LOG.log(System.Logger.Level.WARNING, name + " falls behind: " + LAG_WARNING
        + " callbacks are queued behind the one it runs (each ownership change holds its rings until"
        + " delivered); see stats().pendingCallbacks()"));
  }

  /**
   * Queues the first event of a listener being added (the current ownership or members), which
   * only {@link #launchFirst} launches: another thread's {@link #launch()} (a listener's
   * close() or awaitListeners()) leaves it, so that the executor's refusal, if any, reaches the
   * thread adding the listener before {@link #requireAccepted} looks for it.
   */
  synchronized boolean enqueueFirst(E event) {
    held = enqueue(event);
    return held;
  }

  /** Launches the event of {@link #enqueueFirst}, and lets anyone launch from now on. */
  void launchFirst() {
    launch(true, false);
  }

  /**
   * Hands the queued events to the executor, if an {@link #enqueue} asked for it and no one has
   * done it yet: anyone may call it, once or more (a divergence report's publisher, say; a batch's
   * launcher calls {@link #launchInTurn()}), except while a first event waits for
   * {@link #launchFirst}. Never throws: an executor's refusal removes the
   * listener (even if logging it fails), so the launches to other listeners after this one go on.
   */
  void launch() {
    launch(false, false);
  }

  /**
   * {@link #launch()}, as one of a batch that the calling thread launches one after another (a
   * view's deliveries on the view thread, those close() hands over): a callback that the executor
   * runs here, inline, holds up the launches after it, which its close() or awaitListeners() then
   * makes itself ({@link #holdsUpLaunches}).
   */
  void launchInTurn() {
    launch(false, true);
  }

  private void launch(boolean first, boolean inTurn) {
    boolean warn;
    Throwable lost;
    boolean go = false;
    synchronized (this) { // held released and the launch claimed at once: no other thread takes a first launch
      if (first) {
        held = false;
      }
      warn = lagWarningDue;
      lagWarningDue = false;
      lost = first || !held ? notQueued : null; // a first event's, for the adding thread's launch alone
      if (lost != null) {
        notQueued = null;
      }
      if (lost != null && first) {
        firstRefusal = lost; // the listener being added was not: requireAccepted() says so
      }
      if (launchPending && !held) {
        launchPending = false;
        if (closed) {
          // Removed since the event was queued: nothing to deliver, and no executor to bother (it
          // may be shut down by now, and its refusal would be reported for a listener already gone).
          running = false;
          notifyAll();
        } else {
          go = true;
        }
      }
    }
    if (warn) {
      warnLagging();
    }
    if (lost != null) {
      Throwable notQueuedHere = lost;
      // The first event of a listener being added: its add fails with this (requireAccepted), and
      // says so to the caller; it was never added, so nothing is "removed".
      Logs.quietly(() -> LOG.log(first ? System.Logger.Level.DEBUG : System.Logger.Level.ERROR,
          first ? name + ": its first callback could not be queued (" + notQueuedHere + "); not added"
              : name + ": a callback could not be queued (" + notQueuedHere + "); the listener is removed so that"
              + " it never sees a sequence with a gap. Register it again to start over.", notQueuedHere));
      onClose.run();
    }
    if (!go) {
      return;
    }
    Launch task = new Launch();
    try {
      SerialDelivery<?> launching = LAUNCHING.get(); // a same-thread callback's close() launches others
      LAUNCHING.set(inTurn ? this : null);
      try {
        executor.execute(task);
      } finally {
        if (launching == null) {
          LAUNCHING.remove();
        } else {
          LAUNCHING.set(launching);
        }
      }
      if (foreignExecutor && executor instanceof ExecutorService pool && pool.isShutdown() && task.abandon()) {
        // A shut-down pool that neither ran the callback nor threw: CallerRunsPolicy discards it
        // then. Waiting for it would stall the listener for good. (A pool the application shut
        // down just after it took the callback would still run it: that callback is abandoned
        // too, and the listener removed, loudly, which is better than a listener stalled for good
        // when the shutdown came while the pool was taking it.)
        throw new RejectedExecutionException("the executor is shut down, and returned without running or"
            + " refusing the callback");
      }
    } catch (RuntimeException | Error e) {
      if (first) {
        firstRefusal = e;
      }
      // A RejectedExecutionException, or anything else the executor throws (an Error too, such
      // as no memory for a new thread: rethrown, it would strand the deliveries launched after
      // this one). Skipping this callback and delivering later ones would hand the listener a
      // sequence with a gap (the fold would no longer give its ownership): remove it instead,
      // loudly. Nothing escapes to the publisher, so other listeners still get the change.
      boolean leaving = false;
      boolean removedBefore;
      synchronized (this) {
        removedBefore = closed;
        running = false;
        closed = true;
        for (E event : queue) {
          leaving |= isLeaving(event);
        }
        // Not for a first launch: its add throws, so the listener was never added, and the LEAVING
        // change queued behind its first (a close() under way) is no hand-off the node missed.
        if (leaving && !first && !removedBefore && owner instanceof Ringmaster node) {
          node.leavingRefused(); // before the listener counts as idle: close() reads it once they all are
        }
        queue.clear();
        notifyAll();
      }
      if (removedBefore) {
        // Its registration was closed while this launch went on (and the executor then shut down):
        // no listener left to report the refusal for.
        Logs.quietly(() -> LOG.log(System.Logger.Level.DEBUG,
            "{0}: removed; its executor refused a callback after that ({1})", name, e));
        return;
      }
      refusal = e;
      try {
        if (first) {
          // The listener being added: its add fails with this refusal (requireAccepted), which
          // says it all to the caller; it was never added, so nothing is "removed".
          LOG.log(System.Logger.Level.DEBUG, "{0}: its executor refused the first callback ({1}); not added", name, e);
        } else if (owner instanceof Ringmaster node && node.stopping() && !leaving) {
          // The node's pools stop at the end of close(), after the LEAVING change: a close() from a
          // callback can still see a report handed on after it, which the node would not deliver.
          LOG.log(System.Logger.Level.DEBUG, "{0}: node closing, callback not run ({1})", name, e);
        } else if (leaving) {
          LOG.log(System.Logger.Level.ERROR, name + ": its executor refused the LEAVING change (" + e + "); the"
              + " listener never heard this node leave", e);
        } else {
          LOG.log(System.Logger.Level.ERROR, name + ": its executor refused a callback (" + e + "); the listener"
              + " is removed so that it never sees a sequence with a gap. Register it again to start over.", e);
        }
      } catch (RuntimeException | Error logging) {
        // The logger fails: the refusal stays in requireAccepted(); the launches after this one,
        // to other listeners (a ring change, a divergence report), must still go.
      } finally {
        onClose.run();
      }
    }
  }

  /** One launch's drain, run by the executor unless {@link #abandon()} came first. */
  private final class Launch implements Runnable {
    private final AtomicBoolean taken = new AtomicBoolean();

    @Override
    public void run() {
      if (taken.compareAndSet(false, true)) {
        drain();
      }
    }

    /** True if the drain had not started, and now never will. */
    boolean abandon() {
      return taken.compareAndSet(false, true);
    }
  }

  /** Whether an event is a LEAVING change, which close() queues before the pools stop: never to be refused. */
  private static boolean isLeaving(Object event) {
    return event instanceof OwnershipChange c && c.reason() == OwnershipChange.Reason.LEAVING;
  }

  private void drain() {
    Frame outer = DELIVERING.get(); // a same-thread listener's close() can run another's drain
    Frame frame = new Frame(this, outer, LAUNCHING.get() == this);
    runner = Thread.currentThread();
    // The node's own thread: its pool, or its view or gossip thread running a same-thread listener;
    // not an application's, even one that runs such a listener's callbacks (the thread that added
    // it, say). Asked of the thread, not of how the drain was launched: an executor may run it
    // later, on whichever thread.
    boolean nodeThread = owner instanceof Ringmaster node ? node.onOwnThread() : !foreignExecutor;
    boolean interrupted = false;
    try {
      while (true) {
        E event;
        boolean caughtUp;
        boolean done;
        synchronized (this) {
          event = queue.poll();
          caughtUp = event == null && lagging;
          if (caughtUp) {
            lagging = false;
          }
          done = event == null || closed;
          if (done) {
            running = false;
            runner = null;
            notifyAll();
          } else {
            delivering = true;
          }
        }
        if (caughtUp) { // outside the monitor, which the publisher takes to queue the next change
          Logs.quietly(() -> LOG.log(System.Logger.Level.INFO, name + " caught up: no callback queued"));
        }
        if (done) {
          return;
        }
        if (nodeThread) {
          // On the node's threads a callback starts with no interrupt left by the one before it
          // (this listener's, or another's on the same thread: divergence listeners one after
          // another on the gossip thread, say): close()'s, meant for that one, would fail the next
          // one's hand-off. The thread gets it back when the queue is drained. On an application's
          // thread an interrupt is the application's (close() sends none there): the next callback
          // sees it.
          interrupted |= Thread.interrupted();
        }
        DELIVERING.set(frame);
        try {
          listener.accept(event);
          if (isLeaving(event) && owner instanceof Ringmaster node) {
            node.leavingHandled(); // before this listener counts as idle, as a throw is counted before it
          }
        } catch (Throwable t) {
          reportThrown(t);
        } finally {
          synchronized (this) {
            delivering = false;
          }
        }
      }
    } finally {
      if (outer == null) {
        DELIVERING.remove(); // no trace left on an application's thread
      } else {
        DELIVERING.set(outer);
      }
      if (interrupted) {
        Thread.currentThread().interrupt(); // the thread's own, back
      }
    }
  }

  /**
   * Logs what a callback threw. A logger that throws in turn (a filter, a logging backend) must not
   * end this drain: the listener would be left marked running, and never called again.
   */
  private void reportThrown(Throwable thrown) {
    try {
      failures.increment();
    } catch (Throwable noMemory) {
      // a cell for a contended counter: the count misses this one, the drain goes on
    }
    try {
      LOG.log(System.Logger.Level.ERROR, name + " threw; later callbacks still run", thrown);
    } catch (Throwable logging) {
      try {
        System.err.println(name + " threw " + thrown + "; logging it failed: " + logging);
      } catch (Throwable ignored) {
        // nothing left to tell it with; the deliveries go on
      }
    }
  }

  /** Callbacks queued, plus the one running if any. */
  synchronized int pending() {
    return queue.size() + (delivering ? 1 : 0);
  }

  /** The thread running the listener's callbacks now, or null. */
  Thread runner() {
    return runner;
  }

  /** Wakes the threads in {@link #awaitIdle}, so that they test {@code futile} again. */
  synchronized void wake() {
    notifyAll();
  }

  /**
   * Waits until every queued callback has run, or the deadline passes. Called from the listener's
   * own callback, or from a callback that one runs inline on the same thread, returns at once:
   * what is queued behind that callback runs when it returns.
   *
   * @param futile tested with the thread running the callback, whenever this wakes: true when that
   *               thread cannot finish before this caller returns (it waits for this caller), and
   *               waiting is pointless: then returns false at once. Called under this delivery's
   *               lock.
   */
  synchronized boolean awaitIdle(long deadlineNanos, Predicate<Thread> futile) throws InterruptedException {
    while (running || !queue.isEmpty()) {
      if (closed) {
        return true; // its registration was closed: no longer waited for, even by a wait under way
      }
      if (runningOnThisThread()) {
        return true;
      }
      Thread t = runner;
      if (t != null && futile.test(t)) {
        return false;
      }
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return true;
  }

  @Override
  public synchronized boolean isActive() {
    return !closed;
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      queue.clear();
      notifyAll(); // the waits in awaitIdle stop waiting for it
    }
    onClose.run();
  }
}
