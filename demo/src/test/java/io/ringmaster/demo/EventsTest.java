package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.MembershipChange;
import io.ringmaster.OwnershipChange;
import io.ringmaster.RingDivergence;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The ring page's log entries, from rings built here. */
class EventsTest {
  private static HashRing ring(int members, int virtualNodes) {
    List<Member> list = new ArrayList<>();
    for (int i = 1; i <= members; i++) {
      list.add(Member.of("peer-" + i));
    }
    return HashRing.builder().virtualNodes(virtualNodes).addAll(list).build();
  }

  @Test
  void moved_aPeerLeaving_eachOtherPeerGainsFromItOnly_andItLosesItsShareToThem() {
    HashRing before = ring(4, 64);
    HashRing after = before.without("peer-3");
    List<Events.Moved> moved = Events.moved(before, after);

    assertEquals(List.of("peer-1", "peer-2", "peer-3", "peer-4"), moved.stream().map(Events.Moved::id).toList());
    Events.Moved leaver = moved.get(2);
    assertEquals(0, leaver.gainedRanges());
    assertEquals(List.of("peer-1", "peer-2", "peer-4"), leaver.to());
    assertEquals(before.share("peer-3"), leaver.lostFraction(), 1e-9);
    double gained = 0;
    for (Events.Moved m : moved) {
      if (m != leaver) {
        assertEquals(List.of("peer-3"), m.from(), m.id());
        assertEquals(0, m.lostRanges(), m.id());
        assertEquals(RingDiff.compute(before, after, m.id(), 1).gained().size(), m.gainedRanges(), m.id());
        gained += m.gainedFraction();
      }
    }
    assertEquals(leaver.lostFraction(), gained, 1e-9, "what it lost, the others gained");
    assertEquals(List.of(), Events.moved(after, after), "nothing moved");
  }

  /**
   * Rings of up to {@value Events#MAX_MEMBERS_DIFFED} members get their moves, before and after
   * the change alike; one more member, and none are listed.
   */
  @Test
  void moved_ringsOfUpToTheMostMembersDiffed_areDiffed_beyondThatNot() {
    HashRing most = ring(Events.MAX_MEMBERS_DIFFED, 1);
    HashRing oneLess = most.without("peer-1");
    HashRing oneMore = most.with(Member.of("peer-0"));
    assertFalse(Events.moved(most, oneLess).isEmpty(), "a leave from a ring of the most members diffed");
    assertFalse(Events.moved(oneLess, most).isEmpty(), "a join that makes a ring of the most members diffed");
    assertEquals(List.of(), Events.moved(oneMore, most), "a leave from one more");
    assertEquals(List.of(), Events.moved(most, oneMore), "a join that makes one more");
  }

  @Test
  void ownership_manyRanges_listsTheFirstOnes_butNamesEverySourceAndDestination() {
    HashRing before = ring(100, 16);
    HashRing after = before.with(new Member("newcomer", 64.0, ""));
    RingDiff diff = RingDiff.compute(before, after, "newcomer", 1);
    Set<String> sources = new TreeSet<>();
    diff.gained().forEach(g -> g.sources().forEach(m -> sources.add(m.id())));
    Set<String> listed = new TreeSet<>();
    diff.gained().subList(0, Events.MAX_RANGES_LISTED).forEach(g -> g.sources().forEach(m -> listed.add(m.id())));
    assertTrue(listed.size() < sources.size(), "the case this checks: the listed ranges name only some sources");

    Events.Ownership e = Events.ownership(new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, before, after, diff));
    assertEquals(Events.MAX_RANGES_LISTED, e.gained().size());
    assertEquals(diff.gained().size(), e.gainedRanges());
    assertEquals(List.copyOf(sources), e.sources());

