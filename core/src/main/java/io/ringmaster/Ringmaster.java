package io.ringmaster;

import io.ringmaster.RingmasterException.Reason;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.Receiver;
import org.jgroups.View;

/**
 * A cluster member that keeps a consistent-hash ring of the cluster's members and tells listeners
 * what this member gained and lost at every membership change.
 *
 * <pre>{@code
 * try (Ringmaster node = Ringmaster.builder()
 *         .clusterName("orders")
 *         .nodeId("orders-1")               // stable across restarts
 *         .replicas(2)
 *         .jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml")
 *         .build()) {
 *   node.addOwnershipListener(change -> {   // before start(): the first change names the sources
 *     change.gained().forEach(g -> fetch(g.range(), change.sourcesInRing(g))); // old owners still here
 *     change.lost().forEach(l -> handOff(l.range(), l.destinations()));
 *   });
 *   node.start();                           // returns once the first ring is installed
 *   boolean mine = node.isLocal("order:42");
 * }   // close(): listeners hear what this node loses, and to whom, before it leaves
 * }</pre>
 *
 * <p>Register ownership listeners before {@link #start()}: the node's first change then gains its
 * ranges from the members that hold the data. A listener added to a running node gets the current
 * ownership as a change from nothing instead ({@link OwnershipChange.Reason#INITIAL}, no sources).
 *
 * <p>Every member builds the same ring from the same JGroups view, so all agree on owners without a
 * coordinator; a background gossip compares ring checksums and reports any
 * {@link RingDivergence}, and a member whose view its peers did not install (one view id with two
 * member lists, which a JGroups merge race can leave) rejoins the cluster
 * ({@link RingmasterStats#rejoins()}). Lookups are lock-free reads of the last published ring.
 *
 * <p>Threads: JGroups threads only queue views and compare gossiped checksums, and never block
 * nor run user code. The node's view thread builds and publishes each
 * ring, then queues callbacks; each listener runs on the node's listener pool (or the executor
 * given at registration), one call at a time, in view order. A node's methods may be called from
 * any thread; a {@link Builder} is meant for one thread.
 *
 * <p>Until {@code start()} has installed the node's first ring (before it, while it waits, after it
 * failed before that ring, and on a node closed without starting) the ring is empty:
 * {@link #ownerOf(String)} and {@link #owners(String)} throw {@link IllegalStateException},
 * {@link #isLocal} and {@link #isInRing()} are false. After {@link #close()}, and after a start
 * that failed once its first ring was installed (and so left as close() does), the ring is the one
 * this node left behind (see there).
 *
 * <p>Loading this class changes two things for the whole JVM, other JGroups channels included.
 * Unless {@code org.jgroups}' java.util.logging level was set already (in the logging
 * configuration, or by code that ran before), it is raised to WARNING, and the TCP transport's
 * loggers that have no filter get one that drops the two records a normal shutdown produces (see
 * docs/api.md, "Observability in full"); with log4j2 or SLF4J on the class path JGroups does not
 * log through java.util.logging, so this changes nothing. And JGroups' {@code ExtendedUUID} addresses
 * print as their logical name (the node id) instead of their name and every key they carry.
 */
public final class Ringmaster implements AutoCloseable {
  /**
   * The version of how members decide membership together: what each announces about itself and
   * how others read it, the rules by which each admits or refuses a member and orders a view
   * ({@link RingmasterMembershipPolicy}), and the messages they gossip. Every member computes the
   * ring on its own, so every member must apply the same rules: members with different versions
   * refuse each other, as for different {@code virtualNodes}, naming both versions (builds from
   * before this version existed see another ring spec version, 65,537, and refuse this one too).
   * It changes with any change to those rules (at most 32,767); a rolling upgrade works between
   * builds with the same {@code PROTOCOL_VERSION} and {@link HashRing#SPEC_VERSION}
   * (docs/operations.md, "Upgrading").
   */
  public static final int PROTOCOL_VERSION = 1;

  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  static {
    JGroupsLogging.quietByDefault();
  }

  private enum Lifecycle { NEW, RUNNING, CLOSED }

  /** This node's thread pools, as {@link #close()} tells them apart from its caller's thread. */
  private enum Pool { VIEW, LISTENERS, GOSSIP, REJOIN }

  /** At least how long {@link #close()} waits for the view thread to queue the LEAVING change. */
  private static final Duration QUEUE_LEAVING_TIMEOUT = Duration.ofSeconds(5);
  /** Stacks {@link #start()} builds at most when the transport finds no port (see {@link #connect()}). */
  static final int BIND_ATTEMPTS = 3;

  private final RingmasterConfig config;
  private final NodeMetadata metadata;
  private final ExecutorService viewThread;
  private final ExecutorService listenerPool;
  private final ScheduledExecutorService gossipTimer;
  /** Runs the node's rejoins ({@link Rejoin}); its thread starts only if the node ever rejoins. */
  private final ScheduledExecutorService rejoinThread;
  private final ClusterNode node;
  private final DivergenceReports divergences;
  private final Member localMember;
  /** Set by start() (again on a port-race retry); read by any thread. */
  private volatile JChannel channel;
  private volatile Gossip gossip;
  /** Those that did not answer this node's "I am leaving" in time; null until it said it (for tests). */
  private volatile Set<Address> leavingUnanswered;
  /** The same, of "my hand-off is done". */
  private volatile Set<Address> handedOffUnanswered;
  /**
   * How long close() waits, at most, for the answers to each of its words (also at most
   * leaveTimeout). A test seam: a test that must see the node waiting lengthens it, so that a slow
   * machine cannot end the wait first.
   */
  volatile Duration answerTimeout = Gossip.ANSWER_TIMEOUT;
  private volatile Lifecycle lifecycle = Lifecycle.NEW;
  /** Set by a graceful leave whose wait found every listener idle: see {@link #leftIdle()}. */
  private volatile boolean leftIdle;
  /** Set by {@link #closeAbruptly()}: a leave whose wait for the listeners it cut short did not end idle. */
  private volatile boolean abrupt;
  /** Set when a listener's executor refused its LEAVING change: that listener never handed off. */
  private volatile boolean leavingRefused;
  /**
   * The ownership listeners that were handed the LEAVING change, and those of them whose callback
   * of it returned normally: the node says its hand-off is done only when the two are equal.
   */
  private final AtomicInteger leavingQueued = new AtomicInteger();
  private final AtomicInteger leavingHandled = new AtomicInteger();
  /** Set by the first close(): later calls wait for {@link #closeDone}, or return at once. */
  private final AtomicBoolean closeCalled = new AtomicBoolean();
  /** Callbacks of this node's listeners that threw: {@link RingmasterStats#listenerFailures()}. */
  private final LongAdder listenerFailures = new LongAdder();
  /** Whether the last gossip round failed with an exception; read and written by the gossip thread only. */
  private boolean gossipFailing;
  /** Says when the view thread holds the ring back; gossip thread only. */
  private final ViewThreadWatch viewThreadWatch;
  private final CompletableFuture<Void> closeDone = new CompletableFuture<>();
  /** Set once {@link #shutdown} has ended (see {@link #shutDown()}). */
  private volatile boolean shutDown;
  /** Ends a split view by leaving and joining again; allowed once start() has its first ring. */
  final Rejoin rejoin;
  /** Which of this node's pools runs the current thread; empty on every other thread. */
  private final ThreadLocal<Pool> ownPool = new ThreadLocal<>();

  private Ringmaster(RingmasterConfig config) {
    this.config = config;
    this.metadata = NodeMetadata.of(config);
    this.localMember = metadata.member();
    String id = config.nodeId();
    this.viewThread = Executors.newSingleThreadExecutor(threads("ringmaster-view-" + id, Pool.VIEW));
    this.listenerPool = Executors.newCachedThreadPool(threads("ringmaster-listener-" + id, Pool.LISTENERS));
    this.gossipTimer = Executors.newSingleThreadScheduledExecutor(threads("ringmaster-gossip-" + id, Pool.GOSSIP));
    // Its own thread: a rejoin takes seconds, and the gossip thread's sends must not wait for it.
    this.rejoinThread = Executors.newSingleThreadScheduledExecutor(threads("ringmaster-rejoin-" + id, Pool.REJOIN));
    this.viewThreadWatch = new ViewThreadWatch(id);
    this.divergences = new DivergenceReports(id, gossipTimer);
    this.rejoin = new Rejoin(config, () -> channel, closeCalled::get, rejoinThread);
    // A newcomer's first view waits at most this long for the ring before it (usually milliseconds).
    this.node = new ClusterNode(metadata, viewThread, RingsBefore.timeout(config.startTimeout()), listenerPool);
  }

  /** A builder with the defaults of {@link Builder}. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A node (not started) configured from a JSON file whose keys are the builder's setting names
   * (durations as {@code leaveTimeoutMillis}, {@code gossipIntervalMillis}, {@code startTimeoutMillis}).
   * A relative {@code jgroupsConfig} is looked up beside the file first.
   *
   * @throws IllegalArgumentException naming the file and the key on a missing file, an unknown
   *                                  key or a bad value
   */
  public static Ringmaster fromConfig(Path file) {
    return builder().config(file).build();
  }

