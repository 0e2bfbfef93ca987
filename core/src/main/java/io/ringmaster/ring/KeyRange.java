package io.ringmaster.ring;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * A range of ring positions {@code (start, end]} on the signed 64-bit circle.
 *
 * <p>A range whose {@code end} is below its {@code start} wraps past {@link Long#MAX_VALUE} to
 * {@link Long#MIN_VALUE}. A range with {@code start == end} is the whole circle: it is what a
 * member that owns everything (the only member of a ring) is reported to own, starting after a
 * token (in a {@link RingDiff}, a token of either ring, not necessarily one of its own);
 * {@link #full()} starts after {@link Long#MIN_VALUE}. Such ranges hold the same positions but
 * are different records ({@code equals} compares start and end): test a range with
 * {@link #isFull()}.
 *
 * <p>A key's position is {@link HashRing#position(String)}; {@link #contains(String)} tests it.
 */
public record KeyRange(long start, long end) {

  /** The whole circle. */
  public static KeyRange full() {
    return new KeyRange(Long.MIN_VALUE, Long.MIN_VALUE);
  }

  /** Whether this range is the whole circle. */
  public boolean isFull() {
    return start == end;
  }

  /**
   * Whether {@code end <= start}: the range passes from {@link Long#MAX_VALUE} to
   * {@link Long#MIN_VALUE}, or starts right after {@code MAX_VALUE} (then it holds
   * {@code MIN_VALUE} to {@code end}), or is the whole circle.
   */
  public boolean wraps() {
    return end <= start;
  }

  /** Whether the ring position {@code p} lies in {@code (start, end]}. */
  public boolean contains(long p) {
    return start < end ? (p > start && p <= end) : (p > start || p <= end);
  }

  /**
   * Whether this range and {@code other} share at least one position. (Each part of two ranges'
   * common ground ends where one of them ends, so it is enough to test the two ends.)
   */
  public boolean overlaps(KeyRange other) {
    return contains(other.end) || other.contains(end);
  }

  /** Whether the key (hashed over its UTF-8 bytes) lies in this range. */
  public boolean contains(String key) {
    return contains(HashRing.position(key));
  }

  /** Whether the key lies in this range. */
  public boolean contains(byte[] key) {
    return contains(HashRing.position(key));
  }

  /**
   * The fraction of the circle this range covers, in {@code (0, 1]}.
   */
  public double fraction() {
    if (isFull()) {
      return 1.0;
    }
    return unsignedToDouble(end - start) / 0x1p64;
  }

  /**
   * Groups an application's keys by the range that contains them: for example the keys to hand
   * off for each {@link RingDiff.Lost}, or to expect for each {@link RingDiff.Gained}. Keys in no
   * range are left out. Ranges of one diff never overlap, and then this costs
   * {@code O(log ranges)} per key; ranges that overlap (the lost ranges of several diffs, say)
   * cost {@code O(ranges)} per key, and a key in several goes to the first of them in
   * {@code items}. It reads {@code keys} once, so a concurrent map's live key set will do (a key
   * added or removed meanwhile may or may not be in the result); the keys are not removed from it.
   *
   * <pre>{@code
   * Map<RingDiff.Lost, List<String>> handOff =
   *     KeyRange.partition(diff.lost(), RingDiff.Lost::range, store.keys());
   * }</pre>
   *
   * @return a map in the order of {@code items}, holding only items with at least one key
   */
  public static <T> Map<T, List<String>> partition(List<T> items, Function<? super T, KeyRange> rangeOf,
                                                   Iterable<String> keys) {
    return partition(items, rangeOf, keys, HashRing::position);
  }

  /**
   * As {@link #partition(List, Function, Iterable)}, for keys of any type, placed on the ring by
   * {@code positionOf}: for {@code byte[]} keys, {@code HashRing::position}; for keys of your own
   * type, the position of the bytes or string you look them up by.
   *
   * <pre>{@code
   * Map<RingDiff.Lost, List<byte[]>> handOff =
   *     KeyRange.partition(diff.lost(), RingDiff.Lost::range, store.rawKeys(), HashRing::position);
   * }</pre>
   */
  public static <T, K> Map<T, List<K>> partition(List<T> items, Function<? super T, KeyRange> rangeOf,
                                                 Iterable<K> keys, ToLongFunction<? super K> positionOf) {
    List<T> plain = new ArrayList<>();
    List<T> wrapping = new ArrayList<>();
    for (T item : items) {
      (rangeOf.apply(item).wraps() ? wrapping : plain).add(item);
    }
    plain.sort(Comparator.comparingLong(item -> rangeOf.apply(item).end()));
    long[] ends = new long[plain.size()];
    for (int k = 0; k < ends.length; k++) {
      ends[k] = rangeOf.apply(plain.get(k)).end();
    }
    Map<T, List<K>> grouped = new LinkedHashMap<>();
    for (T item : items) {
      grouped.put(item, new ArrayList<>());
    }
    if (overlap(plain, wrapping, rangeOf)) {
      // The search below finds one candidate per key, which is enough only when ranges are apart.
      for (K key : keys) {
        long p = positionOf.applyAsLong(key);
        for (T item : items) {
          if (rangeOf.apply(item).contains(p)) {
            grouped.get(item).add(key);
            break;
          }
        }
      }
      grouped.values().removeIf(List::isEmpty);
      return grouped;
    }
    for (K key : keys) {
      long p = positionOf.applyAsLong(key);
      T found = null;
      int k = Arrays.binarySearch(ends, p);
      k = k >= 0 ? k : -k - 1; // first range ending at or after p
      if (k < ends.length && rangeOf.apply(plain.get(k)).contains(p)) {
        found = plain.get(k);
      } else {
        for (T w : wrapping) {
          if (rangeOf.apply(w).contains(p)) {
            found = w;
            break;
          }
        }
      }
      if (found != null) {
        grouped.get(found).add(key);
      }
    }
    grouped.values().removeIf(List::isEmpty);
    return grouped;
  }

  /**
   * Whether any two of the ranges overlap: {@code plain} (none wrapping) sorted by end, each
   * overlaps one before it exactly when it starts before the previous one ends; a wrapping one
   * is checked against all the others.
   */
  private static <T> boolean overlap(List<T> plain, List<T> wrapping, Function<? super T, KeyRange> rangeOf) {
    for (int k = 1; k < plain.size(); k++) {
      if (rangeOf.apply(plain.get(k)).start() < rangeOf.apply(plain.get(k - 1)).end()) {
        return true;
      }
    }
    for (int w = 0; w < wrapping.size(); w++) {
      KeyRange range = rangeOf.apply(wrapping.get(w));
      for (int o = w + 1; o < wrapping.size(); o++) {
        if (range.overlaps(rangeOf.apply(wrapping.get(o)))) {
          return true;
        }
      }
      for (T p : plain) {
        if (range.overlaps(rangeOf.apply(p))) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * {@code v} read as unsigned, rounded once to the nearest double: the halving keeps the lost
   * low bit as a sticky bit, so that 2^54 + 3 gives 2^54 + 4, not 2^54.
   */
  static double unsignedToDouble(long v) {
    return v >= 0 ? (double) v : (double) ((v >>> 1) | (v & 1)) * 2.0;
  }

  @Override
  public String toString() {
    return "(" + start + ", " + end + "]";
  }
}
