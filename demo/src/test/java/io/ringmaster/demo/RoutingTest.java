package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
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
    a.markLeaving("c", a.addressOf("c"));
    assertTrue(a.onlyLeaversLeft(), "z owns no key, so nobody is left to take a's");
    assertEquals(Set.of("a", "b", "c"), a.leavers().ids());
  }

  @Test
  void aLeaverRestartedUnderItsId_isRoutedToAgain() throws Exception {
    String cluster = InJvmPeer.clusterName("routing-restart");
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties()));
    }
    InJvmPeer.awaitOneRing(peers);
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
    String cluster = InJvmPeer.clusterName("routing-named");
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties()));
    }
    InJvmPeer.awaitOneRing(peers);
    Routing a = peers.get(0).routing();
    org.jgroups.util.UUID b = (org.jgroups.util.UUID) a.addressOf("b").orElseThrow();
    a.startLeaving();

    // Another process under the id "b" (one restarted, say): not the b here.
    assertTrue(a.accept(new Wire.Leavers(Map.of("b", UUID.randomUUID()))).isEmpty());
    assertTrue(a.ring().contains("b"));

    UUID bHere = new UUID(b.getMostSignificantBits(), b.getLeastSignificantBits());
    assertEquals(Map.of("b", bHere), a.accept(new Wire.Leavers(Map.of("b", bHere))).processes());
    assertFalse(a.ring().contains("b"), "the b here: a routes around it");
  }
}
