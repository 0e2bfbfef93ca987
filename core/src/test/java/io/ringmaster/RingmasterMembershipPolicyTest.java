package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.MembershipChangePolicy;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The order the policy gives views: the first Ringmaster member keeps the cluster's ring
 * parameters through leaves and merges, whatever the addresses. Members are real JGroups
 * addresses carrying a node's metadata, as the stack makes them.
 */
class RingmasterMembershipPolicyTest {
  private final RingmasterMembershipPolicy policy = new RingmasterMembershipPolicy();

  @Test
  void joinAndLeave_withTheReferenceStaying_keepJGroupsOrder() {
    Address a = node("a", 64);
    Address b = node("b", 64);
    Address c = node("c", 64);
    Address bad = node("bad", 128);
    assertEquals(List.of(a, b, c), policy.getNewMembership(List.of(a, b), List.of(c), List.of(), List.of()));
    assertEquals(List.of(a, bad, c), policy.getNewMembership(List.of(a, b, bad, c), List.of(), List.of(b), List.of()));
  }

  @Test
  void referenceLeaves_nextMemberWithItsParametersComesFirst_notTheRefusedOne() {
    Address a = node("a", 64);
    Address bad = node("bad", 128);
    Address b = node("b", 64);
    Address c = node("c", 64);
    assertEquals(List.of(b, bad, c), policy.getNewMembership(List.of(a, bad, b, c), List.of(), List.of(a), List.of()));
    assertEquals(List.of(b, bad, c), policy.getNewMembership(List.of(a, bad, b, c), List.of(), List.of(), List.of(a)),
        "a crash (suspect) as a leave");
  }

  /**
   * A member refused only for its id holds the ring's parameters: when the holder of the id leaves,
   * it is the one moved first (it is then admitted under the id), not the misconfigured member
   * before it.
   */
  @Test
  void referenceLeaves_aTwinRefusedForItsIdComesFirst_notTheMisconfiguredOneBeforeIt() {
    Address a = node("a", 64);
    Address bad = node("bad", 128);
    Address twin = node("a", 64);
    assertEquals(List.of(twin, bad), policy.getNewMembership(List.of(a, bad, twin), List.of(), List.of(a), List.of()));
  }

  @Test
  void referenceLeaves_withOnlyOtherParametersLeft_orOnlyAJoinerWithThem_keepsJGroupsOrder() {
    Address a = node("a", 64);
    Address bad = node("bad", 128);
    Address c = node("c", 64);
    assertEquals(List.of(bad), policy.getNewMembership(List.of(a, bad), List.of(), List.of(a), List.of()),
        "the members left form a cluster of their own");
    assertEquals(List.of(bad, c), policy.getNewMembership(List.of(a, bad), List.of(c), List.of(a), List.of()),
        "a joiner is never made coordinator of the view that admits it");
  }

  /**
   * On a join or a leave, neither joiners nor members refused in the previous view for other
   * parameters ever lead the next one, however many of them there are: misconfigured nodes that failed their
   * start and are still leaving (or crashed, and are not yet found dead) would otherwise take the
   * ring's members over. After a tie won by a misconfigured node, that holds for correct joiners
   * too, until it leaves.
   */
  @Test
  void joinOrLeave_joinersAndRefusedMembersNeverLead_howeverManyHoldOtherParameters() {
    Address a = node("a", 64);
    Address b = node("b", 64);
    Address x1 = node("x1", 128);
    Address x2 = node("x2", 128);
    Address x3 = node("x3", 128);
    assertEquals(List.of(a, x1, x2), policy.getNewMembership(List.of(a, x1), List.of(x2), List.of(), List.of()),
        "x1, refused and leaving, and x2, joining: 2 to 1");
    assertEquals(List.of(a, x1, x2, x3), policy.getNewMembership(List.of(a, b, x1, x2, x3), List.of(), List.of(b),
        List.of()), "b leaves while three refused members linger: 3 to 1");
    assertEquals(List.of(b, x1, x2), policy.getNewMembership(List.of(a, x1, b, x2), List.of(), List.of(), List.of(a)),
        "the first member crashes: the next one of the ring leads, not a refused one before it");

    Address bad = node("bad", 128);
    Address bad2 = node("bad2", 128);
    assertEquals(List.of(bad, a, b), policy.getNewMembership(List.of(bad, a), List.of(b), List.of(), List.of()),
        "after a tie won by bad: a correct joiner is refused too");
    assertEquals(List.of(bad, a, b), policy.getNewMembership(List.of(bad, bad2, a, b), List.of(), List.of(bad2),
        List.of()), "a member of bad's ring leaves: 1 to 2, and bad still leads");
    assertEquals(List.of(a, b), policy.getNewMembership(List.of(bad, a, b), List.of(), List.of(bad), List.of()),
        "bad leaves: no member with its parameters is left, so JGroups' order stands");
  }

