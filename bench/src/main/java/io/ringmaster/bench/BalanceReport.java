package io.ringmaster.bench;

import com.google.common.hash.Hashing;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Not a JMH benchmark: prints Markdown tables of what the ring's layout gives, for
 * {@code N} in {10, 100, 1000} and {@code V} in {64, 100, 128, 256, 512, 1024, 2048}, over 5
 * member-id sets ({@code node-<set>-<k>}):
 * <ul>
 *   <li>balance: {@code max/mean} and {@code min/mean} of {@link HashRing#share}, averaged and
 *       worst over the sets, and the wall-clock build time (mean of the 5 builds, after a warm-up;
 *       {@link BuildBenchmark} is the careful measurement);
 *   <li>keys moved when {@code node-<set>-new} joins and when {@code node-<set>-0} leaves, counted
 *       over the lookup benchmarks' 2^20 keys, against the optimum {@code 1/(N+1)} and {@code 1/N}; and how
 *       many moved keys went anywhere but to the joining member (or came from anywhere but the
 *       leaving one), which consistent hashing says is 0;
 *   <li>retained heap per token, ours and {@link TreeMapRing}'s: used heap after
 *       {@code System.gc()} ({@link MemoryMXBean}) with a batch of rings alive minus without,
 *       divided by the tokens (the {@link Member} objects are shared, so not counted).
 * </ul>
 * It also checks that {@link HashRing#position} is Guava's {@code murmur3_128().asLong()}.
 *
 * <p>Run (the serial collector makes "used heap after a full GC" exact):
 * {@code java -XX:+UseSerialGC -Xmx4g -cp bench/target/benchmarks.jar io.ringmaster.bench.BalanceReport}
 */
public final class BalanceReport {
  static final int[] MEMBERS = {10, 100, 1000};
  static final int[] VIRTUAL_NODES = {64, 100, 128, 256, 512, 1024, 2048};
  static final int SETS = 5;
  /** The lookup benchmarks' keys: 2^20 draws, about 619,000 distinct. */
  static final int KEYS = LookupBenchmark.KEY_COUNT;
  /** Total tokens kept alive per heap measurement. */
  static final int HEAP_TOKENS = 2_000_000;

  private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

  private BalanceReport() {}

  public static void main(String[] args) {
    System.out.println("# Ringmaster balance report");
    System.out.println();
    System.out.printf("java %s (%s), %d processors, %s%n%n", System.getProperty("java.version"),
        System.getProperty("java.vm.name"), Runtime.getRuntime().availableProcessors(),
        ManagementFactory.getRuntimeMXBean().getInputArguments());
    int failures = checkHash();
    warmUp();
    failures += balanceAndMoves();
    heap();
    if (failures > 0) {
      System.out.println("FAILED: " + failures + " hash mismatches or misplaced keys (above)");
      System.exit(1);
    }
  }

  /** HashRing.position must be the first 64 bits of Guava's MurmurHash3 x64-128, seed 0: the mismatches. */
  static int checkHash() {
    String[] keys = Fixtures.stringKeys(10_000, 7);
    String[] odd = {"", "a", "ü", "日本語のキー", "emoji \uD83D\uDE00", "lone \uD800 surrogate",
        "exactly-16-chars", "a key of more than thirty-two characters, mixed: é"};
    int bad = 0;
    for (String k : concat(keys, odd)) {
      long guava = Hashing.murmur3_128().hashString(k, StandardCharsets.UTF_8).asLong();
      if (HashRing.position(k) != guava || HashRing.position(k.getBytes(StandardCharsets.UTF_8)) != guava) {
        bad++;
        System.out.println("MISMATCH: position(\"" + k + "\")");
      }
    }
    System.out.printf("Hash check: HashRing.position == Guava murmur3_128().asLong() on %d keys: %s%n%n",
        keys.length + odd.length, bad == 0 ? "OK" : bad + " mismatches");
    return bad;
  }

  private static String[] concat(String[] a, String[] b) {
    String[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static void warmUp() {
    List<Member> list = Fixtures.members(9, 1000);
    for (int i = 0; i < 10; i++) {
      HashRing ring = HashRing.builder().virtualNodes(256).addAll(list).build();
      ring.with(Member.of("warm")).without(list.get(0).id());
      new TreeMapRing(list.subList(0, 100), 256);
    }
  }

  /** Prints the balance and moves tables; returns the misplaced keys (a key moved between two members that stayed). */
  static int balanceAndMoves() {
    int misplacedInAll = 0;
    String[] keys = LookupBenchmark.Keys.STRINGS; // the same keys the lookups are timed on
    StringBuilder balance = new StringBuilder();
    StringBuilder moves = new StringBuilder();
    balance.append("## Balance: share of the most and least loaded member, relative to the mean 1/N\n\n")
        .append("Over ").append(SETS).append(" member-id sets; avg = mean over the sets, worst = the most extreme set.\n\n")
        .append("| N | V | tokens | max/mean avg | max/mean worst | min/mean avg | min/mean worst | build ms (mean) |\n")
        .append("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    moves.append("## Keys moved by one join and one leave (").append(KEYS).append(" keys)\n\n")
        .append("Fractions of all keys, mean over the sets (worst set in brackets); ratio = measured / optimum. ")
        .append("\"Misplaced\" counts keys that moved between two members that both stayed (must be 0).\n\n")
        .append("| N | V | join: moved | optimum 1/(N+1) | ratio | leave: moved | optimum 1/N | ratio | misplaced |\n")
        .append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int n : MEMBERS) {
      for (int v : VIRTUAL_NODES) {
        double maxSum = 0;
        double maxWorst = 0;
        double minSum = 0;
        double minWorst = Double.MAX_VALUE;
        long buildNanos = 0;
        double joinSum = 0;
        double joinWorst = 0;
        double leaveSum = 0;
        double leaveWorst = 0;
        long misplaced = 0;
        int tokens = 0;
        for (int set = 0; set < SETS; set++) {
          List<Member> list = Fixtures.members(set, n);
          long t0 = System.nanoTime();
          HashRing ring = HashRing.builder().virtualNodes(v).addAll(list).build();
          buildNanos += System.nanoTime() - t0;
          tokens = ring.tokenCount();
          double max = 0;
          double min = Double.MAX_VALUE;
          double total = 0;
          for (Member m : list) {
            double s = ring.share(m.id());
            max = Math.max(max, s);
            min = Math.min(min, s);
            total += s;
          }
          if (Math.abs(total - 1.0) > 1e-9) {
            throw new IllegalStateException("shares sum to " + total + " at N=" + n + ", V=" + v);
          }
          maxSum += max * n;
          maxWorst = Math.max(maxWorst, max * n);
          minSum += min * n;
          minWorst = Math.min(minWorst, min * n);

          Member joining = Member.of("node-" + set + "-new");
          Member leaving = list.get(0);
          HashRing plus = ring.with(joining);
          HashRing minus = ring.without(leaving.id());
          int joined = 0;
          int left = 0;
          for (String key : keys) {
            Member owner = ring.ownerOf(key);
            Member ownerPlus = plus.ownerOf(key);
            Member ownerMinus = minus.ownerOf(key);
            if (!ownerPlus.equals(owner)) {
              joined++;
              if (!ownerPlus.equals(joining)) {
                misplaced++;
              }
            }
            if (!ownerMinus.equals(owner)) {
              left++;
              if (!owner.equals(leaving)) {
                misplaced++;
              }
            }
          }
          double j = joined / (double) KEYS;
          double l = left / (double) KEYS;
          joinSum += j;
          joinWorst = Math.max(joinWorst, j);
          leaveSum += l;
          leaveWorst = Math.max(leaveWorst, l);
        }
        balance.append(String.format(Locale.ROOT, "| %d | %d | %,d | %.3f | %.3f | %.3f | %.3f | %.2f |%n",
            n, v, tokens, maxSum / SETS, maxWorst, minSum / SETS, minWorst, buildNanos / 1e6 / SETS));
        double joinOpt = 1.0 / (n + 1);
        double leaveOpt = 1.0 / n;
        moves.append(String.format(Locale.ROOT,
            "| %d | %d | %.5f (%.5f) | %.5f | %.2f (%.2f) | %.5f (%.5f) | %.5f | %.2f (%.2f) | %d |%n",
            n, v, joinSum / SETS, joinWorst, joinOpt, joinSum / SETS / joinOpt, joinWorst / joinOpt,
            leaveSum / SETS, leaveWorst, leaveOpt, leaveSum / SETS / leaveOpt, leaveWorst / leaveOpt,
            misplaced));
        misplacedInAll += (int) Math.min(Integer.MAX_VALUE, misplaced);
      }
    }
    System.out.println(balance);
    System.out.println(moves);
    return misplacedInAll;
  }

  static void heap() {
    StringBuilder out = new StringBuilder();
    out.append("## Retained heap per token (virtual node)\n\n")
        .append("Used heap after System.gc() with `rings` rings alive, minus before, / (rings * tokens). ")
        .append("Layout estimate for ours: 4 (int high half) + 4 (int low half) + 4 (lookup entry:"
            + " fingerprint and owner) + 4 * buckets / tokens (bucket index).\n\n")
        .append("| N | V | tokens/ring | rings | ringmaster B/token | layout estimate | TreeMap B/token | TreeMap / ours |\n")
        .append("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int[][] configs = {{100, 256}, {100, 1024}, {1000, 256}, {1000, 1024}};
    for (int[] c : configs) {
      int n = c[0];
      int v = c[1];
      List<Member> list = Fixtures.members(0, n);
      int tokens = n * v;
      int rings = Math.max(2, HEAP_TOKENS / tokens);
      double ours = bytesPerToken(
          () -> HashRing.builder().virtualNodes(v).addAll(list).build(), rings, tokens);
      double treeMap = bytesPerToken(() -> new TreeMapRing(list, v), rings, tokens);
      int buckets = Math.max(2, Integer.highestOneBit(tokens) >> 1);
      double estimate = 12 + 4.0 * buckets / tokens;
      out.append(String.format(Locale.ROOT, "| %d | %d | %,d | %d | %.2f | %.2f | %.2f | %.2f |%n",
          n, v, tokens, rings, ours, estimate, treeMap, treeMap / ours));
    }
    System.out.println(out);
  }

  static double bytesPerToken(Supplier<Object> build, int rings, int tokensPerRing) {
    Object[] keep = new Object[rings];
    long before = usedAfterGc();
    for (int i = 0; i < rings; i++) {
      keep[i] = build.get();
    }
    long after = usedAfterGc();
    Reference.reachabilityFence(keep);
    return (after - before) / (double) rings / tokensPerRing;
  }

  private static long usedAfterGc() {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      used = Math.min(used, MEMORY.getHeapMemoryUsage().getUsed());
    }
    return used;
  }
}
