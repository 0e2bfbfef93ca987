package io.ringmaster.demo;

import io.ringmaster.OwnershipChange;
import io.ringmaster.OwnershipListener;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.jgroups.Address;

/**
 * Moves data when ownership changes, driven only by the node's ownership callbacks (one at a time,
 * in view order):
 * <ul>
 *   <li>lost ranges: push their entries to the new owners, to {@link Transfers#PARALLEL_PUSHES} of
 *       them at once, each on one of the peer's push threads, then drop them here, keeping any key
 *       this peer owns again by the time the push is done, that was written meanwhile, or whose
 *       owners by then are not all among those that took it (a peer joined meanwhile);
 *   <li>gained ranges: pull their entries from every previous owner still in the ring (after a
 *       crash, the surviving replicas), from {@link #PARALLEL_PULLS} sources at once, each on one
 *       of the peer's pull threads, so that a joiner's pulls take about as long as the longest of
 *       them rather than all of them in a row; the callback returns once every pull has ended.
 * </ul>
 * Both sides move the same data (the loser pushes, the gainer pulls) and merges are idempotent,
 * so whichever arrives first wins and the other is a no-op. Nothing is dropped before the new
 * owners acknowledged it; what a failed push leaves behind, the {@link Sweeper} hands off later,
 * and a pull that failed, {@link PullRetries} tries again.
 */
final class Rebalancer implements OwnershipListener {
  private final Routing routing;
  private final Store store;
  private final Transfers transfers;
  private final PullRetries pullRetries;
  private final Counters counters;
  private final EventLog events;
  private final Duration leaveBudget;
  /** Where the pulls of a change run: {@link #pullThreads}, owned and stopped by the peer. */
  private final ExecutorService pulls;
  /**
   * When this peer started to leave the cluster ({@link System#nanoTime()} just before its node is
   * closed), once it has. The node's leave timeout runs from about then (a rejoin under way can
   * only make it start later), while the LEAVING change may start later still, behind a change
   * being handled: its budget counts from the earlier of the two, so that the hand-off ends before
   * the node gives up waiting and leaves.
   */
  private volatile Long stopping;
  /** How the last drain of a leave ended: null before any. */
  private volatile LeaveOutcome leaveOutcome;

  /** How a leave's hand-off ended, for the peer's last words. */
  enum LeaveOutcome {
    /** Begun, not ended: the node gave up waiting for it (its leave timeout), or it is still going. */
    IN_PROGRESS,
    /** Every entry reached its owners in the ring left behind (copies of writes taken meanwhile are there too). */
    COMPLETE,
    /** The last peer: nobody to hand anything to. */
    LAST_PEER,
    /** Some entries may be held here only: every other peer was leaving, or the budget ran out. */
    INCOMPLETE
  }

  /**
   * @param leaveBudget how long a leaving peer may keep handing its data off: less than the
   *                    node's {@code leaveTimeout}, after which the node leaves regardless
   * @param pulls       where the pulls of a change run, one task a source: {@link #pullThreads}
   *                    (never the node's threads, nor the common pool: a pull waits on replies)
   */
  Rebalancer(Routing routing, Store store, Transfers transfers, PullRetries pullRetries, Counters counters,
             EventLog events, Duration leaveBudget, ExecutorService pulls) {
    this.routing = routing;
    this.store = store;
    this.transfers = transfers;
    this.pullRetries = pullRetries;
    this.counters = counters;
    this.events = events;
    this.leaveBudget = leaveBudget;
    this.pulls = pulls;
  }

  /**
   * How many sources a change's pulls ask at once. A joiner in a cluster of five gains from four,
   * and each pull has one page ({@link Transfers#PAGE_BYTES}) in flight at a time, so four bound
   * what the replies hold here to about a megabyte, and what merging them takes to a few cores;
   * each source still serves this peer one request at a time, as before. In larger clusters the
   * other sources wait their turn.
   */
  static final int PARALLEL_PULLS = 4;

  /**
   * The pool for {@link #Rebalancer}'s {@code pulls} ({@link FanOut#threads}): {@link #PARALLEL_PULLS}
   * threads at most, the other sources queued, and none kept once idle for 30 seconds (a peer pulls
   * only when ownership changes). Its owner shuts it down, after the node's close: the LEAVING change and the changes
   * queued before it may still pull (they end at once, the peer being stopping). Its
   * {@code shutdownNow()} runs the pulls still queued on the calling thread, where they end at once
   * (the pool is shut down), rather than dropping them: the change that made them waits for each
   * to end.
   */
  static ExecutorService pullThreads(ThreadFactory threads) {
    return FanOut.threads(threads, PARALLEL_PULLS);
  }

