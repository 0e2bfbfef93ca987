package io.ringmaster;

import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One node's job scheduler, built on the public API and docs/recipes.md, "Jobs that must run once":
 * jobs keyed by id, each run every {@link #periodMillis(String)} by the job's primary owner, under a
 * lease of the {@link EffectLedger} whose token every run writes with.
 *
 * <p>The ownership listener decides which jobs are the node's: it starts a job on a {@code Gained}
 * or role change to {@code PRIMARY} and stops one on a {@code Lost} or role change away from it
 * (a {@code LEAVING} change loses everything), hands both to the scheduler's thread and waits for
 * the stops, so that no run is under way when a stop releases the lease. The scheduler's thread
 * runs a round every {@link #ROUND_MILLIS} ms: for each of its jobs it renews the lease or takes
 * it (skipping the job while another node holds a live one), and runs the job's due tick, if no
 * run of that tick was accepted yet, with the lease's token. A job is due at tick
 * {@code k} at {@code epoch + k * period}; ticks missed while a job moves are skipped, not caught
 * up. It runs nothing once the node is leaving ({@link Ringmaster#isLeaving()}), nor a job its
 * ring does not make it the primary of.
 *
 * <p>It holds leases as this start of the node ({@code id#n}), not as the node's id: node ids stay
 * the same across restarts, so a process restarted under the id of one that still runs (on the
 * other side of a partition, say) would otherwise take that one's live leases at once, and each
 * would take them back from the other at its next round.
 */
final class JobScheduler implements OwnershipListener, AutoCloseable {
  /** How long a lease lasts, by the ledger's clock. */
  static final Duration LEASE = Duration.ofSeconds(2);
  /** How long a lease is trusted from before it was asked for, by this node's clock. */
  static final Duration TRUSTED = Duration.ofMillis(1500);
  static final long ROUND_MILLIS = 20;
  /** How long the listener waits for its stops: within LocalCluster's 5 s leaveTimeout. */
  static final Duration STOP_WAIT = Duration.ofSeconds(4);

  private static final AtomicLong STARTS = new AtomicLong();

  private final Ringmaster node;
  private final String self;
  private final String holder;
  private final EffectLedger ledger;
  private final List<String> jobs;
  private final ScheduledExecutorService thread;
  private final Set<String> mine = ConcurrentHashMap.newKeySet(); // changed on the scheduler's thread only
  private final Map<String, Long> tokens = new HashMap<>();       // these two: on the scheduler's thread alone
  private final Map<String, Long> lastTicks = new HashMap<>();
  private final AtomicLong rounds = new AtomicLong();
  private volatile Consumer<String> beforeWrite = job -> { };

  JobScheduler(Ringmaster node, EffectLedger ledger, List<String> jobs) {
    this.node = node;
    this.self = node.localMember().id();
    this.holder = self + "#" + STARTS.incrementAndGet();
    this.ledger = ledger;
    this.jobs = List.copyOf(jobs);
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "scheduler-" + self));
    thread.scheduleWithFixedDelay(this::round, 0, ROUND_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Registers this scheduler's listener on its node: before {@code start()}, to hear the first ring. */
  void register() {
    node.addOwnershipListener(this);
  }

  /** A job's period: 200, 300 or 400 ms, by the number at the end of its id. */
  static long periodMillis(String job) {
    return 200 + 100 * (Integer.parseInt(job.substring(job.lastIndexOf('-') + 1)) % 3);
  }

  /** The jobs this scheduler runs now (it may still be waiting for the lease of some). */
  Set<String> running() {
    return Set.copyOf(mine);
  }

  /** How many rounds the scheduler's thread has begun. */
  long rounds() {
    return rounds.get();
  }

  /** Runs {@code hook} on the scheduler's thread before each run's write (to stall one, say). */
  void beforeWrite(Consumer<String> hook) {
    beforeWrite = hook;
  }

  @Override
  public void onOwnershipChange(OwnershipChange change) {
    Set<String> start = new HashSet<>();
    Set<String> stop = new HashSet<>();
    KeyRange.partition(change.gained(), RingDiff.Gained::range, jobs).forEach((gained, keys) -> {
      if (gained.role() == RingDiff.Role.PRIMARY) {
        start.addAll(keys);
      }
    });
    KeyRange.partition(change.roleChanges(), RingDiff.RoleChange::range, jobs).forEach((roleChange, keys) ->
        (roleChange.after() == RingDiff.Role.PRIMARY ? start : stop).addAll(keys));
    KeyRange.partition(change.lost(), RingDiff.Lost::range, jobs).forEach((lost, keys) -> {
      if (lost.role() == RingDiff.Role.PRIMARY) {
        stop.addAll(keys);
      }
    });
    Future<?> done = thread.submit(() -> {
      stop.forEach(this::stop);
      mine.addAll(start);
    });
    try {
      done.get(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new IllegalStateException("scheduler " + self + " did not stop its jobs within " + STOP_WAIT, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  private void stop(String job) {
    mine.remove(job);
    lastTicks.remove(job);
    Long token = tokens.remove(job);
    if (token != null) {
      ledger.release(job, token); // the next owner need not wait for the lease to expire
    }
  }

  private void round() {
    rounds.incrementAndGet();
    for (String job : mine) {
      if (node.isLeaving()) {
        return; // closing or crashed: its LEAVING change stops the jobs, if it comes
      }
      try {
        runIfDue(job);
      } catch (RuntimeException e) { // a stalled run cut short: no run; a throw would end the rounds
        tokens.remove(job);
        lastTicks.remove(job);
      }
    }
  }

  private void runIfDue(String job) {
    if (!node.isPrimary(job)) {
      return; // its listener has yet to hear that it lost the job
    }
    long askedAt = System.nanoTime(); // the lease counts from before the ledger set it
    Long token = tokens.get(job);
    if (token == null || !ledger.renew(job, token, LEASE)) {
      Optional<EffectLedger.Taken> taken = ledger.take(job, holder, LEASE);
      if (taken.isEmpty()) {
        tokens.remove(job); // another node holds it: ask again next round
        lastTicks.remove(job);
        return;
      }
      token = taken.get().token();
      tokens.put(job, token);
      lastTicks.put(job, taken.get().lastTick()); // where the job's previous holder left off
    }
    long now = System.nanoTime();
    if (now - askedAt >= TRUSTED.toNanos()) {
      return; // answered late: the next round renews
    }
    long tick = (now - ledger.epochNanos()) / TimeUnit.MILLISECONDS.toNanos(periodMillis(job));
    if (tick <= lastTicks.get(job)) {
      return; // this tick ran already, here or on the job's previous holder
    }
    beforeWrite.accept(job);
    if (ledger.write(job, tick, self, token)) {
      lastTicks.put(job, tick);
    } else {
      tokens.remove(job); // a newer token was issued: take the lease again before the next run
      lastTicks.remove(job);
    }
  }

  /** Stops the rounds; after the node's close (whose LEAVING change released the leases) or crash. */
  @Override
  public void close() throws InterruptedException {
    thread.shutdownNow();
    if (!thread.awaitTermination(10, TimeUnit.SECONDS)) {
      throw new IllegalStateException("scheduler " + self + " still runs");
    }
  }
}