  /**
   * Joins the cluster and returns once the first ring is installed. A stack that finds no port of
   * its range to bind, as happens when it loses a race for one with another process starting on
   * this host, is built again, up to three stacks in all (see docs/operations.md).
   *
   * @return this node
   * @throws RingmasterException if the cluster refuses this node (its ring parameters differ from
   *                             the cluster's, or a live member holds the same node id: the message
   *                             says which; listeners hear nothing, since no ring was installed; or
   *                             a wrong secret: its coordinator refuses the join), or
   *                             the stack cannot start, or {@link #close()} was called meanwhile,
   *                             or the calling thread is interrupted (on entry, or while it waits
   *                             for the first ring; its interrupt flag is set again);
   *                             the node is then closed (build a new one, with the same settings,
   *                             to try again). Its {@link RingmasterException#reason() reason()}
   *                             tells these apart ({@code REFUSED}, {@code ID_HELD},
   *                             {@code STACK}, {@code START_TIMEOUT}, {@code CLOSED},
   *                             {@code INTERRUPTED}, ...).
   *                             A start that fails once its first ring is installed
   *                             (a logger that throws on its INFO line, say) leaves as
   *                             {@link #close()} does: the listeners, told the first ring, are told
   *                             the LEAVING change too (and an Error there, such as no thread left
   *                             for the gossip timer, is thrown as it is, after the same leave)
   * @throws IllegalArgumentException if the JGroups stack refuses one of its settings (a keystore
   *                                  key that {@code SharedSecretEncrypt} cannot use, say: the
   *                                  message names it; a value from a stack variable: the message
   *                                  names the variables set), or one of its protocols makes the node's
   *                                  address (RELAY2's address tagging, RELAY3), or JGroups replaced a
   *                                  {@code bind_addr} or {@code mcast_addr} the stack gives as an IP
   *                                  literal (in a JVM that prefers IPv6 addresses, say: see
   *                                  docs/operations.md); the node is then closed
   * @throws IllegalStateException if {@code start()} was called before, or the node is closed
   */
  public synchronized Ringmaster start() {
    if (lifecycle == Lifecycle.CLOSED) {
      throw new IllegalStateException("node " + config.nodeId() + " is closed; a closed node cannot start again:"
          + " build a new one with the same settings to rejoin");
    }
    if (lifecycle != Lifecycle.NEW) {
      throw new IllegalStateException("start() was already called on node " + config.nodeId());
    }
    if (closeCalled.get()) { // a close() that has not taken this lock yet: the node must not join
      throw new IllegalStateException("node " + config.nodeId() + " is closed; a closed node cannot start again:"
          + " build a new one with the same settings to rejoin");
    }
    lifecycle = Lifecycle.RUNNING;
    boolean published = false; // the listeners have been told the first ring
    try {
      if (Thread.interrupted()) {
        // Checked first, as blocking calls do: JGroups' connect keeps an interrupt for later, and
        // the wait for the first ring notices it only if the ring has not come by then.
        throw new InterruptedException();
      }
      node.setRingBeforeSender((viewId, creator, before, leftGracefully, newcomers) -> {
        try {
          gossipTimer.execute(() -> gossip.sendRingBefore(viewId, creator, before, leftGracefully, newcomers));
        } catch (RejectedExecutionException closing) {
          LOG.log(Level.DEBUG, "view {0}: closing, newcomers not told the ring before it", Long.toString(viewId));
        }
      });
      connect();
      awaitFirstRing();
      published = true;
      long interval = config.gossipInterval().toMillis();
      gossipTimer.scheduleWithFixedDelay(this::gossipRound, interval, interval, TimeUnit.MILLISECONDS);
      // In here: a logger that throws fails the start, which stops the node, rather than leave a
      // running node to a caller that got no reference to it. Ids and durations as text: a number
      // would be formatted for the locale ("view 1,234"), and an operator's search for it would fail.
      LOG.log(Level.INFO, "{0} joined {1}: view {2}, {3} members", config.nodeId(), config.clusterName(),
          Long.toString(viewId()), members().size());
      rejoin.allow();
    } catch (Exception | Error e) { // an Error too (no native thread left, say): the caller may hold no reference to close
      Throwable failure;
      try {
        failure = StartFailures.describe(config, e, published);
      } catch (RuntimeException | Error describing) { // no memory for the message, say: the node still shuts down
        failure = describing;
        if (describing != e) {
          describing.addSuppressed(e);
        }
      }
      // Cleared while the node shuts down, whose waits (the channel's close, the pools) would
      // otherwise give up at once; set again for the caller.
      boolean interrupted = Thread.interrupted() || e instanceof InterruptedException;
      try {
        if (published) {
          // The listeners have the first ring's gains: they get the LEAVING change too, as from
          // close(), or their folds would go on owning what the node never held after all. As in
          // close(): a close() called from now on (a listener's, on its LEAVING change) returns at
          // once instead of blocking on this node's lock while the leave waits for that listener.
          // One a listener called earlier, in its first callback, waits for this lock, and the
          // leave below waits for that listener until leaveTimeout (a rare pair: the start failing
          // after its first ring is a logger that throws, or no thread left for the gossip timer).
          closeCalled.set(true);
          try {
            leave(null);
          } finally {
            closeDone.complete(null);
          }
        } else {
          shutdown(null, ClusterNode.ListenersState.BUSY, null);
        }
      } catch (RuntimeException | Error again) { // the start's failure is the one to report
        if (again != failure) { // one preallocated OutOfMemoryError, say
          failure.addSuppressed(again);
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
      if (failure instanceof Error error) {
        throw error;
      }
      throw (RuntimeException) failure;
    }
    return this;
  }

  /**
   * Builds the stack, wires it to this node and joins the cluster. JGroups' TCP transport can lose
   * a race for a port when several processes on one host start at once: two of them bind the same
   * free port (SO_REUSEADDR lets both while neither listens), one listens, and the other's listen
   * fails. Its server socket stays bound to that port, so binding it to each later port of the
   * range fails too, and the stack reports "No available port to bind to in range" while most of
   * the range is free (JGroups closes that socket before it says so). A new stack binds the next
   * free port, so a start that fails so is tried again with a new stack, {@link #BIND_ATTEMPTS}
   * stacks in all; a range that really is full fails each time, with the same message. A failed
   * connect has delivered no view: the transport binds when the stack starts, before the join.
   */
  private void connect() throws Exception {
    for (int attempt = 1; ; attempt++) {
      channel = Stacks.create(config);
      gossip = new Gossip(config.nodeId(), channel, node, divergences::report, gossipTimer, rejoin::later);
      channel.addAddressGenerator(() -> {
        Address address = metadata.newAddress();
        node.setLocalAddress(address);
        return address;
      });
      channel.name(config.nodeId());
      channel.setReceiver(new Receiver() {
        @Override
        public void viewAccepted(View view) {
          node.onView(view);
        }

        @Override
        public void receive(Message msg) {
          gossip.receive(msg);
        }
      });
      if (closeCalled.get()) {
        // Closed while the stack was built: joining now would only mean leaving again, and each
        // member handing this node ranges, then taking them back. (A close() during the connect
        // itself is seen once the first view is in: failFirstRing.)
        throw new ExecutionException(closedWhileStarting());
      }
      try {
        channel.connect(config.clusterName());
        return;
      } catch (Exception e) {
        if (attempt == BIND_ATTEMPTS || !StartFailures.foundNoPort(e)) {
          throw e;
        }
        LOG.log(Level.WARNING, "{0}: its JGroups stack found no port to bind ({1}), most likely after a race for a"
            + " port with another process starting on this host; starting a new stack (attempt {2} of {3})",
            config.nodeId(), e.getMessage(), attempt + 1, BIND_ATTEMPTS);
        try {
          Stacks.closeKeepingTheInterrupt(channel, config.nodeId());
        } catch (RuntimeException closing) {
          e.addSuppressed(closing);
          throw e;
        }
        if (Thread.interrupted()) { // no new stack, only to join and leave at once: start() fails as interrupted
          InterruptedException stop = new InterruptedException("interrupted before a new stack after a race for a port");
          stop.addSuppressed(e);
          throw stop;
        }
      }
    }
  }

  /**
   * Leaves gracefully: first waits for a rejoin under way, if any, to end (see
   * {@link RingmasterStats#rejoins()}; at most the longer of {@code leaveTimeout} and 5 s),
   * tells the other members that it is leaving and waits for their answers (up to 2 s, or
   * {@code leaveTimeout} if shorter: see docs/api.md, "Moving the data"),
   * then tells this node's ownership listeners everything it loses and to whom
   * ({@link OwnershipChange.Reason#LEAVING}; queued whatever the {@code leaveTimeout}, 0
   * included: by the view thread, or, if a listener on a same-thread executor holds that thread
   * for longer than {@code leaveTimeout} and 5 s, by close() itself, with a warning, and then the
   * callbacks the view thread would have started are handed over from the node's pool, so that a
   * same-thread listener's run on a pool thread, but for the held listener's, which runs on the
   * view thread once its callback returns), waits up to
   * {@code leaveTimeout} from then for them to finish (to hand data off), then, if they did, tells
   * the other members that its hand-off is done and waits for their answers (as long at most),
   * then leaves the cluster
   * (bounded by the stack's own leave timeout) and stops the node's threads (up to a second for
   * each of its four pools: views, gossip, rejoins, listeners; a listener on the node's pool still
   * busy then is interrupted, and given one more second, after which a WARNING says it still
   * runs). Callbacks already queued are never dropped: that
   * interrupted thread goes on to run what is still queued for its listener, the LEAVING change
   * included, after close() returns and with the channel closed; and listeners on executors of yours
   * run theirs whenever those executors do (close() does not shut down an executor it was given).
   * Afterwards {@link #ring()} is the ring this node left
   * behind, its last ring without it (the LEAVING change's {@link OwnershipChange#ring()}, unless a
   * view came after that change), so the lookups name the members that took its ranges, and
   * {@link #isInRing()}, {@link #isLocal} and {@link #isPrimary} are false, as a listener's fold
   * says once it has run the LEAVING change. Idempotent: a second call waits for the first to
   * finish (interrupted meanwhile, it returns with its flag set), unless it comes from one of this
   * node's listeners (see below).
   *
   * <p>A listener may call it, on any executor. That close() cannot wait for the listener calling
   * it: that listener's own LEAVING change, and anything else queued for it, comes after its
   * callback returns, when the node has left the cluster. It still names the new owners, but the
   * node's channel is closed by then; a listener that hands data off on its LEAVING change should
   * call close() from another thread. The other listeners are waited for as usual, except those
   * on the caller's own executor when that is not the node's pool (a serial executor would run
   * them only after the caller returns; so, on an executor of yours with many threads, those
   * listeners may still be running their LEAVING change when the channel closes: give a listener
   * that calls close() an executor of its own, or the node's pool). The calling thread is not
   * interrupted. A listener that calls close() while another close() is under way returns at once,
   * since that close() may be waiting for it.
   *
   * <p>A thread whose interrupt flag is set when it calls close() (a {@code finally} after a
   * caught {@code InterruptedException}, say) still gets the whole graceful leave, and keeps its
   * flag; interrupting the thread while it waits in close() cuts short its waits for a rejoin, for
   * the members' answers and for the listeners instead, but the LEAVING change is still queued for
   * them (close() waits up to 5 s more for that), the callbacks queued by then still run, after
   * close() returns, and close() returns with the flag set.
   *
   * <p>Called while {@link #start()} runs on another thread, before the first ring came, close()
   * makes that start() give up: without joining if it has not connected yet (the cluster never
   * sees the node), else once its connect returns (it throws a {@link RingmasterException}:
   * "closed while it started"; no listener hears anything), and returns after it.
   */
  @Override
  public void close() {
    if (!closeCalled.compareAndSet(false, true)) {
      if (ownPool.get() == null && SerialDelivery.callingExecutor(this) == null) {
        awaitFirstClose(); // the first close(), on another thread, is not waiting for this one
      }
      return;
    }
    // A flag set before the call would make every wait below give up at once: no hand-off at all.
    boolean interruptedBefore = Thread.interrupted();
    try { // from here on, closeDone is completed whatever fails: later close() calls wait for it
      try {
        node.wakeWaiters(); // threads in awaitRing see the node closing, instead of holding up its listeners
        // A start() under way, which holds the lock taken below, gives up before it connects, or
        // once its connect returns, rather than wait up to startTimeout for a ring and join only to
        // leave again. Nothing if its first ring is already published: then it returns, and this
        // close() leaves gracefully.
        node.failFirstRing(closedWhileStarting());
      } catch (RuntimeException | Error e) {
        // No memory for the future or the exception, say: the node must still leave, or nothing
        // could make it (every later close() returns at once).
        Logs.quietly(() -> LOG.log(Level.ERROR, config.nodeId() + ": waking the threads waiting for a"
            + " ring failed; leaving all the same", e));
      }
      synchronized (this) { // start() may still hold it, until its first ring
        if (lifecycle != Lifecycle.RUNNING) {
          lifecycle = Lifecycle.CLOSED;
          node.close(); // a listener being added now is refused, as after any close()
          return;
        }
      }
      // Outside the lock: called from a same-thread listener's callback, this runs the callbacks
      // queued behind that one (see ClusterNode.awaitListeners). start() has returned
      // (a second call fails: the node is started), and closeCalled keeps a second close() out.
      leave(ownPool.get());
      Logs.quietly(() -> LOG.log(Level.INFO, "{0} left {1}", config.nodeId(), config.clusterName()));
    } finally {
      closeDone.complete(null);
      if (interruptedBefore) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * A later close() waits for the first, as long as it takes; interrupted meanwhile, it returns with
   * its flag set (the first goes on). A flag set before the call does not cut it short, as it does
   * not cut short the first close()'s leave.
   */
  private void awaitFirstClose() {
    boolean interrupted = Thread.interrupted();
    try {
      closeDone.get();
    } catch (InterruptedException e) {
      interrupted = true;
    } catch (ExecutionException never) { // closeDone is only ever completed normally
      throw new IllegalStateException(never);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void leave(Pool caller) {
    ClusterNode.ListenersState listeners = ClusterNode.ListenersState.BUSY;
    Executor unwaited = unwaitedExecutor();
    try {
      if (caller != Pool.VIEW) { // on the view thread, the rejoin's view would queue behind this wait
        rejoin.awaitEnd(Math.max(QUEUE_LEAVING_TIMEOUT.toMillis(), config.leaveTimeout().toMillis()));
      }
      announceLeave(false);
      // Queued whatever the leaveTimeout, even 0, or a listener's fold would never see the node
      // leave. The view thread only builds rings and queues callbacks, so this takes milliseconds
      // (up to a second when every member owns everything, whose LEAVING diff names N - 1 owners
      // for each of its N * V ranges), unless a listener on a same-thread executor runs on it:
      // then it may be this very thread, which queues the change itself (views queued behind it
      // are dropped: the node is leaving).
      long queuedAt; // when the change was queued: the listeners' leaveTimeout counts from then
      if (caller == Pool.VIEW) {
        queuedAt = node.announceLeaving(); // before this thread runs same-thread listeners' callbacks
      } else {
        long queueTimeout = Math.max(QUEUE_LEAVING_TIMEOUT.toMillis(), config.leaveTimeout().toMillis());
        long waitedFrom = System.nanoTime();
        try {
          queuedAt = awaitThroughInterrupts(node.queueLeaving(), queueTimeout);
        } catch (TimeoutException held) {
          // A listener on a same-thread executor holds the view thread (a long hand-off in its
          // callback, say). Waiting longer could take forever, and shutting down without the
          // change would leave every listener's fold owning what the node gave up: queue it here.
          boolean queuedHere;
          try {
            queuedHere = node.announceLeavingFromElsewhere();
          } catch (RuntimeException | Error e) { // as the view thread's failure to queue it: in building the ring
            throw new ExecutionException(e);
          }
          queuedAt = System.nanoTime();
          // The time waited, not queueTimeout: an interrupt cuts the wait short (awaitThroughInterrupts).
          long waited = TimeUnit.NANOSECONDS.toMillis(queuedAt - waitedFrom);
          // Quietly: the wait for the listeners' hand-off below must still run.
          Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: the view thread was still busy after {1} ms (a"
              + " listener on a same-thread executor?); " + (queuedHere ? "the LEAVING change was queued by close()"
              + " instead, and " : "") + "the callbacks the view thread had yet to start were handed to the node''s"
              + " pool", config.nodeId(), Long.toString(waited)));
        }
      }
      long deadline = queuedAt + config.leaveTimeout().toNanos();
      List<SerialDelivery<?>> callers = runningHere();
      listeners = node.awaitListeners(deadline, unwaited, callers, true);
      // A listener that calls close() gets its LEAVING change only once its callback returns, after
      // the node left (and the others on its executor, if not the node's pool, were not waited for).
      // Read after the wait: a crash (closeAbruptly) during it stopped the listeners, not their hand-off's end.
      leftIdle = listeners == ClusterNode.ListenersState.IDLE && callers.isEmpty() && !abrupt && !leavingRefused;
      // Only if every listener handed the LEAVING change returned from it: not one that threw, nor one
      // whose registration was closed before its callback ended (the wait does not count it, and it
      // may still be pushing). A failure of any other callback says nothing of this hand-off. And
      // only if there was one: a node refused when it left, then admitted by a view, held nothing.
      if (leftIdle && leavingHandled.get() == leavingQueued.get() && node.handedOff()) {
        announceLeave(true); // what this node held is where its LEAVING change sent it
      }
      if (listeners == ClusterNode.ListenersState.BUSY && !config.leaveTimeout().isZero()) {
        // Naming whose hand-off may be cut short, but for the listeners that called close(): no wait helps them.
        Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: listeners still busy after leaveTimeout {1} ms;"
            + " leaving anyway (raise leaveTimeout, or speed up their hand-off): {2}", config.nodeId(),
            Long.toString(config.leaveTimeout().toMillis()), String.join("; ", node.busyListeners(unwaited, callers))));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: could not announce the leave: {1}", config.nodeId(),
          e));
    } finally {
      try {
        // Here, outside the node's lock, whether or not the wait above ran (the LEAVING change may
        // have failed to queue): shutdown() waits for the listeners under it, and launches nothing.
        node.launchHeldUp(runningHere());
      } finally {
        shutdown(caller, listeners, unwaited); // whatever happened above, the node leaves and its threads stop
      }
    }
  }

  /**
   * Tells the other Ringmaster nodes of the view that this node is leaving, before its LEAVING
   * change is queued: one closed at the same time then hands nothing to it, if the news is there
   * before it makes its own change (see {@code Gossip.TYPE_LEAVING}). Said by a node the cluster
   * refuses too: a view may let it in before it has left (the holder of its id gone), and a member
   * closing then must hand it nothing. Said to the members the cluster refuses too: one let in
   * before this node has left must hand it nothing if it closes then. With {@code handedOff}, once
   * the node, in the ring, made that change and every listener handled it within leaveTimeout, none
   * throwing: the old members then name this node to the newcomers of the view it leaves in as a
   * member whose data went to the ring without it ({@code Gossip.TYPE_HANDED_OFF}). After either
   * word it waits for their answers, up to {@link #answerTimeout} (or {@code leaveTimeout}, if
   * shorter): after the first, so that of two nodes closing at once one at least hands the other
   * nothing; after the second, so that the view it leaves in reaches them after the word (but for
   * those that do not answer in that time). A send that fails is logged at DEBUG, and whatever
   * fails here, the leave goes on: the others treat this node as one that left without a word.
   */
  private void announceLeave(boolean handedOff) {
    try {
      ClusterNode.Snapshot s = node.state();
      Gossip g = gossip;
      if (g == null) {
        return;
      }
      if (handedOff && !s.localInRing()) {
        return;
      }
      Duration most = answerTimeout;
      Duration wait = config.leaveTimeout().compareTo(most) < 0 ? config.leaveTimeout() : most;
      Set<Address> silent = g.sayAndAwaitAnswers(s, handedOff, wait);
      if (handedOff) {
        handedOffUnanswered = silent;
      } else {
        leavingUnanswered = silent;
      }
      if (!silent.isEmpty()) {
        Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: no answer in {1} ms to \"{2}\" from {3}; going on all the"
            + " same", config.nodeId(), Long.toString(wait.toMillis()), handedOff ? "my hand-off is done"
            : "I am leaving", silent));
      }
    } catch (RuntimeException e) {
      Logs.quietly(() -> LOG.log(Level.WARNING, config.nodeId() + ": could not tell the others that it "
          + (handedOff ? "handed its data off" : "is leaving"), e));
    }
  }

