package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A read that finds an owner behind sends it the newest copy ({@link KvService#get}): an owner
 * whose copy is older, and one that had none at all (missed the write while it was down, say),
 * which would otherwise stay a replica short. Three real nodes in this JVM (the in-memory JGroups
 * stack), replicas 2, with read repair on.
 */
class ReadRepairTest {
  private final List<InJvmPeer> nodes = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private InJvmPeer c;
  /** Owners every peer's key service takes for not serving requests yet (just joined, not reported). */
  private final Set<String> notReady = ConcurrentHashMap.newKeySet();

  /**
   * The peers' waits in every test but those of the grace itself: a read waits for every owner
   * within its own {@link KvService#CALL_TIMEOUT}, not the default half second after the first copy
   * came, so that the tests that need every owner's answer (to return the newest copy, or to repair
   * an owner behind) do not fail on a loaded machine whose answers come late.
   */
  private static final KvService.Timeouts EVERY_ANSWER_IN_TIME =
      KvService.Timeouts.DEFAULT.withReadGrace(KvService.CALL_TIMEOUT);

  @BeforeEach
  void startThreePeers() throws Exception {
    startThreePeers(EVERY_ANSWER_IN_TIME);
  }

  private void startThreePeers(KvService.Timeouts timeouts) throws Exception {
    String cluster = InJvmPeer.clusterName("read-repair");
    for (String id : List.of("a", "b", "c")) {
      nodes.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder,
          timeouts, kv -> kv::handleWrite, key -> List.of(), owner -> !notReady.contains(owner), true));
    }
    InJvmPeer.awaitOneRing(nodes);
    a = nodes.get(0);
    b = nodes.get(1);
    c = nodes.get(2);
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(nodes);
  }

  /** For the tests of the grace itself: a, b and c again, with the default waits. */
  private void restartWithTheDefaultGrace() throws Exception {
    closePeers();
    nodes.clear();
    startThreePeers(KvService.Timeouts.DEFAULT);
  }

  @Test
  void aReadThroughANonOwner_repairsTheOwnerThatHadNoCopy() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(v1); // b missed the write

    assertEquals(Optional.of("v1"), c.kv().get(key).entry().map(Entry::value));

    await("b repaired").atMost(Duration.ofSeconds(20)).until(() -> b.store().get(key).equals(Optional.of(v1)));
    assertEquals(1, c.counters().readRepairs.sum(), "one repair, of b");
  }

  @Test
  void aReadThroughAnOwner_repairsTheOwnerWithAnOlderCopy_andLeavesANewerOneAlone() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    long now = VersionClock.systemMicros();
    Entry v0 = Entry.of(key, "v0", new Version(now - 1_000_000L, "b"));
    Entry v1 = Entry.of(key, "v1", new Version(now, "a"));
    a.store().merge(v1);
    b.store().merge(v0);

    assertEquals(Optional.of("v1"), a.kv().get(key).entry().map(Entry::value));

    await("b repaired").atMost(Duration.ofSeconds(20)).until(() -> b.store().get(key).equals(Optional.of(v1)));
    assertEquals(1, a.counters().readRepairs.sum(), "one repair, of b; a held the newest");
    assertEquals(Optional.of(v1), a.store().get(key));
  }
  /**
   * A key no owner holds reads as not found, through an owner and through a non-owner alike, with
   * read repair on (nothing to repair), and the read says which owner answered; and the repair's
   * owner named is the one whose copy was returned, not the first that answered.
   */
  @Test
  void aKeyNoOwnerHolds_readsAsNotFound_andARead_namesTheOwnerWhoseCopyItReturns() {
    String missing = a.keyOwnedBy(Set.of("a", "b"));
    assertEquals(Optional.empty(), a.kv().get(missing).entry(), "through an owner");
    assertEquals(Optional.empty(), c.kv().get(missing).entry(), "through a non-owner");
    assertEquals(0, a.counters().readRepairs.sum() + c.counters().readRepairs.sum());

    String key = null;
    for (int i = 0; key == null; i++) { // b first in the ring's order, so it is asked first
      key = a.routing().owners("key-" + i).equals(List.of("b", "a")) ? "key-" + i : null;
    }
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(v1); // only a, the second owner, holds it
    KvService.Read read = c.kv().get(key);
    assertEquals(Optional.of(v1), read.entry());
    assertEquals("a", read.servedBy(), "the owner whose copy it is");
  }

  /**
   * An owner's quick "none" does not start the read's grace: only a copy found does. The other
   * owner, which holds the key and answers 0.8 s later (past the default grace after a "none"), is
   * waited for, and its copy read.
   */
  @Test
  void anOwnersQuickNone_doesNotCutShortTheWaitForAnOwnerHoldingTheKey() throws Exception {
    restartWithTheDefaultGrace();
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "b"));
    b.store().merge(v1); // a missed the write
    b.answerReadsAfter(800);

    assertEquals(Optional.of("v1"), a.kv().get(key).entry().map(Entry::value));
  }

  /**
   * A read through an owner that holds an older copy itself waits for the other owner's answer,
   * though its own copy came at once, and returns the other's newer copy (and repairs its own).
   * Only the peer the read came through counts it. b answers 0.3 s late, so that the read does
   * wait for it (the grace after a's own copy, here the whole read's 2 s): answering at once, it
   * would be in before the read started waiting.
   */
  @Test
  void aReadThroughAnOwnerWithAnOlderCopy_waitsForTheOtherOwnersNewerOne() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    long now = VersionClock.systemMicros();
    Entry v0 = Entry.of(key, "v0", new Version(now - 1_000_000L, "a"));
    Entry v1 = Entry.of(key, "v1", new Version(now, "b"));
    a.store().merge(v0);
    b.store().merge(v1);
    b.answerReadsAfter(300);

    KvService.Read read = a.kv().get(key);

    assertEquals(Optional.of(v1), read.entry());
    assertEquals("b", read.servedBy());
    assertEquals(List.of(1L, 0L, 0L), nodes.stream().map(n -> n.counters().getsServed.sum()).toList(),
        "a served the read; b and c only answered for their copies");
    await("a repaired").atMost(Duration.ofSeconds(20)).until(() -> a.store().get(key).equals(Optional.of(v1)));
  }

  /** Of two owners holding the same copy, a read through one of them names that one: it asks itself first. */
  @Test
  void aReadThroughAnOwner_ofACopyBothOwnersHold_namesThatOwner() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(v1);
    b.store().merge(v1);

    KvService.Read throughA = a.kv().get(key);
    KvService.Read throughB = b.kv().get(key);

    assertEquals(Optional.of(v1), throughA.entry());
    assertEquals("a", throughA.servedBy());
    assertEquals(Optional.of(v1), throughB.entry());
    assertEquals("b", throughB.servedBy());
  }

  /**
   * A read through a peer that does not own the key (and is not leaving) asks the owners only: a
   * stray copy it holds, even a newer one, is not read (its sweep hands it to the owners), nor sent
   * to them by a repair.
   */
  @Test
  void aReadThroughANonOwner_doesNotReadAStrayCopyItHolds() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    long now = VersionClock.systemMicros();
    Entry v1 = Entry.of(key, "v1", new Version(now, "a"));
    Entry stray = Entry.of(key, "stray", new Version(now + 1_000_000L, "c"));
    a.store().merge(v1);
    b.store().merge(v1);
    c.store().merge(stray);

    KvService.Read read = c.kv().get(key);

    assertEquals(Optional.of(v1), read.entry());
    assertTrue(Set.of("a", "b").contains(read.servedBy()), read.servedBy());
    assertEquals(0, c.counters().readRepairs.sum(), "the owners were not sent the stray copy");
  }

  /**
   * An owner answering later than the grace (the default one here) after the first copy came is not
   * waited for: the read returns the copy it has (here the reading owner's own, at once), not the
   * later one, newer though it is; the read repair, or a later read, brings the owners together.
   */
  @Test
  void anOwnerAnsweringPastTheGraceAfterTheFirstCopy_isNotWaitedFor() throws Exception {
    restartWithTheDefaultGrace();
    String key = a.keyOwnedBy(Set.of("a", "b"));
    long now = VersionClock.systemMicros();
    Entry v0 = Entry.of(key, "v0", new Version(now - 1_000_000L, "a"));
    Entry v1 = Entry.of(key, "v1", new Version(now, "b"));
    a.store().merge(v0);
    b.store().merge(v1);
    // b answers a second late: past the default grace (0.5 s) after a's own copy, within the read's 2 s.
    b.answerReadsAfter(1000);

    KvService.Read read = a.kv().get(key);

    assertEquals(Optional.of(v0), read.entry());
    assertEquals("a", read.servedBy());
  }

  /**
   * A read whose owners that serve requests all failed to answer waits for the owner that just
   * joined (it has not reported yet), and returns its copy, though it comes 0.3 s later.
   */
  @Test
  void whenNoServingOwnerAnswers_theReadWaitsForTheOwnerThatJustJoined() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "b"));
    b.store().merge(v1);
    notReady.add("b");
    a.rpc().handleQuickly(Wire.OP_GET, in -> CompletableFuture.failedFuture(
        new Rpc.Declined("busy")));
    b.answerReadsAfter(300);

    KvService.Read read = c.kv().get(key);

    assertEquals(Optional.of(v1), read.entry());
    assertEquals("b", read.servedBy());
  }

  /**
   * A read that a serving owner answered, "not found" included, does not wait for an owner that
   * just joined (it has not reported yet, and takes its keys in from that owner): here it would
   * answer 1.5 s later, within the read's 2 s.
   */
  @Test
  void whenAServingOwnerAnswers_theReadDoesNotWaitForTheOwnerThatJustJoined() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "b"));
    b.store().merge(v1); // as if written to b alone: only its late answer would find it
    notReady.add("b");
    b.answerReadsAfter(1500);

    KvService.Read read = c.kv().get(key);

    assertEquals(Optional.empty(), read.entry(), "a's \"not found\", the one serving owner's answer");
    assertEquals("a", read.servedBy());
  }

  /**
   * A read whose thread is interrupted while it waits for the owners' answers ends as 503
   * "interrupted", and leaves its thread interrupted, for whoever runs it to see.
   */
  @Test
  void aReadInterruptedWhileItWaitsForTheOwners_endsAsInterrupted_andKeepsTheInterrupt() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    a.answerReadsAfter(1000);
    b.answerReadsAfter(1000);

    boolean kept;
    Thread.currentThread().interrupt();
    try {
      KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> c.kv().get(key));
      assertEquals("interrupted", failed.getMessage());
    } finally {
      kept = Thread.interrupted(); // cleared either way: the next test runs on this thread
    }
    assertTrue(kept, "the reader's thread is still interrupted");
  }

  /** A read repair that the owner refuses is logged (DEBUG), naming the key, the owner and why. */
  @Test
  void aReadRepairTheOwnerRefuses_isLogged() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    a.store().merge(Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"))); // b missed it
    b.rpc().handleQuickly(Wire.OP_WRITE, in -> CompletableFuture.failedFuture(
        new Rpc.Declined("no room")));

    List<LogRecord> logged = Logged.until(KvService.class,
        records -> !Logged.messages(records, Level.FINE).isEmpty(),
        () -> assertEquals(Optional.of("v1"), c.kv().get(key).entry().map(Entry::value)));

    List<String> messages = Logged.messages(logged, Level.FINE);
    assertEquals(1, messages.size(), messages.toString());
    assertTrue(messages.get(0).startsWith("read repair of \"" + key + "\" on b failed: ")
        && messages.get(0).contains("no room"), messages.get(0));
  }
}
