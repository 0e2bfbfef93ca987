package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange.Reason;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The values the API hands an application and that an application may build itself (for tests of
 * its listeners, say): an ownership or membership change, a divergence report, a failure's kind.
 * A missing field is refused at once, naming it, rather than failing later where it is read; a
 * membership change's lists are its own, so the lists it was built from may change afterwards.
 */
class PublicValuesTest {
  private static final HashRing EMPTY = HashRing.builder().virtualNodes(16).build();
  private static final HashRing A = EMPTY.withMembers(List.of(Member.of("a")));
  private static final HashRing AB = EMPTY.withMembers(List.of(Member.of("a"), Member.of("b")));

  private static void assertRefusesNull(String field, Executable build) {
    assertEquals(field, assertThrows(NullPointerException.class, build).getMessage());
  }

  @Test
  void ownershipChange_withAFieldNull_isRefused_namingTheField() {
    RingDiff join = RingDiff.compute(EMPTY, false, A, true, "a", 1);
    assertRefusesNull("reason", () -> new OwnershipChange(null, -1, 1, EMPTY, A, join, true));
    assertRefusesNull("previousRing", () -> new OwnershipChange(Reason.VIEW, -1, 1, null, A, join, true));
    assertRefusesNull("ring", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, null, join, true));
    assertRefusesNull("diff", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A, null, true));
    assertRefusesNull("reason", () -> new OwnershipChange(null, -1, 1, EMPTY, A, join));
    assertRefusesNull("previousRing", () -> new OwnershipChange(Reason.VIEW, -1, 1, null, A, join));
    assertRefusesNull("ring", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, null, join));
    assertRefusesNull("diff", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A, null));
  }

  /** Built without {@code inRing}, a change has its node in the ring exactly when the ring holds its id. */
  @Test
  void ownershipChange_builtWithoutInRing_isInRingOnlyWhenTheRingHoldsTheNode() {
    OwnershipChange joined = new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A,
        RingDiff.compute(EMPTY, false, A, true, "a", 1));
    assertTrue(joined.inRing(), joined::toString);
    HashRing onlyB = EMPTY.withMembers(List.of(Member.of("b")));
    OwnershipChange leaving = new OwnershipChange(Reason.LEAVING, 2, 2, AB, onlyB,
        RingDiff.compute(AB, true, onlyB, false, "a", 1));
    assertFalse(leaving.inRing(), leaving::toString);
    assertFalse(leaving.lost().isEmpty(), "a lost what b took over: " + leaving);
  }

  @Test
  void membershipChange_keepsCopiesOfItsLists_notTheListsItWasBuiltFrom() {
    Member a = Member.of("a");
    Member b = Member.of("b");
    List<Member> members = new ArrayList<>(List.of(a, b));
    List<Member> joined = new ArrayList<>(List.of(b));
    List<Member> left = new ArrayList<>(List.of(Member.of("c")));
    List<Member> side = new ArrayList<>(List.of(a));
    List<List<Member>> subgroups = new ArrayList<>(List.of(side));
    List<MembershipChange.Refusal> refused = new ArrayList<>(List.of(new MembershipChange.Refusal("d", false,
        "d differs")));
    MembershipChange change = new MembershipChange(3, 4, members, joined, left, subgroups, refused);
    MembershipChange same = new MembershipChange(3, 4, List.of(a, b), List.of(b), List.of(Member.of("c")),
        List.of(List.of(a)), List.of(new MembershipChange.Refusal("d", false, "d differs")));

    members.clear();
    joined.clear();
    left.clear();
    side.add(b);
    subgroups.add(List.of(b));
    refused.clear();

    assertEquals(same, change, "the change is as it was built");
    assertTrue(change.isMerge());
    assertThrows(UnsupportedOperationException.class, () -> change.members().add(a));
    assertThrows(UnsupportedOperationException.class, () -> change.subgroups().get(0).add(b));
  }

  @Test
  void ringDivergence_withoutPeerIdOrKind_isRefused_namingTheField() {
    assertRefusesNull("peerId", () -> new RingDivergence(3, null, 1, 2, RingDivergence.Kind.CHECKSUM));
    assertRefusesNull("kind", () -> new RingDivergence(3, "b", 1, 2, null));
  }

  @Test
  void ringmasterException_withoutAReason_isRefused_andOtherwiseKeepsItsMessageAndCause() {
    assertRefusesNull("reason", () -> new RingmasterException(null, "no ring within 30 s"));
    assertRefusesNull("reason", () -> new RingmasterException(null, "no ring within 30 s", new Error()));
    Error cause = new Error("the stack's");
    RingmasterException e = new RingmasterException(RingmasterException.Reason.STACK, "the stack failed", cause);
    assertEquals(RingmasterException.Reason.STACK, e.reason());
    assertEquals("the stack failed", e.getMessage());
    assertSame(cause, e.getCause());
  }
}