  @Override
  public void onOwnershipChange(OwnershipChange change) {
    counters.migrationsInProgress.incrementAndGet();
    counters.migratingView.set(change.viewId());
    try {
      boolean leaving = change.reason() == OwnershipChange.Reason.LEAVING;
      if (leaving) {
        // Not kept back for a membership event: it repeats the id of the last view, which may have
        // brought none (a refused member that left changes no member), and would then wait until
        // the peer stopped, its drain's events with it.
        events.publish(Events.ownership(change));
      } else {
        events.publishOwnership(change.viewId(), Events.ownership(change));
      }
      long start = System.nanoTime();
      Long since = stopping;
      if (since != null && since - start < 0) {
        start = since;
      }
      long deadline = start + leaveBudget.toNanos();
      // Refused (another peer holds this id) once this peer began to stop: its close() found it in
      // the ring and so skipped leaveRefused, and the node, no longer in the ring, delivers no
      // LEAVING change after this one. This change's drain is the only leave this peer gets.
      boolean drains = leaving || !change.inRing() && since != null && refusedLeave.compareAndSet(false, true);
      if (drains) {
        // Before the scan: a write stored after it must see the ring this peer leaves behind.
        startLeaving(change.viewId());
      }
      // Each step runs even if the one before it threw: a leave still drains everything it holds,
      // and nothing else would pull what this peer gained. The first failure is thrown at the end.
      Steps steps = new Steps();
      // A leave's pushes end with its budget. Other hand-offs take what they take, until the peer
      // starts to stop: from then on each page is tried once (and pulls end), leaving the budget to
      // the LEAVING change queued behind this one, whose drain hands on all this peer still holds.
      BooleanSupplier expired = leaving ? () -> System.nanoTime() - deadline >= 0 : () -> stopping != null;
      boolean handedOff = steps.run(() -> handOff(change, expired));
      if (drains) {
        handedOff = steps.run(() -> drain(deadline, change.viewId()));
      }
      boolean fetched = steps.run(() -> fetch(change));
      (handedOff && fetched && !steps.failed() ? counters.migrationsCompleted : counters.migrationsFailed)
          .increment();
      steps.throwFirst();
      if (leaving && !handedOff) {
        // Thrown, so that the node does not tell the others this peer's data went to the ring
        // without it: a peer that joins as this one leaves then names it as the source of what it
        // held, and knows that data may be gone, rather than look for it where it never arrived.
        throw new HandOffIncomplete(store.size());
      }
    } finally {
      counters.migratingView.set(-1);
      counters.settled.set(true);
      counters.migrationsInProgress.decrementAndGet();
    }
  }

  /**
   * Thrown by a LEAVING change whose hand-off ended with entries held here only: the node then
   * counts its leave as one whose data did not reach the ring left behind. No stack trace: the
   * peer's last words say how the leave ended, and this names only what is left.
   */
  static final class HandOffIncomplete extends RuntimeException {
    HandOffIncomplete(int held) {
      super("the leave's hand-off is incomplete: " + held + " entries may be held here only", null, false, false);
    }
  }

  /** Whether the leave of a refused peer was claimed: by {@link #leaveRefused}, or by the refusal's change. */
  private final AtomicBoolean refusedLeave = new AtomicBoolean();

  /** Marks the moment this peer starts to leave the cluster: called just before its node is closed. */
  void stopping() {
    stopping(System.nanoTime());
  }

  /** The same, at {@code nanoTime}, a reading of {@link System#nanoTime()} (for tests of a stop begun earlier). */
  void stopping(long nanoTime) {
    if (stopping == null) {
      stopping = nanoTime;
    }
  }

  /**
   * The leave of a peer the cluster refuses (after a partition healed, another peer kept its id).
   * The node delivers it no LEAVING change, as it owns nothing, but it may still hold what it took
   * on its side of the partition, or what a failed hand-off left: drained to the owners, within
   * half the leave budget, so that a LEAVING hand-off after it (the peer was let back into the
   * ring meanwhile) still fits before the process is killed.
   */
  void leaveRefused(long viewId) {
    if (!refusedLeave.compareAndSet(false, true)) {
      return; // the refusal's change drained already
    }
    counters.migrationsInProgress.incrementAndGet();
    try {
      startLeaving(viewId);
      (drain(System.nanoTime() + leaveBudget.toNanos() / 2, viewId) ? counters.migrationsCompleted
          : counters.migrationsFailed).increment();
    } finally {
      counters.migrationsInProgress.decrementAndGet();
    }
  }