  /**
   * Waits for the LEAVING change to be queued, up to {@code timeoutMillis}, through interrupts: an
   * interrupt now would let the shutdown close the node before the view thread queues the change,
   * and the listeners would never see the node leave. After an interrupt it waits at most
   * {@link #QUEUE_LEAVING_TIMEOUT} more (the view thread may be held by a same-thread listener).
   * The interrupt is kept for the caller, and cuts short the wait for the listeners that comes next.
   *
   * @return the {@link System#nanoTime()} at which the change was queued
   */
  private static long awaitThroughInterrupts(Future<Long> queued, long timeoutMillis)
      throws ExecutionException, TimeoutException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return queued.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true; // the flag is clear now: wait again, not for long
          long bound = System.nanoTime() + QUEUE_LEAVING_TIMEOUT.toNanos();
          deadline = deadline - bound < 0 ? deadline : bound;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** What a start() under way throws once close() or closeAbruptly() was called. */
  private RingmasterException closedWhileStarting() {
    return new RingmasterException(Reason.CLOSED, "node " + config.nodeId() + " was closed while it started");
  }

  /** Stops without the graceful hand-off; what a crash looks like to this node's listeners. */
  void closeAbruptly() {
    boolean closing = closeCalled.getAndSet(true); // a close() under way: it ends, and says it did, after this
    abrupt = true; // a leave still waiting for its listeners would find them idle because this stopped them
    try {
      node.wakeWaiters();
      // As in close(): a start() under way, which holds the lock taken below, gives up before it
      // connects, or once its connect returns, instead of waiting up to startTimeout for a ring.
      node.failFirstRing(closedWhileStarting());
    } finally { // whatever failed above (no memory for the exception, say): the node still stops
      synchronized (this) {
        try {
          shutdown(ownPool.get(), ClusterNode.ListenersState.BUSY, null);
        } finally {
          if (!closing) {
            closeDone.complete(null); // a close() that comes later must not wait for it forever
          }
        }
      }
    }
  }

