package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import java.util.List;

/**
 * The keys a peer holds, by its role for them in its ring: primary, backup, or stray (held but not
 * owned: a copy the sweep has yet to hand off). Tombstones are counted apart.
 */
record KeyCounts(long primary, long backup, long stray, long tombstones) {

  static KeyCounts of(Store store, Routing routing) {
    HashRing ring = routing.ring();
    long primary = 0;
    long backup = 0;
    long stray = 0;
    long tombstones = 0;
    for (Entry e : store.all()) {
      if (e.deleted()) {
        tombstones++;
        continue;
      }
      List<String> owners = routing.owners(ring, e.key());
      int role = routing.indexOfSelf(owners);
      if (role == 0) {
        primary++;
      } else if (role > 0) {
        backup++;
      } else {
        stray++;
      }
    }
    return new KeyCounts(primary, backup, stray, tombstones);
  }
}