  /**
   * Another membership protocol version counts as other ring parameters: its member never leads
   * when the reference leaves, and loses a merge to the side whose ring has more members.
   */
  @Test
  void aMemberOfAnotherProtocolVersion_holdsOtherParameters_atALeaveAndAtAMerge() {
    for (int trial = 0; trial < 20; trial++) { // random addresses: the lone node sorts first about half the time
      Address a = node("a", 64);
      Address next = address(new NodeMetadata("next", 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION + 1,
          64, 1, "", ""));
      Address b = node("b", 64);
      assertEquals(List.of(b, next), policy.getNewMembership(List.of(a, next, b), List.of(), List.of(a), List.of()));
      assertEquals(List.of(a, b, next), policy.getNewMembership(List.of(List.of(next), List.of(a, b))));
    }
  }

  @Test
  void plainJGroupsMembers_stayWhereJGroupsPutsThem() {
    Address plain = plainAddress();
    Address a = node("a", 64);
    Address bad = node("bad", 128);
    Address b = node("b", 64);
    assertEquals(List.of(plain, b, bad), policy.getNewMembership(List.of(plain, a, bad, b), List.of(), List.of(a),
        List.of()));
  }

  @Test
  void merge_largerRingFirst_whateverTheAddresses() {
    for (int trial = 0; trial < 20; trial++) { // random addresses: the lone node sorts first about half the time
      Address bad = node("bad", 128);
      Address a = node("a", 64);
      Address b = node("b", 64);
      Address c = node("c", 64);
      assertEquals(List.of(a, b, c, bad), policy.getNewMembership(List.of(List.of(bad), List.of(a, b, c))));
      assertEquals(List.of(a, b, c, bad), policy.getNewMembership(List.of(List.of(a, b, c), List.of(bad))));
    }
  }

  @Test
  void applicationVersion_travelsInTheAddress_andCountsAsARingParameter_atAMerge() {
    for (int trial = 0; trial < 20; trial++) { // random addresses: the lone node sorts first about half the time
      Address old = version("old", "orders/1");
      Address a = version("a", "orders/2");
      Address b = version("b", "orders/2");
      assertEquals("orders/2", NodeMetadata.from(a).orElseThrow().applicationVersion());
      assertEquals("", NodeMetadata.from(node("n", 64)).orElseThrow().applicationVersion(), "none set: \"\"");
      assertEquals(List.of("applicationVersion: \"orders/1\" on old, \"orders/2\" on a"),
          NodeMetadata.from(old).orElseThrow().parameterDifferences(NodeMetadata.from(a).orElseThrow()));
      assertEquals(List.of(a, b, old), policy.getNewMembership(List.of(List.of(old), List.of(a, b))));
    }
  }

  /**
   * Two rings of two members each, under other parameters: a tie, which the parameters of the ring
   * member whose address sorts lowest win, on every member alike (docs/operations.md: "a tie, which
   * the side whose member's address sorts lowest wins").
   */
  @Test
  void merge_twoAgainstTwo_theParametersOfTheLowestRingMemberWin() {
    for (int trial = 0; trial < 40; trial++) { // random addresses: which side holds the lowest varies
      Address a1 = node("a1", 64);
      Address a2 = node("a2", 64);
      Address b1 = node("b1", 128);
      Address b2 = node("b2", 128);
      Address lowest = Stream.of(a1, a2, b1, b2).min(Address::compareTo).orElseThrow();
      int winning = NodeMetadata.from(lowest).orElseThrow().virtualNodes();
      for (boolean aFirst : new boolean[] {true, false}) {
        List<Address> merged = policy.getNewMembership(aFirst ? List.of(List.of(a1, a2), List.of(b1, b2))
            : List.of(List.of(b2, b1), List.of(a2, a1)));
        assertEquals(winning, NodeMetadata.from(merged.get(0)).orElseThrow().virtualNodes(),
            "trial " + trial + ": " + merged);
        assertEquals(4, merged.size());
      }
    }
  }

