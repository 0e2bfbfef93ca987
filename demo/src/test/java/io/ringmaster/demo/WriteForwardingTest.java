package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A write that reaches an owner whose ring is newer than the sender's goes on from there to the
 * owners the sender did not write to ({@link KvService#storeAndForward}), and what they answer gets
 * back to the sender. Three real nodes in this JVM (the in-memory JGroups stack), each with the
 * demo's RPC channel, store and key service, replicas 2.
 *
 * <p>The rings differ the way they do in a running cluster while a peer leaves: the leaving peer
 * routes by the ring without itself ({@link Routing#startLeaving}) while the others still route
 * by the ring with it, so a write they send it must go on to the peer that takes its place.
 */
class WriteForwardingTest {
  private final List<InJvmPeer> nodes = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private InJvmPeer c;

  @BeforeEach
  void startThreePeers() throws Exception {
    InJvmPeer.startAll(nodes, "write-forwarding", List.of("a", "b", "c"));
    a = nodes.get(0);
    b = nodes.get(1);
    c = nodes.get(2);
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(nodes);
  }

  /** A key that a and b own in the ring the three share, so c holds it only if b forwards it. */
  private String keyOwnedByAAndB() {
    return a.keyOwnedBy(Set.of("a", "b"));
  }

  /**
   * A write through an owner of its key stores the writer's copy itself, never over the channel,
   * and calls each other owner once: in its first round, which then holds every copy. (Skipping
   * only the others, or calling itself as well, still ends stored, a round or a copy later.)
   */
  @Test
  void aWriteThroughAnOwner_storesItsOwnCopyItself_andCallsEachOtherOwnerOnce() {
    String key = keyOwnedByAAndB();
    Map<String, AtomicInteger> writesServed = new TreeMap<>();
    for (InJvmPeer n : nodes) {
      AtomicInteger served = new AtomicInteger();
      writesServed.put(n.id(), served);
      n.rpc().handleQuickly(Wire.OP_WRITE, in -> {
        served.incrementAndGet();
        return n.kv().handleWrite(in);
      });
    }

    KvService.Written written = a.kv().put(key, "v1");

    assertEquals(Set.of("a", "b"), Set.copyOf(written.owners()));
    assertEquals("{a=0, b=1, c=0}", writesServed.toString(), "write requests each peer served");
    assertEquals(written.version(), b.store().get(key).orElseThrow().version());
    assertEquals(written.version(), a.store().get(key).orElseThrow().version());
  }

  @Test
  void aWriteToALeavingOwner_goesOnToTheOwnerTakingItsPlace() {
    String key = keyOwnedByAAndB();
    b.routing().startLeaving();
    assertEquals(Set.of("a", "c"), Set.copyOf(b.routing().owners(key)), "b routes by the ring without itself");

    KvService.Written written = a.kv().put(key, "v1");

    assertEquals(Set.of("a", "b"), Set.copyOf(written.owners()), "a wrote to the owners in its own ring");
    for (InJvmPeer n : nodes) {
      Entry held = n.store().get(key).orElseThrow(() -> new AssertionError(n.id() + " holds the write"));
      assertEquals("v1", held.value(), n.id());
      assertEquals(written.version(), held.version(), n.id());
    }
    assertTrue(b.counters().writesForwarded.sum() >= 1, "b forwarded the write, to c");
    assertEquals(0, a.counters().writesForwarded.sum() + c.counters().writesForwarded.sum(),
        "a and c, on the shared ring, forwarded nothing");
  }

  @Test
  void aNewerVersionOnTheOwnerReachedByForwarding_makesTheSenderWriteAgainPastIt() {
    String key = keyOwnedByAAndB();
    b.routing().startLeaving();
    // c holds a copy stamped a minute ahead of a's clock: a concurrent write from a fast clock.
    Version ahead = new Version(VersionClock.systemMicros() + 60_000_000L, "c");
    c.store().merge(Entry.of(key, "from the future", ahead));

    KvService.Written written = a.kv().put(key, "v2");

    assertTrue(written.version().isNewerThan(ahead),
        "c's answer came back through b, and a stamped its write past it: " + written.version());
    for (InJvmPeer n : nodes) {
      Entry held = n.store().get(key).orElseThrow();
      assertEquals("v2", held.value(), n.id() + " holds a's write, not the older one");
      assertEquals(written.version(), held.version(), n.id());
    }
  }

  @Test
  void twoPeersLeavingAtOnce_oneCopyAKey_aWriteThroughOneOfThemOrThroughThePeerStaying_endsOnThePeerStaying() throws Exception {
    // One copy per key, and two peers leaving at once, neither knowing of the other yet: the key's
    // owner x forwards to its successor y, which would take the write and leave with it.
    String cluster = InJvmPeer.clusterName("write-forwarding-leavers");
    List<InJvmPeer> single = startWithOneCopy(cluster, List.of("x", "y", "z"));
    InJvmPeer x = single.get(0);
    InJvmPeer y = single.get(1);
    InJvmPeer z = single.get(2);
    List<String> keys = keysOfXThenY(z, 2);
    x.routing().startLeaving();
    y.routing().startLeaving();

    // Through x, which writes to y by the ring it leaves behind, naming itself as leaving: y, by
    // the ring without both, passes it on to z. (First: x learns below that y is leaving.)
    KvService.Written throughX = x.kv().put(keys.get(1), "v7");

    assertEquals(List.of("y"), throughX.owners());
    assertEquals(throughX.version(), z.store().get(keys.get(1)).orElseThrow(() -> new AssertionError(
        "z holds the write made through x: y took x for a leaver")).version());

    // Through z, which stays: x forwards to y, y refuses, x routes around it, z writes again.
    KvService.Written written = z.kv().put(keys.get(0), "v5");

    assertEquals(List.of("x"), written.owners());
    Entry held = z.store().get(keys.get(0)).orElseThrow(() -> new AssertionError(
        "z, the one peer staying, holds the write: y refused it, and x routed around y"));
    assertEquals(written.version(), held.version());
    assertEquals("v5", held.value());
    assertFalse(x.routing().ring().contains("y"), "x took y's refusal for a leave");
  }

  @Test
  void aWriteThroughALeavingPeer_goesToTheOwnersThatStay_andNoneForwardsItBack() {
    String key = keyOwnedByAAndB();
    b.routing().startLeaving();

    KvService.Written written = b.kv().put(key, "v6");

    assertEquals(Set.of("a", "c"), Set.copyOf(written.owners()), "b wrote by the ring it leaves behind");
    for (InJvmPeer n : List.of(a, c)) {
      assertEquals(written.version(), n.store().get(key).orElseThrow().version(), n.id());
    }
    assertEquals(0, a.counters().writesForwarded.sum() + c.counters().writesForwarded.sum(),
        "a, whose ring still names b, did not forward the write to it");
    assertEquals(written.version(), b.store().get(key).orElseThrow().version(),
        "b keeps a copy for the reads of the peers that still route to it");
  }

  @Test
  void aWriteAtTheHopLimit_isStoredButNotForwarded_andFailsNamingTheLimitAndTheOwners() throws Exception {
    String key = keyOwnedByAAndB();
    Entry write = Entry.of(key, "v3", new Version(VersionClock.systemMicros(), "c"));
    // As if the writer's ring had named b alone: b forwards to a, unless the hops are used up.
    CompletionException failed = assertThrows(CompletionException.class, () -> b.kv().storeAndForward(
        new Wire.WriteRequest(write, Set.of("b"), KvService.MAX_HOPS)).join());

    assertInstanceOf(IllegalStateException.class, failed.getCause());
    String message = failed.getCause().getMessage();
    assertTrue(message.contains("hop limit " + KvService.MAX_HOPS) && message.contains("[a]"), message);
    assertEquals(write, b.store().get(key).orElseThrow(), "b stored the write before it looked further");
    assertTrue(a.store().get(key).isEmpty(), "nothing went on to a");

    // One hop fewer, and it goes on, one hop further. Its call to a has 0.8 s (each hop waits less
    // than the one before it): asked again if the first call on a cold channel takes longer on a slow machine.
    List<Integer> hopsAtA = new CopyOnWriteArrayList<>();
    a.rpc().handleQuickly(Wire.OP_WRITE, in -> {
      Wire.WriteRequest forwarded = Wire.readWrite(in);
      hopsAtA.add(forwarded.hops());
      return a.kv().storeAndForward(forwarded).thenApply(Wire::writeReply);
    });
    Wire.WriteReply reply = await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> b.kv()
        .storeAndForward(new Wire.WriteRequest(write, Set.of("b"), KvService.MAX_HOPS - 1)).get(10, TimeUnit.SECONDS),
        r -> true);
    // Each named with its own process, a through b's forward too: the writer checks them.
    assertEquals(Map.of("a", a.routing().ownProcess().orElseThrow(), "b", b.routing().ownProcess().orElseThrow()),
        reply.storedBy());
    assertNotEquals(reply.storedBy().get("a"), reply.storedBy().get("b"));
    assertEquals(write, a.store().get(key).orElseThrow());
    assertEquals(Set.of(KvService.MAX_HOPS), Set.copyOf(hopsAtA), "b's forward counts one hop more than it was sent with");
  }

  @Test
  void anOwnerOnTheSendersRing_storesWithoutForwarding() throws Exception {
    String key = keyOwnedByAAndB();
    Entry write = Entry.of(key, "v4", new Version(VersionClock.systemMicros(), "a"));

    Wire.WriteReply reply = b.kv().storeAndForward(new Wire.WriteRequest(write, Set.of("a", "b"), 0))
        .get(10, TimeUnit.SECONDS);

    assertEquals(Map.of("b", b.routing().ownProcess().orElseThrow()), reply.storedBy());
    assertEquals(write.version(), reply.held());
    assertEquals(0, b.counters().writesForwarded.sum());
    assertTrue(c.store().get(key).isEmpty());
  }

  /**
   * An owner counts a write it was sent once it changed its store, not again when the same write
   * comes back; its clock follows the write's stamp, so that its own next write, of any key, is
   * stamped past it; and the peer a put or a delete came through counts it, once.
   */
  @Test
  void anOwnerCountsAWriteThatChangedItsStore_andStampsItsOwnWritesPastIt_andAPeerCountsThePutsAndDeletesItServes()
      throws Exception {
    String key = keyOwnedByAAndB();
    Version ahead = new Version(VersionClock.systemMicros() + 60_000_000L, "a"); // a's clock, a minute ahead
    Wire.WriteRequest request = new Wire.WriteRequest(Entry.of(key, "v8", ahead), Set.of("a", "b"), 0);

    b.kv().storeAndForward(request).get(10, TimeUnit.SECONDS);
    assertEquals(1, b.counters().writesStored.sum(), "b stored the write");
    b.kv().storeAndForward(request).get(10, TimeUnit.SECONDS);
    assertEquals(1, b.counters().writesStored.sum(), "the same write again changed nothing at b");

    KvService.Written put = b.kv().put(b.keyOwnedBy(Set.of("b", "c")), "v9");
    assertTrue(put.version().isNewerThan(ahead), "b's next stamp is past the one it stored: " + put.version());
    KvService.Written deleted = b.kv().delete(b.keyOwnedBy(Set.of("b", "c")));
    assertTrue(deleted.version().isNewerThan(put.version()));
    assertEquals(List.of(1L, 1L), List.of(b.counters().putsServed.sum(), b.counters().deletesServed.sum()),
        "b served one put and one delete");
    assertEquals(0, c.counters().putsServed.sum() + c.counters().deletesServed.sum(),
        "c, an owner written to, served none");
  }

  /**
   * A leaving peer that forwards a write names itself as leaving, though its sender named no one:
   * a receiver leaving too takes it for a leaver, and routes around it. One copy per key; x and y
   * leave at once, neither knowing of the other; z writes a key of x's, which x forwards to y, its
   * successor, and y refuses.
   */
  @Test
  void aLeavingPeerForwardingAWriteNamedByNoOne_namesItself_andALeavingReceiverTakesItForALeaver() throws Exception {
    String cluster = InJvmPeer.clusterName("write-forwarding-names");
    List<InJvmPeer> single = startWithOneCopy(cluster, List.of("x", "y", "z"));
    InJvmPeer x = single.get(0);
    InJvmPeer y = single.get(1);
    InJvmPeer z = single.get(2);
    String key = keysOfXThenY(z, 1).get(0);
    x.routing().startLeaving();
    y.routing().startLeaving();
    assertTrue(y.routing().ring().contains("x"), "y does not know yet that x leaves");

    KvService.Written written = z.kv().put(key, "v10");

    assertEquals(written.version(), z.store().get(key).orElseThrow(() -> new AssertionError(
        "z, the one peer staying, holds the write")).version());
    assertFalse(y.routing().ring().contains("x"), "y took x for a leaver: x's forward named it");
  }

  /**
   * A leaving peer that forwards a write already naming a leaver names the leavers of both, the
   * request's and its own: here y, leaving, writes a key of x's; x, leaving too, forwards it to w,
   * its successor once y is gone, naming y and itself; w, leaving as well and knowing of neither,
   * refuses it, but takes both for leavers. One copy per key; z, the one peer staying, ends with it.
   */
  @Test
  void aLeavingPeerForwardingAWriteThatNamesALeaver_namesItselfToo() throws Exception {
    String cluster = InJvmPeer.clusterName("write-forwarding-union");
    List<InJvmPeer> single = startWithOneCopy(cluster, List.of("w", "x", "y", "z"));
    InJvmPeer w = single.get(0);
    InJvmPeer x = single.get(1);
    InJvmPeer y = single.get(2);
    InJvmPeer z = single.get(3);
    String key = null;
    for (int i = 0; key == null; i++) {
      String k = "key-" + i;
      boolean ofXThenW = z.routing().owners(k).equals(List.of("x"))
          && z.routing().ring().without("x").without("y").ownerOf(k).id().equals("w");
      key = ofXThenW ? k : null;
    }
    x.routing().startLeaving();
    y.routing().startLeaving();
    w.routing().startLeaving();

    KvService.Written written = y.kv().put(key, "v1");

    assertEquals(written.version(), z.store().get(key).orElseThrow(() -> new AssertionError(
        "z, the one peer staying, holds the write")).version());
    assertFalse(w.routing().ring().contains("y"), "w took y, the writer, for a leaver");
    assertFalse(w.routing().ring().contains("x"), "w took x, the forwarder, for a leaver: x named itself too");
  }

  /** Starts peers of the given ids keeping one copy of each key, closed after the test, once they share a ring. */
  private List<InJvmPeer> startWithOneCopy(String cluster, List<String> ids) throws Exception {
    List<InJvmPeer> started = new ArrayList<>();
    for (String id : ids) {
      InJvmPeer p = InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(1));
      started.add(p);
      nodes.add(p);
    }
    InJvmPeer.awaitOneRing(started);
    return started;
  }

  /** The first {@code count} keys {@code key-0, key-1, ...} that x owns, whose owner in the ring without x is y. */
  private static List<String> keysOfXThenY(InJvmPeer peer, int count) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; keys.size() < count; i++) {
      String k = "key-" + i;
      if (peer.routing().owners(k).equals(List.of("x")) && peer.routing().ring().without("x").ownerOf(k).id().equals("y")) {
        keys.add(k);
      }
    }
    return keys;
  }
}
