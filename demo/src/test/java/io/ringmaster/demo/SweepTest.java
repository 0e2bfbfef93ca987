package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.Ringmaster;
import io.ringmaster.TestThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jgroups.Address;
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
    start(TestingAids.REFUSE_HANDOFFS, handoffsBRefuses);
  }

  /** Starts a, b and c; b refuses the first {@code count} requests that the testing aid {@code refusal} names. */
  private void start(String refusal, int count) throws Exception {
    cluster = InJvmPeer.clusterName("sweep");
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(b = InJvmPeer.start(cluster, "b", InJvmPeer.aidsWith(refusal, String.valueOf(count))));
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
    await("no copy reaches a or b").during(Duration.ofSeconds(1))
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
    AtomicInteger pushes = new AtomicInteger();
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
    List<LogRecord> logged = Logged.by(Sweeper.class, () -> {
      for (long mergeView = 11; mergeView <= 13; mergeView++) {
        assertTrue(c.sweeper().repairPending(), "a repair is queued");
        ran.add(c.sweeper().repairAfterMerge(mergeView));
      }
    });
    assertEquals(List.of(false, false, true), ran);
    assertEquals(List.of("c: the repair of merge view 11 is left to that of a later merge, queued behind it",
        "c: the repair of merge view 12 is left to that of a later merge, queued behind it"),
        Logged.messages(logged, Level.FINE), "each skipped repair says so, at DEBUG");
    assertEquals(Optional.of(entry), a.store().get(entry.key()), "the last pass pushed to every owner");
    assertEquals(Optional.of(entry), b.store().get(entry.key()));
    assertTrue(!c.sweeper().repairPending(), "nothing left to repair");
  }

  /** Ownership callbacks queued or running move strays themselves: the sweep waits until they are done. */
  @Test
  void noSweep_whileOwnershipCallbacksArePending() throws Exception {
    start(0);
    Entry stray = strayOnC();
    AtomicInteger pending = new AtomicInteger(1);
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

  /**
   * A sweep whose ring changes under it (d joins once its first page is sent) sends no further
   * page: the hand-off of the new view, queued behind it on c's one push thread, goes next, not
   * after every page the stale sweep had left. That sweep drops nothing, and the next one, on the
   * new ring, hands every stray to its owner. One replica; the strays, three pages of them, are a's.
   */
  @Test
  void aSweepWhoseRingChanges_sendsNoFurtherPage_andTheNewViewsHandOffGoesNext() throws Exception {
    cluster = InJvmPeer.clusterName("sweep-stale");
    UnaryOperator<Ringmaster.Builder> oneReplica = builder -> builder.replicas(1);
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), oneReplica));
    peers.add(c = InJvmPeer.start(cluster, "c", InJvmPeer.aidsWith(TestingAids.PUSH_THREADS, "1"), oneReplica));
    InJvmPeer.awaitOneRing(peers);
    List<Entry> strays = new ArrayList<>();
    String big = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    for (int i = 0; strays.size() < 6; i++) {
      if (c.routing().owners("stray-" + i).equals(List.of("a"))) {
        strays.add(Entry.of("stray-" + i, big + i, new Version(VersionClock.systemMicros(), "c")));
        c.store().merge(strays.get(strays.size() - 1));
      }
    }
    List<String> received = new CopyOnWriteArrayList<>(); // the destination of each push page, in order
    recordPushes(a, received);
    CountDownLatch firstPageSent = new CountDownLatch(1);
    CountDownLatch goOn = new CountDownLatch(1);
    AtomicBoolean first = new AtomicBoolean(true);
    c.transfers().afterPage = page -> {
      if (first.getAndSet(false)) {
        firstPageSent.countDown();
        try {
          goOn.await(60, TimeUnit.SECONDS); // let go by the test once the hand-off is queued
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    };
    Entry moving = Entry.of("moving", "v", new Version(VersionClock.systemMicros(), "c"));
    CompletableFuture<Void> sweep = CompletableFuture.runAsync(() -> c.sweeper().sweep(), TestThreads.ON_OWN_THREAD);
    CompletableFuture<Map<String, Address>> handOff = null;
    try {
      await("the sweep's first page").atMost(Duration.ofSeconds(20))
          .until(() -> firstPageSent.getCount() == 0 || sweep.isDone());
      assertEquals(0, firstPageSent.getCount(), "the sweep sent its first page");
      InJvmPeer d = InJvmPeer.start(cluster, "d", TestingAids.fromSystemProperties(), oneReplica);
      peers.add(d);
      recordPushes(d, received);
      InJvmPeer.awaitOneRing(peers);
      handOff = CompletableFuture.supplyAsync(() -> c.transfers().pushToEach(Map.of("d", List.of(moving)),
          Wire.PushKind.MIGRATION, () -> false), TestThreads.ON_OWN_THREAD);
      ThreadPoolExecutor pushThreads = (ThreadPoolExecutor) c.pushes();
      await("the hand-off queued behind the sweep").atMost(Duration.ofSeconds(20))
          .until(() -> pushThreads.getQueue().size() == 1);
    } finally {
      goOn.countDown();
      sweep.get(60, TimeUnit.SECONDS); // the test leaves no thread running
      if (handOff != null) {
        handOff.get(60, TimeUnit.SECONDS);
      }
    }

    assertEquals(Set.of("d"), handOff.get().keySet(), "d took the hand-off");
    assertEquals(List.of("a", "d"), received, "the sweep's first page, then the hand-off: no page of a stale sweep");
    for (Entry e : strays) {
      assertEquals(Optional.of(e), c.store().get(e.key()), "c keeps " + e.key() + ": its sweep's ring is stale");
    }
    assertEquals(0, c.counters().strayKeysHandedOff.sum());

    c.sweeper().sweep(); // on the new ring

    for (Entry e : strays) {
      InJvmPeer owner = peers.stream().filter(p -> p.routing().owners(e.key()).equals(List.of(p.id())))
          .findFirst().orElseThrow();
      assertEquals(Optional.of(e), owner.store().get(e.key()), owner.id() + " took " + e.key());
      assertTrue(c.store().get(e.key()).isEmpty(), "c dropped " + e.key());
    }
    assertEquals(strays.size(), c.counters().strayKeysHandedOff.sum());
  }

  /** Has {@code peer} note its id in {@code received} for each push page it is sent, then take the page. */
  private static void recordPushes(InJvmPeer peer, List<String> received) {
    peer.rpc().handle(Wire.OP_PUSH, in -> {
      received.add(peer.id());
      return peer.transfers().handlePush(in);
    });
  }

  /**
   * A sweep that handed strays off says so in the event log: how many, and to which peers. One
   * that handed nothing off (an owner refused) says nothing.
   */
  @Test
  void aSweep_publishesWhatItHandedOff_andToWhom_butNothingWhenItHandedOffNothing() throws Exception {
    start(Transfers.ATTEMPTS); // every attempt of the first push to b is refused
    Entry stray = strayOnC();
    EventLog events = new EventLog();
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), events, () -> 0);

    sweeper.sweep();
    assertEquals(Optional.of(stray), c.store().get(stray.key()), "c keeps it: b has no copy yet");
    assertEquals(List.of(), events.recent(), "nothing handed off");

    sweeper.sweep();
    assertTrue(c.store().get(stray.key()).isEmpty(), "handed off to a and b");
    assertEquals(1, events.recent().size(), events.recent()::toString);
    JsonNode sweep = PeerCluster.parse(events.recent().get(0));
    assertEquals("sweep", sweep.path("type").asText());
    assertEquals(1, sweep.path("keys").asLong());
    assertEquals(List.of("a", "b"), texts(sweep.path("peers")));
  }

  /**
   * The repair after a merge says what it did in the event log: the merge view, how many entries it
   * pushed (each once, however many owners it went to), to which owners, how long it took, and
   * whether every owner took its share.
   */
  @Test
  void aRepairAfterMerge_publishesTheEntriesItPushed_toWhom_andHowLongItTook() throws Exception {
    start(0);
    Entry stray = strayOnC(); // to a and b
    Entry owned = Entry.of(c.keyOwnedBy(Set.of("a", "c")), "owned", new Version(VersionClock.systemMicros(), "c"));
    c.store().merge(owned); // to a
    EventLog events = new EventLog();
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), events, () -> 0);

    long started = System.nanoTime();
    assertTrue(sweeper.repairAfterMerge(11));
    long tookMillis = (System.nanoTime() - started) / 1_000_000;

    assertEquals(Optional.of(stray), a.store().get(stray.key()));
    assertEquals(Optional.of(stray), b.store().get(stray.key()));
    assertEquals(Optional.of(owned), a.store().get(owned.key()));
    assertEquals(1, events.recent().size(), events.recent()::toString);
    JsonNode repair = PeerCluster.parse(events.recent().get(0));
    assertEquals("repair", repair.path("type").asText());
    assertEquals(11, repair.path("viewId").asLong());
    assertEquals(2, repair.path("keys").asLong(), "two entries pushed, one of them to two owners");
    assertEquals(Set.of("a", "b"), Set.copyOf(texts(repair.path("peers"))));
    assertTrue(repair.path("ok").asBoolean(false), repair::toString);
    long millis = repair.path("millis").asLong(-1);
    assertTrue(millis >= 0 && millis <= tookMillis, "took " + millis + " ms of the " + tookMillis + " ms of the call");
  }

  /**
   * An owner the repair could not reach is tried again, alone, once its delay (2 s after the first
   * failed round) is over; the repair is done once it took its share.
   */
  @Test
  void aRepairThatCouldNotReachAnOwner_triesThatOwnerAgain_onceItsDelayIsOver() throws Exception {
    start(TestingAids.REFUSE_REPAIRS, Transfers.ATTEMPTS); // every attempt of c's first repair push to b is refused
    Entry stray = strayOnC();
    EventLog events = new EventLog();
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), events, () -> 0);

    long before = System.nanoTime(); // before the round failed: b is tried again 2 s after that, not sooner
    List<LogRecord> failed = Logged.by(Sweeper.class, () -> assertTrue(sweeper.repairAfterMerge(11)));
    assertEquals(Optional.of(stray), a.store().get(stray.key()), "a took it");
    assertTrue(b.store().get(stray.key()).isEmpty(), "b refused it");
    assertEquals(List.of("c: repair after merge view 11 could not reach [b]; again in 2 s"),
        Logged.messages(failed, Level.WARNING));
    assertTrue(sweeper.repairPending(), "b is to be tried again");
    sweeper.retryRepair();
    if (System.nanoTime() - before < Duration.ofSeconds(2).toNanos()) { // not if this thread stalled that long
      assertTrue(b.store().get(stray.key()).isEmpty(), "not tried again before its delay is over");
    }

    List<LogRecord> retried = retryRepairUntil(sweeper, "b tried again", () -> b.store().get(stray.key()).isPresent());
    assertEquals(Optional.of(stray), b.store().get(stray.key()));
    assertFalse(sweeper.repairPending(), "nothing left to try again");
    assertEquals(List.of("c: repair after merge view 11 done after 1 failed rounds"), Logged.messages(retried, Level.INFO));
    List<JsonNode> repairs = events.recent().stream().map(PeerCluster::parse).toList();
    assertEquals(2, repairs.size(), repairs::toString);
    assertFalse(repairs.get(0).path("ok").asBoolean(true), "the first round failed");
    assertEquals(List.of("b"), texts(repairs.get(1).path("peers")), "the second went to b alone");
    assertTrue(repairs.get(1).path("ok").asBoolean(false));
    assertEquals(11, repairs.get(1).path("viewId").asLong());
  }

  /** A peer that leaves does not try a repair again: its hand-off moves everything it holds. */
  @Test
  void aRepairToTryAgain_isLeftToTheHandOff_onceThePeerLeaves() throws Exception {
    start(TestingAids.REFUSE_REPAIRS, Transfers.ATTEMPTS);
    Entry stray = strayOnC();
    EventLog events = new EventLog();
    Sweeper sweeper = repairRefusedByB(stray, events);

    c.routing().startLeaving();
    List<LogRecord> logged = retryRepairUntil(sweeper, "the retry came due", () -> !sweeper.repairPending());

    assertEquals(List.of("c: leaving; its hand-off replaces the repair of merge view 11"),
        Logged.messages(logged, Level.INFO));
    assertTrue(b.store().get(stray.key()).isEmpty(), "nothing pushed to b");
    assertEquals(1, events.recent().size(), "no second repair: " + events.recent());
  }

  /**
   * A repair whose owners all left the ring before it was tried again ends there: their successors
   * pull what they gained, and nothing is pushed or published for the owners that are gone.
   */
  @Test
  void aRepairToTryAgain_ends_onceTheOwnersItCouldNotReachLeftTheRing() throws Exception {
    start(TestingAids.REFUSE_REPAIRS, Transfers.ATTEMPTS);
    Entry stray = strayOnC();
    EventLog events = new EventLog();
    Sweeper sweeper = repairRefusedByB(stray, events);

    peers.remove(b);
    b.close();
    InJvmPeer.awaitOneRing(peers);
    List<LogRecord> logged = retryRepairUntil(sweeper, "the retry came due", () -> !sweeper.repairPending());

    assertEquals(List.of("c: [b], which the repair of merge view 11 could not reach, left the ring; their successors"
        + " pull what they gained"), Logged.messages(logged, Level.INFO));
    assertEquals(1, events.recent().size(), "no second repair: " + events.recent());
  }

  /**
   * A repair that threw (a bug in a push) is tried again in full, to every owner of the ring then,
   * once the delay of its first failed round is over; a round of it that then fails counts both.
   * a and c first, b joining (and refusing its first repair push) before the second round.
   */
  @Test
  void aRepairThatThrew_isTriedAgainInFull_afterItsDelay_andCountsAsAFailedRound() throws Exception {
    cluster = InJvmPeer.clusterName("sweep-threw");
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(c = InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(peers);
    for (int i = 0; i < 20; i++) { // some of them b's once it joins
      c.store().merge(Entry.of("key-" + i, "v", new Version(VersionClock.systemMicros(), "c")));
    }
    EventLog events = new EventLog();
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), events, () -> 0);
    AtomicBoolean thrown = new AtomicBoolean();
    c.transfers().afterPage = page -> {
      if (thrown.compareAndSet(false, true)) {
        throw new IllegalStateException("a bug in the push to a");
      }
    };

    long before = System.nanoTime(); // before the round failed: tried again 2 s after that, not sooner
    assertThrows(IllegalStateException.class, () -> sweeper.repairAfterMerge(11));
    assertTrue(sweeper.repairPending(), "to be tried again");
    assertEquals(0, c.counters().migrationsInProgress.get());
    sweeper.retryRepair();
    if (System.nanoTime() - before < Duration.ofSeconds(2).toNanos()) { // not if this thread stalled that long
      assertEquals(List.of(), events.recent(), "not tried again before its delay is over");
    }

    peers.add(b = InJvmPeer.start(cluster, "b", InJvmPeer.aidsWith(TestingAids.REFUSE_REPAIRS,
        String.valueOf(Transfers.ATTEMPTS))));
    InJvmPeer.awaitOneRing(peers);
    List<LogRecord> retried = retryRepairUntil(sweeper, "tried again", () -> !events.recent().isEmpty());
    JsonNode repair = PeerCluster.parse(events.recent().get(0));
    assertEquals(Set.of("a", "b"), Set.copyOf(texts(repair.path("peers"))), "every owner of the ring then");
    assertEquals(List.of("c: repair after merge view 11 could not reach [b]; again in 4 s"),
        Logged.messages(retried, Level.WARNING), "its second failed round: 4 s");
  }

  /** c's sweeper, after a repair of merge view 11 that b refused in full: b is to be tried again. */
  private Sweeper repairRefusedByB(Entry stray, EventLog events) {
    Sweeper sweeper = new Sweeper(c.routing(), c.store(), c.transfers(), c.counters(), events, () -> 0);
    assertTrue(sweeper.repairAfterMerge(11));
    assertTrue(b.store().get(stray.key()).isEmpty(), "b refused it");
    assertTrue(sweeper.repairPending());
    return sweeper;
  }

  /**
   * Tries the pending repair again, as the maintenance thread does, until {@code done}; returns
   * what the sweeper logged meanwhile.
   */
  private static List<LogRecord> retryRepairUntil(Sweeper sweeper, String what, BooleanSupplier done) {
    return Logged.by(Sweeper.class, () ->
        await(what).atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> {
          sweeper.retryRepair();
          return done.getAsBoolean();
        }));
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }
}
