package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An owner still taking a key in that already holds an <em>older</em> copy of it asks the key's
 * previous owners all the same, and answers with the newest copy: the copy it holds may be a stray
 * that another peer's sweep handed on (that peer held the key before and kept it, its hand-off
 * refused), older than the write its previous owner acknowledged before the change. Real nodes in
 * this JVM (the in-memory JGroups stack); each key service is told which keys are coming in, and
 * from whom, as {@link Incoming} would tell it while the pulls are not done.
 */
class OlderCopyComingInTest {
  private final List<InJvmPeer> peers = new ArrayList<>();
  /** The key the tests read: coming in to the peers that own it. */
  private volatile String key;

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /**
   * Starts a peer for each id, {@code replicas} copies a key, in a new cluster, and picks
   * {@link #key}: the first key whose owners are the peers {@code comingInFrom} names, to each of
   * which it is coming in from the peers named for it.
   */
  private void start(int replicas, List<String> ids, Map<String, List<String>> comingInFrom) throws Exception {
    String cluster = InJvmPeer.clusterName("older-copy-coming-in");
    for (String id : ids) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(replicas),
          KvService.Timeouts.DEFAULT, kv -> kv::handleWrite,
          k -> k.equals(key) ? comingInFrom.getOrDefault(id, List.of()) : List.of()));
    }
    InJvmPeer.awaitOneRing(peers);
    key = peers.get(0).keyOwnedBy(comingInFrom.keySet());
  }

  private InJvmPeer peer(String id) {
    return peers.stream().filter(p -> p.id().equals(id)).findFirst().orElseThrow();
  }

  /** What a read of {@link #key} through each peer returns (none for a tombstone), by peer. */
  private List<Optional<String>> readThroughEach() {
    return peers.stream().map(p -> p.kv().get(key).entry().filter(e -> !e.deleted()).map(Entry::value)).toList();
  }

  /**
   * One copy a key. j owns it, and its pull from a, the owner before, is not done; a holds the
   * write it acknowledged. s, which held the key earlier still, kept an older copy and its sweep
   * now hands it to j. A read through any peer returns a's copy, not j's older one.
   */
  @Test
  void anOlderStrayHandedToANewOwner_doesNotAnswerReads_whileTheNewerCopyIsComingIn() throws Exception {
    start(1, List.of("a", "j", "s"), Map.of("j", List.of("a")));
    long now = VersionClock.systemMicros();
    peer("a").store().merge(Entry.of(key, "acknowledged", new Version(now, "a")));
    peer("s").store().merge(Entry.of(key, "older", new Version(now - 1_000_000L, "s")));

    peer("s").sweeper().sweep();
    assertEquals("older", peer("j").store().get(key).map(Entry::value).orElse(null), "s's sweep handed it to j");
    assertEquals(Optional.empty(), peer("s").store().get(key), "and s dropped it");

    assertEquals(List.of(Optional.of("acknowledged"), Optional.of("acknowledged"), Optional.of("acknowledged")),
        readThroughEach(), "through a, j and s");
    assertEquals(List.of(0L, 3L, 0L), peers.stream().map(p -> p.counters().readsFromPreviousOwners.sum()).toList(),
        "each of the three reads answered by a, counted at j, where it came");

    KvService.Written written = peer("s").kv().put(key, "newest");
    assertEquals(List.of("j"), written.owners());
    assertEquals(List.of(Optional.of("newest"), Optional.of("newest"), Optional.of("newest")), readThroughEach(),
        "a write to j since: j's own copy is the newest now, newer than a's");
  }

  /**
   * The same with a stray tombstone: a key deleted long ago, written again since, does not read
   * as deleted on its new owner while the write is coming in.
   */
  @Test
  void anOlderStrayTombstone_doesNotHideANewerValue_whileItIsComingIn() throws Exception {
    start(1, List.of("a", "j", "s"), Map.of("j", List.of("a")));
    long now = VersionClock.systemMicros();
    peer("a").store().merge(Entry.of(key, "written again", new Version(now, "a")));
    peer("s").store().merge(Entry.tombstone(key, new Version(now - 1_000_000L, "s")));

    peer("s").sweeper().sweep();
    assertTrue(peer("j").store().get(key).orElseThrow().deleted(), "s's sweep handed the tombstone to j");

    KvService.Read read = peer("j").kv().get(key);
    assertEquals("written again", read.entry().orElseThrow().value(), read.toString());
    assertEquals("a", read.entry().get().version().writer());
  }

  /**
   * Two copies a key, both owners new (two joins in a row) and neither pull done: the sweep hands
   * the stray to both, so no owner's answer masks it. A read through any peer returns a's copy.
   */
  @Test
  void anOlderStrayOnBothNewOwners_doesNotAnswerReads_withTwoCopiesAKey() throws Exception {
    start(2, List.of("a", "j", "k", "s"), Map.of("j", List.of("a"), "k", List.of("j", "a")));
    long now = VersionClock.systemMicros();
    peer("a").store().merge(Entry.of(key, "acknowledged", new Version(now, "a")));
    peer("s").store().merge(Entry.of(key, "older", new Version(now - 1_000_000L, "s")));

    peer("s").sweeper().sweep();
    for (String owner : List.of("j", "k")) {
      assertEquals("older", peer(owner).store().get(key).map(Entry::value).orElse(null),
          "s's sweep handed it to " + owner);
    }

    assertEquals(Collections.nCopies(4, Optional.of("acknowledged")), readThroughEach(), "through a, j, k and s");
  }
}
