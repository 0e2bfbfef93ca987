package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jgroups.Address;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A node with other ring parameters, alone on its side of a partition (so its start() succeeded),
 * then the heal. Whether its address sorts before or after the other side's coordinator (JGroups
 * would make the lower one the merged view's coordinator), the three correct members keep their
 * ring and the misconfigured node is refused, sees the same ring as they do, and says nothing.
 */
class MisconfiguredMergeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int MAX_ATTEMPTS = 40; // each 1/2 likely to sort as wanted

  @ParameterizedTest(name = "its address sorts {0}")
  @ValueSource(strings = {"first", "last"})
  void misconfiguredNodeAloneOnItsSide_afterTheHeal_isRefused_andSharesTheClustersRing(String sorts)
      throws Exception {
    try (TestCluster cluster = new TestCluster("misconfigured-" + sorts)) {
      List<Ringmaster> good = new ArrayList<>();
      List<MembershipChange.Refusal> goodHeard = new CopyOnWriteArrayList<>();
      List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
      for (String id : List.of("a", "b", "c")) {
        good.add(cluster.start(builder(cluster, id, 64), n -> {
          n.addMembershipListener(change -> goodHeard.addAll(change.refused()));
          n.addDivergenceListener(divergences::add);
        }));
      }
      TestCluster.awaitAgreement(good, 3, WAIT);
      Address coordinator = good.get(0).channel().getView().getCoord();

      List<MembershipChange.Refusal> badHeard = new CopyOnWriteArrayList<>();
      Ringmaster bad = null;
      for (int island = 1; bad == null; island++) {
        assertTrue(island <= MAX_ATTEMPTS, "no address sorted " + sorts + " in " + MAX_ATTEMPTS + " attempts");
        Ringmaster candidate;
        try (AutoCloseable on = Islands.startOn(island)) {
          candidate = cluster.start(builder(cluster, "bad", 128), n -> {
            n.addMembershipListener(change -> badHeard.addAll(change.refused()));
            n.addDivergenceListener(divergences::add);
          });
        }
        assertTrue(candidate.isInRing(), "alone on its island, it starts a cluster of its own");
        Address address = candidate.channel().getAddress();
        if (address.compareTo(coordinator) < 0 == sorts.equals("first")) {
          bad = candidate;
        } else {
          candidate.closeAbruptly();
          Islands.forget(address);
        }
      }

      List<Ringmaster> all = new ArrayList<>(good);
      all.add(bad);
      List<Address> addresses = all.stream().map(n -> n.channel().getAddress()).toList();
      try {
        addresses.forEach(a -> Islands.move(a, 0));
        Ringmaster misconfigured = bad;
        await().atMost(WAIT).until(() -> all.stream().allMatch(n -> n.channel().getView().size() == 4
            && n.viewId() == n.channel().getView().getViewId().getId()));

        for (Ringmaster n : good) {
          assertTrue(n.isInRing(), () -> n.localMember().id() + " keeps its place: " + n.members());
          assertEquals(List.of("a", "b", "c"), n.members().stream().map(Member::id).toList());
          assertEquals(64, n.ring().virtualNodes());
        }
        assertFalse(bad.isInRing(), "the misconfigured node is refused");
        assertEquals(good.get(0).ring().checksum(), bad.ring().checksum(),
            "the refused node's ring is the cluster's, so its lookups agree with theirs");
        for (int k = 0; k < 1000; k++) {
          assertEquals(good.get(0).owners("user:" + k), bad.owners("user:" + k));
        }
        await().atMost(WAIT).until(() -> badHeard.stream().anyMatch(MembershipChange.Refusal::local)
            && goodHeard.stream().anyMatch(r -> r.nodeId().equals("bad") && !r.local()));
        assertTrue(badHeard.stream().anyMatch(r -> r.reason().contains("virtualNodes: 128 on bad, 64 on")),
            badHeard::toString);

        // Gossip goes on among a, b and c; the refused node sends none, and no one finds a divergence.
        long received = good.stream().mapToLong(n -> n.stats().gossipReceived()).sum();
        await().atMost(WAIT).until(() -> good.stream().mapToLong(n -> n.stats().gossipReceived()).sum()
            >= received + 6);
        assertEquals(0, misconfigured.stats().gossipSent(), "a refused node gossips nothing");
        assertEquals(List.of(), divergences);
      } finally {
        addresses.forEach(Islands::forget);
      }
    }
  }

  private static Ringmaster.Builder builder(TestCluster cluster, String id, int virtualNodes) {
    return cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(virtualNodes).replicas(2);
  }
}
