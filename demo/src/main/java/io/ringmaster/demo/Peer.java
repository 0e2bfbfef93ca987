package io.ringmaster.demo;

import com.sun.net.httpserver.HttpServer;
import io.ringmaster.OwnershipChange;
import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterStats;
import io.ringmaster.ring.HashRing;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;

/**
 * One key-value peer: a Ringmaster node, the store, the fork channel for peer traffic, the
 * rebalancer on the node's ownership callbacks, and the HTTP API on 127.0.0.1.
 *
 * <p>The HTTP port answers from the moment it is bound: 503 "the peer is starting" until the node
 * has joined and the peer serves ({@link HttpGate}).
 *
 * <p>Stopping is a graceful leave: {@link Ringmaster#close()} first delivers the LEAVING change,
 * on which the rebalancer hands every key off to its new owners, and only then leaves the view.
 * The HTTP server and the fork channel stay up until then, so requests keep being served; then
 * new requests get 503 "the peer is stopping", writes still waiting for owners end with the same
 * 503 at their next round, and the other requests in flight have up to {@link #STOP_GRACE} to end
 * before the server closes.
 */
final class Peer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Peer.class.getName());

  /** {@code GET /stats}. Totals since the peer started; key counts by this peer's current ring. */
  record StatsReply(String id, long viewId, long viewsSeen, String checksum, int members, boolean inRing,
                    boolean leaving, long primaryKeys, long backupKeys, long strayKeys, long tombstones,
                    long tombstonesPurged, long keysMigratedIn, long keysMigratedOut, long strayKeysHandedOff,
                    int migrationsInProgress, int pendingCallbacks, long listenerFailures,
                    long migrationsCompleted, long migrationsFailed, int pullRetriesPending, boolean repairRetryPending, long putsServed, long getsServed,
                    long deletesServed, long writesStored, long writesForwarded, long readRepairs,
                    long readsFromPreviousOwners, long divergences, long splitViewDivergences, long rejoins,
                    int eventSubscribers, List<String> cutOffFrom) {}

  /** How long a stopping peer waits for the HTTP requests in flight once it has left. */
  static final Duration STOP_GRACE = Duration.ofSeconds(2);
  /** How long {@link #close()} waits for the peer's own threads to end once they are told to stop. */
  static final Duration THREADS_GRACE = Duration.ofSeconds(2);

  private final PeerOptions options;
  private final Ringmaster node;
  private final HttpServer http;
  private final HttpGate gate = new HttpGate();
  /**
   * How long a client may take to send a whole request before its connection is closed, counted
   * from when the server accepts the connection (or starts reading its next request), time spent
   * waiting for an HTTP thread included; the JDK server checks once a second.
   */
  static final int MAX_REQUEST_SECONDS = 10;
  /** Every thread of the pools below: a stop waits until each has ended. */
  private final OwnThreads threads = new OwnThreads();
  /**
   * 64 requests served at once (a write may wait seconds for an unreachable owner) and at most
   * 4,096 waiting: beyond that the JDK server closes the new connection instead of queueing it
   * without limit.
   */
  private final ExecutorService httpThreads = new ThreadPoolExecutor(64, 64, 0, TimeUnit.MILLISECONDS,
      new ArrayBlockingQueue<>(4_096), threads.named("http"));
  private final ExecutorService rpcWorkers = new ThreadPoolExecutor(4, 256, 30, TimeUnit.SECONDS,
      new SynchronousQueue<>(), threads.named("rpc"));
  private final ScheduledExecutorService rpcTimer = timer(threads.named("rpc-timer"));
  /** Sweeps and repairs, one at a time: both may wait seconds on pushes. */
  private final ScheduledExecutorService maintenance = Executors.newSingleThreadScheduledExecutor(
      threads.named("sweep"));
  /**
   * Pull retries, on a thread of their own: one against a source that is live but slow can take
   * tens of seconds a page, and sweeps and repairs would wait for it.
   */
  private final ScheduledExecutorService pullRetrier = Executors.newSingleThreadScheduledExecutor(
      threads.named("pull-retries"));
  /** The rebalancer's pulls, a source each: see {@link Rebalancer#pullThreads}. */
  private final ExecutorService pullThreads = Rebalancer.pullThreads(threads.named("pulls"));
  /**
   * The hand-offs' pushes, a destination each: see {@link Transfers#pushThreads}; as many threads
   * as {@link TestingAids#pushThreads} says. Package-private for a test that reads its size.
   */
  final ExecutorService pushThreads;
  /** The status reports; package-private so that a test can hold its thread up. */
  final ScheduledExecutorService statusTimer = Executors.newSingleThreadScheduledExecutor(threads.named("status"));
  private final CountDownLatch stopped = new CountDownLatch(1);
  private final Counters counters = new Counters();
  private final Store store = new Store();
  /** In view order: the listener that logs this peer's ownership changes runs apart from the membership one. */
  private final EventLog events = EventLog.inViewOrder();
  /**
   * Run by the membership listener just before it logs a view: package-private so that a test can
   * hold that listener up, as a busy pool would, and see the log keep the ownership event back.
   */
  volatile Runnable beforeMembershipEvent = () -> { };
  /** Logs what the maintenance tasks throw, without a line a second for one that keeps failing. */
  private final TaskGuard tasks = new TaskGuard();
  /** The key counts of the status and /stats, counted again only when something they depend on changed. */
  private final KeyCounts.Cached keyCounts = new KeyCounts.Cached();
  private Rpc rpc;
  private Routing routing;
  private Rebalancer rebalancer;
  private PeerDirectory directory;
  private KvService kv;
  /**
   * The rebalancer, once it exists. It is an ownership listener from before the node starts, so
   * that its first change is the node's own first one: what this peer gains, each range with the
   * owners it had in the ring before the view that admitted this peer (peers admitted together do
   * not name each other). It pulls through the RPC channel, which exists only once the node has
   * started: that first change waits for it here.
   */
  private final CompletableFuture<Rebalancer> rebalancerReady = new CompletableFuture<>();
  private volatile PullRetries pullRetries; // set once the node has started; read by incoming
  /** What this peer gained and is still taking in: reads that miss here ask the previous owners. */
  private final Incoming incoming;
  private Sweeper sweeper;
  /** {@code /admin/split} and {@code /admin/heal}; refused unless started with {@code --fault-injection}. */
  private volatile Faults faults = Faults.off();
  private boolean closed;

  private final TestingAids aids;

  private Peer(PeerOptions options, Ringmaster node, HttpServer http, TestingAids aids) {
    this.options = options;
    this.node = node;
    this.http = http;
    this.aids = aids;
    this.pushThreads = Transfers.pushThreads(threads.named("pushes"), aids.pushThreads());
    this.incoming = new Incoming(node.config().nodeId(), node.config().replicas(), position -> {
      PullRetries retries = pullRetries;
      return retries == null ? List.of() : retries.sourcesFor(position);
    }, node::ring);
  }

  /**
   * Binds the HTTP port (first, so a busy port fails before joining), joins the cluster and starts
   * serving.
   */
  static Peer start(PeerOptions options) throws IOException {
    // Without TCP_NODELAY the JDK server's separate header and body writes meet the client's
    // delayed ACK: ~40 ms per request. Read once, when the server classes load.
    System.getProperties().putIfAbsent("sun.net.httpserver.nodelay", "true");
    // A request (line, headers and body) not received in full within this many seconds has its
    // connection closed: otherwise a client that sends part of a request and stalls holds one of
    // the 64 HTTP threads for as long as it likes, and 64 such clients stop the API.
    System.getProperties().putIfAbsent("sun.net.httpserver.maxReqTime", String.valueOf(MAX_REQUEST_SECONDS));
    TestingAids aids = TestingAids.fromSystemProperties(); // a bad value fails here, before the node joins
    Ringmaster node = options.builder().build();
    HttpServer http;
    try {
      http = HttpServer.create(new InetSocketAddress("127.0.0.1", options.httpPort()), 128);
    } catch (IOException e) { // in use, or a port this user may not open
      node.close();
      throw new IOException("--http-port " + options.httpPort() + ": cannot listen on 127.0.0.1:"
          + options.httpPort() + ": " + e.getMessage(), e);
    }
    Peer peer = new Peer(options, node, http, aids);
    try {
      http.createContext("/", peer.gate); // "starting" until the peer serves
      http.setExecutor(peer.httpThreads);
      http.start();
      peer.startNode();
    } catch (RuntimeException | IOException | Error e) {
      peer.rebalancerReady.completeExceptionally(e); // its listener must not hold up the node's close
      try {
        runAll(node::close, () -> stopKeepingTheInterrupt(http), () -> {
          if (peer.rpc != null) {
            peer.rpc.close();
          }
        }, peer::shutdownThreads);
      } catch (RuntimeException | Error again) {
        e.addSuppressed(again);
      }
      throw e;
    }
    return peer;
  }

  private void startNode() throws IOException {
    // Noted on the publishing thread (quick), so that reads know at once what is still coming in,
    // even while the rebalancer works through an earlier change.
    node.addOwnershipListener(incoming::arrived, Runnable::run);
    // A start that fails after the node's first ring leaves at once (the node's LEAVING change),
    // and waits for the listeners: the rebalancer's, still waiting below for a rebalancer that
    // will never come, is released (a peer that never served hands nothing off).
    node.addOwnershipListener(change -> {
      if (change.reason() == OwnershipChange.Reason.LEAVING) {
        rebalancerReady.completeExceptionally(new IllegalStateException("the node left before the peer started"));
      }
    }, Runnable::run);
    node.addOwnershipListener(change -> {
      try {
        Rebalancer r;
        try {
          r = rebalancerReady.get();
        } catch (ExecutionException startFailed) {
          return; // the peer's start failed: it never served, and hands nothing off
        } catch (InterruptedException closing) {
          Thread.currentThread().interrupt();
          return;
        }
        r.onOwnershipChange(change);
      } finally {
        incoming.done(change);
      }
    });
    // Before start(), like the rebalancer's: a merge installed between start() and a listener added
    // after it would reach that listener folded into its first change, and its repair never run.
    // The ring of the members the listener last heard of: the log's per-member moves are the
    // difference between it and the next one. The listener runs one change at a time, in order.
    AtomicReference<HashRing> heard = new AtomicReference<>(
        HashRing.builder().virtualNodes(node.config().virtualNodes()).build());
    node.addMembershipListener(c -> {
      HashRing before = heard.getAndUpdate(r -> r.withMembers(c.members()));
      if (c.previousViewId() < 0) {
        events.membershipIn(c.viewId()); // the node's first view: the "started" event lists its members
        return;
      }
      try {
        rebalancerReady.get(); // completed once the peer serves: the sweeper and the log are set up
      } catch (ExecutionException startFailed) {
        return; // the peer's start failed: nothing to log or repair
      } catch (InterruptedException closing) {
        Thread.currentThread().interrupt();
        return;
      }
      beforeMembershipEvent.run();
      // Ahead of this view's ownership event, which the rebalancer's thread may have published first.
      events.publishMembership(c.viewId(), Events.membership(c, before, heard.get()));
      // Tell the others about the new ring now, not at the next tick: until then the ring page
      // would see this peer on the old view.
      runOn(statusTimer, () -> guard("status", this::publishStatus)); // the periodic task, run once more now
      if (c.isMerge()) {
        sweeper.repairQueued();
        runOn(maintenance, () -> tasks.runOnce("repair after merge", () -> sweeper.repairAfterMerge(c.viewId())));
      }
    });
    node.start();
    routing = new Routing(node);
    rpc = new Rpc(node, rpcWorkers, rpcTimer);
    String self = routing.self();
    VersionClock clock = aids.clock(self); // the wall clock, unless a test moved it
    directory = new PeerDirectory(this::status, rpc, routing::processOf, routing::ownProcess);
    kv = new KvService(routing, store, clock, rpc, counters, node::viewId, directory::hasReported,
        aids.readRepair(), KvService.Timeouts.DEFAULT, incoming::previousOwners);
    IntSupplier pendingCallbacks = () -> node.stats().pendingCallbacks();
    Transfers transfers = new Transfers(routing, store, rpc, counters, node::viewId, pendingCallbacks,
        directory::hasReported, events, aids, pushThreads);
    // The hand-off of a leave must end before the node's leaveTimeout, when it leaves anyway.
    Duration leaveTimeout = node.config().leaveTimeout();
    pullRetries = new PullRetries(transfers::pull, routing::isLive, routing::owns, routing::isLeaving,
        System::nanoTime, events);
    transfers.retrying(pullRetries::pulling);
    rebalancer = new Rebalancer(routing, store, transfers, pullRetries, counters, events,
        leaveTimeout.minus(leaveTimeout.dividedBy(10)), pullThreads);
    sweeper = new Sweeper(routing, store, transfers, counters, events, pendingCallbacks);
    rpc.handleQuickly(Wire.OP_WRITE, kv::handleWrite);
    rpc.handleQuickly(Wire.OP_GET, kv::handleGet);
    rpc.handle(Wire.OP_PULL, transfers::handlePull);
    rpc.handle(Wire.OP_PUSH, transfers::handlePush);
    rpc.onStatus(directory::accept);
    try {
      rpc.start();
    } catch (Exception e) {
      // Peer.start closes the node, once the rebalancer's listener has been let go.
      throw new IOException("cannot open the fork channel on " + self + ": " + e, e);
    }
    node.addDivergenceListener(d -> events.publish(Events.divergence(d)));
    events.publish(Events.started(self, options.endpoint(), node.viewId(), node.members()));
    // Last: from here the rebalancer moves data, starting with the change that waited for it.
    rebalancerReady.complete(rebalancer);
    statusTimer.scheduleWithFixedDelay(() -> guard("status", this::publishStatus), 0, 1, TimeUnit.SECONDS);
    maintenance.scheduleWithFixedDelay(() -> guard("sweep", sweeper::sweep), 2, 2, TimeUnit.SECONDS);
    maintenance.scheduleWithFixedDelay(() -> guard("repair retries", sweeper::retryRepair), 1, 1, TimeUnit.SECONDS);
    pullRetrier.scheduleWithFixedDelay(() -> guard("pull retries", () -> counters.keysMigratedIn.add(
        pullRetries.runDue())), 1, 1, TimeUnit.SECONDS);
    Duration grace = options.tombstoneGrace();
    // Often enough that a tombstone goes soon after its grace (a tenth of it later at most, and
    // never more than a minute), rarely enough that the scan of the store costs nothing noticeable.
    long purgeEvery = Math.max(1_000, Math.min(60_000, grace.toMillis() / 10));
    maintenance.scheduleWithFixedDelay(() -> guard("tombstone purge", () -> counters.tombstonesPurged.add(
        purgeTombstones(store, incoming, VersionClock.systemMicros(), grace))), purgeEvery, purgeEvery,
        TimeUnit.MILLISECONDS);
    faults = Faults.of(options.faultInjection(), node);
    RingView ringView = new RingView(node, directory, routing::inRing, faults::cutOffFrom);
    gate.open(new HttpApi(kv, store, routing, ringView, this::stats, events, node::viewId, faults));
  }

  /**
   * Drops the tombstones that outlived their grace at {@code nowMicros}, except those of keys still
   * coming in from their previous owners ({@link Incoming}): a pull, or a read that asks those
   * owners, would bring the value the tombstone deleted back.
   *
   * @return how many it dropped
   */
  static long purgeTombstones(Store store, Incoming incoming, long nowMicros, Duration grace) {
    return store.purgeTombstones(purgeBound(nowMicros, grace), key -> !incoming.previousOwners(key).isEmpty());
  }

  /**
   * The stamp before which a tombstone has outlived its grace, at {@code nowMicros}: tombstones
   * stamped earlier are purged, those at or after it kept.
   */
  static long purgeBound(long nowMicros, Duration grace) {
    return nowMicros - grace.toNanos() / 1_000;
  }

  /** Sends this peer's status (view, checksum, counts) to the others. */
  private void publishStatus() {
    // In the ring asked after the status is built: a status of the ring a closed node left
    // behind (a checksum no peer has under that view) is never sent.
    directory.publish(node.ring()::contains, node::isInRing);
  }

  /** Runs a maintenance task, logging what it throws (see {@link TaskGuard}). */
  private void guard(String what, Runnable task) {
    tasks.run(what, task);
  }

  Wire.PeerStatus status(long sequence) {
    KeyCounts k = keyCounts.of(store, routing);
    RingView.Current current = RingView.Current.of(node);
    return new Wire.PeerStatus(routing.self(), current.viewId(), current.ring().checksum(), k.primary(), k.backup(),
        k.stray(), counters.migrationsInProgress.get(), sequence);
  }

  StatsReply stats() {
    KeyCounts k = keyCounts.of(store, routing);
    RingmasterStats s = node.stats();
    RingView.Current current = RingView.Current.of(node);
    return new StatsReply(routing.self(), current.viewId(), s.viewsSeen(), Long.toHexString(current.ring().checksum()),
        s.members(), routing.inRing(), routing.isLeaving(), k.primary(), k.backup(), k.stray(), k.tombstones(),
        counters.tombstonesPurged.sum(), counters.keysMigratedIn.sum(), counters.keysMigratedOut.sum(),
        counters.strayKeysHandedOff.sum(), counters.migrationsInProgress.get(), s.pendingCallbacks(),
        s.listenerFailures(), counters.migrationsCompleted.sum(), counters.migrationsFailed.sum(),
        pullRetries.pending(),
        sweeper.repairPending(), counters.putsServed.sum(), counters.getsServed.sum(), counters.deletesServed.sum(),
        counters.writesStored.sum(), counters.writesForwarded.sum(), counters.readRepairs.sum(),
        counters.readsFromPreviousOwners.sum(), s.divergences(), s.splitViewDivergences(), s.rejoins(),
        events.subscribers(), faults.cutOffFrom());
  }

  String describe() {
    return routing.self() + " serving " + options.endpoint() + " in cluster \"" + node.config().clusterName()
        + "\" (view " + node.viewId() + ", " + node.members().size() + " members, replicas "
        + node.config().replicas() + ")";
  }

  /** Blocks until {@link #close()} has run. */
  void awaitStop() throws InterruptedException {
    stopped.await();
  }

  /** Leaves gracefully (hands every key off first), then stops serving. Idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    // Every step runs even if one before it threw: a failure must not leave the node in the
    // cluster, the port bound or the threads running.
    try {
      // No sweeps, repairs or pull retries during the hand-off. The status reports go on until
      // the node closes (its ring is then the one it leaves behind, not the view's: a report of it
      // would look like a divergence); the other peers' ring pages mute a report that grows old.
      maintenance.shutdownNow();
      pullRetrier.shutdownNow();
      long started = System.nanoTime();
      // The words below count this leave's hand-off, not the keys handed to joiners before it.
      long handedOffBefore = counters.keysMigratedOut.sum();
      if (rebalancer != null) {
        // The LEAVING hand-off's budget counts from here, about where the node's leave timeout
        // starts. Before the check below: a refusal published after it is then handled as the
        // peer's leave by the refusal's own change (which finds the peer stopping), not by nothing.
        rebalancer.stopping();
      }
      runAll(() -> {
        if (rebalancer != null && !node.isInRing() && node.viewId() >= 0) {
          // Refused (another peer holds this id): the node owns nothing, so it delivers no LEAVING
          // change, but this peer may still hold what it took before it was refused.
          rebalancer.leaveRefused(node.viewId());
        }
      }, () -> {
        routing.nodeClosing();
        node.close(); // delivers LEAVING; the rebalancer hands everything off before this returns
      });
      // System.out, not a logger: where LeaveLogManager is not the manager (a JVM whose logging
      // started before Main ran), java.util.logging closes its handlers in its own shutdown hook.
      System.out.printf("%s left the cluster in %d ms; keys handed off in total: %d; %s%n",
          routing.self(), (System.nanoTime() - started) / 1_000_000, counters.keysMigratedOut.sum() - handedOffBefore,
          leaveOutcome());
      System.out.flush();
    } finally {
      runAll(() -> {
        if (kv != null) {
          kv.stopped(); // writes in flight end at once rather than retry owners no longer reachable
        }
        if (!gate.close(STOP_GRACE)) {
          LOG.log(System.Logger.Level.INFO, "{0}: HTTP requests still in flight after {1} ms are cut off",
              routing.self(), Long.toString(STOP_GRACE.toMillis()));
        }
      }, () -> stopKeepingTheInterrupt(http), events::close, rpc::close, this::shutdownThreads, stopped::countDown);
    }
  }

  /**
   * Stops the HTTP server at once, its caller's interrupt kept: Java 25's {@code HttpServer.stop}
   * clears it (Java 17's does not), and a close called interrupted must return interrupted, for its
   * caller to see.
   */
  private static void stopKeepingTheInterrupt(HttpServer http) {
    boolean interrupted = Thread.currentThread().isInterrupted();
    try {
      http.stop(0);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Runs a task on one of the peer's executors, unless the peer is closing and that one has stopped.
   * The task logs its own failures ({@link TaskGuard}).
   */
  private void runOn(ExecutorService executor, Runnable guarded) {
    try {
      executor.execute(guarded);
    } catch (RejectedExecutionException closing) {
      // stopped by close(): nothing more to report or repair
    }
  }

  /**
   * How the hand-off ended, in words. After a complete one the store may still hold copies of
   * writes that came in during the leave: those are on their owners too, so they are not counted.
   */
  private String leaveOutcome() {
    Optional<Rebalancer.LeaveOutcome> outcome = rebalancer == null ? Optional.empty() : rebalancer.leaveOutcome();
    if (outcome.isEmpty()) {
      return store.size() == 0 ? "it held nothing" : "no hand-off ran; " + store.size() + " entries held here";
    }
    return switch (outcome.get()) {
      case COMPLETE -> "every entry reached its owners";
      case LAST_PEER -> "the last peer: nobody to hand off to; " + store.size() + " entries leave with it";
      case INCOMPLETE -> "hand-off incomplete: " + store.size() + " entries may be held here only";
      case IN_PROGRESS -> "hand-off cut short: " + store.size() + " entries may be held here only";
    };
  }

  /** Runs every step, even after one throws; then throws the first failure, the later ones suppressed. */
  private static void runAll(Runnable... steps) {
    Steps all = new Steps();
    for (Runnable step : steps) {
      all.run(step);
    }
    all.throwFirst();
  }

  /**
   * Stops the peer's threads and waits, up to {@link #THREADS_GRACE} in all, until each has ended,
   * so that a peer closed in a JVM that goes on (a test, an application embedding it) leaves no
   * thread behind. A task deaf to its interrupt is named in a WARNING and left running; its
   * threads are daemons, so it holds up no JVM exit.
   */
  private void shutdownThreads() {
    Map<String, ExecutorService> pools = new LinkedHashMap<>();
    pools.put("sweep", maintenance);
    pools.put("pull-retries", pullRetrier);
    pools.put("pulls", pullThreads); // after the node's close: its last changes may still pull
    pools.put("pushes", pushThreads); // likewise: they may still push
    pools.put("status", statusTimer);
    pools.put("http", httpThreads);
    pools.put("rpc", rpcWorkers);
    pools.put("rpc-timer", rpcTimer);
    pools.values().forEach(ExecutorService::shutdownNow);
    long deadline = System.nanoTime() + THREADS_GRACE.toNanos();
    List<String> running = new ArrayList<>();
    boolean interrupted = false;
    for (Map.Entry<String, ExecutorService> pool : pools.entrySet()) {
      try {
        if (!pool.getValue().awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          running.add(pool.getKey());
        }
      } catch (InterruptedException e) {
        interrupted = true; // stop waiting; the interrupt is kept for the caller
        deadline = System.nanoTime();
        running.add(pool.getKey());
      }
    }
    if (!interrupted) {
      try {
        // A pool has ended once its last worker left its loop: the threads end a moment later.
        threads.awaitEnded(deadline);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (!running.isEmpty()) {
      LOG.log(Level.WARNING, "{0}: threads still running {1} ms after the stop, left behind: {2}",
          node.config().nodeId(), Long.toString(THREADS_GRACE.toMillis()), running);
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** A timer whose cancelled tasks leave its queue at once: every call's timeout is cancelled when it answers. */
  private static ScheduledExecutorService timer(ThreadFactory threads) {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, threads);
    t.setRemoveOnCancelPolicy(true);
    return t;
  }
}
