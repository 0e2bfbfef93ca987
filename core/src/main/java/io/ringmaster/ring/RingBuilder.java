package io.ringmaster.ring;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Builds the token arrays of a {@link HashRing}: from scratch, or from a previous ring by keeping
 * the tokens of the members that stay (already sorted) and merging in the sorted tokens of each
 * new member. Runs are merged pairwise, so a build costs {@code O(T log runs)}, and a ring plus
 * one member is a single merge pass.
 */
final class RingBuilder {
  private RingBuilder() {}

  static HashRing build(int virtualNodes, HashRing.TokenFunction fn, HashRing base,
                        Collection<Member> next) {
    if (base != null && base.virtualNodes() != virtualNodes) {
      // Kept tokens are counted from the members' weights and this virtualNodes.
      throw new IllegalArgumentException("a ring with virtualNodes " + base.virtualNodes()
          + " cannot be the base of one with " + virtualNodes);
    }
    Member[] members = sortedById(next);
    if (members.length > HashRing.MAX_MEMBERS) {
      throw new IllegalArgumentException("a ring holds at most " + HashRing.MAX_MEMBERS + " members: "
          + members.length);
    }

    // Old member index -> new index, for members kept unchanged (same id, weight and zone).
    int[] remap = null;
    int kept = 0;
    boolean[] reused = new boolean[members.length];
    if (base != null) {
      Member[] old = base.memberArray();
      remap = new int[old.length];
      Arrays.fill(remap, -1);
      for (int o = 0, m = 0; o < old.length && m < members.length; ) {
        int c = compareIds(old[o].id(), members[m].id());
        if (c == 0) {
          if (old[o].equals(members[m])) {
            remap[o] = m;
            reused[m] = true;
          }
          o++;
          m++;
        } else if (c < 0) {
          o++;
        } else {
          m++;
        }
      }
      for (int o = 0; o < old.length; o++) {
        if (remap[o] >= 0) {
          kept += tokenCount(old[o], virtualNodes); // what base holds of it: its count is a function of weight
        }
      }
    }

    // The new members' tokens: hashed, each member's run sorted, runs merged pairwise.
    long fresh = 0;
    int[] counts = new int[members.length];
    for (int m = 0; m < members.length; m++) {
      if (!reused[m]) {
        counts[m] = tokenCount(members[m], virtualNodes);
        fresh += counts[m];
      }
    }
    if (kept + fresh > HashRing.MAX_TOKENS) {
      throw new IllegalArgumentException("ring would have " + (kept + fresh) + " tokens, more than "
          + HashRing.MAX_TOKENS + ": lower virtualNodes (" + virtualNodes + ") or the weights");
    }
    long[] newTokens = new long[(int) fresh];
    int[] newOwners = new int[(int) fresh];
    List<Integer> runStarts = new ArrayList<>();
    int t = 0;
    for (int m = 0; m < members.length; m++) {
      if (counts[m] == 0) {
        continue;
      }
      runStarts.add(t);
      int from = t;
      for (int i = 0; i < counts[m]; i++) {
        newTokens[t] = fn.token(members[m], i);
        newOwners[t++] = m;
      }
      // Equal tokens of one member are interchangeable, so a plain sort orders the run.
      Arrays.sort(newTokens, from, t);
    }
    mergeRuns(newTokens, newOwners, runStarts);

    // One pass: the kept tokens (already in order) merged with the new ones, into the final arrays.
    int total = (int) (kept + fresh);
    int[] hi = new int[total];
    int[] lo = new int[total];
    char[] owner = new char[total];
    int baseSize = base == null ? 0 : base.tokenCount();
    if (baseSize > 0 && kept == baseSize) {
      insertInto(base, remap, newTokens, newOwners, hi, lo, owner);
      return HashRing.assemble(virtualNodes, fn, members, hi, lo, owner);
    }
    int i = 0;
    int j = 0;
    for (int d = 0; d < total; d++) {
      int keptOwner = -1;
      long keptToken = 0;
      while (i < baseSize && (keptOwner = remap[base.ownerIndex(i)]) < 0) {
        i++;
      }
      if (i < baseSize) {
        keptToken = base.token(i);
      }
      boolean takeKept = i < baseSize && (j >= newTokens.length || keptToken < newTokens[j]
          || (keptToken == newTokens[j] && keptOwner < newOwners[j]));
      long token;
      int o;
      if (takeKept) {
        token = keptToken;
        o = keptOwner;
        i++;
      } else {
        token = newTokens[j];
        o = newOwners[j++];
      }
      hi[d] = (int) (token >> 32);
      lo[d] = (int) token;
      owner[d] = (char) o;
    }
    return HashRing.assemble(virtualNodes, fn, members, hi, lo, owner);
  }

