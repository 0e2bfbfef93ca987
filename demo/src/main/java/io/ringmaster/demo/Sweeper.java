package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntSupplier;
import org.jgroups.Address;

/**
 * The safety net under the ownership callbacks. The sweep hands entries that ended up outside
 * this peer's ranges (a write stored on a stale ring, a push that failed) to their owners and only
 * then drops them; the repair after a merge re-replicates everything, and tries again the owners
 * it could not reach.
 */
final class Sweeper {
  private static final System.Logger LOG = System.getLogger(Sweeper.class.getName());
  private final Routing routing;
  private final Store store;
  private final Transfers transfers;
  private final Counters counters;
  private final EventLog events;
  private final IntSupplier pendingCallbacks;
  /**
   * The ring, the peer's place in it and the store's change count of the last sweep that found no
   * stray: until one of them changes, the next sweep has nothing to look for (each pass reads the
   * whole store, every 2 s). Sweep thread only.
   */
  private volatile Clean clean;
  /** Passes over the store the sweep made (for tests). */
  volatile long passes;

  private record Clean(HashRing ring, boolean inRing, long changes) {}

  Sweeper(Routing routing, Store store, Transfers transfers, Counters counters, EventLog events,
          IntSupplier pendingCallbacks) {
    this.routing = routing;
    this.store = store;
    this.transfers = transfers;
    this.counters = counters;
    this.events = events;
    this.pendingCallbacks = pendingCallbacks;
  }

  /**
   * Hands entries this peer holds but does not own to their owners, several at once
   * ({@link Transfers#pushToOwners}), then drops them; the peer interrupting the sweep (it stops)
   * ends those pushes, and so does a change of the ring: the pushes of a sweep on a ring no longer
   * current send no further page, so that the hand-off of the new view does not wait behind them
   * on the push threads, and their strays are kept for the next sweep, on the new ring. Skipped
   * while ownership changes are pending or running (they move those entries themselves), and when
   * neither the store, the ring nor the peer's place in it changed since a pass found no stray.
   */
  void sweep() {
    long changes = store.changes(); // before the pass: a change during it makes the next one look again
    // The ring first: if the callbacks are idle after it was read, they have handled that ring.
    HashRing ring = routing.ring();
    boolean inRing = routing.inRing();
    if (routing.isLeaving() || counters.migrationsInProgress.get() > 0 || pendingCallbacks.getAsInt() > 0) {
      return;
    }
    Clean c = clean;
    if (c != null && c.ring() == ring && c.inRing() == inRing && c.changes() == changes) {
      return; // nothing a stray depends on changed since a pass found none
    }
    Map<List<String>, List<Entry>> strays = new LinkedHashMap<>();
    for (Entry e : store.all()) {
      List<String> owners = routing.owners(ring, e.key());
      if (routing.indexOfSelf(owners) < 0) {
        strays.computeIfAbsent(owners, k -> new ArrayList<>()).add(e);
      }
    }
    passes++;
    clean = strays.isEmpty() ? new Clean(ring, inRing, changes) : null;
    Map<String, Address> took = transfers.pushToOwners(strays, routing::isLive, Wire.PushKind.SWEEP, () -> false,
        () -> routing.ring() != ring);
    long moved = 0;
    Set<String> peers = new TreeSet<>();
    // Dropped only if the ring did not change during the pushes (else the next sweep, on the new
    // ring, hands them to its owners first), and each only once every one of its owners took it:
    // an owner of this ring that is gone means the ring is changing, and the owners of the next one
    // may already have pulled from those pushed to here, too early.
    if (routing.ring() == ring) {
      moved = transfers.dropHandedOff(strays, took, peers::addAll);
    }
    if (moved > 0) {
      counters.strayKeysHandedOff.add(moved);
      events.publish(Events.sweep(moved, List.copyOf(peers)));
    }
  }

  /**
   * After partitions merge, each side's ring knew nothing of the other side's writes, so the
   * ownership diff (computed from this peer's pre-merge ring) names the wrong sources. Instead,
   * every peer pushes everything it holds to all the key's owners in the merged ring, to several
   * owners at once ({@link Transfers#pushToEach}); last writer wins where both sides wrote a key.
   * Copies only: nothing is dropped here (the sweep drops strays once their owners have them).
   *
   * <p>Owners a push failed for (busy with every other peer's repair, say) are pushed to again,
   * after 2, 4, 8 ... seconds, at most a minute apart, while they are live: a key that both this
   * peer and such an owner keep through the merge reaches it no other way, and would keep a copy
   * fewer, or two versions, for good. A later merge starts over with every owner; so a repair with
   * another queued behind it (merges that came faster than a pass over the store) is skipped: that
   * one pushes what this peer holds then, to every owner of the ring then.
   *
   * @return whether this pass ran (false: skipped for the one queued behind it)
   */
  boolean repairAfterMerge(long mergeViewId) {
    synchronized (this) {
      queuedRepairs = Math.max(0, queuedRepairs - 1);
      if (queuedRepairs > 0) {
        LOG.log(Level.DEBUG, "{0}: the repair of merge view {1} is left to that of a later merge, queued behind it",
            routing.self(), Long.toString(mergeViewId));
        return false;
      }
      pendingRepair = null; // this pass pushes to every owner
      repairing = true;
    }
    repair(mergeViewId, null, 0);
    return true;
  }

