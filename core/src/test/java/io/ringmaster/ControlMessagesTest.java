package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jgroups.Message;
import org.junit.jupiter.api.Test;

/**
 * The node's own messages (the checksum gossip, the ring before a view told to newcomers, and "not
 * listed" told to a member of a split view) go out of band and past flow control: an application whose traffic to a slow member used up the
 * credits they share must not hold the gossip thread. Real nodes on the in-JVM stack, with a
 * {@link WireTap} at the top of a node's stack, where the node's sends enter it. The fourth type,
 * a refused member's query, is checked where a member is refused, in
 * {@link MisconfiguredMergeTest}.
 */
class ControlMessagesTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  static final short OOB_NO_FC = (short) (Message.Flag.OOB.value() | Message.Flag.NO_FC.value());

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
      for (byte type : new byte[] {Gossip.TYPE_CHECKSUM, Gossip.TYPE_RING_BEFORE}) {
        for (WireTap.Seen seen : sent(tap, type)) {
          assertEquals(OOB_NO_FC, (short) (seen.flags() & OOB_NO_FC), "message type " + type + ", flags " + seen.flags());
        }
      }
    }
  }

  /** "Not listed", told to a member whose view of the same id lists members whose views do not list it. */
  @Test
  void notListed_goesOutOfBand_pastFlowControl() throws Exception {
    try (TestCluster cluster = new TestCluster("control-not-listed")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      List<WireTap> taps = new ArrayList<>();
      for (Ringmaster n : List.of(a, b)) {
        WireTap tap = new WireTap(probe -> false);
        n.channel().getProtocolStack().insertProtocolAtTop(tap);
        taps.add(tap);
      }
      SplitViewTest.splitOff(x, a, b); // x gossips its view to a or b, which does not list it
      await("a or b told x it is not listed").atMost(WAIT)
          .until(() -> taps.stream().anyMatch(t -> !sent(t, Gossip.TYPE_NOT_LISTED).isEmpty()));
      for (WireTap tap : taps) {
        for (WireTap.Seen seen : sent(tap, Gossip.TYPE_NOT_LISTED)) {
          assertEquals(OOB_NO_FC, (short) (seen.flags() & OOB_NO_FC), "flags " + seen.flags());
        }
      }
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT); // x rejoined: the split is over
    }
  }

  /** The node's messages of one type that went down past the tap. */
  static List<WireTap.Seen> sent(WireTap tap, byte type) {
    return tap.sentDown.stream().filter(s -> s.payload().length > 0 && s.payload()[0] == type).toList();
  }
}
