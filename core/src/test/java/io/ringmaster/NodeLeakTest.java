package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jgroups.JChannel;
import org.junit.jupiter.api.Test;

/**
 * An application that starts and closes nodes many times (tests, the restarts of an embedded
 * component) must not grow: a closed node, gracefully or abruptly, leaves no thread running and
 * nothing that keeps it reachable, neither from its own code nor from JGroups' registries (the
 * in-JVM transport's members by cluster, timers, thread pools). Each node here joins a running
 * member with a listener of each kind, some on the node's pool and one on the view thread itself.
 */
class NodeLeakTest {
  /** Nodes started and closed: graceful and abrupt closes in turn, and the last two crash. */
  private static final int CYCLES = 20;
  private static final Duration WAIT = Duration.ofSeconds(20);

  /** What stays of a closed node: weak references to it, its channel and its transport, and its id. */
  private record Closed(String id, List<WeakReference<?>> parts) {}

  @Test
  void nodesJoiningAndClosedOverAndOver_leaveNoThreadAndAreCollectable() {
    Set<Thread> before = LeftBehind.liveThreads();
    List<Closed> closed = joinAndCloseOverAndOver();
    LeftBehind.awaitNoThreadBut(before, WAIT);
    awaitCollected(closed, "once the member they joined is closed too");
  }

  /**
   * Starts a member, then {@link #CYCLES} nodes one after another, each joining it and closed;
   * checks that none of these is reachable while the member runs; closes the member. A method of
   * its own, so that no local variable of the test's frame holds a node.
   *
   * @return the weak references to every node closed, the member's included
   */
  private static List<Closed> joinAndCloseOverAndOver() {
    List<Closed> closed = new ArrayList<>();
    try (TestCluster cluster = new TestCluster("leak")) {
      Ringmaster anchor = cluster.start("anchor");
      for (int i = 0; i < CYCLES; i++) {
        // Crashes last: the member suspects a crashed node only seconds later, and until then each
        // join (and leave) waits a second for its missing acknowledgement.
        Ending ending = i >= CYCLES - 2 ? Ending.CRASH : i % 2 == 0 ? Ending.CLOSE : Ending.ABRUPT;
        closed.add(joinAndClose(cluster, anchor, "n" + i, ending));
      }
      // Nothing of theirs runs on, and a member that saw them come and go keeps none of them.
      await("the closed nodes' threads ended").atMost(WAIT).pollInSameThread().untilAsserted(() -> assertEquals(
          List.of(), closed.stream().flatMap(c -> TestCluster.nodeThreads(c.id()).stream()).sorted().toList(),
          "threads of closed nodes still running"));
      awaitCollected(closed, "while the member they joined runs");
      closed.add(weakly("anchor", anchor));
    }
    return closed;
  }

  /** How a node ends. */
  private enum Ending {
    /** {@link Ringmaster#close()}: the LEAVING change, then a graceful leave. */
    CLOSE,
    /** {@link Ringmaster#closeAbruptly()}: no hand-off, but the stack still says it leaves. */
    ABRUPT,
    /** Cut off from the cluster, then closed abruptly: the member finds it gone only by suspecting it. */
    CRASH
  }

  /**
   * Starts a node that joins {@code anchor}, a listener of each kind registered (an ownership
   * listener on the node's pool and one on its view thread), waits until both have it in their ring
   * and its listeners heard of it, and ends it as {@code ending} says: only weak references to it are kept.
   * Not through {@code cluster.start()}, which keeps every node it started. A method of its own, so
   * that no local variable of the test's frame holds the node.
   */
  private static Closed joinAndClose(TestCluster cluster, Ringmaster anchor, String id, Ending ending) {
    Ringmaster node = cluster.builder(id).build();
    List<OwnershipChange.Reason> onPool = new CopyOnWriteArrayList<>();
    List<OwnershipChange.Reason> onViewThread = new CopyOnWriteArrayList<>();
    AtomicInteger membershipChanges = new AtomicInteger();
    Closed closed;
    try {
      node.addOwnershipListener(change -> onPool.add(change.reason()));
      node.addOwnershipListener(change -> onViewThread.add(change.reason()), Runnable::run);
      node.addMembershipListener(change -> membershipChanges.incrementAndGet());
      node.addDivergenceListener(divergence -> { });
      node.start();
      // Members crashed before it may still be in the view (until suspected): not waited for.
      await(id + " in the member's ring, its listeners told").atMost(WAIT).pollInSameThread()
          .until(() -> anchor.viewId() == node.viewId() && anchor.ring().members().contains(node.localMember())
              && !onPool.isEmpty() && !onViewThread.isEmpty() && membershipChanges.get() > 0);
      closed = weakly(id, node);
    } catch (RuntimeException | Error e) {
      node.close();
      throw e;
    }
    switch (ending) {
      case CLOSE -> {
        node.close();
        assertTrue(node.leftIdle(), id + " left with its listeners idle");
        assertEquals(OwnershipChange.Reason.LEAVING, onPool.get(onPool.size() - 1), id + ": " + onPool);
        assertEquals(OwnershipChange.Reason.LEAVING, onViewThread.get(onViewThread.size() - 1),
            id + ": " + onViewThread);
      }
      case ABRUPT -> node.closeAbruptly();
      case CRASH -> {
        TestCluster.discard(node).discardAll(true); // it hears and says nothing
        node.closeAbruptly();
      }
    }
    return closed;
  }

  private static Closed weakly(String id, Ringmaster node) {
    JChannel channel = node.channel();
    return new Closed(id, List.of(new WeakReference<>(node), new WeakReference<>(channel),
        new WeakReference<>(channel.getProtocolStack().getTransport())));
  }

  /** Collects garbage until no closed node, nor its channel or transport, is reachable, naming those that are. */
  private static void awaitCollected(List<Closed> closed, String when) {
    Map<String, List<WeakReference<?>>> weakly = new LinkedHashMap<>();
    closed.forEach(c -> weakly.put(c.id(), c.parts()));
    LeftBehind.awaitCollected(weakly, "(closed nodes, their channel or transport) " + when, WAIT);
  }
}