  @Test
  void merge_correctMembersInRingsSplitAcrossSubgroups_stillWin_butOneRefusedOnItsSideDoesNotCount() {
    for (int trial = 0; trial < 20; trial++) {
      Address bad = node("bad", 128);
      Address a = node("a", 64);
      Address b = node("b", 64);
      List<Address> merged = policy.getNewMembership(List.of(List.of(bad), List.of(a), List.of(b)));
      assertEquals(a.compareTo(b) < 0 ? a : b, merged.get(0), "two singletons with one set beat one with another");
      assertEquals(3, merged.size());
      // a refused on bad's side earlier (a 1-to-1 tie that bad's address won), b alone on the other:
      // a is in no ring, so 1 to 1 again, and the lower address of the two rings' members wins.
      assertEquals(bad.compareTo(b) < 0 ? List.of(bad, a, b) : List.of(b, bad, a),
          policy.getNewMembership(List.of(List.of(bad, a), List.of(b))));
    }
  }

  /**
   * Members refused on their side of a partition do not count at the merge: misconfigured nodes
   * that failed their start there and are leaving, or crashed and are not yet found dead, must not
   * take over the rings of both sides.
   */
  @Test
  void merge_membersRefusedOnTheirSide_doNotCount() {
    for (int trial = 0; trial < 20; trial++) { // random addresses: any of them may sort lowest
      Address c1 = node("c1", 64);
      Address c2 = node("c2", 64);
      Address m1 = node("m1", 128);
      Address m2 = node("m2", 128);
      Address m3 = node("m3", 128);
      List<Address> merged = policy.getNewMembership(List.of(List.of(c1, m1, m2, m3), List.of(c2)));
      assertEquals(c1.compareTo(c2) < 0 ? List.of(c1, m1, m2, m3, c2) : List.of(c2, c1, m1, m2, m3), merged,
          "two ring members against none: one configuration leads every side, so JGroups' coordinator stands");

      Address bad = node("bad", 128);
      Address bad2 = node("bad2", 128);
      Address a = node("a", 64);
      Address b = node("b", 64);
      merged = policy.getNewMembership(List.of(List.of(bad, a, b), List.of(bad2)));
      assertEquals(NodeMetadata.from(bad).orElseThrow().parameters(),
          NodeMetadata.from(merged.get(0)).orElseThrow().parameters(),
          "a and b, refused on bad's side, do not count: two ring members (bad, bad2) against none");
      assertEquals(Set.of(bad, a, b, bad2), Set.copyOf(merged));
      assertEquals(4, merged.size());
    }
    assertEquals(List.of(), policy.getNewMembership(List.of(List.of(), List.of())));
  }

  @Test
  void merge_equalRings_lowestCoordinatorFirst_asJGroups() {
    Address x = node("x", 64);
    Address y = node("y", 128);
    List<Address> expected = x.compareTo(y) < 0 ? List.of(x, y) : List.of(y, x);
    assertEquals(expected, policy.getNewMembership(List.of(List.of(x), List.of(y))));
    assertEquals(expected, policy.getNewMembership(List.of(List.of(y), List.of(x))));
  }

