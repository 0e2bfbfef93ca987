package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.testing.LocalCluster;
import io.ringmaster.testing.OwnershipFold;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jgroups.Address;
import org.junit.jupiter.api.Test;

/**
 * Two nodes started with one id on the two sides of a partition ({@link Islands}): each holds the
 * id on its side. After the heal one keeps it and the other is refused, and the refused one must
 * not answer "mine" for the keys of the member with its id (its ring has a member equal to its
 * own, the holder), or two processes would each serve the same keys as theirs.
 */
class TwinIdMergeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void afterTheHeal_onlyTheHolderOfTheIdAnswersForItsKeys() {
    List<Address> addresses = new ArrayList<>();
    try (TestCluster cluster = new TestCluster("twin-id")) {
      Ringmaster a = cluster.start(builder(cluster, "a"));
      Ringmaster b = cluster.start(builder(cluster, "b"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      Ringmaster twin;
      try (AutoCloseable on = Islands.startOn(1)) {
        twin = cluster.start(builder(cluster, "a"));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      assertTrue(twin.isInRing(), "alone on its island, it holds the id there");
      assertTrue(twin.isPrimary("user:1"), "and owns every key there");

      Ringmaster holder = heal(a, b, twin, addresses);
      Ringmaster refused = holder == a ? twin : a;

      Ringmaster.RingState state = refused.ringState();
      assertFalse(state.inRing());
      assertEquals(b.viewId(), state.viewId());
      assertEquals(b.ring(), state.ring());
      int held = 0;
      int heldByTheTwinsId = 0;
      for (int k = 0; k < 2_000; k++) {
        String key = "user:" + k;
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        long position = HashRing.position(key);
        boolean holders = b.ring().ownerOf(key).id().equals("a");
        boolean local = b.ring().owners(key, 2).stream().anyMatch(m -> m.id().equals("a"));
        assertEquals(holders, holder.isPrimary(key), key);
        assertEquals(holders, holder.isPrimaryAtPosition(position), key);
        assertEquals(local, holder.isLocal(key), key);
        assertEquals(local, holder.isLocalAtPosition(position), key);
        assertFalse(refused.isPrimary(key) || refused.isPrimary(bytes) || refused.isPrimaryAtPosition(position),
            key + ": the refused twin is no owner");
        assertFalse(refused.isLocal(key) || refused.isLocal(bytes) || refused.isLocalAtPosition(position),
            key + ": the refused twin is no owner");
        // What the ring alone says of the twin's Member: it is the holder's, equal to it.
        heldByTheTwinsId += state.ring().isOwnerOfPosition(position, 2, refused.localMember()) ? 1 : 0;
        held += holders ? 1 : 0;
      }
      assertTrue(held > 0, "the holder is the primary of some keys: " + held);
      assertTrue(heldByTheTwinsId > 0, "the ring gives the twin's Member keys, which the twin does not own");
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /**
   * Twins of one id that announce other weights and zones: after the heal every node, the refused
   * twin too, has the ring of the holder's weight and zone (not the weight and zone its own node
   * announces), so the refused twin routes every key as the others do, and the gossip of the nodes
   * in the ring finds nothing to report.
   */
  @Test
  void afterTheHeal_twinsOfOtherWeightsAndZones_everyNodeHasTheHoldersRing_andNoDivergenceIsReported() {
    List<Address> addresses = new ArrayList<>();
    try (TestCluster cluster = new TestCluster("twin-id-weights")) {
      Ringmaster a = cluster.start(builder(cluster, "a").zone("z1"));
      Ringmaster b = cluster.start(builder(cluster, "b"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      Ringmaster twin;
      try (AutoCloseable on = Islands.startOn(1)) {
        twin = cluster.start(builder(cluster, "a").weight(3.0).zone("z2"));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      List<Ringmaster> all = List.of(a, b, twin);
      List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
      all.forEach(n -> n.addDivergenceListener(divergences::add));

      Ringmaster holder = heal(a, b, twin, addresses);
      Ringmaster refused = holder == a ? twin : a;
      HashRing ring = b.ring();
      assertEquals(Optional.of(holder.localMember()), ring.member("a"), "the holder's weight and zone");
      for (Ringmaster n : all) {
        assertEquals(ring, n.ring(), n.localMember().toString());
        assertEquals(ring.checksum(), n.ring().checksum(), n.localMember().toString());
      }
      for (int k = 0; k < 2_000; k++) {
        String key = "user:" + k;
        assertEquals(b.owners(key), refused.owners(key), key);
        assertEquals(b.owners(key), holder.owners(key), key);
        assertEquals(b.owners(key).contains(holder.localMember()), holder.isLocal(key), key);
        assertFalse(refused.isLocal(key), key);
      }
      // Rounds of gossip in the merged view: each node in the ring hears from the other a few times.
      long heardByB = b.stats().gossipReceived();
      long heardByHolder = holder.stats().gossipReceived();
      await("gossip rounds after the heal").atMost(WAIT).until(() -> b.stats().gossipReceived() >= heardByB + 5
          && holder.stats().gossipReceived() >= heardByHolder + 5 && b.ring().equals(ring));
      assertEquals(List.of(), divergences.stream().filter(d -> d.kind() != RingDivergence.Kind.SPLIT_VIEW).toList());
      all.forEach(n -> assertEquals(n.stats().splitViewDivergences(), n.stats().divergences(),
          n.localMember().toString()));
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /**
   * The test kit with a refused twin running: {@link LocalCluster} does not call its nodes agreed
   * while one of them is refused, though its ring is theirs and holds its id (the holder's); the
   * nodes in the ring agree as a side. The twin's fold, told it lost what it held on its island,
   * matches the ring without it, and the holder's matches the ring.
   */
  @Test
  void theTestKit_doesNotCountARefusedTwinAsAgreeing_andItsFoldMatchesARingWithoutIt() throws Exception {
    List<Address> addresses = new ArrayList<>();
    Map<Ringmaster, OwnershipFold> folds = new HashMap<>();
    try (LocalCluster cluster = new LocalCluster("twin-id kit")) {
      Ringmaster a = startFolded(cluster, "a", folds);
      Ringmaster b = startFolded(cluster, "b", folds);
      cluster.awaitAgreement(WAIT);
      Ringmaster twin;
      try (AutoCloseable on = Islands.startOn(1)) {
        twin = startFolded(cluster, "a", folds);
      }
      List<Ringmaster> all = List.of(a, b, twin);
      Ringmaster holder = heal(a, b, twin, addresses);
      Ringmaster refused = holder == a ? twin : a;

      RingmasterException apart = assertThrows(RingmasterException.class,
          () -> cluster.awaitAgreement(Duration.ofSeconds(2)), "a refused node is no part of an agreement");
      assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, apart.reason());
      HashRing ring = cluster.awaitAgreement(List.of(holder, b), WAIT);
      assertEquals(ring, refused.ring(), "the refused twin has the others' ring");
      for (Ringmaster n : all) {
        assertTrue(n.awaitListeners(WAIT), "listeners idle");
      }
      assertEquals(Optional.empty(), folds.get(holder).disagreement(holder));
      assertEquals(Optional.empty(), folds.get(refused).disagreement(refused), "the refused twin holds nothing");
      assertTrue(folds.get(refused).disagreement(ring, "a", 2).isPresent(),
          "the twin's fold is not the ring's for its id, which the holder owns");
      all.forEach(n -> assertEquals(List.of(), folds.get(n).violations()));
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /**
   * Puts a, b and the twin on one island (the heal), keeping their addresses for the test to
   * forget, and waits for one view of the three in which one of the two with the id holds it;
   * returns that one.
   */
  private static Ringmaster heal(Ringmaster a, Ringmaster b, Ringmaster twin, List<Address> addresses) {
    List<Ringmaster> all = List.of(a, b, twin);
    all.forEach(n -> addresses.add(n.channel().getAddress()));
    addresses.forEach(x -> Islands.move(x, 0));
    await("one view of the three, one holder of the id").atMost(WAIT).until(() -> all.stream()
        .allMatch(n -> n.channel().getView().size() == 3 && n.viewId() == b.viewId())
        && a.isInRing() != twin.isInRing());
    return a.isInRing() ? a : twin;
  }

  private static Ringmaster startFolded(LocalCluster cluster, String id, Map<Ringmaster, OwnershipFold> folds) {
    OwnershipFold fold = new OwnershipFold();
    Ringmaster node = cluster.start(cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(64).replicas(2),
        n -> n.addOwnershipListener(fold));
    folds.put(node, fold);
    return node;
  }

  private static Ringmaster.Builder builder(TestCluster cluster, String id) {
    return cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(64).replicas(2);
  }
}
