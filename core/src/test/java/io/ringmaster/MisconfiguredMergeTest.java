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
import java.util.function.Predicate;
import org.jgroups.Address;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A node with other ring parameters, alone on its side of a partition (so its start() succeeded),
 * then the heal. Whether its address sorts before or after the other side's coordinator (JGroups
 * would make the lower one the merged view's coordinator), the three correct members keep their
 * ring and the misconfigured node is refused, sees the same ring as they do, and says nothing;
 * and it stays refused when the members before it in the view leave.
 */
class MisconfiguredMergeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int MAX_ATTEMPTS = 40; // each 1/2 likely to sort as wanted

  @ParameterizedTest(name = "its address sorts {0}")
  @ValueSource(strings = {"first", "last"})
  void misconfiguredNodeAloneOnItsSide_afterTheHeal_isRefused_andSharesTheClustersRing(String sorts) {
    try (Healed f = new Healed("misconfigured-" + sorts, List.of("a", "b", "c"),
        (bad, coordinator) -> bad.compareTo(coordinator) < 0 == sorts.equals("first"))) {
      for (Ringmaster n : f.good) {
        assertTrue(n.isInRing(), () -> n.localMember().id() + " keeps its place: " + n.members());
        assertEquals(List.of("a", "b", "c"), n.members().stream().map(Member::id).toList());
        assertEquals(64, n.ring().virtualNodes());
      }
      assertFalse(f.bad.isInRing(), "the misconfigured node is refused");
      assertEquals(f.good.get(0).ring().checksum(), f.bad.ring().checksum(),
          "the refused node's ring is the cluster's, so its lookups agree with theirs");
      for (int k = 0; k < 1000; k++) {
        assertEquals(f.good.get(0).owners("user:" + k), f.bad.owners("user:" + k));
      }
      await().atMost(WAIT).until(() -> f.badHeard.stream().anyMatch(MembershipChange.Refusal::local)
          && f.goodHeard.stream().anyMatch(r -> r.nodeId().equals("bad") && !r.local()));
      assertTrue(f.badHeard.stream().anyMatch(r -> r.reason().contains("virtualNodes: 128 on bad, 64 on")),
          f.badHeard::toString);

      // Gossip goes on among a, b and c; the refused node sends none, and no one finds a divergence.
      long received = f.good.stream().mapToLong(n -> n.stats().gossipReceived()).sum();
      await().atMost(WAIT).until(() -> f.good.stream().mapToLong(n -> n.stats().gossipReceived()).sum()
          >= received + 6);
      assertEquals(0, f.bad.stats().gossipSent(), "a refused node gossips nothing");
      assertEquals(List.of(), f.divergences);
    }
  }

  /**
   * After the heal d joins: the view is a, b, c, bad, d. Then a, b and c leave, and JGroups' own
   * order would make bad the first member, whose parameters everyone would then take.
   */
  @Test
  void membersBeforeTheRefusedNodeLeave_theNextMemberWithTheClustersParametersComesFirst() {
    try (Healed f = new Healed("misconfigured-leave", List.of("a", "b", "c"), (bad, coordinator) -> true)) {
      Ringmaster d = f.cluster.start(builder(f.cluster, "d", 64));
      await().atMost(WAIT).until(() -> d.members().size() == 4 && f.bad.viewId() == d.viewId());
      assertEquals(f.bad.channel().getAddress(), d.channel().getView().getMembers().get(3), "bad before d");
      f.good.forEach(Ringmaster::close);
      await().atMost(WAIT).until(() -> d.channel().getView().size() == 2
          && d.viewId() == d.channel().getView().getViewId().getId() && f.bad.viewId() == d.viewId());
      assertEquals(d.channel().getAddress(), d.channel().getView().getCoord());
      assertTrue(d.isInRing());
      assertEquals(List.of("d"), d.members().stream().map(Member::id).toList());
      assertEquals(64, d.ring().virtualNodes());
      assertFalse(f.bad.isInRing());
      assertEquals(d.ring().checksum(), f.bad.ring().checksum());
    }
  }

  /**
   * One correct member against one misconfigured one is a tie, which goes to the lower address:
   * here bad's, so a is refused. A correct node that joins then makes two against one, and the
   * cluster turns round: a and the joiner in the ring, bad refused.
   */
  @Test
  void tieWonByTheMisconfiguredNode_aCorrectJoinerTurnsItRound() {
    try (Healed f = new Healed("misconfigured-tie", List.of("a"), (bad, coordinator) -> bad.compareTo(coordinator) < 0)) {
      Ringmaster a = f.good.get(0);
      assertFalse(a.isInRing(), "1 to 1: the lower address, bad's, wins the tie");
      Ringmaster b = f.cluster.start(builder(f.cluster, "b", 64));
      await().atMost(WAIT).until(() -> a.viewId() == b.viewId() && f.bad.viewId() == b.viewId());
      for (Ringmaster n : List.of(a, b)) {
        assertTrue(n.isInRing(), () -> n.localMember().id() + ": " + n.members());
        assertEquals(List.of("a", "b"), n.members().stream().map(Member::id).toList());
        assertEquals(64, n.ring().virtualNodes());
      }
      assertFalse(f.bad.isInRing());
      assertEquals(b.ring().checksum(), f.bad.ring().checksum());
    }
  }

  /** {@code goodIds} with virtualNodes 64, and "bad" with 128 started alone on another island, then healed. */
  private static final class Healed implements AutoCloseable {
    final TestCluster cluster;
    final List<Ringmaster> good = new ArrayList<>();
    final Ringmaster bad;
    final List<MembershipChange.Refusal> goodHeard = new CopyOnWriteArrayList<>();
    final List<MembershipChange.Refusal> badHeard = new CopyOnWriteArrayList<>();
    final List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
    private final List<Address> addresses = new ArrayList<>();

    /** @param wanted whether an address for "bad" will do, given the other side's coordinator */
    Healed(String name, List<String> goodIds, java.util.function.BiPredicate<Address, Address> wanted) {
      cluster = new TestCluster(name);
      try {
        for (String id : goodIds) {
          good.add(cluster.start(builder(cluster, id, 64), n -> {
            n.addMembershipListener(change -> goodHeard.addAll(change.refused()));
            n.addDivergenceListener(divergences::add);
          }));
        }
        good.forEach(n -> addresses.add(n.channel().getAddress()));
        TestCluster.awaitAgreement(good, good.size(), WAIT);
        Address coordinator = good.get(0).channel().getView().getCoord();
        bad = startAlone(a -> wanted.test(a, coordinator));
        addresses.add(bad.channel().getAddress());
        addresses.forEach(a -> Islands.move(a, 0));
        List<Ringmaster> all = new ArrayList<>(good);
        all.add(bad);
        await().atMost(WAIT).until(() -> all.stream().allMatch(n -> n.channel().getView().size() == all.size()
            && n.viewId() == n.channel().getView().getViewId().getId()));
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }

    private Ringmaster startAlone(Predicate<Address> wanted) {
      for (int island = 1; island <= MAX_ATTEMPTS; island++) {
        Ringmaster candidate;
        try (AutoCloseable on = Islands.startOn(island)) {
          candidate = cluster.start(builder(cluster, "bad", 128), n -> {
            n.addMembershipListener(change -> badHeard.addAll(change.refused()));
            n.addDivergenceListener(divergences::add);
          });
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        assertTrue(candidate.isInRing(), "alone on its island, it starts a cluster of its own");
        Address address = candidate.channel().getAddress();
        if (wanted.test(address)) {
          return candidate;
        }
        candidate.closeAbruptly();
        Islands.forget(address);
      }
      throw new AssertionError("no address for \"bad\" sorted as wanted in " + MAX_ATTEMPTS + " attempts");
    }

    @Override
    public void close() {
      try {
        cluster.close();
      } finally {
        addresses.forEach(Islands::forget);
      }
    }
  }

  private static Ringmaster.Builder builder(TestCluster cluster, String id, int virtualNodes) {
    return cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(virtualNodes).replicas(2);
  }
}
