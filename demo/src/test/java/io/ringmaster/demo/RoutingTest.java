package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Routing} while a peer leaves, on real nodes in this JVM ({@link InJvmPeer}). */
class RoutingTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void theLastPeersLeaving_seeOnlyLeaversLeft_aPeerOfWeightZeroOwningNothingNotCounted() throws Exception {
    String cluster = InJvmPeer.clusterName("routing");
    for (String id : List.of("a", "b", "c", "z")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(),
          builder -> id.equals("z") ? builder.weight(0) : builder));
    }
    InJvmPeer.awaitOneRing(peers);
    Routing a = peers.get(0).routing();
    assertEquals(4, a.ring().members().size(), "z is in the ring, with no tokens");

    a.startLeaving();
    a.markLeaving("b", a.addressOf("b")); // b refused a push: it is leaving too
    assertFalse(a.onlyLeaversLeft(), "c stays");
    HashRing base = peers.get(0).node().ring();
    assertEquals(base.without("a").without("b").checksum(), a.ring().checksum(), "routes around a and b");
    a.markLeaving("c", a.addressOf("c"));
    assertTrue(a.onlyLeaversLeft(), "z owns no key, so nobody is left to take a's");
    assertEquals(base.without("a").without("b").checksum(), a.ring().checksum(),
        "c kept: without it no member would own anything, and a leaver is better than none");
    Map<String, UUID> processes = new HashMap<>();
    for (String id : List.of("a", "b", "c")) {
      processes.put(id, process(a, id));
    }
    assertEquals(processes, a.leavers().processes(), "each leaver with the process found leaving");
  }

  /** The UUID of the process that holds {@code id}, as {@code routing} sees it. */
  private static UUID process(Routing routing, String id) {
    org.jgroups.util.UUID address = (org.jgroups.util.UUID) routing.addressOf(id).orElseThrow();
    return new UUID(address.getMostSignificantBits(), address.getLeastSignificantBits());
  }

  /**
   * Once a leaving peer's node has closed, its node answers for the ring it left behind (without
   * it), yet the peer is still no peer the cluster refuses: it still counts itself in the ring, as
   * leaving, and routes by the ring without it.
   */
  @Test
  void aLeaverWhoseNodeClosed_staysInTheRingAsLeaving() throws Exception {
    InJvmPeer.startAll(peers, "routing-closed", List.of("a", "b", "c"));
    Routing a = peers.get(0).routing();
    a.startLeaving();
    assertEquals(Set.of("a"), a.leavers().ids(), "a leaving peer names itself");
    a.nodeClosing();
    peers.get(0).node().close();

    assertFalse(peers.get(0).node().isInRing(), "the node left the ring");
    assertFalse(peers.get(0).node().ring().contains("a"));
    assertTrue(a.inRing(), "the peer is leaving, not refused");
    assertTrue(a.isSelf("a"));
    assertEquals(List.of("b", "c"), a.ring().members().stream().map(m -> m.id()).sorted().toList());
  }

  /**
   * Only {@link Routing#nodeClosing} keeps a peer in the ring once its node has closed: it notes
   * the node in the ring as the peer begins to close it. A node that closed without that note (as
   * for a peer the cluster refused when it began to close: nodeClosing then notes nothing) leaves
   * the peer out of the ring: its id names no process of its, and it owns nothing.
   */
  @Test
  void aPeerWhoseNodeClosed_withoutNotingItInTheRing_isNotInTheRing() throws Exception {
    InJvmPeer.startAll(peers, "routing-closed-unnoted", List.of("a", "b"));
    Routing a = peers.get(0).routing();
    assertTrue(a.inRing(), "in the ring while its node is");

    peers.get(0).node().close();

    assertFalse(peers.get(0).node().isInRing(), "the node left the ring");
    assertFalse(a.inRing(), "nothing noted it in the ring as it closed");
    assertFalse(a.isSelf("a"), "its id is no longer this peer");
    assertEquals(-1, a.indexOfSelf(List.of("a", "b")), "and owns nothing");
  }

  /**
   * The ring a leaving peer routes by follows the cluster's: a peer that stops meanwhile is routed
   * around, though the leavers it knows of are the same (its derived ring is not kept past a new
   * cluster ring).
   */
  @Test
  void aLeavingPeer_routesAroundAPeerThatStoppedMeanwhile() throws Exception {
    InJvmPeer.startAll(peers, "routing-follows", List.of("a", "b", "c"));
    Routing a = peers.get(0).routing();
    a.startLeaving();
    assertEquals(List.of("b", "c"), a.ring().members().stream().map(m -> m.id()).sorted().toList());

    peers.remove(2).close();
    await().atMost(Duration.ofSeconds(20)).until(() -> peers.get(0).node().ring().members().size() == 2);

    assertEquals(peers.get(0).node().ring().without("a").checksum(), a.ring().checksum(), "the ring without a, of now");
    assertEquals(List.of("b"), a.ring().members().stream().map(m -> m.id()).toList(), "c is gone");
  }

  /**
   * Whether this peer owns a range (by its last position): as an owner in the ring it routes by,
   * and in the ring at all. A leaving peer owns nothing in the ring it leaves behind, nor does a
   * peer out of the ring.
   */
  @Test
  void owns_aRangeOnlyAsOneOfItsOwners_inTheRingItRoutesBy() throws Exception {
    InJvmPeer.startAll(peers, "routing-owns", List.of("a", "b", "c"));
    Routing a = peers.get(0).routing();
    HashRing ring = peers.get(0).node().ring();
    Member memberA = ring.member("a").orElseThrow();
    KeyRange mine = ring.primaryRangesByMember().get("a").get(0);
    KeyRange others = ring.primaryRangesByMember().get("b").stream()
        .filter(r -> !ring.ownersOfPosition(r.end(), 2).contains(memberA)).findFirst().orElseThrow();
    assertTrue(a.owns(mine), "its primary range");
    assertFalse(a.owns(others), "a range only b and c own");

    a.startLeaving();
    assertFalse(a.owns(mine), "the ring it leaves behind has no a");
    peers.get(0).node().close(); // nothing noted it in the ring: it is out of it
    assertFalse(a.inRing());
    assertFalse(a.owns(mine));
  }

  @Test
  void aLeaverRestartedUnderItsId_isRoutedToAgain() throws Exception {
    InJvmPeer.startAll(peers, "routing-restart", List.of("a", "b", "c"));
    String cluster = peers.get(0).node().config().clusterName();
    Routing a = peers.get(0).routing();
    a.startLeaving();
    Optional<Address> oldB = a.addressOf("b");
    a.markLeaving("b", oldB);
    assertFalse(a.ring().contains("b"), "a routes around b");

    peers.remove(1).close(); // b stops, and a new process takes its id
    InJvmPeer newB = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties());
    peers.add(newB);
    await().atMost(Duration.ofSeconds(20)).until(() -> newB.node().isInRing()
        && !a.addressOf("b").equals(oldB) && a.addressOf("b").equals(newB.routing().addressOf("b")));

    assertTrue(a.ring().contains("b"), "the new b is not leaving");
    assertEquals(Set.of("a"), a.leavers().ids());
  }

  @Test
  void leaversNamedInAWrite_areMarked_onlyIfTheirIdNamesTheSameProcessHere() throws Exception {
    InJvmPeer.startAll(peers, "routing-named", List.of("a", "b", "c"));
    Routing a = peers.get(0).routing();
    UUID bHere = process(a, "b");
    UUID cHere = process(a, "c");
    a.startLeaving();

    // Another process under the id (one restarted, say), differing in either half: not the one here.
    UUID otherC = new UUID(cHere.getMostSignificantBits() ^ 1, cHere.getLeastSignificantBits());
    UUID otherB = new UUID(bHere.getMostSignificantBits(), bHere.getLeastSignificantBits() ^ 1);
    assertTrue(a.accept(new Wire.Leavers(Map.of("b", otherB, "c", otherC))).isEmpty());
    assertTrue(a.ring().contains("b") && a.ring().contains("c"));

    assertEquals(Map.of("b", bHere), a.accept(new Wire.Leavers(Map.of("b", bHere, "c", otherC))).processes());
    assertFalse(a.ring().contains("b"), "the b here: a routes around it");
    assertTrue(a.ring().contains("c"), "another c than the one here");
  }
}
