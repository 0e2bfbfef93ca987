package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jgroups.Address;
import org.jgroups.View;
import org.junit.jupiter.api.Test;

/**
 * Views that reach the channel out of order. JGroups installs only a view newer than its last,
 * but hands each one up after releasing its lock, so a coordinator's late view and its
 * successor's can arrive at the node in the wrong order. The views are built by hand and fed to
 * node "a"'s view handling, in the order the race leaves them.
 */
class ViewOrderTest {

  @Test
  void aViewOlderThanTheLastOne_isSkipped_andTheNextNewerOneFollowsTheLast() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      n.view(1, n.self);
      n.view(2, n.self, b);
      n.view(3, n.self, b, c);
      int ownership = n.ownership.size();
      int memberships = n.memberships.size();
      long checksum = n.node.state().ring().checksum();

      n.install(View.create(b, 2, n.self, b)); // view 2 again, from another coordinator, late
      n.install(View.create(n.self, 3, n.self, b)); // and one with view 3's id but not its members

      assertEquals(3, n.node.state().viewId(), "the newest view stays installed");
      assertEquals(checksum, n.node.state().ring().checksum(), "with its ring: c is still in it");
      assertEquals(ownership, n.ownership.size(), "listeners hear nothing of the late views");
      assertEquals(memberships, n.memberships.size());

      n.view(4, n.self, b); // c leaves: from view 3, the last one installed
      assertEquals(4, n.node.state().viewId());
      assertEquals(3, n.lastMembership().previousViewId());
      assertEquals(List.of("c"), n.lastMembership().left().stream().map(m -> m.id()).toList());
      assertEquals(3, n.lastOwnership().previousViewId());
      for (OwnershipChange change : n.ownership) {
        assertTrue(change.previousViewId() < change.viewId(), change.toString());
      }
    }
  }

  @Test
  void afterARejoin_viewIdsStartAgain_andTheNewViewsAreInstalled() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.view(5, n.self, b);

      // This node rejoins as a new JGroups member, into a cluster whose views count from 2.
      Address rejoined = n.metadata.newAddress();
      n.node.setLocalAddress(rejoined);
      Address d = meta("d").newAddress();
      n.install(View.create(d, 2, d, rejoined));

      assertEquals(2, n.node.state().viewId(), "another member, another sequence of views");
      assertTrue(n.node.state().ring().contains("d"));
      assertFalse(n.node.state().ring().contains("b"));
    }
  }
}
