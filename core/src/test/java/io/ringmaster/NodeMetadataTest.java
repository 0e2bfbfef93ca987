package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import java.util.Optional;
import org.jgroups.Address;
import org.jgroups.stack.IpAddress;
import org.jgroups.util.ExtendedUUID;
import org.junit.jupiter.api.Test;

/**
 * {@link NodeMetadata} read back from a member's address: the edges of what a ring can use, which
 * decide on every member alike whether a peer is in the ring or refused as unreadable, and how a
 * member is named in a refusal.
 */
class NodeMetadataTest {

  private static NodeMetadata meta(double weight, int virtualNodes, int replicas) {
    return new NodeMetadata("a", weight, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, virtualNodes, replicas,
        "", "");
  }

  private static Optional<NodeMetadata> readBack(NodeMetadata m) {
    return NodeMetadata.from(m.newAddress());
  }

  /** One virtual node, one replica, and as many tokens as a member may have: each a ring can use. */
  @Test
  void from_readsMetadataAtTheEdgesOfWhatARingCanUse() {
    for (NodeMetadata m : new NodeMetadata[] {
        meta(1, 1, 1),
        meta(1, HashRing.MAX_TOKENS_PER_MEMBER, 2),
        meta(2, HashRing.MAX_TOKENS_PER_MEMBER / 2, 2)}) {
      assertEquals(Optional.of(m), readBack(m), m.toString());
    }
  }

  /** One past each edge, each alone: no virtual node, no replica, a virtual node or a token too many. */
  @Test
  void from_leavesOutMetadataOnePastEachEdge() {
    for (NodeMetadata m : new NodeMetadata[] {
        meta(1, 0, 2),
        meta(1, 1, 0),
        meta(0.5, HashRing.MAX_TOKENS_PER_MEMBER + 1, 2), // 2^23 + 1 tokens: the virtual nodes alone are too many
        meta(2.0 + 2.0 / HashRing.MAX_TOKENS_PER_MEMBER, HashRing.MAX_TOKENS_PER_MEMBER / 2, 2)}) {
      assertEquals(Optional.empty(), readBack(m), m.toString());
    }
  }

  /** A member is named by the id it announces and its whole JGroups UUID; an address of no node by "?". */
  @Test
  void describe_namesTheIdAndTheWholeUuid() {
    ExtendedUUID address = meta(1, 64, 2).newAddress();
    assertEquals("a (" + address.toStringLong() + ")", NodeMetadata.describe(address));
    Address plain = new IpAddress(7800);
    assertEquals("? (" + plain + ")", NodeMetadata.describe(plain));
  }
}
