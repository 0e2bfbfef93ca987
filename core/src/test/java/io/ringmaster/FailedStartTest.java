package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import io.ringmaster.testing.OwnershipFold;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jgroups.Address;
import org.jgroups.View;
import org.junit.jupiter.api.Test;

/**
 * Once start() has given up (its first view refused the node, or no ring came within
 * startTimeout), no later view publishes a ring: the listeners of a node whose start() failed hear
 * nothing, and its lookups see no ring. A view whose ring cannot be built fails the start, saying
 * why, or, after the first ring, is skipped, keeping the last ring. Once close() has gone past a
 * point, no listener is taken that would never be called. Views and calls are fed to the node's view handling directly, in
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

  @Test
  void aViewWhoseRingCannotBeBuilt_failsTheStart_sayingWhy() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      failsToBuild(a, 1);
      a.view(1, a.self);

      ExecutionException e = assertThrows(ExecutionException.class, () -> a.node.firstRing().get(10, TimeUnit.SECONDS));
      String message = e.getCause().getMessage();
      assertEquals(RingmasterException.Reason.VIEW_FAILED, assertInstanceOf(RingmasterException.class, e.getCause()).reason());
      assertEquals("view [" + a.self + "|1] could not be installed: " + TOO_LARGE, message);
      assertNothingPublished(a);
    }
  }

  /** A logger that throws on that view's ERROR (a filter's bug, a backend's) does not leave start() waiting. */
  @Test
  void aViewWhoseRingCannotBeBuilt_failsTheStart_evenIfLoggingItThrows() throws Exception {
    try (ThrowingLog log = new ThrowingLog(ThrowingLog.messageContains("could not be installed"));
         FedNode a = new FedNode(meta("a"))) {
      failsToBuild(a, 1);
      a.view(1, a.self);

      ExecutionException e = assertThrows(ExecutionException.class, () -> a.node.firstRing().get(10, TimeUnit.SECONDS));
      assertEquals("view [" + a.self + "|1] could not be installed: " + TOO_LARGE, e.getCause().getMessage());
      await().atMost(Duration.ofSeconds(10)).until(() -> log.thrown() >= 1);
    }
  }

  @Test
  void aLaterViewWhoseRingCannotBeBuilt_keepsTheLastRing_andTheNextViewInstalls() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      a.view(1, a.self);
      failsToBuild(a, 2);
      a.view(2, a.self, meta("x").newAddress());
      assertEquals(1, a.node.state().viewId(), "the last good ring is kept");
      assertEquals(1, a.ownership.size(), a.ownership.toString());
      assertEquals(OptionalLong.of(2), a.node.failedViewId(), "view 2 is tried again");

      Address b = meta("b").newAddress();
      a.view(3, a.self, b);
      assertEquals(3, a.node.state().viewId(), "the view thread goes on");
      assertEquals(OptionalLong.empty(), a.node.failedViewId(), "a later view replaced it");
      assertEquals(List.of("a", "b"), a.node.state().ring().members().stream().map(Member::id).toList());
    }
  }

  /**
   * Members whose tokens would take the ring past the most a ring holds are refused, in view
   * order, naming the limit and the settings to lower: every member admits the same ones, and the
   * ring of those admitted is built, where a ring past the limit would fail to build on every
   * member and freeze every ring. The limit is lowered through a seam, so that the rings stay small.
   */
  @Test
  void membersPastTheRingsTokenLimit_areRefused_andTheRingOfTheOthersIsBuilt() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      a.node.maxRingTokens = 3 * 64; // FedNode's members have 64 virtual nodes: three of weight 1 fit
      Address b = meta("b").newAddress();
      Address light = meta("light", 0.5, "").newAddress();
      Address heavy = meta("heavy", 2.0, "").newAddress();
      a.view(1, a.self);
      a.view(2, a.self, b, heavy, light);
      assertEquals(OptionalLong.empty(), a.node.failedViewId(), "the view is installed");
      assertEquals(2, a.node.state().viewId());
      assertEquals(List.of("a", "b", "light"), a.node.state().ring().members().stream().map(Member::id).toList(),
          "heavy's 128 tokens do not fit after a's and b's; light's 32 do");
      MembershipChange change = a.lastMembership();
      assertEquals(1, change.refused().size(), change.toString());
      MembershipChange.Refusal refusal = change.refused().get(0);
      assertEquals("heavy", refusal.nodeId());
      assertTrue(refusal.reason().contains("would bring the ring to 256 tokens, more than the 192 a ring holds: its"
          + " weight 2.0 at virtualNodes 64 gives it 128, and the members admitted before it in the view have 128;"
          + " lower the weight of heavy, or virtualNodes on every member"), refusal.reason());
    }
  }

  /**
   * Each view is counted afresh, in its order: once b leaves, heavy (refused until then) fits
   * after a, and light, admitted until then, no longer does, and is refused (docs/api.md, "Ring
   * size"). Every member counts the same view alike.
   */
  @Test
  void aLeave_admitsAnEarlierMemberRefusedForSize_andMayRefuseALaterOne() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      a.node.maxRingTokens = 3 * 64;
      Address b = meta("b").newAddress();
      Address heavy = meta("heavy", 2.0, "").newAddress();
      Address light = meta("light", 0.5, "").newAddress();
      a.view(1, a.self);
      a.view(2, a.self, b, heavy, light);
      assertEquals(List.of("a", "b", "light"), a.node.state().ring().members().stream().map(Member::id).toList());
      a.view(3, a.self, heavy, light);
      assertEquals(List.of("a", "heavy"), a.node.state().ring().members().stream().map(Member::id).toList());
      MembershipChange change = a.lastMembership();
      assertEquals(List.of("heavy"), change.joined().stream().map(Member::id).toList(), change.toString());
      assertEquals(List.of("b", "light"), change.left().stream().map(Member::id).toList(), change.toString());
      assertEquals(List.of("light"), change.refused().stream().map(MembershipChange.Refusal::nodeId).toList());
    }
  }

  /** A node whose own tokens take the ring past the limit is refused: its start() fails saying so. */
  @Test
  void aNodePastTheRingsTokenLimit_failsToStart_namingTheLimit() throws Exception {
    try (FedNode a = new FedNode(meta("a", 2.0, ""))) {
      a.node.maxRingTokens = 3 * 64;
      a.view(1, meta("b").newAddress(), meta("c").newAddress(), a.self);
      ExecutionException e = assertThrows(ExecutionException.class, () -> a.node.firstRing().get(10, TimeUnit.SECONDS));
      assertEquals(RingmasterException.Reason.REFUSED, assertInstanceOf(RingmasterException.class, e.getCause()).reason());
      assertTrue(e.getCause().getMessage().contains("would bring the ring to 256 tokens, more than the 192 a ring"
          + " holds") && e.getCause().getMessage().endsWith("lower the weight of a, or virtualNodes on every member"),
          e.getCause().getMessage());
      assertNothingPublished(a);
    }
  }

  private static final String TOO_LARGE = "Java heap space (a test: a ring too large for this heap)";

  /** Makes the ring of view {@code id} fail to build on {@code a}, as a ring too large for its heap does. */
  private static void failsToBuild(FedNode a, long id) {
    a.node.beforeBuild = v -> {
      if (v.getViewId().getId() == id) {
        throw new OutOfMemoryError(TOO_LARGE);
      }
    };
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

  /**
   * A view that comes while close() waits for the hand-off (a member joins or crashes meanwhile)
   * changes no listener's ownership: LEAVING was the last change, so a listener that handed
   * everything off never gains ranges back. Its membership listeners still hear of the view.
   */
  @Test
  void aViewAfterLeavingWasQueued_changesNoOwnership_butIsStillAMembershipChange() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      a.view(1, a.self);
      a.view(2, a.self, b);
      a.node.announceLeaving();
      int changes = a.ownership.size();
      assertEquals(OwnershipChange.Reason.LEAVING, a.lastOwnership().reason());
      a.view(3, a.self, b, c);
      assertEquals(changes, a.ownership.size(), "nothing after LEAVING: " + a.lastOwnership());
      assertEquals(3, a.lastMembership().viewId(), "c's join is still a membership change");
      OwnershipFold fold = new OwnershipFold();
      a.ownership.forEach(fold::onOwnershipChange);
      assertEquals(List.of(), fold.violations());
      assertTrue(fold.holdsNothing(), "handed everything off, and gained nothing back");
    }
  }

  /**
   * The LEAVING change is queued once, whoever queues it: close() itself, after the view thread was
   * held too long, and then the view thread, once free, running the task close() had queued for it.
   * Twice, a listener would hand its data off twice, and its fold would lose what it no longer held.
   */
  @Test
  void leaving_queuedByCloseAndThenByTheViewThread_isOneChange() throws Exception {
    try (FedNode a = new FedNode(meta("a"))) {
      a.view(1, a.self);
      a.view(2, a.self, meta("b").newAddress());
      int before = a.ownership.size();
      assertTrue(a.node.announceLeavingFromElsewhere(), "close() queued it");
      a.node.announceLeaving(); // the view thread's task, run late
      assertFalse(a.node.announceLeavingFromElsewhere(), "queued already");
      assertEquals(before + 1, a.ownership.size(), a.ownership.toString());
      assertEquals(OwnershipChange.Reason.LEAVING, a.lastOwnership().reason());
      OwnershipFold fold = new OwnershipFold();
      a.ownership.forEach(fold::onOwnershipChange);
      assertEquals(List.of(), fold.violations());
      assertTrue(fold.holdsNothing());
    }
  }
}
