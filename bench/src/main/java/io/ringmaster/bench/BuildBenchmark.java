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

/**
 * Building rings: from scratch ({@code HashRing.builder().virtualNodes(V).addAll(members).build()}),
 * plus one member ({@link HashRing#with}) and minus one ({@link HashRing#without}), against the
 * textbook {@link TreeMapRing} ({@code impl=treemap}: put every token; plus/minus one copies the
 * map and puts/removes {@code V} tokens, since both are immutable snapshots).
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar BuildBenchmark -prof gc}; the run measured
 * in {@code docs/performance.md}:
 * {@code java -jar bench/target/benchmarks.jar BuildBenchmark -f 1 -wi 2 -w 1s -i 3 -r 1s -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class BuildBenchmark {
  @Param({"10", "100", "1000"})
  public int members;

  @Param({"100", "256", "1024"})
  public int virtualNodes;

  @Param({"ringmaster", "treemap"})
  public String impl;

  private boolean treemap;
  private List<Member> list;
  private Member joining;
  private String leaving;
  private HashRing ring;
  private TreeMapRing treeMapRing;

  @Setup
  public void setup() {
    treemap = switch (impl) {
      case Locator.RINGMASTER -> false;
      case Locator.TREEMAP -> true;
      default -> throw new IllegalArgumentException("unknown impl: " + impl);
    };
    list = Fixtures.members(0, members);
    joining = Member.of("node-0-new");
    leaving = list.get(members / 2).id();
    // Only the ring under test: the other would only add to the collector's work in this fork.
    if (treemap) {
      treeMapRing = new TreeMapRing(list, virtualNodes);
    } else {
      ring = HashRing.builder().virtualNodes(virtualNodes).addAll(list).build();
    }
  }

  @Benchmark
  public Object build() {
    return treemap
        ? new TreeMapRing(list, virtualNodes)
        : HashRing.builder().virtualNodes(virtualNodes).addAll(list).build();
  }

  @Benchmark
  public Object plusOne() {
    return treemap ? treeMapRing.with(joining) : ring.with(joining);
  }

  @Benchmark
  public Object minusOne() {
    return treemap ? treeMapRing.without(leaving) : ring.without(leaving);
  }
}