  @Test
  void merge_oneConfigurationOnEverySide_lowestCoordinatorFirst_notTheLargestSide() {
    MembershipChangePolicy jgroups = new GMS.DefaultMembershipPolicy();
    int lowestAlone = 0;
    for (int trial = 0; trial < 40; trial++) { // random addresses: the lone node sorts first about half the time
      Address s = node("s", 64);
      Address a = node("a", 64);
      Address b = node("b", 64);
      Address bad = node("bad", 128); // refused inside a's side: that side is still led by a
      List<Collection<Address>> sides = List.of(List.of(a, bad, b), List.of(s));
      List<Address> merged = policy.getNewMembership(sides);
      assertEquals(jgroups.getNewMembership(sides), merged);
      assertEquals(s.compareTo(a) < 0 ? s : a, merged.get(0), "the lowest coordinator, whatever the sizes");
      lowestAlone += merged.get(0) == s ? 1 : 0;
      merged.add(node("x", 64)); // JGroups trims the list it gets: it must be its own
    }
    assertTrue(lowestAlone > 0 && lowestAlone < 40, "both orders were tried: " + lowestAlone);
  }

  /**
   * A side of plain JGroups members only (a monitor, say) leaves the order as it is with one
   * configuration: the lowest coordinator first, the duplicate id kept on its side.
   */
  @Test
  void merge_oneConfiguration_withASideOfPlainMembersOnly_lowestCoordinatorFirst() {
    int plainFirst = 0;
    for (int trial = 0; trial < 40; trial++) { // random addresses: any side's coordinator may sort lowest
      Address c = node("c", 64);
      Address d = node("d", 64);
      Address a = node("a", 64);
      Address b = node("d", 64); // d's id on the other side, off its coordinator
      Address e = node("e", 64);
      Address plain = plainAddress();
      List<Collection<Address>> sides = List.of(List.of(a, b, e), List.of(c, d), List.of(plain));
      List<Address> merged = policy.getNewMembership(sides);
      assertEquals(merged, policy.getNewMembership(List.of(List.of(plain), List.of(c, d), List.of(a, b, e))),
          "whatever the order JGroups hands the sides over in");
      Address lowest = Stream.of(a, c, plain).min(Comparator.naturalOrder()).orElseThrow();
      assertEquals(lowest, merged.get(0), "the lowest coordinator, whatever the sizes: " + merged);
      Address lowerOfTwo = a.compareTo(c) < 0 ? a : c;
      assertEquals(lowerOfTwo == c, merged.indexOf(d) < merged.indexOf(b),
          "the id d stays on the lower Ringmaster coordinator's side: " + merged);
      plainFirst += merged.get(0) == plain ? 1 : 0;
    }
    assertTrue(plainFirst > 0 && plainFirst < 40, "the plain side came first in some trials only: " + plainFirst);
  }

  @Test
  void merge_oneConfiguration_duplicateIdOffTheCoordinators_keptOnTheLowerCoordinatorsSide_whateverTheSidesOrder() {
    for (int trial = 0; trial < 20; trial++) { // random addresses: either side's coordinator sorts lower
      Address a = node("a", 64);
      Address b = node("b", 64);
      Address x1 = node("x", 64); // one id on both sides, neither a coordinator
      Address x2 = node("x", 64);
      Address c = node("c", 64);
      List<Address> merged = policy.getNewMembership(List.of(List.of(a, x1, c), List.of(b, x2)));
      // JGroups hands the sides over in the order of a hash map: the result must not depend on it.
      assertEquals(merged, policy.getNewMembership(List.of(List.of(b, x2), List.of(a, x1, c))));
      boolean aLower = a.compareTo(b) < 0;
      assertEquals(aLower ? List.of(a, x1, c, b, x2) : List.of(b, x2, a, x1, c), merged);
    }
  }

  @Test
  void merge_mixedConfigurations_sidesAfterTheFirst_byCoordinatorAddress_whateverTheSidesOrder() {
    for (int trial = 0; trial < 20; trial++) {
      Address b = node("b", 64);
      Address y = node("y", 64);
      Address z = node("z", 64);
      Address a = node("a", 64);
      Address x1 = node("x", 64); // one id on two of the later sides
      Address c = node("c", 64);
      Address x2 = node("x", 64);
      Address bad = node("bad", 128); // alone on its side, with other parameters
      List<Address> merged = policy.getNewMembership(List.of(List.of(bad), List.of(a, x1), List.of(b, y, z),
          List.of(c, x2)));
      assertEquals(merged, policy.getNewMembership(List.of(List.of(c, x2), List.of(b, y, z), List.of(bad),
          List.of(a, x1))));
      assertEquals(List.of(b, y, z), merged.subList(0, 3), "the largest side led by the most held parameters");
      assertEquals(a.compareTo(c) < 0, merged.indexOf(x1) < merged.indexOf(x2),
          "then the other sides by coordinator address: " + merged);
    }
  }

