package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Sweeper#sweep}: an entry a peer holds outside its ranges (a write stored by a stale
 * ring, a push that failed) is handed to every owner, and dropped only once every owner took it.
 * Three {@link InJvmPeer}s, replicas 2; the stray sits on c, on a key that a and b own.
 */
class SweepTest {
  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private InJvmPeer c;
  private String cluster;

  /** Starts a, b and c; b refuses its first {@code handoffsBRefuses} hand-off pushes. */
  private void start(int handoffsBRefuses) throws Exception {
    cluster = InJvmPeer.clusterName("sweep");
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(b = InJvmPeer.start(cluster, "b",
        InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, String.valueOf(handoffsBRefuses))));
    peers.add(c = InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(peers);
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /** Puts a stray on c: a copy of a key that only a and b own. */
  private Entry strayOnC() {
    Entry stray = Entry.of(a.keyOwnedBy(Set.of("a", "b")), "stray", new Version(VersionClock.systemMicros(), "c"));
    c.store().merge(stray);
    return stray;
  }

  @Test
  void aStray_isHandedToEveryOwner_thenDropped() throws Exception {
    start(0);
    Entry stray = strayOnC();

    c.sweeper().sweep();

    assertEquals(Optional.of(stray), a.store().get(stray.key()));
    assertEquals(Optional.of(stray), b.store().get(stray.key()));
    assertTrue(c.store().get(stray.key()).isEmpty(), "c dropped its copy");
    assertEquals(1, c.counters().strayKeysHandedOff.sum());
  }

  /**
   * A sweep interrupted (the peer stopping its sweeps to leave) sends nothing: a page it would not
   * wait for would only compete with the leave's hand-off. The stray stays, for the hand-off.
   */
  @Test
  void anInterruptedSweep_sendsNothing_andKeepsTheStray() throws Exception {
    start(0);
    Entry stray = strayOnC();

    Thread.currentThread().interrupt();
    try {
      c.sweeper().sweep();
      assertEquals(1, c.sweeper().passes, "the sweep read the store, and found the stray");
      assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is kept");
    } finally {
      Thread.interrupted();
    }

    // A page sent would reach its owner within milliseconds: none does within a second.
    org.awaitility.Awaitility.await("no copy reaches a or b").during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(10))
        .until(() -> a.store().get(stray.key()).isEmpty() && b.store().get(stray.key()).isEmpty());
    assertEquals(Optional.of(stray), c.store().get(stray.key()));
    assertEquals(0, c.counters().strayKeysHandedOff.sum());
  }

  @Test
  void aStrayOneOwnerRefused_isKept_andHandedOffByTheNextSweep() throws Exception {
    start(Transfers.ATTEMPTS); // every attempt of the first push to b is refused
    Entry stray = strayOnC();

    c.sweeper().sweep();

    assertEquals(Optional.of(stray), a.store().get(stray.key()), "a took it");
    assertTrue(b.store().get(stray.key()).isEmpty(), "b refused it");
    assertEquals(Optional.of(stray), c.store().get(stray.key()), "c keeps it: b has no copy yet");
    assertEquals(0, c.counters().strayKeysHandedOff.sum());

    c.sweeper().sweep();

    assertEquals(Optional.of(stray), b.store().get(stray.key()));
    assertTrue(c.store().get(stray.key()).isEmpty());
    assertEquals(1, c.counters().strayKeysHandedOff.sum());
  }

  /**
   * A sweep that found no stray is not repeated until the store, the ring or the peer's place in it
   * changes: each pass read the whole store every 2 s, with nothing to find.
   */
  @Test
  void aSweepThatFoundNoStray_readsTheStoreAgainOnlyAfterAChange() throws Exception {
    start(0);
    // Two keys c owns, one as primary and one as backup: neither is a stray.
    for (List<String> owners : List.of(List.of("c", "a"), List.of("a", "c"))) {
      String key = null;
      for (int i = 0; key == null; i++) {
        key = c.routing().owners("key-" + i).equals(owners) ? "key-" + i : null;
      }
      c.store().merge(Entry.of(key, "owned", new Version(VersionClock.systemMicros(), "c")));
    }
    c.sweeper().sweep();
    c.sweeper().sweep();
    assertEquals(1, c.sweeper().passes, "nothing changed since a pass found no stray");

    Entry stray = strayOnC();
    c.sweeper().sweep();
    assertEquals(2, c.sweeper().passes, "the store changed");
    assertEquals(Optional.of(stray), a.store().get(stray.key()));
    assertTrue(c.store().get(stray.key()).isEmpty(), "c handed it off");
    c.sweeper().sweep(); // the hand-off changed the store: one more pass, which finds nothing
    c.sweeper().sweep();
    assertEquals(3, c.sweeper().passes);

    peers.add(InJvmPeer.start(cluster, "d", TestingAids.fromSystemProperties())); // a new ring, the store as it was
    InJvmPeer.awaitOneRing(peers);
    c.sweeper().sweep();
    assertEquals(4, c.sweeper().passes, "the ring changed: what c holds may be strays now");
  }

