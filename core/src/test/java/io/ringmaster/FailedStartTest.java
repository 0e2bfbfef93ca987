package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeoutException;
import org.jgroups.Address;
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
    try (FedNode a = new FedNode(meta("a"))) {
      Address holder = meta("a").newAddress(); // another process with the same id, first in the view
      a.view(1, holder, a.self);
      assertTrue(a.node.firstRing().isCompletedExceptionally(), "refused: start() fails");

      a.view(2, a.self); // the holder left before start() shut the node down
      assertNothingPublished(a);
    }
  }

  @Test
  void startTimedOut_aViewArrivingJustAfter_publishesNothing() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      assertTrue(a.node.failFirstRing(new TimeoutException("startTimeout")), "no ring yet: the start fails");

      a.view(1, a.self);
      assertNothingPublished(a);
    }
  }

  private static void assertNothingPublished(FedNode a) {
    assertEquals(-1, a.node.state().viewId(), "no ring published");
    assertTrue(a.ownership.isEmpty(), a.ownership.toString());
    assertTrue(a.memberships.isEmpty(), a.memberships.toString());
  }

  @Test
  void startTimingOut_justAfterTheFirstRing_succeedsAfterAll() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
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
    try (FedNode a = new FedNode(meta("a"))) {
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
}
