package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.OwnershipFold;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jgroups.Address;
import org.jgroups.MergeView;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Two live members announcing one id, one on each side of a partition, then a merge: the later
 * one is refused and loses everything it owned on its side. The views are built by hand and fed
 * to the node's view handling, so that both members can hold the id, which a real join refuses.
 */
class DuplicateIdMergeTest {

  @Test
  void merge_refusedDuplicateId_losesAllItOwned_toTheMergedRingsOwners_holderIncluded() throws Exception {
    try (Merged f = new Merged()) {
      f.installed();
      assertFalse(f.node.state().localInRing(), "the later holder of the id is refused");
      MembershipChange merged = f.lastMembership();
      assertTrue(merged.isMerge());
      assertEquals(1, merged.refused().size(), merged.toString());
      assertEquals("b", merged.refused().get(0).nodeId());
      assertTrue(merged.refused().get(0).local(), "this node is the one refused");
      assertTrue(merged.refused().get(0).reason().contains("node id \"b\" is already held by member"),
          merged.refused().get(0).reason());
      // A membership listener added now learns it in its first change, with the members then.
      List<MembershipChange> late = new CopyOnWriteArrayList<>();
      f.node.addMembershipListener(new SerialDelivery<>("late", late::add, Runnable::run, f, () -> { }));
      assertEquals(1, late.size(), late.toString());
      assertEquals(-1, late.get(0).previousViewId());
      assertFalse(late.get(0).isMerge(), "a late listener's first change is no merge: " + late.get(0));
      assertEquals(merged.members(), late.get(0).members());
      assertEquals(merged.refused(), late.get(0).refused(), "the refusal of an earlier view, still in force");
      // In its ring, "b" was itself; now it is the holder: that "b" joins, with a, and this one leaves.
      assertEquals(List.of("a", "b"), merged.joined().stream().map(m -> m.id()).toList(), merged.toString());
      assertEquals(List.of("b"), merged.left().stream().map(m -> m.id()).toList(), merged.toString());
      OwnershipChange merge = f.lastOwnership();
      assertEquals(OwnershipChange.Reason.MERGE, merge.reason());
      HashRing before = merge.previousRing();
      HashRing after = merge.ring();
      assertTrue(after.contains("b"), "the id stays in the ring, held by the earlier member");
      assertFalse(merge.inRing(), "the change says this node is not the \"b\" of its ring");
      assertEquals(List.of(), merge.gained());
      SplittableRandom random = new SplittableRandom(11);
      int owned = 0;
      int notOwned = 0;
      for (int k = 0; k < 20_000; k++) {
        long p = random.nextLong();
        boolean ownedBefore = before.ownersOfPosition(p, 2).stream().anyMatch(m -> m.id().equals("b"));
        List<RingDiff.Lost> covering = merge.lost().stream().filter(l -> l.range().contains(p)).toList();
        if (!ownedBefore) {
          notOwned++;
          assertEquals(List.of(), covering, () -> "not owned on its side, yet lost: " + Long.toHexString(p));
          continue;
        }
        owned++;
        assertEquals(1, covering.size(), () -> "owned on its side, lost once: " + Long.toHexString(p));
        assertEquals(after.ownersOfPosition(p, 2), covering.get(0).destinations(),
            () -> "the new owners of " + Long.toHexString(p) + " in the merged ring");
      }
      assertTrue(owned > 10_000 && notOwned > 3_000, "with 2 replicas of 3 members it owned about two thirds of the"
          + " keys on its side: " + owned + ", and not " + notOwned);
      assertEquals(List.of(), folded(f), "what the kit's fold finds wrong in the changes");
      // The same losses told by a change that calls this node the "b" of the merged ring: wrong.
      OwnershipFold fold = new OwnershipFold();
      f.ownership.subList(0, f.ownership.size() - 1).forEach(fold::onOwnershipChange);
      fold.onOwnershipChange(new OwnershipChange(merge.reason(), merge.previousViewId(), merge.viewId(), before,
          after, merge.diff(), true));
      assertTrue(fold.violations().stream().anyMatch(v -> v.endsWith(": lost where the ring after makes it PRIMARY")),
          String.valueOf(fold.violations()));
    }
  }

  @Test
  void holderOfTheIdLeaves_refusedNodeIsAdmitted_andGainsFromTheMembersThatHoldTheDataNow() throws Exception {
    try (Merged f = new Merged()) {
      f.node.onView(View.create(f.addressA, 7, f.addressA, f.addressC, f.self, f.addressD)); // the holder left
      f.installed();
      assertTrue(f.node.state().localInRing(), "admitted once the id is free");
      // Its membership listeners hear that the refusal is over: the holder of "b" left, this "b" joined.
      MembershipChange takeover = f.lastMembership();
      assertEquals(7, takeover.viewId());
      assertEquals(List.of(f.b.member()), takeover.left(), takeover.toString());
      assertEquals(List.of(f.b.member()), takeover.joined(), takeover.toString());
      List<MembershipChange> late = new CopyOnWriteArrayList<>();
      f.node.addMembershipListener(new SerialDelivery<>("late", late::add, Runnable::run, f, () -> { }));
      assertEquals(List.of(), late.get(0).refused(), "a listener added now hears of no refusal: it is over");
      OwnershipChange admitted = f.lastOwnership();
      assertEquals(7, admitted.viewId());
      assertTrue(admitted.inRing());
      HashRing ring = admitted.ring();
      HashRing elsewhere = ring.without("b");
      assertEquals(elsewhere.checksum(), admitted.previousRing().checksum());
      assertEquals(List.of(), admitted.lost(), "it held nothing while refused");
      SplittableRandom random = new SplittableRandom(13);
      int owned = 0;
      for (int k = 0; k < 20_000; k++) {
        long p = random.nextLong();
        if (ring.ownersOfPosition(p, 2).stream().noneMatch(m -> m.id().equals("b"))) {
          continue;
        }
        owned++;
        List<RingDiff.Gained> covering = admitted.gained().stream().filter(g -> g.range().contains(p)).toList();
        assertEquals(1, covering.size(), () -> "owned now, gained once: " + Long.toHexString(p));
        // Not "b" itself (the member that held the id is gone): where the data went when it left.
        assertEquals(elsewhere.ownersOfPosition(p, 2), covering.get(0).sources(),
            () -> "the sources of " + Long.toHexString(p));
      }
      assertTrue(owned > 8_000, "with 2 replicas of 4 members it owns about half the keys: " + owned);
      assertEquals(List.of(), folded(f), "what the kit's fold finds wrong in the changes");
    }
  }