  /**
   * Leaves the cluster and stops the node's pools. A pool that runs the caller (a listener, or a
   * same-thread listener on the view or gossip thread, closing the node) is not waited for, and
   * the caller is not interrupted: its thread ends once the callback returns.
   *
   * @param listeners what waiting for the listeners found; if they were busy, the others get a
   *                  second more, then an interrupt; if they wait for the caller (a circle), they
   *                  are neither waited for nor interrupted: they go on once it returns
   * @param unwaited  the caller's executor, whose listeners are not waited for, or null
   */
  private synchronized void shutdown(Pool caller, ClusterNode.ListenersState listeners, Executor unwaited) {
    lifecycle = Lifecycle.CLOSED;
    // An interrupt that cut short the leave's waits (see close()) does not cut these short: the
    // channel closes and the node's threads are waited for as after any leave. Set again at the
    // end; one that comes during these waits still ends them.
    boolean interrupted = Thread.interrupted();
    try {
      shutdownSteps(caller, listeners, unwaited);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** The steps of {@link #shutdown}, under this node's lock, with the caller's interrupt flag clear on entry. */
  private void shutdownSteps(Pool caller, ClusterNode.ListenersState listeners, Executor unwaited) {
    // Every step runs even if one before it threw (a protocol failing in the channel's close, say):
    // the first failure is thrown at the end, the others suppressed in it.
    List<Throwable> failures = new ArrayList<>();
    attempt(failures, node::close); // no view installed or callback queued from here on
    attempt(failures, () -> stop(gossipTimer, caller == Pool.GOSSIP));
    attempt(failures, () -> stop(rejoinThread, false)); // never the caller: it runs no listener
    if (channel != null) {
      // After a rejoin under way has connected or given up: JChannel orders the two.
      attempt(failures, () -> Stacks.closeKeepingTheInterrupt(channel, config.nodeId()));
    }
    attempt(failures, () -> stop(viewThread, caller == Pool.VIEW));
    try {
      // A view being installed or a gossip round in flight finishes before close() returns, unless
      // it ignores the interrupt for a second (a listener on the view thread, say): then a warning
      // names the thread left running.
      await(viewThread, "view thread", caller == Pool.VIEW);
      await(gossipTimer, "gossip thread", caller == Pool.GOSSIP);
      await(rejoinThread, "rejoin thread", false);
      listenerPool.shutdown();
      if (caller == Pool.LISTENERS) {
        // No launch here: this runs under the node's lock, where no listener may run; leave() launched
        // what this caller's callback holds up, and a launch pending since is its queuing thread's.
        if (listeners == ClusterNode.ListenersState.BUSY && node.awaitListeners(System.nanoTime()
            + TimeUnit.SECONDS.toNanos(1), unwaited, runningHere(), false) == ClusterNode.ListenersState.BUSY) {
          boolean wasInterrupted = Thread.currentThread().isInterrupted();
          listenerPool.shutdownNow(); // interrupts this thread too: undone below
          if (!wasInterrupted) {
            Thread.interrupted();
          }
        }
      } else if (listeners != ClusterNode.ListenersState.IN_A_CIRCLE
          && !listenerPool.awaitTermination(1, TimeUnit.SECONDS)) {
        // In a circle, the pool's listeners wait for the caller (on its own executor, or on the
        // view or gossip thread): they go on once it returns, like those waiting for a pool caller.
        listenerPool.shutdownNow();
        await(listenerPool, "listener pool", false); // a callback that ignores the interrupt is named in a WARNING
      }
    } catch (InterruptedException e) {
      // Interrupted: no more waiting, but the callbacks already queued (the LEAVING change, say)
      // still run, on the pool's threads, after close() returns; a listener's fold must see the
      // node leave. Nothing new is accepted.
      Thread.currentThread().interrupt();
      listenerPool.shutdown();
    } catch (RuntimeException | Error e) {
      failures.add(e);
      listenerPool.shutdownNow();
    }
    shutDown = true;
    if (!failures.isEmpty()) {
      Throwable first = failures.get(0);
      failures.stream().skip(1).filter(t -> t != first).forEach(first::addSuppressed);
      if (first instanceof Error error) {
        throw error;
      }
      throw (RuntimeException) first;
    }
  }

  /** Runs one step of {@link #shutdown}, adding what it throws to {@code failures}. */
  private static void attempt(List<Throwable> failures, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException | Error e) {
      failures.add(e);
    }
  }

  private static void stop(ExecutorService pool, boolean runsCaller) {
    if (runsCaller) {
      pool.shutdown(); // queued tasks still run, and find the node closed
    } else {
      pool.shutdownNow();
    }
  }

  private void await(ExecutorService pool, String name, boolean runsCaller) throws InterruptedException {
    if (!runsCaller && !pool.awaitTermination(1, TimeUnit.SECONDS)) {
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: the {1} still runs a task a second after close()"
          + " interrupted it; close() returns without waiting for it", config.nodeId(), name));
    }
  }

  /**
   * One gossip round, on the gossip thread (first trying again a view that failed to install, if one
   * did: {@link ClusterNode#retryFailedView}). A failure is not rethrown: the scheduler would cancel
   * the rounds without a word, and the node would stop comparing checksums and asking whether its
   * view lists it. An exception is logged at WARNING when the rounds start failing, then at DEBUG
   * until one succeeds, so that a stuck gossip is seen without filling the log; an Error always at
   * ERROR.
   */
  private void gossipRound() {
    try {
      node.retryFailedView();
      viewThreadWatch.check(channel.getView(), channel.getAddress(), node.state().view(),
          node.failedViewId().isPresent(), System.nanoTime());
      gossip.round();
      gossipFailing = false;
    } catch (RuntimeException | Error e) {
      // Quietly: a logger that throws here would cancel the rounds, as a failure rethrown would.
      String failed = config.nodeId() + ": gossip round failed; the ring checksums are not compared until a round"
          + " succeeds";
      if (e instanceof Error) {
        Logs.quietly(() -> LOG.log(Level.ERROR, failed, e));
      } else {
        Level level = gossipFailing || closeCalled.get() ? Level.DEBUG : Level.WARNING;
        gossipFailing = true;
        Logs.quietly(() -> LOG.log(level, failed + " (failures after this one are logged at DEBUG until"
            + " one succeeds)", e));
      }
    }
  }

