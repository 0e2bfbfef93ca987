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
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A leave's hand-off ({@link Rebalancer} on a LEAVING change): everything the leaving peer holds
 * goes to the owners it leaves behind, pass after pass while they refuse it (each push tried
 * {@link Transfers#ATTEMPTS} times), until the leave budget is spent. Two {@link InJvmPeer}s,
 * replicas 2, so b owns every key once a leaves; a's rebalancer is called directly with the
 * change its node would deliver.
 */
class RebalancerTest {
  private static final int KEYS = 5;
  private final String cluster = InJvmPeer.clusterName("rebalancer");
  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private TestingAids aidsOfB;
  private final EventLog eventsOfA = new EventLog();

  /** Starts a and b; b refuses its first {@code handoffsBRefuses} hand-off pushes; a holds KEYS entries. */
  private List<Entry> start(int handoffsBRefuses) throws Exception {
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    aidsOfB = InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, String.valueOf(handoffsBRefuses));
    peers.add(b = InJvmPeer.start(cluster, "b", aidsOfB));
    InJvmPeer.awaitOneRing(peers);
    return putInA();
  }

  /** KEYS entries, stored in a's store only. */
  private List<Entry> putInA() {
    List<Entry> held = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      Entry e = Entry.of("key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "a"));
      a.store().merge(e);
      held.add(e);
    }
    return held;
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /** a's rebalancer, with this leave budget. */
  private Rebalancer rebalancerOfA(Duration leaveBudget) {
    Routing routing = a.routing();
    PullRetries retries = new PullRetries(a.transfers()::pull, routing::isLive, routing::owns, routing::isLeaving,
        System::nanoTime);
    return new Rebalancer(routing, a.store(), a.transfers(), retries, a.counters(), eventsOfA, leaveBudget);
  }

  /** The change a's node delivers when a leaves: everything it owns, lost to b. */
  private OwnershipChange leavingOfA() {
    HashRing before = a.node().ring();
    HashRing after = before.without("a");
    long view = a.node().viewId();
    return new OwnershipChange(OwnershipChange.Reason.LEAVING, view, view, before, after,
        RingDiff.compute(before, after, "a", 2));
  }

  @Test
  void aLeave_whoseHandOffIsRefused_passesAgain_untilTheNewOwnerTakesEverything() throws Exception {
    // Each push tries Transfers.ATTEMPTS times: the hand-off fails, then the drain's first pass;
    // its second pass is taken.
    List<Entry> held = start(2 * Transfers.ATTEMPTS + 2);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));

    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(leavingOfA()));

    assertTrue(eventsOfA.recent().stream().anyMatch(json -> json.contains("\"direction\":\"out\"")
        && json.contains("\"keys\":0") && json.contains("\"ok\":false")),
        "the hand-off failed first: " + eventsOfA.recent());
    assertEquals(0, aidsOfB.handoffsLeftToRefuse());
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what b took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsFailed.sum());
    assertTrue(a.routing().isLeaving());
  }

  /**
   * A peer that joins while a leaves: a's LEAVING change, computed before c joined, names only b as
   * the new owner, but once c is in, c owns every key too (two replicas, two peers left). The
   * hand-off to b alone must not drop a's copies: the drain hands them to c as well. (These peers
   * have no rebalancer, so c pulls nothing: as a real c whose pulls from a were over before a
   * stored the entries by its old ring.)
   */
  @Test
  void aPeerThatJoinsDuringTheLeave_getsTheEntriesTheLeaveNamedOnlyOthersFor() throws Exception {
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(b = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(peers);
    OwnershipChange staleLeave = leavingOfA();
    InJvmPeer c = InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties());
    peers.add(c);
    InJvmPeer.awaitOneRing(peers);
    List<Entry> held = putInA();

    assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> rebalancerOfA(Duration.ofSeconds(15)).onOwnershipChange(staleLeave));

    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
      assertEquals(Optional.of(e), c.store().get(e.key()), "c, which joined during the leave, took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what both owners took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
  }

  /**
   * A push of several pages to b, whose process is replaced under its id after the first page: the
   * new process never got that page, so the push starts again at it, and reports success only once
   * the new process holds every entry. (Sent by id page after page, the later pages would reach the
   * new process and the push would succeed without the first page's entries there.)
   */
  @Test
  void aPush_toAPeerRestartedBetweenPages_startsAgainAtItsNewProcess() throws Exception {
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(b = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(peers);
    List<Entry> entries = new ArrayList<>();
    String big = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    for (int i = 0; i < 6; i++) { // three pages
      entries.add(Entry.of("big-" + i, big + i, new Version(VersionClock.systemMicros(), "a")));
    }
    List<Integer> pagesAcked = new ArrayList<>();
    AtomicReference<InJvmPeer> restarted = new AtomicReference<>();
    a.transfers().afterPage = page -> {
      pagesAcked.add(page);
      if (page == 1 && restarted.get() == null) {
        try {
          b.close();
          peers.remove(b);
          InJvmPeer again = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties());
          peers.add(again);
          restarted.set(again);
          InJvmPeer.awaitOneRing(peers);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      }
    };

    assertTrue(a.transfers().push("b", entries, Wire.PushKind.MIGRATION), "the push to b's new process");

    assertEquals(List.of(1, 1, 2, 3), pagesAcked, "page 1 to the old process, then all three to the new one");
    for (Entry e : entries) {
      assertEquals(Optional.of(e), restarted.get().store().get(e.key()), "b's new process holds " + e.key());
    }
  }

  @Test
  void aLeave_whoseOwnersKeepRefusing_endsWhenItsBudgetIsSpent_keepingItsData() throws Exception {
    List<Entry> held = start(Integer.MAX_VALUE);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(1));

    // The hand-off, then the drain's first pass, each try Transfers.ATTEMPTS times, about 2 s in
    // all: the budget is spent by then, so there is no second pass. Without a budget the drain
    // would pass again, half a second after each, for ever.
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(leavingOfA()));

    assertEquals(2 * Transfers.ATTEMPTS, Integer.MAX_VALUE - aidsOfB.handoffsLeftToRefuse(), "pushes b refused");
    for (Entry e : held) {
      assertEquals(Optional.of(e), a.store().get(e.key()), "a kept " + e.key());
      assertTrue(b.store().get(e.key()).isEmpty(), "b refused " + e.key());
    }
    assertEquals(0, a.counters().migrationsCompleted.sum());
    assertEquals(1, a.counters().migrationsFailed.sum());
  }
}
