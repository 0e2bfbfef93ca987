package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A key handed off and handed straight back. With one replica, a loses a range to b, which just
 * joined, and pushes the range's keys there; b is stopped at once, and its leave hands them back to
 * a, their owner in the ring b leaves behind, before a has dropped them. b then drops them, since a
 * took them: a must not drop them too on the strength of b's earlier acknowledgement, or each
 * counts on the other and the key is left nowhere once b has gone. Two {@link InJvmPeer}s; each
 * peer's {@link Rebalancer} is called directly with the change its node would deliver.
 */
class HandBackTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void aKeyHandedBackBeforeTheDrop_isKeptByThePeerItWasHandedBackTo() throws Exception {
    startTwo("hand-back");
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    String key = a.keyOwnedBy(Set.of("b"));
    Entry held = Entry.of(key, "written before b joined", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(held);
    HashRing withB = a.node().ring();
    HashRing withoutB = withB.without("b");
    long view = a.node().viewId();
    OwnershipChange joinOfB = new OwnershipChange(OwnershipChange.Reason.VIEW, view - 1, view, withoutB, withB,
        RingDiff.compute(withoutB, withB, "a", 1));
    OwnershipChange leaveOfB = new OwnershipChange(OwnershipChange.Reason.LEAVING, view, view, withB, withoutB,
        RingDiff.compute(withB, withoutB, "b", 1));
    Rebalancer ofA = rebalancerOf(a);
    Rebalancer ofB = rebalancerOf(b);
    AtomicBoolean handedBack = new AtomicBoolean();
    // Once b has taken a's page, and before a drops what it took: b's leave, all of it.
    a.transfers().afterPage = page -> {
      if (handedBack.compareAndSet(false, true)) {
        ofB.onOwnershipChange(leaveOfB);
      }
    };

    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> ofA.onOwnershipChange(joinOfB));

    assertTrue(handedBack.get(), "b left during a's hand-off");
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), ofB.leaveOutcome(), "b handed all it held to a");
    assertEquals(Optional.empty(), b.store().get(key), "b dropped the key, which a took");
    assertEquals(Optional.of(held), a.store().get(key), "a, the key's owner once b has gone, still holds it");
  }

  /**
   * A push that a leaving peer refuses leaves its drops as they were: the sender keeps its copies,
   * so the leave can drop the copy it read. (A peer that stays pushes a leaver's keys back to it at
   * each sweep until it has left, its ring still giving them to the leaver: were those taken, the
   * leave's passes could keep finding keys they must not drop.)
   */
  @Test
  void aPushRefusedByALeavingPeer_leavesItsDropAsItWas() throws Exception {
    startTwo("hand-back-refused");
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    String key = a.keyOwnedBy(Set.of("b"));
    Entry read = Entry.of(key, "handed off", new Version(VersionClock.systemMicros(), "b"));
    b.store().merge(read);
    b.routing().startLeaving(); // b routes by the ring without it: a owns the key
    Entry equal = Entry.of(key, read.value(), read.version());
    a.store().merge(equal);

    assertEquals(Map.of(), a.transfers().pushToEach(Map.of("b", List.of(equal)), Wire.PushKind.SWEEP, () -> false),
        "b refuses: it is leaving");

    assertEquals(1, b.transfers().dropHandedOff(List.of(read), Map.of("a", b.routing().addressOf("a").orElseThrow())),
        "b drops the copy it read, which a took");
    assertEquals(Optional.empty(), b.store().get(key));
  }

  /** Peers a and b, one copy a key, in one cluster of their own, once both have one ring. */
  private void startTwo(String name) throws Exception {
    String cluster = InJvmPeer.clusterName(name);
    for (String id : List.of("a", "b")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(1)));
    }
    InJvmPeer.awaitOneRing(peers);
  }

  private static Rebalancer rebalancerOf(InJvmPeer p) {
    Routing routing = p.routing();
    PullRetries retries = new PullRetries(p.transfers()::pull, routing::isLive, routing::owns, routing::isLeaving,
        System::nanoTime, new EventLog());
    return new Rebalancer(routing, p.store(), p.transfers(), retries, p.counters(), new EventLog(),
        Duration.ofSeconds(15), p.pulls());
  }
}
