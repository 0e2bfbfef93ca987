package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jgroups.Address;
import org.jgroups.View;
import org.junit.jupiter.api.Test;

/**
 * Once start() has given up (its first view refused the node, or no ring came within
 * startTimeout), no later view publishes a ring: the listeners of a node whose start() failed hear
 * nothing, and its lookups see no ring. Once close() has gone past a point, no listener is taken
 * that would never be called. Views and calls are fed to the node's view handling directly, in
 * the order a race would produce.
 */
class FailedStartTest {

  @Test
  void firstViewRefusesTheNode_anAdmittingViewQueuedBehindIt_publishesNothing() throws Exception {
    try (Node a = new Node()) {
      Address holder = meta("a").newAddress(); // another process with the same id, first in the view
      a.view(1, holder, a.self);
      assertTrue(a.node.firstRing().isCompletedExceptionally(), "refused: start() fails");

      a.view(2, a.self); // the holder left before start() shut the node down
      assertEquals(-1, a.node.state().viewId(), "no ring published");
      assertTrue(a.ownership.isEmpty(), a.ownership.toString());
      assertTrue(a.memberships.isEmpty(), a.memberships.toString());
    }
  }

  @Test
  void startTimedOut_aViewArrivingJustAfter_publishesNothing() throws Exception {
    try (Node a = new Node()) {
      assertTrue(a.node.failFirstRing(new TimeoutException("startTimeout")), "no ring yet: the start fails");

      a.view(1, a.self);
      assertEquals(-1, a.node.state().viewId(), "no ring published");
      assertTrue(a.ownership.isEmpty(), a.ownership.toString());
      assertTrue(a.memberships.isEmpty(), a.memberships.toString());
    }
  }

  @Test
  void startTimingOut_justAfterTheFirstRing_succeedsAfterAll() throws Exception {
    try (Node a = new Node()) {
      a.view(1, a.self);
      assertFalse(a.node.failFirstRing(new TimeoutException("startTimeout")), "a ring got in first");
      assertEquals(1, a.node.firstRing().get().viewId());

      a.view(2, a.self, meta("b").newAddress());
      assertEquals(2, a.node.state().viewId(), "later views publish as usual");
      assertEquals(2, a.ownership.size(), "the first ring's gains, then the losses to b: " + a.ownership);
      assertEquals(2, a.memberships.size(), a.memberships.toString());
    }
  }

  @Test
  void listenerAdded_afterClosePassedTheFirstCheck_isRefusedByTheNode() throws Exception {
    try (Node a = new Node()) {
      a.view(1, a.self);
      a.node.announceLeaving(); // close() has queued LEAVING: no ownership change will come again
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.node.addOwnershipListener(
          new SerialDelivery<>("late", c -> { }, Runnable::run, this, () -> { })));
      assertTrue(e.getMessage().startsWith("node a is closed (close() was called, or start() failed): a listener added now"
          + " would never be called"),
          e.getMessage());
      // Membership changes still come until the node closes.
      a.node.addMembershipListener(new SerialDelivery<>("members", c -> { }, Runnable::run, this, () -> { }));
      a.node.close();
      assertThrows(IllegalStateException.class, () -> a.node.addMembershipListener(
          new SerialDelivery<>("late", c -> { }, Runnable::run, this, () -> { })));
      assertEquals(1, a.node.ownershipListenerCount());
      assertEquals(2, a.node.membershipListenerCount());
    }
  }

  /** Node "a", its view handling on a thread of its own, with a recorder of each kind of listener. */
  private static final class Node implements AutoCloseable {
    final NodeMetadata local = meta("a");
    final Address self = local.newAddress();
    final ExecutorService viewThread = Executors.newSingleThreadExecutor();
    final ClusterNode node = new ClusterNode(local, viewThread, Duration.ofSeconds(10));
    final List<OwnershipChange> ownership = new CopyOnWriteArrayList<>();
    final List<MembershipChange> memberships = new CopyOnWriteArrayList<>();

    Node() {
      node.setLocalAddress(self);
      node.addOwnershipListener(new SerialDelivery<>("ownership", ownership::add, Runnable::run, this, () -> { }));
      node.addMembershipListener(new SerialDelivery<>("members", memberships::add, Runnable::run, this, () -> { }));
    }

    /** Feeds a view created by its first member and waits until the view thread has handled it. */
    void view(long id, Address... members) throws Exception {
      node.onView(View.create(members[0], id, members));
      viewThread.submit(() -> { }).get(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
      viewThread.shutdownNow();
    }
  }

  private static NodeMetadata meta(String id) {
    return NodeMetadata.of(Ringmaster.builder().nodeId(id).jgroupsConfig(TestCluster.STACK).virtualNodes(64)
        .buildConfig());
  }
}
