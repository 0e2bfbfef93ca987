package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.LocalCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * A sharded in-memory cache built from the README, docs/api.md and the public javadoc alone: one
 * copy of each entry, on its key's owner. Each node keeps a map of its entries; on every ownership
 * change it pushes the entries of the ranges it lost to their new owner ({@link
 * RingDiff.Lost#destinations()}) and pulls those of the ranges it gained from their old owner
 * ({@link RingDiff.Gained#sources()}), picking the keys of each range with {@link
 * OwnershipChange#lostKeys} and {@link OwnershipChange#gainedKeys}. The pull is what recovers a
 * crashed node's entries, whose listeners hear nothing; the push is what hands a leaving node's on.
 */
class ShardedCacheExampleTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int KEYS = 2_000;

  /**
   * Each node's entries, by node id. Moving entries between these maps stands in for the network a
   * real cache moves them over; a crashed node's map stays here, standing in for the storage (or,
   * with {@code replicas(2)}, the surviving copy) its entries are recovered from.
   */
  private final Map<String, Map<String, String>> caches = new ConcurrentHashMap<>();
  /** How each key moved from one node's map to another's since the last step, once per move. */
  private final Map<String, List<Via>> moves = new ConcurrentHashMap<>();

  /** Who moved an entry: the node that lost it, or the one that gained it. */
  private enum Via { PUSH, PULL }

  /**
   * 2,000 keys written to three nodes stay each on its owner alone through a join, a crash and a
   * graceful leave, and at each step exactly the keys whose owner changed move, each once: pushed
   * by the leaver (the others hear of the leave only once it has left), pulled from the crashed
   * node (which hears nothing), either way on a join.
   */
  @Test
  void everyKeyStaysOnItsOwnerAlone_andOnlyKeysWhoseOwnerChangedMove_throughJoinCrashAndLeave()
      throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("sharded cache example")) {
      Ringmaster a = startNode(cluster, "a");
      Ringmaster b = startNode(cluster, "b");
      Ringmaster c = startNode(cluster, "c");
      HashRing ring = cluster.awaitSettled(WAIT);

      List<Ringmaster> writers = List.of(a, b, c);
      Map<String, String> written = new TreeMap<>();
      for (int i = 0; i < KEYS; i++) {
        String key = "user:" + i;
        Member owner = writers.get(i % writers.size()).ownerOf(key); // any node routes a write
        caches.get(owner.id()).put(key, "value-" + i);
        written.put(key, "value-" + i);
      }
      assertEachKeyOnItsOwnerAlone(cluster, written);

      ring = step(cluster, ring, written, null, () -> startNode(cluster, "d"));
      ring = step(cluster, ring, written, Via.PULL, () -> cluster.crash(b));
      step(cluster, ring, written, Via.PUSH, c::close);
      assertTrue(c.leftIdle(), "c handed its entries on within its leaveTimeout");
      assertEquals(List.of("a", "d"), cluster.nodes().stream().map(n -> n.localMember().id()).toList());
    }
  }

  /** Builds a node whose listener, added before start() to hear its first ring, moves its entries. */
  private Ringmaster startNode(LocalCluster cluster, String id) {
    caches.put(id, new ConcurrentHashMap<>());
    return cluster.start(cluster.builder(id), node -> node.addOwnershipListener(change -> onChange(id, change)));
  }

  /** The cache's listener: push what was lost, pull what was gained. */
  private void onChange(String id, OwnershipChange change) {
    Map<String, String> mine = caches.get(id);
    change.lostKeys(mine.keySet())
        .forEach((lost, keys) -> keys.forEach(key -> move(key, id, lost.destinations().get(0).id(), Via.PUSH)));

    Set<String> sources = new LinkedHashSet<>();
    change.gained().forEach(gained -> gained.sources().forEach(source -> sources.add(source.id())));
    for (String source : sources) {
      change.gainedKeys(caches.get(source).keySet())
          .forEach((gained, keys) -> {
            if (gained.sources().get(0).id().equals(source)) {
              keys.forEach(key -> move(key, source, id, Via.PULL));
            }
          });
    }
  }

  /** Moves an entry, if {@code from} still holds it: a push and a pull of one entry move it once. */
  private void move(String key, String from, String to, Via via) {
    String value = caches.get(from).remove(key);
    if (value != null) {
      caches.get(to).put(key, value);
      moves.merge(key, List.of(via), (earlier, again) -> List.of(earlier.get(0), again.get(0)));
    }
  }

  /**
   * Runs a step of churn, waits until the running nodes agree on a ring and their listeners have
   * handled it, and checks where the entries are and which moved ({@code via} each, unless null).
   * Returns the ring after.
   */
  private HashRing step(LocalCluster cluster, HashRing before, Map<String, String> written, Via via, Runnable churn)
      throws InterruptedException {
    moves.clear();
    churn.run();
    HashRing after = cluster.awaitSettled(WAIT);
    assertEachKeyOnItsOwnerAlone(cluster, written);

    Map<String, List<Via>> expected = new TreeMap<>();
    for (String key : written.keySet()) {
      if (!before.ownerOf(key).equals(after.ownerOf(key))) {
        expected.put(key, List.of(via == null ? moves.getOrDefault(key, List.of(Via.PUSH)).get(0) : via));
      }
    }
    assertFalse(expected.isEmpty(), "the step changed some owners");
    assertEquals(expected, new TreeMap<>(moves), "moved: exactly the keys whose owner changed, each once");
    return after;
  }

  /**
   * Each key is in exactly one node's map, with its value: the owner every running node names for
   * it. Stopped nodes' maps count too, so they must be empty.
   */
  private void assertEachKeyOnItsOwnerAlone(LocalCluster cluster, Map<String, String> written) {
    Map<String, List<String>> holders = new HashMap<>();
    caches.forEach((id, entries) -> entries.keySet()
        .forEach(key -> holders.computeIfAbsent(key, k -> new ArrayList<>()).add(id)));
    assertEquals(written.keySet(), holders.keySet(), "every key is held, and nothing else");
    List<String> misplaced = new ArrayList<>();
    for (Map.Entry<String, String> entry : written.entrySet()) {
      String key = entry.getKey();
      for (Ringmaster node : cluster.nodes()) {
        String owner = node.ownerOf(key).id();
        if (!holders.get(key).equals(List.of(owner)) || !entry.getValue().equals(caches.get(owner).get(key))) {
          misplaced.add(key + " owned by " + owner + " per " + node.localMember().id() + ", held by "
              + holders.get(key));
        }
      }
    }
    assertEquals(List.of(), misplaced.subList(0, Math.min(10, misplaced.size())),
        misplaced.size() + " of " + written.size() * cluster.nodes().size() + " lookups misplaced");
  }
}
