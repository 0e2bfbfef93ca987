package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import java.util.AbstractCollection;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * The entries this peer holds, ordered by ring position so that a {@link KeyRange} is one scan
 * (two for a range that wraps past {@link Long#MAX_VALUE}). Merges are last-writer-wins by
 * {@link Version}, tombstones included, so applying a migration twice, or in any order with the
 * writes it races with, ends in the same state (as long as the tombstones involved are kept: see
 * {@link #purgeTombstones}).
 */
final class Store {

  /**
   * A place on the ring: ordered by position, then key. A null key is a bound that sorts after
   * every key at its position; it is never stored.
   */
  record Slot(long position, String key) {
    static Slot of(String key) {
      return new Slot(HashRing.position(key), key);
    }

    /** The bound after every key at {@code position}. */
    static Slot after(long position) {
      return new Slot(position, null);
    }
  }

  static final Comparator<Slot> ORDER = (a, b) -> {
    int c = Long.compare(a.position(), b.position());
    if (c != 0) {
      return c;
    }
    if (a.key() == null || b.key() == null) {
      return a.key() == null ? (b.key() == null ? 0 : 1) : -1;
    }
    return a.key().compareTo(b.key());
  };

  /** Where a paged scan goes on: the segment (see {@link #segments}) and the last slot returned. */
  record Cursor(int segment, Optional<Slot> last) {
    static final Cursor START = new Cursor(0, Optional.empty());

    /**
     * Whether this cursor lies past {@code before}: a later segment, or a later slot of the same
     * one. A scan's next cursor is always past the one it started from, since a page that is not
     * the last holds at least one entry.
     */
    boolean isPast(Cursor before) {
      if (segment != before.segment) {
        return segment > before.segment;
      }
      return last.isPresent() && (before.last.isEmpty() || ORDER.compare(last.get(), before.last.get()) > 0);
    }
  }

  /** Entries of one page and where the next starts; {@code next} is empty after the last page. */
  record Page(List<Entry> entries, Optional<Cursor> next) {}

  /**
   * A stored entry, compared by identity: a drop ({@link #removeIfUnchanged}) removes the very copy
   * it read, never an equal one taken again since ({@link #retake}).
   */
  private static final class Held {
    final Entry entry;

    Held(Entry entry) {
      this.entry = entry;
    }
  }

  private final ConcurrentSkipListMap<Slot, Held> entries = new ConcurrentSkipListMap<>(ORDER);
  /** Counts the changes to the store, each after it is made: see {@link #changes()}. */
  private final AtomicLong changes = new AtomicLong();

  /**
   * How many times the store has changed (an entry added, replaced or removed), counted after each
   * change: a count equal to one read before a pass over the store means no change has completed
   * since that pass began.
   */
  long changes() {
    return changes.get();
  }
  /**
   * While this peer leaves: what it handed off and dropped, by key. The other peers still route
   * reads here until it has left their view, and would otherwise hear it holds nothing.
   */
  private final Map<String, Entry> handedOff = new ConcurrentHashMap<>();

  Optional<Entry> get(String key) {
    return Optional.ofNullable(entryOf(entries.get(Slot.of(key))));
  }

  private static Entry entryOf(Held held) {
    return held == null ? null : held.entry;
  }

  /**
   * This peer's copy of a key for a read: the stored one, or, if newer, the one it handed off while
   * leaving ({@link #keepHandedOff}).
   */
  Optional<Entry> readable(String key) {
    Entry stored = entryOf(entries.get(Slot.of(key)));
    Entry off = handedOff.isEmpty() ? null : handedOff.get(key);
    return Optional.ofNullable(off == null || stored != null && !off.supersedes(stored) ? stored : off);
  }

  /**
   * Keeps an entry this leaving peer handed off and then dropped readable by {@link #readable}
   * until the process ends; not part of what it holds ({@link #all}, {@link #size}, the scans).
   */
  void keepHandedOff(Entry e) {
    handedOff.merge(e.key(), e, (kept, next) -> next.supersedes(kept) ? next : kept);
  }

  /**
   * Keeps the stored entry or {@code e}, whichever {@link Entry#supersedes supersedes} the other.
   * Safe against concurrent merges of the same key (a push and a pull racing): exactly one of them reports the change.
   *
   * @return whether {@code e} changed the store (it was new, or newer than what was there)
   */
  boolean merge(Entry e) {
    return place(e, e::supersedes, true);
  }

  /**
   * Holds {@code e}, merged already, as the copy of its key from now on if the key holds an equal
   * one, or none (dropped since the merge): {@code e} came in a push this peer took, so its sender
   * may drop its own copy now, and a drop here of the copy read before ({@link #removeIfUnchanged})
   * must keep the key. That happens when a key is handed straight back: a peer that joined takes it
   * and is stopped at once, and its leave hands it back before the hand-off here drops it. Another
   * copy held now (a newer one, or one that wins the tie) stays.
   */
  void retake(Entry e) {
    place(e, current -> current != e && current.equals(e), false);
  }

  /**
   * Stores {@code e} if its key holds nothing, or in place of the stored entry if {@code replaces}
   * it; a replacement counts as a change if {@code counted} (an equal copy is none).
   *
   * @return whether {@code e} is stored now
   */
  private boolean place(Entry e, Predicate<Entry> replaces, boolean counted) {
    Slot slot = Slot.of(e.key());
    Held held = new Held(e);
    while (true) {
      // Not compute(): the skip list may run its function again after losing a race, and a flag
      // set by the losing run would report a change that another merge made.
      Held current = entries.putIfAbsent(slot, held);
      if (current == null) {
        changes.incrementAndGet();
        return true;
      }
      if (!replaces.test(current.entry)) {
        return false;
      }
      if (entries.replace(slot, current, held)) {
        if (counted) {
          changes.incrementAndGet();
        }
        return true;
      }
    }
  }

  /**
   * Removes the key if it still holds {@code seen}, the very copy read from this store: a write that
   * landed after {@code seen} was read is kept, even one of the same version that won the tie with
   * it, and so is an equal copy taken since from a peer that may drop its own ({@link #retake}). Of
   * two concurrent removals of the same entry, one reports it.
   */
  boolean removeIfUnchanged(Entry seen) {
    Slot slot = Slot.of(seen.key());
    while (true) {
      Held current = entries.get(slot);
      if (current == null || current.entry != seen) {
        return false;
      }
      if (entries.remove(slot, current)) {
        changes.incrementAndGet();
        return true;
      }
    }
  }

  /**
   * Drops the tombstones stamped before {@code stampBefore} (microseconds, like {@link Version#stamp()}),
   * unless rewritten meanwhile.
   *
   * @return how many were dropped
   */
  long purgeTombstones(long stampBefore) {
    return purgeTombstones(stampBefore, key -> false);
  }

  /**
   * As {@link #purgeTombstones(long)}, keeping those whose key {@code keep} accepts (a key still
   * coming in, whose old value a pull may yet bring: the tombstone must be here to beat it).
   */
  long purgeTombstones(long stampBefore, Predicate<String> keep) {
    long purged = 0;
    for (Map.Entry<Slot, Held> e : entries.entrySet()) {
      Entry t = e.getValue().entry;
      if (t.deleted() && t.version().stamp() < stampBefore && !keep.test(t.key())
          && entries.remove(e.getKey(), e.getValue())) {
        changes.incrementAndGet();
        purged++;
      }
    }
    return purged;
  }

  /** A snapshot of the entries in a range, in ring order (from just after {@code start}). */
  List<Entry> scan(KeyRange range) {
    List<Entry> out = new ArrayList<>();
    for (NavigableMap<Slot, Held> segment : segments(range)) {
      for (Held h : segment.values()) {
        out.add(h.entry);
      }
    }
    return out;
  }

  /**
   * Up to about {@code maxBytes} of the entries in {@code ranges} (at least one entry when any is
   * left), from {@code from}. The same ranges, passed again with the returned cursor, give the
   * next page; entries written meanwhile behind the cursor are not returned.
   */
  Page scan(List<KeyRange> ranges, Cursor from, int maxBytes) {
    List<NavigableMap<Slot, Held>> all = new ArrayList<>();
    for (KeyRange r : ranges) {
      all.addAll(segments(r));
    }
    List<Entry> out = new ArrayList<>();
    int bytes = 0;
    for (int s = from.segment(); s < all.size(); s++) {
      NavigableMap<Slot, Held> segment = all.get(s);
      if (s == from.segment() && from.last().isPresent()) {
        segment = segment.tailMap(from.last().get(), false);
      }
      // The cursor names the last entry returned from this segment; none yet: its start.
      Entry last = null;
      for (Held h : segment.values()) {
        Entry e = h.entry;
        if (!out.isEmpty() && bytes + e.weight() > maxBytes) {
          return new Page(out, Optional.of(new Cursor(s, Optional.ofNullable(last).map(l -> Slot.of(l.key())))));
        }
        out.add(e);
        bytes += e.weight();
        last = e;
      }
    }
    return new Page(out, Optional.empty());
  }

  /**
   * The range {@code (start, end]} as sorted sub-maps: one, or two when it wraps (the part up to
   * {@link Long#MAX_VALUE} first); {@code start == end} is the whole circle.
   */
  private List<NavigableMap<Slot, Held>> segments(KeyRange r) {
    if (!r.wraps()) {
      return List.of(entries.subMap(Slot.after(r.start()), false, Slot.after(r.end()), false));
    }
    // After start up to the top, then from the bottom up to end; with start == end that is the whole circle.
    return List.of(entries.tailMap(Slot.after(r.start()), false), entries.headMap(Slot.after(r.end()), false));
  }

  /** All entries, in ring order; weakly consistent with concurrent writes. */
  Collection<Entry> all() {
    Collection<Held> held = entries.values();
    return new AbstractCollection<>() {
      @Override
      public Iterator<Entry> iterator() {
        return held.stream().map(h -> h.entry).iterator();
      }

      @Override
      public int size() {
        return held.size();
      }
    };
  }

  int size() {
    return entries.size();
  }
}
