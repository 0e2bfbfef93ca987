package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
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
    for (String id : List.of("a", "b", "z")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(),
          builder -> id.equals("z") ? builder.weight(0) : builder));
    }
    InJvmPeer.awaitOneRing(peers);
    Routing a = peers.get(0).routing();
    assertEquals(3, a.ring().members().size(), "z is in the ring, with no tokens");

    a.startLeaving();
    assertFalse(a.onlyLeaversLeft(), "b stays, as far as a knows");
    a.markLeaving("b"); // b refused a push: it is leaving too
    assertTrue(a.onlyLeaversLeft(), "z owns no key, so nobody is left to take a's");
  }
}