  /**
   * Waits up to startTimeout for the first ring. On a timeout or an interrupt, fails the first
   * ring so that no view publishes one from then on; unless the view thread settled it first,
   * with a ring (the start succeeded after all, and the interrupt is kept for the caller) or a
   * refusal (thrown as if it had come in time).
   */
  private void awaitFirstRing() throws ExecutionException, InterruptedException, TimeoutException {
    try {
      node.firstRing().get(config.startTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException | InterruptedException e) {
      if (node.failFirstRing(e)) {
        throw e;
      }
      boolean interrupted = e instanceof InterruptedException; // and no longer set, so get() does not throw it
      try {
        node.firstRing().get(); // settled already: returns at once, or throws its failure
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  // ---------------------------------------------------------------- lookups: lock-free reads

  /**
   * The current ring: an immutable value, safe to keep and share. Before {@link #start()}, an
   * empty ring; after {@link #close()}, the ring this node left behind (see there).
   */
  public HashRing ring() {
    return node.state().ring();
  }

  /**
   * Waits until this node's ring satisfies {@code condition}, and returns that ring. For example,
   * to wait for three members: {@code node.awaitRing(r -> r.members().size() >= 3,
   * Duration.ofSeconds(30))}; for a given member: {@code r -> r.contains("orders-2")}. The
   * condition runs on the calling thread, on the current ring and then each time this node
   * installs a ring; it should be quick and must not block. A ring replaced before the thread looks
   * again is not seen, so the condition should describe a state that lasts. May be called before
   * {@link #start()} returns; not from a listener on a same-thread executor that runs on the
   * node's view thread (it would hold up the rings it waits for).
   *
   * @throws RingmasterException   if {@code timeout} passes first (its reason
   *                               {@code AWAIT_TIMEOUT}); the message names the timeout and the
   *                               ring's members then
   * @throws IllegalStateException if the node is closed, closes while waiting, or fails to start,
   *                               before the condition holds (closed means once {@link #close()}
   *                               has begun: from a LEAVING callback, this throws at once unless
   *                               the ring satisfies the condition already); or if called on the
   *                               node's view thread
   * @throws InterruptedException  if the calling thread is interrupted while waiting
   * @throws IllegalArgumentException if {@code timeout} is negative
   */
  public HashRing awaitRing(Predicate<? super HashRing> condition, Duration timeout) throws InterruptedException {
    Objects.requireNonNull(condition, "condition");
    long deadline = deadline(timeout);
    if (ownPool.get() == Pool.VIEW) {
      throw new IllegalStateException("awaitRing called on node " + config.nodeId() + "'s view thread (a listener"
          + " on a same-thread executor): it would hold up the very rings it waits for");
    }
    while (true) {
      CompletableFuture<Void> next = node.nextPublish(); // before the ring: a later ring completes it
      HashRing ring = node.state().ring();
      if (condition.test(ring)) {
        return ring;
      }
      if (closeCalled.get() || node.isClosed()) {
        throw new IllegalStateException("node " + config.nodeId() + " is closed; its last ring (view " + viewId()
            + ", members " + memberIds(ring) + ") does not satisfy the condition");
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw notWithin(timeout);
      }
      try {
        next.get(left, TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        throw notWithin(timeout);
      } catch (ExecutionException impossible) {
        throw new IllegalStateException(impossible); // never completed exceptionally
      }
    }
  }

  /**
   * Waits until this node's ownership and membership listeners have run every callback queued so
   * far: read {@link #ring()}, then call this, and the listeners have handled that ring (its
   * hand-offs done, say). Called from a listener, it does not wait for that listener (its later
   * callbacks run only after it returns), nor for a listener whose callback runs it inline on the
   * same thread (same-thread executors), nor, unless it runs on the node's own listener pool, for
   * the other listeners on its executor. Listeners of this node that call it from their running
   * callbacks, on different threads, may wait for each other in a circle (two pool listeners, each
   * waiting for the other): then the call that began last stops waiting for the next listener of
   * the circle, still waits for the others, and returns false; the other calls go on once its
   * callback returns. Of several listeners all waiting for each other, only the call that began
   * first returns true.
   *
   * @return true once they are idle; false if {@code timeout} passed first, or if the call stopped
   *         waiting for a listener of a circle
   * @throws InterruptedException     if the calling thread is interrupted while waiting
   * @throws IllegalArgumentException if {@code timeout} is negative
   */
  public boolean awaitListeners(Duration timeout) throws InterruptedException {
    long deadline = deadline(timeout);
    return node.awaitListeners(deadline, unwaitedExecutor(), runningHere(), true) == ClusterNode.ListenersState.IDLE;
  }

  /**
   * The executor of the listener calling, whose other listeners cannot run until it returns and so
   * are not waited for; null when the caller is no listener, or runs on the node's pool (many
   * threads: the caller does not hold up the others).
   */
  private Executor unwaitedExecutor() {
    Executor calling = SerialDelivery.callingExecutor(this);
    return calling == listenerPool ? null : calling;
  }

  /** The node's listener deliveries whose callbacks the calling thread is running, innermost first. */
  private List<SerialDelivery<?>> runningHere() {
    return SerialDelivery.runningOnCurrentThread(this);
  }

  /** The {@link System#nanoTime()} at which a wait of {@code timeout} from now ends. */
  private static long deadline(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must not be negative: " + timeout);
    }
    // Capped at about 100 years, so that the deadline cannot overflow.
    return System.nanoTime() + Math.min(timeout.toSeconds(), 3_000_000_000L) * 1_000_000_000L
        + timeout.toNanosPart();
  }

  private RingmasterException notWithin(Duration timeout) {
    return new RingmasterException(Reason.AWAIT_TIMEOUT, "node " + config.nodeId() + ": no ring satisfied the condition within "
        + timeout + "; the ring has view " + viewId() + " and members " + memberIds(node.state().ring()));
  }

  private static List<String> memberIds(HashRing ring) {
    return ring.members().stream().map(Member::id).toList();
  }

  /**
   * Whether the node's graceful leave ended with every ownership and membership listener done: a
   * {@link #close()} that saw them handle every callback, the {@code LEAVING} change's hand-off
   * included, within {@code leaveTimeout}. False before such a close() has waited for them, and
   * when it left with listeners still busy (its WARNING "listeners still busy after
   * leaveTimeout", not logged at a leaveTimeout of 0), or waiting in a circle for the listener
   * that called it; false too when a listener of this node called close() (an ownership
   * listener's {@code LEAVING} change runs only after its callback returns, once the node has
   * left), when a listener's executor refused its {@code LEAVING} change (shut down before close(),
   * say: that listener, removed, never heard the node leave), and when a crash (the test kit's
   * {@code LocalCluster.crash}) cut that wait short. Another
   * listener whose {@link Registration} was closed, even during that wait, is no
   * longer one of the node's and is not counted, nor is one being added as close() runs whose
   * executor refused its first change (its add throws: it was never added). A process about to
   * exit can log it, or exit with a status that says whether its data was handed on. Only when it
   * is true, and every ownership listener given the {@code LEAVING} change returned from it
   * normally (none threw on it, and none was removed before it returned), does the node tell the
   * others, as it leaves, that its hand-off is done (docs/api.md, "Moving the data").
   */
  public boolean leftIdle() {
    return leftIdle;
  }

  /**
   * Whether this node is in the current ring. False before {@link #start()}, and while the cluster
   * refuses this node: when a partition heals with this node's id on both sides, the member on the
   * side that comes first in the merged view keeps the id (with one configuration on both sides,
   * the side whose coordinator's address sorts lowest; see {@link RingmasterMembershipPolicy}). Then the
   * ring's member with this node's id is that other node, so {@code ownerOf(key)} naming
   * {@link #localMember()} does not mean this node owns the key, nor does
   * {@code ring().ownedRanges(localMember().id(), n)} list this node's ranges (they are the other
   * node's; this one owns none): ask {@link #isLocal}, {@link #isPrimary} and, by position,
   * {@link #isLocalAtPosition} and {@link #isPrimaryAtPosition}, which answer for this node.
   * False after {@link #close()}: the node has left the ring.
   */
  public boolean isInRing() {
    return node.state().localInRing();
  }

  /**
   * Whether this node has begun to leave the cluster: true from the moment {@link #close()} is
   * called (and after a {@link #start()} that failed once its first ring was installed, which
   * leaves as close() does, or the test kit's {@code LocalCluster.crash}, which stops the node in
   * the background: true once that stop begins, which may be a moment after crash() returns), and
   * for good after. A
   * store's request threads can read it to stop taking writes before the {@code LEAVING} change's
   * hand-off: until the node has left, {@link #isLocal} still answers true for the keys it hands
   * off (the other members route to it until they install the view without it), and a write taken
   * after the push has read its keys would be lost with the node. A write whose thread read false
   * just before close() began may still be under way when the callback runs: a store that must
   * lose none makes the check and the write one step that the callback waits for (each write
   * under a read lock, the callback taking the write lock before it reads the keys to push).
   * False before close(), including while a rejoin runs, and on a node whose start() failed before
   * its first ring (it never owned anything). Lock-free.
   */
  public boolean isLeaving() {
    return closeCalled.get();
  }

  /**
   * The primary owner of a key. Allocation-free.
   *
   * @throws IllegalStateException until this node has installed its first ring (before or during
   *                               {@link #start()}, after a start that failed before it, or on a node closed
   *                               without starting), or when the ring has no member with a
   *                               weight above 0 (all of weight 0; or, after {@link #close()} of
   *                               the cluster's last member, none at all)
   */
  public Member ownerOf(String key) {
    return startedRing().ownerOf(key);
  }

  /**
   * The primary owner of a key given as bytes. Allocation-free.
   *
   * @throws IllegalStateException until this node has installed its first ring (before or during
   *                               {@link #start()}, after a start that failed before it, or on a node closed
   *                               without starting), or when the ring has no member with a
   *                               weight above 0 (all of weight 0; or, after {@link #close()} of
   *                               the cluster's last member, none at all)
   */
  public Member ownerOf(byte[] key) {
    return startedRing().ownerOf(key);
  }

  /**
   * The key's owners, primary first, for the configured replica count: fewer when fewer members
   * have a weight above 0, as {@link HashRing#owners(String, int)}.
   *
   * @throws IllegalStateException until this node has installed its first ring (before or during
   *                               {@link #start()}, after a start that failed before it, or on a node closed
   *                               without starting), or when the ring has no member with a
   *                               weight above 0 (all of weight 0; or, after {@link #close()} of
   *                               the cluster's last member, none at all)
   */
  public List<Member> owners(String key) {
    return startedRing().owners(key, config.replicas());
  }

  /**
   * The owners of a key given as bytes, as {@link #owners(String)}.
   *
   * @throws IllegalStateException until this node has installed its first ring (before or during
   *                               {@link #start()}, after a start that failed before it, or on a node closed
   *                               without starting), or when the ring has no member with a
   *                               weight above 0 (all of weight 0; or, after {@link #close()} of
   *                               the cluster's last member, none at all)
   */
  public List<Member> owners(byte[] key) {
    return startedRing().owners(key, config.replicas());
  }

  /** The current ring, which a node has once started (after close, the ring it left behind). */
  private HashRing startedRing() {
    ClusterNode.Snapshot s = node.state();
    if (s.viewId() < 0) {
      throw new IllegalStateException("node " + config.nodeId() + " has no ring: it was not started, or its"
          + " start failed before its first ring");
    }
    return s.ring();
  }

  /**
   * Whether this node is among the key's owners (primary or backup). Allocation-free, but for
   * per-thread arrays made once (with more than one replica, but fewer than the members holding
   * tokens, a thread's first call makes its 1 KB scratch array; with more than 16 replicas, a byte
   * per member for the replica walk's marks; {@link HashRing#isOwnerOfPosition} makes an array per
   * call only for more than 256 owners, more than a node's 255 replicas). False while
   * the node is not in the ring ({@link #isInRing}), and when no member has a weight above 0 (where
   * {@link #ownerOf(String)} fails), and after {@link #close()}.
   */
  public boolean isLocal(String key) {
    return isLocalAtPosition(HashRing.position(key));
  }

  /** Whether this node is among the owners (primary or backup) of a key given as bytes, as {@link #isLocal(String)}. */
  public boolean isLocal(byte[] key) {
    return isLocalAtPosition(HashRing.position(key));
  }

  /**
   * Whether this node is among the owners of the keys at a ring position ({@link
   * HashRing#position(String)}), as {@link #isLocal(String)}: for a store kept in ring order, that
   * walks its entries by position. Unlike {@code ring().isOwnerOfPosition(position, replicas,
   * localMember())}, false while this node is not in the ring, even if a member holding its id is
   * (see {@link #isInRing()}). Allocation-free, as {@link #isLocal(String)}.
   */
  public boolean isLocalAtPosition(long position) {
    ClusterNode.Snapshot s = node.state(); // one snapshot: the ring and whether this node is in it
    return s.localInRing() && !s.ring().isEmpty()
        && s.ring().isOwnerOfPosition(position, config.replicas(), localMember);
  }

  /**
   * Whether this node is the key's primary owner. Allocation-free. False while the node is not in
   * the ring ({@link #isInRing}), when no member has a weight above 0, and after {@link #close()}.
   */
  public boolean isPrimary(String key) {
    return isPrimaryAtPosition(HashRing.position(key));
  }

  /** Whether this node is the primary owner of a key given as bytes. Allocation-free. */
  public boolean isPrimary(byte[] key) {
    return isPrimaryAtPosition(HashRing.position(key));
  }

  /**
   * Whether this node is the primary owner of the keys at a ring position, as {@link
   * #isPrimary(String)}, and false while this node is not in the ring (see {@link
   * #isLocalAtPosition(long)}). Allocation-free.
   */
  public boolean isPrimaryAtPosition(long position) {
    // A ring without tokens (every member at weight 0: routers, or members warming up) owns no key:
    // ownerOf() fails there, but "is it mine?" has an answer, no.
    ClusterNode.Snapshot s = node.state();
    return s.localInRing() && !s.ring().isEmpty() && s.ring().ownerOfPosition(position).equals(localMember);
  }

  /**
   * The view, its ring and whether this node is in it, read at once. {@link #viewId()}, {@link
   * #ring()} and {@link #isInRing()} each read the latest, so three calls can straddle a view
   * change: tag work with the view it was decided in from one of these. Before {@link #start()},
   * view -1 and an empty ring; after {@link #close()}, the ring this node left behind, not in it.
   */
  public RingState ringState() {
    ClusterNode.Snapshot s = node.state();
    return new RingState(s.viewId(), s.ring(), s.localInRing());
  }

  /**
   * A view id, the ring built from that view, and whether this node is in that ring.
   *
   * @param viewId the JGroups view id; -1 before the first view
   * @param ring   the ring of that view
   * @param inRing whether this node is in the ring (see {@link Ringmaster#isInRing()})
   */
  public record RingState(long viewId, HashRing ring, boolean inRing) {}

  /**
   * This node as a ring member: its id, weight and zone as built, the same before {@link #start()},
   * while it runs and after {@link #close()} (so a listener added before the start may use it).
   */
  public Member localMember() {
    return localMember;
  }

  /** The ring's members, in id order. */
  public List<Member> members() {
    return ring().members();
  }

  /** The installed JGroups view id; -1 before {@link #start()}. */
  public long viewId() {
    return node.state().viewId();
  }

  /**
   * The JGroups address of a member, to send it messages, by the view this node has installed
   * now: empty for a member that is not in it (it left, or was never there), which may be a
   * member of a ring a listener is still handling, or one {@link #ownerOf} gave just before a
   * view change. A caller routing by a member must handle empty (route again, or fail the
   * request).
   */
  public Optional<Address> addressOf(String memberId) {
    return Optional.ofNullable(node.state().addresses().get(memberId));
  }

  /**
   * The application endpoint a member announced, by the view this node has installed now: empty
   * for a member that is not in it, and for one that announced none (see {@link #addressOf}).
   */
  public Optional<String> endpointOf(String memberId) {
    return Optional.ofNullable(node.state().metadata().get(memberId)).map(NodeMetadata::endpoint)
        .filter(e -> !e.isEmpty());
  }

  /**
   * The node's JGroups channel, for applications that add their own traffic on a
   * {@link org.jgroups.fork.ForkChannel}. The shipped stacks have no {@code FORK} protocol: create
   * the fork channel with {@code create_fork_if_absent} true, above the stack's top protocol
   * (docs/api.md, "The channel"). Do not set its receiver or disconnect it. Its address
   * changes if the node rejoins the cluster to end a split view ({@link RingmasterStats#rejoins()}).
   * It exists once {@link #start()} has built the stack, which then joins at once: a fork channel
   * opened after {@code start()} returns misses what peers send it before (a hand-off to this
   * newcomer, say), so their requests should be retried until it answers, and an ownership listener
   * added before {@code start()} that needs the fork channel should wait for it in its first
   * callback (the demo's peers do both), or open it there: this channel exists by then. Such a
   * wait must also end if the start fails: one that fails after the first ring leaves, waiting up
   * to {@code leaveTimeout} for the listeners, so release the wait on the LEAVING change (from a
   * listener on a same-thread executor, since the waiting one gets that change only after its
   * wait), as the demo's peers do.
   * After {@code close()}, or a {@code start()} that failed once its stack was built, it is the
   * closed channel.
   *
   * @throws IllegalStateException if {@code start()} was never called, or failed before it built a stack
   */
  public JChannel channel() {
    if (channel == null) {
      throw new IllegalStateException("node " + config.nodeId() + " is not started");
    }
    return channel;
  }

  /** The validated settings this node was built with. */
  public RingmasterConfig config() {
    return config;
  }

  // ---------------------------------------------------------------- listeners

  /**
   * Adds an ownership listener run on the node's listener pool.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   */
  public Registration addOwnershipListener(OwnershipListener listener) {
    return addOwnershipListener(listener, listenerPool);
  }

  /**
   * Adds an ownership listener run on {@code executor}, one call at a time. An executor that
   * refuses a callback (a bounded pool that is full, or shut down) would hand the listener a
   * sequence with a gap: the listener is removed instead, with an error logged that names it;
   * register it again to start over from the current ownership. A shut-down
   * {@link java.util.concurrent.ExecutorService} that returns without running the callback (as
   * {@code CallerRunsPolicy} does once the pool is shut down) counts as refusing it. The executor
   * must run every task it accepts: one that drops tasks silently while running
   * ({@code DiscardPolicy}) stalls the listener for good.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   * @throws java.util.concurrent.RejectedExecutionException if the executor refused the first
   *                               callback (the current ownership, on a running node): the listener
   *                               was not added
   */
  public Registration addOwnershipListener(OwnershipListener listener, Executor executor) {
    requireOpen(listener, executor);
    SerialDelivery<OwnershipChange>[] self = holder();
    self[0] = new SerialDelivery<>("ownership listener " + listener + " of " + config.nodeId(),
        listener::onOwnershipChange, executor, executor != listenerPool, this,
        () -> node.removeOwnershipListener(self[0]), listenerFailures);
    node.addOwnershipListener(self[0]);
    requireAccepted(self[0]);
    return self[0];
  }

  /**
   * Fails if the executor refused the listener's first callback, which removed it: as for a closed
   * node if this node is closing (its pool stopped), else naming the listener.
   */
  private void requireAccepted(SerialDelivery<?> delivery) {
    if (delivery.refusedFirst() && stopping()) {
      throw ClusterNode.closedToListeners(config.nodeId());
    }
    delivery.requireAccepted();
  }

  /**
   * Adds a membership listener run on the node's listener pool.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   */
  public Registration addMembershipListener(MembershipListener listener) {
    return addMembershipListener(listener, listenerPool);
  }

  /**
   * Adds a membership listener run on {@code executor}, one call at a time. An executor that
   * refuses a callback gets the listener removed, as for {@link #addOwnershipListener(OwnershipListener,
   * Executor)}.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   * @throws java.util.concurrent.RejectedExecutionException if the executor refused the first
   *                               callback (the current members, on a running node): the listener
   *                               was not added
   */
  public Registration addMembershipListener(MembershipListener listener, Executor executor) {
    requireOpen(listener, executor);
    SerialDelivery<MembershipChange>[] self = holder();
    self[0] = new SerialDelivery<>("membership listener " + listener + " of " + config.nodeId(),
        listener::onMembershipChange, executor, executor != listenerPool, this,
        () -> node.removeMembershipListener(self[0]), listenerFailures);
    node.addMembershipListener(self[0]);
    requireAccepted(self[0]);
    return self[0];
  }

  /**
   * Adds a listener for ring divergences found by the checksum gossip, run on the node's listener
   * pool. The listener hears each divergence (peer, both checksums, kind) once per view, however
   * many gossip rounds find it again (a listener added later hears one found before it came at
   * the next round that finds it); {@code stats().divergences()} counts every disagreeing message.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   */
  public Registration addDivergenceListener(Consumer<RingDivergence> listener) {
    return addDivergenceListener(listener, listenerPool);
  }

  /**
   * Adds a divergence listener run on the given executor, one call at a time. Reports are handed
   * to the executor from the node's gossip thread, never from a JGroups thread; that thread also
   * sends checksums, tells newcomers the ring before their view and retries failed views, so an
   * executor that runs tasks on the calling thread must run a quick listener. A report comes for
   * each disagreement with this node's view that a checksum message shows (see
   * {@link RingDivergence}), once per view however often it is repeated,
   * a member that its own copy of the view lists and this node's does not included
   * ({@link RingDivergence.Kind#SPLIT_VIEW}): that member rejoins by itself
   * ({@link RingmasterStats#rejoins()} on its side). An executor that refuses a
   * report gets the listener removed, with an ERROR naming it, as for ownership listeners.
   * {@link #close()} does not wait for divergence listeners.
   *
   * @throws IllegalStateException if {@link #close()} was called, or {@link #start()} failed: the listener
   *                               would never be called
   */
  public Registration addDivergenceListener(Consumer<RingDivergence> listener, Executor executor) {
    requireOpen(listener, executor);
    SerialDelivery<RingDivergence>[] self = holder();
    self[0] = new SerialDelivery<>("divergence listener " + listener + " of " + config.nodeId(),
        listener, executor, executor != listenerPool, this,
        () -> divergences.remove(self[0]), listenerFailures);
    divergences.add(self[0]);
    if (refusesListeners()) { // closed since requireOpen: gossip is stopping
      divergences.remove(self[0]);
      throw ClusterNode.closedToListeners(config.nodeId());
    }
    return self[0];
  }

  /**
   * Refuses a listener once close() was called. A listener added then would hear nothing (the
   * LEAVING change may already be queued, and the node's pool is stopping), and failing here tells
   * the application so rather than leaving it waiting for calls that never come. The node checks
   * again under its publish lock, for a close() that gets there first.
   */
  private void requireOpen(Object listener, Executor executor) {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(executor, "executor");
    if (refusesListeners()) {
      throw ClusterNode.closedToListeners(config.nodeId());
    }
  }

  /**
   * Whether the node's pools are stopping or stopped: its listeners' deliveries are over (the
   * LEAVING change, queued before, is not: an executor that refuses it is an error).
   */
  boolean stopping() {
    return lifecycle == Lifecycle.CLOSED;
  }

  /**
   * Called by a listener's delivery whose executor refused the LEAVING change (shut down before
   * close(), say), before the listener counts as idle: its hand-off never ran, so the leave is not idle.
   */
  void leavingRefused() {
    leavingRefused = true;
  }

  /** Called by a listener's delivery as it queues the LEAVING change. */
  void leavingQueued() {
    leavingQueued.incrementAndGet();
  }

  /**
   * Called by a listener's delivery once its callback of the LEAVING change returned normally,
   * before the listener counts as idle: close() reads it once they all are.
   */
  void leavingHandled() {
    leavingHandled.incrementAndGet();
  }

  /** Whether the current thread is one of this node's own (its view, gossip, rejoin or listener pool). */
  boolean onOwnThread() {
    return ownPool.get() != null;
  }

  /** Whether close() was called or start() failed: a listener added now would never be called. */
  private boolean refusesListeners() {
    return closeCalled.get() || lifecycle == Lifecycle.CLOSED;
  }

  @SuppressWarnings("unchecked")
  private static <E> SerialDelivery<E>[] holder() {
    return new SerialDelivery[1];
  }

  // ---------------------------------------------------------------- observability

  /**
   * Counters and timings of this node: view id, ring size, views seen, ring builds and the last
   * build's duration, listener callbacks not yet run and those that threw, checksum messages sent
   * and received, divergences (and, among them, those of a split view), rejoins, refusals, when a
   * view last changed this node's ownership or its membership, and a view whose ring could not be
   * built here and is tried again (see {@link RingmasterStats}). The counters are read without locks; the callbacks not yet run
   * take each listener's queue lock in turn, briefly. Each value is current when read, so two of
   * them may come from either side of a view change.
   */
  public RingmasterStats stats() {
    ClusterNode.Snapshot s = node.state();
    long last = node.lastChangeMillis.get();
    long split = gossip == null ? 0 : gossip.splitViewDivergences.get(); // read once: the others are the difference
    return new RingmasterStats(s.viewId(), s.ring().members().size(), node.viewsSeen.get(), node.ringBuilds.get(),
        Duration.ofNanos(node.lastBuildNanos.get()), node.pendingCallbacks(), listenerFailures.sum(),
        gossip == null ? 0 : split + gossip.otherDivergences.get(), split,
        rejoin.count(), gossip == null ? 0 : gossip.sent.get(),
        gossip == null ? 0 : gossip.received.get(), node.refusals.get(),
        last == 0 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(last)), node.failedViewId());
  }

  /**
   * The current ring as one JSON object: {@code viewId} (-1 before the first ring), {@code checksum}
   * ({@link HashRing#checksum()} as unsigned hex, {@code Long.toHexString}, not zero-padded),
   * {@code virtualNodes}, {@code tokens}, {@code local} (this node's id), and {@code members}, by
   * id, each with {@code id}, {@code weight}, {@code zone}, {@code share} (of the key space,
   * as primary) and {@code endpoint} ("" when the member announced none). After {@link #close()} it
   * describes the ring this node left behind.
   */
  public String ringJson() {
    ClusterNode.Snapshot s = node.state();
    return Json.write(Json.ring(s.ring(), s.viewId(), config.nodeId(), ClusterNode.endpoints(s)));
  }

  @Override
  public String toString() {
    return "Ringmaster[" + config.nodeId() + " in " + config.clusterName() + ", view " + viewId() + ", "
        + ring() + "]";
  }

  // ---------------------------------------------------------------- for tests and the test kit

  /** Ownership listeners registered now (for tests). */
  int ownershipListenerCount() {
    return node.ownershipListenerCount();
  }

  /** Membership listeners registered now (for tests). */
  int membershipListenerCount() {
    return node.membershipListenerCount();
  }

  /**
   * Whether the node's shutdown has ended: its channel closed and its threads stopped (or given up
   * on, with a WARNING). For the test kit, which lets go of such nodes; reached by reflection.
   */
  boolean shutDown() {
    return shutDown;
  }

  /** Runs before each view's ring is built, on the view thread (for tests: a slow or failing build). */
  void beforeEachBuild(Consumer<View> hook) {
    node.beforeBuild = hook;
  }

  /** Threads waiting in {@link #awaitRing} for the next ring (for tests). */
  int ringWaiters() {
    return node.nextPublish().getNumberOfDependents();
  }

  /** The listeners that calls of {@link #awaitListeners} from listeners wait for now, by name (for tests). */
  List<String> listenerWaits() {
    return node.listenerWaits();
  }

  /** "Not in view" messages this node did not believe (for tests). */
  long notListedIgnored() {
    return gossip == null ? 0 : gossip.notListedIgnored.get();
  }

  /** The members of this node's view that said they are leaving, as far as it knows (for tests). */
  Set<Address> leavingPeers() {
    return node.leavingPeers();
  }

  /**
   * Whether close() has come to this node's LEAVING change: made it, or made none, the node being
   * out of the ring then (for tests).
   */
  boolean pastLeavingChange() {
    return node.left();
  }

  /**
   * The members that did not answer, in time, "I am leaving" or (with {@code handedOff}) "my
   * hand-off is done", once close() said it; null before (for tests).
   */
  Set<Address> unanswered(boolean handedOff) {
    return handedOff ? handedOffUnanswered : leavingUnanswered;
  }

  /** Whether close() waits for the answers to "I am leaving" or "my hand-off is done" (for tests). */
  boolean awaitingAnswers(boolean handedOff) {
    Gossip g = gossip;
    return g != null && g.awaitingAnswers(handedOff);
  }

  /** Gossip messages sent to every member, dropped unread (for tests). */
  long gossipMulticastsDropped() {
    return gossip == null ? 0 : gossip.multicastsDropped.get();
  }

  /** "Does your view list me?" messages sent while refused (for tests). */
  long listedQueriesSent() {
    return gossip == null ? 0 : gossip.queriesSent.get();
  }

  /** "Your view is not mine" messages this node sent (for tests). */
  long notListedSent() {
    return gossip == null ? 0 : gossip.notListedSent.get();
  }

  /** "Does your view list me?" messages received from refused members (for tests). */
  long listedQueriesReceived() {
    return gossip == null ? 0 : gossip.queriesReceived.get();
  }

  /** Divergence listeners registered now (for tests). */
  int divergenceListenerCount() {
    return divergences.listenerCount();
  }

  private ThreadFactory threads(String prefix, Pool pool) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(() -> {
        ownPool.set(pool);
        r.run();
      }, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * The settings of a node. Each setter checks its value and fails naming the setting; {@link
   * #build()} checks what needs all of them.
   */
  public static final class Builder {
    private String clusterName = "ringmaster";
    private String nodeId;
    private double weight = 1.0;
    private String zone = "";
    private int virtualNodes = HashRing.Builder.DEFAULT_VIRTUAL_NODES;
    private int replicas = 1;
    private String applicationVersion = "";
    private String jgroupsConfig = RingmasterConfig.DEFAULT_JGROUPS_CONFIG;
    private String endpoint = "";
    private String bindAddress;
    private Integer bindPort;
    private String initialHosts;
    private String secret;
    private Duration leaveTimeout = Duration.ofSeconds(10);
    private Duration gossipInterval = Duration.ofSeconds(2);
    private Duration startTimeout = Duration.ofSeconds(30);

    private Path configFile; // the last config file applied, for messages

    static final int MAX_REPLICAS = 255;
    static final int MAX_PORT = 65535;

    /** The longest cluster name accepted. */
    public static final int MAX_CLUSTER_NAME = 200;

    private Builder() {}

    /**
     * Applies a JSON config file (see {@link Ringmaster#fromConfig(Path)}); later setters override
     * it. A file with a bad setting fails naming the file, the setting and the value, and changes
     * nothing in this builder.
     */
    public Builder config(Path file) {
      Json.readConfig(SettingChecks.notNull("config file", file, ""), this);
      configFile = file;
      return this;
    }

    /**
     * The JGroups cluster to join (default {@code ringmaster}): nodes with the same name and stack
     * find each other. 1 to {@value #MAX_CLUSTER_NAME} printable ASCII characters, without a space
     * at either end: JGroups sends the name as one byte per character, so two names differing
     * only beyond ASCII could meet in one cluster.
     */
    public Builder clusterName(String clusterName) {
      SettingChecks.nonEmpty("clusterName", clusterName);
      boolean printable = clusterName.length() <= MAX_CLUSTER_NAME
          && clusterName.chars().allMatch(c -> c >= 0x20 && c < 0x7f)
          && clusterName.charAt(0) != ' ' && clusterName.charAt(clusterName.length() - 1) != ' ';
      if (!printable) {
        throw new IllegalArgumentException("clusterName must be 1 to " + MAX_CLUSTER_NAME + " printable ASCII"
            + " characters without a space at either end: " + SettingChecks.shown(clusterName));
      }
      this.clusterName = clusterName;
      return this;
    }

    /**
     * This member's stable id: a host or pod name, never a random per-process value. Required; not
     * empty, at most 255 bytes in UTF-8 (it travels in the JGroups address), with no control
     * character, no unpaired surrogate and no space at either end: anything else throws
     * {@link IllegalArgumentException} naming the setting and the value.
     */
    public Builder nodeId(String nodeId) {
      NodeMetadata.checkFits("nodeId", SettingChecks.wellFormed("nodeId", SettingChecks.nonEmpty("nodeId", nodeId)));
      this.nodeId = nodeId; // last: a value refused above is not kept
      return this;
    }

    /**
     * This member's weight (default 1): it gets {@code round(virtualNodes * weight)} tokens, so a
     * share of the keys proportional to its weight; 0 joins the cluster but owns nothing. Finite
     * and at least 0; {@link #buildConfig()} also refuses a weight above 0 that gives no token
     * (below about {@code 0.5 / virtualNodes}; the error names the smallest weight that works),
     * which would own nothing without saying so.
     */
    public Builder weight(double weight) {
      if (!(weight >= 0) || Double.isInfinite(weight)) {
        throw new IllegalArgumentException("weight must be finite and >= 0: " + weight);
      }
      this.weight = weight;
      return this;
    }

    /**
     * This member's zone (default {@code ""}, none), such as a rack or an availability zone: a key's
     * replicas go to distinct zones first. Not null, at most 255 UTF-8 bytes, with no control
     * character, no unpaired surrogate and no space at either end, as {@link #nodeId(String)}.
     */
    public Builder zone(String zone) {
      NodeMetadata.checkFits("zone",
          SettingChecks.wellFormed("zone", SettingChecks.notNull("zone", zone, "; use \"\" for no zone")));
      this.zone = zone;
      return this;
    }

    /**
     * Tokens per member of weight 1 (default {@value HashRing.Builder#DEFAULT_VIRTUAL_NODES}, which
     * keeps the most loaded of 100 members under 1.10 times the mean share). Every member of a
     * cluster must use the same value, or the cluster refuses the newcomer. 1 to
     * {@link HashRing#MAX_TOKENS_PER_MEMBER}.
     */
    public Builder virtualNodes(int virtualNodes) {
      if (virtualNodes < 1 || virtualNodes > HashRing.MAX_TOKENS_PER_MEMBER) {
        throw new IllegalArgumentException("virtualNodes must be in 1.." + HashRing.MAX_TOKENS_PER_MEMBER + ": "
            + virtualNodes);
      }
      this.virtualNodes = virtualNodes;
      return this;
    }

    /**
     * How many owners each key has, primary first (default 1); {@link #owners(String)} and the
     * ownership changes use it. The same on every member, or the cluster refuses the
     * newcomer. 1 to 255.
     */
    public Builder replicas(int replicas) {
      if (replicas < 1 || replicas > MAX_REPLICAS) {
        throw new IllegalArgumentException("replicas must be in 1.." + MAX_REPLICAS + ": " + replicas);
      }
      this.replicas = replicas;
      return this;
    }

    /**
     * What the application's members must share to work together (default {@code ""}, nothing): the
     * version of its own messages or data format, for example {@code "orders/3"}. Every member of a
     * cluster must announce the same, or the cluster refuses the newcomer, as it does for
     * {@link #virtualNodes(int)} and {@link #replicas(int)}, naming both values; when members join and
     * leave, the ring's parameters (this one among them, taken together) stay the cluster's while a
     * member holding them is left, and when a partition heals, those of the most members of the sides'
     * rings win ({@link RingmasterMembershipPolicy}). Change it only when members of the old and the
     * new version cannot work together, and then as you would change {@code replicas}: with a full
     * restart (or under another cluster name), since a node with the new version is refused while any
     * member has the old one; a rolling upgrade between compatible versions keeps it. It travels in the
     * node's JGroups address, so keep it short; at most 255 UTF-8 bytes, and well formed as
     * {@link #zone(String)}.
     */
    public Builder applicationVersion(String applicationVersion) {
      NodeMetadata.checkFits("applicationVersion", SettingChecks.wellFormed("applicationVersion",
          SettingChecks.notNull("applicationVersion", applicationVersion, "; use \"\" for none")));
      this.applicationVersion = applicationVersion;
      return this;
    }

    /**
     * The JGroups stack: a file path, or a classpath resource such as {@code ringmaster/jgroups/in-jvm.xml}
     * (the jar ships {@code localhost-tcp.xml}, {@code lan-udp.xml}, {@code in-jvm.xml} and
     * {@code secure-tcp.xml} under {@code ringmaster/jgroups/}; a bare name of one is not found, and
     * the error names the resource that is). A regular file at that path (relative to the working
     * directory) wins over a classpath resource of the same name. {@link #buildConfig()} fails
     * naming it when it is missing, is not a JGroups {@code <config>} with protocols, or has no
     * {@code pbcast.GMS} (no member could join), and logs a WARNING for a stack without MERGE3
     * (partitions would never heal), without a failure detector (a crashed member would stay in
     * the view), or with the secret's AUTH but no encryption; the protocols' own settings are
     * checked when the node starts.
     */
    public Builder jgroupsConfig(String jgroupsConfig) {
      this.jgroupsConfig = SettingChecks.nonEmpty("jgroupsConfig", jgroupsConfig);
      return this;
    }

    /**
     * How applications reach this node, announced to all members ({@code ""}, the default, for
     * none); at most 255 UTF-8 bytes, and well formed as {@link #zone(String)}.
     */
    public Builder endpoint(String endpoint) {
      NodeMetadata.checkFits("endpoint",
          SettingChecks.wellFormed("endpoint", SettingChecks.notNull("endpoint", endpoint, "; use \"\" for none")));
      this.endpoint = endpoint;
      return this;
    }

    /**
     * The address the stack binds to, overriding the stack file's {@code bind_addr} (for example
     * {@code 127.0.0.1}): it must resolve, and not to the wildcard ({@code 0.0.0.0}), since the
     * transport's address is the one the other members reach this node at. Whether this host may
     * bind it is found when the node starts: a start that cannot bind it fails naming this setting.
     * A stack with the in-JVM transport ({@code in-jvm.xml}) binds no socket: with it, {@link #build}
     * refuses this setting.
     */
    public Builder bindAddress(String bindAddress) {
      InetAddress address;
      try {
        address = InetAddress.getByName(SettingChecks.nonEmpty("bindAddress", bindAddress));
      } catch (UnknownHostException e) {
        throw new IllegalArgumentException("bindAddress: cannot resolve " + SettingChecks.shown(bindAddress));
      }
      if (address.isAnyLocalAddress()) {
        throw new IllegalArgumentException("bindAddress " + SettingChecks.shown(bindAddress) + " is the wildcard"
            + " address: the transport needs one address of this host, the one other members reach it at");
      }
      this.bindAddress = bindAddress;
      return this;
    }

    /**
     * The port the stack binds to, overriding the stack file's {@code bind_port}: 0 to 65535, 0 for
     * any. A stack with the in-JVM transport ({@code in-jvm.xml}) binds no socket: with it,
     * {@link #build} refuses this setting. With a TCPPING stack ({@code localhost-tcp.xml},
     * {@code secure-tcp.xml}) 0 makes a node no other member's {@code initialHosts} name: while it
     * is the only member left, a newcomer starts a cluster of its own, merged with it only seconds
     * later (JGroups warns of it as the stack starts).
     */
    public Builder bindPort(int bindPort) {
      if (bindPort < 0 || bindPort > MAX_PORT) {
        throw new IllegalArgumentException("bindPort must be in 0.." + MAX_PORT + ": " + bindPort);
      }
      this.bindPort = bindPort;
      return this;
    }

    /**
     * TCPPING's initial hosts, as {@code 127.0.0.1[7800],db-2.example.com[7800]}, taken exactly as
     * the same string in the stack file: each port is probed with the {@code port_range} ports
     * after it that the stack's TCPPING sets, and a host name that does not resolve when the node
     * starts (a peer not in DNS yet) is logged by JGroups and tried again at each discovery. Only
     * the form is checked here. The stack must have TCPPING ({@code localhost-tcp.xml} and
     * {@code secure-tcp.xml} do): building fails otherwise.
     *
     * @throws IllegalArgumentException for an entry not of the form {@code host[port]}, or a port
     *                                  outside 1..65535, naming the entry
     */
    public Builder initialHosts(String initialHosts) {
      Stacks.checkHosts(SettingChecks.nonEmpty("initialHosts", initialHosts));
      this.initialHosts = initialHosts;
      return this;
    }

    /**
     * The shared secret of {@code secure-tcp.xml}; without it the node reads the system property
     * {@code ringmaster.secret}, then the environment variable {@code RINGMASTER_SECRET}. Set for a
     * stack that does not use it, {@link #buildConfig()} fails rather than run the cluster open; and
     * it fails, naming the three places, when the stack needs a secret and none of them has one.
     */
    public Builder secret(String secret) {
      if (SettingChecks.nonEmpty("secret", secret).isBlank()) {
        throw new IllegalArgumentException("secret is blank: use a long random secret (openssl rand -base64 32)");
      }
      SharedSecret.checkTrimmed(secret, "secret");
      this.secret = secret;
      return this;
    }

    /**
     * How long {@link #close()} waits for listeners to hand data off: 0 to 24 hours. With 0, close()
     * still queues the LEAVING change for every listener, but does not wait for them to run it, nor
     * warns of listeners still busy with it (a longer limit that runs out logs a WARNING naming them).
     */
    public Builder leaveTimeout(Duration leaveTimeout) {
      this.leaveTimeout = SettingChecks.duration("leaveTimeout", leaveTimeout, Duration.ZERO);
      return this;
    }

    /** How often the ring checksum is compared with a random peer: 1 ms to 24 hours. */
    public Builder gossipInterval(Duration gossipInterval) {
      this.gossipInterval = SettingChecks.duration("gossipInterval", gossipInterval, Duration.ofMillis(1));
      return this;
    }

    /**
     * How long {@link #start()} waits for its first ring once JGroups has connected: 1 ms to 24
     * hours. The connect itself (discovery and the join, bounded by the stack's own timeouts)
     * comes first and is not counted.
     */
    public Builder startTimeout(Duration startTimeout) {
      this.startTimeout = SettingChecks.duration("startTimeout", startTimeout, Duration.ofMillis(1));
      return this;
    }

    /** The validated settings. */
    public RingmasterConfig buildConfig() {
      if (nodeId == null) {
        throw new IllegalArgumentException("nodeId is required: a stable id for this member"
            + (configFile == null ? "" : " (config file " + configFile + " does not set \"nodeId\")"));
      }
      try {
        checkTogether();
      } catch (IllegalArgumentException e) {
        if (configFile == null) {
          throw e;
        }
        throw new IllegalArgumentException(e.getMessage() + " (settings from config file " + configFile
            + " and the builder)", e);
      }
      return new RingmasterConfig(clusterName, nodeId, weight, zone, virtualNodes, replicas, applicationVersion,
          jgroupsConfig, endpoint,
          Optional.ofNullable(bindAddress), Optional.ofNullable(bindPort), Optional.ofNullable(initialHosts),
          Optional.ofNullable(secret), leaveTimeout, gossipInterval, startTimeout);
    }

    /** The checks of settings that are valid alone but not together (the stack, the weight). */
    private void checkTogether() {
      Stacks.checkExists(jgroupsConfig);
      Stacks.checkReadable(jgroupsConfig);
      Stacks.checkVariables(jgroupsConfig, initialHosts != null, bindAddress != null, bindPort != null);
      if (initialHosts != null) {
        Stacks.checkInitialHostsApply(jgroupsConfig, initialHosts);
      }
      if (bindPort != null) {
        Stacks.checkBindApplies(jgroupsConfig, "bindPort " + bindPort);
      }
      if (bindAddress != null) {
        Stacks.checkBindApplies(jgroupsConfig, "bindAddress \"" + bindAddress + "\"");
      }
      if (secret != null) {
        Stacks.checkSecretApplies(jgroupsConfig);
      } else {
        Stacks.checkSecretAvailable(jgroupsConfig);
      }
      SettingChecks.checkTokens(virtualNodes, weight);
    }

    /** A node with these settings, not started yet. */
    public Ringmaster build() {
      return new Ringmaster(buildConfig());
    }

  }
}
