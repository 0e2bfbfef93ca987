package io.ringmaster.bench;

import com.sun.management.HotSpotDiagnosticMXBean;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
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
 * The shortest lookup chain a fingerprint layout can have, measured against {@link HashRing}: no
 * bucket index and no second read. A key's bucket (a multiply-shift of its top 32 bits, so that
 * the bucket count need not be a power of two) is one 32-byte record: up to seven 15-bit
 * fingerprints, each below a guard bit, in seven 16-bit lanes, and eight 16-bit owners (each
 * token's, then the owner of the first token after the bucket in the lanes left over), so the
 * owner is shifted out of a register once the key's fingerprint is compared with the bucket's.
 * A key whose fingerprint equals a token's, or whose bucket holds more than seven tokens (flagged
 * in the record, which then holds where the bucket's tokens start and how many), takes one rare
 * branch to the whole tokens. {@code lambda} is the mean number of tokens per bucket: the heap per token is
 * {@code 32 / lambda} bytes of records, the 8 of the whole tokens any ring keeps and, as built here,
 * 4 for each token's owner in an {@code int[]} (the rare branch's); docs/performance.md also gives
 * estimates for narrower owners, which this study does not build.
 *
 * <ul>
 *   <li>{@code hashOnly}: the floor;
 *   <li>{@code oneRead}: the hash, then one read of the key's record and the owner in its first
 *       lane: what reading the record costs, with nothing compared;
 *   <li>{@code compareWithoutTies}: the key compared with the fingerprints and the owner shifted
 *       out, with no tie test and no large buckets: not exact, the lower bound of this layout;
 *   <li>{@code exact}: the exact lookup, checked against {@link HashRing#ownerOf(byte[])} on every
 *       key before the run;
 *   <li>{@code ringmaster}: {@link HashRing#ownerOf(byte[])}.
 * </ul>
 * {@code offset} 6 keeps every record within one cache line (two share each); 0, as the study ran until
 * 2026-12-02, has every other record straddle two lines.
 *
 * <p>A study, kept so that the figures in docs/performance.md can be run again; not the ring's
 * layout, which must stay within 16 bytes a token. Keys are {@link LookupBenchmark}'s, as bytes.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar RecordLookupBenchmark -f 3}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "-XX:G1HeapRegionSize=1m") // the records are humongous: see offset
@State(Scope.Benchmark)
public class RecordLookupBenchmark {
  @Param({"1000"})
  public int members;

  @Param({"256"})
  public int virtualNodes;

  @Param({"3.0", "4.2"})
  public double lambda;

  /**
   * Longs before the first record. G1 places an array of at least half a region (as the records
   * are, 2.0-2.7 MB in regions of 1 MB, and {@link #setup} checks it) at the start of a region, so its elements
   * start 16 bytes (the array header) after a 64-byte line: with 6 longs (48 bytes) before them,
   * every record lies within one line (two to a line); with 0, every other record straddles two lines.
   */
  @Param({"6", "0"})
  public int offset;

  private static final long GUARDS = 0x8000_8000_8000_8000L;
  /** The guard bits of a record's second long: its top lane is the flag lane, not compared. */
  private static final long GUARDS_3 = 0x0000_8000_8000_8000L;
  private static final long ONES = 0x0001_0001_0001_0001L;
  private static final long ONES_3 = 0x0000_0001_0001_0001L;
  private static final int CAPACITY = 7;

  byte[][] keys;
  HashRing ring;
  Member[] memberArray;
  /** Every token, sorted as the ring sorts them, and its owner's index in {@link #memberArray}. */
  long[] tokens;
  int[] owners;
  /** Four longs a bucket: fingerprints 0-3, fingerprints 4-6 and the flag lane, owners 0-3, owners 4-7. */
  long[] records;
  long buckets;

  @Setup
  public void setup() {
    keys = LookupBenchmark.Keys.BYTES;
    ring = HashRing.builder().virtualNodes(virtualNodes).addAll(Fixtures.members(0, members)).build();
    memberArray = ring.members().toArray(new Member[0]); // sorted by id, as the ring breaks ties
    int count = memberArray.length * virtualNodes;
    long[][] pairs = new long[count][];
    for (int m = 0, t = 0; m < memberArray.length; m++) {
      for (int i = 0; i < virtualNodes; i++) {
        pairs[t++] = new long[] {HashRing.position(memberArray[m].id() + "#" + i), m};
      }
    }
    Arrays.sort(pairs, (x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
    tokens = new long[count];
    owners = new int[count];
    for (int i = 0; i < count; i++) {
      tokens[i] = pairs[i][0];
      owners[i] = (int) pairs[i][1];
    }
    buckets = (long) Math.ceil(count / lambda);
    records = new long[Math.toIntExact(offset + 4 * buckets)];
    if (offset != 0) {
      requireRegionStart(8L * records.length);
    }
    for (int b = 0, j = 0; b < buckets; b++) {
      int start = j;
      while (j < count && (int) (scaled(tokens[j]) >>> 32) == b) {
        j++;
      }
      fill(b, start, j - start, owners[j % count]);
    }
    int differ = 0;
    for (byte[] k : keys) {
      if (exact(k) != ring.ownerOf(k)) {
        differ++;
      }
    }
    if (differ > 0) {
      throw new IllegalStateException("the record lookup disagrees with HashRing on " + differ + " keys");
    }
  }

  private void fill(int b, int start, int size, int after) {
    int r = offset + 4 * b;
    if (size > CAPACITY) {
      // Where its tokens start, and how many: the exact lookup reads them. Its owner lanes hold a
      // real owner, so that the inexact benchmarks, which ignore the flag, read a member too.
      records[r] = start;
      records[r + 1] = Long.MIN_VALUE | size; // the flag
      records[r + 2] = owners[start] * ONES;
      records[r + 3] = owners[start] * ONES;
      return;
    }
    for (int lane = 0; lane < 8; lane++) {
      long fingerprint = lane < size ? 0x8000 | fingerprint(scaled(tokens[start + lane])) : 0xffff;
      long owner = lane < size ? owners[start + lane] : after;
      int shift = 16 * (lane & 3);
      if (lane < CAPACITY) {
        records[r + (lane >>> 2)] |= fingerprint << shift;
      }
      records[r + 2 + (lane >>> 2)] |= owner << shift;
    }
  }

  /** The position's top 32 bits (unsigned) times the bucket count: the bucket above bit 32. */
  private long scaled(long p) {
    return ((p ^ Long.MIN_VALUE) >>> 32) * buckets;
  }

  /** The 15 bits below the bucket. */
  private static long fingerprint(long scaled) {
    return (scaled >>> 17) & 0x7fff;
  }

  /**
   * Fails unless the JVM runs G1 and an array of {@code bytes} is humongous there (at least half a
   * region), so that it starts at a region's start, as {@link #offset} assumes.
   */
  private static void requireRegionStart(long bytes) {
    var diagnostics = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
    boolean g1 = Boolean.parseBoolean(diagnostics.getVMOption("UseG1GC").getValue());
    long region = Long.parseLong(diagnostics.getVMOption("G1HeapRegionSize").getValue());
    if (!g1 || 2 * bytes < region) {
      throw new IllegalStateException("the records (" + bytes + " bytes) need G1 and at least half a region ("
          + region + " bytes) to start on a region, and so on a cache line");
    }
    // The 16-byte array header the offset counts on: 24 bytes without compressed class pointers.
    if (!Boolean.parseBoolean(diagnostics.getVMOption("UseCompressedClassPointers").getValue())) {
      throw new IllegalStateException("the offset assumes 16-byte array headers (compressed class pointers)");
    }
  }

  Member exact(byte[] key) {
    long p = HashRing.position(key);
    long x = scaled(p);
    int r = offset + 4 * (int) (x >>> 32);
    long k = fingerprint(x);
    long[] e = records;
    long low = e[r];
    long high = e[r + 1];
    long owners03 = e[r + 2];
    long owners47 = e[r + 3];
    long keys03 = k * ONES;
    long keys46 = k * ONES_3;
    int below = Long.bitCount(~(low - keys03) & GUARDS) + Long.bitCount(~(high - keys46) & GUARDS_3);
    int atMost = Long.bitCount(~(low - keys03 - ONES) & GUARDS) + Long.bitCount(~(high - keys46 - ONES_3) & GUARDS_3);
    if ((below != atMost) | high < 0) {
      return memberArray[high < 0 ? scan(p, (int) low, (int) high) : search(p)];
    }
    long pair = owners03 ^ ((owners03 ^ owners47) & -(below >>> 2));
    return memberArray[(int) (pair >>> ((below & 3) << 4)) & 0xffff];
  }

  /** A large bucket: its tokens from {@code start}, compared whole. */
  private int scan(long p, int start, int size) {
    int i = start;
    int end = start + size;
    while (i < end && tokens[i] < p) {
      i++;
    }
    return owners[i == tokens.length ? 0 : i];
  }

  /** A fingerprint tie (about one key in 10,000): a binary search of the whole tokens. */
  private int search(long p) {
    int i = Arrays.binarySearch(tokens, p);
    if (i < 0) {
      i = -i - 1;
    } else {
      while (i > 0 && tokens[i - 1] == p) {
        i--;
      }
    }
    return owners[i == tokens.length ? 0 : i];
  }

  @Benchmark
  public void hashOnly(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(HashRing.position(keys[c.next()]));
  }

  @Benchmark
  public void oneRead(LookupBenchmark.Cursor c, Blackhole bh) {
    long x = scaled(HashRing.position(keys[c.next()]));
    bh.consume(memberArray[(int) records[offset + 4 * (int) (x >>> 32) + 2] & 0xffff]);
  }

  @Benchmark
  public void compareWithoutTies(LookupBenchmark.Cursor c, Blackhole bh) {
    long x = scaled(HashRing.position(keys[c.next()]));
    int r = offset + 4 * (int) (x >>> 32);
    long k = fingerprint(x);
    long[] e = records;
    int below = Long.bitCount(~(e[r] - k * ONES) & GUARDS) + Long.bitCount(~(e[r + 1] - k * ONES_3) & GUARDS_3);
    long owners03 = e[r + 2];
    long pair = owners03 ^ ((owners03 ^ e[r + 3]) & -(below >>> 2));
    bh.consume(memberArray[(int) (pair >>> ((below & 3) << 4)) & 0xffff]);
  }

  @Benchmark
  public void exact(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(exact(keys[c.next()]));
  }

  @Benchmark
  public void ringmaster(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(ring.ownerOf(keys[c.next()]));
  }
}
