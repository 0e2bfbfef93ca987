package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link Incoming}: which peers a key is still coming in from, and for how long. */
class IncomingTest {
  private final HashRing before = HashRing.builder().virtualNodes(64).add(Member.of("a")).build();
  private final HashRing after = HashRing.builder().virtualNodes(64).add(Member.of("a")).add(Member.of("b")).build();
  private final OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, before, after,
      RingDiff.compute(before, after, "b", 1));

  /** A key b owns after the join, and one a keeps. */
  private String key(String owner) {
    for (int i = 0; ; i++) {
      if (after.ownerOf("k" + i).id().equals(owner)) {
        return "k" + i;
      }
    }
  }

  @Test
  void aGainedKey_comesInFromItsPreviousOwner_untilTheChangeIsDone() {
    Incoming incoming = new Incoming("b", 1, position -> List.of());
    assertEquals(List.of(), incoming.previousOwners(key("b")), "nothing published yet");
    incoming.arrived(join);
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
    assertEquals(List.of(), incoming.previousOwners(key("a")), "a key b did not gain");
    incoming.done(join);
    assertEquals(List.of(), incoming.previousOwners(key("b")));
  }

  @Test
  void aChangeDoneBeforeItWasNotedAsArrived_leavesNothingPending() {
    Incoming incoming = new Incoming("b", 1, position -> List.of());
    incoming.done(join); // a busy rebalancer took it up before the other listener ran
    incoming.arrived(join);
    assertEquals(0, incoming.pendingChanges());
    assertEquals(List.of(), incoming.previousOwners(key("b")));
    incoming.arrived(join); // published again (another change, say): noted this time
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
  }

  @Test
  void aPullBeingRetried_namesItsSource_butNeverThisPeer() {
    Incoming incoming = new Incoming("b", 1, position -> List.of("c", "b"));
    assertEquals(List.of("c"), incoming.previousOwners(key("b")));
    incoming.arrived(join);
    assertEquals(List.of("a", "c"), incoming.previousOwners(key("b")));
  }
}
