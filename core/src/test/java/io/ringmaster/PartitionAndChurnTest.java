package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class PartitionAndChurnTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private static void assertFolds(Map<Ringmaster, OwnershipRecorder> recorders, List<Ringmaster> nodes) {
    for (Ringmaster n : nodes) {
      OwnershipRecorder r = recorders.get(n);
      await().atMost(WAIT).until(() -> r.foldMatches(n.ring(), n.localMember().id(), n.config().replicas()));
      assertEquals(List.of(), r.violations(), n.localMember().id());
    }
  }

  @Test
  void partitionThreeAndThree_eachSideConsistent_thenMergeToOneRing() throws InterruptedException {
    Map<Ringmaster, OwnershipRecorder> rec = new HashMap<>();
    try (TestCluster cluster = new TestCluster("partition")) {
      List<Ringmaster> all = new ArrayList<>();
      for (String id : List.of("a", "b", "c", "d", "e", "f")) {
        all.add(cluster.startRecorded(cluster.builder(id).replicas(2), rec));
      }
      TestCluster.awaitAgreement(all, 6, WAIT);
      assertFolds(rec, all);
      // Divergences that should never happen (a split view's, which JGroups can make in a merge
      // and which heals, aside): none through the partition and its merge.
      List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
      all.forEach(n -> n.addDivergenceListener(divergences::add));

      List<Ringmaster> left = all.subList(0, 3);
      List<Ringmaster> right = all.subList(3, 6);
      TestCluster.partition(left, right);
      TestCluster.awaitAgreement(left, 3, WAIT);
      TestCluster.awaitAgreement(right, 3, WAIT);
      assertEquals(Set.of("a", "b", "c"), ids(left.get(0).members()));
      assertEquals(Set.of("d", "e", "f"), ids(right.get(0).members()));
      assertNotEquals(left.get(0).ring().checksum(), right.get(0).ring().checksum());
      assertFolds(rec, all);

      TestCluster.heal(all);
      TestCluster.awaitAgreement(all, 6, WAIT);
      assertFolds(rec, all);
      for (Ringmaster n : all) {
        // Membership listeners have a queue of their own, which may run behind the ownership one.
        assertTrue(n.awaitListeners(WAIT), n.localMember().id() + "'s listeners");
        List<MembershipChange> merges = rec.get(n).memberships().stream().filter(MembershipChange::isMerge).toList();
        assertTrue(!merges.isEmpty(), n.localMember().id() + " saw no merge");
        MembershipChange merge = merges.get(merges.size() - 1);
        assertEquals(6, merge.members().size());
        assertEquals(Set.of(Set.of("a", "b", "c"), Set.of("d", "e", "f")),
            merge.subgroups().stream().map(PartitionAndChurnTest::ids).collect(Collectors.toSet()));
        assertTrue(rec.get(n).changes().stream().anyMatch(c -> c.reason() == OwnershipChange.Reason.MERGE));
      }
      assertEquals(List.of(), divergences.stream().filter(d -> d.kind() != RingDivergence.Kind.SPLIT_VIEW).toList());
    }
  }

  @Test
  void churn_hundredJoinsLeavesAndCrashes_thenAgreementAndFoldsHold() {
    Map<Ringmaster, OwnershipRecorder> rec = new HashMap<>();
    try (TestCluster cluster = new TestCluster("churn")) {
      List<Ringmaster> alive = new ArrayList<>();
      List<Ringmaster> gone = new ArrayList<>();
      Set<Ringmaster> closed = ConcurrentHashMap.newKeySet();
      for (int i = 0; i < 12; i++) {
        alive.add(cluster.startRecorded(cluster.builder("n" + i).replicas(2), rec));
      }
      TestCluster.awaitAgreement(alive, 12, WAIT);
      List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
      alive.forEach(n -> n.addDivergenceListener(divergences::add));
      // Four workers, 25 operations each, overlapping as they would in a real cluster.
      AtomicInteger nextId = new AtomicInteger(12);
      int[] counts = new int[3]; // joins, leaves, crashes
      List<CompletableFuture<Void>> workers = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        SplittableRandom random = new SplittableRandom(2026 + w);
        workers.add(CompletableFuture.runAsync(() -> {
          for (int op = 0; op < 25; op++) {
            // Both drawn every time: each worker's draws stay the same whatever the interleaving.
            int choice = random.nextInt(3);
            int pick = random.nextInt(1 << 20);
            Ringmaster victim = null;
            boolean join;
            synchronized (alive) {
              join = alive.size() <= 6 || (choice == 0 && alive.size() < 14);
              if (!join) {
                victim = alive.remove(pick % alive.size());
                gone.add(victim);
              }
              counts[join ? 0 : choice == 1 ? 1 : 2]++; // a join refused at 14 members crashes a node
            }
            if (join) {
              Ringmaster n = cluster.startRecorded(cluster.builder("n" + nextId.getAndIncrement()).replicas(2), rec);
              synchronized (alive) {
                alive.add(n);
              }
            } else if (choice == 1) {
              victim.close();
              closed.add(victim);
            } else {
              cluster.crash(victim);
            }
          }
        }, TestThreads.ON_OWN_THREAD)); // a thread each, not the common pool, which may have one
      }
      TestCluster.joinAll(workers);
      TestCluster.awaitAgreement(alive, alive.size(), WAIT);
      assertFolds(rec, alive);
      for (Ringmaster g : gone) {
        assertEquals(List.of(), rec.get(g).violations(), g.localMember().id());
        if (closed.contains(g)) { // its LEAVING change handed everything on (close() waits for it, within leaveTimeout)
          await(g.localMember().id() + " left gracefully, owning nothing").atMost(WAIT)
              .until(rec.get(g)::ownsNothing);
        }
      }
      assertEquals(counts[1], closed.size());
      assertEquals(List.of(), divergences.stream().filter(d -> d.kind() != RingDivergence.Kind.SPLIT_VIEW).toList(),
          "divergences under churn, heard by the first twelve");
      assertTrue(counts[0] > 20 && counts[1] > 10 && counts[2] > 10,
          counts[0] + " joins, " + counts[1] + " leaves, " + counts[2] + " crashes");
    }
  }

  private static Set<String> ids(List<Member> members) {
    return members.stream().map(Member::id).collect(Collectors.toSet());
  }
}
