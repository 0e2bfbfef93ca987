package io.ringmaster.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The benchmarks' own checks, run by the build so that a change to the ring that breaks them
 * fails here rather than on the next benchmark run: the hash against Guava's, the textbook rivals
 * against the ring, and the setups at the smallest sizes they take.
 */
class BenchChecksTest {
  private static final Blackhole BH = new Blackhole(
      "Today's password is swordfish. I understand instantiating Blackholes directly is dangerous.");

  @Test
  void thePositions_areGuavasMurmur3() {
    assertEquals(0, BalanceReport.checkHash());
  }

  @Test
  void everyRival_isBuilt_andTheTextbookRings_agreeWithOurs() {
    HashRing ring = LookupBenchmark.ring(10, 100);
    for (String impl : List.of(Locator.RINGMASTER, Locator.TREEMAP, Locator.SORTED, Locator.KETAMA, Locator.JUMP,
        Locator.HASHONLY)) {
      Locator locator = LookupBenchmark.createChecked(impl, 10, 100, ring); // throws where a rival disagrees
      locator.owner("user:123456", BH);
      locator.owner("user:123456".getBytes(StandardCharsets.UTF_8), BH);
    }
  }

  @Test
  void theSetups_takeTheSmallestRings() {
    LookupFloorBenchmark floor = new LookupFloorBenchmark();
    floor.members = 1;
    floor.virtualNodes = 256;
    floor.setup();

    DiffBenchmark diff = new DiffBenchmark();
    diff.members = 10;
    diff.virtualNodes = 100;
    diff.member = "existing";
    diff.replicas = 3;
    diff.setup(); // searches for a member that loses ranges at 1 and 3 replicas
    diff.check();
    assertTrue(diff.diff().lost().size() > 0, "the member chosen loses ranges");
  }
}
