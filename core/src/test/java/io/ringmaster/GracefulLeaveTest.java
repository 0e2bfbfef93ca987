package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.jgroups.Address;
import org.jgroups.View;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node that closes says so to the others first, so that what its LEAVING change hands off is
 * found where it went: by a newcomer that joins in the view the node leaves in (JGroups puts a
 * leave and a join that queue together into one view), and not on a node that is leaving too.
 */
class GracefulLeaveTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final long SEED = 0x1eaf1eafL;

  /**
   * b closes and c joins in one view, with one replica. b handed everything it held to a, the ring
   * without it, and said so. c's first change names a, never b, as the source of every range it
   * gained, and each position c gained from a is one b's LEAVING change sent to a, or one a owned
   * itself.
   */
  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaveAndAJoinInOneView_theNewcomerFetchesFromWhereTheLeaverHandedItsData(@TempDir Path dir)
      throws Exception {
    LeaveAndJoin seen = leaveAndJoinInOneView(dir, change -> { });
    OwnershipChange first = seen.firstOfC();
    assertEquals(seen.before().without("b").checksum(), first.previousRing().checksum(),
        "c compares with the ring b handed its data to, not the one b was in");
    assertFalse(first.gained().isEmpty());
    for (RingDiff.Gained g : first.gained()) {
      assertEquals(List.of("a"), g.sources().stream().map(Member::id).toList(), "the source of " + g.range());
    }

    // Sampled positions: each c gained came from a, and a holds it, having owned it or been handed it by b.
    SplittableRandom random = new SplittableRandom(SEED);
    int handedByB = 0;
    for (int i = 0; i < 20_000; i++) {
      long p = random.nextLong();
      if (!first.ring().ownerOfPosition(p).id().equals("c")) {
        continue;
      }
      if (seen.before().ownerOfPosition(p).id().equals("b")) {
        handedByB++;
        RingDiff.Lost lost = seen.leavingOfB().lost().stream().filter(l -> l.range().contains(p)).findFirst()
            .orElse(null);
        assertNotNull(lost, "b's LEAVING change hands on position " + p);
        assertEquals(List.of("a"), lost.destinations().stream().map(Member::id).toList(), "b handed " + p + " to a");
      }
    }
    assertTrue(handedByB > 1_000, "c gained many positions b held: " + handedByB);
  }

  /**
   * The same, but b's hand-off fails (its listener throws on the LEAVING change): b said it was
   * leaving, never that its hand-off was done, so c's first change names b, gone, as the only
   * source of what b held. Nothing in the ring holds that data, and c knows it.
   */
  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaveAndAJoinInOneView_aLeaverWhoseHandOffFailed_isNamedAsTheSourceOfWhatItHeld(@TempDir Path dir)
      throws Exception {
    LeaveAndJoin seen = leaveAndJoinInOneView(dir, change -> {
      if (change.reason() == OwnershipChange.Reason.LEAVING) {
        throw new IllegalStateException("the hand-off failed (a test)");
      }
    });
    assertNamedAsTheSourceOfWhatItHeld(seen);
  }

  /**
   * b's hand-off succeeds, but another listener of b, a membership listener, throws while b
   * leaves: that says nothing of the hand-off, so b still says it is done, and c fetches from a.
   */
  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaveAndAJoinInOneView_anotherListenerThrowingDuringTheLeave_stillNamesTheLeaverGoneGracefully(
      @TempDir Path dir) throws Exception {
    CountDownLatch handingOff = new CountDownLatch(1);
    AtomicBoolean threw = new AtomicBoolean();
    LeaveAndJoin seen = leaveAndJoinInOneView(dir, change -> {
      if (change.reason() == OwnershipChange.Reason.LEAVING) {
        handingOff.countDown();
      }
    }, b -> b.addMembershipListener(change -> {
      // Its first callback (the members, as it is added) lasts until b's hand-off has begun, then throws.
      awaitBounded(handingOff);
      threw.set(true);
      throw new IllegalStateException("a membership listener's bug (a test)");
    }));
    assertTrue(threw.get(), "the membership listener threw during b's leave");
    assertEquals(seen.before().without("b").checksum(), seen.firstOfC().previousRing().checksum(),
        "c compares with the ring b handed its data to");
    for (RingDiff.Gained g : seen.firstOfC().gained()) {
      assertEquals(List.of("a"), g.sources().stream().map(Member::id).toList(), "the source of " + g.range());
    }
  }

  /**
   * b's second ownership listener closes its registration in its LEAVING callback and goes on
   * pushing: close() stops waiting for it, so b leaves with that hand-off under way, and must not
   * say it is done. c's first change names b as the source of what b held.
   */
  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaveAndAJoinInOneView_aListenerRemovedDuringItsHandOff_leavesTheLeaverNamedAsTheSource(
      @TempDir Path dir) throws Exception {
    AtomicReference<Registration> second = new AtomicReference<>();
    CountDownLatch pushing = new CountDownLatch(1);
    CountDownLatch pushed = new CountDownLatch(1);
    LeaveAndJoin seen;
    try {
      seen = leaveAndJoinInOneView(dir, change -> { }, b -> second.set(b.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          second.get().close();
          pushing.countDown();
          // A push still under way: b's close() interrupts it on the node's pool once b has left.
          if (!awaitBounded(pushed)) {
            throw new IllegalStateException("the push was cut short (a test)");
          }
        }
      })));
    } finally {
      pushed.countDown();
    }
    assertEquals(0, pushing.getCount(), "the removed listener's hand-off began");
    assertNamedAsTheSourceOfWhatItHeld(seen);
  }

  /** c's first change names b, gone, as the only source of the ranges c gained that b held. */
  private static void assertNamedAsTheSourceOfWhatItHeld(LeaveAndJoin seen) {
    OwnershipChange first = seen.firstOfC();
    assertEquals(seen.before().checksum(), first.previousRing().checksum(), "c compares with the ring b was in");
    List<RingDiff.Gained> fromB = first.gainedFrom(seen.before().member("b").orElseThrow());
    assertFalse(fromB.isEmpty(), "c gained ranges b held");
    for (RingDiff.Gained g : fromB) {
      assertEquals(List.of(), first.sourcesInRing(g), "no source of " + g.range() + " in the ring");
    }
  }

  /** Waits for a latch, at most a minute: true if it opened, false if that ran out or the thread was interrupted. */
  static boolean awaitBounded(CountDownLatch latch) {
    try {
      return latch.await(1, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** What a test of a leave and a join in one view looks at. */
  private record LeaveAndJoin(HashRing before, OwnershipChange firstOfC, OwnershipChange leavingOfB) { }

  /** As below, with nothing more done to b before it closes. */
  private static LeaveAndJoin leaveAndJoinInOneView(Path dir, Consumer<OwnershipChange> handOff) throws Exception {
    return leaveAndJoinInOneView(dir, handOff, b -> { });
  }

  /**
   * a and b, then b closes and c joins, in one view (the coordinator's requests are held until
   * both are queued); b's listener records each change, then hands it to {@code handOff}, and
   * {@code beforeClose} gets b once a and b agree, before it closes.
   */
  private static LeaveAndJoin leaveAndJoinInOneView(Path dir, Consumer<OwnershipChange> handOff,
                                                    Consumer<Ringmaster> beforeClose) throws Exception {
    String stack = TestCluster.patientJoiners(dir);
    List<OwnershipChange> ofA = new CopyOnWriteArrayList<>();
    List<OwnershipChange> ofB = new CopyOnWriteArrayList<>();
    List<OwnershipChange> ofC = new CopyOnWriteArrayList<>();
    try (TestCluster cluster = new TestCluster("leave-and-join");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(stack), n -> n.addOwnershipListener(ofA::add));
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(stack), n -> n.addOwnershipListener(change -> {
        ofB.add(change);
        handOff.accept(change);
      }));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      HashRing before = a.ring();
      beforeClose.accept(b);

      // Hold the coordinator's requests, so that b's leave and c's join are handled together.
      ViewHandler<?> requests = TestCluster.holdRequests(a);
      CompletableFuture<Void> closing;
      CompletableFuture<Ringmaster> joining;
      try {
        closing = threads.run("close-b", b::close);
        joining = threads.supply("start-c", () -> cluster.start(cluster.builder("c").jgroupsConfig(stack),
            n -> n.addOwnershipListener(ofC::add)));
        await("b's leave and c's join queued").atMost(WAIT).until(() -> requests.size() >= 2);
      } finally {
        requests.processing(false); // in a finally: else c, which never gives up, would wait for good
      }
      closing.get(1, TimeUnit.MINUTES);
      Ringmaster c = joining.get(1, TimeUnit.MINUTES);
      TestCluster.awaitAgreement(List.of(a, c), 2, WAIT);
      await("c's first change").atMost(WAIT).until(() -> !ofC.isEmpty());
      assertTrue(a.awaitListeners(WAIT));

      OwnershipChange first = ofC.get(0);
      assertEquals(List.of("a", "c"), ids(first.ring()));
      OwnershipChange ofTheView = ofA.stream().filter(ch -> ch.viewId() == first.viewId()).findFirst().orElse(null);
      assertNotNull(ofTheView, "a's change of c's first view");
      assertEquals(before.checksum(), ofTheView.previousRing().checksum(), "b left and c joined in one view");
      OwnershipChange leaving = ofB.get(ofB.size() - 1);
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
      return new LeaveAndJoin(before, first, leaving);
    }
  }

  /**
   * b2 closes, and its hand-off is still running when b1 closes: b1 knows by then that b2 is
   * leaving, and hands everything to a, nothing to b2. b2, which made its change before b1 said
   * it was leaving, still hands part of its data to b1 (a store passes on what reaches it while it
   * leaves: docs/api.md). Once both are gone, a forgets them.
   */
  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void twoNodesClosing_theOneThatKnowsOfTheOthersLeave_handsItNothing() throws Exception {
    List<OwnershipChange> ofB1 = new CopyOnWriteArrayList<>();
    List<OwnershipChange> ofB2 = new CopyOnWriteArrayList<>();
    CountDownLatch handOffDone = new CountDownLatch(1);
    CompletableFuture<OwnershipChange> b2Leaving = new CompletableFuture<>();
    try (TestCluster cluster = new TestCluster("two-leavers");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster a = cluster.start("a");
      Ringmaster b1 = cluster.start(cluster.builder("b1"), n -> n.addOwnershipListener(ofB1::add));
      Ringmaster b2 = cluster.start(cluster.builder("b2"), n -> n.addOwnershipListener(change -> {
        ofB2.add(change);
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          b2Leaving.complete(change);
          try {
            handOffDone.await(1, TimeUnit.MINUTES); // a hand-off under way; bounded: a failed test lets it go too
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }));
      TestCluster.awaitAgreement(List.of(a, b1, b2), 3, WAIT);
      CompletableFuture<Void> closingB2;
      try {
        closingB2 = threads.run("close-b2", b2::close);
        OwnershipChange ofB2Leave = b2Leaving.get(1, TimeUnit.MINUTES);
        Address b2At = b2.channel().getAddress();
        await("b1 and a told that b2 is leaving").atMost(WAIT)
            .until(() -> b1.leavingPeers().contains(b2At) && a.leavingPeers().contains(b2At));

        b1.close();
        OwnershipChange ofB1Leave = ofB1.get(ofB1.size() - 1);
        assertEquals(OwnershipChange.Reason.LEAVING, ofB1Leave.reason());
        assertEquals(List.of("a"), ids(ofB1Leave.ring()), "b1 hands off to the ring without b2");
        assertFalse(ofB1Leave.lost().isEmpty());
        for (RingDiff.Lost l : ofB1Leave.lost()) {
          assertEquals(List.of("a"), l.destinations().stream().map(Member::id).toList(), "b1 hands " + l.range() + " to a");
        }
        assertEquals(ofB1Leave.ring(), b1.ring(), "closed, b1 routes by the ring it handed off to, not to b2");
        assertEquals(List.of("a", "b1"), ids(ofB2Leave.ring()), "b2's change came before b1 said it was leaving");
        assertTrue(ofB2Leave.lost().stream().anyMatch(l -> l.destinations().stream().anyMatch(m -> m.id().equals("b1"))),
            "so b2 hands part of its data to b1");
      } finally {
        handOffDone.countDown();
      }
      closingB2.get(1, TimeUnit.MINUTES);
      TestCluster.awaitAgreement(List.of(a), 1, WAIT);
      await("a forgets the members that left").atMost(WAIT).until(() -> a.leavingPeers().isEmpty());
    }
  }

  /**
   * Once closed, a node routes by the ring its LEAVING change handed off to, which left out a
   * member that said it was leaving; but a view that came after the change is the ring it leaves
   * behind, without it.
   */
  @Test
  void close_afterALeavingChangeThatLeftOutALeaver_publishesTheRingItHandedOffTo_unlessAViewCameAfter()
      throws Exception {
    NodeMetadata a = FedNode.meta("a");
    Address b = FedNode.meta("b").newAddress();
    Address c = FedNode.meta("c").newAddress();
    Address d = FedNode.meta("d").newAddress();
    try (FedNode node = new FedNode(a)) {
      node.view(1, node.self);
      node.view(2, node.self, b, c);
      node.node.leavingArrived(b, false);
      node.node.announceLeaving();
      OwnershipChange leaving = node.lastOwnership();
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
      assertEquals(List.of("c"), ids(leaving.ring()), "b said it was leaving");
      node.node.close();
      assertEquals(leaving.ring(), node.node.state().ring());
      assertEquals(List.of("c"), List.copyOf(node.node.state().addresses().keySet()));
    }
    try (FedNode node = new FedNode(a)) {
      node.view(1, node.self);
      node.view(2, node.self, b, c);
      node.node.leavingArrived(b, false);
      node.node.announceLeaving();
      node.view(3, node.self, c, d); // after the change: b left, d joined
      node.node.close();
      assertEquals(List.of("c", "d"), ids(node.node.state().ring()));
      assertEquals(Set.of("c", "d"), node.node.state().addresses().keySet());
    }
  }

  /**
   * A member that joined in a view this node's view thread has yet to handle (held by a long
   * callback, say), and says it is leaving before then, is handed nothing: the news is kept through
   * the view handled before it, which does not list it, and the node's LEAVING change, made once
   * its ring lists that member, leaves it out.
   */
  @Test
  void leavingNews_fromAMemberOfAViewNotHandledYet_isKept_andThatMemberHandedNothing() throws Exception {
    Address b = FedNode.meta("b").newAddress();
    Address c = FedNode.meta("c").newAddress();
    Address d = FedNode.meta("d").newAddress();
    try (FedNode node = new FedNode(FedNode.meta("a"))) {
      node.view(1, node.self);
      CountDownLatch release = new CountDownLatch(1);
      node.viewThread.execute(() -> awaitBounded(release)); // the view thread, held
      try {
        node.node.onView(View.create(node.self, 2, node.self, b));
        node.node.onView(View.create(node.self, 3, node.self, b, c));
        node.node.leavingArrived(c, false); // c joined in view 3, and is leaving
        node.node.leavingArrived(d, false); // in no view
        assertEquals(1, node.node.state().viewId(), "views 2 and 3 not handled yet");
      } finally {
        release.countDown();
      }
      node.installed();
      assertEquals(Set.of(c), node.node.leavingPeers());
      node.node.announceLeaving();
      OwnershipChange leaving = node.lastOwnership();
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
      assertEquals(List.of("b"), ids(leaving.ring()), "c said it was leaving");
    }
  }

  /**
   * News of a leave that arrives while the view thread drops the news of members gone from the
   * view it handled, from a newcomer of a view given meanwhile, is kept: that clean-up reads the
   * newest view given for each member it looks at, not once as it begins (the view thread can be
   * descheduled between the two).
   */
  @Test
  void leavingNews_arrivingAsAViewIsCleanedUp_fromAMemberOfAViewGivenMeanwhile_isKept() throws Exception {
    Address b = FedNode.meta("b").newAddress();
    Address c = FedNode.meta("c").newAddress();
    try (FedNode node = new FedNode(FedNode.meta("a"))) {
      node.view(1, node.self);
      node.node.beforeForgetting = handled -> {
        if (handled.getViewId().getId() == 2) { // as view 2's clean-up begins: view 3 given, and c's news
          node.node.onView(View.create(node.self, 3, node.self, b, c));
          node.node.leavingArrived(c, true);
        }
      };
      node.view(2, node.self, b);
      assertEquals(Set.of(c), node.node.leavingPeers(), "c, of view 3, kept through view 2's clean-up");
      assertEquals(Set.of(c), node.node.handedOffPeers());
      node.installed();
      assertEquals(3, node.node.state().viewId());
      assertEquals(Set.of(c), node.node.leavingPeers(), "and through view 3's, which lists it");
    }
  }

  /**
   * A node whose every other member said it was leaving too still hands its data to them, as
   * before they said so: they pass on what reaches them while they leave (to a member that joins
   * meanwhile, say), where a hand-off to no one would lose it. A member of weight 0, which owns
   * nothing, does not count as one to hand off to. Once closed, it routes to them.
   */
  @Test
  void leaving_whenEveryOtherMemberIsLeavingToo_handsOffToThemAllTheSame() throws Exception {
    Address b = FedNode.meta("b").newAddress();
    Address c = FedNode.meta("c").newAddress();
    Address router = FedNode.meta("d", 0.0, "").newAddress();
    try (FedNode node = new FedNode(FedNode.meta("a"))) {
      node.view(1, node.self);
      node.view(2, node.self, b, c, router);
      HashRing before = node.node.state().ring();
      node.node.leavingArrived(b, false);
      node.node.leavingArrived(c, false);
      node.node.announceLeaving();
      OwnershipChange leaving = node.lastOwnership();
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
      assertEquals(before.without("a"), leaving.ring(), "b and c, though both said they were leaving, and d");
      for (RingDiff.Lost l : leaving.lost()) {
        assertFalse(l.destinations().isEmpty(), "a hands " + l.range() + " to someone");
      }
      node.node.close();
      assertEquals(leaving.ring(), node.node.state().ring());
    }
  }

  /**
   * A node refused when it leaves (a member listed before it holds its id) makes no hand-off, and
   * one that was in the ring does, even one whose change had nothing to hand. A view that admits
   * the first after it left (the holder of its id gone) does not make it one that handed its data
   * off: it held none, and the others must not be told otherwise.
   */
  @Test
  void handedOff_onlyIfTheNodeWasInTheRingWhenItLeft() throws Exception {
    NodeMetadata a = FedNode.meta("a");
    Address holder = FedNode.meta("a").newAddress();
    Address b = FedNode.meta("b").newAddress();
    // New to the ring again in view 3, it waits for the ring before from the old members: not long here.
    try (FedNode node = new FedNode(a, a.newAddress(), Duration.ofMillis(200))) {
      node.view(1, node.self);
      node.view(2, holder, node.self, b); // a merge that lists the holder of its id first
      assertFalse(node.node.state().localInRing(), "refused: its id is held");
      node.node.announceLeaving();
      node.view(3, b, node.self); // the holder left: this node is admitted again
      assertTrue(node.node.state().localInRing());
      assertFalse(node.node.handedOff(), "it handed nothing off when it left");
    }
    try (FedNode node = new FedNode(a)) {
      node.view(1, node.self);
      node.view(2, node.self, b);
      node.node.announceLeaving();
      assertEquals(OwnershipChange.Reason.LEAVING, node.lastOwnership().reason());
      assertTrue(node.node.handedOff());
    }
    try (FedNode node = new FedNode(FedNode.meta("a", 0.0, ""))) { // in the view's ring, holding nothing
      node.view(1, node.self);
      node.view(2, node.self, b);
      assertTrue(node.node.state().localInRing(), "admitted, with no tokens");
      int changes = node.ownership.size();
      node.node.announceLeaving();
      assertEquals(changes, node.ownership.size(), "nothing to hand, no change");
      assertTrue(node.node.handedOff(), "it handed off all it held, which is nothing");
    }
  }

  private static List<String> ids(HashRing ring) {
    return ring.members().stream().map(Member::id).toList();
  }
}
