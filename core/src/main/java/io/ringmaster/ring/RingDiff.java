package io.ringmaster.ring;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What one member gained, lost, and changed role on between two rings, for a replica count.
 *
 * <ul>
 *   <li>{@link #gained()}: ranges where the member is among the new owners but was not among the
 *       old ones; each names the old owners ({@link Gained#sources()}), where the data is now;
 *   <li>{@link #lost()}: ranges where the member was among the old owners and is not among the new
 *       ones; each names the new owners ({@link Lost#destinations()}), where the data must go;
 *   <li>{@link #roleChanges()}: ranges the member keeps but as primary instead of backup, or the
 *       other way round (a backup that only moves along the owners, second to third say, keeps
 *       its role: no change).
 * </ul>
 * Adjacent ranges with the same sources (destinations, roles) are merged, also across the wrap;
 * nothing that did not change is reported, so a member whose ownership is the same in both rings
 * gets an {@linkplain #isEmpty() empty} diff. Each list is in ring order, and no position is in
 * two of the three lists: a key the member gained has no role change, one it lost none either.
 *
 * <p>The diff is computed by one merge of the two token arrays. Only the segments whose replica
 * walk can reach one of the member's tokens are examined (found by walking back from each of its
 * tokens), so the cost is one pass over the tokens plus, for each segment examined, a replica
 * walk in each ring: a few steps each when every zone holds a fair share of the ring, but up to
 * about half the ring's tokens each when {@code replicas > 1}, there are no more zones than
 * replicas, and one holds only a handful of tokens (see {@link HashRing#owners(String, int)}).
 *
 * @param memberId    the member the diff is about
 * @param replicas    the replica count the owners were computed for
 * @param gained      non-null, may be empty
 * @param lost        non-null, may be empty
 * @param roleChanges non-null, may be empty
 */
public record RingDiff(String memberId, int replicas, List<Gained> gained, List<Lost> lost,
                       List<RoleChange> roleChanges) {

  /** A member's role for a range: the first owner, or one of the others. */
  public enum Role {
    /** The first of a key's owners. */
    PRIMARY,
    /** One of the other {@code replicas - 1} owners. */
    BACKUP
  }

  /**
   * A range the member now owns, the owners it had before ({@code sources}), and its new role.
   * {@code sources} is the range's owners in the old ring, in replica order (primary first), as
   * {@link HashRing#owners(String, int)} gives them; empty when the old ring has no tokens (the
   * first member of a cluster).
   */
  public record Gained(KeyRange range, List<Member> sources, Role role) {
    /**
     * Copies {@code sources}, so that a gain is immutable.
     *
     * @throws NullPointerException if an argument or one of the sources is null
     */
    public Gained {
      Objects.requireNonNull(range, "range");
      sources = List.copyOf(sources);
      Objects.requireNonNull(role, "role");
    }
  }

  /**
   * A range the member no longer owns, its owners now ({@code destinations}), and its old role.
   * {@code destinations} is the range's owners in the new ring, in replica order (primary first);
   * with {@code replicas > 1} it includes owners that already held the range before (compare with
   * the old ring's owners to find the ones that are new); empty when the new ring has no tokens
   * (the last member leaving).
   */
  public record Lost(KeyRange range, List<Member> destinations, Role role) {
    /**
     * Copies {@code destinations}, so that a loss is immutable.
     *
     * @throws NullPointerException if an argument or one of the destinations is null
     */
    public Lost {
      Objects.requireNonNull(range, "range");
      destinations = List.copyOf(destinations);
      Objects.requireNonNull(role, "role");
    }
  }

  /**
   * A range the member keeps, with its role before and after. Ranges are merged by the two roles
   * alone, so the range's other owners (the new primary among them, when the member becomes a
   * backup) can differ from key to key within it: {@link HashRing#owners(String, int)} of the old
   * and the new ring give them, per key.
   */
  public record RoleChange(KeyRange range, Role before, Role after) {
    /** @throws NullPointerException if an argument is null */
    public RoleChange {
      Objects.requireNonNull(range, "range");
      Objects.requireNonNull(before, "before");
      Objects.requireNonNull(after, "after");
    }
  }

  /**
   * Copies the three lists, so a diff is immutable.
   *
   * @throws NullPointerException if an argument or an element of a list is null
   * @throws IllegalArgumentException if {@code replicas < 1}
   */
  public RingDiff {
    Objects.requireNonNull(memberId, "memberId");
    if (replicas < 1) {
      throw new IllegalArgumentException("replica count must be at least 1: " + replicas);
    }
    gained = List.copyOf(gained);
    lost = List.copyOf(lost);
    roleChanges = List.copyOf(roleChanges);
  }

  /** Whether nothing changed for the member. */
  public boolean isEmpty() {
    return gained.isEmpty() && lost.isEmpty() && roleChanges.isEmpty();
  }

  /**
   * The member's change of ownership from {@code before} to {@code after}, for keys kept on
   * {@code replicas} owners.
   *
   * @throws IllegalArgumentException if {@code replicas < 1}
   */
  public static RingDiff compute(HashRing before, HashRing after, String memberId, int replicas) {
    return compute(before, true, after, true, memberId, replicas);
  }

  /**
   * As {@link #compute(HashRing, HashRing, String, int)}, for a member that may not be the holder
   * of its id in one of the rings: when {@code heldBefore} is false, the tokens of
   * {@code memberId} in {@code before} belong to another member announcing the same id, so this
   * member owned nothing there, and the owners it gains from name that member by the id; likewise
   * {@code heldAfter}. A cluster node whose id is refused because another member holds it (after
   * a merge) loses everything, and the destinations name the id's holder where the ring gives it
   * the keys.
   *
   * @throws IllegalArgumentException if {@code replicas < 1}
   */
  public static RingDiff compute(HashRing before, boolean heldBefore, HashRing after, boolean heldAfter,
                                 String memberId, int replicas) {
    Objects.requireNonNull(before, "before");
    Objects.requireNonNull(after, "after");
    Objects.requireNonNull(memberId, "memberId");
    if (replicas < 1) {
      throw new IllegalArgumentException("replica count must be at least 1: " + replicas);
    }
    return new Computation(before, heldBefore ? before.indexOf(memberId) : -1,
        after, heldAfter ? after.indexOf(memberId) : -1, memberId, replicas).run();
  }

  /** The state of one merge; package-private for nothing but readability. */
  private static final class Computation {
    private final HashRing before;
    private final HashRing after;
    private final String memberId;
    private final int replicas;
    /** Owners a walk of each ring looks for: {@link #replicas}, at most that ring's members with tokens. */
    private final int wantBefore;
    private final int wantAfter;
    private final int mb;
    private final int ma;
    private final int[] ownersBefore;
    private final int[] ownersAfter;
    private final List<Pending> gained = new ArrayList<>();
    private final List<Pending> lost = new ArrayList<>();
    private final List<Pending> roles = new ArrayList<>();

    /**
     * {@code mb} and {@code ma}: the member's index in each ring, or -1 where it is not in it (or
     * does not hold its id).
     */
    Computation(HashRing before, int mb, HashRing after, int ma, String memberId, int replicas) {
      this.before = before;
      this.after = after;
      this.memberId = memberId;
      this.replicas = replicas;
      this.mb = mb;
      this.ma = ma;
      // No walk finds more owners than its ring has members with tokens: more replicas change
      // nothing but the work (a walk that goes all the way round for each segment, V^2 in all
      // when one member joins a ring of one with two replicas). Capped ring by ring.
      this.wantBefore = Math.min(replicas, before.membersWithTokens());
      this.wantAfter = Math.min(replicas, after.membersWithTokens());
      this.ownersBefore = new int[wantBefore];
      this.ownersAfter = new int[wantAfter];
    }

    RingDiff run() {
      long[] candBefore = candidates(before, mb, wantBefore);
      long[] candAfter = candidates(after, ma, wantAfter);
      int nb = before.tokenCount();
      int na = after.tokenCount();
      if ((candBefore == null && candAfter == null) || (nb == 0 && na == 0)) {
        return finish();
      }
      // A member with tokens in a ring whose walks take every member with tokens owns every
      // position there, primary where the segment's token is its own: no walk of that ring is
      // needed (nor its owners: no range is gained from it or lost in it). Such a walk passes
      // about N ln N tokens; made for every segment, it took seconds at 100 members.
      boolean everywhereBefore = candBefore != null && wantBefore == before.membersWithTokens();
      boolean everywhereAfter = candAfter != null && wantAfter == after.membersWithTokens();
      // Elementary segments end at every token of either ring; the first one starts at the last.
      long prev = Math.max(nb == 0 ? Long.MIN_VALUE : before.token(nb - 1),
          na == 0 ? Long.MIN_VALUE : after.token(na - 1));
      int i = 0;
      int j = 0;
      while (i < nb || j < na) {
        long bi = i < nb ? before.token(i) : 0;
        long aj = j < na ? after.token(j) : 0;
        long v = i < nb && (j >= na || bi <= aj) ? bi : aj;
        int ib = i < nb ? i : 0;
        int ja = j < na ? j : 0;
        boolean candidate = (candBefore != null && isSet(candBefore, ib))
            || (candAfter != null && isSet(candAfter, ja));
        if (candidate) {
          int cb = nb == 0 || everywhereBefore ? 0 : before.walk(ib, wantBefore, ownersBefore);
          int ca = na == 0 || everywhereAfter ? 0 : after.walk(ja, wantAfter, ownersAfter);
          int posBefore = everywhereBefore ? (before.ownerIndex(ib) == mb ? 0 : 1) : position(ownersBefore, cb, mb);
          int posAfter = everywhereAfter ? (after.ownerIndex(ja) == ma ? 0 : 1) : position(ownersAfter, ca, ma);
          classify(new KeyRange(prev, v), posBefore, cb, posAfter, ca);
        } else if (i < nb && j < na) {
          // Skip ahead to just before the next candidate segment of either ring (or its last
          // token, after which segments wrap to index 0): every segment in between has
          // non-candidate indices in both rings, so nothing changed there for this member.
          int k = Math.min(nextSet(candBefore, i + 1), nb);
          int l = Math.min(nextSet(candAfter, j + 1), na);
          long q = Math.min(before.token(k - 1), after.token(l - 1));
          if (q > v) {
            prev = q;
            i = upperBound(before, i, q);
            j = upperBound(after, j, q);
            continue;
          }
        }
        prev = v;
        while (i < nb && before.token(i) == v) {
          i++;
        }
        while (j < na && after.token(j) == v) {
          j++;
        }
      }
      return finish();
    }

    /**
     * Records what the segment changes for the member, from its place in each ring's walk
     * ({@code posBefore}, {@code posAfter}: 0 primary, above 0 backup, -1 not an owner) and the
     * owners each walk found ({@code cb}, {@code ca} of them; those of a ring not walked are never read).
     */
    private void classify(KeyRange segment, int posBefore, int cb, int posAfter, int ca) {
      if (posBefore < 0 && posAfter >= 0) {
        append(gained, segment, Arrays.copyOf(ownersBefore, cb), role(posAfter), null);
      } else if (posBefore >= 0 && posAfter < 0) {
        append(lost, segment, Arrays.copyOf(ownersAfter, ca), role(posBefore), null);
      } else if (posBefore >= 0 && role(posBefore) != role(posAfter)) {
        append(roles, segment, null, role(posBefore), role(posAfter));
      }
    }

    private static void append(List<Pending> list, KeyRange segment, int[] members, Role role, Role role2) {
      if (!list.isEmpty()) {
        Pending last = list.get(list.size() - 1);
        if (last.end == segment.start() && last.sameAs(members, role, role2)) {
          last.end = segment.end();
          return;
        }
      }
      list.add(new Pending(segment.start(), segment.end(), members, role, role2));
    }

    private RingDiff finish() {
      List<Gained> g = new ArrayList<>();
      for (Pending p : closeCircle(gained)) {
        g.add(new Gained(p.range(), toMembers(before, p.members), p.role));
      }
      List<Lost> l = new ArrayList<>();
      for (Pending p : closeCircle(lost)) {
        l.add(new Lost(p.range(), toMembers(after, p.members), p.role));
      }
      List<RoleChange> r = new ArrayList<>();
      for (Pending p : closeCircle(roles)) {
        r.add(new RoleChange(p.range(), p.role, p.role2));
      }
      return new RingDiff(memberId, replicas, g, l, r);
    }

    /** Merges the last range into the first when they touch across the wrap. */
    private static List<Pending> closeCircle(List<Pending> list) {
      if (list.size() > 1) {
        Pending first = list.get(0);
        Pending last = list.get(list.size() - 1);
        if (last.end == first.start && first.sameAs(last.members, last.role, last.role2)) {
          first.start = last.start;
          list.remove(list.size() - 1);
        }
      }
      return list;
    }

    private static List<Member> toMembers(HashRing ring, int[] indices) {
      Member[] all = ring.memberArray();
      Member[] out = new Member[indices.length];
      for (int k = 0; k < indices.length; k++) {
        out[k] = all[indices[k]];
      }
      return List.of(out);
    }
  }

  /** A range being coalesced. */
  private static final class Pending {
    long start;
    long end;
    final int[] members;
    final Role role;
    final Role role2;

    Pending(long start, long end, int[] members, Role role, Role role2) {
      this.start = start;
      this.end = end;
      this.members = members;
      this.role = role;
      this.role2 = role2;
    }

    boolean sameAs(int[] otherMembers, Role otherRole, Role otherRole2) {
      return role == otherRole && role2 == otherRole2 && Arrays.equals(members, otherMembers);
    }

    KeyRange range() {
      return new KeyRange(start, end);
    }
  }

  private static Role role(int position) {
    return position == 0 ? Role.PRIMARY : Role.BACKUP;
  }

  private static int position(int[] owners, int count, int member) {
    for (int k = 0; k < count; k++) {
      if (owners[k] == member) {
        return k;
      }
    }
    return -1;
  }

  /**
   * The token indices of {@code ring} whose replica walk may include member {@code m}, as a bit
   * set; null if it has no tokens. Walking back from each of m's tokens over the interval
   * {@code [k, j)} before it: the walk from k can reach m at j only if that interval holds fewer
   * than {@code n} distinct members (second turn), or fewer than {@code n} distinct zones and not
   * m's zone (first turn). Both only grow as k moves back, so the scan stops at the first k that
   * fails them. This is a necessary condition; the merge computes the exact owners.
   */
  static long[] candidates(HashRing ring, int m, int n) {
    if (m < 0) {
      return null;
    }
    int size = ring.tokenCount();
    long[] bits = null;
    int[] seenMembers = new int[n];
    int[] seenZones = new int[n];
    int[] zoneOf = ring.zoneOf;
    int zoneM = zoneOf[m];
    for (int j = 0; j < size; j++) {
      if (ring.ownerIndex(j) != m) {
        continue;
      }
      if (bits == null) {
        bits = new long[(size + 63) >>> 6];
      }
      bits[j >>> 6] |= 1L << j;
      int members = 0;
      int zoneCount = 0;
      boolean zoneMSeen = false;
      for (int s = 1, k = j == 0 ? size - 1 : j - 1; s < size; s++, k = k == 0 ? size - 1 : k - 1) {
        int o = ring.ownerIndex(k);
        if (o == m) {
          break;
        }
        if (members < n && indexIn(seenMembers, members, o) < 0) {
          seenMembers[members++] = o;
        }
        int z = zoneOf[o];
        zoneMSeen |= z == zoneM;
        if (zoneCount < n && indexIn(seenZones, zoneCount, z) < 0) {
          seenZones[zoneCount++] = z;
        }
        if (members >= n && (zoneMSeen || zoneCount >= n)) {
          break;
        }
        bits[k >>> 6] |= 1L << k;
      }
    }
    return bits;
  }

  private static int indexIn(int[] values, int count, int v) {
    for (int k = 0; k < count; k++) {
      if (values[k] == v) {
        return k;
      }
    }
    return -1;
  }

  /** The first set bit at or after {@code from}, or {@code Integer.MAX_VALUE}; none for a null set. */
  private static int nextSet(long[] bits, int from) {
    if (bits == null) {
      return Integer.MAX_VALUE;
    }
    int word = from >>> 6;
    if (word >= bits.length) {
      return Integer.MAX_VALUE;
    }
    long w = bits[word] & (-1L << from);
    while (true) {
      if (w != 0) {
        return (word << 6) + Long.numberOfTrailingZeros(w);
      }
      if (++word == bits.length) {
        return Integer.MAX_VALUE;
      }
      w = bits[word];
    }
  }

  /** The first token index at or after {@code from} whose token is greater than {@code q}. */
  private static int upperBound(HashRing ring, int from, long q) {
    int lo = from;
    int hi = ring.tokenCount();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (ring.token(mid) <= q) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  private static boolean isSet(long[] bits, int i) {
    return (bits[i >>> 6] & (1L << i)) != 0;
  }
}
