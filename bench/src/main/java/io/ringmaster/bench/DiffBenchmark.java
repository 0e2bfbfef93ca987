package io.ringmaster.bench;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.List;
import java.util.Map;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link RingDiff#compute} after one member joins: {@code before} has {@code members} members of
 * {@code virtualNodes} tokens, {@code after = before.with(node-0-new)}. {@code member=joining} diffs
 * the new member (it only gains); {@code member=existing} diffs the first of
 * {@code node-0-0, node-0-1, ...} that loses ranges both at 1 and at 3 replicas (the same member
 * for both replica counts): {@code node-0-8} at V = 256, {@code node-0-3} at V = 1024, named here
 * rather than searched for, so that the setup computes no diff and a cold run ({@code -bm ss -wi 0})
 * times a JVM's first call. The tear-down checks that choice and prints the sizes of the diff.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar DiffBenchmark -prof gc}; the run measured in
 * {@code docs/performance.md}:
 * {@code java -jar bench/target/benchmarks.jar DiffBenchmark -f 1 -wi 2 -w 1s -i 3 -r 1s -prof gc}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class DiffBenchmark {
  @Param({"1000"})
  public int members;

  @Param({"256", "1024"})
  public int virtualNodes;

  @Param({"joining", "existing"})
  public String member;

  @Param({"1", "3"})
  public int replicas;

  /** The first member that loses ranges at 1 and at 3 replicas, by "members/virtualNodes". */
  private static final Map<String, String> FIRST_LOSING = Map.of("1000/256", "node-0-8", "1000/1024", "node-0-3");

  private HashRing before;
  private HashRing after;
  private String memberId;

  @Setup
  public void setup() {
    List<Member> list = Fixtures.members(0, members);
    before = HashRing.builder().virtualNodes(virtualNodes).addAll(list).build();
    Member joining = Member.of("node-0-new");
    after = before.with(joining);
    memberId = switch (member) {
      case "joining" -> joining.id();
      case "existing" -> replicas == 1 || replicas == 3 ? FIRST_LOSING.get(members + "/" + virtualNodes) : null;
      default -> throw new IllegalArgumentException("unknown member: " + member);
    };
    if (memberId == null) { // other sizes: searched for, at the cost of diffs computed before the measurement
      memberId = firstLosing();
      System.out.printf("%n[diff] members %d, virtualNodes %d: %s searched for"
          + " (a cold run is not a JVM's first diff)%n", members, virtualNodes, memberId);
    }
  }

  /** After the measurement: checks the chosen member, and prints the diff's sizes. */
  @TearDown
  public void check() {
    if (member.equals("existing") && (replicas == 1 || replicas == 3)
        && FIRST_LOSING.containsKey(members + "/" + virtualNodes)) {
      String first = firstLosing();
      if (!memberId.equals(first)) {
        throw new IllegalStateException("FIRST_LOSING names " + memberId + ", but the first member that loses"
            + " ranges at 1 and 3 replicas is " + first);
      }
    }
    RingDiff d = RingDiff.compute(before, after, memberId, replicas);
    System.out.printf("%n[diff] member %s, replicas %d: %d gained, %d lost, %d role changes%n",
        memberId, replicas, d.gained().size(), d.lost().size(), d.roleChanges().size());
  }

  /**
   * The first member that loses ranges at 1 and at 3 replicas (so that both replica counts time
   * the same member), and at {@link #replicas} if another is set.
   */
  private String firstLosing() {
    for (Member m : Fixtures.members(0, members)) {
      if (!RingDiff.compute(before, after, m.id(), 1).lost().isEmpty()
          && !RingDiff.compute(before, after, m.id(), 3).lost().isEmpty()
          && !RingDiff.compute(before, after, m.id(), replicas).lost().isEmpty()) {
        return m.id();
      }
    }
    throw new IllegalStateException("no member loses ranges at 1, 3 and " + replicas + " replicas");
  }

  @Benchmark
  public RingDiff diff() {
    return RingDiff.compute(before, after, memberId, replicas);
  }
}
