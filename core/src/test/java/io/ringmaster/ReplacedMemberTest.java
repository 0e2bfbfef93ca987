package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.View;
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
    try (Node n = new Node()) {
      NodeMetadata b = meta("b", 1.0, "");
      NodeMetadata heavierB = meta("b", 2.0, "rack-2");
      NodeMetadata c = meta("c", 1.0, "");
      Address b1 = b.newAddress();
      Address b2 = heavierB.newAddress();
      Address b3 = heavierB.newAddress(); // the same settings, another process: a restart
      Address c1 = c.newAddress();

      n.view(1, n.self);
      n.view(2, n.self, b1);
      assertChange(n.lastMembership(), List.of(b.member()), List.of());

      int ownershipBefore = n.ownership.size();
      n.view(3, n.self, b2); // b restarted with another weight and zone before its old self was removed
      MembershipChange reweighed = n.lastMembership();
      assertEquals(3, reweighed.viewId());
      assertChange(reweighed, List.of(heavierB.member()), List.of(b.member()));
      assertEquals(ownershipBefore + 1, n.ownership.size(), "the new weight moves keys: a hears of it");

      int membershipsBefore = n.memberships.size();
      ownershipBefore = n.ownership.size();
      n.view(4, n.self, b3);
      assertEquals(membershipsBefore + 1, n.memberships.size(), "a restart under the same settings is reported");
      assertChange(n.lastMembership(), List.of(heavierB.member()), List.of(heavierB.member()));
      assertEquals(ownershipBefore, n.ownership.size(), "the same ring: no ownership change");

      n.view(5, n.self, b3, c1);
      assertChange(n.lastMembership(), List.of(c.member()), List.of()); // b3 stayed: not reported

      membershipsBefore = n.memberships.size();
      n.view(6, n.self, c1, b3); // the same members in another order
      assertEquals(membershipsBefore, n.memberships.size(), "nothing changed, so nothing is reported");

      // This node rejoins (a new address, the same process and data): no change to itself.
      membershipsBefore = n.memberships.size();
      ownershipBefore = n.ownership.size();
      Address rejoined = n.local.newAddress();
      n.node.setLocalAddress(rejoined);
      n.view(7, rejoined, c1, b3);
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

  /** Node "a" with its view handling on a thread of its own and a recorder of each kind. */
  private static final class Node implements AutoCloseable {
    final NodeMetadata local = meta("a", 1.0, "");
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

    /** Feeds a view created by its first member and waits until it is installed. */
    void view(long id, Address... members) throws Exception {
      node.onView(View.create(members[0], id, members));
      viewThread.submit(() -> { }).get(10, TimeUnit.SECONDS);
      assertEquals(id, node.state().viewId());
    }

    MembershipChange lastMembership() {
      return memberships.get(memberships.size() - 1);
    }

    @Override
    public void close() {
      viewThread.shutdownNow();
    }
  }

  private static NodeMetadata meta(String id, double weight, String zone) {
    return NodeMetadata.of(Ringmaster.builder().nodeId(id).weight(weight).zone(zone).jgroupsConfig(TestCluster.STACK)
        .virtualNodes(64).replicas(2).buildConfig());
  }
}
