package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.jgroups.Address;
import org.junit.jupiter.api.Test;

/**
 * A member replaced under its node id within one view: JGroups removes the old member and admits
 * the new one in the same view when a process restarts (or rejoins) before its old self is
 * removed. The views are built by hand and fed to node "a"'s view handling, so that the
 * replacement surely falls in one view.
 */
class ReplacedMemberTest {

  @Test
  void memberReplacedInOneView_isReportedAsLeftAndJoined_unchangedMembersAreNot() throws Exception {
    try (FedNode n = new FedNode(meta("a", 1.0, ""))) {
      NodeMetadata b = meta("b", 1.0, "");
      NodeMetadata heavierB = meta("b", 2.0, "rack-2");
      NodeMetadata c = meta("c", 1.0, "");
      Address b1 = b.newAddress();
      Address b2 = heavierB.newAddress();
      Address b3 = heavierB.newAddress(); // the same settings, another process: a restart
      Address c1 = c.newAddress();

      view(n, 1, n.self);
      view(n, 2, n.self, b1);
      assertChange(n.lastMembership(), List.of(b.member()), List.of());

      int ownershipBefore = n.ownership.size();
      view(n, 3, n.self, b2); // b restarted with another weight and zone before its old self was removed
      MembershipChange reweighed = n.lastMembership();
      assertEquals(3, reweighed.viewId());
      assertChange(reweighed, List.of(heavierB.member()), List.of(b.member()));
      assertEquals(ownershipBefore + 1, n.ownership.size(), "the new weight moves keys: a hears of it");

      int membershipsBefore = n.memberships.size();
      ownershipBefore = n.ownership.size();
      view(n, 4, n.self, b3);
      assertEquals(membershipsBefore + 1, n.memberships.size(), "a restart under the same settings is reported");
      assertChange(n.lastMembership(), List.of(heavierB.member()), List.of(heavierB.member()));
      assertEquals(ownershipBefore, n.ownership.size(), "the same ring: no ownership change");

      view(n, 5, n.self, b3, c1);
      assertChange(n.lastMembership(), List.of(c.member()), List.of()); // b3 stayed: not reported

      membershipsBefore = n.memberships.size();
      view(n, 6, n.self, c1, b3); // the same members in another order
      assertEquals(membershipsBefore, n.memberships.size(), "nothing changed, so nothing is reported");

      // This node rejoins (a new address, the same process and data): no change to itself.
      membershipsBefore = n.memberships.size();
      ownershipBefore = n.ownership.size();
      Address rejoined = n.metadata.newAddress();
      n.node.setLocalAddress(rejoined);
      view(n, 7, rejoined, c1, b3);
      assertEquals(membershipsBefore, n.memberships.size(), "its own rejoin is not reported to itself");
      assertEquals(ownershipBefore, n.ownership.size());

      // Folding every change, left before joined, gives the members at each step.
      TreeSet<String> folded = new TreeSet<>();
      for (MembershipChange change : n.memberships) {
        change.left().forEach(m -> folded.remove(m.id()));
        change.joined().forEach(m -> folded.add(m.id()));
        assertEquals(ids(change.members()), List.copyOf(folded), "after view " + change.viewId());
      }
      assertEquals(List.of("a", "b", "c"), List.copyOf(folded));
    }
  }

  private static void assertChange(MembershipChange change, List<Member> joined, List<Member> left) {
    assertEquals(joined, change.joined(), change.toString());
    assertEquals(left, change.left(), change.toString());
    assertTrue(change.refused().isEmpty(), change.toString());
  }

  private static List<String> ids(List<Member> members) {
    List<String> ids = new ArrayList<>();
    members.forEach(m -> ids.add(m.id()));
    ids.sort(null);
    return ids;
  }

  /** Feeds a view to node "a" and checks that it was installed. */
  private static void view(FedNode n, long id, Address... members) throws Exception {
    n.view(id, members);
    assertEquals(id, n.node.state().viewId());
  }
}
