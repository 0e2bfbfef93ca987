package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.EffectLedger.Entry;
import io.ringmaster.ring.HashRing;
import io.ringmaster.testing.LocalCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.jgroups.protocols.DISCARD;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A distributed job scheduler built on the public API and the docs alone ({@link JobScheduler},
 * one per node): 256 jobs with periods of 200-400 ms, each run by its primary owner under a lease
 * of a shared {@link EffectLedger}, the outside world the jobs act on, which takes a run only with
 * the latest fencing token it issued for the job. Through a join, a graceful leave, a crash of a
 * node stalled in a run, a partition healed and two nodes started at once, it guarantees:
 *
 * <ul>
 *   <li>no tick of a job is accepted twice, and no two nodes' runs of a job are accepted under
 *       one lease: each time a job changes node, its runs carry a newer token;
 *   <li>once the ring has settled, every job runs again, on its primary owner by that ring,
 *       without any lease having to expire (the ledger's clock, by which leases expire, moves
 *       only when a test says so, after a crash): the old owner stops and releases as it hears
 *       of the change. How long the handover took is printed, not asserted (the machine is
 *       shared); the wait for it is the test's 30 s;
 *   <li>a node that closes runs nothing once its {@code close()} has returned, and a join, a
 *       leave, a partition or a start of two nodes has no run refused: an old owner never tries
 *       a run after it let the job go;
 *   <li>during a partition every job keeps running, on its owner from before the split, which
 *       still holds its lease: the primary that the other side's ring names waits;
 *   <li>after a crash the survivors run none of the crashed node's jobs while its leases are
 *       live, and once they have expired take every one of them; the crashed node's run that was
 *       stalled meanwhile writes late, with its old token, and the ledger refuses it;
 *   <li>a process started under the id of a node that still runs elsewhere takes none of that
 *       node's live leases; when the two meet, the one refused the id runs nothing.
 * </ul>
 */
