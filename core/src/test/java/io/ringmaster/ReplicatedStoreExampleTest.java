package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.testing.LocalCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import org.junit.jupiter.api.Test;

/**
 * A replicated key-value store on Ringmaster, two copies of every key, keyed by 16-byte session
 * ids: a write goes to every owner of its key, and the ownership changes alone move the copies.
 * On each change a node fetches what it gained from the sources still in the cluster, then hands
 * what it lost to the new owners and drops its copy only once they hold it (a push, which is also
 * its hand-off when it leaves). The nodes run in one JVM, so a node reaches another's store
 * directly; a store that is gone (its node crashed or left) answers nothing, as over a network.
 */
class ReplicatedStoreExampleTest {
  private static final int REPLICAS = 2;
  private static final Duration WAIT = Duration.ofSeconds(60);

  /** Every running node's store, by node id: the network, in this test. */
  private final Map<String, Store> stores = new ConcurrentHashMap<>();
  /** What the test wrote, the truth every store is checked against. */
  private final NavigableMap<byte[], byte[]> written = new ConcurrentSkipListMap<>(Arrays::compare);
  private final Random random = new Random(84);

  /** One node's copies; byte[] keys, ordered by content. */
  private final class Store implements OwnershipListener {
    final NavigableMap<byte[], byte[]> copies = new ConcurrentSkipListMap<>(Arrays::compare);

    @Override
    public void onOwnershipChange(OwnershipChange change) {
      fetchGained(change);
      handOffLost(change);
    }

    /** Copies each gained range from every source still in the ring (one may lack a late write). */
    private void fetchGained(OwnershipChange change) {
      for (Member source : change.sourcesInRing()) {
        Store from = stores.get(source.id());
        if (from == null) {
          continue; // gone since that ring: the other sources answer
        }
        change.gainedKeys(source, from.copies.keySet(), HashRing::position).values().forEach(keys -> {
          for (byte[] key : keys) {
            byte[] value = from.copies.get(key);
            if (value != null) {
              copies.putIfAbsent(key, value);
            }
          }
        });
      }
    }

    /** Pushes each lost key to its new owners, then drops it: never before every one holds it. */
    private void handOffLost(OwnershipChange change) {
      change.lostKeys(copies.keySet(), HashRing::position).forEach((lost, keys) -> {
        for (byte[] key : keys) {
          byte[] value = copies.get(key);
          boolean handedOff = true;
          for (Member owner : lost.destinations()) {
            Store destination = stores.get(owner.id());
            if (destination == null) {
              handedOff = false; // unreachable: keep the copy rather than lose the key
            } else {
              destination.copies.putIfAbsent(key, value);
            }
          }
          if (handedOff) {
            copies.remove(key);
          }
        }
      });
    }
  }

  @Test
  void replicatedStore_joinPartitionCrashLeave_everyKeyOnExactlyItsOwners()
      throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("replicated-store", b -> b.replicas(REPLICAS))) {
      Ringmaster a = start(cluster, "a");
      Ringmaster b = start(cluster, "b");
      Ringmaster c = start(cluster, "c");
      cluster.awaitSettled(WAIT);
      write(a, 2_000);
      assertEveryKeyOnExactlyItsOwners(cluster.awaitSettled(WAIT), cluster.nodes());

      Ringmaster d = start(cluster, "d"); // the old owners push, d fetches
      assertEveryKeyOnExactlyItsOwners(cluster.awaitSettled(WAIT), cluster.nodes());

      List<Ringmaster> majority = List.of(a, b, c);
      cluster.partition(majority, List.of(d));
      HashRing majorityRing = cluster.awaitSettled(majority, WAIT);
      cluster.awaitSettled(List.of(d), WAIT);
      write(a, 200); // d cannot hear of these: at the heal, those who lose d's keys push them
      assertEveryKeyOnExactlyItsOwners(majorityRing, majority);
      cluster.heal();
      assertEveryKeyOnExactlyItsOwners(cluster.awaitSettled(WAIT), cluster.nodes());

      cluster.crash(b); // b's copies are gone: every key it held has its other replica
      stores.remove("b");
      assertEveryKeyOnExactlyItsOwners(cluster.awaitSettled(WAIT), cluster.nodes());

      Store leaver = stores.get("c");
      c.close(); // LEAVING: c pushes everything, then drops it
      assertTrue(c.leftIdle());
      stores.remove("c");
      assertEquals(0, leaver.copies.size(), "copies c kept after its hand-off");
      assertEveryKeyOnExactlyItsOwners(cluster.awaitSettled(WAIT), cluster.nodes());
    }
  }

  /** Starts a node (two replicas, as the cluster builds every node) whose store hears its first ring (its first gains). */
  private Ringmaster start(LocalCluster cluster, String id) {
    Store store = new Store();
    stores.put(id, store);
    return cluster.start(cluster.builder(id), n -> n.addOwnershipListener(store)); // replicas: the cluster's settings
  }

  /** Writes new keys through {@code via}, to every owner of each key in its ring. */
  private void write(Ringmaster via, int count) {
    for (int i = 0; i < count; i++) {
      byte[] key = new byte[16];
      random.nextBytes(key);
      byte[] value = ("session " + written.size()).getBytes(StandardCharsets.UTF_8);
      for (Member owner : via.owners(key)) {
        stores.get(owner.id()).copies.put(key, value);
      }
      written.put(key, value);
    }
  }

  /** Each node holds every written key it owns in {@code ring}, with its value, and no other. */
  private void assertEveryKeyOnExactlyItsOwners(HashRing ring, Collection<Ringmaster> nodes) {
    assertEquals(nodes.size(), ring.members().size(), ring.members().toString());
    assertTrue(nodes.size() >= REPLICAS, "fewer nodes than replicas: " + nodes.size());
    for (Ringmaster node : nodes) {
      String id = node.localMember().id();
      NavigableMap<byte[], byte[]> copies = stores.get(id).copies;
      int owned = 0;
      int missing = 0;
      int wrong = 0;
      for (Map.Entry<byte[], byte[]> entry : written.entrySet()) {
        if (ring.owners(entry.getKey(), REPLICAS).stream().anyMatch(m -> m.id().equals(id))) {
          owned++;
          byte[] copy = copies.get(entry.getKey());
          if (copy == null) {
            missing++;
          } else if (!Arrays.equals(copy, entry.getValue())) {
            wrong++;
          }
        }
      }
      int extra = copies.size() - (owned - missing);
      assertEquals("0 missing, 0 wrong, 0 extra",
          missing + " missing, " + wrong + " wrong, " + extra + " extra",
          id + " of " + owned + " keys it owns in a ring of " + ring.members());
    }
  }
}
