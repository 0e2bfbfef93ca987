package io.ringmaster.bench;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What any ring lookup must cost on this machine, beyond hashing the key: the hash followed by
 * one random read, or by two dependent random reads, of tables as large as a ring's lookup data,
 * next to the hash alone and {@link HashRing#ownerOf(byte[])}, over {@link LookupBenchmark}'s
 * keys (their UTF-8 bytes).
 *
 * <ul>
 *   <li>{@code hashOnly}: {@code HashRing.position(key)}, the floor of {@link LookupBenchmark};
 *   <li>{@code hashThenOneRead}: the hash, then one read of a 4-byte cell of a table with one
 *       cell per token: the cost of a lookup that would find every owner with one read;
 *   <li>{@code hashThenTwoReads}: the hash, a read of an index with one 4-byte slot per four
 *       tokens, then a read of a table with 4 bytes per token at the place the first read gave
 *       (the shape of a bucket index in front of the tokens);
 *   <li>{@code hashThenTwoReadsSmallIndex}: the same, with the index cut to under a third of its size (80 KB against 256 KB)
 *       (a byte per slot added to an {@code int} per 16 slots, read by two independent loads), so
 *       that it can stay in a 512 KB second-level cache while the keys stream past;
 *   <li>{@code hashThenTwoReadsComparingTwoPairs}, {@code hashThenTwoReadsComparingFourPairs}: the
 *       same two reads, the second of 4-byte entries like the ring's (a 15-bit fingerprint above a
 *       16-bit owner), and the key compared with the two or four 8-byte pairs that follow the
 *       place the index gave, as the ring compares a bucket, without masks, ties or large buckets:
 *       what the comparison itself costs, pair by pair;
 *   <li>{@code ringmaster}: the real lookup, which reads the bucket index, then the entries that
 *       hold the tokens' fingerprints and owners: two dependent reads, and a comparison between
 *       them and the owner;
 *   <li>{@code hashOnlyString}, {@code ringmasterString}: the hash alone and the real lookup of
 *       the same keys as {@code String}s, so that {@link LookupBenchmark}'s String figures have a
 *       second measurement over another setup.
 * </ul>
 * The tables hold random member indices, so nothing can be predicted or folded; their answers
 * are meaningless. The results bound what layout work can win: a lookup cannot beat the read
 * chain it needs, and at a quarter of a million tokens the key stream (32 MB of keys) keeps
 * those reads out of the core's caches.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar LookupFloorBenchmark -f 2}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class LookupFloorBenchmark {
  @Param({"10", "100", "1000"})
  public int members;

  @Param({"256"})
  public int virtualNodes;

  byte[][] keys;
  String[] strings;
  HashRing ring;
  Member[] memberArray;
  /** One cell per token, rounded up to a power of two. */
  int[] cells;
  int cellShift;
  /** One slot per four tokens, each pointing into {@link #cells}. */
  int[] index;
  int indexShift;
  /** {@code 64 - indexShift}: the bits of a position that choose its index slot. */
  int indexBits;

  /**
   * A smaller index for {@link #hashThenTwoReadsSmallIndex}: a byte per four tokens, added to an
   * {@code int} kept for every 16 of those bytes (80 KB at 256,000 tokens instead of 256 KB).
   */
  byte[] smallOffsets;
  int[] smallBases;

  /** One 4-byte entry per cell of {@link #cells}, as the ring's: fingerprint above owner. */
  byte[] entries;

  private static final VarHandle PAIR =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle ENTRY =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long TOPS = 0x8000_0000_8000_0000L;

  @Setup
  public void setup() {
    keys = LookupBenchmark.Keys.BYTES;
    strings = LookupBenchmark.Keys.STRINGS;
    ring = HashRing.builder().virtualNodes(virtualNodes).addAll(Fixtures.members(0, members)).build();
    memberArray = ring.members().toArray(new Member[0]);
    int tokens = ring.tokenCount();
    // At least 512: the small index's bases below reach 256 cells past themselves.
    int cellCount = Math.max(512, Integer.highestOneBit(tokens - 1) << 1);
    cellShift = 64 - Integer.numberOfTrailingZeros(cellCount);
    cells = new int[cellCount + 4];
    int indexCount = Math.max(1, cellCount >> 2);
    indexBits = Integer.numberOfTrailingZeros(indexCount);
    indexShift = 64 - indexBits;
    index = new int[indexCount];
    SplittableRandom random = new SplittableRandom(Fixtures.KEY_SEED);
    for (int c = 0; c < cells.length; c++) {
      cells[c] = random.nextInt(members);
    }
    for (int s = 0; s < index.length; s++) {
      index[s] = random.nextInt(cellCount);
    }
    smallOffsets = new byte[indexCount];
    smallBases = new int[indexCount / 16 + 1];
    for (int s = 0; s < indexCount; s++) {
      smallOffsets[s] = (byte) random.nextInt(256);
    }
    for (int s = 0; s < smallBases.length; s++) {
      smallBases[s] = random.nextInt(cellCount - 256);
    }
    entries = new byte[4 * (cellCount + 8)];
    for (int e = 0; e < cellCount + 8; e++) {
      ENTRY.set(entries, 4 * e, random.nextInt(1 << 15) << 16 | random.nextInt(members));
    }
  }

  @Benchmark
  public void hashOnly(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(HashRing.position(keys[c.next()]));
  }

  @Benchmark
  public void hashThenOneRead(LookupBenchmark.Cursor c, Blackhole bh) {
    long p = HashRing.position(keys[c.next()]);
    bh.consume(memberArray[cells[(int) ((p ^ Long.MIN_VALUE) >>> cellShift)]]);
  }

  @Benchmark
  public void hashThenTwoReads(LookupBenchmark.Cursor c, Blackhole bh) {
    long p = HashRing.position(keys[c.next()]);
    int start = index[(int) ((p ^ Long.MIN_VALUE) >>> indexShift)];
    bh.consume(memberArray[cells[start + ((int) p & 3)]]);
  }

  @Benchmark
  public void hashThenTwoReadsSmallIndex(LookupBenchmark.Cursor c, Blackhole bh) {
    long p = HashRing.position(keys[c.next()]);
    int b = (int) ((p ^ Long.MIN_VALUE) >>> indexShift);
    int start = smallBases[b >>> 4] + (smallOffsets[b] & 0xff);
    bh.consume(memberArray[cells[start + ((int) p & 3)]]);
  }

  @Benchmark
  public void hashThenTwoReadsComparingTwoPairs(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(compareAfterTwoReads(keys[c.next()], false));
  }

  @Benchmark
  public void hashThenTwoReadsComparingFourPairs(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(compareAfterTwoReads(keys[c.next()], true));
  }

  /** {@code fourPairs} is a constant at each call site, so each benchmark compiles one shape. */
  private Member compareAfterTwoReads(byte[] k, boolean fourPairs) {
    long p = HashRing.position(k);
    int start = index[(int) ((p ^ Long.MIN_VALUE) >>> indexShift)];
    // The 15 bits after those that chose the slot, shifted as the ring shifts them, above each owner.
    long key = ((p << indexBits) >>> 49) * 0x0001_0000_0001_0000L;
    int below = below(start, key) + (fourPairs ? below(start + 4, key) : 0);
    return memberArray[(char) (int) ENTRY.get(entries, 4 * (start + below))];
  }

  /** Entries {@code i..i+3} whose fingerprint is below the key's, as the ring counts them. */
  private int below(int i, long key) {
    byte[] e = entries;
    return Long.bitCount(~(((long) PAIR.get(e, 4 * i) | TOPS) - key) & TOPS)
        + Long.bitCount(~(((long) PAIR.get(e, 4 * i + 8) | TOPS) - key) & TOPS);
  }

  @Benchmark
  public void ringmaster(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(ring.ownerOf(keys[c.next()]));
  }

  /** The hash alone of the keys as {@code String}s: the String floor, over this benchmark's heap. */
  @Benchmark
  public void hashOnlyString(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(HashRing.position(strings[c.next()]));
  }

  /** {@link HashRing#ownerOf(String)} over the same heap as {@link #hashOnlyString}. */
  @Benchmark
  public void ringmasterString(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(ring.ownerOf(strings[c.next()]));
  }
}
