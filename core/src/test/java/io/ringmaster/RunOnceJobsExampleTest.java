package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.LocalCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A scheduler of jobs that must run once across the cluster, built on the public API alone: the
 * recipe of docs/recipes.md, "Jobs that must run once", with the jobs running all through the churn.
 * Ringmaster says which node should run a job; the fence that keeps two nodes from running it at
 * once is the shared store's:
 * <ul>
 *   <li>each node runs the jobs it is primary for over and over, on a scheduler thread of its own
 *       (never a JGroups thread, nor the listener's);
 *   <li>before a run it holds the job's lease, taken from the store by compare-and-set only when
 *       no other node holds a live one, and renewed the same way; the store issues a fencing
 *       token with each lease taken; the node trusts a lease, by its own clock, until a margin
 *       before it would run out counted from before it asked, so a slow answer may leave it none;
 *   <li>a run's effect is a write the store takes only with a token at least as new as the
 *       latest it issued for the job, so that a run that stalls past its lease cannot write over
 *       the next owner's;
 *   <li>the ownership listener stops a job on {@code Lost(PRIMARY)}, on a role change away from
 *       {@code PRIMARY} and on {@code LEAVING}, releasing its lease, and starts one on a gain as
 *       primary or a role change to {@code PRIMARY}: the new owner then waits for the old lease to
 *       be released or to expire.
 * </ul>
 * {@link PrimaryBackupSchedulerExampleTest} runs its jobs only between the steps of churn, when
 * every node has settled, which needs no fence.
 */
class RunOnceJobsExampleTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** Lease expiry and a few ticks, with room for a loaded machine. */
  private static final Duration RUNS_AGAIN = Duration.ofSeconds(10);
  private static final int REPLICAS = 2;
  private static final List<String> JOBS = IntStream.range(0, 300).mapToObj(i -> "job-" + i).toList();
  private static final Duration LEASE = Duration.ofMillis(500);
  /** How long before the store's expiry a node stops trusting its lease: for clock drift and the run's own time. */
  private static final Duration MARGIN = Duration.ofMillis(100);
  private static final long TICK_MILLIS = 50;
  /**
   * A crashed node removed after 2-3 s rather than LocalCluster's 3-5 s, and sides merged sooner
   * after a partition heals: the test's budget is short.
   */
  private static final Map<String, String> QUICK_STACK = Map.of("ringmaster.fd.timeout", "2s",
      "ringmaster.fd.interval", "500ms", "ringmaster.merge.min", "500ms", "ringmaster.merge.max", "1s");

  private final JobStore store = new JobStore();
  private final Map<String, Scheduler> schedulers = new ConcurrentHashMap<>();
  /** When set, holds node a's view thread, in a same-thread listener, until it opens. */
  private volatile Gate holdA;

  /**
   * 300 jobs on three nodes with two replicas, running all the time, through a join that the old
   * owner hears of late, a graceful leave, a crash of a node whose run stalls and wakes up after
   * its lease expired, and a partition of the last two nodes, healed: the store never takes two
   * nodes' effects of a job under overlapping leases, nor a stale token's, the late run's write is
   * refused, during the partition each job runs on the side of its lease alone, and after each
   * step every job runs again, on its primary, which holds its lease.
   */
  @Test
  void everyJobRunsOnItsPrimaryAlone_throughJoinLeaveCrashAndPartition() throws Exception {
    try (LocalCluster cluster = new LocalCluster("run once jobs example");
         AutoCloseable schedulersStop = () -> schedulers.values().forEach(Scheduler::close)) {
      Ringmaster a = startNode(cluster, "a", n -> n.addOwnershipListener(change -> {
        Gate hold = holdA;
        if (hold != null) {
          hold.passThrough();
        }
      }, Runnable::run)); // added first: a's scheduler hears of a view only once this lets it go (see Scheduler)
      startNode(cluster, "b", n -> { });
      Ringmaster c = startNode(cluster, "c", n -> { });
      HashRing ring = assertEveryJobRunsOnItsPrimary(cluster, store.mark());

      // A join that a has not heard of yet: it keeps renewing the jobs it lost to d, so d must wait.
      long joined = store.mark();
      Ringmaster d;
      try (Gate hold = new Gate()) {
        holdA = hold;
        d = startNode(cluster, "d", n -> { });
        await().atMost(WAIT).until(hold::reached);
        assertTrue(d.awaitListeners(WAIT), "d's scheduler heard its first ring");
        List<String> fromAToD = movedBetween(ring, d.ring(), "a", "d");
        assertFalse(fromAToD.isEmpty(), "the join moved some of a's jobs to d");
        HashRing before = ring;
        HashRing withD = d.ring();
        assertTrue(JOBS.stream().anyMatch(j -> withD.owners(j, REPLICAS).indexOf(before.ownerOf(j)) == 1),
            "the join made some primaries backups: their role changes must stop the jobs");
        long ticks = schedulers.get("d").ticks();
        await().atMost(WAIT).until(() -> schedulers.get("d").ticks() >= ticks + 3);
        for (String job : fromAToD) {
          assertEquals("a", store.lastTaken(job).map(JobStore.Write::writer).orElse(""),
              job + " still runs on a, which holds its lease: d waits");
        }
      }
      ring = assertEveryJobRunsOnItsPrimary(cluster, joined);

      // A graceful leave: c releases every lease it holds, and its successors need not wait for them to expire.
      Set<String> heldByC = store.liveLeasesOf("c");
      assertFalse(heldByC.isEmpty(), "c holds leases");
      long leaving = store.mark();
      c.close();
      assertTrue(c.leftIdle(), "c's listener had handled its LEAVING change when it left");
      schedulers.get("c").close();
      heldByC.removeAll(store.releasedSince(leaving, "c"));
      assertEquals(Set.of(), heldByC, "leases c held and did not release as it left");
      HashRing afterLeave = assertEveryJobRunsOnItsPrimary(cluster, leaving);

      // A crash while one of b's runs stalls (a long pause): the run wakes up after its lease expired
      // and another node took it over. Its write must be refused.
      Ringmaster b = cluster.nodes().stream().filter(n -> n.localMember().id().equals("b")).findFirst().orElseThrow();
      String job = JOBS.stream().filter(j -> afterLeave.ownerOf(j).id().equals("b")).findFirst().orElseThrow();
      Scheduler bScheduler = schedulers.get("b");
      try (Gate stall = bScheduler.stallNextRunOf(job)) {
        await().atMost(WAIT).until(stall::reached);
        long stalledToken = store.lastTaken(job).orElseThrow().token();
        long crashed = store.mark();
        cluster.crash(b);
        assertEveryJobRunsOnItsPrimary(cluster, crashed);
        assertTrue(store.lastTaken(job).orElseThrow().token() > stalledToken, "a newer lease's run was taken");
        stall.open();
        await().atMost(WAIT).until(() ->
            store.writesSince(crashed, job).stream().anyMatch(w -> w.writer().equals("b")));
        bScheduler.close(); // the process is gone
        JobStore.Write late = store.writesSince(crashed, job).stream().filter(w -> w.writer().equals("b"))
            .findFirst().orElseThrow();
        assertEquals(stalledToken, late.token(), "the stalled run wrote with the token it had");
        assertFalse(late.accepted(), "the store refused the stalled run's write: a newer token had written");
      }
      assertEveryJobRunsOnItsPrimary(cluster, store.mark());
      assertEquals(List.of("a", "d"), cluster.nodes().stream().map(n -> n.localMember().id()).toList());

      // A partition: alone on its side, each node is the primary of every job, and starts them all;
      // only the leases keep each job on the node that held it.
      Map<String, String> holders = new TreeMap<>();
      JOBS.forEach(j -> holders.put(j, store.liveHolder(j).orElseThrow()));
      long split = store.mark();
      cluster.partition(List.of(a), List.of(d));
      cluster.awaitAgreement(List.of(a), WAIT);
      cluster.awaitAgreement(List.of(d), WAIT);
      assertTrue(a.awaitListeners(WAIT) && d.awaitListeners(WAIT), "both sides' schedulers started every job");
      long ticksA = schedulers.get("a").ticks();
      long ticksD = schedulers.get("d").ticks();
      await().atMost(WAIT).until(() ->
          schedulers.get("a").ticks() >= ticksA + 3 && schedulers.get("d").ticks() >= ticksD + 3);
      Map<String, String> ranOnBothSides = new TreeMap<>();
      for (String j : JOBS) {
        Set<String> writers = new TreeSet<>();
        store.writesSince(split, j).forEach(w -> writers.add(w.writer()));
        if (!writers.equals(Set.of(holders.get(j)))) {
          ranOnBothSides.put(j, "held by " + holders.get(j) + ", run by " + writers);
        }
      }
      assertEquals(Map.of(), ranOnBothSides, "each job ran on the side of its lease alone");
      cluster.heal();
      assertEveryJobRunsOnItsPrimary(cluster, store.mark());
    }
  }

  /**
   * A renewal whose answer comes back only as the node's margin runs out, by its own clock (a slow
   * store call): the store renewed the lease and would take a write with its token, since it
   * issued no newer one, but the node no longer trusts the lease, counted from before it asked,
   * and does not run the job on it. The job runs again at the next round, once a renewal is
   * answered in time. The node's clock is one the test moves, so that the answer comes exactly at
   * the margin.
   */
  @Test
  void jobDoesNotRunOnARenewalAnsweredPastTheMargin_andRunsOnceRenewedInTime() throws Exception {
    AtomicLong clock = new AtomicLong(); // a's clock: it moves only when the test moves it
    String job = JOBS.get(0);
    try (LocalCluster cluster = new LocalCluster("run once jobs late renewal");
         AutoCloseable schedulersStop = () -> schedulers.values().forEach(Scheduler::close)) {
      startNode(cluster, "a", clock::get, n -> { });
      await().atMost(WAIT).until(() -> store.lastTaken(job).isPresent());
      long token = store.lastTaken(job).orElseThrow().token();
      long late;
      try (Gate slow = store.slowNextRenewalOf(job)) {
        clock.addAndGet(LEASE.toNanos() / 2); // every lease is due for renewal at the next round
        await().atMost(WAIT).until(slow::reached);
        late = store.mark(); // after the renewal, whose answer waits
        clock.addAndGet(LEASE.minus(MARGIN).toNanos());
        slow.open();
        await().atMost(WAIT).until(() -> !store.writesSince(late, job).isEmpty());
      }
      JobStore.Write next = store.writesSince(late, job).get(0);
      assertTrue(store.renewalsSince(late, job).stream().anyMatch(renewal -> renewal < next.seq()),
          "the job's first run after the late answer came after a renewal answered in time: " + next);
      assertEquals(token, next.token(), "the job ran again under the lease it renewed");
      assertTrue(next.accepted(), "the store took the run's write");
    }
  }

  /** Starts a node whose scheduler listens to its ownership from its first ring on. */
  private Ringmaster startNode(LocalCluster cluster, String id, Consumer<Ringmaster> first)
      throws Exception {
    return startNode(cluster, id, System::nanoTime, first);
  }

  /** Starts a node whose scheduler reads its time from {@code clock}, in nanoseconds. */
  private Ringmaster startNode(LocalCluster cluster, String id, LongSupplier clock, Consumer<Ringmaster> first)
      throws Exception {
    Scheduler scheduler = new Scheduler(id, store, clock);
    schedulers.put(id, scheduler);
    return SystemProperties.with(QUICK_STACK, List.of(), () -> cluster.start(cluster.builder(id).replicas(REPLICAS),
        node -> {
          first.accept(node);
          node.addOwnershipListener(scheduler, scheduler.hearing);
        }));
  }

  /** The jobs whose primary was {@code from} in {@code before} and is {@code to} in {@code after}. */
  private static List<String> movedBetween(HashRing before, HashRing after, String from, String to) {
    return JOBS.stream().filter(j -> before.ownerOf(j).id().equals(from) && after.ownerOf(j).id().equals(to)).toList();
  }

  /**
   * Waits until the nodes settle, then until every job has run again since {@code mark}, on its
   * primary in that ring, which also holds its live lease (so no node that is gone holds one), and
   * checks the store's fence: no two effects of a job under overlapping leases, no stale token's
   * effect after a newer token's lease. Returns the ring.
   */
  private HashRing assertEveryJobRunsOnItsPrimary(LocalCluster cluster, long mark) throws InterruptedException {
    HashRing ring = cluster.awaitSettled(WAIT);
    await().atMost(RUNS_AGAIN).untilAsserted(() -> {
      Map<String, String> wrong = new TreeMap<>();
      for (String job : JOBS) {
        String primary = ring.owners(job, 1).get(0).id();
        Optional<JobStore.Write> last = store.lastTaken(job);
        String holder = store.liveHolder(job).orElse("nobody");
        boolean ranAgain = last.isPresent() && last.get().seq() > mark && last.get().writer().equals(primary);
        if (!ranAgain || !holder.equals(primary)) {
          wrong.put(job, "primary " + primary + ", last run " + last + ", lease held by " + holder);
        }
      }
      assertEquals(Map.of(), wrong.entrySet().stream().limit(5).collect(TreeMap::new, (m, e) -> m.put(e.getKey(),
          e.getValue()), Map::putAll), wrong.size() + " jobs not run again on their primary since the step");
    });
    assertEquals(List.of(), store.overlaps(), "effects of one job taken under overlapping leases");
    assertEquals(List.of(), store.staleWritesTaken(), "effects taken with a token older than a lease issued before");
    return ring;
  }

  /**
   * One node's scheduler, as docs/recipes.md shows it: the jobs it is primary for, run over and
   * over on a thread of its own, each under a lease from the store and written with the lease's
   * token. It takes a lease by reading the row and setting it if its version is still the one read,
   * where the recipe's store takes it in one conditional update: the same fence, and a place for
   * this test to plant a scheduler that does not wait for the old lease. It hears its changes on
   * an executor of its own, for the test's hold on node a alone: the node launches the callbacks of
   * its own pool before those of executors given, so a same-thread listener added before it would
   * not hold it back on the pool.
   */
  private static final class Scheduler implements OwnershipListener, AutoCloseable {
    private final String id;
    /** This start of the node, which holds its leases: the id and a value new at each start (docs/recipes.md). */
    private final String holder;
    private final JobStore store;
    /** This node's clock, never the store's: {@code System::nanoTime}, or one the test moves. */
    private final LongSupplier clock;
    private final ScheduledExecutorService thread;
    final ExecutorService hearing;
    private final AtomicLong ticks = new AtomicLong();
    /** The next run of {@code stalling} waits at this gate, if set: a long pause, at the worst moment. */
    private volatile Gate stall;
    private volatile String stalling = "";
    // The scheduler's thread alone reads and writes these two.
    private final Set<String> primaryFor = new LinkedHashSet<>();
    private final Map<String, Held> held = new HashMap<>();

    /** A lease this node holds: its token, and when to renew it and to stop trusting it, by this node's clock. */
    private record Held(long token, long renewAt, long trustUntil) {
      static Held from(long token, long askedAt) {
        return new Held(token, askedAt + LEASE.toNanos() / 2, askedAt + LEASE.toNanos() - MARGIN.toNanos());
      }
    }

    Scheduler(String id, JobStore store, LongSupplier clock) {
      this.id = id;
      this.holder = id + "#" + UUID.randomUUID();
      this.store = store;
      this.clock = clock;
      this.thread = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "scheduler-" + id));
      thread.scheduleWithFixedDelay(this::tick, 0, TICK_MILLIS, TimeUnit.MILLISECONDS);
      this.hearing = Executors.newSingleThreadExecutor(r -> new Thread(r, "scheduler-listener-" + id));
    }

    /**
     * Works out which jobs to stop and which to start, and hands that to the scheduler's thread,
     * so that no run is under way as a job stops. It waits for the stops to be done, but no
     * longer than a lease: a run stuck longer has lost its lease, and its token fences what it
     * writes.
     */
    @Override
    public void onOwnershipChange(OwnershipChange change) {
      Set<String> stop = new HashSet<>();
      Set<String> start = new HashSet<>();
      // A LEAVING change loses every range, each with the role it had: this stops every job.
      KeyRange.partition(change.lost(), RingDiff.Lost::range, JOBS).forEach((lost, jobs) -> {
        if (lost.role() == RingDiff.Role.PRIMARY) {
          stop.addAll(jobs);
        }
      });
      KeyRange.partition(change.roleChanges(), RingDiff.RoleChange::range, JOBS).forEach((roleChange, jobs) ->
          (roleChange.after() == RingDiff.Role.PRIMARY ? start : stop).addAll(jobs));
      KeyRange.partition(change.gained(), RingDiff.Gained::range, JOBS).forEach((gained, jobs) -> {
        if (gained.role() == RingDiff.Role.PRIMARY) {
          start.addAll(jobs);
        }
      });
      Future<?> done = thread.submit(() -> {
        stop.forEach(this::stop);
        primaryFor.addAll(start);
      });
      try {
        done.get(LEASE.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        // a run is stuck: its lease expires at the store, and the store refuses its late write
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException e) {
        throw new IllegalStateException(e.getCause());
      }
    }

    private void stop(String job) {
      primaryFor.remove(job);
      Held lease = held.remove(job);
      if (lease != null) {
        store.release(job, lease.token(), holder); // the next owner need not wait for it to expire
      }
    }

    private void tick() {
      for (String job : primaryFor) {
        Held lease = lease(job);
        if (lease != null && clock.getAsLong() - lease.trustUntil() < 0) {
          run(job, lease.token());
        }
      }
      ticks.incrementAndGet();
    }

    /** The job's lease, renewed or taken if due; null while another node holds a live one. */
    private Held lease(String job) {
      long now = clock.getAsLong(); // before asking: the store's expiry comes after this node's
      Held mine = held.get(job);
      if (mine != null && now - mine.renewAt() < 0) {
        return mine;
      }
      if (mine != null && store.renew(job, mine.token(), holder, LEASE)) {
        mine = Held.from(mine.token(), now);
        held.put(job, mine);
        return mine;
      }
      held.remove(job);
      JobStore.Lease row = store.read(job);
      if (row.live() && !row.holder().equals(holder)) {
        return null; // wait until its holder releases it or it expires: the next tick asks again
      }
      OptionalLong token = store.take(job, row.version(), holder, LEASE);
      if (token.isEmpty()) {
        return null; // another node took it between the read and the take
      }
      mine = Held.from(token.getAsLong(), now);
      held.put(job, mine);
      return mine;
    }

    /** One run of a job: its effect is the write, which the store takes only from the latest lease. */
    private void run(String job, long token) {
      Gate pause = stall;
      if (pause != null && job.equals(stalling)) {
        stall = null;
        pause.passThrough();
      }
      store.write(job, token, id);
    }

    /** Makes the next run of {@code job} stall before its write until the gate returned is opened. */
    Gate stallNextRunOf(String job) {
      Gate pause = new Gate();
      stalling = job;
      stall = pause;
      return pause;
    }

    long ticks() {
      return ticks.get();
    }

    /** Stops the scheduler's thread, as a process that ends would: nothing released. */
    @Override
    public void close() {
      thread.shutdownNow();
      hearing.shutdownNow();
      try {
        assertTrue(thread.awaitTermination(10, TimeUnit.SECONDS), id + "'s scheduler stopped");
        assertTrue(hearing.awaitTermination(10, TimeUnit.SECONDS), id + "'s scheduler's listener stopped");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Stands in for the shared store that a real scheduler keeps its leases and results in: a table
   * with a version column in a SQL database, or etcd or ZooKeeper. It offers only what those do:
   * a compare-and-set of a job's lease row, fencing tokens from a sequence that only grows, a
   * lease's expiry judged by the store's own clock (the nodes never read it), and a write taken
   * only with a token at least as new as the latest the store issued for the job. It also keeps
   * every lease it granted or renewed and every write and release it took or refused, numbered in
   * the order it handled them, for the test's checks. Each method's comment gives the SQL it stands for.
   */
  private static final class JobStore {
    /** A lease row as read: its holder ("" if none), token, version, and whether it is live by the store's clock. */
    record Lease(String holder, long token, long version, boolean live) {}

    /** A write as the store handled it; {@code seq} places it among everything the store did. */
    record Write(long seq, long token, String writer, boolean accepted) {}

    private record Release(long seq, String job, String holder, boolean accepted) {}

    /** A lease granted; {@code end}, by the store's clock, moves with its renewals and its release. */
    private static final class Grant {
      final long seq;
      final long token;
      final String holder;
      final long at;
      long end;

      Grant(long seq, long token, String holder, long at, long end) {
        this.seq = seq;
        this.token = token;
        this.holder = holder;
        this.at = at;
        this.end = end;
      }
    }

    private static final class Row {
      String holder = "";
      long token;
      long version;
      long expiresAt;
      final List<Grant> grants = new ArrayList<>();
      final List<Write> writes = new ArrayList<>();
      /** The number of each renewal the store took. */
      final List<Long> renewals = new ArrayList<>();
    }

    private final Map<String, Row> rows = new HashMap<>();
    private final List<Release> releases = new ArrayList<>();
    private long tokens;
    private long seq;
    /** The answer to the next renewal of {@code slowJob} waits at this gate, if set: a store call that returns late. */
    private volatile Gate slowAnswer;
    private volatile String slowJob = "";

    /** The store's clock. */
    private static long now() {
      return System.nanoTime();
    }

    private Row row(String job) {
      return rows.computeIfAbsent(job, j -> new Row());
    }

    /** {@code SELECT holder, token, version, expires_at > now() FROM leases WHERE job = ?} */
    synchronized Lease read(String job) {
      Row row = row(job);
      return new Lease(row.holder, row.token, row.version, !row.holder.isEmpty() && now() - row.expiresAt < 0);
    }

    /**
     * {@code UPDATE leases SET holder = ?, token = nextval('tokens'), expires_at = now() + ?,
     * version = version + 1 WHERE job = ? AND version = ?}: the new token, or none if the row
     * changed since it was read.
     */
    synchronized OptionalLong take(String job, long version, String holder, Duration ttl) {
      Row row = row(job);
      if (row.version != version) {
        return OptionalLong.empty();
      }
      long now = now();
      row.holder = holder;
      row.token = ++tokens;
      row.expiresAt = now + ttl.toNanos();
      row.version++;
      row.grants.add(new Grant(++seq, row.token, holder, now, row.expiresAt));
      return OptionalLong.of(row.token);
    }

    /**
     * {@code UPDATE leases SET expires_at = now() + ?, version = version + 1 WHERE job = ? AND token = ?
     * AND holder = ?}
     */
    boolean renew(String job, long token, String holder, Duration ttl) {
      boolean renewed = renewRow(job, token, holder, ttl);
      Gate answer = slowAnswer;
      if (answer != null && job.equals(slowJob)) {
        slowAnswer = null;
        answer.passThrough(); // the row is renewed, and its holder does not know it yet
      }
      return renewed;
    }

    private synchronized boolean renewRow(String job, long token, String holder, Duration ttl) {
      Row row = row(job);
      if (row.token != token || !row.holder.equals(holder)) {
        return false;
      }
      row.expiresAt = now() + ttl.toNanos();
      row.version++;
      lastGrant(row).end = row.expiresAt;
      row.renewals.add(++seq);
      return true;
    }

    /**
     * Makes the answer to the next renewal of {@code job} wait, once the store has renewed the
     * row, until the gate returned is opened.
     */
    Gate slowNextRenewalOf(String job) {
      Gate answer = new Gate();
      slowJob = job;
      slowAnswer = answer;
      return answer;
    }

    /** {@code UPDATE leases SET holder = '', version = version + 1 WHERE job = ? AND token = ? AND holder = ?} */
    synchronized boolean release(String job, long token, String holder) {
      Row row = row(job);
      boolean accepted = row.token == token && row.holder.equals(holder);
      if (accepted) {
        row.holder = "";
        row.version++;
        Grant grant = lastGrant(row);
        grant.end = Math.min(grant.end, now());
      }
      releases.add(new Release(++seq, job, holder, accepted));
      return accepted;
    }

    private static Grant lastGrant(Row row) {
      return row.grants.get(row.grants.size() - 1);
    }

    /** {@code UPDATE runs SET ... WHERE job = ? AND ? >= (SELECT token FROM leases WHERE job = ?)}: a run's effect. */
    synchronized boolean write(String job, long token, String writer) {
      Row row = row(job);
      boolean accepted = token >= row.token;
      row.writes.add(new Write(++seq, token, writer, accepted));
      return accepted;
    }

    /** The number of the last thing the store did: what it does from now on comes after. */
    synchronized long mark() {
      return seq;
    }

    synchronized Optional<Write> lastTaken(String job) {
      List<Write> writes = row(job).writes;
      for (int i = writes.size() - 1; i >= 0; i--) {
        if (writes.get(i).accepted()) {
          return Optional.of(writes.get(i));
        }
      }
      return Optional.empty();
    }

    synchronized List<Write> writesSince(long mark, String job) {
      return row(job).writes.stream().filter(w -> w.seq() > mark).toList();
    }

    /** The numbers of the renewals of {@code job} the store took since {@code mark}. */
    synchronized List<Long> renewalsSince(long mark, String job) {
      return row(job).renewals.stream().filter(r -> r > mark).toList();
    }

    /** The node whose start holds {@code job}'s live lease, by its id. */
    synchronized Optional<String> liveHolder(String job) {
      Lease lease = read(job);
      return lease.live() ? Optional.of(node(lease.holder())) : Optional.empty();
    }

    /** The node id of a holder: its start's id, before the {@code #}. */
    static String node(String holder) {
      int start = holder.indexOf('#');
      return start < 0 ? holder : holder.substring(0, start);
    }

    synchronized Set<String> liveLeasesOf(String node) {
      Set<String> jobs = new TreeSet<>();
      rows.keySet().forEach(job -> {
        if (liveHolder(job).equals(Optional.of(node))) {
          jobs.add(job);
        }
      });
      return jobs;
    }

    /** The jobs whose lease a start of {@code node} released, and the store took the release, since {@code mark}. */
    synchronized Set<String> releasedSince(long mark, String node) {
      Set<String> jobs = new TreeSet<>();
      releases.stream().filter(r -> r.seq() > mark && node(r.holder()).equals(node) && r.accepted())
          .forEach(r -> jobs.add(r.job()));
      return jobs;
    }

    /**
     * Each pair of leases of one job that both had a write taken, where the later was granted
     * before the earlier had ended (expired or released): two nodes' effects under overlapping leases.
     */
    synchronized List<String> overlaps() {
      List<String> found = new ArrayList<>();
      rows.forEach((job, row) -> {
        Set<Long> wrote = new HashSet<>();
        row.writes.stream().filter(Write::accepted).forEach(w -> wrote.add(w.token()));
        Grant before = null;
        for (Grant grant : row.grants) {
          if (!wrote.contains(grant.token)) {
            continue;
          }
          if (before != null && grant.at - before.end < 0) {
            found.add(job + ": token " + grant.token + " granted to " + grant.holder + " "
                + (before.end - grant.at) / 1_000_000 + " ms before token " + before.token + " of " + before.holder
                + " ended");
          }
          before = grant;
        }
      });
      return found.subList(0, Math.min(5, found.size()));
    }

    /** Each write taken with a token older than a lease the store had granted for the job before it. */
    synchronized List<String> staleWritesTaken() {
      List<String> found = new ArrayList<>();
      rows.forEach((job, row) -> {
        for (Write w : row.writes) {
          row.grants.stream().filter(g -> w.accepted() && g.seq < w.seq() && g.token > w.token()).findFirst()
              .ifPresent(g -> found.add(job + ": " + w + " after token " + g.token + " went to " + g.holder));
        }
      });
      return found.subList(0, Math.min(5, found.size()));
    }
  }

  /** A gate a thread waits at until it opens (a minute at most, so that a failed test lets it go). */
  private static final class Gate implements AutoCloseable {
    private final CountDownLatch opened = new CountDownLatch(1);
    private volatile boolean reached;

    void passThrough() {
      reached = true;
      try {
        opened.await(1, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    /** Whether a thread has come to the gate. */
    boolean reached() {
      return reached;
    }

    void open() {
      opened.countDown();
    }

    @Override
    public void close() {
      open();
    }
  }
}
