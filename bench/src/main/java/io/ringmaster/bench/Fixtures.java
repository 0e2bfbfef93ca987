package io.ringmaster.bench;

import io.ringmaster.ring.Member;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Members and keys shared by the benchmarks and {@link BalanceReport}; all deterministic. */
final class Fixtures {
  /** Seed of every key set, so that every fork and every report sees the same keys. */
  static final long KEY_SEED = 0x5eed_1234L;

  private Fixtures() {}

  /** {@code n} members of weight 1 and zone "", ids {@code node-<set>-<k>}. */
  static List<Member> members(int set, int n) {
    List<Member> out = new ArrayList<>(n);
    for (int k = 0; k < n; k++) {
      out.add(Member.of("node-" + set + "-" + k));
    }
    return out;
  }

  /** {@code count} keys like {@code user:123456} (six random digits), from a fixed seed. */
  static String[] stringKeys(int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    String[] keys = new String[count];
    for (int i = 0; i < count; i++) {
      keys[i] = "user:" + (100_000 + random.nextInt(900_000));
    }
    return keys;
  }

  /** The UTF-8 bytes of each key. */
  static byte[][] utf8(String[] keys) {
    byte[][] out = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      out[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
    return out;
  }
}
