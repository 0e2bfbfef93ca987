package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Reads while an owner leaves, with one replica. Until the leaving peer has left the others' view,
 * they still route its keys to it; after its hand-off it has dropped them, yet a read must still
 * find them. And a read through the leaving peer, before its hand-off reached the new owner, must
 * find the copy only it holds. Two real nodes in this JVM (the in-memory JGroups stack, no
 * rebalancer): the test runs the leave's steps itself, in the order the rebalancer does, so that
 * it can read between them.
 */
class LeavingReadTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void keysOfALeavingOwner_readFromEitherPeer_beforeAndAfterItsHandOff() throws Exception {
    String cluster = InJvmPeer.clusterName("leaving-read");
    TestingAids aids = TestingAids.fromSystemProperties();
    InJvmPeer a = InJvmPeer.start(cluster, "a", aids, builder -> builder.replicas(1));
    peers.add(a);
    InJvmPeer b = InJvmPeer.start(cluster, "b", aids, builder -> builder.replicas(1));
    peers.add(b);
    InJvmPeer.awaitOneRing(peers);
    String key = a.keyOwnedBy(Set.of("b"));
    assertEquals(List.of("b"), a.kv().put(key, "v1").owners());
    assertTrue(a.store().get(key).isEmpty(), "only b holds it");

    b.routing().startLeaving(); // b's LEAVING change: from here b routes by the ring without it
    // Through b, before its hand-off: its ring names only a, which has nothing yet.
    KvService.Read before = b.kv().get(key);
    assertEquals(Optional.of("v1"), value(before), "read through b, before its hand-off");
    assertEquals("b", before.servedBy(), "b's own copy counts, ahead of a's answer (which a asked b for)");

    List<Entry> held = List.copyOf(b.store().all());
    Optional<Address> took = b.transfers().pushTo("a", held, Wire.PushKind.MIGRATION, () -> false);
    assertTrue(took.isPresent(), "the hand-off to a");
    assertEquals(1, b.transfers().dropHandedOff(held, Map.of("a", took.get())));
    assertTrue(b.store().get(key).isEmpty(), "b dropped what it handed off");
    assertEquals(Optional.of("v1"), b.store().readable(key).map(Entry::value), "and keeps it readable until it has left");
    // Through a, whose ring still names b as the owner (b has not left the view yet).
    assertEquals(List.of("b"), a.routing().owners(key));
    assertEquals(Optional.of("v1"), value(a.kv().get(key)), "read through a, after b's hand-off");
    assertEquals(Optional.of("v1"), value(b.kv().get(key)), "read through b, after its hand-off");
    assertEquals(0, b.store().size(), "what b handed off is not counted as held");
  }

  /**
   * A read through a peer that is leaving, of a key it never held, while every owner of the key
   * has just joined (no status report from any yet): the leaving peer's own "none" comes at once,
   * and must not stand for the owners' answers, which hold the key (and here come 200 ms later).
   */
  @Test
  void readThroughALeavingPeer_whenEveryOwnerIsNew_waitsForTheOwners() throws Exception {
    String cluster = InJvmPeer.clusterName("leaving-read-new-owners");
    TestingAids aids = TestingAids.fromSystemProperties();
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, aids, builder -> builder.replicas(2), KvService.Timeouts.DEFAULT,
          kv -> kv::handleWrite, key -> List.of(), owner -> false));
    }
    InJvmPeer.awaitOneRing(peers);
    InJvmPeer a = peers.get(0);
    InJvmPeer c = peers.get(2);
    String key = a.keyOwnedBy(Set.of("a", "b"));
    assertEquals(Set.of("a", "b"), Set.copyOf(a.kv().put(key, "v1").owners()));
    assertTrue(c.store().get(key).isEmpty(), "c never held it");

    for (InJvmPeer owner : List.of(a, peers.get(1))) {
      owner.answerReadsAfter(200);
    }
    // Through c before it leaves: no owner has reported, so the read waits for all of them.
    assertEquals(Optional.of("v1"), value(c.kv().get(key)), "read through c, no owner reported yet");
    c.routing().startLeaving();
    assertEquals(Optional.of("v1"), value(c.kv().get(key)), "read through the leaving c");
    // A miss through the leaving c names an owner that said so, not c, which owns nothing.
    String never = IntStream.iterate(0, i -> i + 1).mapToObj(i -> "never-" + i)
        .filter(k -> Set.copyOf(a.routing().owners(k)).equals(Set.of("a", "b"))).findFirst().orElseThrow();
    KvService.Read miss = c.kv().get(never);
    assertTrue(miss.entry().isEmpty(), miss::toString);
    assertTrue(miss.owners().contains(miss.servedBy()), miss::toString);

    // Every owner failing: the leaving c's own "none" is no answer, and the read is refused (503),
    // not a "not found" for a key the owners hold.
    for (InJvmPeer owner : List.of(a, peers.get(1))) {
      owner.rpc().handleQuickly(Wire.OP_GET,
          in -> CompletableFuture.failedFuture(new Rpc.Declined("not now")));
    }
    KvService.Unavailable refused = assertThrows(KvService.Unavailable.class,
        () -> c.kv().get(key));
    assertTrue(refused.getMessage().startsWith("no owner of \"" + key + "\" answered"), refused.getMessage());
  }

  private static Optional<String> value(KvService.Read read) {
    return read.entry().filter(e -> !e.deleted()).map(Entry::value);
  }
}
