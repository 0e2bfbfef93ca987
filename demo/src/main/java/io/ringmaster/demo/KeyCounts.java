package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.util.Optional;

/**
 * The keys a peer holds, by its role for them in its ring: primary, backup, or stray (held but not
 * owned: a copy the sweep has yet to hand off). Tombstones are counted apart.
 */
record KeyCounts(long primary, long backup, long stray, long tombstones) {

  /**
   * A pass over the store, without a list of owners per entry: the primary, then whether this peer
   * is among the first {@code replicas} owners.
   */
  private static KeyCounts of(Store store, HashRing ring, boolean inRing, String self, int replicas) {
    Optional<Member> me = inRing && !ring.isEmpty() ? ring.member(self) : Optional.empty();
    long primary = 0;
    long backup = 0;
    long stray = 0;
    long tombstones = 0;
    for (Entry e : store.all()) {
      if (e.deleted()) {
        tombstones++;
        continue;
      }
      long position = HashRing.position(e.key());
      if (me.isEmpty()) {
        stray++;
      } else if (ring.ownerOfPosition(position).equals(me.get())) {
        primary++;
      } else if (ring.isOwnerOfPosition(position, replicas, me.get())) {
        backup++;
      } else {
        stray++;
      }
    }
    return new KeyCounts(primary, backup, stray, tombstones);
  }

  /**
   * A peer's counts, computed again only when the ring it routes by, its place in it or the store
   * changed: the status each second, every /stats and every membership change ask for them, and a
   * pass over a million entries takes a good part of a second.
   */
  static final class Cached {
    private record Computed(HashRing ring, boolean inRing, long changes, KeyCounts counts) {}

    private volatile Computed last;
    /** How many passes over the store it made (for tests). */
    volatile long passes;

    KeyCounts of(Store store, Routing routing) {
      long changes = store.changes(); // before the pass: a change during it makes the next call count again
      HashRing ring = routing.ring();
      boolean inRing = routing.inRing();
      Computed c = last;
      if (c != null && c.ring() == ring && c.inRing() == inRing && c.changes() == changes) {
        return c.counts();
      }
      KeyCounts counts = KeyCounts.of(store, ring, inRing, routing.self(), routing.replicas());
      passes++;
      last = new Computed(ring, inRing, changes, counts);
      return counts;
    }
  }
}