  @Test
  void ringSize_countsDistinctIdsWithTheFirstMembersParameters() {
    Address plain = plainAddress();
    assertEquals(2, RingmasterMembershipPolicy.ringSize(
        List.of(plain, node("a", 64), node("bad", 128), node("b", 64), node("a", 64))));
    assertEquals(0, RingmasterMembershipPolicy.ringSize(List.of(plain)));
  }

  /**
   * A member whose metadata no ring can hold (a foreign or broken peer) counts as a plain JGroups
   * member on every node: never first, never in a ring. Building a ring with it would fail on
   * every node alike and freeze every ring at its last view.
   */
  @Test
  void membersNoRingCanHold_areLeftOut_neverTheReference() {
    Address a = node("a", 64);
    List<Address> broken = List.of(
        address(new NodeMetadata("", 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 64, 1, "", "")),
        address(new NodeMetadata("nan", Double.NaN, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 64, 1, "", "")),
        address(new NodeMetadata("no-tokens", 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 0, 1, "", "")),
        address(new NodeMetadata("no-replicas", 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 64, 0, "", "")),
        address(new NodeMetadata("huge", 1e12, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 64, 1, "", "")));
    for (Address b : broken) {
      assertTrue(NodeMetadata.isRingmasterNode(b), "it carries the keys");
      assertEquals(Optional.empty(), NodeMetadata.from(b), b.toString());
      List<Address> view = new ArrayList<>(List.of(b, a));
      assertEquals(Optional.of("a"),
          RingmasterMembershipPolicy.firstRingmasterMember(view).map(NodeMetadata::id), b.toString());
      assertEquals(1, RingmasterMembershipPolicy.ringSize(view));
    }
    assertEquals(Optional.of("a"), NodeMetadata.from(a).map(NodeMetadata::id), "a sound one is read");
  }

  /**
   * Addresses from a seeded generator, so that a failing order can be run again (each test gets a
   * new instance of this class, so the same addresses).
   */
  private final SplittableRandom random = new SplittableRandom(20261204L);

  private Address address(NodeMetadata metadata) {
    return new ExtendedUUID(random.nextLong(), random.nextLong()).addContents(metadata.newAddress());
  }

  private Address plainAddress() {
    return new UUID(random.nextLong(), random.nextLong());
  }

  private Address version(String id, String applicationVersion) {
    return address(new NodeMetadata(id, 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, 64, 1, applicationVersion, ""));
  }

  private Address node(String id, int virtualNodes) {
    return address(new NodeMetadata(id, 1.0, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, virtualNodes, 1, "", ""));
  }

  /**
   * A join or a leave after which no Ringmaster member is left in the view (plain JGroups members
   * only) keeps JGroups' order: there are no ring parameters to keep first.
   */
  @Test
  void joinOrLeave_leavingNoRingmasterMember_keepsJGroupsOrder() {
    Address plain = plainAddress();
    Address other = plainAddress();
    Address a = node("a", 64);
    assertEquals(List.of(plain, other), policy.getNewMembership(List.of(plain), List.of(other), List.of(), List.of()));
    assertEquals(List.of(plain), policy.getNewMembership(List.of(plain, a), List.of(), List.of(a), List.of()),
        "the last Ringmaster member leaves");
    assertEquals(List.of(), policy.getNewMembership(List.of(a), List.of(), List.of(a), List.of()),
        "every member leaves: an empty view, and no first member to look at");
  }

  /** A merge of empty subviews only gives an empty list of its own: JGroups trims the list it gets. */
  @Test
  void merge_ofEmptySubviewsOnly_givesAnEmptyListOfItsOwn() {
    List<Address> merged = policy.getNewMembership(List.of(List.of(), List.of()));
    assertEquals(List.of(), merged);
    merged.add(node("x", 64)); // as JGroups may: it must not throw
    assertEquals(1, merged.size());
  }
}
