package io.ringmaster.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange;
import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterException;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The test kit an embedder's tests use: real nodes in one JVM, their failures, and the fold of what they hear. */
class LocalClusterTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /**
   * Three nodes agree; a crash, then a partition and its healing, each end in one ring of the
   * nodes left, and every node's fold of its changes matches its ring at each step, with no change
   * contradicting the one before it; closed, the nodes have left, and told their listeners.
   */
  @Test
  void nodesAgree_throughACrashAPartitionAndItsHealing_andTheirFoldsMatchTheirRings() throws Exception {
    Map<String, OwnershipFold> folds = new LinkedHashMap<>();
    Ringmaster a;
    Ringmaster b;
    try (LocalCluster cluster = new LocalCluster("kit")) {
      for (String id : List.of("a", "b", "c")) {
        OwnershipFold fold = new OwnershipFold();
        folds.put(id, fold);
        cluster.start(cluster.builder(id).replicas(2), n -> n.addOwnershipListener(fold));
      }
      HashRing three = cluster.awaitAgreement(WAIT);
      assertEquals(List.of("a", "b", "c"), three.members().stream().map(Member::id).sorted().toList());
      assertFoldsMatch(cluster, folds);
      a = cluster.nodes().get(0);
      b = cluster.nodes().get(1);
      Ringmaster c = cluster.nodes().get(2);

      cluster.crash(c);
      assertEquals(List.of(a, b), cluster.nodes());
      HashRing two = cluster.awaitAgreement(WAIT);
      assertEquals(List.of("a", "b"), two.members().stream().map(Member::id).sorted().toList());
      assertFoldsMatch(cluster, folds);

      cluster.partition(List.of(a), List.of(b));
      a.awaitRing(r -> r.members().size() == 1, WAIT); // each side alone
      b.awaitRing(r -> r.members().size() == 1, WAIT);
      RingmasterException apart = assertThrows(RingmasterException.class,
          () -> cluster.awaitAgreement(Duration.ofMillis(200)));
      assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, apart.reason());
      assertTrue(apart.getMessage().contains("a: ring view"), apart.getMessage());
      assertFoldsMatch(cluster, folds);

      cluster.heal();
      HashRing merged = cluster.awaitAgreement(WAIT);
      assertEquals(two.checksum(), merged.checksum(), "the same members, so the same ring");
      assertFoldsMatch(cluster, folds);
      assertTrue(folds.get("a").changes().stream().anyMatch(ch -> ch.reason() == OwnershipChange.Reason.MERGE));
    }
    assertTrue(a.channel().isClosed() && b.channel().isClosed(), "closed with the cluster");
    assertTrue(folds.get("a").holdsNothing(), "a's listener heard it leave");
    folds.values().forEach(f -> assertEquals(List.of(), f.violations()));
  }

  private static void assertFoldsMatch(LocalCluster cluster, Map<String, OwnershipFold> folds) throws Exception {
    for (Ringmaster n : cluster.nodes()) {
      assertTrue(n.awaitListeners(WAIT));
      assertEquals(Optional.empty(), folds.get(n.localMember().id()).disagreement(n));
    }
  }

  /** The fold reports a change that contradicts it, and a ring it was not told of. */
  @Test
  void theFold_reportsAChangeHeardTwice_andARingItWasNotToldOf() {
    HashRing empty = HashRing.builder().virtualNodes(16).build();
    HashRing one = empty.withMembers(List.of(Member.of("a")));
    HashRing two = empty.withMembers(List.of(Member.of("a"), Member.of("b")));
    OwnershipFold fold = new OwnershipFold(256, 3);
    OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, -1, 1, empty, one,
        RingDiff.compute(empty, false, one, true, "a", 1));
    fold.onOwnershipChange(join);
    assertEquals(Optional.empty(), fold.disagreement(one, "a", 1));
    assertEquals(List.of(), fold.violations());

    Optional<String> stale = fold.disagreement(two, "a", 1); // b joined; the fold was not told
    assertTrue(stale.isPresent() && stale.get().contains("the changes heard give a PRIMARY, the ring nothing"),
        String.valueOf(stale));

    fold.onOwnershipChange(join); // the same change again
    assertFalse(fold.violations().isEmpty());
    assertTrue(fold.violations().get(0).startsWith("VIEW change to view 1, position "), fold.violations().get(0));
    assertTrue(fold.violations().get(0).endsWith("gained as PRIMARY where it was held as PRIMARY"));
    assertEquals(2, fold.changes().size());
  }

  @Test
  void badArguments_failNamingWhatIsWrong() {
    assertThrows(IllegalArgumentException.class, () -> new LocalCluster(" "));
    assertThrows(IllegalArgumentException.class, () -> new OwnershipFold(1, 0));
    try (LocalCluster cluster = new LocalCluster("kit-args"); LocalCluster other = new LocalCluster("kit-args")) {
      assertNotEquals(cluster.name(), other.name(), "two clusters never share a name");
      Ringmaster a = cluster.start("a");
      IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
          () -> cluster.partition(List.of(a), List.of(a)));
      assertEquals("node a is in two sides of the partition", twice.getMessage());
      Ringmaster stranger = other.start("s");
      IllegalArgumentException foreign = assertThrows(IllegalArgumentException.class, () -> cluster.crash(stranger));
      assertTrue(foreign.getMessage().startsWith("node s was not started by cluster kit-args-"), foreign.getMessage());
      assertEquals(List.of(a), cluster.nodes());
    }
  }
}
