package io.ringmaster.testing;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.FailsOnDestroy;
import io.ringmaster.OwnershipChange;
import io.ringmaster.Registration;
import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterConfig;
import io.ringmaster.RingmasterException;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jgroups.MergeView;
import org.jgroups.protocols.TP;
import org.jgroups.stack.ProtocolStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The test kit an embedder's tests use: real nodes in one JVM, their failures, and the fold of what they hear. */
class LocalClusterTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /**
   * startAll starts the nodes at once into one ring, into a running cluster too, and one start
   * that fails (an id already held) is thrown once the others have started.
   */
  @Test
  void startAll_startsTheNodesTogether_andThrowsAFailedStartOnceTheOthersStarted() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: startAll")) {
      List<Ringmaster> three = cluster.startAll("a", "b", "c");
      assertEquals(List.of("a", "b", "c"), three.stream().map(n -> n.localMember().id()).toList());
      assertEquals(3, cluster.awaitSettled(WAIT).members().size());
      for (Ringmaster n : three) { // separate clusters would have merged by now
        assertFalse(n.channel().getView() instanceof MergeView, "one cluster from the start: " + n.channel().getView());
      }

      RingmasterException held = assertThrows(RingmasterException.class, () -> cluster.startAll("d", "a", "e"));
      assertEquals(RingmasterException.Reason.ID_HELD, held.reason());
      assertEquals(List.of("a", "b", "c", "d", "e"), cluster.awaitSettled(WAIT).members().stream().map(Member::id)
          .sorted().toList(), "d and e started all the same");
    }
  }

  /**
   * startAll with a step before each start: each node's listener, added there, hears the node's
   * first ring (the change into it, from the ring before it joined), and its changes fold to
   * exactly what the node owns; a step that throws fails its node's start alone, thrown once the
   * others have started.
   */
  @Test
  void startAll_withAStepBeforeEachStart_eachNodesListenerHearsItsFirstRing() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: startAll before start")) {
      Map<String, OwnershipFold> folds = new ConcurrentHashMap<>();
      List<Ringmaster> three = cluster.startAll(node -> {
        OwnershipFold fold = new OwnershipFold();
        folds.put(node.localMember().id(), fold);
        node.addOwnershipListener(fold);
      }, "a", "b", "c");
      cluster.awaitSettled(WAIT);
      for (Ringmaster n : three) {
        OwnershipFold fold = folds.get(n.localMember().id());
        OwnershipChange first = fold.changes().get(0);
        assertEquals(-1, first.previousViewId(), n.localMember().id() + "'s first change is from before its first view");
        assertTrue(first.ring().members().contains(n.localMember()), n.localMember().id() + " in its first ring");
        assertEquals(Optional.empty(), fold.disagreement(n), n.localMember().id());
      }

      IllegalStateException refused = new IllegalStateException("no listener for d");
      IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> cluster.startAll(node -> {
        if (node.localMember().id().equals("d")) {
          throw refused;
        }
      }, "d", "e"));
      assertEquals(refused, thrown);
      assertEquals(List.of("a", "b", "c", "e"), cluster.awaitSettled(WAIT).members().stream().map(Member::id)
          .sorted().toList(), "e started all the same, d not");
    }
  }

  /**
   * When the first id, started alone, fails (here its caller is interrupted), the others still
   * start, and the failure is thrown once they have: it was thrown at once, the others never
   * started.
   */
  @Test
  void startAll_whoseFirstStartFails_stillStartsTheOthers() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: startAll's first fails")) {
      Thread.currentThread().interrupt();
      RingmasterException e;
      try {
        e = assertThrows(RingmasterException.class, () -> cluster.startAll("a", "b", "c"));
      } finally {
        Thread.interrupted();
      }
      assertEquals(RingmasterException.Reason.INTERRUPTED, e.reason());
      assertEquals(List.of("b", "c"), cluster.nodes().stream().map(n -> n.localMember().id()).sorted().toList());
      assertEquals(2, cluster.awaitSettled(WAIT).members().size());
    }
  }

  /**
   * A cluster lets go of the nodes that have stopped, closed or crashed, with what their listeners
   * keep (a fold keeps a ring per change): it held every node it ever started until it was closed,
   * so a long test of churn grew without bound. The test's own checks on a stopped node still work.
   */
  @Test
  void nodesThatStopped_areLetGo_andStillKnownAsTheClustersOwn() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: let go")) {
      Ringmaster a = cluster.start("a");
      Ringmaster closedOne = cluster.start(cluster.builder("b"), n -> n.addOwnershipListener(new OwnershipFold()));
      WeakReference<OwnershipFold> fold = foldOf(cluster, "c");
      closedOne.close();
      crashAndAwaitItsStop(cluster, "c"); // the test holds neither c nor its fold from here: only the cluster could
      cluster.start("d");
      await("the crashed node's fold collected").atMost(WAIT).until(() -> {
        cluster.nodes(); // lets go of b, and of c once its stop in the background has ended
        System.gc();
        return fold.get() == null;
      });
      assertEquals(List.of("a", "d"), cluster.nodes().stream().map(n -> n.localMember().id()).toList());
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> cluster.partition(List.of(a), List.of(closedOne)));
      assertTrue(e.getMessage().startsWith("node b is not running"), e.getMessage());
    }
  }

  /**
   * close() waits for the crashes under way: a crashed node still stopping in the background (held
   * up here by its monitor, which its stop takes) has stopped when close() returns, so that a test
   * leaves no node running behind it.
   */
  @Test
  void close_waitsForACrashedNodeToStop() throws Exception {
    LocalCluster cluster = new LocalCluster("kit test: close waits for crashes");
    try {
      Ringmaster a = cluster.start("a");
      CompletableFuture<Void> closed = new CompletableFuture<>();
      Thread closer = new Thread(() -> {
        try {
          cluster.close();
          closed.complete(null);
        } catch (RuntimeException | Error e) {
          closed.completeExceptionally(e);
        }
      }, "closing the kit");
      synchronized (a) { // the crash's stop waits for this
        cluster.crash(a);
        closer.start();
        await("close() waiting, or done").atMost(WAIT).until(() -> closed.isDone()
            || closer.getState() == Thread.State.WAITING && Arrays.stream(closer.getStackTrace())
            .anyMatch(f -> f.getClassName().equals(LocalCluster.class.getName()) && f.getMethodName().equals("close")));
        assertFalse(closed.isDone(), "close() returned before the crashed node stopped");
        assertFalse(a.channel().isClosed());
      }
      closed.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertTrue(a.channel().isClosed(), "the crashed node stopped before close() returned");
    } finally {
      cluster.close();
    }
  }

  /**
   * Nodes whose stop fails (a protocol that throws as its stack is destroyed) make close() throw
   * once every node has been stopped: an IllegalStateException naming the cluster, caused by the
   * first failure itself, with the others suppressed in it. A second close() finds the protocols'
   * failure spent, and closes their channels.
   */
  @Test
  void close_whenNodesFailToStop_throwsTheFirstFailureAsItsCause_theOthersSuppressed() throws Exception {
    LocalCluster cluster = new LocalCluster("kit test: failing stops");
    List<Ringmaster> nodes = List.of();
    try {
      nodes = cluster.startAll("a", "b");
      for (Ringmaster n : nodes) {
        n.channel().getProtocolStack().insertProtocol(new FailsOnDestroy(), ProtocolStack.Position.ABOVE, TP.class);
      }

      IllegalStateException e = assertThrows(IllegalStateException.class, cluster::close);

      assertEquals("stopping cluster " + cluster.name() + " failed", e.getMessage());
      assertInstanceOf(AssertionError.class, e.getCause(), "the node's own failure, not a wrapper of it");
      assertEquals("destroy failed", e.getCause().getMessage());
      assertEquals(1, e.getSuppressed().length, Arrays.toString(e.getSuppressed()));
      assertInstanceOf(AssertionError.class, e.getSuppressed()[0]);
    } finally {
      cluster.close();
    }
    for (Ringmaster n : nodes) {
      assertTrue(n.channel().isClosed(), n::toString);
    }
  }

  /**
   * The waits need a node to wait for: with none running (none started yet, or the only one
   * closed) they fail at once saying so, rather than wait out their timeout or pass on nothing.
   */
  @Test
  void theWaits_withNoNodeRunning_failAtOnceSayingSo() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: no node")) {
      List<Executable> waits = List.of(() -> cluster.awaitAgreement(WAIT), () -> cluster.awaitSettled(WAIT));
      for (int round = 0; round < 2; round++) {
        for (Executable wait : waits) {
          IllegalStateException e = assertThrows(IllegalStateException.class, wait);
          assertEquals("cluster " + cluster.name() + " has no running node to agree", e.getMessage());
        }
        if (round == 0) {
          cluster.start("a").close();
        }
      }
    }
  }

  /**
   * A node of the kit's builder has the settings the class javadoc and the README give (its cluster
   * name, the in-memory stack, gossip every 300 ms, a 5 s leaveTimeout) and Ringmaster's defaults
   * otherwise (1,024 virtual nodes, one replica).
   */
  @Test
  void builder_setsTheKitsSettings_andLeavesTheOthersAtRingmastersDefaults() {
    LocalCluster cluster = new LocalCluster("kit test: builder");
    RingmasterConfig kit = cluster.builder("a").buildConfig();
    RingmasterConfig defaults = Ringmaster.builder().nodeId("a").buildConfig();
    assertEquals(cluster.name(), kit.clusterName());
    assertEquals(LocalCluster.STACK, kit.jgroupsConfig());
    assertEquals(Duration.ofMillis(300), kit.gossipInterval());
    assertEquals(Duration.ofSeconds(5), kit.leaveTimeout());
    assertEquals(1024, kit.virtualNodes());
    assertEquals(1, kit.replicas());
    assertEquals(defaults.startTimeout(), kit.startTimeout());
    assertEquals(defaults.weight(), kit.weight());
    cluster.close(); // nothing started: nothing to stop
  }

  /**
   * Settings given to the cluster apply to every node it builds, after the kit's (which they may
   * override: a leaveTimeout, say), startAll's nodes included; a settings function that returns no
   * builder is refused, naming it.
   */
  @Test
  void settingsGivenToTheCluster_applyToEveryNodeItBuilds_startAllIncluded() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: settings",
        b -> b.replicas(2).virtualNodes(64).leaveTimeout(Duration.ofSeconds(7)))) {
      RingmasterConfig built = cluster.builder("x").buildConfig();
      assertEquals(List.of(cluster.name(), "x", LocalCluster.STACK, Duration.ofMillis(300)),
          List.of(built.clusterName(), built.nodeId(), built.jgroupsConfig(), built.gossipInterval()), "the kit's");
      assertEquals(List.of(2, 64, Duration.ofSeconds(7)),
          List.of(built.replicas(), built.virtualNodes(), built.leaveTimeout()), "the test's, after the kit's");
      List<Ringmaster> nodes = cluster.startAll("a", "b");
      for (Ringmaster n : nodes) {
        assertEquals(List.of(2, 64), List.of(n.config().replicas(), n.config().virtualNodes()), n::toString);
      }
      assertEquals(2, cluster.awaitSettled(WAIT).members().size());
    }
    assertThrows(NullPointerException.class, () -> new LocalCluster("kit test: no settings", null));
    try (LocalCluster broken = new LocalCluster("kit test: settings returning null", b -> null)) {
      NullPointerException none = assertThrows(NullPointerException.class, () -> broken.builder("a"));
      assertEquals("the cluster's settings returned no builder", none.getMessage());
    }
  }

  private static void crashAndAwaitItsStop(LocalCluster cluster, String id) {
    Ringmaster node = cluster.nodes().stream().filter(n -> n.localMember().id().equals(id)).findFirst().orElseThrow();
    cluster.crash(node);
    await(id + " stopped").atMost(WAIT).until(() -> node.channel().isClosed());
  }

  /** Starts node {@code id} with a fold that only the node holds, and returns a weak reference to it. */
  private static WeakReference<OwnershipFold> foldOf(LocalCluster cluster, String id) {
    OwnershipFold fold = new OwnershipFold();
    cluster.start(cluster.builder(id), n -> n.addOwnershipListener(fold));
    return new WeakReference<>(fold);
  }

  /**
   * Four nodes agree; a crash (its listeners hear nothing more), then a partition and its healing,
   * each end in one ring of the nodes left, and every node's fold of its changes matches its ring
   * at each step, with no change contradicting the one before it nor its own rings; a graceful
   * close hands everything on; the cluster's close stops the rest.
   */
  @Test
  void nodesAgree_throughACrashAPartitionAndItsHealing_andTheirFoldsMatchTheirRings() throws Exception {
    Map<String, OwnershipFold> folds = new LinkedHashMap<>();
    Ringmaster a;
    Ringmaster b;
    Ringmaster d;
    try (LocalCluster cluster = new LocalCluster("kit test: crash, partition & heal")) {
      for (String id : List.of("a", "b", "c", "d")) {
        OwnershipFold fold = new OwnershipFold();
        folds.put(id, fold);
        cluster.start(cluster.builder(id).virtualNodes(128), n -> n.addOwnershipListener(fold));
      }
      HashRing four = cluster.awaitSettled(WAIT);
      assertEquals(List.of("a", "b", "c", "d"), four.members().stream().map(Member::id).sorted().toList());
      assertFoldsMatch(cluster, folds);
      a = cluster.nodes().get(0);
      b = cluster.nodes().get(1);
      Ringmaster c = cluster.nodes().get(2);
      d = cluster.nodes().get(3);

      int heardByC = folds.get("c").changes().size();
      cluster.crash(c);
      assertTrue(LocalCluster.discard(c).discardAll(), "cut off: its leave reaches no one, as a crash's");
      assertEquals(List.of(a, b, d), cluster.nodes());
      HashRing three = cluster.awaitSettled(WAIT);
      assertEquals(List.of("a", "b", "d"), three.members().stream().map(Member::id).sorted().toList());
      assertFoldsMatch(cluster, folds);
      assertEquals(heardByC, folds.get("c").changes().size(), "a crashed node's listeners hear nothing more");

      cluster.partition(List.of(a)); // b and d, in no side listed, are the other
      assertEquals(List.of("a"), ids(cluster.awaitAgreement(List.of(a), WAIT)));
      assertEquals(List.of("b", "d"), ids(cluster.awaitAgreement(List.of(b, d), WAIT)));
      RingmasterException apart = assertThrows(RingmasterException.class,
          () -> cluster.awaitAgreement(Duration.ofMillis(200)));
      assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, apart.reason());
      assertTrue(apart.getMessage().contains("a: ring view"), apart.getMessage());

      cluster.heal();
      HashRing merged = cluster.awaitSettled(WAIT);
      assertEquals(three.checksum(), merged.checksum(), "the same members, so the same ring");
      assertFoldsMatch(cluster, folds);
      assertTrue(folds.get("a").changes().stream().anyMatch(ch -> ch.reason() == OwnershipChange.Reason.MERGE));

      assertFalse(d.leftIdle(), "not left yet");
      d.close(); // gracefully: its listener hands everything on
      assertTrue(d.leftIdle(), "its listeners had handled everything when it left");
      assertTrue(folds.get("d").holdsNothing(), "d's listener heard it leave");
      cluster.awaitSettled(WAIT);
      assertFoldsMatch(cluster, folds);
    }
    assertTrue(a.channel().isClosed() && b.channel().isClosed(), "stopped with the cluster");
    folds.values().forEach(f -> assertEquals(List.of(), f.violations()));
  }

  /**
   * The longest timeout is a wait as long as it takes, as it is for {@code Ringmaster.awaitRing}:
   * with two sides apart, awaitAgreement polls until the heal, and awaitSettled returns the merged
   * ring. {@code Duration.toNanos()} overflows past 292 years: the waits threw an
   * ArithmeticException at once.
   */
  @Test
  void awaitAgreementAndAwaitSettled_withTheLongestTimeout_waitUntilTheNodesAgree() throws Exception {
    Duration longest = Duration.ofSeconds(Long.MAX_VALUE);
    try (LocalCluster cluster = new LocalCluster("kit test: longest timeout")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      cluster.partition(List.of(a), List.of(b));
      assertEquals(List.of("a"), ids(cluster.awaitAgreement(List.of(a), WAIT)));
      assertEquals(List.of("b"), ids(cluster.awaitAgreement(List.of(b), WAIT))); // two rings until the heal
      CompletableFuture<HashRing> agreed = new CompletableFuture<>();
      // Ends with the agreement, or when the cluster's close leaves it no node to wait for.
      Thread waiter = new Thread(() -> {
        try {
          agreed.complete(cluster.awaitAgreement(longest));
        } catch (Throwable e) {
          agreed.completeExceptionally(e);
        }
      }, "waiter");
      waiter.start();
      await("the waiter polls").atMost(WAIT)
          .until(() -> waiter.getState() == Thread.State.TIMED_WAITING || agreed.isDone());
      assertFalse(agreed.isDone(), () -> "gave up at once: " + agreed.handle((r, e) -> e).join());
      cluster.heal();
      assertEquals(List.of("a", "b"), ids(agreed.get(WAIT.toSeconds(), TimeUnit.SECONDS)));
      assertEquals(List.of("a", "b"), ids(cluster.awaitSettled(longest)));
      waiter.join(TimeUnit.SECONDS.toMillis(WAIT.toSeconds()));
    }
  }

  /** A negative timeout is refused, naming it, as {@code Ringmaster}'s waits refuse one, before any wait. */
  @Test
  void theWaits_refuseANegativeTimeout_namingIt() throws Exception {
    Duration negative = Duration.ofMillis(-1);
    try (LocalCluster cluster = new LocalCluster("kit test: negative timeout")) {
      Ringmaster a = cluster.start("a");
      List<Executable> waits = List.of(() -> cluster.awaitAgreement(negative),
          () -> cluster.awaitAgreement(List.of(a), negative), () -> cluster.awaitSettled(negative));
      for (Executable wait : waits) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, wait);
        assertEquals("timeout must not be negative: PT-0.001S", e.getMessage());
      }
      assertEquals(List.of("a"), ids(cluster.awaitSettled(WAIT))); // the cluster still works
      assertThrows(NullPointerException.class, () -> cluster.awaitAgreement(null));
    }
  }

  private static List<String> ids(HashRing ring) {
    return ring.members().stream().map(Member::id).sorted().toList();
  }

  private static void assertFoldsMatch(LocalCluster cluster, Map<String, OwnershipFold> folds) {
    for (Ringmaster n : cluster.nodes()) {
      assertEquals(Optional.empty(), folds.get(n.localMember().id()).disagreement(n));
    }
  }

  /**
   * awaitSettled waits for every listener to have handled the ring, not for the ring alone: with a
   * listener still busy with b's join, it times out saying so, and returns once the listener is done.
   */
  @Test
  void awaitSettled_waitsForEveryListener_andTimesOutNamingThemBusy() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (LocalCluster cluster = new LocalCluster("kit test: busy listener")) {
      try {
        cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(change -> {
          if (change.ring().members().size() == 2) {
            try {
              release.await(); // busy with b's join until the test lets it go
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        }));
        cluster.start("b");
        cluster.awaitAgreement(WAIT); // the ring agreed: only the listener is left
        RingmasterException busy = assertThrows(RingmasterException.class,
            () -> cluster.awaitSettled(Duration.ofSeconds(1)));
        assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, busy.reason());
        assertTrue(busy.getMessage().contains(": listeners still busy"), busy.getMessage());
      } finally {
        release.countDown();
      }
      assertEquals(2, cluster.awaitSettled(WAIT).members().size());
    }
  }

  /**
   * One side of a partition settles once its own nodes agree and their listeners are idle,
   * whatever the other side's listeners are doing; a side whose listener is busy times out naming
   * its nodes and the listeners, and settles once the listener is let go.
   */
  @Test
  void awaitSettled_ofOneSide_waitsForThatSidesListenersAlone() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (LocalCluster cluster = new LocalCluster("kit test: one side settles")) {
      try {
        AtomicInteger heardByA = new AtomicInteger();
        Ringmaster a = cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(change -> {
          if (heardByA.incrementAndGet() > 1) {
            try {
              release.await(); // busy from b's join on, until the test lets it go
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        }));
        Ringmaster b = cluster.start("b");
        cluster.awaitAgreement(WAIT);
        cluster.partition(List.of(a), List.of(b));

        assertEquals(List.of("b"), ids(cluster.awaitSettled(List.of(b), WAIT)), "b's side, with a's listener busy");
        RingmasterException busy = assertThrows(RingmasterException.class,
            () -> cluster.awaitSettled(List.of(a), Duration.ofSeconds(1)));
        assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, busy.reason());
        assertTrue(busy.getMessage().startsWith("the nodes [a] of cluster " + cluster.name() + " did not settle"
            + " within PT1S: listeners still busy"), busy.getMessage());
        release.countDown();
        assertEquals(List.of("a"), ids(cluster.awaitSettled(List.of(a), WAIT)));
        assertEquals(0, a.stats().pendingCallbacks(), "settled: a's listener has handled everything");

        cluster.heal();
        assertEquals(List.of("a", "b"), ids(cluster.awaitSettled(WAIT)));
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * A listener that throws fails awaitSettled, once the nodes have settled, naming the node and its
   * failures: a running node's, and a node's that threw as it left, after it has stopped. A cluster
   * that tolerates listener failures settles.
   */
  @Test
  void awaitSettled_failsWhenAListenerThrew_unlessTheClusterToleratesIt() throws Exception {
    // Counted, not taken to be one: if b rejoins to end a split view, a hears b join twice.
    AtomicInteger thrownByA = new AtomicInteger();
    try (LocalCluster cluster = new LocalCluster("kit test: listener threw")) {
      cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(change -> {
        if (change.ring().members().size() == 2) {
          thrownByA.incrementAndGet();
          throw new IllegalStateException("a's listener fails on b's join");
        }
      }));
      Ringmaster b = cluster.start("b");
      AssertionError threw = assertThrows(AssertionError.class, () -> cluster.awaitSettled(WAIT));
      assertTrue(threw.getMessage().startsWith("listeners of nodes of cluster " + cluster.name()
          + " threw (node: callbacks that threw) [a: " + thrownByA.get() + "]"), threw.getMessage());
      assertTrue(threw.getMessage().contains("tolerateListenerFailures()"), threw.getMessage());
      assertEquals(List.of("a", "b"), ids(cluster.awaitAgreement(WAIT)), "the nodes agreed all the same");

      b.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          throw new IllegalStateException("b's hand-off fails");
        }
      });
      b.close(); // b's shutdown has ended: the wait below lets b go, and keeps its failure
      AssertionError left = assertThrows(AssertionError.class, () -> cluster.awaitSettled(WAIT));
      assertTrue(left.getMessage().contains("[b (stopped): 1, a: " + thrownByA.get() + "]"), left.getMessage());

      cluster.tolerateListenerFailures();
      assertEquals(List.of("a"), ids(cluster.awaitSettled(WAIT)));
    }
  }

  /**
   * A crashed node's failures are those of its listeners before the crash: a callback under way
   * when it crashed, interrupted as the node stops, throws too, as a store's listener whose fetch
   * is cut short does, and that one is the crash's, not a bug of the listener.
   */
  @Test
  void awaitSettled_countsACrashedNodesListenerFailuresFromBeforeItsCrashOnly() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger heardByC = new AtomicInteger();
    try (LocalCluster cluster = new LocalCluster("kit test: crashed listener")) {
      try {
        cluster.start("a");
        Ringmaster c = cluster.start(cluster.builder("c"), n -> n.addOwnershipListener(change -> {
          if (heardByC.incrementAndGet() == 1) {
            throw new IllegalStateException("c's listener fails on its first ring");
          }
          try {
            release.await(); // busy with b's join until the crash interrupts it
          } catch (InterruptedException e) {
            throw new IllegalStateException("c's fetch was cut short", e);
          }
        }));
        assertThrows(AssertionError.class, () -> cluster.awaitSettled(WAIT));
        cluster.start("b");
        await().atMost(WAIT).until(() -> heardByC.get() == 2);

        cluster.crash(c);
        await().atMost(WAIT).until(() -> c.stats().listenerFailures() == 2); // the second, the crash's
        AssertionError threw = assertThrows(AssertionError.class, () -> cluster.awaitSettled(WAIT));
        assertTrue(threw.getMessage().contains("[c (crashed): 1]"), threw.getMessage());
        assertEquals(List.of("a", "b"), ids(cluster.awaitAgreement(WAIT)));
      } finally {
        release.countDown();
      }
    }
  }

  /** The fold reports a change that contradicts it, one that contradicts its own rings, and a ring it was not told of. */
  @Test
  void theFold_reportsAChangeHeardTwice_andARingItWasNotToldOf() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    HashRing two = empty.withMembers(List.of(Member.of("a"), Member.of("b")));
    OwnershipFold fold = new OwnershipFold(256, 3);
    OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, true, "a", 1));
    fold.onOwnershipChange(join);
    assertEquals(Optional.empty(), fold.disagreement(one, "a", 1));
    assertEquals(List.of(), fold.violations());

    Optional<String> stale = fold.disagreement(two, "a", 1); // b joined; the fold was not told
    assertTrue(stale.isPresent() && stale.get().contains("the changes heard give a PRIMARY, the ring nothing"),
        String.valueOf(stale));

    fold.onOwnershipChange(join); // the same change again
    assertFalse(fold.violations().isEmpty());
    assertTrue(fold.violations().get(0).startsWith("VIEW change to view 1, position "), fold.violations().get(0));
    assertTrue(fold.violations().get(0).endsWith("gained as PRIMARY where it was held as PRIMARY"));
    assertEquals(2, fold.changes().size());

    OwnershipFold wrongSources = new OwnershipFold(16, 4);
    RingDiff joinOfB = RingDiff.compute(one, two, "b", 1);
    RingDiff.Gained g = joinOfB.gained().get(0);
    RingDiff lying = new RingDiff("b", 1, List.of(new RingDiff.Gained(g.range(), List.of(), g.role())), List.of(),
        List.of()); // no sources, where a held the range
    wrongSources.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two, lying));
    assertTrue(wrongSources.violations().contains("VIEW change to view 2, position " + Long.toHexString(g.range().end())
        + ": gained with sources [], where the ring before has [a]"), String.valueOf(wrongSources.violations()));

    // a range told gained where both rings make a its owner, its sources (a) and role right: only
    // the rings show it was held before; and lost where both make it the owner: only the ring after
    RingDiff.Gained kept = RingDiff.compute(empty, false, one, true, "a", 1).gained().get(0);
    OwnershipFold heldBefore = new OwnershipFold(16, 5);
    heldBefore.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(new RingDiff.Gained(kept.range(), List.of(Member.of("a")), kept.role())), List.of(), List.of())));
    assertEquals(List.of("VIEW change to view 2, position " + Long.toHexString(kept.range().end())
        + ": gained where the ring before makes it PRIMARY"), heldBefore.violations());
    OwnershipFold heldAfter = new OwnershipFold(16, 5);
    heldAfter.onOwnershipChange(join);
    heldAfter.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(), List.of(new RingDiff.Lost(kept.range(), List.of(Member.of("a")), kept.role())), List.of())));
    assertEquals(List.of("VIEW change to view 2, position " + Long.toHexString(kept.range().end())
        + ": lost where the ring after makes it PRIMARY"), heldAfter.violations());

    // A change that tells of nothing, and a role "changed" to what it was.
    OwnershipFold idle = new OwnershipFold(16, 6);
    idle.onOwnershipChange(join);
    idle.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(), List.of(), List.of())));
    idle.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 2, 3, one, one, new RingDiff("a", 1,
        List.of(), List.of(), List.of(new RingDiff.RoleChange(kept.range(), kept.role(), kept.role())))));
    assertEquals(List.of("VIEW change to view 2: nothing changed", "VIEW change to view 3, position "
        + Long.toHexString(kept.range().end()) + ": changed from PRIMARY to PRIMARY"), idle.violations());
  }

  /**
   * One fold added to two nodes: it folds the changes of the member it heard first, and reports a
   * change of the other as one violation naming both, without folding it (which would flood the
   * violations with ranges "gained where held"); compared with the other node, it names both too.
   */
  @Test
  void theFold_hearingAnotherMembersChange_reportsItOnce_andDoesNotFoldIt() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    HashRing two = empty.withMembers(List.of(Member.of("a"), Member.of("b")));
    OwnershipFold fold = new OwnershipFold(256, 3);
    fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, true, "a", 1)));
    fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two,
        RingDiff.compute(one, two, "b", 1)));

    assertEquals(List.of("VIEW change to view 2: a change of b, heard by the fold of a (one fold per node),"
        + " not folded"), fold.violations());
    assertEquals(Optional.empty(), fold.disagreement(one, "a", 1), "b's gains are not a's");
    assertEquals(Optional.of("the changes heard are a's, not b's (one fold per node)"), fold.disagreement(two, "b", 1));
    assertEquals(2, fold.changes().size());
  }

  /**
   * What the fold checks of losses and role changes, and of a change as a whole: each wrong
   * change below breaks a rule, and the fold names it.
   */
  @Test
  void theFold_reportsLossesAndRoleChangesThatTheRingsOrTheFoldContradict() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    HashRing two = empty.withMembers(List.of(Member.of("a"), Member.of("b")));
    OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, true, "a", 1));
    RingDiff.Lost lost = RingDiff.compute(one, two, "a", 1).lost().get(0); // to b, which joined
    String at = "VIEW change to view 2, position " + Long.toHexString(lost.range().end()) + ": ";

    OwnershipFold wrongDestinations = new OwnershipFold(4096, 7);
    wrongDestinations.onOwnershipChange(join);
    wrongDestinations.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two,
        new RingDiff("a", 1, List.of(), List.of(new RingDiff.Lost(lost.range(), List.of(Member.of("zz")),
            lost.role())), List.of())));
    assertEquals(at + "lost to [zz], where the ring after has [b]", wrongDestinations.violations().get(0));

    OwnershipFold notHeld = new OwnershipFold(4096, 7); // never told of a's join
    notHeld.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two,
        new RingDiff("a", 1, List.of(), List.of(lost), List.of())));
    assertTrue(notHeld.violations().stream().anyMatch(v -> v.endsWith(": lost as PRIMARY where it was held as nothing")),
        String.valueOf(notHeld.violations()));

    OwnershipFold wrongRole = new OwnershipFold(4096, 7);
    wrongRole.onOwnershipChange(join);
    wrongRole.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(), List.of(), List.of(new RingDiff.RoleChange(lost.range(), RingDiff.Role.BACKUP,
            RingDiff.Role.PRIMARY)))));
    assertEquals(List.of(at + "changed from BACKUP, where that ring makes it PRIMARY"),
        wrongRole.violations().stream().filter(v -> v.startsWith(at)).toList());
    assertTrue(wrongRole.violations().stream().anyMatch(v -> v.endsWith(": changed from BACKUP where it was held as"
        + " PRIMARY")), String.valueOf(wrongRole.violations()));

    OwnershipFold twice = new OwnershipFold(4096, 7);
    twice.onOwnershipChange(join);
    twice.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two,
        new RingDiff("a", 1, List.of(), List.of(lost, lost), List.of())));
    assertTrue(twice.violations().stream().anyMatch(v -> v.endsWith(": 2 ranges of the change hold it")),
        String.valueOf(twice.violations()));
    OwnershipFold gainedTwice = new OwnershipFold(4096, 7);
    gainedTwice.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one, new RingDiff("a",
        1, List.of(join.gained().get(0), join.gained().get(0)), List.of(), List.of())));
    assertTrue(gainedTwice.violations().stream().anyMatch(v -> v.endsWith(": 2 ranges of the change hold it")),
        String.valueOf(gainedTwice.violations()));
    OwnershipFold changedTwice = new OwnershipFold(4096, 7);
    changedTwice.onOwnershipChange(join);
    RingDiff.RoleChange toBackup = new RingDiff.RoleChange(join.gained().get(0).range(), RingDiff.Role.PRIMARY,
        RingDiff.Role.BACKUP);
    changedTwice.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(), List.of(), List.of(toBackup, toBackup))));
    assertTrue(changedTwice.violations().stream().anyMatch(v -> v.endsWith(": 2 ranges of the change hold it")),
        String.valueOf(changedTwice.violations()));

    OwnershipFold notInRing = new OwnershipFold(4096, 7);
    notInRing.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, false, "c", 1), true)); // an empty diff, for a member not in it
    assertTrue(notInRing.violations().contains("VIEW change to view 1: in a ring that does not hold c"),
        String.valueOf(notInRing.violations()));

    // Roles the rings contradict, at a range's end: gained as a role the ring after does not give,
    // lost as one the ring before did not give, changed to one the ring after does not give.
    KeyRange kept = join.gained().get(0).range();
    String atKept = ", position " + Long.toHexString(kept.end()) + ": ";
    OwnershipFold gainedAs = new OwnershipFold(4096, 7);
    gainedAs.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one, new RingDiff("a", 1,
        List.of(new RingDiff.Gained(kept, List.of(), RingDiff.Role.BACKUP)), List.of(), List.of())));
    assertTrue(gainedAs.violations().contains("VIEW change to view 1" + atKept
        + "gained as BACKUP, where that ring makes it PRIMARY"), String.valueOf(gainedAs.violations()));
    OwnershipFold lostAs = new OwnershipFold(4096, 7);
    lostAs.onOwnershipChange(join);
    lostAs.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two, new RingDiff("a", 1,
        List.of(), List.of(new RingDiff.Lost(lost.range(), lost.destinations(), RingDiff.Role.BACKUP)), List.of())));
    assertTrue(lostAs.violations().contains(at + "lost as BACKUP, where that ring makes it PRIMARY"),
        String.valueOf(lostAs.violations()));
    OwnershipFold changedTo = new OwnershipFold(4096, 7);
    changedTo.onOwnershipChange(join);
    changedTo.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one, new RingDiff("a", 1,
        List.of(), List.of(), List.of(new RingDiff.RoleChange(kept, RingDiff.Role.PRIMARY, RingDiff.Role.BACKUP)))));
    assertTrue(changedTo.violations().contains("VIEW change to view 2" + atKept
        + "changed to BACKUP, where that ring makes it PRIMARY"), String.valueOf(changedTo.violations()));
  }

  /**
   * Changes that are right, with two owners a key: a's joins of b and c move some of its ranges
   * from primary to backup and take others away, and the fold follows them without a violation,
   * holding what the last ring gives a; a fold of the circle's two ends alone, the fewest positions it
   * takes, does too.
   */
  @Test
  void theFold_followsRoleChangesThatAreRight_withoutAViolation() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    HashRing two = one.with(Member.of("b"));
    HashRing three = two.with(Member.of("c"));
    List<OwnershipChange> history = List.of(
        new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one, RingDiff.compute(empty, false, one, true,
            "a", 2)),
        new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, two, RingDiff.compute(one, two, "a", 2)),
        new OwnershipChange(OwnershipChange.Reason.VIEW, 2, 3, two, three, RingDiff.compute(two, three, "a", 2)));
    assertFalse(history.get(1).roleChanges().isEmpty(), "b's join makes a the backup of some of its ranges");
    OwnershipFold fold = new OwnershipFold(4096, 8);
    assertTrue(fold.holdsNothing());
    history.forEach(fold::onOwnershipChange);
    assertEquals(List.of(), fold.violations());
    assertEquals(Optional.empty(), fold.disagreement(three, "a", 2));
    assertTrue(fold.disagreement(two, "a", 2).isPresent(), "the fold is at the last ring, not the one before");
    assertFalse(fold.holdsNothing(), "a still owns keys among three");

    OwnershipFold ends = new OwnershipFold(2, 8);
    history.forEach(ends::onOwnershipChange);
    assertEquals(List.of(), ends.violations());
    assertEquals(Optional.empty(), ends.disagreement(three, "a", 2));
  }

  /**
   * The change that refuses a node because another member holds its id (after a merge): the node
   * loses everything to that id's holder, whose ring after gives the id the keys, and that is no
   * violation; the fold then holds nothing.
   */
  @Test
  void theFold_aChangeThatRefusesTheNodeForItsId_isNoViolation() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    OwnershipFold fold = new OwnershipFold(4096, 9);
    fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, true, "a", 1)));
    OwnershipChange refused = new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, one, one,
        RingDiff.compute(one, true, one, false, "a", 1), false); // the ring's "a" is the other member
    assertFalse(refused.lost().isEmpty());
    fold.onOwnershipChange(refused);
    assertEquals(List.of(), fold.violations());
    assertTrue(fold.holdsNothing());
  }

  /**
   * A fold compared with a node it never heard: the first position the node's ring gives it,
   * named, where the fold gives nothing.
   */
  @Test
  void theFold_notAddedToTheNode_disagreesWithItsRing() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: fold not added")) {
      Ringmaster a = cluster.start("a");
      cluster.awaitSettled(WAIT);
      Optional<String> unheard = new OwnershipFold().disagreement(a);
      assertTrue(unheard.isPresent() && unheard.get().endsWith(": the changes heard give a nothing, the ring PRIMARY"
          + " (after 0 changes)"), String.valueOf(unheard));
    }
  }

  /**
   * A fold added again once its registration was closed, as Registration says to listen again: it
   * missed the changes in between, and starts over at the current ownership, from nothing, with no
   * violation and in agreement with the ring.
   */
  @Test
  void theFold_addedAgainAfterItsRegistrationClosed_startsOverAtTheCurrentOwnership() throws Exception {
    try (LocalCluster cluster = new LocalCluster("kit test: fold added again")) {
      OwnershipFold fold = new OwnershipFold();
      Registration[] first = new Registration[1];
      Ringmaster a = cluster.start(cluster.builder("a"), n -> first[0] = n.addOwnershipListener(fold));
      cluster.start("b");
      cluster.awaitSettled(WAIT);
      first[0].close();
      cluster.start("c"); // a loses ranges to c, unheard
      cluster.awaitSettled(WAIT);
      assertTrue(fold.disagreement(a).isPresent(), "the fold missed c's join");
      a.addOwnershipListener(fold);
      cluster.awaitSettled(WAIT);
      assertEquals(OwnershipChange.Reason.INITIAL, fold.changes().get(fold.changes().size() - 1).reason());
      assertEquals(Optional.empty(), fold.disagreement(a));
      assertEquals(List.of(), fold.violations());
    }
  }

  /**
   * A gained range stretched over a neighbour's with other sources, told with the sources at its
   * end: right there, wrong inside, which the fold's positions inside the range find.
   */
  @Test
  void theFold_checksSourcesInsideARange_notAtItsEndAlone() {
    HashRing two = HashRing.builder().virtualNodes(16).build().withMembers(List.of(Member.of("a"), Member.of("b")));
    HashRing three = two.with(Member.of("c"));
    List<RingDiff.Gained> gains = RingDiff.compute(two, three, "c", 1).gained();
    RingDiff.Gained first = gains.get(0);
    RingDiff.Gained other = gains.stream().filter(g -> !g.sources().equals(first.sources())).findFirst().orElseThrow();
    RingDiff.Gained stretched = new RingDiff.Gained(new KeyRange(first.range().start(), other.range().end()),
        other.sources(), RingDiff.Role.PRIMARY);
    OwnershipFold fold = new OwnershipFold();
    fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, two, three, new RingDiff("c", 1,
        List.of(stretched), List.of(), List.of())));
    String wrong = "gained with sources " + List.of(other.sources().get(0).id()) + ", where the ring before has "
        + List.of(first.sources().get(0).id());
    assertTrue(fold.violations().stream().anyMatch(v -> v.endsWith(wrong)), String.valueOf(fold.violations()));
    assertTrue(fold.violations().stream().noneMatch(v -> v.contains(Long.toHexString(other.range().end()))),
        "right at the end: " + fold.violations());
  }

  /** As for sources: a lost range stretched over a neighbour's, its destinations right at its end alone. */
  @Test
  void theFold_checksDestinationsInsideARange_notAtItsEndAlone() {
    HashRing two = HashRing.builder().virtualNodes(16).build().withMembers(List.of(Member.of("a"), Member.of("b")));
    HashRing three = two.with(Member.of("c"));
    List<RingDiff.Lost> losses = RingDiff.compute(three, two, "c", 1).lost();
    RingDiff.Lost first = losses.get(0);
    RingDiff.Lost other = losses.stream().filter(l -> !l.destinations().equals(first.destinations())).findFirst()
        .orElseThrow();
    RingDiff.Lost stretched = new RingDiff.Lost(new KeyRange(first.range().start(), other.range().end()),
        other.destinations(), RingDiff.Role.PRIMARY);
    OwnershipFold fold = new OwnershipFold();
    fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, three, two, new RingDiff("c", 1,
        List.of(), List.of(stretched), List.of())));
    String wrong = "lost to " + List.of(other.destinations().get(0).id()) + ", where the ring after has "
        + List.of(first.destinations().get(0).id());
    assertTrue(fold.violations().stream().anyMatch(v -> v.endsWith(wrong)), String.valueOf(fold.violations()));
  }

  /**
   * The fold samples the circle's two ends, both in the range that wraps around: a change that
   * gains every position but the first, or the first alone, is right where the fold checks its
   * range (at its end), and the fold's disagreement with the ring names the end it left out.
   */
  @Test
  void theFold_samplesTheCirclesTwoEnds() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    Map<KeyRange, Long> leftOut = Map.of(
        new KeyRange(Long.MIN_VALUE, Long.MAX_VALUE), Long.MIN_VALUE,
        new KeyRange(Long.MAX_VALUE, Long.MIN_VALUE), Long.MAX_VALUE);
    leftOut.forEach((range, end) -> {
      OwnershipFold fold = new OwnershipFold();
      fold.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one, new RingDiff("a", 1,
          List.of(new RingDiff.Gained(range, List.of(), RingDiff.Role.PRIMARY)), List.of(), List.of())));
      assertEquals(List.of(), fold.violations(), range::toString);
      assertEquals(Optional.of("position " + Long.toHexString(end) + ": the changes heard give a nothing, the ring"
          + " PRIMARY (after 1 changes)"), fold.disagreement(one, "a", 1), range::toString);
    });
  }

  @Test
  void badArguments_failNamingWhatIsWrong() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> new LocalCluster(" "));
    assertThrows(IllegalArgumentException.class, () -> new OwnershipFold(1, 0));
    try (LocalCluster cluster = new LocalCluster("kit-args"); LocalCluster other = new LocalCluster("kit-args")) {
      assertNotEquals(cluster.name(), other.name(), "two clusters never share a name");
      Ringmaster a = cluster.start("a");
      IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
          () -> cluster.partition(List.of(a), List.of(a)));
      assertEquals("node a is in two sides of the partition", twice.getMessage());
      IllegalArgumentException oneSide = assertThrows(IllegalArgumentException.class, () -> cluster.partition(List.of(a)));
      assertEquals("a partition needs two sides with nodes, here 1 (running nodes in no side listed form one)",
          oneSide.getMessage());
      IllegalArgumentException emptySide = assertThrows(IllegalArgumentException.class,
          () -> cluster.partition(List.of(a), List.of()));
      assertEquals(oneSide.getMessage(), emptySide.getMessage(), "an empty side is not a side with nodes");
      Ringmaster stranger = other.start("s");
      IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class, () -> cluster.crash(stranger));
      assertTrue(foreign.getMessage().startsWith("node s was not started by cluster kit-args-"), foreign.getMessage());
      assertEquals(List.of(a), cluster.nodes());
      Ringmaster b = cluster.start("b");
      cluster.crash(b);
      cluster.crash(b); // crashed already: nothing more
      AtomicReference<Ringmaster> unstarted = new AtomicReference<>();
      assertThrows(IllegalStateException.class, () -> cluster.start(cluster.builder("u"), n -> {
        unstarted.set(n);
        throw new IllegalStateException("a test's setup that fails before the start");
      }));
      for (int i = 0; i < 2; i++) { // no stack to crash, each time: not taken for crashed (and left unstopped)
        IllegalStateException noStack = assertThrows(IllegalStateException.class, () -> cluster.crash(unstarted.get()));
        assertEquals("node u is not started", noStack.getMessage());
      }
      IllegalArgumentException crashed = assertThrows(IllegalArgumentException.class,
          () -> cluster.partition(List.of(a), List.of(b)));
      assertTrue(crashed.getMessage().startsWith("node b is not running"), crashed.getMessage());
      assertThrows(IllegalArgumentException.class, () -> cluster.awaitAgreement(List.of(a, b), WAIT));
      IllegalArgumentException notRunning = assertThrows(IllegalArgumentException.class,
          () -> cluster.awaitSettled(List.of(a, b), WAIT));
      assertTrue(notRunning.getMessage().startsWith("node b is not running"), notRunning.getMessage());
      IllegalArgumentException noSide = assertThrows(IllegalArgumentException.class,
          () -> cluster.awaitSettled(List.of(), WAIT));
      assertEquals("no node to settle: the side is empty", noSide.getMessage());
      assertEquals(List.of("a"), ids(cluster.awaitAgreement(List.of(a), WAIT)), "a alone, once b is out");
      cluster.close();
      IllegalStateException late = assertThrows(IllegalStateException.class, () -> cluster.start("b"));
      assertTrue(late.getMessage().endsWith(" is closed"), late.getMessage());
    }
    assertTrue(new LocalCluster("a test's display name: \u00e9 / x".repeat(20)).name().matches("[A-Za-z0-9._-]{150}-\\d+-\\d+"));
  }
}
