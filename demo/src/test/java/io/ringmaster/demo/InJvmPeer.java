package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;

import io.ringmaster.Ringmaster;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * The parts of a peer that writes, hand-offs and sweeps pass through, on a real node in this JVM
 * (the in-memory JGroups stack, replicas 2 unless a test says otherwise): its RPC channel, store, key service, transfers and
 * sweeper, wired as {@link Peer} wires them, without the HTTP API, the rebalancer and the
 * periodic tasks, so a test calls each step itself; {@code pulls} are the threads a rebalancer a
 * test makes for it pulls on, {@code pushes} those its transfers push on. Closing it closes the
 * node and its threads.
 */
record InJvmPeer(Ringmaster node, Routing routing, Rpc rpc, Store store, Counters counters, KvService kv,
                 Transfers transfers, Sweeper sweeper, ExecutorService workers, ScheduledExecutorService timer,
                 ExecutorService pulls, ExecutorService pushes)
    implements AutoCloseable {
  private static final String STACK = "ringmaster/jgroups/in-jvm.xml";
  private static final AtomicInteger CLUSTERS = new AtomicInteger();

  /** A cluster name no other test (nor another run on this machine) uses. */
  static String clusterName(String test) {
    return test + "-" + ProcessHandle.current().pid() + "-" + CLUSTERS.incrementAndGet();
  }

  /** Joins the cluster with replicas 2 and serves writes, reads, pushes and pulls; every peer counts as ready. */
  static InJvmPeer start(String cluster, String id, TestingAids aids) throws Exception {
    return start(cluster, id, aids, builder -> builder);
  }

  /** Joins the cluster, with {@code settings} applied over replicas 2, and serves writes, reads, pushes and pulls. */
  static InJvmPeer start(String cluster, String id, TestingAids aids, UnaryOperator<Ringmaster.Builder> settings)
      throws Exception {
    return start(cluster, id, aids, settings, KvService.Timeouts.DEFAULT, kv -> kv::handleWrite);
  }

  /**
   * As {@link #start(String, String, TestingAids, UnaryOperator)}, with these timeouts for the
   * writes it makes, and serving the writes it is sent with the handler {@code writes} gives.
   */
  static InJvmPeer start(String cluster, String id, TestingAids aids, UnaryOperator<Ringmaster.Builder> settings,
                         KvService.Timeouts timeouts, Function<KvService, Rpc.QuickHandler> writes)
      throws Exception {
    return start(cluster, id, aids, settings, timeouts, writes, key -> List.of());
  }

  /**
   * As {@link #start(String, String, TestingAids, UnaryOperator, KvService.Timeouts, Function)},
   * its key service taking {@code previousOwners} for the previous owners of a key still coming in
   * (the part of {@link Incoming} it uses; by default no key is coming in).
   */
  static InJvmPeer start(String cluster, String id, TestingAids aids, UnaryOperator<Ringmaster.Builder> settings,
                         KvService.Timeouts timeouts, Function<KvService, Rpc.QuickHandler> writes,
                         Function<String, List<String>> previousOwners) throws Exception {
    return start(cluster, id, aids, settings, timeouts, writes, previousOwners, owner -> true);
  }

  /**
   * As {@link #start(String, String, TestingAids, UnaryOperator, KvService.Timeouts, Function,
   * Function)}, its key service counting as serving requests the owners {@code ready} accepts
   * (what {@link PeerDirectory} tells a peer's; by default every one).
   */
  static InJvmPeer start(String cluster, String id, TestingAids aids, UnaryOperator<Ringmaster.Builder> settings,
                         KvService.Timeouts timeouts, Function<KvService, Rpc.QuickHandler> writes,
                         Function<String, List<String>> previousOwners, Predicate<String> ready)
      throws Exception {
    return start(cluster, id, aids, settings, timeouts, writes, previousOwners, ready, false);
  }

  /**
   * As {@link #start(String, String, TestingAids, UnaryOperator, KvService.Timeouts, Function,
   * Function, java.util.function.Predicate)}, its reads repairing the owners they find behind if
   * {@code readRepair} (off otherwise, as in the process tests, so that what a test reads stays put).
   */
  static InJvmPeer start(String cluster, String id, TestingAids aids, UnaryOperator<Ringmaster.Builder> settings,
                         KvService.Timeouts timeouts, Function<KvService, Rpc.QuickHandler> writes,
                         Function<String, List<String>> previousOwners, Predicate<String> ready,
                         boolean readRepair) throws Exception {
    Ringmaster node = settings.apply(Ringmaster.builder().clusterName(cluster).nodeId(id).jgroupsConfig(STACK)
        .virtualNodes(64).replicas(2)).build().start();
    InJvmPeer peer;
    try {
      peer = assemble(node, id, aids, timeouts, writes, previousOwners, ready, readRepair);
    } catch (RuntimeException | Error e) { // the node is started: it must not outlive a failed start
      node.close();
      throw e;
    }
    try {
      peer.rpc().start();
    } catch (Exception e) {
      peer.close();
      throw e;
    }
    return peer;
  }

  /** The peer's parts around a started node, its RPC not started yet. */
  private static InJvmPeer assemble(Ringmaster node, String id, TestingAids aids, KvService.Timeouts timeouts,
                                    Function<KvService, Rpc.QuickHandler> writes,
                                    Function<String, List<String>> previousOwners,
                                    Predicate<String> ready, boolean readRepair) {
    Routing routing = new Routing(node);
    ExecutorService workers = Executors.newCachedThreadPool(OwnThreads.daemons(id + "-rpc"));
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(OwnThreads.daemons(id + "-timer"));
    Rpc rpc = new Rpc(node, workers, timer);
    Store store = new Store();
    Counters counters = new Counters();
    KvService kv = new KvService(routing, store, VersionClock.system(id), rpc, counters, node::viewId,
        ready, readRepair, timeouts, previousOwners);
    ExecutorService pushes = Transfers.pushThreads(OwnThreads.daemons(id + "-pushes"), aids.pushThreads());
    Transfers transfers = new Transfers(routing, store, rpc, counters, node::viewId, () -> 0, owner -> true,
        new EventLog(), aids, pushes);
    Sweeper sweeper = new Sweeper(routing, store, transfers, counters, new EventLog(), () -> 0);
    rpc.handleQuickly(Wire.OP_WRITE, writes.apply(kv));
    rpc.handleQuickly(Wire.OP_GET, kv::handleGet);
    rpc.handle(Wire.OP_PUSH, transfers::handlePush);
    rpc.handle(Wire.OP_PULL, transfers::handlePull); // served once its counters say it is settled
    return new InJvmPeer(node, routing, rpc, store, counters, kv, transfers, sweeper, workers, timer,
        Rebalancer.pullThreads(OwnThreads.daemons(id + "-pulls")), pushes);
  }

  /**
   * Starts a peer for each id in a new cluster, adding each to {@code into} as it starts (the caller
   * closes them), and waits until they share one ring.
   */
  static void startAll(List<InJvmPeer> into, String test, List<String> ids) throws Exception {
    String cluster = clusterName(test);
    for (String id : ids) {
      into.add(start(cluster, id, TestingAids.fromSystemProperties()));
    }
    awaitOneRing(into);
  }

  /** The testing aids that {@code property = value} asks for; the property is restored afterwards. */
  static TestingAids aidsWith(String property, String value) {
    String before = System.getProperty(property);
    System.setProperty(property, value);
    try {
      return TestingAids.fromSystemProperties();
    } finally {
      if (before == null) {
        System.clearProperty(property);
      } else {
        System.setProperty(property, before);
      }
    }
  }

  /** Waits until every peer has the same ring, of them all. */
  static void awaitOneRing(List<InJvmPeer> peers) {
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() ->
        peers.stream().allMatch(p -> p.node.ring().members().size() == peers.size())
            && peers.stream().map(p -> p.node.ring().checksum()).distinct().count() == 1);
  }

  /** Closes every peer, each whatever the others threw; the first failure is thrown at the end. */
  static void closeAll(List<InJvmPeer> peers) {
    Steps all = new Steps();
    peers.forEach(p -> all.run(p::close));
    all.throwFirst();
  }

  /** Has this peer answer each read request {@code millis} later than it would: an owner slow to answer. */
  void answerReadsAfter(long millis) {
    rpc.handleQuickly(Wire.OP_GET, in -> kv.handleGet(in).thenApplyAsync(reply -> reply,
        CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS)));
  }

  /** The first key {@code key-0, key-1, ...} whose owners in this peer's ring are exactly {@code owners}. */
  String keyOwnedBy(Set<String> owners) {
    for (int i = 0; ; i++) {
      String key = "key-" + i;
      if (Set.copyOf(routing.owners(key)).equals(owners)) {
        return key;
      }
    }
  }

  String id() {
    return routing.self();
  }

  @Override
  public void close() {
    try {
      try {
        rpc.close();
      } finally {
        node.close();
      }
    } finally {
      workers.shutdownNow();
      timer.shutdownNow();
      pulls.shutdownNow();
      pushes.shutdownNow();
    }
  }
}
