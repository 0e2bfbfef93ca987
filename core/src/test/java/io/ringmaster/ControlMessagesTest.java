package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import org.jgroups.Message;
import org.junit.jupiter.api.Test;

/**
 * The node's own messages (the checksum gossip, and the ring before a view told to newcomers) go
 * out of band and past flow control: an application whose traffic to a slow member used up the
 * credits they share must not hold the gossip thread. Real nodes on the in-JVM stack, with a
 * {@link WireTap} at the top of one node's stack, where the node's sends enter it. The other two
 * types ("not listed" and its query) take the same path ({@code Gossip.control}), and need a split
 * view or a refused member to be sent.
 */
class ControlMessagesTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @Test
  void checksumsAndTheRingBeforeAView_goOutOfBand_pastFlowControl() {
    try (TestCluster cluster = new TestCluster("control-messages")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      WireTap tap = new WireTap(probe -> false);
      a.channel().getProtocolStack().insertProtocolAtTop(tap);
      Ringmaster c = cluster.start("c"); // a, an old member, tells c the ring before c's view
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
      await("a checksum, and the ring before c's view, sent by a").atMost(WAIT)
          .until(() -> sent(tap, Gossip.TYPE_CHECKSUM).size() >= 1 && sent(tap, Gossip.TYPE_RING_BEFORE).size() >= 1);
      short wanted = (short) (Message.Flag.OOB.value() | Message.Flag.NO_FC.value());
      for (byte type : new byte[] {Gossip.TYPE_CHECKSUM, Gossip.TYPE_RING_BEFORE}) {
        for (WireTap.Seen seen : sent(tap, type)) {
          assertEquals(wanted, (short) (seen.flags() & wanted), "message type " + type + ", flags " + seen.flags());
        }
      }
    }
  }

  /** The node's messages of one type that went down past the tap. */
  private static List<WireTap.Seen> sent(WireTap tap, byte type) {
    return tap.sentDown.stream().filter(s -> s.payload().length > 0 && s.payload()[0] == type).toList();
  }
}
