package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

      List<Ringmaster> all = List.of(a, b, twin);
      all.forEach(n -> addresses.add(n.channel().getAddress()));
      addresses.forEach(x -> Islands.move(x, 0));
      await("one view of the three, one holder of the id").atMost(WAIT).until(() -> all.stream()
          .allMatch(n -> n.channel().getView().size() == 3 && n.viewId() == b.viewId())
          && a.isInRing() != twin.isInRing());
      Ringmaster holder = a.isInRing() ? a : twin;
      Ringmaster refused = holder == a ? twin : a;

      int held = 0;
      for (int k = 0; k < 2_000; k++) {
        String key = "user:" + k;
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        boolean holders = b.ring().ownerOf(key).id().equals("a");
        assertEquals(holders, holder.isPrimary(key), key);
        assertEquals(b.ring().owners(key, 2).stream().anyMatch(m -> m.id().equals("a")), holder.isLocal(key), key);
        assertFalse(refused.isPrimary(key) || refused.isPrimary(bytes), key + ": the refused twin is no owner");
        assertFalse(refused.isLocal(key) || refused.isLocal(bytes), key + ": the refused twin is no owner");
        held += holders ? 1 : 0;
      }
      assertTrue(held > 0, "the holder is the primary of some keys: " + held);
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  private static Ringmaster.Builder builder(TestCluster cluster, String id) {
    return cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(64).replicas(2);
  }
}