  @Test
  void merge_subgroups_leaveOutTheRefusedTwin() throws Exception {
    try (Merged f = new Merged()) {
      f.installed();
      MembershipChange merged = f.lastMembership();
      // The holder is "b" on a's side; this node, refused, is in neither subgroup.
      assertEquals(List.of(List.of(f.a.member(), f.b.member()), List.of(f.c.member(), f.d.member())),
          merged.subgroups(), merged.toString());
    }
  }

  @Test
  void stillRefusedInALaterView_losesNothingMore_andItsRefusalIsNotReportedAgain() throws Exception {
    try (Merged f = new Merged()) {
      f.installed();
      long refusals = f.node.refusals.get();
      int ownershipChanges = f.ownership.size();
      NodeMetadata e = meta("e");
      f.node.onView(View.create(f.addressA, 7, f.addressA, f.holder, f.addressC, f.self, f.addressD, e.newAddress()));
      f.installed();
      assertFalse(f.node.state().localInRing(), "the holder of \"b\" is still there");
      MembershipChange joined = f.lastMembership();
      assertEquals(7, joined.viewId());
      assertEquals(List.of(e.member()), joined.joined(), joined.toString());
      assertEquals(List.of(), joined.refused(), "the refusal was reported in view 6: " + joined);
      assertEquals(refusals, f.node.refusals.get(), "refusals counted once");
      assertEquals(ownershipChanges, f.ownership.size(), "a node that holds nothing loses nothing");
      assertEquals(List.of(), folded(f), "what the kit's fold finds wrong in the changes");

      // A membership listener added now hears, in its first change, every refusal in force: this
      // node's own among them, though view 7 reported none as new.
      List<MembershipChange> late = new CopyOnWriteArrayList<>();
      f.node.addMembershipListener(new SerialDelivery<>("late", late::add, Runnable::run, f, () -> { }));
      assertEquals(1, late.size());
      assertEquals(List.of("b"), late.get(0).refused().stream().map(MembershipChange.Refusal::nodeId).toList());
      assertTrue(late.get(0).refused().get(0).local(), late.get(0).toString());
    }
  }

  @Test
  void anOwnershipListenerAddedWhileRefused_hearsNothing_untilTheNodeIsAdmitted() throws Exception {
    try (Merged f = new Merged()) {
      f.installed();
      List<OwnershipChange> late = new CopyOnWriteArrayList<>();
      f.node.addOwnershipListener(new SerialDelivery<>("late", late::add, Runnable::run, f, () -> { }));
      assertEquals(List.of(), late, "the \"b\" of the ring is the holder's, not this node's");
      f.node.onView(View.create(f.addressA, 7, f.addressA, f.addressC, f.self, f.addressD)); // the holder left
      f.installed();
      assertEquals(1, late.size(), late.toString());
      assertTrue(late.get(0).inRing());
      OwnershipFold fold = new OwnershipFold();
      late.forEach(fold::onOwnershipChange);
      assertEquals(List.of(), fold.violations());
      assertEquals(Optional.empty(), fold.disagreement(late.get(0).ring(), "b", 2),
          "the listener's fold is the node's ownership in view 7");
    }
  }

  /** The node's changes, in order, through a fresh {@link OwnershipFold}: what it finds wrong. */
  private static List<String> folded(FedNode f) {
    OwnershipFold fold = new OwnershipFold();
    f.ownership.forEach(fold::onOwnershipChange);
    return fold.violations();
  }

  /**
   * A node "b" on one side of a partition with "c" and "d", merged with the side of "a" and the
   * earlier "b" (the holder): views 5 (this side) and 6 (the merge) are fed to its view handling.
   */
  private static final class Merged extends FedNode {
    final NodeMetadata a = meta("a");
    final NodeMetadata b = metadata; // this node: the later "b"
    final NodeMetadata c = meta("c");
    final NodeMetadata d = meta("d");
    final Address addressA = a.newAddress();
    final Address holder = b.newAddress(); // the earlier "b", on the coordinator's side
    final Address addressC = c.newAddress();
    final Address addressD = d.newAddress();

    Merged() {
      super(meta("b"));
      View side = View.create(addressC, 5, addressC, self, addressD);
      // What c, the old member of that side, tells this node, new to it: before view 5 it had c alone.
      node.ringBeforeArrived(5, (UUID) addressC, List.of(c.member()), addressC);
      node.onView(side);
      View other = View.create(addressA, 5, addressA, holder);
      node.onView(new MergeView(new ViewId(addressA, 6), List.of(addressA, holder, addressC, self, addressD),
          List.of(other, side)));
    }
  }
}
