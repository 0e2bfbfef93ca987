package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntSupplier;

/**
 * The safety net under the ownership callbacks. The sweep hands entries that ended up outside
 * this peer's ranges (a write stored on a stale ring, a push that failed) to their owners and only
 * then drops them; the repair after a merge re-replicates everything.
 */
final class Sweeper {
  private final Routing routing;
  private final Store store;
  private final Transfers transfers;
  private final Counters counters;
  private final EventLog events;
  private final IntSupplier pendingCallbacks;

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
   * Hands entries this peer holds but does not own to their owners, then drops them. Skipped while
   * ownership changes are pending or running: they move those entries themselves.
   */
  void sweep() {
    // The ring first: if the callbacks are idle after it was read, they have handled that ring.
    HashRing ring = routing.ring();
    if (routing.isLeaving() || counters.migrationsInProgress.get() > 0 || pendingCallbacks.getAsInt() > 0) {
      return;
    }
    Map<List<String>, List<Entry>> strays = new LinkedHashMap<>();
    for (Entry e : store.all()) {
      List<String> owners = routing.owners(ring, e.key());
      if (routing.indexOfSelf(owners) < 0) {
        strays.computeIfAbsent(owners, k -> new ArrayList<>()).add(e);
      }
    }
    long moved = 0;
    Set<String> peers = new TreeSet<>();
    for (Map.Entry<List<String>, List<Entry>> group : strays.entrySet()) {
      List<String> live = new ArrayList<>();
      for (String owner : group.getKey()) {
        if (routing.isLive(owner)) {
          live.add(owner);
        }
      }
      // Every owner, or none: an owner of this ring that is gone means the ring is changing, and
      // the owners of the next one may already have pulled from those pushed to here, too early.
      boolean ok = !live.isEmpty() && live.size() == group.getKey().size();
      for (String owner : live) {
        ok &= transfers.push(owner, group.getValue(), Wire.PushKind.SWEEP);
      }
      // Dropped only if the ring did not change during the pushes: else the next sweep, on the new
      // ring, hands them to its owners first.
      if (ok && routing.ring() == ring) {
        moved += transfers.dropUnowned(group.getValue());
        peers.addAll(live);
      }
    }
    if (moved > 0) {
      counters.strayKeysHandedOff.add(moved);
      events.publish(Events.sweep(moved, List.copyOf(peers)));
    }
  }

  /**
   * After partitions merge, each side's ring knew nothing of the other side's writes, so the
   * ownership diff (computed from this peer's pre-merge ring) names the wrong sources. Instead,
   * every peer pushes everything it holds to all the key's owners in the merged ring; last writer
   * wins where both sides wrote a key. Copies only: nothing is dropped here (the sweep drops
   * strays once their owners have them).
   */
  void repairAfterMerge(long mergeViewId) {
    counters.migrationsInProgress.incrementAndGet();
    try {
      long started = System.nanoTime();
      HashRing ring = routing.ring();
      Map<String, List<Entry>> perOwner = new LinkedHashMap<>();
      long entries = 0;
      for (Entry e : store.all()) {
        entries++;
        for (String owner : routing.owners(ring, e.key())) {
          if (!routing.isSelf(owner) && routing.isLive(owner)) {
            perOwner.computeIfAbsent(owner, k -> new ArrayList<>()).add(e);
          }
        }
      }
      boolean ok = true;
      for (Map.Entry<String, List<Entry>> owner : perOwner.entrySet()) {
        ok &= transfers.push(owner.getKey(), owner.getValue(), Wire.PushKind.REPAIR);
      }
      events.publish(Events.repair(mergeViewId, entries, List.copyOf(perOwner.keySet()),
          (System.nanoTime() - started) / 1_000_000, ok));
    } finally {
      counters.migrationsInProgress.decrementAndGet();
    }
  }
}
