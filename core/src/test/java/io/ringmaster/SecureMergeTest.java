package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jgroups.Address;
import org.jgroups.EmptyMessage;
import org.jgroups.Message;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.FRAG2;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A partition and its merge on {@code secure-tcp.xml}: each side sees the other's members leave
 * its view, and the encryption closes their seal-number windows ({@link SealedCopies}: from then
 * on only numbers above the highest taken get through). The merge still has to: everything a
 * member sends after the heal is sealed under a new, higher number, retransmissions included,
 * since the reliable protocols (NAKACK2, UNICAST3) sit above the encryption and send a message
 * again through it, sealed anew. Three real members on 127.0.0.1, the partition made by DISCARD
 * just above the transport, below the encryption.
 */
class SecureMergeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String STACK = "ringmaster/jgroups/secure-tcp.xml";

  /**
   * {a, b} | {c} (the windows of each side's members closed; closing them again after a member
   * came back is {@link SealedCopiesTest}'s): each side forms a view of its own and gossips in it,
   * and a and c each send the other a message that cannot get through. After the heal every member
   * installs one view of three, with one ring and no member refused, the messages sent across the
   * partition arrive (retransmitted through the encryption), and the encryption has dropped nothing
   * of a member as a copy.
   */
  @Test
  void aPartitionOfTwoAndOne_healed_mergesIntoOneRing_withTheMessagesSentApartDelivered() throws Exception {
    try (EncryptionLog drops = new EncryptionLog();
         TestCluster cluster = new TestCluster("secure-merge")) {
      List<Ringmaster> all = new ArrayList<>();
      // Failure detection quicker than the stack's 5 s, so that each side installs its view sooner.
      SystemProperties.with(Map.of("ringmaster.fd.timeout", "2s", "ringmaster.fd.interval", "500ms"), List.of(), () -> {
        for (String id : List.of("a", "b", "c")) {
          all.add(cluster.start(cluster.builder(id).jgroupsConfig(STACK).bindPort(7975 + all.size())
              .initialHosts("127.0.0.1[7975]").secret("s3cret-merge")));
        }
        return null;
      });
      Ringmaster a = all.get(0);
      Ringmaster b = all.get(1);
      Ringmaster c = all.get(2);
      TestCluster.awaitAgreement(all, 3, WAIT);
      // At the top of each stack: probes sent through a whole stack arrive here, and go no further.
      WireTap aTop = top(a);
      WireTap bTop = top(b);
      WireTap cTop = top(c);
      Address toA = a.channel().getAddress();
      Address toC = c.channel().getAddress();

      TestCluster.partition(List.of(a, b), List.of(c));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      TestCluster.awaitAgreement(List.of(c), 1, WAIT);
      assertEquals(Set.of("a", "b"), ids(a));

      // Traffic on each side, and across it: the messages across are sent again until taken.
      long gossipOfB = b.stats().gossipReceived();
      a.channel().send(WireTap.probe(null, "a to its side"));
      a.channel().send(WireTap.probe(toC, "a to c"));
      c.channel().send(WireTap.probe(toA, "c to a"));
      String toItsSide = "wiretap:a to its side";
      await("a's message to its side, at b").atMost(WAIT).until(() -> bTop.probesUp().contains(toItsSide));
      await("gossip between a and b").atMost(WAIT).until(() -> b.stats().gossipReceived() >= gossipOfB + 3);
      assertFalse(cTop.probesUp().contains("wiretap:a to c"), "a's message crossed the partition");
      assertFalse(aTop.probesUp().contains("wiretap:c to a"), "c's message crossed the partition");

      TestCluster.heal(all);
      try {
        TestCluster.awaitAgreement(all, 3, WAIT);
        await("the messages sent across the partition, delivered").atMost(WAIT)
            .until(() -> cTop.probesUp().contains("wiretap:a to c")
                && aTop.probesUp().contains("wiretap:c to a"));
      } catch (AssertionError | RuntimeException e) {
        throw new AssertionError("what the encryption logged: " + drops.lines, e);
      }
      for (Ringmaster n : all) {
        assertEquals(Set.of("a", "b", "c"), ids(n), n.localMember().id());
        assertEquals(0, n.stats().refusedMembers(), n.localMember().id() + " refused a member");
        assertEquals(3, n.channel().getView().size(), n.localMember().id() + "'s view");
      }
      List<String> copies = drops.lines.stream().filter(l -> l.contains("a copy of one taken")).toList();
      assertEquals(List.of(), copies, "messages of members dropped as copies");
    }
  }

  /**
   * The token AUTH puts on this node's merge request comes back up unread when the request is to
   * this node itself, as the merge leader's is: UNICAST3 hands a message to itself back up above
   * the encryption, so nothing is written out or read in. It admits this node as the sender, and
   * no other address.
   */
  @Test
  void theNodesOwnTokenNeverWritten_admitsItsMergeRequestToItself_underNoOtherSender() throws Exception {
    Address self = UUID.randomUUID();
    SharedSecretAuthToken token = SecureStackTest.token(self, "s3cret-merge");
    assertTrue(token.authenticate(token, mergeRequest(self, self)), "its own merge request, to itself");
    Address other = UUID.randomUUID();
    assertFalse(token.authenticate(token, mergeRequest(other, self)), "the same token under another sender");
  }

  private static Message mergeRequest(Address from, Address to) {
    return new EmptyMessage(to).setSrc(from).putHeader(ClassConfigurator.getProtocolId(GMS.class),
        new GMS.GmsHeader(GMS.GmsHeader.MERGE_REQ).mbr(from));
  }

  /** A tap at the very top of the node's stack, above FRAG2, that keeps every probe from the node. */
  private static WireTap top(Ringmaster node) throws Exception {
    WireTap tap = new WireTap(p -> true);
    node.channel().getProtocolStack().insertProtocol(tap, ProtocolStack.Position.ABOVE, FRAG2.class);
    return tap;
  }

  private static Set<String> ids(Ringmaster node) {
    return node.members().stream().map(Member::id).collect(Collectors.toSet());
  }
}
