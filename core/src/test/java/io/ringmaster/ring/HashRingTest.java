package io.ringmaster.ring;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class HashRingTest {

  static List<Member> randomMembers(SplittableRandom random, int n, int zones, boolean weighted) {
    List<Member> members = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      double weight = weighted ? random.nextInt(0, 9) / 4.0 : 1.0; // 0, 0.25, ... 2.0
      String zone = zones == 0 ? "" : "zone-" + random.nextInt(zones);
      members.add(new Member("m-" + k + "-" + Integer.toHexString(random.nextInt()), weight, zone));
    }
    return members;
  }

  /** The rings hold the same tokens, each with the same owner: what an incremental ring must match. */
  static void assertSameTokens(HashRing expected, HashRing actual, String what) {
    assertArrayEquals(expected.tokenArray(), actual.tokenArray(), what);
    for (int i = 0; i < expected.tokenCount(); i++) {
      assertEquals(expected.ownerIndex(i), actual.ownerIndex(i), what + " token " + i);
    }
  }

  static HashRing ring(int virtualNodes, List<Member> members) {
    return HashRing.builder().virtualNodes(virtualNodes).addAll(members).build();
  }

  @Test
  void lookups_randomRings_matchTheLiteralSpec() {
    SplittableRandom random = new SplittableRandom(1);
    for (int trial = 0; trial < 40; trial++) {
      List<Member> members = randomMembers(random, random.nextInt(1, 12), random.nextInt(0, 4), true);
      members.add(Member.of("always-" + trial)); // at least one member with tokens
      int v = random.nextInt(1, 40);
      HashRing ring = ring(v, members);
      ReferenceRing reference = new ReferenceRing(v, members);
      assertEquals(reference.positions().size(), ring.tokenCount());
      for (int k = 0; k < 300; k++) {
        String key = "key-" + random.nextLong();
        assertEquals(reference.owners(key, 1).get(0), ring.ownerOf(key), key);
        assertEquals(reference.owners(key, 1).get(0), ring.ownerOf(key.getBytes(StandardCharsets.UTF_8)), key);
        int n = random.nextInt(1, 6);
        assertEquals(reference.owners(key, n), ring.owners(key, n), () -> key + " n=" + n);
        assertEquals(reference.owners(key, n), ring.owners(key.getBytes(StandardCharsets.UTF_8), n),
            () -> key + " n=" + n + " as bytes");
      }
      for (long p : reference.positions()) { // the edges: on a token and just past it
        assertEquals(reference.ownersOfPosition(p, 3), ring.ownersOfPosition(p, 3));
        assertEquals(reference.ownersOfPosition(p + 1, 3), ring.ownersOfPosition(p + 1, 3));
      }
      assertEquals(reference.ownersOfPosition(Long.MIN_VALUE, 2), ring.ownersOfPosition(Long.MIN_VALUE, 2));
      assertEquals(reference.ownersOfPosition(Long.MAX_VALUE, 2), ring.ownersOfPosition(Long.MAX_VALUE, 2));
    }
  }

  /**
   * A walk for more than {@value HashRing#SCANNING_WALK_MAX} owners marks those taken instead of
   * comparing with them: it finds the literal spec's owners, in order, as the scanning walk does for
   * every count, zones and weight-0 members included; its marks are left clear for the next walk.
   */
  @Test
  void walksForManyOwners_findTheLiteralSpecsOwners_asTheScanningWalkDoes() {
    SplittableRandom random = new SplittableRandom(41);
    for (int trial = 0; trial < 30; trial++) {
      List<Member> members = randomMembers(random, random.nextInt(15, 45), random.nextInt(0, 8), trial % 2 == 0);
      members.add(Member.of("always-" + trial));
      int v = random.nextInt(1, 12);
      HashRing ring = ring(v, members);
      ReferenceRing reference = new ReferenceRing(v, members);
      for (int k = 0; k < 100; k++) {
        long p = random.nextLong();
        int n = random.nextInt(HashRing.SCANNING_WALK_MAX + 1, members.size() + 3);
        assertEquals(reference.ownersOfPosition(p, n), ring.ownersOfPosition(p, n), () -> p + " n=" + n);
        int start = random.nextInt(ring.tokenCount());
        int want = random.nextInt(1, members.size() + 3);
        int[] scanned = new int[want];
        int[] marked = new int[want];
        int count = ring.walkScanning(start, want, scanned);
        assertEquals(count, ring.walkMarking(start, want, marked), () -> "from token " + start + ", want " + want);
        assertArrayEquals(scanned, marked, () -> "from token " + start + ", want " + want);
      }
      // A walk that throws (an out with no room for every pick) leaves no mark for the next one.
      int start = random.nextInt(ring.tokenCount());
      int want = ring.membersWithTokens();
      assertThrows(ArrayIndexOutOfBoundsException.class, () -> ring.walkMarking(start, want, new int[want - 1]));
      int[] scanned = new int[want];
      int[] marked = new int[want];
      assertEquals(ring.walkScanning(start, want, scanned), ring.walkMarking(start, want, marked));
      assertArrayEquals(scanned, marked, "after a walk that threw");
    }
  }

  @Test
  void isOwnerOfPosition_randomRings_answersAsTheLiteralSpecsOwners() {
    SplittableRandom random = new SplittableRandom(21);
    for (int trial = 0; trial < 40; trial++) {
      List<Member> members = randomMembers(random, random.nextInt(1, 12), random.nextInt(0, 4), true);
      members.add(Member.of("always-" + trial));
      int v = random.nextInt(1, 40);
      HashRing ring = ring(v, members);
      ReferenceRing reference = new ReferenceRing(v, members);
      List<Long> positions = new ArrayList<>(reference.positions());
      for (int k = 0; k < 200; k++) {
        positions.add(random.nextLong());
      }
      positions.addAll(List.of(Long.MIN_VALUE, Long.MAX_VALUE));
      for (long p : positions) {
        int n = random.nextInt(1, 7);
        List<Member> owners = reference.ownersOfPosition(p, n);
        for (Member m : members) {
          assertEquals(owners.contains(m), ring.isOwnerOfPosition(p, n, m), () -> m + " at " + p + " n=" + n);
        }
        Member first = members.get(0);
        // The id alone is not enough: the member must be in the ring as it is.
        Member reweighted = new Member(first.id(), first.weight() + 1, first.zone());
        assertFalse(ring.isOwnerOfPosition(p, n, reweighted));
        assertFalse(ring.isOwnerOfPosition(p, n, Member.of("not-in-the-ring")));
      }
    }
    // More owners wanted than the per-thread room for the walk holds: an array of its own.
    List<Member> many = randomMembers(random, 300, 5, false);
    HashRing wide = ring(2, many);
    ReferenceRing wideReference = new ReferenceRing(2, many);
    for (int k = 0; k < 20; k++) {
      long p = random.nextLong();
      int n = HashRing.WALK_SCRATCH_SIZE + 20;
      List<Member> owners = wideReference.ownersOfPosition(p, n);
      for (Member m : many) {
        assertEquals(owners.contains(m), wide.isOwnerOfPosition(p, n, m), () -> m + " at " + p);
      }
    }
    HashRing ring = ring(8, List.of(Member.of("a")));
    assertThrows(IllegalArgumentException.class, () -> ring.isOwnerOfPosition(0, 0, Member.of("a")));
    assertThrows(IllegalStateException.class,
        () -> ring(8, List.of(Member.of("z", 0.0))).isOwnerOfPosition(0, 1, Member.of("z", 0.0)));
  }

  /** The JVM's per-thread allocation counter, failing the test if it measures nothing (it would read -1). */
  static ThreadMXBean allocationMeter() {
    ThreadMXBean threads =
        (ThreadMXBean) ManagementFactory.getThreadMXBean();
    assertTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
        "this JVM measures no thread's allocation");
    return threads;
  }

  @Test
  void isOwnerOfPosition_afterWarmUp_allocatesNothing() {
    ThreadMXBean threads = allocationMeter();
    SplittableRandom random = new SplittableRandom(22);
    List<Member> members = randomMembers(random, 50, 3, false);
    HashRing ring = ring(64, members);
    Member probe = members.get(7);
    int calls = 200_000;
    int owned = 0;
    for (int round = 0; round < 2; round++) { // the first round warms the class, the walk and the thread's array
      long before = threads.getCurrentThreadAllocatedBytes();
      for (int k = 0; k < calls; k++) {
        owned += ring.isOwnerOfPosition(random.nextLong(), 3, probe) ? 1 : 0;
      }
      long allocated = threads.getCurrentThreadAllocatedBytes() - before;
      if (round == 1) {
        // A list of owners per call would be some 100 bytes each, 20 MB in all; allow the JIT's
        // and the counter's own noise, far below one byte a call.
        assertTrue(allocated < calls / 10, allocated + " bytes for " + calls + " calls");
      }
    }
    assertTrue(owned > 0 && owned < calls, "owned " + owned); // of 2 x calls answers, about 3 in 50 true: used
  }

  /**
   * Walks for more owners than a scanning walk takes, up to as many as the thread's array for the
   * picks holds ({@value HashRing#WALK_SCRATCH_SIZE}, that count included), allocate nothing once
   * warm either: the picks go to that array, and the members and zones taken to the thread's marks,
   * made on the thread's first such walk at the ring's size. Measured on a new thread, whose marks
   * are that size, not left larger by the walks of other tests.
   */
  @Test
  void isOwnerOfPosition_ofManyReplicas_afterWarmUp_allocatesNothing() throws Exception {
    ThreadMXBean threads = allocationMeter();
    SplittableRandom random = new SplittableRandom(26);
    List<Member> members = randomMembers(random, HashRing.WALK_SCRATCH_SIZE + 44, 5, false);
    HashRing ring = ring(2, members);
    Member probe = members.get(7);
    int[] replicas = {HashRing.SCANNING_WALK_MAX + 1, HashRing.WALK_SCRATCH_SIZE};
    int calls = 20_000;
    long[] allocated = {-1, -1};
    int[] owned = new int[replicas.length];
    Thread walker = new Thread(() -> {
      for (int r = 0; r < replicas.length; r++) {
        for (int round = 0; round < 2; round++) { // the first round warms the code and the thread's arrays
          long before = threads.getCurrentThreadAllocatedBytes();
          for (int k = 0; k < calls; k++) {
            owned[r] += ring.isOwnerOfPosition(random.nextLong(), replicas[r], probe) ? 1 : 0;
          }
          allocated[r] = threads.getCurrentThreadAllocatedBytes() - before;
        }
      }
    });
    walker.start();
    walker.join();
    for (int r = 0; r < replicas.length; r++) {
      // An array for the picks would be 1 KB a call at n = 256, and new marks for 5 zones 24 bytes.
      assertTrue(allocated[r] >= 0 && allocated[r] < calls / 10,
          allocated[r] + " bytes for " + calls + " calls, n = " + replicas[r]);
      assertTrue(owned[r] > 0 && owned[r] < 2 * calls, "owned " + owned[r] + ", n = " + replicas[r]);
    }
  }

  /**
   * Every member's primary ranges in one pass are each member's primaryRanges(id): random rings
   * with weights (0 included), rings of one member, of none, and rings whose tokens collide
   * (forced, few positions for many tokens).
   */
  @Test
  void primaryRangesByMember_isEachMembersPrimaryRanges() {
    SplittableRandom random = new SplittableRandom(25);
    for (int trial = 0; trial < 300; trial++) {
      int n = trial == 0 ? 0 : trial == 1 ? 1 : random.nextInt(1, 12);
      HashRing.Builder builder = HashRing.builder().virtualNodes(random.nextInt(1, 9));
      if (trial % 3 == 0) {
        long positions = random.nextInt(1, 6); // ties, at a handful of positions
        long seed = random.nextLong();
        builder.tokenFunction((m, i) -> seed + (m.id().hashCode() * 31L + i) % positions * 1_000_003L);
      }
      HashRing ring = builder.addAll(randomMembers(random, n, 3, true)).build();
      Map<String, List<KeyRange>> all = ring.primaryRangesByMember();
      assertEquals(ring.members().stream().map(Member::id).toList(), List.copyOf(all.keySet()), "trial " + trial);
      for (Member m : ring.members()) {
        assertEquals(ring.primaryRanges(m.id()), all.get(m.id()), "trial " + trial + ", member " + m.id());
      }
    }
  }

  /** A builder whose addAll was refused is as it was: a corrected retry builds the ring it asks for. */
  @Test
  void builderAddAll_refused_leavesTheBuilderAsItWas() {
    HashRing.Builder builder = HashRing.builder().virtualNodes(16).add(Member.of("a"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> builder.addAll(List.of(Member.of("b"), Member.of("c"), Member.of("b"))));
    assertTrue(e.getMessage().startsWith("duplicate member id: \"b\""), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> builder.addAll(Arrays.asList(Member.of("d"), null)));
    HashRing ring = builder.addAll(List.of(Member.of("b"), Member.of("c"))).build();
    assertEquals(List.of("a", "b", "c"), ring.members().stream().map(Member::id).sorted().toList());
  }

  /**
   * With one replica, whether a member owns a position is whether it is the primary: nothing to
   * allocate, even on a thread's first call. The walk's per-thread array (1 KB) was made for it on
   * every new thread, so a node answering {@code isLocal} on a thread per request allocated that
   * much each time.
   */
  @Test
  void isOwnerOfPosition_ofOneReplica_allocatesNothing_evenOnAThreadsFirstCall() throws Exception {
    ThreadMXBean threads = allocationMeter();
    SplittableRandom random = new SplittableRandom(24);
    List<Member> members = randomMembers(random, 50, 3, false);
    HashRing ring = ring(64, members);
    Member probe = members.get(7);
    for (int k = 0; k < 20_000; k++) { // warms the classes and the code on this thread
      ring.isOwnerOfPosition(random.nextLong(), 1, probe);
    }
    long position = random.nextLong();
    boolean primary = ring.ownerOfPosition(position).equals(probe);
    ConcurrentLinkedQueue<String> seen = new ConcurrentLinkedQueue<>();
    for (int t = 0; t < 16; t++) {
      Thread fresh = new Thread(() -> {
        long before = threads.getCurrentThreadAllocatedBytes();
        boolean owns = ring.isOwnerOfPosition(position, 1, probe);
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        seen.add(allocated + (owns == primary ? "" : " (a wrong answer)"));
      });
      fresh.start();
      fresh.join();
    }
    // The array alone is 1,040 bytes, made on every new thread; the meter's own noise is far below
    // that. One thread in 16 may still count a few hundred bytes that are the JVM's, not the walk's:
    // code compiled meanwhile that this thread leaves (a deoptimization) rebuilds on the heap, and
    // counts as this thread's, objects the compiled code never allocated.
    assertTrue(seen.stream().noneMatch(s -> s.contains(" ")), "answers per first call: " + seen);
    assertTrue(seen.stream().filter(s -> Long.parseLong(s) < 256).count() >= 15, "bytes per first call: " + seen);
  }

  /**
   * The lookups by key allocate nothing once warm: a String key's UTF-8 bytes are hashed as they
   * are encoded, not copied into an array first; ASCII, two-, three- and four-byte characters.
   */
  @Test
  void ownerOfAStringOrBytes_afterWarmUp_allocatesNothing() {
    ThreadMXBean threads = allocationMeter();
    SplittableRandom random = new SplittableRandom(23);
    HashRing ring = ring(64, randomMembers(random, 50, 3, false));
    String[] alphabet = {"a", "Z", "7", ":", "\u00e9", "\u0416", "\u4e2d", "\ud83d\ude00"};
    String[] strings = new String[4096];
    byte[][] bytes = new byte[strings.length][];
    for (int i = 0; i < strings.length; i++) {
      StringBuilder key = new StringBuilder("user:");
      for (int c = random.nextInt(0, 24); c > 0; c--) {
        key.append(alphabet[random.nextInt(alphabet.length)]);
      }
      strings[i] = key.toString();
      bytes[i] = strings[i].getBytes(StandardCharsets.UTF_8);
    }
    int calls = 200_000;
    long seen = 0;
    for (int round = 0; round < 2; round++) { // the first round warms the classes and the thread's array
      long before = threads.getCurrentThreadAllocatedBytes();
      for (int k = 0; k < calls; k++) {
        seen += ring.ownerOf(strings[k & (strings.length - 1)]).id().length();
        seen += ring.ownerOf(bytes[k & (bytes.length - 1)]).id().length();
      }
      long allocated = threads.getCurrentThreadAllocatedBytes() - before;
      if (round == 1) {
        // An encoded copy of each String key would be 24 bytes or more a call, 4.8 MB in all.
        assertTrue(allocated < calls / 10, allocated + " bytes for " + calls + " calls of each");
      }
    }
    assertTrue(seen > 0);
  }

  @Test
  void build_anyInsertionOrder_givesEqualRings() {
    SplittableRandom random = new SplittableRandom(2);
    for (int trial = 0; trial < 20; trial++) {
      List<Member> members = randomMembers(random, 20, 3, true);
      HashRing a = ring(64, members);
      List<Member> shuffled = new ArrayList<>(members);
      Collections.shuffle(shuffled, new Random(trial));
      HashRing b = ring(64, shuffled);
      HashRing c = ring(64, List.of()).withMembers(shuffled.subList(0, 10)).withMembers(shuffled);
      for (HashRing other : List.of(b, c)) {
        assertSameTokens(a, other, "trial " + trial);
        assertEquals(a, other);
        assertEquals(a.checksum(), other.checksum());
        assertEquals(a.members(), other.members());
        for (int k = 0; k < 500; k++) {
          String key = "k" + random.nextInt();
          assertEquals(a.owners(key, 3), other.owners(key, 3));
        }
      }
    }
  }

  @Test
  void withAndWithout_incremental_equalsFromScratchTokenForToken() {
    SplittableRandom random = new SplittableRandom(3);
    List<Member> members = randomMembers(random, 30, 2, true);
    HashRing ring = ring(50, members.subList(0, 15));
    for (Member m : members.subList(15, 30)) {
      ring = ring.with(m);
    }
    ring = ring.without(members.get(3).id()).without(members.get(20).id());
    List<Member> expected = new ArrayList<>(members);
    expected.remove(20);
    expected.remove(3);
    HashRing scratch = ring(50, expected);
    assertEquals(scratch, ring);
    assertSameTokens(scratch, ring, "");
  }

  @Test
  void with_sameMember_returnsSameRing_andChangedWeightReplacesIt() {
    HashRing ring = ring(16, List.of(Member.of("a"), Member.of("b")));
    assertSame(ring, ring.with(Member.of("a")));
    assertSame(ring, ring.without("nobody"));
    assertSame(ring, ring.withMembers(List.of(Member.of("b"), Member.of("a"))), "the same members in another order");
    HashRing heavier = ring.with(Member.of("a", 2.0));
    assertEquals(48, heavier.tokenCount());
    assertEquals(Member.of("a", 2.0), heavier.member("a").orElseThrow());
  }

  @Test
  void join_movesKeysOnlyToTheNewMember_aboutItsShare() {
    SplittableRandom random = new SplittableRandom(4);
    for (int trial = 0; trial < 10; trial++) {
      List<Member> members = randomMembers(random, 10, 0, false);
      HashRing before = ring(256, members);
      Member joiner = Member.of("joiner-" + trial);
      HashRing after = before.with(joiner);
      int keys = 20_000;
      int moved = 0;
      for (int k = 0; k < keys; k++) {
        String key = "user:" + random.nextInt(1_000_000_000);
        Member was = before.ownerOf(key);
        Member is = after.ownerOf(key);
        if (!was.equals(is)) {
          assertEquals(joiner, is, "a key moved between two old members");
          moved++;
        }
      }
      double share = after.share(joiner.id());
      assertWithinBinomialBounds(moved, keys, share);
      // Its share itself is about 1/(N+1): 5 standard deviations of a Gamma(V) share.
      assertEquals(1.0 / 11, share, 5.0 / 11 / Math.sqrt(256));
    }
  }

  @Test
  void leave_movesOnlyTheLeaversKeys_aboutItsShare() {
    SplittableRandom random = new SplittableRandom(5);
    for (int trial = 0; trial < 10; trial++) {
      List<Member> members = randomMembers(random, 12, 0, false);
      HashRing before = ring(128, members);
      Member leaver = members.get(random.nextInt(members.size()));
      HashRing after = before.without(leaver.id());
      int keys = 20_000;
      int moved = 0;
      for (int k = 0; k < keys; k++) {
        String key = "order-" + random.nextLong();
        Member was = before.ownerOf(key);
        if (!was.equals(after.ownerOf(key))) {
          assertEquals(leaver, was, "a key of a member that stayed moved");
          moved++;
        }
      }
      assertWithinBinomialBounds(moved, keys, before.share(leaver.id()));
    }
  }

  @Test
  void share_ofALoneMember_isExactlyOne_whateverItsTokens() {
    for (int v : new int[] {1, 2, 3, 100, 1024, 4096}) {
      HashRing ring = ring(v, List.of(Member.of("solo"), new Member("router", 0.0, "")));
      assertEquals(1.0, ring.share("solo"), "virtualNodes " + v); // summed as doubles: 1.0000000000000002
      assertEquals(0.0, ring.share("router"));
    }
  }

  @Test
  void tokenCount_roundsTheExactProductHalfUp_evenJustBelowOneHalf() {
    double justBelowHalf = Math.nextDown(0.5);
    assertEquals(1.0, Math.floor(justBelowHalf + 0.5), "the trap docs/ring-spec.md warns of");
    // {virtualNodes, weight, tokens}
    double[][] cases = {{1, justBelowHalf, 0}, {1, 0.5, 1}, {3, 0.5, 2}, {1, Math.nextDown(2.5), 2}, {1, 2.5, 3},
        {10, 0.05, 1}, {1000, 0.0005, 1}, {1024, 0.333, 341}, {7, 1.0, 7}};
    for (double[] c : cases) {
      int v = (int) c[0];
      Member m = new Member("m", c[1], "");
      String what = "virtualNodes " + v + ", weight " + c[1];
      assertEquals((int) c[2], ring(v, List.of(m, Member.of("other"))).tokenArray().length - v, what);
      assertEquals((int) c[2], new ReferenceRing(v, List.of(m)).tokenCount(), what);
      assertEquals((long) c[2], Member.tokenCount(v, c[1]), what);
    }
  }

  @Test
  void shares_proportionalToWeight_andWeightZeroOwnsNothing() {
    List<Member> members = List.of(new Member("light", 0.5, ""), Member.of("one"), new Member("heavy", 2.0, ""),
        new Member("router", 0.0, ""));
    HashRing ring = ring(4096, members);
    double total = members.stream().mapToDouble(m -> ring.share(m.id())).sum();
    assertEquals(1.0, total, 1e-9);
    // Shares follow weights, within 5 standard deviations for 0.5 * 4096 tokens.
    double tolerance = 5.0 / Math.sqrt(2048) / 3.5;
    assertEquals(0.5 / 3.5, ring.share("light"), tolerance);
    assertEquals(1.0 / 3.5, ring.share("one"), tolerance);
    assertEquals(2.0 / 3.5, ring.share("heavy"), tolerance);
    assertEquals(0.0, ring.share("router"));
    assertTrue(ring.contains("router"));
    assertFalse(ring.contains("nobody"));
    SplittableRandom random = new SplittableRandom(6);
    for (int k = 0; k < 20_000; k++) {
      String key = "k" + random.nextLong();
      assertNotEquals("router", ring.ownerOf(key).id());
      assertTrue(ring.owners(key, 4).stream().noneMatch(m -> m.id().equals("router")));
    }
  }

  @Test
  void shares_fixedSeedRings_balancedWithinBounds() {
    // 100 members, 1024 tokens each (the default): the most loaded member within 10% of the mean.
    List<Member> members = new ArrayList<>();
    for (int k = 0; k < 100; k++) {
      members.add(Member.of("node-" + k));
    }
    HashRing ring = HashRing.builder().addAll(members).build();
    assertEquals(HashRing.Builder.DEFAULT_VIRTUAL_NODES, ring.virtualNodes());
    double max = members.stream().mapToDouble(m -> ring.share(m.id())).max().orElseThrow();
    assertTrue(max * 100 <= 1.10, "max/mean share " + max * 100);
  }

  @Test
  void owners_randomRings_distinctPrimaryFirstAndZoneSpread() {
    SplittableRandom random = new SplittableRandom(8);
    for (int trial = 0; trial < 30; trial++) {
      int zones = random.nextInt(1, 5);
      List<Member> members = randomMembers(random, random.nextInt(2, 15), zones, false);
      HashRing ring = ring(32, members);
      long distinctZones = members.stream().map(Member::zone).distinct().count();
      for (int k = 0; k < 300; k++) {
        String key = "x" + random.nextLong();
        int n = random.nextInt(1, 6);
        List<Member> owners = ring.owners(key, n);
        assertEquals(Math.min(n, members.size()), owners.size());
        assertEquals(ring.ownerOf(key), owners.get(0));
        assertEquals(owners.size(), new HashSet<>(owners).size(), "owners are distinct");
        long zonesUsed = owners.stream().map(Member::zone).distinct().count();
        assertEquals(Math.min(owners.size(), distinctZones), zonesUsed, "zones spread first");
      }
    }
  }

  @Test
  void tokenOrder_equalTokens_tieBrokenByIdBytes() {
    // Every token of every member lands on position 7: the spec's order decides everything. (Its
    // last key, the token's index, orders only equal tokens of one member, which own nothing apart.)
    HashRing.Builder builder = HashRing.builder().virtualNodes(3).tokenFunction((m, i) -> 7L);
    HashRing ring = builder.add(Member.of("b")).add(Member.of("\u00e9")).add(Member.of("a")).add(Member.of("Z")).build();
    // UTF-8 byte order: "Z" (0x5a) < "a" < "b" < "é" (0xc3 0xa9); String.compareTo would agree
    // here, so also check a supplementary character against a high BMP one below.
    assertEquals("Z", ring.ownerOfPosition(7).id());
    assertEquals("Z", ring.ownerOfPosition(8).id()); // wraps to the first token
    assertEquals(List.of("Z", "a", "b", "\u00e9"), ring.owners("any", 4).stream().map(Member::id).toList());

    HashRing utf8 = HashRing.builder().virtualNodes(1).tokenFunction((m, i) -> 0L)
        .add(Member.of("\uffff")).add(Member.of("\ud83d\ude00")).build();
    // UTF-16 order puts U+1F600 (a surrogate pair, 0xd83d) first; UTF-8 bytes put U+FFFF (0xef) first.
    assertEquals("\uffff", utf8.ownerOfPosition(0).id());
  }

  @Test
  void tokenOrder_collisionBetweenTwoMembers_resolvedByIdIncrementallyToo() {
    HashRing.TokenFunction fn = (m, i) -> m.id().equals("late") || m.id().equals("early") ? 100L + i : 1000L * i + 5;
    HashRing scratch = HashRing.builder().virtualNodes(4).tokenFunction(fn)
        .add(Member.of("late")).add(Member.of("early")).add(Member.of("other")).build();
    HashRing incremental = HashRing.builder().virtualNodes(4).tokenFunction(fn)
        .add(Member.of("late")).add(Member.of("other")).build().with(Member.of("early"));
    for (HashRing ring : List.of(scratch, incremental)) {
      assertEquals("early", ring.ownerOfPosition(100).id());
      assertEquals("early", ring.ownerOfPosition(50).id());
      assertEquals(List.of("early", "late", "other"), ring.ownersOfPosition(103, 3).stream().map(Member::id).toList());
    }
  }

  @Test
  void with_joinsOntoCollidingTokens_equalsFromScratchTokenForToken() {
    // Joins are built by copying the kept runs between the new tokens: with many equal tokens,
    // each new one must land after the kept ones whose members sort before it, and before the rest.
    HashRing.TokenFunction fn = (m, i) -> (i % 4) * 1000L - 1500L;
    List<String> ids = List.of("m", "c", "x", "a", "p", "z", "b");
    HashRing incremental = HashRing.builder().virtualNodes(9).tokenFunction(fn).add(Member.of(ids.get(0))).build();
    HashRing.Builder all = HashRing.builder().virtualNodes(9).tokenFunction(fn).add(Member.of(ids.get(0)));
    for (String id : ids.subList(1, ids.size())) {
      incremental = incremental.with(Member.of(id));
      HashRing scratch = all.add(Member.of(id)).build();
      assertSameTokens(scratch, incremental, id);
      assertSame(fn, incremental.tokenFunction(), "a ring built from another keeps its token function");
    }
  }

  @Test
  void lookup_tokensSharingTheirHigh48Bits_orderedByTheLow16Unsigned() {
    // The lookup compares fingerprints (the 15 bits after the bucket's), and the whole tokens on a
    // tie (or past a large bucket's first eight): tokens that share their high 48 bits, with low
    // bits on both sides of 0x8000 and a negative high part, exercise the tie.
    long base = -(5L << 32) & ~0xffffL;
    long[] lows = {0x0010L, 0x7fffL, 0x8000L, 0xfff0L};
    HashRing.TokenFunction fn = (m, i) -> base | lows[Integer.parseInt(m.id().substring(1))];
    HashRing ring = HashRing.builder().virtualNodes(1).tokenFunction(fn)
        .add(Member.of("m0")).add(Member.of("m1")).add(Member.of("m2")).add(Member.of("m3")).build();
    long[] probes = {base, base | 0x10L, base | 0x11L, base | 0x7fffL, base | 0x8000L, base | 0x8001L,
        base | 0xfff0L, base | 0xfff1L, base - 1, base + 0x10000L, Long.MIN_VALUE, Long.MAX_VALUE};
    for (long p : probes) {
      int expected = 0; // wraps to the first token when p is past the last
      for (int k = 0; k < lows.length; k++) {
        if ((base | lows[k]) >= p) {
          expected = k;
          break;
        }
      }
      assertEquals("m" + expected, ring.ownerOfPosition(p).id(), () -> Long.toHexString(p));
      assertEquals(expected, ring.tokenIndex(p), () -> Long.toHexString(p)); // member k holds token k
    }
  }

  @Test
  void tokenIndex_largeRing_isTheFirstTokenAtOrAfterEveryEdge() {
    // Large enough for every lookup path: buckets of up to 8 tokens compared at once, larger ones
    // scanned, fingerprint ties on and next to each token, and the wrap.
    SplittableRandom random = new SplittableRandom(7);
    HashRing ring = ring(64, randomMembers(random, 300, 5, false));
    long[] tokens = ring.tokenArray();
    long[] probes = new long[tokens.length * 3 + 50_000];
    int n = 0;
    for (long t : tokens) {
      probes[n++] = t - 1;
      probes[n++] = t;
      probes[n++] = t + 1;
    }
    while (n < probes.length) {
      probes[n++] = random.nextLong();
    }
    for (long p : probes) {
      int expected = firstAtOrAfter(tokens, p);
      assertEquals(expected, ring.tokenIndex(p), () -> Long.toHexString(p));
      assertEquals(ring.memberArray()[ring.ownerIndex(expected)], ring.ownerOfPosition(p), () -> Long.toHexString(p));
    }
  }

  @Test
  void tokenIndex_bucketsOfOneToNineTokens_fingerprintsAtTheLaneExtremes() {
    // 16 tokens make 8 buckets (3 bucket bits). k of them share bucket 3, with fingerprints 0 and
    // 0x7fff (the lanes' extremes), neighbours, and a repeated one; the others sit in bucket 6.
    // k = 1..8 fills one to eight lanes (both 8-byte reads), k = 9 takes the loop.
    int[] fingerprints = {0x4000, 0, 0x7fff, 1, 0x3fff, 0x7ffe, 0x4000, 0, 0x2222};
    for (int k = 1; k <= 9; k++) {
      int crowded = k;
      HashRing.TokenFunction fn = (m, i) -> {
        int n = Integer.parseInt(m.id().substring(1));
        long u = m.id().startsWith("c")
            ? (3L << 61) | ((long) fingerprints[n] << 46) | (n * 0x1111L)
            : (6L << 61) | ((long) n << 40);
        return u ^ Long.MIN_VALUE;
      };
      HashRing.Builder builder = HashRing.builder().virtualNodes(1).tokenFunction(fn);
      for (int n = 0; n < 16; n++) {
        builder.add(Member.of((n < crowded ? "c" : "f") + n));
      }
      HashRing ring = builder.build();
      long[] tokens = ring.tokenArray();
      List<Long> probes = new ArrayList<>(List.of(Long.MIN_VALUE, Long.MAX_VALUE));
      for (long t : tokens) {
        long fingerprintStart = t & ~((1L << 46) - 1);
        probes.addAll(List.of(t - 1, t, t + 1, fingerprintStart, fingerprintStart - 1,
            fingerprintStart + (1L << 46) - 1, fingerprintStart + (1L << 46)));
      }
      for (long p : probes) {
        int expected = firstAtOrAfter(tokens, p);
        assertEquals(expected, ring.tokenIndex(p), () -> crowded + " tokens, " + Long.toHexString(p));
        assertEquals(ring.memberArray()[ring.ownerIndex(expected)], ring.ownerOfPosition(p),
            () -> crowded + " tokens, " + Long.toHexString(p));
      }
    }
  }

  @Test
  void tokenIndex_randomShapesOfRing_isTheFirstTokenAtOrAfterEveryEdge() {
    // 2,000 small rings whose tokens are placed to reach every lookup path: spread out, clustered
    // in an arc (which may wrap), drawn from a few repeated values, crowded into the first or the
    // last bucket, or sharing the bits of one fingerprint. Probed on, next to and between tokens,
    // and at the edges of fingerprints and of buckets of several sizes.
    SplittableRandom random = new SplittableRandom(11);
    for (int round = 0; round < 2_000; round++) {
      int shape = random.nextInt(6);
      long base = random.nextLong();
      long[] repeated = random.longs(1 + random.nextInt(20)).toArray();
      long arc = (1L << (40 + random.nextInt(23))) - 1;
      HashRing.TokenFunction fn = (m, i) -> {
        long h = HashRing.position(m.id() + "#" + i);
        switch (shape) {
          case 0: return h;
          case 1: return base + (h & arc);
          case 2: return repeated[(int) Long.remainderUnsigned(h, repeated.length)];
          case 3: return Long.MIN_VALUE + (h & 0xff_ffff);
          case 4: return Long.MAX_VALUE - (h & 0xff_ffff);
          default: return (base & ~((1L << 46) - 1)) | (h & 0x3fff);
        }
      };
      HashRing.Builder builder = HashRing.builder()
          .virtualNodes(1 + random.nextInt(random.nextBoolean() ? 4 : 40)).tokenFunction(fn);
      int members = 1 + random.nextInt(6);
      for (int m = 0; m < members; m++) {
        builder.add(Member.of("m" + m));
      }
      HashRing ring = builder.build();
      long[] tokens = ring.tokenArray();
      List<Long> probes = new ArrayList<>(List.of(Long.MIN_VALUE, Long.MAX_VALUE, -1L, 0L, 1L));
      for (long t : tokens) {
        probes.addAll(List.of(t - 1, t, t + 1));
        for (int bits : new int[] {46, 50, 56, 60}) { // the edges of aligned blocks around t
          long start = t & -(1L << bits);
          probes.addAll(List.of(start - 1, start, start + (1L << bits) - 1, start + (1L << bits)));
        }
      }
      random.longs(100).forEach(probes::add);
      for (long p : probes) {
        int expected = firstAtOrAfter(tokens, p);
        int current = round;
        assertEquals(expected, ring.tokenIndex(p), () -> "round " + current + ", shape " + shape
            + ", " + Long.toHexString(p));
        assertEquals(ring.memberArray()[ring.ownerIndex(expected)], ring.ownerOfPosition(p));
      }
    }
  }

  @Test
  void tokenIndex_crowdedBucket_isTheFirstTokenAtOrAfterEveryEdge() {
    // 900 tokens within 3,000 positions: one bucket holds them all, far more than a lookup
    // compares at once, so every lookup takes the loop.
    HashRing.TokenFunction fn = (m, i) -> 1_000_000L + 3L * i + m.id().length();
    HashRing ring = HashRing.builder().virtualNodes(300).tokenFunction(fn)
        .add(Member.of("a")).add(Member.of("bb")).add(Member.of("ccc")).build();
    long[] tokens = ring.tokenArray();
    for (long p = 999_990L; p <= 1_000_000L + 3L * 300 + 10; p++) {
      int expected = firstAtOrAfter(tokens, p);
      assertEquals(expected, ring.tokenIndex(p), Long.toString(p));
      assertEquals(ring.memberArray()[ring.ownerIndex(expected)], ring.ownerOfPosition(p), Long.toString(p));
    }
    assertEquals(0, ring.tokenIndex(Long.MIN_VALUE));
    assertEquals(0, ring.tokenIndex(Long.MAX_VALUE));
  }

  /** Binary search for the first token at or after p in spec order, wrapping to 0. */
  private static int firstAtOrAfter(long[] tokens, long p) {
    int lo = 0;
    int hi = tokens.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (tokens[mid] < p) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo == tokens.length ? 0 : lo;
  }

  @Test
  void lookup_emptyRing_failsWithClearMessage() {
    HashRing empty = HashRing.builder().add(new Member("router", 0, "")).build();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> empty.ownerOf("k"));
    assertEquals("the ring has no tokens: none of its 1 members has one (weight 0, or round(virtualNodes * weight) = 0"
        + " at virtualNodes 1024)", e.getMessage());
    assertTrue(empty.isEmpty());
    assertEquals(List.of(), empty.primaryRanges("router"));
    // A weight above 0 that rounds to no token: the message must not say every weight is 0.
    HashRing tooLight = HashRing.builder().virtualNodes(16).add(Member.of("a", 0.01)).build();
    assertTrue(tooLight.isEmpty());
    assertThrows(IllegalStateException.class, () -> tooLight.owners("k", 1), "no owners to list");
    assertEquals("the ring has no tokens: none of its 1 members has one (weight 0, or round(virtualNodes * weight) = 0"
        + " at virtualNodes 16)", assertThrows(IllegalStateException.class, () -> tooLight.ownerOf("k")).getMessage());
    // A ring of routers alone: every share 0, known or not; and no member, in the ring or not, is
    // told it owns a position, which fails as a lookup does.
    assertEquals(0.0, empty.share("router"));
    assertEquals(0.0, empty.share("nobody"));
    assertThrows(IllegalStateException.class, () -> empty.isOwnerOfPosition(0, 1, Member.of("stranger")));
    HashRing ring = ring(8, List.of(Member.of("a")));
    assertEquals(0.0, ring.share("nobody"));
    assertEquals(0.0, ring.share(null));
  }

  @Test
  void badInput_failsWithTheBadValueInTheMessage() {
    assertMessage("\"\"", () -> Member.of(""));
    assertMessage("null", () -> Member.of(null));
    assertMessage("-1.0", () -> Member.of("a", -1));
    assertMessage("NaN", () -> Member.of("a", Double.NaN));
    assertMessage("Infinity", () -> Member.of("a", Double.POSITIVE_INFINITY));
    // A lone surrogate has no UTF-8 form: "x" + U+D800 would hash and order like "x?".
    assertMessage("member id has an unpaired surrogate at index 1, which has no UTF-8 form: \"x\\uD800\"",
        () -> Member.of("x" + (char) 0xD800));
    assertMessage("member id has an unpaired surrogate at index 0", () -> Member.of((char) 0xDC00 + "x"));
    assertMessage("member zone has an unpaired surrogate at index 0",
        () -> new Member("a", 1, (char) 0xDC00 + "z"));
    assertMessage("at index 2", () -> new Member("a", 1, "ok" + (char) 0xD83D));
    assertEquals("x\uD83D\uDE00", Member.of("x\uD83D\uDE00").id()); // a pair is one code point, and fine
    assertMessage("virtualNodes must be at least 1: 0", () -> HashRing.builder().virtualNodes(0));
    assertMessage("duplicate member id: \"a\"", () -> HashRing.builder().add(Member.of("a")).add(Member.of("a", 2)));
    assertMessage("duplicate member id: \"a\"",
        () -> HashRing.builder().build().withMembers(List.of(Member.of("a"), Member.of("a"))));
    HashRing ring = ring(8, List.of(Member.of("a")));
    assertMessage("member must not be null", () -> ring.with(null));
    // The ring's own members with one repeated: as a set, the ring's members.
    assertMessage("duplicate member id: \"a\"", () -> ring.withMembers(List.of(Member.of("a"), Member.of("a"))));
    assertMessage("member must not be null", () -> ring.withMembers(Arrays.asList((Member) null)));
    assertMessage("member id must not be null", () -> ring.without(null));
    assertMessage("at least 1: 0", () -> ring.owners("k", 0));
    for (Executable nullKey : List.<Executable>of(
        () -> ring.ownerOf((String) null), () -> ring.ownerOf((byte[]) null), () -> ring.owners((String) null, 1),
        () -> ring.owners((byte[]) null, 1), () -> HashRing.position((String) null),
        () -> HashRing.position((byte[]) null))) {
      assertEquals("key must not be null", assertThrows(NullPointerException.class, nullKey).getMessage());
    }
    assertMessage("at least 1: -2", () -> RingDiff.compute(ring, ring, "a", -2));
    assertMessage("weight 1.0E20", () -> ring(8, List.of(Member.of("big", 1e20))));
    assertMessage("would get about 8.0E20 tokens", () -> ring(8, List.of(Member.of("big", 1e20))));
    assertMessage("would get more than 2^1023 tokens (virtualNodes 2 * weight 1.7976931348623157E308)",
        () -> ring(2, List.of(new Member("huge", Double.MAX_VALUE, ""))));
    assertMessage("would get 16777224 tokens", () -> ring(8, List.of(Member.of("big", 2_097_153))));
    // 33 members of 2^24 tokens each: refused before a token is hashed or an array allocated.
    List<Member> many = new ArrayList<>();
    for (int m = 0; m < 33; m++) {
      many.add(Member.of("m" + m));
    }
    assertMessage("ring would have 553648128 tokens, more than " + HashRing.MAX_TOKENS,
        () -> HashRing.builder().virtualNodes(1 << 24).addAll(many).build());
  }

  @Test
  void checksumAndHashCode_changeWithEveryInput() {
    HashRing base = ring(16, List.of(Member.of("a"), new Member("b", 1, "z1")));
    Set<Long> sums = new HashSet<>();
    sums.add(base.checksum());
    sums.add(ring(17, base.members()).checksum());
    sums.add(base.with(new Member("b", 1, "z2")).checksum());
    sums.add(base.with(new Member("b", 1.5, "z1")).checksum());
    sums.add(base.with(Member.of("c")).checksum());
    sums.add(base.with(new Member("c", 0, "")).checksum());
    assertEquals(6, sums.size());
    List<HashRing> rings = List.of(base, ring(17, base.members()), base.with(new Member("b", 1, "z2")),
        base.with(new Member("b", 1.5, "z1")), base.with(Member.of("c")), base.with(new Member("c", 0, "")));
    assertEquals(6, rings.stream().map(HashRing::hashCode).distinct().count(), "a hash code per ring");
    for (int i = 0; i < rings.size(); i++) {
      for (int j = 0; j < rings.size(); j++) {
        if (i == j) {
          HashRing again = ring(rings.get(j).virtualNodes(), rings.get(j).members());
          assertEquals(rings.get(i), again, "built again");
          assertEquals(rings.get(i).hashCode(), again.hashCode(), "built again");
        } else {
          assertNotEquals(rings.get(i), rings.get(j), i + " and " + j);
        }
      }
    }
  }

  @Test
  void toString_namesTheVirtualNodesMembersTokensAndChecksum() {
    HashRing ring = ring(16, List.of(Member.of("a"), new Member("router", 0, "")));
    assertEquals("HashRing[virtualNodes=16, members=2, tokens=16, checksum=" + Long.toHexString(ring.checksum()) + "]",
        ring.toString());
  }

  /**
   * What a ring hands out cannot change it: its member list, its ranges, a member's owners and the
   * map of every member's primary ranges refuse changes (a caller writing into the member list
   * would reorder the array every lookup reads).
   */
  @Test
  void listsAndMapsHandedOut_areUnmodifiable() {
    HashRing ring = ring(16, List.of(Member.of("a"), Member.of("b"), Member.of("c")));
    List<Executable> writes = List.of(
        () -> ring.members().set(0, Member.of("z")),
        () -> ring.owners("k", 2).set(0, Member.of("z")),
        () -> ring.ownersOfPosition(7, 2).clear(),
        () -> ring.ownedRanges("a", 2).clear(),
        () -> ring.primaryRanges("a").clear(),
        () -> ring.primaryRangesByMember().clear(),
        () -> ring.primaryRangesByMember().get("a").clear());
    for (Executable write : writes) {
      assertThrows(UnsupportedOperationException.class, write);
    }
    assertEquals(List.of(Member.of("a"), Member.of("b"), Member.of("c")), ring.members());
  }

  /**
   * A replica count far above the members gives every member holding tokens (fewer than n), as
   * the javadoc says, and allocates for the members, not for n.
   */
  @Test
  void ownersAndIsOwner_ofAReplicaCountFarBeyondTheMembers_answerForEveryMember() {
    Member router = new Member("router", 0, "");
    HashRing ring = ring(16, List.of(Member.of("a"), Member.of("b"), router));
    for (long p : new long[] {Long.MIN_VALUE, -1, 0, 12345, Long.MAX_VALUE}) {
      assertEquals(ring.ownersOfPosition(p, 2), ring.ownersOfPosition(p, Integer.MAX_VALUE));
      assertTrue(ring.isOwnerOfPosition(p, Integer.MAX_VALUE, Member.of("a")));
      assertFalse(ring.isOwnerOfPosition(p, Integer.MAX_VALUE, router));
    }
    assertEquals(ring.owners("k", 2), ring.owners("k", Integer.MAX_VALUE));
  }

  @Test
  void primaryRanges_coverTheCircleExactlyOnce() {
    SplittableRandom random = new SplittableRandom(9);
    List<Member> members = randomMembers(random, 5, 0, true);
    members.add(Member.of("anchor"));
    HashRing ring = ring(20, members);
    double covered = 0;
    for (Member m : members) {
      List<KeyRange> ranges = ring.primaryRanges(m.id());
      covered += ranges.stream().mapToDouble(KeyRange::fraction).sum();
      assertEquals(ring.share(m.id()), ranges.stream().mapToDouble(KeyRange::fraction).sum(), 1e-9);
      for (int k = 0; k < 2000; k++) {
        long p = random.nextLong();
        boolean inside = ranges.stream().anyMatch(r -> r.contains(p));
        assertEquals(ring.ownerOfPosition(p).equals(m), inside);
      }
    }
    assertEquals(1.0, covered, 1e-9);
    HashRing single = ring(20, List.of(Member.of("solo")));
    assertEquals(List.of(true), single.primaryRanges("solo").stream().map(KeyRange::isFull).toList(),
        "a lone member owns one range, the whole circle");
  }

  @Test
  void share_ofALoneMemberWhoseLastTokensAreEqual_isStillOne() {
    // Tokens 5, 9, 9: the arcs add up to the whole circle at the second token, and the third adds
    // an arc of 0, which must not undo that.
    HashRing ring = HashRing.builder().virtualNodes(3).tokenFunction((m, i) -> i == 0 ? 5L : 9L)
        .add(Member.of("a")).build();
    assertEquals(1.0, ring.share("a"));
  }

  @Test
  void share_equalTokens_firstOwnerTakesTheCircle_andRepeatsAddNothing() {
    // Every token on one position: the first in the spec's order (lowest id) owns every key.
    HashRing stacked = HashRing.builder().virtualNodes(2).tokenFunction((m, i) -> 7L)
        .add(Member.of("b")).add(Member.of("a")).add(Member.of("c")).build();
    assertEquals(1.0, stacked.share("a"));
    assertEquals(0.0, stacked.share("b"));
    assertEquals(0.0, stacked.share("c"));
    assertEquals(List.of(true), stacked.primaryRanges("a").stream().map(KeyRange::isFull).toList());
    assertTrue(stacked.primaryRanges("b").isEmpty() && stacked.primaryRanges("c").isEmpty());

    // Repeated and distinct positions mixed, the ends of the circle included: each share is the
    // sum of the member's ranges, the shares sum to one, and the ranges say who owns each position.
    long[] positions = {Long.MIN_VALUE, -5, 3, 3, 100, 100, 100, Long.MAX_VALUE};
    HashRing mixed = HashRing.builder().virtualNodes(3)
        .tokenFunction((m, i) -> positions[(m.id().charAt(1) - '0' + 3 * i) % positions.length])
        .add(Member.of("m0")).add(Member.of("m1")).add(Member.of("m2")).add(Member.of("m3")).build();
    SplittableRandom random = new SplittableRandom(12);
    double total = 0;
    for (Member m : mixed.members()) {
      List<KeyRange> ranges = mixed.primaryRanges(m.id());
      assertEquals(mixed.share(m.id()), ranges.stream().mapToDouble(KeyRange::fraction).sum(), 1e-12, m.id());
      total += mixed.share(m.id());
      List<Long> probes = new ArrayList<>();
      for (long p : positions) {
        probes.add(p);
        probes.add(p + 1);
        probes.add(p - 1);
      }
      for (int k = 0; k < 1000; k++) {
        probes.add(random.nextLong());
      }
      for (long p : probes) {
        assertEquals(mixed.ownerOfPosition(p).equals(m), ranges.stream().anyMatch(r -> r.contains(p)),
            () -> m.id() + " at " + p);
      }
    }
    assertEquals(1.0, total, 1e-12);
  }

  @Test
  void generalMerge_keptDroppedAndNewTokensInOneChange_equalsFromScratchTokenForToken() {
    // A change that keeps some tokens, drops others and adds new ones takes the general merge,
    // not the block copy of a pure join: a member given another weight or zone, or members added
    // and removed in one withMembers. On crowded tokens the tie rule decides most places.
    HashRing.TokenFunction crowded = (m, i) -> (Math.floorMod(m.id().hashCode() + i, 5)) * 1000L - 2000L;
    for (HashRing.TokenFunction fn : Arrays.asList(crowded, null)) {
      SplittableRandom random = new SplittableRandom(fn == null ? 13 : 14);
      List<Member> current = new ArrayList<>(randomMembers(random, 6, 3, true));
      HashRing ring = build(fn, current);
      int fresh = 0;
      for (int step = 0; step < 80; step++) {
        List<Member> next = new ArrayList<>(current);
        HashRing changed;
        int pick = random.nextInt(next.size());
        Member old = next.get(pick);
        switch (step % 3) {
          case 0 -> { // another weight
            Member m = new Member(old.id(), random.nextInt(0, 9) / 4.0, old.zone());
            next.set(pick, m);
            changed = ring.with(m);
          }
          case 1 -> { // another zone
            Member m = new Member(old.id(), old.weight(), "zone-" + random.nextInt(4));
            next.set(pick, m);
            changed = ring.with(m);
          }
          default -> { // one or two leave, one or two join, and one kept changes weight and zone, in one change
            for (int k = random.nextInt(1, 3); k > 0 && next.size() > 1; k--) {
              next.remove(random.nextInt(next.size()));
            }
            int kept = random.nextInt(next.size());
            Member before = next.get(kept);
            next.set(kept, new Member(before.id(), random.nextInt(0, 9) / 4.0, "zone-" + random.nextInt(4)));
            for (int k = random.nextInt(1, 3); k > 0; k--) {
              next.add(new Member("new-" + fresh++, random.nextInt(1, 9) / 4.0, "zone-" + random.nextInt(4)));
            }
            Collections.shuffle(next, new Random(step));
            changed = ring.withMembers(next);
          }
        }
        HashRing scratch = build(fn, next);
        String what = (fn == null ? "spec tokens" : "crowded tokens") + ", step " + step;
        assertEquals(scratch, changed, what);
        assertSameTokens(scratch, changed, what);
        current = next;
        ring = changed;
      }
    }
  }

  /** A ring of V = 8 with this token function (null: the spec's). */
  private static HashRing build(HashRing.TokenFunction fn, List<Member> members) {
    HashRing.Builder b = HashRing.builder().virtualNodes(8);
    return (fn == null ? b : b.tokenFunction(fn)).addAll(members).build();
  }

  @Test
  void limits_theLargestRingsAccepted_andOneMoreRefused() {
    // 65,535 members: the last in id order has owner index 0xFFFE in the lookup entries.
    List<Member> members = new ArrayList<>();
    for (int m = 0; m < HashRing.MAX_MEMBERS; m++) {
      members.add(Member.of(String.format("m%05d", m)));
    }
    HashRing ring = ring(1, members);
    Member last = ring.members().get(HashRing.MAX_MEMBERS - 1);
    assertEquals("m65534", last.id());
    long itsToken = HashRing.position("m65534#0");
    assertEquals(last, ring.ownerOfPosition(itsToken));
    assertEquals(last, ring.ownersOfPosition(itsToken, 2).get(0));
    assertEquals(HashRing.MAX_MEMBERS, ring.tokenCount());
    members.add(Member.of("one-more"));
    assertMessage("a ring holds at most " + HashRing.MAX_MEMBERS + " members", () -> ring(1, members));
    assertMessage("a ring holds at most " + HashRing.MAX_MEMBERS + " members", () -> ring.with(Member.of("one-more")));

    // One member of exactly 2^24 tokens is accepted (counted, not built: the refusal comes first);
    // one token more is refused, naming the member.
    assertEquals(HashRing.MAX_TOKENS_PER_MEMBER, RingBuilder.tokenCount(Member.of("x"), HashRing.MAX_TOKENS_PER_MEMBER));
    assertMessage("more than " + HashRing.MAX_TOKENS_PER_MEMBER,
        () -> RingBuilder.tokenCount(new Member("x", 1 + 1.0 / HashRing.MAX_TOKENS_PER_MEMBER, ""),
            HashRing.MAX_TOKENS_PER_MEMBER));
  }

  /** Moved keys are Binomial(keys, share): allow 5 standard deviations. */
  static void assertWithinBinomialBounds(int moved, int keys, double share) {
    double expected = keys * share;
    double sd = Math.sqrt(keys * share * (1 - share));
    assertTrue(Math.abs(moved - expected) <= 5 * sd + 1,
        "moved " + moved + " of " + keys + ", expected " + expected + " +- " + 5 * sd);
  }

  private static void assertMessage(String expected, Executable action) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, action);
    assertTrue(e.getMessage().contains(expected), () -> "message \"" + e.getMessage() + "\" lacks " + expected);
  }
}