    Events.Ownership lost = Events.ownership(new OwnershipChange(OwnershipChange.Reason.VIEW, 2, 3, after, before,
        RingDiff.compute(after, before, "newcomer", 1)));
    assertEquals(List.copyOf(sources), lost.destinations(), "leaving again, to the same members");
    assertEquals(Events.MAX_RANGES_LISTED, lost.lost().size(), "the first ones listed");
    assertEquals(diff.gained().size(), lost.lostRanges());
    assertEquals(after.share("newcomer"), e.gainedFraction(), 1e-9, "the fraction of every range gained");
    assertEquals(after.share("newcomer"), lost.lostFraction(), 1e-9, "the fraction of every range lost");
    // The first ranges are listed as they are, start then end (the page draws them as arcs).
    assertEquals(List.of(Long.toString(diff.gained().get(0).range().start()),
        Long.toString(diff.gained().get(0).range().end())), e.gained().get(0).range());
    assertEquals("newcomer", lost.self());
    assertFalse(lost.refused() || e.refused(), "a member that left is not refused");
  }

  /**
   * A refused peer's change (another peer kept its id): flagged so, naming this peer, so that the
   * page can tell the peer holding the id from this one, which hands it what it held.
   */
  @Test
  void ownership_ofARefusedPeer_saysSo_andNamesThisPeer() {
    HashRing ring = ring(3, 16);
    String id = ring.members().get(0).id();
    RingDiff diff = RingDiff.compute(ring, true, ring, false, id, 1);
    Events.Ownership e = Events.ownership(new OwnershipChange(OwnershipChange.Reason.VIEW, 4, 5, ring, ring, diff,
        false));
    assertTrue(e.refused());
    assertEquals(id, e.self());
    assertEquals(List.of(id), e.destinations(), "what it held under the id goes to the peer that kept it");
    assertTrue(e.lostFraction() > 0, e::toString);
  }

  /** A membership entry says a merge is one, and names each refusal, this peer's as its own. */
  @Test
  void membership_aMergeWithRefusals_saysSo_andNamesThisPeersOwn() {
    HashRing before = ring(2, 16);
    HashRing after = ring(3, 16);
    List<Member> sideA = List.of(Member.of("peer-1"), Member.of("peer-2"));
    MembershipChange merge = new MembershipChange(4, 6, after.members(),
        List.of(Member.of("peer-3")), List.of(), List.of(sideA, List.of(Member.of("peer-3"))),
        List.of(new MembershipChange.Refusal("peer-9", true, "node id \"peer-9\" is already held"),
            new MembershipChange.Refusal("peer-8", false, "ring parameters differ")));

    Events.Membership m = Events.membership(merge, before, after);

    assertTrue(m.merge());
    assertEquals(List.of("this peer: node id \"peer-9\" is already held", "ring parameters differ"), m.refused());
    assertEquals(List.of("peer-3"), m.joined());
    assertEquals(6, m.viewId());
    MembershipChange join = new MembershipChange(4, 5, after.members(),
        List.of(Member.of("peer-3")), List.of(), List.of(), List.of());
    assertFalse(Events.membership(join, before, after).merge());
  }

  /** Each other event names its type, and is stamped with the time it was made. */
  @Test
  void theOtherEvents_nameTheirType_andTheTimeTheyWereMade() {
    HashRing before = ring(2, 16);
    HashRing after = ring(3, 16);
    OwnershipChange change = new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, before, after,
        RingDiff.compute(before, after, "peer-3", 1));
    long from = System.currentTimeMillis();
    Events.Started started = Events.started("peer-1", "http://127.0.0.1:8080", 3, after.members());
    Events.Gap gap = Events.gap(12);
    Events.Migration migration = Events.migration("in", change, 40, 2, List.of("peer-1"), 15, true);
    Events.Sweep sweep = Events.sweep(5, List.of("peer-2"));
    Events.Received received = Events.received("repair", "peer-2", 3, 4);
    Events.Repair repair = Events.repair(6, 7, List.of("peer-1", "peer-2"), 8, false);
    Events.Divergence divergence = Events.divergence(new RingDivergence(9, "peer-2", 0xabcL, 0xdefL,
        RingDivergence.Kind.CHECKSUM));
    Events.Leaving leaving = Events.leaving("peer-1", 10);
    long to = System.currentTimeMillis();

    assertEquals(List.of("started", "gap", "migration", "sweep", "received", "repair", "divergence", "leaving"),
        List.of(started.type(), gap.type(), migration.type(), sweep.type(), received.type(), repair.type(),
            divergence.type(), leaving.type()));
    for (long time : new long[] {started.time(), gap.time(), migration.time(), sweep.time(), received.time(),
        repair.time(), divergence.time(), leaving.time()}) {
      assertTrue(time >= from && time <= to, time + " not in [" + from + ", " + to + "]");
    }
    assertEquals(List.of("peer-1", "peer-2", "peer-3"), started.members());
    assertEquals(12, gap.missed());
    assertEquals("view", migration.reason());
    assertEquals(2, migration.viewId());
    assertEquals("abc", divergence.localChecksum());
    assertEquals("def", divergence.peerChecksum());
    assertEquals("CHECKSUM", divergence.kind());
  }
}