final class SchedulerTrialTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static final List<String> JOBS = IntStream.range(0, 256).mapToObj(i -> "job-" + i).toList();

  private final EffectLedger ledger = new EffectLedger();
  private final Map<String, JobScheduler> schedulers = new ConcurrentHashMap<>(); // the first of each id
  private final List<JobScheduler> started = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeSchedulers() throws InterruptedException {
    for (JobScheduler scheduler : started) {
      scheduler.close();
    }
  }

  @Test
  void join_fourthNode_takesItsJobsWithoutALeaseExpiring() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler join")) {
      cluster.startAll(this::attach, "a", "b", "c");
      HashRing before = awaitOnPrimaries(cluster, ledger.mark());
      int leases = ledger.takeMark();
      long mark = ledger.mark();
      cluster.start(cluster.builder("d"), this::attach);
      HashRing after = awaitOnPrimaries(cluster, mark);

      List<String> moved = moved(before, after);
      assertFalse(moved.isEmpty(), "d took no job");
      assertTrue(moved.stream().allMatch(job -> after.ownerOf(job).id().equals("d")), "only d gains on a join");
      assertEquals(moved, ledger.takenSince(leases).stream().sorted(byNumber()).toList(),
          "one lease taken per job moved, none for the others");
      assertSafe(List.of());
      report("join", mark);
    }
  }

  @Test
  void leave_gracefulClose_leaverRunsNothingOnceClosed() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler leave")) {
      List<Ringmaster> nodes = cluster.startAll(this::attach, "a", "b", "c", "d");
      awaitOnPrimaries(cluster, ledger.mark());
      Ringmaster d = nodes.get(3);
      long mark = ledger.mark();
      d.close();
      long closed = ledger.mark();
      HashRing after = awaitOnPrimaries(cluster, closed);
      assertFalse(after.contains("d"));
      assertEquals(List.of(), ledger.since(closed).stream().filter(e -> e.node().equals("d")).toList(),
          "runs of d after its close() returned");
      assertTrue(d.leftIdle(), "d's LEAVING change was not handled within leaveTimeout");
      assertEquals(Set.of(), schedulers.get("d").running(), "d still holds jobs once closed");
      assertSafe(List.of());
      report("leave", mark);
    }
  }

  @Test
  void crash_nodeStalledInARun_survivorsWaitForItsLeasesAndItsLateRunIsRefused() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler crash")) {
      List<Ringmaster> nodes = cluster.startAll(this::attach, "a", "b", "c");
      HashRing before = awaitOnPrimaries(cluster, ledger.mark());
      Ringmaster c = nodes.get(2);
      String stalledJob = JOBS.stream().filter(job -> before.ownerOf(job).id().equals("c")).findFirst().orElseThrow();
      CountDownLatch stalled = new CountDownLatch(1);
      CountDownLatch resume = new CountDownLatch(1);
      AtomicBoolean once = new AtomicBoolean();
      schedulers.get("c").beforeWrite(job -> {
        if (job.equals(stalledJob) && once.compareAndSet(false, true)) {
          stalled.countDown();
          try {
            resume.await(); // a pause (a long collection, say) in the middle of a run
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("closed while stalled", e);
          }
        }
      });
      assertTrue(stalled.await(WAIT.toMillis(), TimeUnit.MILLISECONDS), "c never ran " + stalledJob);

      long mark = ledger.mark();
      cluster.crash(c);
      await().atMost(WAIT).until(c::isLeaving); // not at once: as the node's stop begins, in the background
      HashRing after = cluster.awaitSettled(WAIT);
      assertFalse(after.contains("c"));
      List<String> orphans = moved(before, after);
      long live = ledger.mark();
      await().atMost(WAIT).until(() -> ledger.mark() - live > 2L * JOBS.size()); // every survivor's round ran meanwhile
      assertEquals(List.of(), ledger.since(mark).stream().filter(e -> orphans.contains(e.job())).toList(),
          "the crashed node's jobs ran while its leases were live");

      ledger.advance(JobScheduler.LEASE.plusMillis(1));
      awaitOnPrimaries(cluster, mark);
      resume.countDown();
      await().atMost(WAIT).until(() -> !ledger.refused().isEmpty());
      List<Entry> refused = ledger.refused();
      assertEquals(1, refused.size(), () -> "refused: " + refused);
      assertEquals(stalledJob, refused.get(0).job());
      assertEquals("c", refused.get(0).node());
      assertEquals(List.of(), ledger.since(mark).stream().filter(e -> e.node().equals("c") && e.accepted()).toList(),
          "runs of c accepted after its crash");
      assertSafe(refused);
      report("crash", mark);
    }
  }

  @Test
  void partition_healed_eachJobKeepsItsOneRunnerAndEndsOnItsPrimary() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler partition")) {
      List<Ringmaster> nodes = cluster.startAll(this::attach, "a", "b", "c");
      HashRing before = awaitOnPrimaries(cluster, ledger.mark());
      Ringmaster a = nodes.get(0);
      List<Ringmaster> others = List.of(nodes.get(1), nodes.get(2));
      long mark = ledger.mark();
      cluster.partition(List.of(a), others);
      cluster.awaitSettled(List.of(a), WAIT);
      cluster.awaitSettled(others, WAIT);
      assertEquals(List.of("a"), a.ring().members().stream().map(m -> m.id()).toList());

      long split = ledger.mark();
      await().atMost(WAIT).untilAsserted(() -> assertEquals(List.of(), notRunBy(before, split),
          "jobs not running on their owner from before the split"));

      cluster.heal();
      long healed = ledger.mark();
      HashRing after = awaitOnPrimaries(cluster, healed);
      assertEquals(before, after);
      assertSafe(List.of());
      report("partition", mark);
    }
  }

  @Test
  void startAll_twoNodesAtOnce_jobsSpreadOverEveryNode() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler two at once")) {
      cluster.start(cluster.builder("a"), this::attach);
      HashRing before = awaitOnPrimaries(cluster, ledger.mark());
      int leases = ledger.takeMark();
      long mark = ledger.mark();
      cluster.startAll(this::attach, "b", "c");
      HashRing after = awaitOnPrimaries(cluster, mark);

      List<String> moved = moved(before, after);
      for (String id : List.of("b", "c")) {
        assertFalse(schedulers.get(id).running().isEmpty(), id + " took no job");
      }
      // b and c join in one view or in two, so a job may move twice: a to b, then b to c
      List<String> taken = ledger.takenSince(leases);
      assertEquals(moved, taken.stream().distinct().sorted(byNumber()).toList(), "leases taken of jobs that did not move");
      assertTrue(taken.size() <= 2 * moved.size(), () -> "a job leased more than twice: " + taken);
      assertSafe(List.of());
      report("two at once", mark);
    }
  }

  /**
   * A process restarted under the id of one that still runs, cut off from it (here in a cluster of
   * its own, as on the other side of a partition): each is the primary of that id's jobs by its
   * own ring, and the earlier one keeps renewing their leases. The restarted one must wait for
   * them as any other node would, not take them as their holder.
   */
  @Test
  void twin_restartedUnderTheIdOfALiveNode_takesNoneOfItsLeases() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler twin");
        LocalCluster otherSide = new LocalCluster("scheduler twin other side")) {
      cluster.startAll(this::attach, "a", "b", "c");
      HashRing ring = awaitOnPrimaries(cluster, ledger.mark());
      int leases = ledger.takeMark();
      AtomicReference<JobScheduler> twin = new AtomicReference<>();
      otherSide.start(otherSide.builder("c"), node -> twin.set(attach(node)));
      otherSide.awaitSettled(WAIT);
      assertEquals(JOBS.size(), twin.get().running().size(), "alone, the twin is the primary of every job");
      long rounds = twin.get().rounds();
      await().atMost(WAIT).until(() -> twin.get().rounds() > rounds + 10);

      assertEquals(List.of(), ledger.takenSince(leases), "leases taken from their live holders");
      awaitOnPrimaries(cluster, ledger.mark());
      assertEquals(ring, cluster.awaitSettled(WAIT));
      assertSafe(List.of());
    }
  }

  /**
   * The same across a real partition: c is cut off alone, a process started under c's id joins a
   * and b, and the partition heals, which refuses one of the two (docs/api.md, "Duplicate node
   * ids"). The new process takes none of the live c's leases during the split; after the heal,
   * the refused one runs nothing, and every job runs on its primary by the merged ring.
   */
  @Test
  void twinAcrossPartition_healRefusesOne_jobsEndOnTheOneThatKeptTheId() throws InterruptedException {
    try (LocalCluster cluster = new LocalCluster("scheduler twin across a partition")) {
      List<Ringmaster> nodes = cluster.startAll(this::attach, "a", "b", "c");
      awaitOnPrimaries(cluster, ledger.mark());
      Ringmaster c = nodes.get(2);
      List<Ringmaster> majority = List.of(nodes.get(0), nodes.get(1));
      cluster.partition(List.of(c), majority);
      cluster.awaitSettled(List.of(c), WAIT);
      cluster.awaitSettled(majority, WAIT);
      int leases = ledger.takeMark();
      AtomicReference<JobScheduler> twinScheduler = new AtomicReference<>();
      // A node started during a partition hears every side, and joins the side whose coordinator
      // answers first: c, alone on its side, drops everything while the new process starts (it has
      // nobody to hear there), so that the new process joins a and b; then the two ignore each other.
      DISCARD atC = LocalCluster.discard(c);
      Ringmaster twin;
      atC.discardAll(true);
      try {
        twin = cluster.start(cluster.builder("c"), node -> twinScheduler.set(attach(node)));
        atC.addIgnoredMembers(twin.channel().getAddress());
        LocalCluster.discard(twin).addIgnoredMembers(c.channel().getAddress());
      } finally {
        atC.discardAll(false);
      }
      List<Ringmaster> majorityAndTwin = List.of(nodes.get(0), nodes.get(1), twin);
      cluster.awaitSettled(majorityAndTwin, WAIT);
      JobScheduler second = twinScheduler.get();
      long rounds = second.rounds();
      await().atMost(WAIT).until(() -> second.rounds() > rounds + 10);
      assertEquals(List.of(), ledger.takenSince(leases), "leases taken from their live holders during the split");

      atC.removeIgnoredMember(twin.channel().getAddress()); // heal() takes back only what partition() added
      LocalCluster.discard(twin).removeIgnoredMember(c.channel().getAddress());
      cluster.heal();
      Ringmaster cutOff = c;
      Ringmaster started = twin;
      await().atMost(WAIT).until(() -> cutOff.isInRing() != started.isInRing()
          && cutOff.ring().equals(started.ring()) && cutOff.ring().members().size() == 3);
      boolean cutOffKept = c.isInRing();
      Ringmaster refused = cutOffKept ? twin : c;
      JobScheduler keptScheduler = cutOffKept ? schedulers.get("c") : second;
      JobScheduler refusedScheduler = cutOffKept ? second : schedulers.get("c");
      System.out.println("twin: the id stayed with the " + (cutOffKept ? "node cut off" : "new process"));
      long healed = ledger.mark();
      HashRing merged = (cutOffKept ? c : twin).ring();
      await().atMost(WAIT).untilAsserted(() -> assertEquals(List.of(), notRunBy(merged, healed)));
      await().atMost(WAIT).until(() -> refusedScheduler.running().isEmpty());
      assertEquals(JOBS.stream().filter(job -> merged.ownerOf(job).id().equals("c")).collect(Collectors.toSet()),
          keptScheduler.running(), "the jobs of the node that kept the id");
      assertFalse(JOBS.stream().anyMatch(refused::isPrimary), "a refused node is primary of nothing");
      assertSafe(List.of());
    }
  }

  private JobScheduler attach(Ringmaster node) {
    JobScheduler scheduler = new JobScheduler(node, ledger, JOBS);
    started.add(scheduler);
    schedulers.putIfAbsent(node.localMember().id(), scheduler);
    scheduler.register();
    return scheduler;
  }

  /**
   * Waits until the running nodes have settled, then until every job has an accepted run from
   * {@code mark} on, the latest by its primary owner in that ring; returns the ring.
   */
  private HashRing awaitOnPrimaries(LocalCluster cluster, long mark) throws InterruptedException {
    HashRing ring = cluster.awaitSettled(WAIT);
    await().atMost(WAIT).untilAsserted(() -> assertEquals(List.of(), notRunBy(ring, mark),
        () -> "jobs whose latest run is not by their primary in " + ring.members()));
    return ring;
  }

  /** The jobs whose latest accepted run from {@code mark} on is missing, or not by their primary in {@code ring}. */
  private List<String> notRunBy(HashRing ring, long mark) {
    Map<String, Entry> latest = new HashMap<>();
    for (Entry e : ledger.since(mark)) {
      if (e.accepted()) {
        latest.put(e.job(), e);
      }
    }
    List<String> wrong = new ArrayList<>();
    for (String job : JOBS) {
      Entry run = latest.get(job);
      String owner = ring.ownerOf(job).id();
      if (run == null || !run.node().equals(owner)) {
        wrong.add(job + " (owner " + owner + ", last run " + (run == null ? "none" : "by " + run.node()) + ")");
      }
    }
    return wrong;
  }

  private static Comparator<String> byNumber() {
    return Comparator.comparingInt(JOBS::indexOf);
  }

  private static List<String> moved(HashRing before, HashRing after) {
    return JOBS.stream().filter(job -> !before.ownerOf(job).id().equals(after.ownerOf(job).id())).toList();
  }

  private void assertSafe(List<Entry> expectedRefused) {
    assertEquals(List.of(), ledger.duplicateTicks(), "ticks accepted twice");
    assertEquals(List.of(), ledger.overlaps(), "runs of two nodes under one lease");
    assertEquals(expectedRefused, ledger.refused(), "runs refused");
  }

  /**
   * Prints the longest a job went without a run that ended with a run from {@code mark} on, in
   * the job's periods (ticks skipped, plus one).
   */
  private void report(String scenario, long mark) {
    Map<String, Entry> previous = new HashMap<>();
    long worst = 0;
    String worstJob = "none";
    for (Entry e : ledger.since(0)) {
      if (!e.accepted()) {
        continue;
      }
      Entry before = previous.put(e.job(), e);
      if (before != null && e.seq() >= mark && e.tick() - before.tick() > worst) {
        worst = e.tick() - before.tick();
        worstJob = e.job() + " (" + before.node() + " -> " + e.node() + ")";
      }
    }
    System.out.printf("%s: longest gap between two runs of a job: %d periods, %s%n", scenario, worst, worstJob);
  }
}
