package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.LocalCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A primary/backup job scheduler built from the README, docs/api.md and the public javadoc alone.
 * Each job (a key) runs on its key's primary owner only; the primary writes the job's state (how
 * many times it ran) to the key's backup at every run ({@code replicas(2)}). The ownership listener
 * is the whole scheduler:
 * <ul>
 *   <li>a {@link RingDiff.RoleChange} to {@code PRIMARY} starts the job, whose state the backup
 *       holds already; one to {@code BACKUP} stops it and keeps the state;
 *   <li>a {@link RingDiff.Gained} copies the state from the first of its {@code sources()} still
 *       in the change's {@code ring()} (a crashed or departed source is gone) and, as
 *       {@code PRIMARY} alone, starts the job;
 *   <li>a {@link RingDiff.Lost} stops the job if it ran here and drops the state.
 * </ul>
 * With two copies and one member gone at a time, a gainer always finds a live previous owner, so
 * pulls alone carry the state, a graceful leaver's included. The jobs run in rounds between the
 * steps of churn, once every node settled, which is the fence docs/api.md asks for ("Agreement is
 * per view, not per instant"): a real scheduler running during the change needs one of its own,
 * a lease and a fencing token in a shared store, as docs/recipes.md shows and
 * {@link RunOnceJobsExampleTest} tests.
 */
class PrimaryBackupSchedulerExampleTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int REPLICAS = 2;
  private static final List<String> JOBS = IntStream.range(0, 500).mapToObj(i -> "job-" + i).toList();
  /** A crashed node removed after 2-3 s rather than LocalCluster's 3-5 s: the test's budget is short. */
  private static final Map<String, String> QUICK_DETECTOR =
      Map.of("ringmaster.fd.timeout", "2s", "ringmaster.fd.interval", "500ms");

  /** Each node's scheduler, by node id; a crashed node's stays here, dead, with nothing in it. */
  private final Map<String, Scheduler> schedulers = new ConcurrentHashMap<>();
  /** Since the last step: who started each job, once per start. */
  private final Map<String, List<String>> starts = new ConcurrentHashMap<>();
  /** Since the last step: the role changes each node heard, "node job" to "BEFORE->AFTER", once per change. */
  private final Map<String, List<String>> roleChangesHeard = new ConcurrentHashMap<>();
  /** How many rounds every job has run: what each copy of its state must say. */
  private int rounds;

  /** A node's part of the scheduler: the states it holds, as primary or backup, and the jobs it runs. */
  private static final class Scheduler {
    final Map<String, Integer> states = new ConcurrentHashMap<>();
    final Set<String> running = ConcurrentHashMap.newKeySet();
    /** Crashed: its memory is gone and it hears nothing more. */
    volatile boolean dead;
  }

  /**
   * 500 jobs on three nodes with two replicas: after a join, a crash and two graceful leaves (the
   * last one leaves a node that held every job already, whose change is role changes alone), each
   * once every node settled, every job runs on its primary in the ring alone and continues from its
   * count before the step, exactly the jobs whose primary changed were started, each once, and each
   * node heard a role change for exactly the jobs whose role it holds changed between the rings.
   */
  @Test
  void everyJobRunsOnItsPrimaryAlone_andContinuesFromItsState_throughJoinCrashAndLeaves()
      throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("primary backup scheduler example")) {
      startNode(cluster, "a");
      Ringmaster b = startNode(cluster, "b");
      Ringmaster c = startNode(cluster, "c");
      HashRing ring = cluster.awaitSettled(WAIT);
      assertEachJobOnItsPrimaryAlone(cluster, ring);
      runRound(cluster, ring);
      runRound(cluster, ring);

      ring = step(cluster, ring, () -> startNode(cluster, "d"));
      ring = step(cluster, ring, () -> {
        schedulers.get("b").dead = true; // the process is gone, and its memory with it
        schedulers.get("b").states.clear();
        schedulers.get("b").running.clear();
        cluster.crash(b);
      });
      ring = step(cluster, ring, c::close);
      assertLeftWithNothing(c);
      assertEquals(List.of("a", "d"), cluster.nodes().stream().map(n -> n.localMember().id()).toList());

      Ringmaster d = cluster.nodes().get(1);
      step(cluster, ring, d::close); // a owned every job already: it hears role changes alone
      assertLeftWithNothing(d);
    }
  }

  /** A node that left gracefully handled its LEAVING change in time, and runs and holds nothing. */
  private void assertLeftWithNothing(Ringmaster node) {
    String id = node.localMember().id();
    assertTrue(node.leftIdle(), id + "'s listener had handled its LEAVING change when it left");
    assertEquals(Map.of(), schedulers.get(id).states, id + " dropped every state it lost");
    assertEquals(Set.of(), schedulers.get(id).running, id + " stopped every job it ran");
  }

  /** Starts a node with the scheduler's listener, added before start() to hear the node's first ring. */
  private Ringmaster startNode(LocalCluster cluster, String id) {
    schedulers.put(id, new Scheduler());
    try {
      return SystemProperties.with(QUICK_DETECTOR, List.of(), () -> cluster.start(
          cluster.builder(id).replicas(REPLICAS), node -> node.addOwnershipListener(change -> onChange(id, change))));
    } catch (Exception e) {
      throw new AssertionError(id + " did not start", e);
    }
  }

  /** The scheduler: what each kind of change means for the jobs of its ranges. */
  private void onChange(String id, OwnershipChange change) {
    Scheduler mine = schedulers.get(id);
    if (mine.dead) {
      return;
    }
    KeyRange.partition(change.lost(), RingDiff.Lost::range, JOBS).forEach((lost, jobs) -> jobs.forEach(job -> {
      mine.running.remove(job);
      mine.states.remove(job);
    }));
    KeyRange.partition(change.roleChanges(), RingDiff.RoleChange::range, JOBS).forEach((roleChange, jobs) ->
        jobs.forEach(job -> {
          roleChangesHeard.computeIfAbsent(id + " " + job, k -> new CopyOnWriteArrayList<>())
              .add(roleChange.before() + "->" + roleChange.after());
          if (roleChange.after() == RingDiff.Role.PRIMARY) {
            start(id, job);
          } else {
            mine.running.remove(job);
          }
        }));
    KeyRange.partition(change.gained(), RingDiff.Gained::range, JOBS).forEach((gained, jobs) -> jobs.forEach(job -> {
      copyState(mine, job, gained.sources(), change.ring());
      if (gained.role() == RingDiff.Role.PRIMARY) {
        start(id, job);
      }
    }));
  }

  /** Copies a job's state from the first source still in {@code ring}: the others are gone. */
  private void copyState(Scheduler to, String job, List<Member> sources, HashRing ring) {
    for (Member source : sources) {
      if (ring.contains(source.id())) {
        Integer state = schedulers.get(source.id()).states.get(job);
        if (state != null) {
          to.states.put(job, state);
        }
        return;
      }
    }
  }

  private void start(String id, String job) {
    schedulers.get(id).running.add(job);
    starts.computeIfAbsent(job, k -> new CopyOnWriteArrayList<>()).add(id);
  }

  /**
   * One round: each node runs the jobs it runs once, counting on from its copy of the state, and
   * writes the new count to the job's backups in its ring.
   */
  private void runRound(LocalCluster cluster, HashRing ring) {
    for (Ringmaster node : cluster.nodes()) {
      String id = node.localMember().id();
      Scheduler mine = schedulers.get(id);
      for (String job : mine.running) {
        int count = mine.states.merge(job, 1, Integer::sum);
        node.owners(job).stream().filter(owner -> !owner.id().equals(id))
            .forEach(backup -> schedulers.get(backup.id()).states.put(job, count));
      }
    }
    rounds++;
    assertEachStateOnItsOwners(ring);
  }

  /**
   * Runs a step of churn, waits until the running nodes agree on a ring and their listeners have
   * handled it, checks the jobs against the rings before and after, then runs a round. Returns the
   * ring after.
   */
  private HashRing step(LocalCluster cluster, HashRing before, Runnable churn) throws InterruptedException {
    starts.clear();
    roleChangesHeard.clear();
    churn.run();
    HashRing after = cluster.awaitSettled(WAIT);
    assertEachJobOnItsPrimaryAlone(cluster, after);
    assertEachStateOnItsOwners(after); // before this step's round: the count from before the step

    Map<String, List<String>> startsExpected = new TreeMap<>();
    Map<String, List<String>> roleChangesExpected = new TreeMap<>();
    for (String job : JOBS) {
      List<Member> ownersBefore = before.owners(job, REPLICAS);
      List<Member> ownersAfter = after.owners(job, REPLICAS);
      if (!ownersBefore.get(0).equals(ownersAfter.get(0))) {
        startsExpected.put(job, List.of(ownersAfter.get(0).id()));
      }
      for (Member owner : ownersAfter) {
        int roleBefore = ownersBefore.indexOf(owner);
        int roleAfter = ownersAfter.indexOf(owner);
        if (roleBefore >= 0 && (roleBefore == 0) != (roleAfter == 0)) {
          roleChangesExpected.put(owner.id() + " " + job, List.of(role(roleBefore) + "->" + role(roleAfter)));
        }
      }
    }
    assertFalse(startsExpected.isEmpty(), "the step changed some primaries");
    assertFalse(roleChangesExpected.isEmpty(), "the step changed some roles");
    assertEquals(startsExpected, new TreeMap<>(starts), "started: exactly the jobs whose primary changed, once each");
    assertEquals(roleChangesExpected, new TreeMap<>(roleChangesHeard),
        "role changes heard: exactly where an owner's role differs between the rings, once each");
    runRound(cluster, after);
    return after;
  }

  private static String role(int index) {
    return (index == 0 ? RingDiff.Role.PRIMARY : RingDiff.Role.BACKUP).name();
  }

  /** Each job runs on one node, the primary every running node's ring names for it. */
  private void assertEachJobOnItsPrimaryAlone(LocalCluster cluster, HashRing ring) {
    List<String> wrong = new ArrayList<>();
    for (String job : JOBS) {
      Set<String> runners = new TreeSet<>();
      schedulers.forEach((id, scheduler) -> {
        if (scheduler.running.contains(job)) {
          runners.add(id);
        }
      });
      for (Ringmaster node : cluster.nodes()) {
        if (!runners.equals(Set.of(node.ownerOf(job).id()))) {
          wrong.add(job + " runs on " + runners + ", primary " + node.ownerOf(job).id() + " per "
              + node.localMember().id());
        }
      }
      if (!runners.equals(Set.of(ring.ownerOf(job).id()))) {
        wrong.add(job + " runs on " + runners + ", primary " + ring.ownerOf(job).id() + " in the settled ring");
      }
    }
    assertEquals(List.of(), wrong.subList(0, Math.min(10, wrong.size())), wrong.size() + " jobs misplaced");
  }

  /** Each job's state is on its owners in {@code ring} alone, each copy counting every round run. */
  private void assertEachStateOnItsOwners(HashRing ring) {
    List<String> wrong = new ArrayList<>();
    for (String job : JOBS) {
      Map<String, Integer> copies = new TreeMap<>();
      schedulers.forEach((id, scheduler) -> {
        Integer state = scheduler.states.get(job);
        if (state != null) {
          copies.put(id, state);
        }
      });
      Map<String, Integer> expected = new TreeMap<>();
      ring.owners(job, REPLICAS).forEach(owner -> expected.put(owner.id(), rounds));
      if (!copies.equals(expected)) {
        wrong.add(job + ": " + copies + ", expected " + expected);
      }
    }
    assertEquals(List.of(), wrong.subList(0, Math.min(10, wrong.size())), wrong.size() + " job states wrong");
  }
}
