package io.ringmaster.bench;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.util.List;
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
 * Key lookup: our ring against its rivals, in one run, as {@code @Param impl}:
 * <ul>
 *   <li>{@code ringmaster}: {@link HashRing#ownerOf(String)} / {@link HashRing#ownerOf(byte[])} /
 *       {@link HashRing#owners(String, int)};
 *   <li>{@code treemap}: the textbook {@code TreeMap<Long, Member>} ring ({@link TreeMapRing}) with
 *       the same token and key hash, so it owns every key as ours does;
 *   <li>{@code sorted}: the same tokens in a sorted {@code long[]} with a binary search
 *       ({@link Locator.SortedArray}): a ring without our bucket index and fingerprints;
 *   <li>{@code ketama}: spymemcached's {@code KetamaNodeLocator.getPrimary} (MD5), {@code
 *       virtualNodes} points per node, over fake nodes; its byte[] lookup decodes the key first;
 *   <li>{@code jump}: Guava's {@code Hashing.consistentHash(HashRing.position(key), members)};
 *   <li>{@code hashonly}: {@code HashRing.position(key)} alone, the floor every ring pays.
 * </ul>
 * {@code jump} and {@code hashonly} ignore {@code virtualNodes}: the matrix keeps them at every
 * value as a check that the number is stable. {@link #owners3} runs only {@code ringmaster} and
 * {@code treemap}, the two with a replica walk.
 *
 * <p>Keys are 2<sup>20</sup> strings {@code user:NNNNNN} (fixed seed) and their UTF-8 bytes,
 * taken in order with a masked index, so choosing the key costs one increment.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar 'bench.LookupBenchmark' -prof gc} (JMH takes
 * a regular expression, and {@code LookupBenchmark} alone also matches
 * {@link RecordLookupBenchmark}); the matrix measured in {@code docs/performance.md}:
 * {@code java -jar bench/target/benchmarks.jar 'bench.LookupBenchmark' -f 1 -wi 2 -w 1s -i 3 -r 1s -prof gc}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LookupBenchmark {
  static final int KEY_COUNT = 1 << 20;
  static final int MASK = KEY_COUNT - 1;

  /**
   * The keys, one copy per JVM, collected into the old generation at once, before any fork builds
   * what is its own (a ring, a rival, garbage), so that they lie in memory the same way in every
   * fork of every benchmark that uses them: how they lie moves the cost of hashing them (see
   * "The inflated floor on the Intel Xeon VM" in docs/performance.md).
   */
  static final class Keys {
    static final String[] STRINGS = Fixtures.stringKeys(KEY_COUNT, Fixtures.KEY_SEED);
    static final byte[][] BYTES = Fixtures.utf8(STRINGS);

    static {
      System.gc();
    }
  }

  /** Primary-owner lookups: every rival. */
  @State(Scope.Benchmark)
  public static class Primary {
    @Param({"10", "100", "1000"})
    public int members;

    @Param({"100", "256", "1024"})
    public int virtualNodes;

    @Param({"ringmaster", "treemap", "sorted", "ketama", "jump", "hashonly"})
    public String impl;

    String[] strings;
    byte[][] bytes;
    HashRing ring;
    Locator locator;

    @Setup
    public void setup() {
      strings = Keys.STRINGS;
      bytes = Keys.BYTES;
      ring = ring(members, virtualNodes);
      locator = createChecked(impl, members, virtualNodes, ring);
    }
  }

  /** Replica lookups ({@code owners(key, 3)}): the rivals that have a replica walk. */
  @State(Scope.Benchmark)
  public static class Replicas {
    @Param({"10", "100", "1000"})
    public int members;

    @Param({"100", "256", "1024"})
    public int virtualNodes;

    @Param({"ringmaster", "treemap"})
    public String impl;

    String[] strings;
    HashRing ring;
    Locator locator;

    @Setup
    public void setup() {
      strings = Keys.STRINGS;
      ring = ring(members, virtualNodes);
      locator = createChecked(impl, members, virtualNodes, ring);
    }
  }

  /** Each thread's position in the key array. */
  @State(Scope.Thread)
  public static class Cursor {
    int index;

    int next() {
      return index++ & MASK;
    }
  }

  /**
   * Builds the rival; for {@code treemap} and {@code sorted}, first checks on 100,000 keys that it
   * owns every key as {@link HashRing} does ({@code treemap}: owners(key, 3) included), so that
   * they compute the same thing.
   *
   * <p>Every fork, whatever its rival, first builds the same {@link HashRing} (the {@code
   * ringmaster} rival is that ring), so that the forks of the ring, of the floor ({@code
   * hashonly}) and of {@code jump} have the same heap history before the measurement, and the
   * keys lie in it the same way ({@code treemap} and {@code sorted} also run the check below and
   * build their own structures, and {@code ketama} its own, so theirs still differ). They did not
   * when only some rivals built a ring: the collections that building one causes move the keys,
   * and where the keys lie changed what hashing them costs. On a 2026-12-02 Intel Xeon VM the
   * hash alone of the byte[] keys took 20.7 ns in the fork that built nothing and 10.9 ns once
   * every fork built the ring, while the ring's lookup took 27.5 and 28.0 ns: the floor was
   * inflated, and the ratio flattered the ring (1.33 times instead of 2.58;
   * {@code docs/performance.md}, runs 9 and 10).
   * The ring is kept in the state, so that it stays reachable in every fork alike.
   */
  static Locator createChecked(String impl, int members, int virtualNodes, HashRing ring) {
    List<Member> list = Fixtures.members(0, members);
    Locator locator = Locator.RINGMASTER.equals(impl)
        ? new Locator.Ringmaster(ring)
        : Locator.create(impl, list, virtualNodes);
    if (!(locator instanceof Locator.SortedArray || locator instanceof Locator.TreeMapLocator)) {
      return locator;
    }
    int differ = 0;
    for (int i = 0; i < 100_000; i++) {
      String key = Keys.STRINGS[i];
      boolean same = locator instanceof Locator.TreeMapLocator tm
          ? ring.ownerOf(key).equals(tm.ring.ownerOf(key)) && ring.owners(key, 3).equals(tm.ring.owners(key, 3))
          : ring.ownerOf(key).equals(((Locator.SortedArray) locator).ownerOf(HashRing.position(key)));
      differ += same ? 0 : 1;
    }
    if (differ > 0) {
      throw new IllegalStateException(impl + " and ringmaster disagree on " + differ + " keys");
    }
    return locator;
  }

  /** The ring every fork builds first (see {@link #createChecked}). */
  static HashRing ring(int members, int virtualNodes) {
    return HashRing.builder().virtualNodes(virtualNodes).addAll(Fixtures.members(0, members)).build();
  }

  @Benchmark
  public void ownerOf(Primary s, Cursor c, Blackhole bh) {
    s.locator.owner(s.strings[c.next()], bh);
  }

  @Benchmark
  public void ownerOfBytes(Primary s, Cursor c, Blackhole bh) {
    s.locator.owner(s.bytes[c.next()], bh);
  }

  @Benchmark
  public void owners3(Replicas s, Cursor c, Blackhole bh) {
    s.locator.owners(s.strings[c.next()], 3, bh);
  }
}