  /**
   * The sweep pushes once to each owner, whatever the order of its strays' owners: strays owned by
   * a then b and by b then a are two owner lists, and were two pushes to each of a and b (in a large
   * cluster, about as many round trips as strays).
   */
  @Test
  void aSweep_pushesOnceToEachOwner_andDropsWhatEveryOwnerTook() throws Exception {
    start(0);
    List<Entry> strays = new ArrayList<>();
    for (List<String> order : List.of(List.of("a", "b"), List.of("b", "a"))) {
      for (int i = 0, found = 0; found < 3; i++) {
        String key = "stray-" + order.get(0) + "-" + i;
        if (c.routing().owners(c.routing().ring(), key).equals(order)) {
          Entry e = Entry.of(key, "v", new Version(VersionClock.systemMicros(), "c"));
          c.store().merge(e);
          strays.add(e);
          found++;
        }
      }
    }
    java.util.concurrent.atomic.AtomicInteger pushes = new java.util.concurrent.atomic.AtomicInteger();
    c.transfers().afterPage = page -> {
      if (page == 1) {
        pushes.incrementAndGet();
      }
    };

    c.sweeper().sweep();

    assertEquals(2, pushes.get(), "one push to a, one to b");
    for (Entry e : strays) {
      assertEquals(Optional.of(e), a.store().get(e.key()));
      assertEquals(Optional.of(e), b.store().get(e.key()));
      assertTrue(c.store().get(e.key()).isEmpty(), "c dropped " + e.key());
    }
    assertEquals(6, c.counters().strayKeysHandedOff.sum());
  }

  /**
   * Repairs after merges that came faster than a pass over the store are one pass: each queued
   * with another behind it is skipped, and the last pushes everything to every owner. Each pushed
   * the whole store to every owner before, however many were queued, for as long as a link flapped.
   */
  @Test
  void repairsAfterMerges_queuedBehindEachOther_runAsOnePass() throws Exception {
    start(0);
    Entry entry = strayOnC();
    for (int merge = 0; merge < 3; merge++) {
      c.sweeper().repairQueued();
    }
    List<Boolean> ran = new ArrayList<>();
    for (long mergeView = 11; mergeView <= 13; mergeView++) {
      assertTrue(c.sweeper().repairPending(), "a repair is queued");
      ran.add(c.sweeper().repairAfterMerge(mergeView));
    }
    assertEquals(List.of(false, false, true), ran);
    assertEquals(Optional.of(entry), a.store().get(entry.key()), "the last pass pushed to every owner");
    assertEquals(Optional.of(entry), b.store().get(entry.key()));
    assertTrue(!c.sweeper().repairPending(), "nothing left to repair");
  }

  /** Ownership callbacks queued or running move strays themselves: the sweep waits until they are done. */
  @Test
  void noSweep_whileOwnershipCallbacksArePending() throws Exception {
    start(0);
    Entry stray = strayOnC();
    java.util.concurrent.atomic.AtomicInteger pending = new java.util.concurrent.atomic.AtomicInteger(1);
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), new EventLog(), pending::get);

    sweeper.sweep();

    assertTrue(a.store().get(stray.key()).isEmpty());
    assertTrue(b.store().get(stray.key()).isEmpty());
    assertEquals(Optional.of(stray), c.store().get(stray.key()));

    pending.set(0); // the callbacks are done: the next sweep hands the stray on
    sweeper.sweep();

    assertEquals(Optional.of(stray), a.store().get(stray.key()));
    assertTrue(c.store().get(stray.key()).isEmpty());
  }

  @Test
  void noSweep_whileAMigrationRunsOrThePeerLeaves() throws Exception {
    start(0);
    Entry stray = strayOnC();

    c.counters().migrationsInProgress.incrementAndGet(); // the callbacks move strays themselves
    c.sweeper().sweep();
    c.counters().migrationsInProgress.decrementAndGet();
    c.routing().startLeaving(); // its hand-off moves everything it holds
    c.sweeper().sweep();

    assertTrue(a.store().get(stray.key()).isEmpty());
    assertTrue(b.store().get(stray.key()).isEmpty());
    assertEquals(Optional.of(stray), c.store().get(stray.key()));
  }
  /**
   * Strays whose owners differ entirely (one replica: a's and b's) are each dropped once their own
   * owner took them: what one owner took is counted for its own entries only, never narrowed by
   * the other's.
   */
  @Test
  void aSweep_ofStraysOfDisjointOwners_dropsEveryOne() throws Exception {
    cluster = InJvmPeer.clusterName("sweep-disjoint");
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(1)));
    }
    InJvmPeer.awaitOneRing(peers);
    a = peers.get(0);
    b = peers.get(1);
    c = peers.get(2);
    List<Entry> strays = new ArrayList<>();
    for (String owner : List.of("a", "b")) {
      Entry stray = Entry.of(c.keyOwnedBy(Set.of(owner)), "stray", new Version(VersionClock.systemMicros(), "c"));
      c.store().merge(stray);
      strays.add(stray);
    }

    c.sweeper().sweep();

    assertEquals(Optional.of(strays.get(0)), a.store().get(strays.get(0).key()));
    assertEquals(Optional.of(strays.get(1)), b.store().get(strays.get(1).key()));
    assertEquals(0, c.store().size(), "c dropped both");
    assertEquals(2, c.counters().strayKeysHandedOff.sum());
  }
}
