package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.jgroups.Address;
import org.jgroups.MergeView;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The promise every member keeps without a coordinator: the same view gives the same ring, and so
 * the same owner of every key, whatever views each member installed before it, whichever member of
 * the view it is, and whatever it announces itself. The views are built by hand and fed to each
 * member's view handling ({@link FedNode}), so that every member surely installs the very same
 * view: a merge of two sides with one id on both, under other weights and zones, and a member
 * restarted under its id with another weight and zone. The rings are compared by their checksums
 * (what the gossip compares) and by the owners of keys (what the checksum stands for).
 */
class SameViewSameRingTest {
  private static final int REPLICAS = 2; // FedNode.meta's

  /**
   * a and b on one side, b's twin (weight 3, another zone) and c on the other, merged with a's side
   * first: all four members, the refused twin included, build the ring of the holder's weight and
   * zone; each member in it is told exactly the change from its side's ring to the merged one, and
   * the twin loses everything it owned on its side to the merged ring's owners.
   */
  @Test
  void merge_withOneIdOnBothSidesUnderOtherWeightsAndZones_everyMemberBuildsTheHoldersRing() throws Exception {
    NodeMetadata b = meta("b", 1.0, "z1");
    NodeMetadata twinOfB = meta("b", 3.0, "z2"); // the same id, another weight and zone
    try (FedNode a = new FedNode(meta("a"));
         FedNode holder = new FedNode(b);
         FedNode twin = new FedNode(twinOfB);
         FedNode c = new FedNode(meta("c"))) {
      // One side: a, then b joins it.
      a.view(1, a.self);
      View sideOfA = View.create(a.self, 2, a.self, holder.self);
      holder.node.ringBeforeArrived(2, (UUID) a.self, List.of(a.metadata.member()), a.self);
      a.install(sideOfA);
      holder.install(sideOfA);
      // The other side: the twin, then c joins it.
      twin.view(1, twin.self);
      View sideOfTwin = View.create(twin.self, 3, twin.self, c.self);
      c.node.ringBeforeArrived(3, (UUID) twin.self, List.of(twinOfB.member()), twin.self);
      twin.install(sideOfTwin);
      c.install(sideOfTwin);
      List<FedNode> all = List.of(a, holder, twin, c);
      HashRing[] sideRings = all.stream().map(n -> n.node.state().ring()).toArray(HashRing[]::new);
      assertEquals(Optional.of(twinOfB.member()), twin.node.state().ring().member("b"), "the twin holds b on its side");

      MergeView merge = new MergeView(new ViewId(a.self, 4), List.of(a.self, holder.self, twin.self, c.self),
          List.of(sideOfA, sideOfTwin));
      for (FedNode n : all) {
        n.install(merge);
      }

      HashRing ring = a.node.state().ring();
      assertEquals(Optional.of(b.member()), ring.member("b"), "the earlier member keeps the id, with its weight and zone");
      SplittableRandom random = new SplittableRandom(29);
      long[] positions = random.longs(20_000).toArray();
      for (FedNode n : all) {
        String who = n.metadata.id() + " (" + n.metadata.member() + ")";
        ClusterNode.Snapshot s = n.node.state();
        assertEquals(4, s.viewId(), who);
        assertEquals(ring, s.ring(), who);
        assertEquals(ring.checksum(), s.ring().checksum(), who);
        for (long p : positions) {
          assertEquals(ring.ownersOfPosition(p, REPLICAS), s.ring().ownersOfPosition(p, REPLICAS),
              () -> who + " at " + Long.toHexString(p));
        }
        assertEquals(n != twin, s.localInRing(), who);
      }

      // Each member in the ring is told exactly what changed between its side's ring and the merged one.
      for (int i = 0; i < all.size(); i++) {
        FedNode n = all.get(i);
        OwnershipChange change = n.lastOwnership();
        assertEquals(OwnershipChange.Reason.MERGE, change.reason(), n.metadata.id());
        assertEquals(sideRings[i], change.previousRing(), n.metadata.id());
        assertEquals(ring, change.ring(), n.metadata.id());
        if (n != twin) {
          assertEquals(RingDiff.compute(sideRings[i], ring, n.metadata.id(), REPLICAS), change.diff(), n.metadata.id());
        }
      }
      // The twin loses all it owned on its side (at weight 3), to the merged ring's owners.
      OwnershipChange refused = twin.lastOwnership();
      assertFalse(refused.inRing());
      assertEquals(List.of(), refused.gained());
      int owned = 0;
      for (long p : positions) {
        boolean ownedBefore = sideRings[2].ownersOfPosition(p, REPLICAS).stream().anyMatch(m -> m.id().equals("b"));
        List<RingDiff.Lost> covering = refused.lost().stream().filter(l -> l.range().contains(p)).toList();
        if (!ownedBefore) {
          assertEquals(List.of(), covering, () -> "not owned on its side, yet lost: " + Long.toHexString(p));
          continue;
        }
        owned++;
        assertEquals(1, covering.size(), () -> "owned on its side, lost once: " + Long.toHexString(p));
        assertEquals(ring.ownersOfPosition(p, REPLICAS), covering.get(0).destinations(), Long.toHexString(p));
      }
      assertEquals(positions.length, owned, "two members on its side, two replicas: it owned every key there");
    }
  }