  private void startLeaving(long viewId) {
    leaveOutcome = LeaveOutcome.IN_PROGRESS;
    routing.startLeaving();
    events.publish(Events.leaving(routing.self(), viewId));
  }

  private boolean handOff(OwnershipChange change, BooleanSupplier expired) {
    if (change.lost().isEmpty()) {
      return true;
    }
    long started = System.nanoTime();
    // Each lost range's entries as scanned, by the live new owners they go to.
    Map<List<String>, List<Entry>> byDestinations = new LinkedHashMap<>();
    for (RingDiff.Lost lost : change.lost()) {
      byDestinations.computeIfAbsent(transfers.liveOthers(lost.destinations()), k -> new ArrayList<>())
          .addAll(store.scan(lost.range()));
    }
    Map<String, Address> acked = transfers.pushToOwners(byDestinations, d -> true, Wire.PushKind.MIGRATION, expired);
    Set<String> destinations = new LinkedHashSet<>();
    byDestinations.keySet().forEach(destinations::addAll);
    // An entry whose owners by now include any other peer (its destination refused, or a peer
    // joined since this change) stays, for the drain of a leave or the sweep to hand on.
    long moved = transfers.dropHandedOff(byDestinations, acked, dropped -> { });
    counters.keysMigratedOut.add(moved);
    boolean allTook = acked.keySet().containsAll(destinations);
    events.publish(Events.migration("out", change, moved, change.lost().size(), List.copyOf(destinations),
        millisSince(started), allTook));
    return allTook;
  }

  /**
   * The rest of a leave. A leaving peer owns nothing, and its hand-off covered only the ranges it
   * owned: what else its store holds (a push that failed or that a peer refused because it is
   * leaving too, data pushed here before this peer started to leave) goes to its owners in the
   * ring left behind, without this peer and without the peers found leaving. Passes repeat, each
   * after the ring changed or half a second, until one hands off everything on a ring that did not
   * change during it, the last other peer has left (nobody to hand anything to), or the budget is
   * spent; writes that arrive meanwhile are forwarded by the write path. Each pass that had
   * anything to hand on is logged, as a migration out for reason "drain" and view {@code viewId}.
   *
   * @return whether everything was handed off
   */
  private boolean drain(long deadline, long viewId) {
    LeaveOutcome outcome = drainPasses(deadline, viewId);
    leaveOutcome = outcome;
    return outcome != LeaveOutcome.INCOMPLETE;
  }

  /** How the last leave's hand-off ended, if this peer has left (or begun to). */
  Optional<LeaveOutcome> leaveOutcome() {
    return Optional.ofNullable(leaveOutcome);
  }

