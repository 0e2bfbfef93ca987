package io.ringmaster.bench;

import io.ringmaster.ring.HashRing;
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
 * The ring's part of a lookup without the hash: {@link HashRing#ownerOfPosition(long)} over the
 * positions of the same 2<sup>20</sup> keys as {@link LookupBenchmark}, read in order, next to
 * {@code positionRead}, which only reads the position (the loop and the key stream). The
 * difference between {@code LookupBenchmark.ownerOf} and the hash-only floor, set against the
 * difference between these two, shows how much of a lookup's cost is the ring's own work and how
 * much comes from chaining it after the hash.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar PositionBenchmark -p members=10,1000}
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PositionBenchmark {
  @Param({"10", "100", "1000"})
  public int members;

  @Param({"256"})
  public int virtualNodes;

  long[] positions;
  HashRing ring;

  @Setup
  public void setup() {
    String[] keys = LookupBenchmark.Keys.STRINGS;
    positions = new long[keys.length];
    for (int i = 0; i < keys.length; i++) {
      positions[i] = HashRing.position(keys[i]);
    }
    ring = HashRing.builder().virtualNodes(virtualNodes).addAll(Fixtures.members(0, members)).build();
  }

  @Benchmark
  public void ownerOfPosition(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(ring.ownerOfPosition(positions[c.next()]));
  }

  @Benchmark
  public void positionRead(LookupBenchmark.Cursor c, Blackhole bh) {
    bh.consume(positions[c.next()]);
  }
}
