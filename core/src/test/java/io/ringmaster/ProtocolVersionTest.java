package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.logging.Level;
import org.jgroups.Address;
import org.jgroups.util.ExtendedUUID;
import org.junit.jupiter.api.Test;

/**
 * Members of builds whose membership rules differ ({@link Ringmaster#PROTOCOL_VERSION}) would each
 * compute another ring from the same view: each refuses the others, naming both versions, and
 * keeps them out of its ring, as for different ring parameters. A build from before the protocol
 * version announced its spec version alone in the parameters' first int, which reads as version
 * 0; and it reads this build's first int as another spec version, so it refuses this build too.
 */
class ProtocolVersionTest {
  @Test
  void membersOfAnotherProtocolVersion_orOfABuildBeforeVersions_areRefused_namingBothVersions() throws Exception {
    NodeMetadata next = meta("next");
    next = new NodeMetadata(next.id(), next.weight(), next.zone(), next.specVersion(), Ringmaster.PROTOCOL_VERSION + 1,
        next.virtualNodes(), next.replicas(), next.applicationVersion(), next.endpoint());
    ExtendedUUID before = meta("before").newAddress();
    before.put("rm.p", ByteBuffer.allocate(12).putInt(HashRing.SPEC_VERSION).putInt(64).putInt(2).array());
    // What such a build reads from this one's: three ints, the first its spec version.
    ByteBuffer read = ByteBuffer.wrap(meta("a").newAddress().get("rm.p"));
    assertNotEquals(HashRing.SPEC_VERSION, read.getInt(), "a build from before sees another spec version");
    assertEquals(List.of(64, 2), List.of(read.getInt(), read.getInt()), "and the same virtualNodes and replicas");
    try (FedNode a = new FedNode(meta("a"))) {
      a.view(1, a.self);
      a.view(2, a.self, next.newAddress(), before, meta("b").newAddress());

      assertEquals(List.of("a", "b"), a.node.state().ring().members().stream().map(Member::id).toList());
      List<String> reasons = a.lastMembership().refused().stream().map(MembershipChange.Refusal::reason).toList();
      assertEquals(List.of(
          "membership protocol: " + (Ringmaster.PROTOCOL_VERSION + 1) + " on next, " + Ringmaster.PROTOCOL_VERSION + " on a",
          "membership protocol: 0 (a build from before protocol versions) on before, " + Ringmaster.PROTOCOL_VERSION
              + " on a"),
          reasons.stream().map(r -> r.substring(r.indexOf("membership protocol: "))).toList(), reasons::toString);
    }
  }

  /**
   * A member of another ring spec version places its tokens by other rules: admitted, it would
   * give the members two rings under one view. It is refused, naming both versions.
   */
  @Test
  void membersOfAnotherRingSpecVersion_areRefused_namingBothVersions() throws Exception {
    NodeMetadata m = meta("later-spec");
    NodeMetadata laterSpec = new NodeMetadata(m.id(), m.weight(), m.zone(), HashRing.SPEC_VERSION + 1,
        m.protocolVersion(), m.virtualNodes(), m.replicas(), m.applicationVersion(), m.endpoint());
    try (FedNode a = new FedNode(meta("a"))) {
      a.view(1, a.self);
      a.view(2, a.self, laterSpec.newAddress(), meta("b").newAddress());

      assertEquals(List.of("a", "b"), a.node.state().ring().members().stream().map(Member::id).toList());
      List<String> reasons = a.lastMembership().refused().stream().map(MembershipChange.Refusal::reason).toList();
      assertEquals(1, reasons.size(), reasons::toString);
      assertTrue(reasons.get(0).contains("ring spec version: " + (HashRing.SPEC_VERSION + 1) + " on later-spec, "
          + HashRing.SPEC_VERSION + " on a"), reasons::toString);
    }
  }

  /**
   * A member whose metadata this build cannot read (here without a weight, as a later build that
   * changed what it announces might be) is left out of the ring on every member alike, and reported
   * as refused by the id it announces, once while it stays in the view (a WARNING, the membership
   * change, the stats), so that an operator sees why.
   */
  @Test
  void aMemberWhoseMetadataCannotBeRead_isLeftOut_andSaidOnce() throws Exception {
    ExtendedUUID unreadable = meta("later").newAddress();
    unreadable.remove("rm.w");
    try (FedNode a = new FedNode(meta("a"));
         NodeLog log = new NodeLog(r -> r.getLevel() == Level.WARNING
             && String.valueOf(r.getParameters() == null ? "" : r.getParameters()[r.getParameters().length - 1])
             .contains("cannot read"))) {
      a.view(1, a.self);
      Address b = meta("b").newAddress();
      a.view(2, a.self, unreadable, b);
      a.view(3, a.self, unreadable, b, meta("c").newAddress());

      assertEquals(List.of("a", "b", "c"), a.node.state().ring().members().stream().map(Member::id).toList());
      assertEquals(1, log.records().size(), () -> log.records().stream().map(r -> r.getMessage()).toList().toString());
      assertTrue(String.valueOf(log.records().get(0).getParameters()[1]).startsWith("later ("), "named");
      MembershipChange joined = a.memberships.get(1);
      assertEquals(List.of("later"), joined.refused().stream().map(MembershipChange.Refusal::nodeId).toList());
      assertTrue(joined.refused().get(0).reason().contains("this build cannot read"), joined.refused()::toString);
      assertEquals(List.of(), a.lastMembership().refused(), "reported once while it stays");
      assertEquals(List.of("later"), a.node.state().refused().stream().map(MembershipChange.Refusal::nodeId).toList(),
          "still refused");
      assertEquals(1, a.node.refusals.get());
    }
  }
}
