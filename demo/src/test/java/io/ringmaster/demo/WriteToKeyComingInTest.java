package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A write to an owner still taking the key in counts the version the key's previous owners hold
 * ({@link KvService}'s check before it acknowledges): an older write there, stamped higher by a
 * faster clock, would otherwise replace the acknowledged one when the pulls bring it. Three real
 * nodes in this JVM (the in-memory JGroups stack), one replica. The key has moved twice, as after
 * two joins in a row: from a to b, then from b to c, and neither pull is done. Each key service is
 * told so, as {@link Incoming} would tell it: c's previous owner for the key is b, b's is a.
 */
class WriteToKeyComingInTest {
  private static final Map<String, List<String>> PREVIOUS_OWNER = Map.of("c", List.of("b"), "b", List.of("a"));
  /** c's writes: a deadline short enough for a test, long enough for two steps back. */
  private static final KvService.Timeouts SHORT = new KvService.Timeouts(Duration.ofSeconds(5),
      Duration.ofSeconds(6));
  private final List<InJvmPeer> peers = new ArrayList<>();
  /** Owners that every peer's key service takes for not serving requests yet (not reported). */
  private final Set<String> notReady = ConcurrentHashMap.newKeySet();
  private String key;
  /** Each peer's previous owners of the key: {@link #PREVIOUS_OWNER} unless a test says otherwise. */
  private volatile Map<String, List<String>> previousOwner = PREVIOUS_OWNER;
  /** Told the peer's id when its key service looks up the key's previous owners, before it asks them. */
  private volatile Consumer<String> whenAsking = id -> { };

  @BeforeEach
  void startThreePeers() throws Exception {
    String cluster = InJvmPeer.clusterName("write-coming-in");
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(1),
          SHORT, kv -> kv::handleWrite, k -> {
            if (!k.equals(key)) {
              return List.of();
            }
            whenAsking.accept(id);
            return previousOwner.getOrDefault(id, List.of());
          }, owner -> !notReady.contains(owner)));
    }
    InJvmPeer.awaitOneRing(peers);
    key = peers.get(2).keyOwnedBy(Set.of("c"));
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void aWriteToTheNewestOwner_isStampedPastTheVersionTwoStepsBack() {
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    // a, the owner two joins ago, holds a write stamped a minute ahead of c's clock; b holds nothing yet.
    Version ahead = new Version(VersionClock.systemMicros() + 60_000_000L, "a");
    a.store().merge(Entry.of(key, "older, from a fast clock", ahead));

    KvService.Written written = c.kv().put(key, "newer");

    assertEquals(List.of("c"), written.owners());
    assertTrue(written.version().isNewerThan(ahead),
        "c asked b, which asked a, and the write was stamped past a's version: " + written.version());
    Entry held = c.store().get(key).orElseThrow();
    assertEquals("newer", held.value());
    assertEquals(written.version(), held.version());
    for (InJvmPeer p : peers) {
      assertEquals(0, p.counters().readsFromPreviousOwners.sum(), p.routing().self() + ": a write's check is no read");
    }
  }

  /**
   * The same when b, the step between, already holds an older copy (a stray handed on to it): b
   * still goes back to a, which holds the newer version, and the write is stamped past that.
   */
  @Test
  void aWriteToTheNewestOwner_isStampedPastTheVersionTwoStepsBack_evenWhenTheStepBetweenHoldsAnOlderCopy() {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    InJvmPeer c = peers.get(2);
    long now = VersionClock.systemMicros();
    Version ahead = new Version(now + 60_000_000L, "a");
    a.store().merge(Entry.of(key, "older, from a fast clock", ahead));
    b.store().merge(Entry.of(key, "older still, a stray", new Version(now - 1_000_000L, "b")));

    KvService.Written written = c.kv().put(key, "newer");

    assertTrue(written.version().isNewerThan(ahead),
        "b, holding an older copy, asked a all the same: " + written.version());
    assertEquals("newer", c.store().get(key).orElseThrow().value());
  }

  /**
   * A copy handed to the new owner while its write's check asks the previous owners (pushed by a
   * previous owner that then dropped it, so they answer with none) counts too: the write is
   * stamped past it, not acknowledged under a newer copy held here.
   */
  @Test
  void aCopyPushedInWhileTheCheckAsks_isCountedToo() {
    InJvmPeer c = peers.get(2);
    Version ahead = new Version(VersionClock.systemMicros() + 60_000_000L, "a");
    whenAsking = id -> {
      if (id.equals("c")) {
        c.store().merge(Entry.of(key, "pushed, from a fast clock", ahead));
      }
    };

    KvService.Written written = c.kv().put(key, "newer");

    assertTrue(written.version().isNewerThan(ahead), "stamped past the pushed copy: " + written.version());
    Entry held = c.store().get(key).orElseThrow();
    assertEquals("newer", held.value());
    assertEquals(written.version(), held.version());
  }

  /**
   * A previous owner that holds the very version the write is stamped with, under a value that
   * wins the tie (a restarted process reusing a microsecond): the write would lose to it when the
   * pull brings it, so it is stamped again past it, as for the owner's own copy
   * ({@link SameVersionWriteTest}).
   */
  @Test
  void aPreviousOwnersCopyOfTheSameVersionThatWinsTheTie_makesTheWriteStampAgain() {
    InJvmPeer b = peers.get(1);
    InJvmPeer c = peers.get(2);
    long ahead = VersionClock.systemMicros() + 60_000_000L; // c's next stamp is ahead + 1
    c.kv().clock().observe(ahead);
    b.store().merge(Entry.of(key, "zebra", new Version(ahead + 1, "c"))); // "zebra" wins a tie with "apple"

    KvService.Written written = c.kv().put(key, "apple");

    assertEquals(new Version(ahead + 2, "c"), written.version(), "stamped again, past the version b holds");
    assertEquals(Optional.of(Entry.of(key, "apple", written.version())), c.store().get(key));
  }

  /**
   * The read's twin: a copy pushed in while a read asks the previous owners (who then answer with
   * none, having dropped it) is found, since the peer looks at its own store again once they
   * answered; otherwise the read would say "not found" of a key this peer holds.
   */
  @Test
  void aCopyPushedInWhileAReadAsks_isFound() {
    InJvmPeer c = peers.get(2);
    whenAsking = id -> {
      if (id.equals("c")) {
        c.store().merge(Entry.of(key, "pushed", new Version(VersionClock.systemMicros(), "a")));
      }
    };

    KvService.Read read = c.kv().get(key);

    assertEquals("pushed", read.entry().orElseThrow(() -> new AssertionError("not found: " + read)).value());
  }

  /**
   * A read that goes two steps back (c asks b, b asks a) is one read answered by a previous owner:
   * counted once, at c.
   */
  @Test
  void aReadTwoStepsBack_countsOnce_whereItCame() {
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    a.store().merge(Entry.of(key, "from a", new Version(VersionClock.systemMicros(), "a")));

    KvService.Read read = c.kv().get(key);

    assertEquals("from a", read.entry().orElseThrow().value());
    assertEquals(List.of(0L, 0L, 1L), peers.stream().map(p -> p.counters().readsFromPreviousOwners.sum()).toList(),
        "counted by a, b and c");
  }

  /**
   * A reader whose ring is behind routes a read to a peer that no longer owns the key, here b (c
   * owns it). b asks the key's owners in its ring and answers with the newest copy, its own
   * included: it may have handed the key on and dropped it, or hold an older copy than c's.
   */
  @Test
  void aReadRoutedByAnOlderRing_toAPeerThatNoLongerOwnsTheKey_isAnsweredWithTheOwnersCopy() throws Exception {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    InJvmPeer c = peers.get(2);
    long now = VersionClock.systemMicros();
    c.store().merge(Entry.of(key, "at its owner", new Version(now, "c")));

    assertEquals(Optional.of("at its owner"), readAsAReaderWould(a, "b"), "b, holding no copy, asked c");
    b.store().merge(Entry.of(key, "older, left at b", new Version(now - 1_000_000L, "b")));
    assertEquals(Optional.of("at its owner"), readAsAReaderWould(a, "b"), "c's copy is newer than b's");
    b.store().merge(Entry.of(key, "newer, at b", new Version(now + 1_000_000L, "b")));
    assertEquals(Optional.of("newer, at b"), readAsAReaderWould(a, "b"), "b's copy is newer than c's");
    assertEquals(List.of(0L, 0L, 0L), peers.stream().map(p -> p.counters().readsFromPreviousOwners.sum()).toList(),
        "no previous owner answered");
  }

  /**
   * The same read when the key's only owner has not yet told the peer asked that it serves
   * requests (it just joined, and that peer may have handed it the key and dropped its copy): the
   * peer asks it all the same, rather than answer "not found", or with an older copy of its own
   * (the owner may hold a write acknowledged since).
   */
  @Test
  void aReadRoutedByAnOlderRing_whenNoOwnerHasReportedYet_asksTheOwnersAllTheSame() throws Exception {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    InJvmPeer c = peers.get(2);
    c.store().merge(Entry.of(key, "at its owner", new Version(VersionClock.systemMicros(), "c")));
    notReady.add("c");
    // b gives an owner that has not reported 0.9 s to answer: a read that a stalled machine let
    // time out is asked again (one that never asks c fails every time).
    await("b, holding no copy, asked c").atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> readAsAReaderWould(a, "b").equals(Optional.of("at its owner")));
    b.store().merge(Entry.of(key, "older, left at b", new Version(VersionClock.systemMicros() - 60_000_000L, "b")));
    await("holding an older copy, b asked c too").atMost(Duration.ofSeconds(20)).ignoreExceptions()
        .until(() -> readAsAReaderWould(a, "b").equals(Optional.of("at its owner")));
    c.rpc().close(); // an owner that does not answer (yet): b's copy answers
    assertEquals(Optional.of("older, left at b"), readAsAReaderWould(a, "b"), "b's copy, c not answering");
  }

  /**
   * A leaving peer answers for a key it owns in the cluster's ring with the copy it holds, without
   * asking (its reads stay one hop while it hands off all it holds); holding none, it asks the
   * key's owners in the ring it leaves behind. A copy of a key it never owned is a stray: it asks.
   */
  @Test
  void aLeavingPeer_answersForItsKeysWithItsCopy_andAsksTheOwnersOtherwise() throws Exception {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    InJvmPeer c = peers.get(2);
    String itsOwn = b.keyOwnedBy(Set.of("b"));
    b.routing().startLeaving();
    String heir = b.routing().owners(itsOwn).get(0);
    InJvmPeer next = peers.stream().filter(p -> p.id().equals(heir)).findFirst().orElseThrow();
    long now = VersionClock.systemMicros();
    next.store().merge(Entry.of(itsOwn, "handed on", new Version(now, heir)));

    assertEquals(Optional.of("handed on"), readAsAReaderWould(a, "b", itsOwn), "b, holding no copy, asked " + heir);
    b.store().merge(Entry.of(itsOwn, "held at b", new Version(now - 1_000_000L, "b")));
    assertEquals(Optional.of("held at b"), readAsAReaderWould(a, "b", itsOwn), "b answered with its own copy");

    c.store().merge(Entry.of(key, "at its owner", new Version(now, "c")));
    b.store().merge(Entry.of(key, "a stray at b", new Version(now - 1_000_000L, "b")));
    assertEquals(Optional.of("at its owner"), readAsAReaderWould(a, "b", key), "not b's in the cluster's ring: it asked c");
  }

  /**
   * A leaving peer's own read of a key it does not own asks, for its part, no previous owner: the
   * read asks the owners itself. Here c, the owner, goes back to b, its previous owner, which goes
   * back to a: the read is counted once, at c.
   */
  @Test
  void aLeavingPeersOwnRead_ofAKeyItDoesNotOwn_asksNoPreviousOwnerForItsPart() {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    a.store().merge(Entry.of(key, "from a", new Version(VersionClock.systemMicros(), "a")));
    b.routing().startLeaving();

    KvService.Read read = b.kv().get(key);

    assertEquals("from a", read.entry().orElseThrow().value());
    await("the read counted at c, and only there").atMost(Duration.ofSeconds(10)).until(() ->
        peers.stream().map(p -> p.counters().readsFromPreviousOwners.sum()).toList().equals(List.of(0L, 0L, 1L)));
  }

  /** The value {@code target} answers to a read sent as a reader sends it to an owner: the first step. */
  private Optional<String> readAsAReaderWould(InJvmPeer from, String target) throws Exception {
    return readAsAReaderWould(from, target, key);
  }

  private static Optional<String> readAsAReaderWould(InJvmPeer from, String target, String key) throws Exception {
    DataInputStream reply = from.rpc().call(target, Wire.get(key, KvService.STEPS_BACK, false, from.node().viewId()),
        Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS);
    return Wire.readGetReply(reply).map(Entry::value);
  }

  /**
   * A write's check is answered only by a previous owner that has installed the asker's view: one
   * still routing by an older ring would not forward the writes it stores to the asker, which would
   * then acknowledge its write over them. It declines, and the writer tries again. A read is
   * answered whatever the views.
   */
  @Test
  void aWritesCheck_isDeclinedByAPreviousOwnerOnAnOlderView_aReadIsNot() throws Exception {
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    b.store().merge(Entry.of(key, "at b", new Version(VersionClock.systemMicros(), "b")));
    long view = b.node().viewId();
    assertEquals(Optional.of("at b"), Wire.readGetReply(a.rpc().call("b", Wire.get(key, 0, true, view),
        Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS)).map(Entry::value), "b has the asker's view");

    ExecutionException declined = assertThrows(ExecutionException.class,
        () -> a.rpc().call("b", Wire.get(key, 0, true, view + 1), Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS));
    assertEquals("b: view " + (view + 1) + " not installed here yet (this peer has view " + view + ")",
        Rpc.describe(declined));
    assertEquals(Optional.of("at b"), Wire.readGetReply(a.rpc().call("b", Wire.get(key, 0, false, view + 1),
        Duration.ofSeconds(5)).get(10, TimeUnit.SECONDS)).map(Entry::value), "a read");
  }

  @Test
  void aPreviousOwnerThatDoesNotAnswer_failsTheWrite_ratherThanAcknowledgingItUnchecked() {
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    a.rpc().close(); // a is still in the view, but answers nothing: b cannot tell what a holds

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> c.kv().put(key, "unchecked"));

    assertTrue(failed.getMessage().contains("previous owner a of \"" + key + "\"")
        && failed.getMessage().contains("did not say which version it holds"), failed.getMessage());
  }

  /**
   * The same two steps back, where b has two previous owners: c answers (with the write, which it
   * stored before its check) and a answers nothing. A write's check holds only if every previous
   * owner said which version it holds: one copy found is not enough, as it is for a read.
   */
  @Test
  void aPreviousOwnerThatDoesNotAnswer_failsTheWrite_evenWhenAnotherOneAnswered() {
    previousOwner = Map.of("c", List.of("b"), "b", List.of("c", "a"));
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    a.rpc().close();

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> c.kv().put(key, "unchecked"));

    assertTrue(failed.getMessage().contains("previous owner a of \"" + key + "\""), failed.getMessage());
  }

  /**
   * A key holding a version stamped more than a year ahead of the writer's clock (a broken clock,
   * a hostile peer) cannot be written over: a 409 that says why, not a 503 to retry.
   */
  @Test
  void aWriteOverAVersionMoreThanAYearAhead_isAConflict_notUnavailable() {
    InJvmPeer c = peers.get(2);
    long ahead = VersionClock.systemMicros() + VersionClock.MAX_AHEAD.plusDays(30).toNanos() / 1000;
    c.store().merge(Entry.of(key, "from a broken clock", new Version(ahead, "x")));

    HttpError e = assertThrows(HttpError.class, () -> c.kv().put(key, "newer"));

    assertEquals(409, e.status());
    assertTrue(e.getMessage().startsWith("\"" + key + "\" holds a version stamped " + ahead + " by x, more than 365"
        + " days ahead of this peer's clock"), e.getMessage());
  }

  /**
   * A read that finds no copy while a previous owner does not answer (busy, or its answer late)
   * fails as unavailable (a 503 over HTTP), not as "not found": that owner may hold the key. One
   * that finds a copy answers with it. c asks b, which asks a, which answers nothing.
   */
  @Test
  void aPreviousOwnerThatDoesNotAnswer_failsAReadThatFoundNoCopy_ratherThanSayingNotFound() {
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    a.store().merge(Entry.of(key, "only at a", new Version(VersionClock.systemMicros(), "a")));
    a.rpc().close();

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> c.kv().get(key));
    assertTrue(failed.getMessage().startsWith("no owner of \"" + key + "\" answered [c]"), failed.getMessage());

    c.store().merge(Entry.of(key, "at c", new Version(VersionClock.systemMicros(), "c")));
    assertEquals("at c", c.kv().get(key).entry().orElseThrow().value(), "a copy found is an answer");
  }

  /**
   * A write forwarded from peer to peer leaves each peer less time (0.4 s less a hop), and the
   * check keeps within it, so that the sender hears why before its own call gives up. Three hops
   * out, c has 0.4 s: it stops waiting for b, which waits 0.9 s for a, and says b did not answer
   * (with all the time of a direct call, it would have had b's answer, naming a).
   */
  @Test
  void aForwardedWrite_checksWithinTheTimeItsSenderLeavesIt() {
    InJvmPeer c = peers.get(2);
    peers.get(0).rpc().close();
    Entry write = Entry.of(key, "forwarded", new Version(VersionClock.systemMicros(), "c"));

    Throwable failed = assertThrows(CompletionException.class,
        () -> c.kv().storeAndForward(new Wire.WriteRequest(write, Set.of("c"), KvService.MAX_HOPS)).join()).getCause();

    assertTrue(failed instanceof Rpc.Declined, failed::toString);
    assertTrue(failed.getMessage().startsWith("previous owner b of \"" + key + "\""), failed.getMessage());
    assertFalse(failed.getMessage().contains("previous owner a"), "c did not wait for b's own step: "
        + failed.getMessage());
  }
  /**
   * A previous owner no longer in the ring (crashed, or left; still listed until its change is
   * done) is not asked: a write and a read of the key go on without it, where asking it would
   * fail them both.
   */
  @Test
  void aPreviousOwnerNoLongerInTheRing_isNotAsked() {
    InJvmPeer c = peers.get(2);
    previousOwner = Map.of("c", List.of("gone"));
    assertEquals(Optional.empty(), c.kv().get(key).entry());
    KvService.Written written = c.kv().put(key, "v");
    assertEquals(List.of("c"), written.owners());
    assertEquals("v", c.store().get(key).orElseThrow().value());
  }

  /**
   * An owner that forwards a write (to an owner the sender did not write to) still answers with
   * its own check of the key's previous owners: the newer version held there, and a previous owner
   * that does not answer. Its reply merges the forward's answers with its own. Three more peers,
   * replicas 2; the key is owned by b and c, and c's previous owner for it is a.
   */
  @Test
  void aForwardingOwner_stillAnswersWithItsCheckOfThePreviousOwners() throws Exception {
    List<InJvmPeer> two = new ArrayList<>();
    try {
      String cluster = InJvmPeer.clusterName("write-coming-in-forwarded");
      for (String id : List.of("a", "b", "c")) {
        two.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(2),
            SHORT, kv -> kv::handleWrite, k -> id.equals("c") ? List.of("a") : List.of()));
      }
      InJvmPeer.awaitOneRing(two);
      InJvmPeer a = two.get(0);
      InJvmPeer c = two.get(2);
      String forwarded = c.keyOwnedBy(Set.of("b", "c"));
      Version ahead = new Version(VersionClock.systemMicros() + 60_000_000L, "a");
      a.store().merge(Entry.of(forwarded, "older, from a fast clock", ahead));
      Entry write = Entry.of(forwarded, "newer", new Version(VersionClock.systemMicros(), "c"));

      Wire.WriteReply reply = c.kv().storeAndForward(new Wire.WriteRequest(write, Set.of("c"), 0)).join();
      assertEquals(Set.of("b", "c"), reply.storedBy().keySet(), "c forwarded it to b");
      assertEquals(ahead, reply.held(), "the version c's previous owner holds");

      a.rpc().close();
      Throwable failed = assertThrows(CompletionException.class,
          () -> c.kv().storeAndForward(new Wire.WriteRequest(write, Set.of("c"), 0)).join()).getCause();
      assertTrue(failed instanceof Rpc.Declined && failed.getMessage().startsWith("previous owner a"),
          failed::toString);
    } finally {
      InJvmPeer.closeAll(two);
    }
  }

  /**
   * A previous owner asked with no step left (c asks b, b asks a) answers with what it holds and
   * goes back no further, though the key is coming in to it too: it does not even look up its own
   * previous owners.
   */
  @Test
  void aPreviousOwnerAskedWithNoStepLeft_goesBackNoFurther() {
    InJvmPeer c = peers.get(2);
    previousOwner = Map.of("c", List.of("b"), "b", List.of("a"), "a", List.of("b"));
    List<String> lookedUp = new CopyOnWriteArrayList<>();
    whenAsking = lookedUp::add;

    assertEquals(Optional.empty(), c.kv().get(key).entry());
    assertEquals(List.of("c", "b"), lookedUp, "c and b went back a step; a, with none left, did not");
  }
}