  /**
   * x saw b join at weight 1, then b restarted at weight 2.5 in another zone (the old b gone and the
   * new one in, in one view); c joined in between; d joins last, with no ring before. Every one of
   * them has the same owners for every key in the last view, which is the ring of its members
   * built from nothing. (The checksum covers the members, not their tokens: a ring that kept b's
   * old tokens under its new weight would have the same checksum, and other owners.)
   */
  @Test
  void sameView_givesTheSameRing_whateverTheViewsEachMemberInstalledBefore() throws Exception {
    NodeMetadata b = meta("b", 1.0, "");
    NodeMetadata restartedB = meta("b", 2.5, "rack-2"); // restarted under its id with another weight and zone
    try (FedNode x = new FedNode(meta("x"));
         FedNode c = new FedNode(meta("c", 0.5, "rack-1"));
         FedNode d = new FedNode(meta("d", 1.5, "rack-2"))) {
      Address b1 = b.newAddress();
      Address b2 = restartedB.newAddress();
      x.view(1, x.self);
      x.view(2, x.self, b1);
      View three = View.create(x.self, 3, x.self, b1, c.self);
      c.node.ringBeforeArrived(3, (UUID) x.self, List.of(x.metadata.member(), b.member()), x.self);
      x.install(three);
      c.install(three);
      View replaced = View.create(x.self, 4, x.self, c.self, b2); // the old b gone, the new one in, one view
      x.install(replaced);
      c.install(replaced);
      assertEquals(Optional.of(restartedB.member()), x.node.state().ring().member("b"));
      View five = View.create(x.self, 5, x.self, c.self, b2, d.self);
      d.node.ringBeforeArrived(5, (UUID) x.self, List.of(x.metadata.member(), c.metadata.member(),
          restartedB.member()), x.self);
      for (FedNode n : List.of(x, c, d)) {
        n.install(five);
      }

      // d built view 5 from nothing; x and c from rings that held b at its old weight.
      HashRing fresh = d.node.state().ring();
      assertEquals(Optional.of(restartedB.member()), fresh.member("b"));
      SplittableRandom random = new SplittableRandom(31);
      long[] positions = random.longs(20_000).toArray();
      for (FedNode n : List.of(x, c)) {
        HashRing ring = n.node.state().ring();
        assertEquals(5, n.node.state().viewId());
        assertEquals(fresh, ring, n.metadata.id());
        assertEquals(fresh.checksum(), ring.checksum(), n.metadata.id());
        for (long p : positions) {
          assertEquals(fresh.ownersOfPosition(p, REPLICAS), ring.ownersOfPosition(p, REPLICAS),
              () -> n.metadata.id() + " at " + Long.toHexString(p));
        }
      }
      assertEquals(HashRing.builder().virtualNodes(64).build().withMembers(List.of(x.metadata.member(),
          c.metadata.member(), restartedB.member(), d.metadata.member())), fresh, "the ring of the view's members");
    }
  }
}