  /**
   * Notes a repair handed to the maintenance thread, which may start it only after other work:
   * {@link #repairPending()} counts it from now, not from its start.
   */
  synchronized void repairQueued() {
    queuedRepairs++;
  }

  /**
   * The owners a repair could not reach (null: every owner, after a pass that threw), and when to
   * try them again (guarded by this).
   */
  private record PendingRepair(long mergeViewId, Set<String> owners, int failures, long dueNanos) {}

  private PendingRepair pendingRepair;
  private boolean repairing; // set with pendingRepair cleared, so that repairPending() has no gap
  private int queuedRepairs; // repairs after merges, queued and not started

  /** Whether a repair is queued or runs, or owners one could not reach are still to be tried again. */
  synchronized boolean repairPending() {
    return repairing || pendingRepair != null || queuedRepairs > 0;
  }

  /** Pushes again to the owners the last repair could not reach, once their delay is over. */
  void retryRepair() {
    PendingRepair p;
    synchronized (this) {
      p = pendingRepair;
      if (p == null || System.nanoTime() - p.dueNanos() < 0) {
        return;
      }
      pendingRepair = null;
      repairing = true;
    }
    repair(p.mergeViewId(), p.owners(), p.failures());
  }

  /**
   * Pushes every entry to its live owners in the current ring other than this peer, or only to
   * those of {@code onlyTo} if not null; schedules the owners that failed to be tried again.
   */
  private void repair(long mergeViewId, Set<String> onlyTo, int failures) {
    counters.migrationsInProgress.incrementAndGet();
    try {
      pushRepair(mergeViewId, onlyTo, failures);
    } catch (RuntimeException | Error e) {
      // Whatever it reached, it is tried again in full (every owner, or those of onlyTo): a repair
      // dropped here would leave keys a copy short for good.
      synchronized (this) {
        pendingRepair = new PendingRepair(mergeViewId, onlyTo, failures + 1,
            System.nanoTime() + PullRetries.delayAfter(failures + 1));
      }
      throw e;
    } finally {
      synchronized (this) {
        repairing = false;
      }
      counters.migrationsInProgress.decrementAndGet();
    }
  }

  private void pushRepair(long mergeViewId, Set<String> onlyTo, int failures) {
    if (onlyTo != null && routing.isLeaving()) {
      LOG.log(Level.INFO, "{0}: leaving; its hand-off replaces the repair of merge view {1}", routing.self(),
          Long.toString(mergeViewId));
      return;
    }
    long started = System.nanoTime();
    HashRing ring = routing.ring();
    Map<String, List<Entry>> perOwner = new LinkedHashMap<>();
    long entries = 0; // sent to one owner or more
    for (Entry e : store.all()) {
      boolean sent = false;
      for (String owner : routing.owners(ring, e.key())) {
        if (!routing.isSelf(owner) && routing.isLive(owner) && (onlyTo == null || onlyTo.contains(owner))) {
          perOwner.computeIfAbsent(owner, k -> new ArrayList<>()).add(e);
          sent = true;
        }
      }
      entries += sent ? 1 : 0;
    }
    if (perOwner.isEmpty() && onlyTo != null) {
      LOG.log(Level.INFO, "{0}: {1}, which the repair of merge view {2} could not reach, left the ring; their"
          + " successors pull what they gained", routing.self(), onlyTo, Long.toString(mergeViewId));
      return;
    }
    Set<String> failed = new TreeSet<>(perOwner.keySet());
    failed.removeAll(transfers.pushToEach(perOwner, Wire.PushKind.REPAIR, () -> false).keySet()); // several at once
    events.publish(Events.repair(mergeViewId, entries, List.copyOf(perOwner.keySet()),
        (System.nanoTime() - started) / 1_000_000, failed.isEmpty()));
    if (!failed.isEmpty()) {
      long delay = PullRetries.delayAfter(failures + 1);
      LOG.log(Level.WARNING, "{0}: repair after merge view {1} could not reach {2}; again in {3} s", routing.self(),
          Long.toString(mergeViewId), failed, delay / 1_000_000_000);
      synchronized (this) { // nothing else set it meanwhile: repairs run one at a time, on the maintenance thread
        pendingRepair = new PendingRepair(mergeViewId, failed, failures + 1, System.nanoTime() + delay);
      }
    } else if (onlyTo != null) {
      LOG.log(Level.INFO, "{0}: repair after merge view {1} done after {2} failed rounds", routing.self(),
          Long.toString(mergeViewId), failures);
    }
  }
}
