package io.ringmaster.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.ThreadMXBean;
import io.ringmaster.ring.RingDiff.Role;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class RingDiffTest {

  /**
   * A diff built by hand (a listener's test builds its changes) is as immutable as a computed one:
   * the owners' lists are copied, so a caller's list changed later changes nothing, and what no
   * diff can hold (a null, no replicas) is refused where it is built, not where a listener reads it.
   */
  @Test
  void aDiffBuiltByHand_copiesItsOwnersLists_andRefusesWhatNoDiffHolds() {
    KeyRange range = new KeyRange(-5, 7);
    List<Member> owners = new ArrayList<>(List.of(Member.of("a")));
    RingDiff.Gained gained = new RingDiff.Gained(range, owners, Role.PRIMARY);
    RingDiff.Lost lost = new RingDiff.Lost(range, owners, Role.BACKUP);
    owners.add(Member.of("b"));
    assertEquals(List.of(Member.of("a")), gained.sources());
    assertEquals(List.of(Member.of("a")), lost.destinations());
    assertThrows(UnsupportedOperationException.class,
        () -> gained.sources().add(Member.of("c")));

    List<Member> withNull = Arrays.asList(Member.of("a"), null);
    assertThrows(NullPointerException.class,
        () -> new RingDiff.Gained(range, withNull, Role.PRIMARY));
    assertThrows(NullPointerException.class,
        () -> new RingDiff.Lost(range, List.of(), null));
    assertThrows(NullPointerException.class,
        () -> new RingDiff.RoleChange(null, Role.PRIMARY, Role.BACKUP));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new RingDiff("a", 0, List.of(gained), List.of(), List.of()));
    assertTrue(e.getMessage().endsWith(": 0"), e.getMessage());
    for (Executable withANull : List.<Executable>of(
        () -> new RingDiff.Gained(null, List.of(), Role.PRIMARY), () -> new RingDiff.Gained(range, List.of(), null),
        () -> new RingDiff.Lost(null, List.of(), Role.BACKUP), () -> new RingDiff.RoleChange(range, null, Role.BACKUP),
        () -> new RingDiff.RoleChange(range, Role.PRIMARY, null),
        () -> new RingDiff(null, 1, List.of(), List.of(), List.of()))) {
      assertThrows(NullPointerException.class, withANull);
    }

    // The diff's own lists are copies too.
    RingDiff.RoleChange demoted = new RingDiff.RoleChange(range, Role.PRIMARY, Role.BACKUP);
    List<RingDiff.Gained> gains = new ArrayList<>(List.of(gained));
    List<RingDiff.Lost> losses = new ArrayList<>(List.of(lost));
    List<RingDiff.RoleChange> changes = new ArrayList<>(List.of(demoted));
    RingDiff diff = new RingDiff("a", 2, gains, losses, changes);
    gains.clear();
    losses.clear();
    changes.clear();
    assertEquals(List.of(gained), diff.gained());
    assertEquals(List.of(lost), diff.lost());
    assertEquals(List.of(demoted), diff.roleChanges());
    assertThrows(UnsupportedOperationException.class, () -> diff.lost().add(lost));
    assertThrows(UnsupportedOperationException.class, () -> diff.gained().clear());
    assertThrows(UnsupportedOperationException.class,
        () -> diff.roleChanges().clear());
    assertTrue(!diff.isEmpty() && !new RingDiff("a", 1, List.of(), List.of(), List.of(demoted)).isEmpty()
        && new RingDiff("a", 1, List.of(), List.of(), List.of()).isEmpty(), "a role change alone is a change");
  }

  /** The member's role for position p in a ring, or null when it is not an owner. */
  private static Role roleAt(HashRing ring, long p, String id, int n) {
    if (ring.isEmpty()) {
      return null;
    }
    List<Member> owners = ring.ownersOfPosition(p, n);
    for (int k = 0; k < owners.size(); k++) {
      if (owners.get(k).id().equals(id)) {
        return k == 0 ? Role.PRIMARY : Role.BACKUP;
      }
    }
    return null;
  }

  /** Applies a diff to the role the member had at p: what the member should believe afterwards. */
  private static Role apply(RingDiff diff, long p, Role old) {
    Role result = old;
    int hits = 0;
    for (RingDiff.Gained g : diff.gained()) {
      if (g.range().contains(p)) {
        assertNull(old, () -> "gained at " + p + ", where the member already was " + old + " (a role change)");
        result = g.role();
        hits++;
      }
    }
    for (RingDiff.Lost l : diff.lost()) {
      if (l.range().contains(p)) {
        assertEquals(old, l.role(), () -> "lost at " + p + " the role " + l.role() + ", where the member was " + old);
        result = null;
        hits++;
      }
    }
    for (RingDiff.RoleChange r : diff.roleChanges()) {
      if (r.range().contains(p)) {
        assertEquals(r.before(), old, "role change from a role the member did not have");
        result = r.after();
        hits++;
      }
    }
    assertTrue(hits <= 1, "ranges of one diff overlap at " + p);
    return result;
  }

  /** Checks a diff at position p: applied to the old role it gives the new one, with true owners. */
  private static void check(HashRing before, HashRing after, RingDiff diff, long p) {
    check(before, true, after, true, diff, p);
  }

  /** As above, for a member that holds its id's tokens in a ring only where {@code held...}. */
  private static void check(HashRing before, boolean heldBefore, HashRing after, boolean heldAfter, RingDiff diff,
                            long p) {
    String id = diff.memberId();
    int n = diff.replicas();
    Role old = heldBefore ? roleAt(before, p, id, n) : null;
    Role now = heldAfter ? roleAt(after, p, id, n) : null;
    assertEquals(now, apply(diff, p, old), () -> "position " + p + " member " + id);
    for (RingDiff.Gained g : diff.gained()) {
      if (g.range().contains(p)) {
        assertEquals(before.isEmpty() ? List.of() : before.ownersOfPosition(p, n), g.sources());
      }
    }
    for (RingDiff.Lost l : diff.lost()) {
      if (l.range().contains(p)) {
        assertEquals(after.isEmpty() ? List.of() : after.ownersOfPosition(p, n), l.destinations());
      }
    }
  }

  /**
   * For each member of the pool, the diff between the rings at {@code n} replicas is exact at
   * random positions and range edges ({@link #check}) and merged as far as it can be.
   */
  private static void assertExactForEach(List<Member> pool, HashRing before, HashRing after, int n,
                                         SplittableRandom random) {
    for (Member m : pool) {
      RingDiff diff = RingDiff.compute(before, after, m.id(), n);
      for (long p : probes(before, after, diff, random)) {
        check(before, after, diff, p);
      }
      assertCoalesced(diff);
    }
  }

  /**
   * Checks that each list of a diff is merged as far as it can be: no range touches the next one
   * (the last and the first included, across the wrap) with the same owners and roles.
   */
  static void assertCoalesced(RingDiff diff) {
    assertCoalesced(diff.gained().stream().map(g -> new Object[] {g.range(), g.sources(), g.role()}).toList(), diff);
    assertCoalesced(diff.lost().stream().map(l -> new Object[] {l.range(), l.destinations(), l.role()}).toList(), diff);
    assertCoalesced(diff.roleChanges().stream().map(r -> new Object[] {r.range(), r.before(), r.after()}).toList(),
        diff);
  }

  /** Each entry: its range, then what must differ between touching ranges. */
  private static void assertCoalesced(List<Object[]> entries, RingDiff diff) {
    for (int k = 0; k < entries.size() && entries.size() > 1; k++) {
      Object[] a = entries.get(k);
      Object[] b = entries.get((k + 1) % entries.size());
      boolean touch = ((KeyRange) a[0]).end() == ((KeyRange) b[0]).start();
      boolean same = Arrays.equals(Arrays.copyOfRange(a, 1, a.length), Arrays.copyOfRange(b, 1, b.length));
      assertFalse(touch && same, () -> "not merged: " + Arrays.toString(a) + " and " + Arrays.toString(b)
          + " in " + diff);
    }
  }

  private static List<Long> probes(HashRing before, HashRing after, RingDiff diff, SplittableRandom random) {
    List<Long> probes = new ArrayList<>();
    for (HashRing r : List.of(before, after)) {
      for (long t : r.tokenArray()) {
        probes.add(t);
        probes.add(t + 1);
        probes.add(t - 1);
      }
    }
    for (RingDiff.Gained g : diff.gained()) {
      probes.add(g.range().end());
      probes.add(g.range().start() + 1);
    }
    for (RingDiff.Lost l : diff.lost()) {
      probes.add(l.range().end());
      probes.add(l.range().start() + 1);
    }
    probes.add(Long.MIN_VALUE);
    probes.add(Long.MAX_VALUE);
    for (int k = 0; k < 500; k++) {
      probes.add(HashRing.position("key-" + random.nextLong()));
    }
    return probes;
  }

  @Test
  void diffs_randomJoinsAndLeaves_applyToOldOwnershipGivingNewOwnership() {
    randomJoinsAndLeaves(new SplittableRandom(21), HashRing.SPEC_TOKENS);
  }

  /**
   * The same with most tokens on one of six positions, the circle's two ends among them, so that
   * runs of equal tokens of several members, ordered by the spec's tie-break, start and end ranges.
   */
  @Test
  void diffs_randomJoinsAndLeaves_withManyEqualTokens_applyToOldOwnershipGivingNewOwnership() {
    long[] crowded = {Long.MIN_VALUE, -1, 0, 1, 0x1234_5678_9abc_def0L, Long.MAX_VALUE};
    randomJoinsAndLeaves(new SplittableRandom(22), (m, i) -> {
      long h = HashRing.SPEC_TOKENS.token(m, i);
      return (h & 7) < crowded.length ? crowded[(int) (h & 7)] : h;
    });
  }

  /**
   * Rings of different {@code virtualNodes} (a cluster moving to another setting) and different
   * members, weights and zones: every token may move, and the diff is as exact.
   */
  @Test
  void diffs_betweenRingsOfDifferentVirtualNodes_applyToOldOwnershipGivingNewOwnership() {
    SplittableRandom random = new SplittableRandom(23);
    for (int round = 0; round < 40; round++) {
      List<Member> pool = HashRingTest.randomMembers(random, 10, random.nextInt(0, 4), round % 2 == 0);
      HashRing before = HashRing.builder().virtualNodes(random.nextInt(1, 40)).addAll(someOf(pool, random)).build();
      HashRing after = HashRing.builder().virtualNodes(random.nextInt(1, 40)).addAll(someOf(pool, random)).build();
      int n = random.nextInt(1, 4);
      assertExactForEach(pool, before, after, n, random);
    }
  }

  /**
   * {@code ownedRanges(id, n)} holds exactly the positions where the member is among the first n
   * owners, as ranges that do not touch (across the wrap neither), in ring order.
   */
  @Test
  void ownedRanges_areExactlyWhereTheMemberIsAmongTheFirstNOwners_mergedAndInOrder() {
    SplittableRandom random = new SplittableRandom(24);
    for (int round = 0; round < 30; round++) {
      List<Member> pool =
          HashRingTest.randomMembers(random, random.nextInt(1, 9), random.nextInt(0, 4), round % 2 == 0);
      HashRing ring = HashRing.builder().virtualNodes(random.nextInt(1, 30)).addAll(pool).build();
      for (int n = 1; n <= 3; n++) {
        for (Member m : pool) {
          List<KeyRange> ranges = ring.ownedRanges(m.id(), n);
          List<Long> probes = probes(ring, ring, RingDiff.compute(ring, ring, m.id(), n), random);
          for (KeyRange r : ranges) {
            probes.addAll(List.of(r.start(), r.start() + 1, r.end(), r.end() + 1));
          }
          for (long p : probes) {
            boolean owner = !ring.isEmpty() && ring.ownersOfPosition(p, n).contains(m);
            int n0 = n;
            assertEquals(owner, ranges.stream().anyMatch(r -> r.contains(p)),
                () -> m.id() + " at " + p + ", n = " + n0 + ": " + ranges);
          }
          for (int k = 0; k < ranges.size(); k++) {
            KeyRange r = ranges.get(k);
            KeyRange next = ranges.get((k + 1) % ranges.size());
            assertTrue(ranges.size() == 1 || r.end() != next.start(), "touching ranges not merged: " + ranges);
            if (k > 0) {
              assertTrue(Long.compare(ranges.get(k - 1).end(), r.end()) < 0, "not in ring order: " + ranges);
            }
          }
        }
      }
    }
  }

  private static List<Member> someOf(List<Member> pool, SplittableRandom random) {
    return pool.stream().filter(m -> random.nextInt(3) > 0).toList();
  }

  private static void randomJoinsAndLeaves(SplittableRandom random, HashRing.TokenFunction tokens) {
    for (int sequence = 0; sequence < 12; sequence++) {
      int n = random.nextInt(1, 4);
      int zones = random.nextInt(0, 4);
      int v = random.nextInt(1, 24);
      List<Member> pool = HashRingTest.randomMembers(random, 14, zones, sequence % 2 == 0);
      HashRing ring = HashRing.builder().virtualNodes(v).tokenFunction(tokens).build();
      List<Member> present = new ArrayList<>();
      for (int step = 0; step < 25; step++) {
        HashRing next;
        if (present.isEmpty() || (present.size() < pool.size() && random.nextBoolean())) {
          Member joiner = pool.stream().filter(m -> !present.contains(m)).toList()
              .get(random.nextInt(pool.size() - present.size()));
          present.add(joiner);
          next = ring.with(joiner);
        } else {
          Member leaver = present.remove(random.nextInt(present.size()));
          next = ring.without(leaver.id());
        }
        // The incremental ring is the ring built from scratch, token for token and owner for owner.
        HashRing scratch = HashRing.builder().virtualNodes(v).tokenFunction(tokens).addAll(present).build();
        HashRingTest.assertSameTokens(scratch, next, "");
        assertExactForEach(pool, ring, next, n, random);
        ring = next;
      }
    }
  }

  @Test
  void diffs_memberNotHoldingItsIdOnOneSide_ownedNothingThere_andOwnersNameTheHolder() {
    // A cluster node refused because another member holds its id: its id's tokens in that ring
    // are the other member's. It gains or loses every range the id has, and the sources or
    // destinations name the id where that ring gives it the keys.
    SplittableRandom random = new SplittableRandom(33);
    for (int round = 0; round < 80; round++) {
      List<Member> pool = HashRingTest.randomMembers(random, 8, random.nextInt(0, 3), round % 2 == 0);
      int v = random.nextInt(1, 24);
      int n = random.nextInt(1, 4);
      HashRing before = randomRing(pool, v, random);
      HashRing after = randomRing(pool, v, random);
      String id = pool.get(random.nextInt(pool.size())).id();
      boolean heldBefore = round % 4 != 0 && round % 4 != 3; // all four: (false, *), (*, false), both, neither
      boolean heldAfter = round % 4 != 1 && round % 4 != 3;
      RingDiff diff = RingDiff.compute(before, heldBefore, after, heldAfter, id, n);
      if (!heldBefore && !heldAfter) {
        assertTrue(diff.isEmpty(), "held on neither side, yet changed: " + diff);
      }
      for (long p : probes(before, after, diff, random)) {
        check(before, heldBefore, after, heldAfter, diff, p);
      }
      assertCoalesced(diff);
    }
  }

  private static HashRing randomRing(List<Member> pool, int virtualNodes, SplittableRandom random) {
    HashRing.Builder b = HashRing.builder().virtualNodes(virtualNodes);
    for (Member m : pool) {
      if (random.nextInt(3) > 0) {
        b.add(m);
      }
    }
    return b.build();
  }

  /**
   * Replica counts near the member count and past it: where a member owns every position in a
   * ring (its walks take every member with tokens), the diff skips that ring's walks, and is as
   * exact; past {@value HashRing#SCANNING_WALK_MAX} owners the walks mark those taken.
   */
  @Test
  void diffs_withAsManyReplicasAsMembers_orMore_applyToOldOwnershipGivingNewOwnership() {
    SplittableRandom random = new SplittableRandom(43);
    for (int round = 0; round < 12; round++) {
      List<Member> pool = HashRingTest.randomMembers(random, 24, random.nextInt(0, 5), round % 2 == 0);
      int v = random.nextInt(1, 16);
      HashRing before = randomRing(pool, v, random);
      HashRing after = random.nextBoolean() ? randomRing(pool, v, random)
          : before.with(pool.stream().filter(m -> !before.contains(m.id())).findFirst().orElse(Member.of("new")));
      int withTokens = (int) after.members().stream().filter(m -> Math.round(v * m.weight()) > 0).count();
      for (int n : new int[] {Math.max(1, withTokens - 1), Math.max(1, withTokens), withTokens + 1, 17, 30}) {
        assertExactForEach(pool, before, after, n, random);
      }
    }
  }

  /**
   * Every member with tokens leaving at once (or drained to weight 0), and members joining a ring
   * without tokens: each loses (gains) exactly what it owned (owns), with no destinations (sources),
   * where most segments of the ring with tokens are not the member's and are skipped.
   */
  @Test
  void diffs_toAndFromARingWithoutTokens_loseOrGainEverything() {
    SplittableRandom random = new SplittableRandom(44);
    for (int round = 0; round < 12; round++) {
      int v = random.nextInt(1, 24);
      List<Member> pool =
          HashRingTest.randomMembers(random, random.nextInt(1, 10), random.nextInt(0, 4), round % 2 == 0);
      pool.add(Member.of("always-" + round));
      HashRing ring = HashRing.builder().virtualNodes(v).addAll(pool).build();
      HashRing none = HashRing.builder().virtualNodes(v).build();
      HashRing drained = HashRing.builder().virtualNodes(v)
          .addAll(pool.stream().map(m -> new Member(m.id(), 0, m.zone())).toList()).build();
      for (HashRing empty : List.of(none, drained)) {
        for (int n = 1; n <= 3; n++) {
          assertExactForEach(pool, ring, empty, n, random);
          assertExactForEach(pool, empty, ring, n, random);
        }
      }
      RingDiff last = RingDiff.compute(ring, none, "always-" + round, 1);
      assertEquals(ring.share("always-" + round), last.lost().stream().mapToDouble(l -> l.range().fraction()).sum(),
          1e-12);
    }
  }

  /**
   * A diff's working memory is a bit per token of each ring (where its segments may have changed)
   * besides what it reports: for a member joining a ring of 12,800 tokens, or one of the members
   * already there, a few KB and about a KB per range at most, never a word or more per token.
   */
  @Test
  void diff_ofAJoin_allocatesABitPerTokenBesidesItsRanges() {
    ThreadMXBean threads = HashRingTest.allocationMeter();
    SplittableRandom random = new SplittableRandom(45);
    HashRing before = HashRingTest.ring(64, HashRingTest.randomMembers(random, 200, 3, false));
    HashRing after = before.with(new Member("joiner", 1, "zone-0"));
    int tokens = after.tokenCount();
    for (int n = 1; n <= 3; n++) {
      for (String id : List.of("joiner", before.members().get(0).id())) {
        RingDiff diff = RingDiff.compute(before, after, id, n); // warms the classes
        long start = threads.getCurrentThreadAllocatedBytes();
        diff = RingDiff.compute(before, after, id, n);
        long allocated = threads.getCurrentThreadAllocatedBytes() - start;
        int ranges = diff.gained().size() + diff.lost().size() + diff.roleChanges().size();
        // Two bit sets are tokens / 4 bytes; a long a token would be 100 KB each.
        assertTrue(allocated < tokens + 1_000L * (ranges + 8),
            allocated + " bytes for a diff of " + ranges + " ranges over " + tokens + " tokens, n = " + n + ", " + id);
      }
    }
  }

  @Test
  void diff_replicasBeyondTheMembers_sameAsEveryMember_withoutTheWork() {
    HashRing one = HashRing.builder().virtualNodes(64).add(Member.of("a")).build();
    HashRing two = one.with(Member.of("b", 3));
    RingDiff all = RingDiff.compute(one, two, "a", 2);
    RingDiff huge = RingDiff.compute(one, two, "a", Integer.MAX_VALUE); // ran out of memory before
    assertEquals(Integer.MAX_VALUE, huge.replicas());
    assertEquals(all.gained(), huge.gained());
    assertEquals(all.lost(), huge.lost());
    assertEquals(all.roleChanges(), huge.roleChanges());
    assertFalse(huge.roleChanges().isEmpty(), "a went from sole owner to backup where b is primary");
  }

  @Test
  void foldOfDiffs_fromEmpty_equalsCurrentOwnership() {
    SplittableRandom random = new SplittableRandom(22);
    List<Member> pool = HashRingTest.randomMembers(random, 10, 2, false);
    String me = pool.get(0).id();
    long[] probes = new long[3000];
    for (int k = 0; k < probes.length; k++) {
      probes[k] = random.nextLong();
    }
    Map<Long, Role> believed = new HashMap<>();
    HashRing ring = HashRing.builder().virtualNodes(16).build();
    for (int step = 0; step < 40; step++) {
      List<Member> next = new ArrayList<>();
      for (Member m : pool) {
        if (random.nextInt(3) > 0) {
          next.add(m);
        }
      }
      HashRing after = ring.withMembers(next);
      RingDiff diff = RingDiff.compute(ring, after, me, 2);
      for (long p : probes) {
        Role role = apply(diff, p, believed.get(p));
        if (role == null) {
          believed.remove(p);
        } else {
          believed.put(p, role);
        }
      }
      for (long p : probes) {
        assertEquals(roleAt(after, p, me, 2), believed.get(p), "after step " + step);
      }
      ring = after;
    }
  }

  @Test
  void diff_unchangedOwnership_isEmpty() {
    HashRing ring = HashRingTest.ring(32, List.of(Member.of("a"), Member.of("b"), Member.of("c")));
    assertTrue(RingDiff.compute(ring, ring, "a", 2).isEmpty());
    assertTrue(RingDiff.compute(ring, ring.with(new Member("router", 0, "")), "a", 3).isEmpty());
    assertTrue(RingDiff.compute(ring, ring.with(Member.of("d")), "nobody", 1).isEmpty());
  }

  @Test
  void diff_joinOfSecondMember_splitsTheFullCircle() {
    HashRing solo = HashRingTest.ring(8, List.of(Member.of("a")));
    RingDiff first = RingDiff.compute(HashRing.builder().virtualNodes(8).build(), solo, "a", 1);
    assertEquals(1, first.gained().size());
    assertTrue(first.gained().get(0).range().isFull());
    assertEquals(List.of(), first.gained().get(0).sources());

    HashRing pair = solo.with(Member.of("b"));
    RingDiff lost = RingDiff.compute(solo, pair, "a", 1);
    assertFalse(lost.lost().isEmpty());
    assertTrue(lost.lost().stream().allMatch(l -> l.destinations().equals(List.of(Member.of("b")))));
    assertEquals(pair.share("b"), lost.lost().stream().mapToDouble(l -> l.range().fraction()).sum(), 1e-12);

    // With two replicas both own everything: b gains the circle as backup... and as primary.
    RingDiff two = RingDiff.compute(solo, pair, "a", 2);
    assertTrue(two.lost().isEmpty() && two.gained().isEmpty());
    assertEquals(pair.share("b"), two.roleChanges().stream().mapToDouble(r -> r.range().fraction()).sum(), 1e-12);
    assertTrue(two.roleChanges().stream().allMatch(r -> r.before() == Role.PRIMARY && r.after() == Role.BACKUP));
  }

  @Test
  void partition_keysOfALeave_groupedByTheirLostRange() {
    SplittableRandom random = new SplittableRandom(23);
    List<Member> members = HashRingTest.randomMembers(random, 6, 0, false);
    HashRing before = HashRingTest.ring(64, members);
    HashRing after = before.with(Member.of("newcomer"));
    String me = members.get(0).id();
    RingDiff diff = RingDiff.compute(before, after, me, 1);
    List<String> keys = new ArrayList<>();
    for (int k = 0; k < 20_000; k++) {
      keys.add("user:" + k);
    }
    Map<RingDiff.Lost, List<String>> handOff = KeyRange.partition(diff.lost(), RingDiff.Lost::range, keys);
    int grouped = 0;
    for (Map.Entry<RingDiff.Lost, List<String>> e : handOff.entrySet()) {
      for (String key : e.getValue()) {
        assertTrue(e.getKey().range().contains(key));
        assertTrue(e.getKey().range().contains(key.getBytes(StandardCharsets.UTF_8)));
        assertEquals(me, before.ownerOf(key).id());
        assertEquals("newcomer", after.ownerOf(key).id());
      }
      grouped += e.getValue().size();
    }
    long expected = keys.stream().filter(k -> before.ownerOf(k).id().equals(me) && after.ownerOf(k).id().equals("newcomer")).count();
    assertEquals(expected, grouped);
    assertTrue(grouped > 0);
    KeyRange first = diff.lost().get(0).range();
    for (String key : keys.subList(0, 2_000)) {
      assertEquals(first.contains(key), first.contains(key.getBytes(StandardCharsets.UTF_8)), key);
    }

    // The same keys as UTF-8 bytes, placed by HashRing::position: the same groups, key for key.
    List<byte[]> raw = keys.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();
    Map<RingDiff.Lost, List<byte[]>> rawHandOff =
        KeyRange.partition(diff.lost(), RingDiff.Lost::range, raw, HashRing::position);
    assertEquals(handOff.keySet(), rawHandOff.keySet());
    handOff.forEach((lost, strings) -> assertEquals(strings, rawHandOff.get(lost).stream()
        .map(b -> new String(b, StandardCharsets.UTF_8)).toList()));
  }

  /**
   * partition() leaves out the ranges that hold no key, as its javadoc says, whether the ranges lie
   * apart (its binary search) or overlap (its scan), the wrapping one included.
   */
  @Test
  void partition_leavesOutRangesWithoutKeys_apartOrOverlapping() {
    KeyRange low = new KeyRange(0, 10);
    KeyRange high = new KeyRange(20, 30);
    KeyRange wrapping = new KeyRange(40, -40);
    List<Long> keys = List.of(5L, 25L);
    assertEquals(Map.of(low, List.of(5L), high, List.of(25L)),
        KeyRange.partition(List.of(low, high, wrapping), r -> r, keys, p -> p));
    assertEquals(Map.of(wrapping, List.of(50L)),
        KeyRange.partition(List.of(low, high, wrapping), r -> r, List.of(50L), p -> p));
    KeyRange around = new KeyRange(-100, 100); // overlaps low and high
    assertEquals(Map.of(around, List.of(5L, 25L)),
        KeyRange.partition(List.of(around, wrapping, high), r -> r, keys, p -> p));
  }

  /**
   * overlaps() against sets of positions: each range as one or two intervals of unsigned offsets
   * from Long.MIN_VALUE, compared as intervals. Ends are drawn near 0, near the wrap and at random,
   * so that ranges touch, nest, wrap and cover the circle.
   */
  @Test
  void overlaps_isTrueExactlyWhenTwoRangesShareAPosition() {
    SplittableRandom random = new SplittableRandom(11);
    long[] near = {Long.MIN_VALUE, Long.MIN_VALUE + 1, -2, -1, 0, 1, 2, Long.MAX_VALUE - 1, Long.MAX_VALUE};
    LongSupplier end = () -> random.nextInt(3) == 0 ? random.nextLong() : near[random.nextInt(near.length)];
    int overlapping = 0;
    for (int i = 0; i < 20_000; i++) {
      KeyRange a = new KeyRange(end.getAsLong(), end.getAsLong());
      KeyRange b = random.nextInt(50) == 0 ? KeyRange.full() : new KeyRange(end.getAsLong(), end.getAsLong());
      if (random.nextInt(50) == 0) {
        a = new KeyRange(a.start(), a.start()); // the whole circle too
      }
      boolean expected = false;
      for (long[] x : offsets(a)) {
        for (long[] y : offsets(b)) {
          expected |= Long.compareUnsigned(x[0], y[1]) <= 0 && Long.compareUnsigned(y[0], x[1]) <= 0;
        }
      }
      KeyRange fa = a;
      KeyRange fb = b;
      assertEquals(expected, a.overlaps(b), () -> fa + " and " + fb);
      assertEquals(expected, b.overlaps(a), () -> fb + " and " + fa);
      overlapping += expected ? 1 : 0;
    }
    assertTrue(overlapping > 2_000 && overlapping < 18_000, "both answers drawn often: " + overlapping);
  }

  /**
   * partition() against a linear scan: random sets of disjoint ranges (cut from sorted random
   * points, so one of them wraps; sometimes a single range, the whole circle), positions at their
   * edges and at random, each placed in the one range that contains it or left out.
   */
  @Test
  void partition_placesEachPositionInTheRangeThatContainsIt_theWrappingOneIncluded() {
    SplittableRandom random = new SplittableRandom(13);
    for (int round = 0; round < 300; round++) {
      long[] cuts = random.longs(1 + random.nextInt(8)).sorted().toArray();
      List<KeyRange> ranges = new ArrayList<>();
      for (int i = 0; i < cuts.length; i++) {
        KeyRange r = new KeyRange(cuts[i], cuts[(i + 1) % cuts.length]); // the last one wraps
        if (cuts.length == 1 || random.nextInt(3) > 0) { // leave some gaps
          ranges.add(r);
        }
      }
      List<Long> positions = new ArrayList<>();
      for (long c : cuts) {
        positions.addAll(List.of(c, c + 1, c - 1));
      }
      positions.addAll(List.of(Long.MIN_VALUE, Long.MAX_VALUE, 0L));
      random.longs(50).forEach(positions::add);
      Map<KeyRange, List<Long>> got = KeyRange.partition(ranges, r -> r, positions, p -> p);
      Map<KeyRange, List<Long>> expected = firstContaining(ranges, positions);
      assertEquals(expected, new LinkedHashMap<>(got), () -> ranges.toString());
      assertEquals(ranges.stream().filter(expected::containsKey).toList(), List.copyOf(got.keySet()),
          "in the order of the ranges given");
    }
  }

  /**
   * Ranges that overlap (the lost ranges of several diffs, say): each position goes to the first
   * range in the list that contains it, never left out because the search met another range first.
   */
  @Test
  void partition_overlappingRanges_placesEachPositionInTheFirstRangeThatContainsIt() {
    Map<KeyRange, List<Long>> small = KeyRange.partition(List.of(new KeyRange(0, 10), new KeyRange(-100, 20)),
        r -> r, List.of(-50L, 5L, 15L, 30L), p -> p);
    assertEquals(Map.of(new KeyRange(0, 10), List.of(5L), new KeyRange(-100, 20), List.of(-50L, 15L)), small);
    SplittableRandom random = new SplittableRandom(14);
    for (int round = 0; round < 300; round++) {
      List<KeyRange> ranges = new ArrayList<>();
      for (int i = 1 + random.nextInt(6); i > 0; i--) {
        long start = random.nextLong();
        ranges.add(new KeyRange(start, random.nextBoolean() ? random.nextLong() : start + random.nextInt(1 << 20)));
      }
      List<Long> positions = new ArrayList<>();
      for (KeyRange r : ranges) {
        positions.addAll(List.of(r.start(), r.start() + 1, r.end(), r.end() + 1));
      }
      random.longs(50).forEach(positions::add);
      Map<KeyRange, List<Long>> got = KeyRange.partition(ranges, r -> r, positions, p -> p);
      Map<KeyRange, List<Long>> expected = firstContaining(ranges, positions);
      assertEquals(expected, new LinkedHashMap<>(got), () -> ranges.toString());
    }
  }

  /** Each position under the first of {@code ranges} that contains it, by a linear scan; those in none left out. */
  private static Map<KeyRange, List<Long>> firstContaining(List<KeyRange> ranges, List<Long> positions) {
    Map<KeyRange, List<Long>> expected = new LinkedHashMap<>();
    for (long p : positions) {
      ranges.stream().filter(r -> r.contains(p)).findFirst()
          .ifPresent(r -> expected.computeIfAbsent(r, k -> new ArrayList<>()).add(p));
    }
    return expected;
  }

  /** A range as closed intervals [first, last] of unsigned offsets from Long.MIN_VALUE. */
  private static List<long[]> offsets(KeyRange r) {
    long first = r.start() - Long.MIN_VALUE + 1; // (start, end]: the position after start
    long last = r.end() - Long.MIN_VALUE;
    if (r.isFull()) {
      return List.of(new long[] {0, -1L});
    }
    if (r.start() < r.end()) {
      return List.of(new long[] {first, last});
    }
    List<long[]> parts = new ArrayList<>();
    if (r.start() != Long.MAX_VALUE) {
      parts.add(new long[] {first, -1L}); // up to Long.MAX_VALUE, the largest offset
    }
    parts.add(new long[] {0, last});
    return parts;
  }

  /**
   * wraps() is true exactly for the ranges that hold Long.MIN_VALUE, which a store ordered by
   * position cannot read in one scan from start to end: ends near the wrap and at random.
   */
  @Test
  void wraps_isTrueExactlyWhenTheRangeHoldsMinValue() {
    SplittableRandom random = new SplittableRandom(15);
    long[] near = {Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, 1, Long.MAX_VALUE - 1, Long.MAX_VALUE};
    LongSupplier end =
        () -> random.nextBoolean() ? random.nextLong() : near[random.nextInt(near.length)];
    int wrapping = 0;
    for (int i = 0; i < 10_000; i++) {
      KeyRange r = new KeyRange(end.getAsLong(), end.getAsLong());
      assertEquals(r.contains(Long.MIN_VALUE), r.wraps(), r::toString);
      wrapping += r.wraps() ? 1 : 0;
    }
    assertTrue(wrapping > 2_000 && wrapping < 8_000, "both answers drawn often: " + wrapping);
  }

  @Test
  void toString_isTheHalfOpenInterval() {
    assertEquals("(-5, 7]", new KeyRange(-5, 7).toString());
    assertEquals("(" + Long.MAX_VALUE + ", " + Long.MIN_VALUE + "]",
        new KeyRange(Long.MAX_VALUE, Long.MIN_VALUE).toString());
  }

  @Test
  void fraction_isTheRangeSizeOver2To64_roundedOnce() {
    // Sizes where halving first and rounding twice is off by one unit in the last place
    // (2^54 + 3 and 2^63 + 2^11 + 3), then random sizes of every magnitude, both signs.
    List<Long> sizes = new ArrayList<>(List.of(0x40_0000_0000_0003L, Long.MIN_VALUE + 0x803L, 1L, -1L, Long.MAX_VALUE));
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 10_000; i++) {
      sizes.add(random.nextLong() >>> random.nextInt(64));
    }
    BigDecimal circle = new BigDecimal(BigInteger.ONE.shiftLeft(64));
    for (long size : sizes) {
      BigInteger unsigned = new BigInteger(Long.toUnsignedString(size));
      double exact = new BigDecimal(unsigned).divide(circle).doubleValue();
      KeyRange range = new KeyRange(17, 17 + size);
      assertEquals(size == 0 ? 1.0 : exact, range.fraction(), () -> "size " + Long.toUnsignedString(size));
    }
  }
}