  private LeaveOutcome drainPasses(long deadline, long viewId) {
    while (true) {
      HashRing ring = routing.ring();
      if (ring.isEmpty()) {
        return LeaveOutcome.LAST_PEER; // nobody to hand anything to, and nothing failed
      }
      long started = System.nanoTime();
      Map<List<String>, List<Entry>> byOwners = new LinkedHashMap<>();
      for (Entry e : store.all()) { // tombstones included
        byOwners.computeIfAbsent(routing.owners(e.key()), k -> new ArrayList<>()).add(e);
      }
      Map<String, Address> took = transfers.pushToOwners(byOwners, owner -> true, Wire.PushKind.MIGRATION,
          () -> System.nanoTime() - deadline >= 0);
      // No owner at all (every other peer is gone) leaves the pass incomplete.
      List<String> owners = byOwners.keySet().stream().flatMap(List::stream).distinct().toList();
      boolean complete = !byOwners.containsKey(List.of()) && took.size() == owners.size();
      long moved = transfers.dropHandedOff(byOwners, took, dropped -> { });
      counters.keysMigratedOut.add(moved);
      if (!byOwners.isEmpty()) { // a pass with nothing to hand on moved nothing: no event
        events.publish(Events.migration("out", "drain", viewId, moved, 0, owners, millisSince(started), complete));
      }
      // A ring changed during the pass (a peer joined, say) may give entries to owners that were
      // not pushed to: they were kept, and the next pass hands them on. So may an owner restarted
      // during it under its id, in one view with the same members (the ring object unchanged): the
      // copies it took are lost, its entries were kept, and the next pass pushes them to it again.
      if (complete && routing.ring() == ring && transfers.stillHeldByThoseThatTook(took)) {
        return LeaveOutcome.COMPLETE;
      }
      if (routing.ring().isEmpty()) {
        return LeaveOutcome.LAST_PEER; // the last other peer left during the pass: nobody to hand anything to
      }
      if (routing.onlyLeaversLeft()) {
        // Every peer left is stopping too (the last ones, stopped together): nobody will take
        // the data, and waiting would only resend it until the budget is spent.
        // System.out, not a logger: this runs in the shutdown hook, where java.util.logging may have
        // closed its handlers (unless LeaveLogManager holds them).
        leaveNote("every other peer is leaving too; leaving with %d entries", store.size());
        return LeaveOutcome.INCOMPLETE;
      }
      if (System.nanoTime() - deadline >= 0 || Thread.currentThread().isInterrupted()) { // interrupted: stopping
        leaveNote("leave budget %s spent; still holding %d entries", leaveBudget, store.size());
        return LeaveOutcome.INCOMPLETE;
      }
      // Again once a leaver went or refused (maybe during this pass), or after half a second.
      Waits.until(() -> routing.ring() != ring, Duration.ofMillis(500));
    }
  }

  private void leaveNote(String format, Object... args) {
    System.out.printf("%s: %s%n", routing.self(), String.format(format, args));
    System.out.flush();
  }

  private boolean fetch(OwnershipChange change) {
    if (change.gained().isEmpty()) {
      return true;
    }
    // A joiner's first change comes with its sources: the rebalancer listens from before the start.
    List<RingDiff.Gained> gained = Incoming.gainedWithSources(change, routing.self(), routing.replicas());
    long started = System.nanoTime();
    Map<String, List<KeyRange>> perSource = new LinkedHashMap<>();
    for (RingDiff.Gained g : gained) {
      for (String source : transfers.liveOthers(g.sources())) {
        perSource.computeIfAbsent(source, k -> new ArrayList<>()).add(g.range());
      }
    }
    List<String> sources = List.copyOf(perSource.keySet());
    FanOut.Ended<Transfers.Pulled> pulled = pullAll(perSource, change.viewId());
    long in = 0;
    boolean ok = true;
    for (int i = 0; i < sources.size(); i++) {
      Transfers.Pulled p = pulled.results().get(i); // null: the pull threw, and is tried again like a failed one
      boolean complete = p != null && p.complete();
      if (!complete) { // stopping: the retry never runs, but the range's sources stay known for reads
        pullRetries.failed(sources.get(i), perSource.get(sources.get(i)), change.viewId());
      }
      ok &= complete;
      in += p == null ? 0 : p.changed();
    }
    counters.keysMigratedIn.add(in);
    events.publish(Events.migration("in", change, in, gained.size(), sources, millisSince(started), ok));
    pulled.rethrow(); // once the other pulls are counted and the failed ones left to the retries
    return ok;
  }

  /**
   * Pulls from every source at once on {@link #pulls} ({@link FanOut#runAll}), and returns once
   * every pull has ended: what each brought in, in the order of the sources. Each pull ends once
   * the peer stops: what is not pulled stays on its source, which drops nothing until the owners of
   * its newest ring have it; so does each pull once {@link #pulls} is shut down (then it runs on the
   * thread that shut the pool down, or on this one). Interrupted while it waits (the node stopping
   * a callback that outlived its leave timeout), this interrupts the pulls, which end at once as
   * they would on this thread, and still waits for them. A pull that throws (a bug) has no result;
   * its failure (the first, in the order of the sources, the others suppressed in it) is returned
   * with the others' results, for the caller to count those first and then fail the change.
   */
  private FanOut.Ended<Transfers.Pulled> pullAll(Map<String, List<KeyRange>> perSource, long viewId) {
    List<FanOut.Task<Transfers.Pulled>> pullEach = new ArrayList<>();
    perSource.forEach((source, ranges) -> pullEach.add(interrupted -> transfers.pull(source, ranges, viewId,
        () -> stopping != null || interrupted.getAsBoolean() || pulls.isShutdown())));
    return FanOut.runAll(pulls, pullEach);
  }

  private static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000;
  }
}