  /**
   * The merge when every token of {@code base} stays (members only joined): each new token's
   * place is found by a lookup, and the runs of kept tokens between them are block copies. A
   * member joining a ring of a million tokens inserts about a thousand, so this copies runs of
   * about a thousand instead of comparing every token.
   */
  private static void insertInto(HashRing base, int[] remap, long[] newTokens, int[] newOwners, int[] hi, int[] lo,
                                 char[] owner) {
    int[] baseHi = base.hiArray();
    int[] baseLo = base.loArray();
    int n = base.tokenCount();
    int i = 0;
    int d = 0;
    for (int j = 0; j <= newTokens.length; j++) {
      int until = n;
      if (j < newTokens.length) {
        long t = newTokens[j];
        until = Math.max(i, base.insertionPoint(t));
        // Equal tokens are ordered by owner index: kept ones with a smaller index go first.
        while (until < n && base.token(until) == t && remap[base.ownerIndex(until)] < newOwners[j]) {
          until++;
        }
      }
      int run = until - i;
      System.arraycopy(baseHi, i, hi, d, run);
      System.arraycopy(baseLo, i, lo, d, run);
      for (int k = 0; k < run; k++) {
        owner[d + k] = (char) remap[base.ownerIndex(i + k)];
      }
      i = until;
      d += run;
      if (j < newTokens.length) {
        hi[d] = (int) (newTokens[j] >> 32);
        lo[d] = (int) newTokens[j];
        owner[d++] = (char) newOwners[j];
      }
    }
  }

  /** {@link Member#tokenCount}, checked against {@link HashRing#MAX_TOKENS_PER_MEMBER}. */
  static int tokenCount(Member m, int virtualNodes) {
    long n = Member.tokenCount(virtualNodes, m.weight());
    if (n > HashRing.MAX_TOKENS_PER_MEMBER) {
      // Past 2^63, Math.round gives Long.MAX_VALUE: say the product instead (which itself
      // overflows to Infinity for a weight near Double.MAX_VALUE).
      double product = virtualNodes * m.weight();
      String count = n < Long.MAX_VALUE ? Long.toString(n)
          : Double.isInfinite(product) ? "more than 2^1023" : "about " + product;
      throw new IllegalArgumentException("member " + Member.quote(m.id()) + " would get " + count
          + " tokens (virtualNodes " + virtualNodes + " * weight " + m.weight() + "), more than "
          + HashRing.MAX_TOKENS_PER_MEMBER);
    }
    return (int) n;
  }

  private static Member[] sortedById(Collection<Member> next) {
    Member[] members = next.toArray(new Member[0]);
    Set<String> seen = new HashSet<>();
    for (Member m : members) {
      if (m == null) {
        throw new IllegalArgumentException("member must not be null");
      }
      if (!seen.add(m.id())) {
        throw new IllegalArgumentException("duplicate member id: " + Member.quote(m.id()));
      }
    }
    Arrays.sort(members, (a, b) -> compareIds(a.id(), b.id()));
    return members;
  }

  /** Member ids in the spec's order: UTF-8 bytes compared unsigned, lexicographically. */
  static int compareIds(String a, String b) {
    return Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  /** Merges sorted runs pairwise into one run ordered by (token, owner index). */
  private static void mergeRuns(long[] tokens, int[] owner, List<Integer> starts) {
    int n = tokens.length;
    if (starts.size() <= 1) {
      return;
    }
    long[] tokTmp = new long[n];
    int[] ownTmp = new int[n];
    long[] srcT = tokens;
    int[] srcO = owner;
    long[] dstT = tokTmp;
    int[] dstO = ownTmp;
    List<Integer> runs = new ArrayList<>(starts);
    while (runs.size() > 1) {
      List<Integer> merged = new ArrayList<>((runs.size() + 1) / 2);
      for (int r = 0; r < runs.size(); r += 2) {
        int lo = runs.get(r);
        int mid = r + 1 < runs.size() ? runs.get(r + 1) : n;
        int hi = r + 2 < runs.size() ? runs.get(r + 2) : n;
        merged.add(lo);
        int a = lo;
        int b = mid;
        int d = lo;
        while (a < mid && b < hi) {
          if (srcT[a] < srcT[b] || (srcT[a] == srcT[b] && srcO[a] <= srcO[b])) {
            dstT[d] = srcT[a];
            dstO[d++] = srcO[a++];
          } else {
            dstT[d] = srcT[b];
            dstO[d++] = srcO[b++];
          }
        }
        System.arraycopy(srcT, a, dstT, d, mid - a);
        System.arraycopy(srcO, a, dstO, d, mid - a);
        d += mid - a;
        System.arraycopy(srcT, b, dstT, d, hi - b);
        System.arraycopy(srcO, b, dstO, d, hi - b);
      }
      runs = merged;
      long[] st = srcT;
      srcT = dstT;
      dstT = st;
      int[] so = srcO;
      srcO = dstO;
      dstO = so;
    }
    if (srcT != tokens) {
      System.arraycopy(srcT, 0, tokens, 0, n);
      System.arraycopy(srcO, 0, owner, 0, n);
    }
  }
}
