package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code /ring}'s agreement ({@link RingView#reply}): the members agree only if each has reported
 * this peer's view and checksum (recently); the page marks each member that does not. A real node
 * in this JVM (the in-memory JGroups stack), and a directory fed reports by hand.
 */
class RingViewTest {
  private final List<InJvmPeer> nodes = new ArrayList<>();
  private InJvmPeer a;
  private PeerDirectory directory;
  private RingView view;
  private Address from;

  @BeforeEach
  void startOnePeer() throws Exception {
    InJvmPeer.startAll(nodes, "ring-view", List.of("a"));
    a = nodes.get(0);
    directory = new PeerDirectory(sequence -> null, new Rpc(null, null, null), id -> Optional.empty(),
        () -> Optional.of(UUID.randomUUID()));
    view = new RingView(a.node(), directory, () -> true, List::of);
    from = a.node().channel().getAddress();
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(nodes);
  }

  @Test
  void aMemberThatHasNotReported_isNoAgreement() {
    RingView.RingReply reply = view.reply(false);
    assertFalse(reply.agreed());
    assertEquals(List.of(), reply.peers());
    assertNull(reply.members().get(0).primaryKeys(), "no counts without a report");
  }

  @Test
  void aReportOfThisView_andChecksum_agrees_andItsCountsAreTheMembers() {
    long viewId = a.node().viewId();
    directory.accept(from, new Wire.PeerStatus("a", viewId, a.node().ring().checksum(), 5, 7, 0, 0, 1));
    RingView.RingReply reply = view.reply(false);
    assertTrue(reply.agreed(), reply::toString);
    assertTrue(reply.peers().get(0).agrees());
    assertEquals(5L, reply.members().get(0).primaryKeys());
    assertEquals(7L, reply.members().get(0).backupKeys());
  }

  /**
   * A member's entry shows what its report said: the checksum in hex (as the ring's own), and the
   * view, whether or not they are this peer's.
   */
  @Test
  void aMembersEntry_showsTheChecksumInHex_andTheViewOfItsReport() {
    long viewId = a.node().viewId();
    long reported = 0xfedcba9876543210L; // negative: hex of its 64 bits, no sign
    directory.accept(from, new Wire.PeerStatus("a", viewId + 1, reported, 0, 0, 0, 0, 1));
    RingView.MemberInfo member = view.reply(false).members().get(0);
    assertEquals("fedcba9876543210", member.checksum());
    assertEquals(viewId + 1, member.viewId());
    assertEquals("fedcba9876543210", view.reply(false).peers().get(0).checksum());
  }

  @Test
  void aReportOfAnotherChecksum_orAnotherView_isADivergence() {
    long viewId = a.node().viewId();
    long checksum = a.node().ring().checksum();
    for (Wire.PeerStatus other : List.of(new Wire.PeerStatus("a", viewId, checksum + 1, 0, 0, 0, 0, 1),
        new Wire.PeerStatus("a", viewId - 1, checksum, 0, 0, 0, 0, 2))) {
      directory.accept(from, other);
      RingView.RingReply reply = view.reply(false);
      assertFalse(reply.agreed(), other::toString);
      assertFalse(reply.peers().get(0).agrees(), other::toString);
      assertTrue(reply.peers().get(0).recent(), "a report just made");
    }
  }
  /**
   * A member that stopped reporting is neither recent nor in agreement once its last report is
   * older than {@link PeerDirectory#FRESH_MILLIS}, though that report named this view and checksum.
   */
  @Test
  void aReportOlderThanFresh_isNeitherRecentNorAnAgreement() {
    directory.accept(from, new Wire.PeerStatus("a", a.node().viewId(), a.node().ring().checksum(), 0, 0, 0, 0, 1));
    assertTrue(view.reply(false).agreed(), "just reported");
    await("the report grows old").atMost(Duration.ofSeconds(30))
        .until(() -> !view.reply(false).peers().get(0).recent());
    RingView.RingReply reply = view.reply(false);
    assertFalse(reply.agreed());
    assertFalse(reply.peers().get(0).agrees());
    assertTrue(reply.peers().get(0).ageMillis() > PeerDirectory.FRESH_MILLIS, reply::toString);
  }

  /**
   * A ring of no members (the one the last peer's node leaves behind once it closed, while a request
   * in flight is still answered) is no agreement: no member reported this peer's view and checksum.
   */
  @Test
  void aRingOfNoMembers_isNoAgreement() {
    directory.accept(from, new Wire.PeerStatus("a", a.node().viewId(), a.node().ring().checksum(), 0, 0, 0, 0, 1));
    assertTrue(view.reply(false).agreed(), "a reported");
    a.node().close();

    RingView.RingReply reply = view.reply(false);
    assertEquals(List.of(), reply.members(), reply::toString);
    assertFalse(reply.agreed(), reply::toString);
  }

  /**
   * The reply names the peers a split cuts this one off from ({@code POST /admin/split}), sorted,
   * for the page to say so; none before the split nor after the heal.
   */
  @Test
  void aSplitInForce_namesThePeersCutOff_untilTheHeal() throws Exception {
    String cluster = a.node().config().clusterName();
    nodes.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties()));
    nodes.add(InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(nodes);
    Faults faults = Faults.of(true, a.node());
    RingView withFaults = new RingView(a.node(), directory, () -> true, faults::cutOffFrom);
    assertEquals(List.of(), withFaults.reply(false).cutOffFrom(), "no split yet");

    RingView.RingReply during;
    try {
      faults.split("{\"ids\": [\"c\", \"b\"]}");
      during = withFaults.reply(false);
    } finally {
      faults.heal(); // whatever the assertions say, the nodes close as one cluster
    }
    assertEquals(List.of("b", "c"), during.cutOffFrom());
    assertEquals(List.of(), withFaults.reply(false).cutOffFrom(), "healed");
  }

  /**
   * Each member's arcs on the page are its primary ranges in the ring of the reply, start then end,
   * and follow the ring when it changes (a second peer joins).
   */
  @Test
  void theArcs_areEachMembersPrimaryRanges_inTheRingOfTheReply() throws Exception {
    assertArcs(view.reply(true), a.node().ring());
    assertArcs(view.reply(true), a.node().ring()); // the same ring: its ranges as built for the first reply
    nodes.add(InJvmPeer.start(a.node().config().clusterName(), "b", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(nodes);
    assertEquals(2, a.node().ring().members().size());
    assertArcs(view.reply(true), a.node().ring());
  }

  private static void assertArcs(RingView.RingReply reply, HashRing ring) {
    Map<String, List<KeyRange>> byMember = ring.primaryRangesByMember();
    assertEquals(ring.members().size(), reply.members().size());
    for (RingView.MemberInfo m : reply.members()) {
      List<List<String>> expected = byMember.get(m.id()).stream()
          .map(r -> List.of(Long.toString(r.start()), Long.toString(r.end()))).toList();
      assertEquals(expected, m.ranges(), m.id());
    }
  }
}
