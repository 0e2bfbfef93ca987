package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class StoreTest {
  private static final int KEYS = 2_000;

  private static Version v(long stamp) {
    return new Version(stamp, "p1");
  }

  private static Store filled() {
    Store store = new Store();
    for (int i = 0; i < KEYS; i++) {
      store.merge(Entry.of("k" + i, "v" + i, v(1)));
    }
    return store;
  }

  /** The keys a range holds, by the definition: (start, end], wrapping, start == end the whole circle. */
  private static Set<String> expected(KeyRange r) {
    Set<String> out = new TreeSet<>();
    for (int i = 0; i < KEYS; i++) {
      if (r.contains("k" + i)) {
        out.add("k" + i);
      }
    }
    return out;
  }

  private static Set<String> keys(List<Entry> entries) {
    return entries.stream().map(Entry::key).collect(Collectors.toCollection(TreeSet::new));
  }

  @Test
  void scan_plainWrappingAndFullRanges_returnExactlyTheKeysInside() {
    Store store = filled();
    Random random = new Random(42);
    List<KeyRange> ranges = new ArrayList<>(List.of(KeyRange.full(), new KeyRange(0, 0),
        new KeyRange(Long.MIN_VALUE, Long.MAX_VALUE), new KeyRange(Long.MAX_VALUE, Long.MIN_VALUE),
        new KeyRange(Long.MAX_VALUE / 2, Long.MIN_VALUE / 2), new KeyRange(-10, 10)));
    for (int i = 0; i < 200; i++) {
      ranges.add(new KeyRange(random.nextLong(), random.nextLong()));
    }
    for (KeyRange r : ranges) {
      List<Entry> scanned = store.scan(r);
      assertEquals(expected(r), keys(scanned), "range " + r);
      assertEquals(scanned.size(), keys(scanned).size(), "no key twice in " + r);
    }
  }

  @Test
  void scan_rangeEndsExactlyOnAKey_includesEndExcludesStart() {
    Store store = filled();
    long p = HashRing.position("k7");
    assertTrue(keys(store.scan(new KeyRange(p - 1, p))).contains("k7"));
    assertFalse(keys(store.scan(new KeyRange(p, p + 1))).contains("k7"));
  }

  @Test
  void scan_wrappingRange_returnsRingOrderFromStart() {
    Store store = filled();
    KeyRange r = new KeyRange(Long.MAX_VALUE / 2, Long.MIN_VALUE / 2);
    List<Long> positions = store.scan(r).stream().map(Entry::position).toList();
    int wrapAt = 0;
    while (wrapAt < positions.size() && positions.get(wrapAt) > 0) {
      wrapAt++;
    }
    List<Long> high = positions.subList(0, wrapAt);
    List<Long> low = positions.subList(wrapAt, positions.size());
    assertEquals(high.stream().sorted().toList(), high);
    assertEquals(low.stream().sorted().toList(), low);
    assertTrue(low.stream().allMatch(x -> x < 0));
  }

  @Test
  void pagedScan_smallPages_visitsEachKeyOnceAcrossRanges() {
    Store store = filled();
    List<KeyRange> ranges = List.of(new KeyRange(Long.MAX_VALUE / 2, Long.MIN_VALUE / 2), new KeyRange(-100, 1L << 60));
    Set<String> want = new TreeSet<>(expected(ranges.get(0)));
    want.addAll(expected(ranges.get(1)));
    List<Entry> got = new ArrayList<>();
    Store.Cursor cursor = Store.Cursor.START;
    int pages = 0;
    while (true) {
      Store.Page page = store.scan(ranges, cursor, 1_000);
      got.addAll(page.entries());
      pages++;
      if (page.next().isEmpty()) {
        break;
      }
      cursor = page.next().get();
    }
    assertEquals(want, keys(got));
    assertEquals(got.size(), want.size(), "no key twice");
    assertTrue(pages > 10, "small pages: " + pages);
  }

  /** A cursor is past another in a later segment, or later in the same one; never past itself. */
  @Test
  void cursor_isPast_aLaterSegmentOrALaterSlotOfTheSame_only() {
    Store.Slot k1 = Store.Slot.of("k1");
    Store.Slot k2 = Store.Slot.of("k2");
    Store.Slot early = k1.position() < k2.position() ? k1 : k2;
    Store.Slot late = early == k1 ? k2 : k1;
    Store.Cursor startOf1 = new Store.Cursor(1, Optional.empty());
    Store.Cursor earlyIn1 = new Store.Cursor(1, Optional.of(early));
    Store.Cursor lateIn1 = new Store.Cursor(1, Optional.of(late));
    Store.Cursor lateIn0 = new Store.Cursor(0, Optional.of(late));
    Store.Cursor startOf2 = new Store.Cursor(2, Optional.empty());

    assertTrue(earlyIn1.isPast(startOf1));
    assertTrue(lateIn1.isPast(earlyIn1));
    assertTrue(startOf1.isPast(lateIn0), "a later segment, from its start");
    assertTrue(startOf2.isPast(lateIn1));
    for (Store.Cursor c : List.of(startOf1, earlyIn1, lateIn1, lateIn0, startOf2)) {
      assertFalse(c.isPast(c), "not past itself: " + c);
    }
    assertFalse(earlyIn1.isPast(lateIn1), "back within the segment");
    assertFalse(startOf1.isPast(earlyIn1), "back to the segment's start");
    assertFalse(lateIn0.isPast(startOf1), "back to an earlier segment");
    assertFalse(new Store.Cursor(1, Optional.of(new Store.Slot(early.position(), "a"))).isPast(
        new Store.Cursor(1, Optional.of(new Store.Slot(early.position(), "b")))), "the same position, an earlier key");
    assertTrue(new Store.Cursor(1, Optional.of(new Store.Slot(early.position(), "b"))).isPast(
        new Store.Cursor(1, Optional.of(new Store.Slot(early.position(), "a")))), "the same position, a later key");
  }

  /**
   * Every page size from one entry up, over many small ranges (a migration of many virtual nodes)
   * and a wrapping one: some page ends on the last entry of a range, so the next page starts at
   * the first entry of another segment.
   */
  @Test
  void pagedScan_pageBreaksOnSegmentBoundaries_visitsEachKeyOnce() {
    Store store = filled();
    Random random = new Random(7);
    List<KeyRange> ranges = new ArrayList<>();
    long[] cuts = random.longs(40).sorted().toArray();
    for (int i = 0; i + 1 < cuts.length; i += 2) {
      ranges.add(new KeyRange(cuts[i], cuts[i + 1]));
    }
    ranges.add(new KeyRange(cuts[cuts.length - 1], cuts[0])); // wraps: two segments
    Set<String> want = new TreeSet<>();
    ranges.forEach(r -> want.addAll(expected(r)));
    int oneEntry = Entry.of("k1000", "v1000", v(1)).weight();
    for (int entriesPerPage = 1; entriesPerPage <= 40; entriesPerPage++) {
      List<Entry> got = new ArrayList<>();
      Store.Cursor cursor = Store.Cursor.START;
      while (true) {
        Store.Page page = store.scan(ranges, cursor, entriesPerPage * oneEntry);
        got.addAll(page.entries());
        if (page.next().isEmpty()) {
          break;
        }
        assertTrue(page.next().get().isPast(cursor), "a puller takes each next cursor only if it is past the last");
        cursor = page.next().get();
      }
      assertEquals(want, keys(got), "pages of about " + entriesPerPage + " entries");
      assertEquals(want.size(), got.size(), "no key twice, pages of about " + entriesPerPage + " entries");
    }
  }

  /**
   * A page takes entries while they fit in {@code maxBytes}, the one that fills it exactly
   * included: the first two entries' weights make a page of two, a byte less one of one.
   */
  @Test
  void pagedScan_entriesThatFillThePageExactly_areAllInIt() {
    Store store = filled();
    List<KeyRange> all = List.of(KeyRange.full());
    List<Entry> inOrder = store.scan(KeyRange.full());
    int two = inOrder.get(0).weight() + inOrder.get(1).weight();

    Store.Page page = store.scan(all, Store.Cursor.START, two);
    assertEquals(inOrder.subList(0, 2), page.entries());
    assertTrue(page.next().isPresent());
    assertEquals(inOrder.subList(0, 1), store.scan(all, Store.Cursor.START, two - 1).entries());
  }

  /**
   * Slots are ordered by position, then key; the bound after a position ({@link Store.Slot#after})
   * sorts after every key there and equals only itself. Two keys at one position need a 64-bit hash
   * collision, so the order is checked on slots made by hand.
   */
  @Test
  void order_byPositionThenKey_withTheBoundAfterEveryKeyAtItsPosition() {
    Store.Slot a = new Store.Slot(5, "a");
    Store.Slot b = new Store.Slot(5, "b");
    Store.Slot bound = Store.Slot.after(5);
    assertTrue(Store.ORDER.compare(a, b) < 0);
    assertTrue(Store.ORDER.compare(b, a) > 0);
    assertEquals(0, Store.ORDER.compare(a, new Store.Slot(5, "a")));
    assertTrue(Store.ORDER.compare(bound, b) > 0, "the bound after every key at its position");
    assertTrue(Store.ORDER.compare(b, bound) < 0);
    assertEquals(0, Store.ORDER.compare(bound, Store.Slot.after(5)));
    assertTrue(Store.ORDER.compare(bound, new Store.Slot(6, "a")) < 0, "and before the next position");
  }

  @Test
  void merge_olderVersion_isIgnoredAndNewerWins() {
    Store store = new Store();
    assertTrue(store.merge(Entry.of("k", "new", v(10))));
    assertFalse(store.merge(Entry.of("k", "old", v(9))));
    assertFalse(store.merge(Entry.of("k", "new", v(10))), "the same write again is a duplicate");
    assertEquals("new", store.get("k").orElseThrow().value());
    assertTrue(store.merge(Entry.of("k", "newer", v(11))));
    assertEquals("newer", store.get("k").orElseThrow().value());
  }

  @Test
  void merge_sameStamp_higherWriterIdWins() {
    Store store = new Store();
    store.merge(Entry.of("k", "from-b", new Version(5, "b")));
    assertFalse(store.merge(Entry.of("k", "from-a", new Version(5, "a"))));
    assertTrue(store.merge(Entry.of("k", "from-c", new Version(5, "c"))));
    assertEquals("from-c", store.get("k").orElseThrow().value());
  }

  @Test
  void merge_tombstone_blocksOlderValueFromResurrecting() {
    Store store = new Store();
    store.merge(Entry.of("k", "v", v(1)));
    assertTrue(store.merge(Entry.tombstone("k", v(2))));
    assertFalse(store.merge(Entry.of("k", "v", v(1))), "a migration bringing the old value back");
    assertTrue(store.get("k").orElseThrow().deleted());
    assertTrue(store.merge(Entry.of("k", "again", v(3))), "a later write revives the key");
    assertEquals("again", store.get("k").orElseThrow().value());
  }

  @Test
  void removeIfUnchanged_rewrittenMeanwhile_keepsTheNewWrite() {
    Store store = new Store();
    store.merge(Entry.of("k", "v1", v(1)));
    Entry seen = store.get("k").orElseThrow();
    store.merge(Entry.of("k", "v2", v(2)));
    assertFalse(store.removeIfUnchanged(seen));
    assertEquals(Optional.of("v2"), store.get("k").map(Entry::value));
    assertTrue(store.removeIfUnchanged(store.get("k").orElseThrow()));
    assertTrue(store.get("k").isEmpty());
  }

  @Test
  void removeIfUnchanged_aCopyOfTheSameVersionThatWonTheTieMeanwhile_keepsIt() {
    Store store = new Store();
    Entry seen = Entry.of("k", "a", v(1));
    store.merge(seen);
    Entry tieWinner = Entry.of("k", "b", v(1)); // one writer id on two processes, one microsecond
    assertTrue(store.merge(tieWinner));
    assertFalse(store.removeIfUnchanged(seen), "the copy read is gone; the one there now was not handed off");
    assertEquals(Optional.of(tieWinner), store.get("k"));
  }

  /**
   * An equal copy taken again once the copy was read, from a peer that may drop its own (it handed
   * the key back: see {@link HandBackTest}), changes nothing, but a drop of the copy read keeps it;
   * one taken after the drop is held again. A copy merged, not taken, leaves the drop as it was.
   */
  @Test
  void removeIfUnchanged_anEqualCopyTakenAgainMeanwhile_keepsIt() {
    Store store = new Store();
    Entry seen = Entry.of("k", "v", v(1));
    store.merge(seen);
    assertFalse(store.merge(Entry.of("k", "v", v(1))), "the same entry again is no change");
    assertTrue(store.removeIfUnchanged(seen), "merged only: the copy read is dropped");
    store.merge(seen);
    long changes = store.changes();

    store.retake(Entry.of("k", "v", v(1)));
    assertEquals(changes, store.changes(), "taken again: no change");
    assertFalse(store.removeIfUnchanged(seen), "taken again after it was read");
    assertEquals(Optional.of(seen), store.get("k"));
    assertTrue(store.removeIfUnchanged(store.get("k").orElseThrow()), "the copy held now is dropped");
    store.retake(seen);
    assertEquals(Optional.of(seen), store.get("k"), "taken after the drop: held again");
    Entry newer = Entry.of("k", "newer", v(2));
    store.merge(newer);
    store.retake(seen);
    assertEquals(Optional.of(newer), store.get("k"), "an older copy taken changes nothing");
    assertTrue(store.removeIfUnchanged(newer));
  }

  /**
   * A push and a pull can merge the same entry at the same moment, and the migration counters add
   * up what each merge reports: exactly one of them may report the change. The same for two
   * hand-offs dropping the same entry.
   */
  @Test
  void mergeAndRemove_sameEntriesFromTwoThreads_eachChangeReportedOnce() throws Exception {
    int rounds = 40;
    long doubleMerges = 0;
    long doubleRemoves = 0;
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < rounds; round++) {
        Store store = new Store();
        List<Entry> older = new ArrayList<>();
        List<Entry> newer = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
          older.add(Entry.of("k" + i, "old", v(1)));
          newer.add(Entry.of("k" + i, "new", v(2)));
        }
        // Absent keys (the insert path), then present ones (the replace path), then removals.
        doubleMerges += both(threads, older, store::merge) - KEYS;
        doubleMerges += both(threads, newer, store::merge) - KEYS;
        doubleRemoves += both(threads, newer, store::removeIfUnchanged) - KEYS;
        assertEquals(0, store.size(), "every entry removed");
      }
    } finally {
      threads.shutdownNow();
      assertTrue(threads.awaitTermination(10, TimeUnit.SECONDS));
    }
    assertEquals(0, doubleMerges, "merges reported as changes by both threads");
    assertEquals(0, doubleRemoves, "removals reported by both threads");
  }

  /** Runs {@code op} over the entries on two threads at once; how many calls reported a change. */
  private static long both(ExecutorService threads, List<Entry> entries, Predicate<Entry> op) throws Exception {
    CyclicBarrier start = new CyclicBarrier(2);
    Callable<Long> task = () -> {
      start.await();
      long changed = 0;
      for (Entry e : entries) {
        if (op.test(e)) {
          changed++;
        }
      }
      return changed;
    };
    Future<Long> a = threads.submit(task);
    Future<Long> b = threads.submit(task);
    return a.get(30, TimeUnit.SECONDS) + b.get(30, TimeUnit.SECONDS);
  }

  @Test
  void purgeTombstones_olderThanTheBound_droppedValuesAndNewerTombstonesKept() {
    Store store = new Store();
    store.merge(Entry.of("live", "v", v(1)));
    store.merge(Entry.tombstone("old", v(5)));
    store.merge(Entry.tombstone("recent", v(20)));
    assertEquals(1, store.purgeTombstones(10));
    assertEquals(Optional.empty(), store.get("old"));
    assertTrue(store.get("recent").orElseThrow().deleted());
    assertEquals("v", store.get("live").orElseThrow().value(), "a value stays, however old");
    assertEquals(0, store.purgeTombstones(10));
  }

  /** The bound is exclusive: a tombstone stamped at it stays, one a microsecond older goes. */
  @Test
  void purgeTombstones_atTheBound_keptAndJustBelowIt_dropped() {
    Store store = new Store();
    store.merge(Entry.tombstone("at", v(10)));
    store.merge(Entry.tombstone("below", v(9)));
    assertEquals(1, store.purgeTombstones(10));
    assertEquals(Optional.empty(), store.get("below"));
    assertTrue(store.get("at").orElseThrow().deleted());
  }

  @Test
  void purgeBound_isTheGraceBeforeNow_inMicroseconds() {
    assertEquals(1_000_000_000L - 20_000_000L, Peer.purgeBound(1_000_000_000L, Duration.ofSeconds(20)));
    assertEquals(5_000L - 1L, Peer.purgeBound(5_000L, Duration.ofNanos(1_999)));
  }

  /** A tombstone of a key still coming in stays past its grace: a pull may yet bring the old value. */
  @Test
  void purgeTombstones_keepsThoseOfKeysItIsToldToKeep() {
    Store store = new Store();
    store.merge(Entry.tombstone("coming-in", v(5)));
    store.merge(Entry.tombstone("settled", v(5)));
    assertEquals(1, store.purgeTombstones(10, "coming-in"::equals));
    assertTrue(store.get("coming-in").orElseThrow().deleted());
    assertEquals(Optional.empty(), store.get("settled"));
    assertEquals(1, store.purgeTombstones(10, key -> false), "once the key has come in");
  }

  @Test
  void all_iteratesOverEveryEntryInRingOrder() {
    Store store = filled();
    List<Long> positions = store.all().stream().map(Entry::position).toList();
    assertEquals(positions.stream().sorted(Comparator.naturalOrder()).toList(), positions);
    assertEquals(KEYS, positions.size(), "every entry");
    assertEquals(KEYS, store.size());
  }

  @Test
  void versionClock_stampsStrictlyIncreaseAndPassObservedOnes() {
    long[] now = {1_000};
    VersionClock clock = new VersionClock("p", () -> now[0]);
    Version a = clock.next();
    Version b = clock.next();
    assertEquals(1_000, a.stamp());
    assertTrue(b.isNewerThan(a), "two writes in one microsecond");
    now[0] = 500; // the wall clock went back
    assertTrue(clock.next().isNewerThan(b));
    clock.observe(9_000);
    assertTrue(clock.next().stamp() > 9_000);
  }

  /** On the system's clock, a stamp is the wall clock's time in microseconds since the epoch. */
  @Test
  void versionClock_system_stampsTheWallClockInMicroseconds() {
    long before = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    Version v = VersionClock.system("p").next();
    long after = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    assertTrue(before <= v.stamp() && v.stamp() <= after, () -> v + " not in " + before + ".." + after);
    assertEquals("p", v.writer());
  }

  /**
   * A stamp out of range, or more than a year ahead, is not observed: it cannot drag the clock to
   * the end of the range (or, before the range check, wrap it to a negative stamp). A clock that
   * reaches the end on its own refuses to go past it.
   */
  @Test
  void versionClock_ignoresStampsOutOfRangeOrAYearAhead_andRefusesToPassTheLast() {
    long now = 1_700_000_000_000_000L; // 2023, in microseconds
    long year = VersionClock.MAX_AHEAD.toNanos() / 1_000;
    VersionClock clock = new VersionClock("p", () -> now);
    for (long stamp : new long[] {Long.MAX_VALUE, -5, Version.MAX_STAMP, now + year + 1}) {
      clock.observe(stamp);
      assertEquals(now, clock.next().stamp(), "ignored: " + stamp);
      clock = new VersionClock("p", () -> now);
    }
    clock.observe(now + year); // a clock a year ahead is followed
    assertEquals(now + year + 1, clock.next().stamp());

    VersionClock atTheEnd = new VersionClock("p", () -> Version.MAX_STAMP);
    assertEquals(Version.MAX_STAMP, atTheEnd.next().stamp());
    IllegalStateException end = assertThrows(IllegalStateException.class, atTheEnd::next);
    assertTrue(end.getMessage().startsWith("the version clock of p is at " + (Version.MAX_STAMP + 1)), end.getMessage());
  }

  /**
   * Two writes with one version (two processes under one peer id, in the same microsecond): every
   * store keeps the same one, whichever arrives first, so the replicas do not stay different.
   */
  @Test
  void equalVersions_everyStoreKeepsTheSameEntry_inEitherOrder() {
    Version tie = v(5);
    List<List<Entry>> pairs = List.of(
        List.of(Entry.of("k", "apple", tie), Entry.of("k", "pear", tie)),
        List.of(Entry.of("k", "apple", tie), Entry.tombstone("k", tie)));
    for (List<Entry> pair : pairs) {
      Store first = new Store();
      first.merge(pair.get(0));
      first.merge(pair.get(1));
      Store second = new Store();
      second.merge(pair.get(1));
      second.merge(pair.get(0));
      assertEquals(first.get("k"), second.get("k"), pair.toString());
    }
    Store store = new Store();
    store.merge(Entry.of("k", "apple", tie));
    assertTrue(store.merge(Entry.of("k", "pear", tie)), "the greater value wins the tie");
    assertFalse(store.merge(Entry.of("k", "pear", tie)), "the same entry again changes nothing");
    // Of a value and a tombstone of one version, the tombstone: as documented, whichever arrives first.
    assertTrue(Entry.tombstone("k", tie).supersedes(Entry.of("k", "zebra", tie)));
    assertFalse(Entry.of("k", "zebra", tie).supersedes(Entry.tombstone("k", tie)));
    assertTrue(store.merge(Entry.tombstone("k", tie)), "the tombstone wins the tie");
    assertTrue(store.get("k").orElseThrow().deleted());
  }

  /**
   * A leaving peer's copies that it handed off and dropped stay readable ({@link Store#readable}),
   * where it would otherwise answer a read routed to it that it holds nothing; a newer copy stored
   * after that (a write that reached it meanwhile) is read instead, and an older one handed off
   * later keeps neither from being read. They are not part of what it holds.
   */
  @Test
  void readable_aHandedOffCopy_untilANewerOneIsStored_andNotPartOfTheStore() {
    Store store = new Store();
    Entry v1 = Entry.of("k", "v1", v(1));
    store.merge(v1);
    store.keepHandedOff(v1);
    assertTrue(store.removeIfUnchanged(v1));
    assertEquals(Optional.empty(), store.get("k"), "dropped");
    assertEquals(0, store.size());
    assertEquals(Optional.of(v1), store.readable("k"), "still readable here");
    Entry v2 = Entry.of("k", "v2", v(2));
    store.merge(v2);
    assertEquals(Optional.of(v2), store.readable("k"), "the newer stored copy, not the one handed off");
    store.keepHandedOff(Entry.of("k", "v0", v(0)));
    assertEquals(Optional.of(v2), store.readable("k"), "an older copy handed off later changes nothing");
    Entry v3 = Entry.of("k", "v3", v(3));
    store.keepHandedOff(v3);
    assertEquals(Optional.of(v3), store.readable("k"), "a newer copy handed off: the newest of the two");
    assertEquals(Optional.empty(), store.readable("other"));

    // Copies handed off of a key no longer stored: the newest is read, whatever their order.
    Entry w2 = Entry.of("w", "w2", v(2));
    store.keepHandedOff(w2);
    store.keepHandedOff(Entry.of("w", "w1", v(1)));
    assertEquals(Optional.of(w2), store.readable("w"), "an older copy handed off after a newer one");
  }

  /**
   * The count of changes that the key counts and the sweep compare before skipping a pass: it moves
   * with each entry added, replaced, removed or purged, and stays put for a merge or a removal that
   * changes nothing.
   */
  @Test
  void changes_countEachEntryAddedReplacedOrRemoved_andNothingElse() {
    Store store = new Store();
    assertEquals(0, store.changes(), "a new store");
    store.merge(Entry.of("k", "v1", v(1)));
    assertEquals(1, store.changes(), "added");
    store.merge(Entry.of("k", "v0", v(0)));
    store.merge(Entry.of("k", "v1", v(1)));
    assertEquals(1, store.changes(), "an older copy and the same one again change nothing");
    Entry v2 = Entry.of("k", "v2", v(2));
    store.merge(v2);
    assertEquals(2, store.changes(), "replaced");
    store.removeIfUnchanged(Entry.of("k", "v1", v(1)));
    assertEquals(2, store.changes(), "a removal of a copy no longer there changes nothing");
    store.removeIfUnchanged(v2);
    assertEquals(3, store.changes(), "removed");
    store.merge(Entry.tombstone("k", v(3)));
    store.purgeTombstones(4);
    assertEquals(5, store.changes(), "a tombstone added, then purged");
  }

  /** A key rewritten while the purge looks at its tombstone keeps the new write. */
  @Test
  void purgeTombstones_aRewriteDuringThePurge_isKept() {
    Store store = new Store();
    store.merge(Entry.tombstone("k", v(5)));
    Entry back = Entry.of("k", "back", v(20));
    assertEquals(0, store.purgeTombstones(10, key -> {
      store.merge(back); // between the purge's read of the tombstone and its removal
      return false;
    }));
    assertEquals(Optional.of(back), store.get("k"));
  }
}
