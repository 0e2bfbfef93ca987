package io.ringmaster.ring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * An immutable consistent-hash ring with virtual nodes, as specified in {@code docs/ring-spec.md}.
 *
 * <p>Every member gets {@code Math.round(virtualNodes * weight)} tokens on a circle of 2<sup>64</sup>
 * positions; a key belongs to the member of the first token at or after the key's position,
 * wrapping around. Any JVM that builds a ring from the same members and {@code virtualNodes}
 * computes the same owner for every key, whatever order the members were added in, and
 * {@link #checksum()} says so in one number.
 *
 * <pre>{@code
 * HashRing ring = HashRing.builder()
 *     .virtualNodes(256)
 *     .add(Member.of("cache-a"))
 *     .add(new Member("cache-b", 2.0, "rack-2"))   // twice the keys of cache-a
 *     .build();
 * Member owner = ring.ownerOf("user:42");
 * List<Member> replicas = ring.owners("user:42", 2); // primary first, distinct zones first
 * HashRing bigger = ring.with(Member.of("cache-c"));  // only keys that now belong to cache-c move
 * }</pre>
 *
 * <h2>Costs, and when to raise {@code virtualNodes}</h2>
 * A lookup hashes the key (MurmurHash3: 9-14 ns for keys like {@code user:123456} on the machine
 * of {@code docs/performance.md}), reads two adjacent slots of a bucket index, then compares the
 * key with the fingerprints of up to eight
 * tokens at once, in four 8-byte reads of the 4-byte entries that also hold each token's owner,
 * without a branch: two dependent reads that stay in cache for small rings and cost up to two
 * cache misses for a ring of a quarter of a million tokens. It takes no lock and allocates
 * nothing. The price of balance is memory and build time: about 13-14 bytes and one hash per
 * token, and {@code members * virtualNodes} tokens. A member's share of the keys typically
 * deviates from the mean by about {@code 1/sqrt(virtualNodes)}, and the most loaded of many
 * members by two to three times that (at 1024, 5-10% over the mean for 100 members); raise
 * {@code virtualNodes} when the most loaded member matters more than memory
 * ({@code docs/performance.md} has the measured trade-off). It
 * does not help with hot keys: one key always has one primary.
 *
 * <p>When to use something else: if buckets are numbered 0..n-1, only the last one ever leaves and
 * nothing needs names, weights or zones, a jump hash (Guava's {@code Hashing.consistentHash})
 * needs no memory and no rebuild, at the price of a loop of about {@code ln n} steps per lookup.
 */
public final class HashRing {

  /** The version of the ring specification this class implements; part of {@link #checksum()}. */
  public static final int SPEC_VERSION = 1;

  /** Upper bound on members: a token's owner is stored in 16 bits to keep lookups in cache. */
  public static final int MAX_MEMBERS = 65_535;

  /** Upper bound on one member's tokens, so a typo in a weight fails instead of filling the heap. */
  public static final int MAX_TOKENS_PER_MEMBER = 1 << 24;

  /** Upper bound on a ring's tokens: their 4-byte lookup entries must fit in one Java array. */
  public static final int MAX_TOKENS = (1 << 29) - 16;

  /** The spec's token function: {@code hash(id + "#" + i)}. Tests substitute it to force ties. */
  interface TokenFunction {
    long token(Member member, int index);
  }

  static final TokenFunction SPEC_TOKENS = (m, i) -> Murmur3.hash(m.id() + "#" + i);

  private final int virtualNodes;
  private final TokenFunction tokenFunction;
  /** Sorted by id (UTF-8 bytes, unsigned), so a member's index orders ties between tokens. */
  private final Member[] members;
  private final Map<String, Integer> indexOfId;
  /** Zone of each member as a small integer, for the replica walk. */
  final int[] zoneOf;
  /** Distinct zones, of members with tokens or not. */
  private final int zoneCount;
  /** Distinct zones, and members, that hold at least one token. */
  private final int tokenZones;
  private final int tokenMembers;
  /**
   * The tokens, sorted as signed longs (ties ordered by owner index, which is id order), in
   * halves. A lookup reads them only when the key's fingerprint equals a token's, or when the key
   * is past the first {@link #WINDOW} tokens of a larger bucket (see {@link #slot(long)}); walks,
   * diffs and ranges read them through {@link #token(int)}.
   */
  private final int[] hi;
  private final int[] lo;
  /**
   * The lookup entries, 4 bytes a token, little-endian: token {@code i}'s entry, at byte
   * {@code 4i}, holds in its low 16 bits the index in {@link #members} of its owner and above
   * them its fingerprint, the {@link #FINGERPRINT_BITS} bits of its position that follow the
   * bucket bits, and bit 31 set ({@link #ENTRY_TOP}). Within a bucket, fingerprints ascend with
   * the tokens, so a lookup compares the key with a bucket's first {@link #WINDOW} tokens in four
   * 8-byte reads and finds the owner in the same cache line, or the next. Entry {@code count}
   * holds token 0's owner (the owner of positions after the last token), and zero entries follow
   * it up to {@code count + WINDOW}, so that those reads need no bounds check of their own.
   */
  private final byte[] entries;
  /**
   * {@code bucketStart[b]} is the first token whose top bits (of the position with its sign bit
   * flipped, so unsigned order is signed order) are at least {@code b}; {@code bucketStart[buckets]}
   * is the token count. A lookup compares the entries from {@code bucketStart[b]} to
   * {@code bucketStart[b + 1]}.
   */
  private final int[] bucketStart;
  /** {@code 64 - bucketBits}: a position's bucket is its top {@code bucketBits} (unsigned) bits. */
  private final int shift;
  private final int bucketBits;
  /** Replica counts whose walk {@link #isOwnerOfPosition} records in {@link #WALK_SCRATCH}. */
  static final int WALK_SCRATCH_SIZE = 256;
  /**
   * Each thread's room for a walk's picks (1 KB, taken on its first {@link #isOwnerOfPosition} that
   * asks for more than one owner).
   */
  private static final ThreadLocal<int[]> WALK_SCRATCH = ThreadLocal.withInitial(() -> new int[WALK_SCRATCH_SIZE]);
  /** Each member's share, computed on first use: only {@link #share(String)} needs it. */
  private volatile double[] shares;
  private final long checksum;

  /**
   * Fingerprints a lookup compares at once; a key past the first WINDOW tokens of a larger bucket
   * (rare) is found by comparing whole tokens.
   */
  private static final int WINDOW = 8;
  /**
   * Bits of a fingerprint: with the owner's 16 below them, they leave the top bit of an entry for
   * {@link #ENTRY_TOP}.
   */
  private static final int FINGERPRINT_BITS = 15;
  /** Reads two entries at any byte offset, as one little-endian long. */
  private static final VarHandle PAIR =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  /** Reads or writes one entry. */
  private static final VarHandle ENTRY =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  /**
   * Set in every token's entry, so that a pair minus the key never borrows from one entry into
   * the next (the zero padding after entry {@code count} is masked off wherever it is read).
   */
  private static final int ENTRY_TOP = 0x8000_0000;
  private static final int FINGERPRINT_MASK = (1 << FINGERPRINT_BITS) - 1;
  /**
   * {@code BUCKET_TOPS[4 * n + k]}: the top bits of the entries of pair {@code k} (entries
   * {@code 2k} and {@code 2k + 1} of a window) that are among a bucket's first {@code n} tokens;
   * a lookup uses {@code n = min(bucket size, WINDOW)}.
   */
  private static final long[] BUCKET_TOPS = new long[4 * (WINDOW + 1)];

  static {
    for (int n = 0; n <= WINDOW; n++) {
      for (int k = 0; k < 4; k++) {
        long first = 2 * k < n ? 0x8000_0000L : 0;
        long second = 2 * k + 1 < n ? 0x8000_0000_0000_0000L : 0;
        BUCKET_TOPS[4 * n + k] = first | second;
      }
    }
  }

  /**
   * @param owners each token's owner index, copied into {@link #entries}
   */
  private HashRing(int virtualNodes, TokenFunction tokenFunction, Member[] members, int[] hi, int[] lo,
                   char[] owners) {
    this.virtualNodes = virtualNodes;
    this.tokenFunction = tokenFunction;
    this.members = members;
    this.hi = hi;
    this.lo = lo;
    int count = hi.length;
    this.indexOfId = new HashMap<>(members.length * 2);
    for (int m = 0; m < members.length; m++) {
      indexOfId.put(members[m].id(), m);
    }
    this.zoneOf = new int[members.length];
    Map<String, Integer> zoneIds = new HashMap<>();
    for (int m = 0; m < members.length; m++) {
      zoneOf[m] = zoneIds.computeIfAbsent(members[m].zone(), z -> zoneIds.size());
    }
    // One pass over the tokens for the bucket index and the entries. Half to a quarter as
    // many buckets as tokens: a bucket holds 2..4 tokens on average (more than WINDOW for about 2%
    // of keys at most), and the index costs 1..2 bytes a token.
    int buckets = Math.max(2, Integer.highestOneBit(Math.max(1, count)) >> 1);
    this.bucketBits = Integer.numberOfTrailingZeros(buckets);
    this.shift = 64 - bucketBits;
    this.bucketStart = new int[buckets + 1];
    this.entries = new byte[4 * (count + WINDOW)];
    boolean[] memberHasTokens = new boolean[members.length];
    for (int t = 0; t < count; t++) {
      long token = ((long) hi[t] << 32) | (lo[t] & 0xffffffffL);
      bucketStart[bucketOf(token) + 1]++; // a count for now: summed below
      ENTRY.set(entries, 4 * t, ENTRY_TOP | (fingerprint(token) << 16) | owners[t]);
    }
    for (int m = 0; m < members.length; m++) {
      // RingBuilder gives every member exactly tokenCount(member, virtualNodes) tokens.
      memberHasTokens[m] = RingBuilder.tokenCount(members[m], virtualNodes) > 0;
    }
    for (int b = 1; b <= buckets; b++) {
      bucketStart[b] += bucketStart[b - 1];
    }
    if (count > 0) {
      ENTRY.set(entries, 4 * count, ENTRY_TOP | owners[0]);
    }
    this.zoneCount = zoneIds.size();
    boolean[] zoneHasTokens = new boolean[zoneCount];
    int withTokens = 0;
    int zonesWithTokens = 0;
    for (int m = 0; m < members.length; m++) {
      if (memberHasTokens[m]) {
        withTokens++;
        if (!zoneHasTokens[zoneOf[m]]) {
          zoneHasTokens[zoneOf[m]] = true;
          zonesWithTokens++;
        }
      }
    }
    this.tokenMembers = withTokens;
    this.tokenZones = zonesWithTokens;
    this.checksum = computeChecksum();
  }

  /** A builder for a ring; {@code virtualNodes} defaults to {@link Builder#DEFAULT_VIRTUAL_NODES}. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * The position of a key on the ring: MurmurHash3 x64-128 (seed 0) of its UTF-8 bytes, first 64
   * bits. Allocates nothing. Stores that keep entries ordered by position (signed, as the ring
   * orders tokens) can move one {@link KeyRange} with one scan, or two when it
   * {@linkplain KeyRange#wraps() wraps}.
   */
  public static long position(String key) {
    return Murmur3.hash(requireKey(key));
  }

  private static String requireKey(String key) {
    return Objects.requireNonNull(key, "key must not be null");
  }

  private static byte[] requireKey(byte[] key) {
    return Objects.requireNonNull(key, "key must not be null");
  }

  /** The position of a key given as bytes. Allocates nothing. */
  public static long position(byte[] key) {
    return Murmur3.hash(requireKey(key));
  }

  // ---------------------------------------------------------------- lookups (hot path)

  /**
   * The primary owner of a key. Lock-free and allocation-free.
   *
   * @throws IllegalStateException if the ring has no tokens (no member, or none with a token:
   *                               weight 0, or too small a weight for one)
   */
  public Member ownerOf(String key) {
    return members[ownerIndex(slot(Murmur3.hash(requireKey(key))))];
  }

  /**
   * The primary owner of a key given as bytes. Lock-free and allocation-free.
   *
   * @throws IllegalStateException if the ring has no tokens (no member, or none with a token:
   *                               weight 0, or too small a weight for one)
   */
  public Member ownerOf(byte[] key) {
    return members[ownerIndex(slot(Murmur3.hash(requireKey(key))))];
  }

  /**
   * The primary owner of a ring position ({@link #position(String)}).
   *
   * @throws IllegalStateException if the ring has no tokens (no member, or none with a token:
   *                               weight 0, or too small a weight for one)
   */
  public Member ownerOfPosition(long position) {
    return members[ownerIndex(slot(position))];
  }

  /**
   * The first {@code n} distinct owners of a key, primary first: walking clockwise from the key,
   * members in zones not yet taken first, then any member not yet taken. Fewer than {@code n}
   * when the ring has fewer members with tokens.
   *
   * <p>The walk goes on until it has seen {@code min(n, zones)} zones, so its cost follows the
   * sparsest of the zones it must find: a few tokens when every zone holds a fair share of the
   * ring, but about half the ring's tokens when a zone it must find (with no more zones than
   * {@code n}, every zone) holds only a handful (one member of very low weight alone in its zone,
   * say). Keep zones of comparable weight when {@code n > 1}.
   *
   * @throws IllegalArgumentException if {@code n < 1}
   * @throws IllegalStateException if the ring has no tokens
   */
  public List<Member> owners(String key, int n) {
    return ownersOfPosition(Murmur3.hash(requireKey(key)), n);
  }

  /** As {@link #owners(String, int)}, for a key given as bytes. */
  public List<Member> owners(byte[] key, int n) {
    return ownersOfPosition(Murmur3.hash(requireKey(key)), n);
  }

  /** As {@link #owners(String, int)}, for a ring position. */
  public List<Member> ownersOfPosition(long position, int n) {
    if (n < 1) {
      throw new IllegalArgumentException("replica count n must be at least 1: " + n);
    }
    int[] out = new int[Math.min(n, tokenMembers)];
    int count = walk(tokenIndex(position), out.length, out);
    Member[] result = new Member[count];
    for (int i = 0; i < count; i++) {
      result[i] = members[out[i]];
    }
    return Collections.unmodifiableList(Arrays.asList(result));
  }

  /**
   * Whether {@code member} is among the first {@code n} owners of a ring position (as
   * {@code ownersOfPosition(position, n).contains(member)}), without allocating: for one owner
   * ({@code n = 1}, or one member holding tokens) it compares the primary; when {@code n} covers
   * every member holding tokens, each of them owns every position; otherwise the walk's picks go
   * to a per-thread array (1 KB, made on a thread's first such call) when
   * {@code min(n, members holding tokens)} is at most {@value #WALK_SCRATCH_SIZE}, and a walk for
   * more than {@value #SCANNING_WALK_MAX} owners marks them in per-thread arrays too (a byte per
   * member of the largest ring the thread walked). False for a member that is not in the ring, or
   * is in it with another weight or zone.
   *
   * @throws NullPointerException if {@code member} is null
   * @throws IllegalArgumentException if {@code n < 1}
   * @throws IllegalStateException if the ring has no tokens
   */
  public boolean isOwnerOfPosition(long position, int n, Member member) {
    if (n < 1) {
      throw new IllegalArgumentException("replica count n must be at least 1: " + n);
    }
    Integer m = indexOfId.get(Objects.requireNonNull(member, "member").id());
    int i = tokenIndex(position); // first, so that a ring without tokens fails as a lookup does
    if (m == null || !members[m].equals(member)) {
      return false;
    }
    int want = Math.min(n, tokenMembers);
    if (want == tokenMembers) {
      return RingBuilder.tokenCount(member, virtualNodes) > 0; // every member with tokens owns every position
    }
    if (want == 1) {
      return ownerIndex(i) == m; // the walk's first pick: no room needed, not even a thread's first time
    }
    int[] out = want <= WALK_SCRATCH_SIZE ? WALK_SCRATCH.get() : new int[want];
    int count = walk(i, want, out);
    for (int q = 0; q < count; q++) {
      if (out[q] == m) {
        return true;
      }
    }
    return false;
  }

  /** Index of the first token at or after {@code p}, wrapping to 0. */
  int tokenIndex(long p) {
    int i = slot(p);
    return i == hi.length ? 0 : i;
  }

  /**
   * Index of the first token at or after {@code p}, or the token count if there is none (then
   * the entry there holds token 0's owner). Reads two adjacent bucket slots, then counts the
   * bucket's fingerprints below the key's, the first {@link #WINDOW} at once: two entries to each
   * of four 8-byte reads, compared in a register without a branch (a loop, or a branch per token,
   * would cost more than the comparisons, and a mispredicted exit stalls the next lookup too).
   * The whole tokens are read only when the key's fingerprint equals a token's, or when the key
   * is past the first WINDOW tokens of a larger bucket. Kept small (its compiled code under
   * C2's {@code InlineSmallCode}), so that the JIT inlines a lookup into its caller.
   */
  private int slot(long p) {
    if (hi.length == 0) {
      throw noTokens();
    }
    int b = bucketOf(p);
    int i = bucketStart[b];
    int n = bucketStart[b + 1] - i;
    int key = fingerprint(p);
    // An entry (its top bit set) minus the key's fingerprint shifted above the owner bits keeps
    // that bit exactly when the entry's fingerprint is at least the key's; the entries that do
    // not, among the bucket's first WINDOW, are below the key.
    byte[] e = entries;
    long keys = (long) key << 16 | (long) key << 48;
    int o = 4 * i;
    int m = 4 * Math.min(n, WINDOW);
    int below = Long.bitCount(~((long) PAIR.get(e, o) - keys) & BUCKET_TOPS[m])
        + Long.bitCount(~((long) PAIR.get(e, o + 8) - keys) & BUCKET_TOPS[m + 1])
        + Long.bitCount(~((long) PAIR.get(e, o + 16) - keys) & BUCKET_TOPS[m + 2])
        + Long.bitCount(~((long) PAIR.get(e, o + 24) - keys) & BUCKET_TOPS[m + 3]);
    i += below;
    // One rarely taken branch for both rare cases: a fingerprint tie, and a key past the first
    // WINDOW tokens of a larger bucket. "below < n" only spares the loop a visit when the match
    // is the entry just after the bucket (the loop would not move then); it comes second because
    // alone it is false for about one key in four, and a branch on it mispredicted as often.
    if ((fingerprintOf(i) == key | below == WINDOW) && below < n) {
      // Compare whole tokens up to the bucket's end. A short loop, so that the lookup stays small
      // enough for the JIT to inline it where it is called.
      int end = i + n - below;
      while (i < end && token(i) < p) {
        i++;
      }
    }
    return i;
  }

  private IllegalStateException noTokens() {
    return new IllegalStateException("the ring has no tokens: none of its " + members.length + " members has one"
        + " (weight 0, or round(virtualNodes * weight) = 0 at virtualNodes " + virtualNodes + ")");
  }

  /** The {@link #FINGERPRINT_BITS} bits of a position that follow its bucket bits. */
  private int fingerprint(long p) {
    return (int) ((p << bucketBits) >>> (64 - FINGERPRINT_BITS));
  }

  /** Token {@code i}'s fingerprint. */
  private int fingerprintOf(int i) {
    return (int) ENTRY.get(entries, 4 * i) >>> 16 & FINGERPRINT_MASK;
  }

  /**
   * Index of the first token at or after {@code p} without wrapping: the token count if every
   * token is before {@code p}. The ring must have tokens.
   */
  int insertionPoint(long p) {
    return slot(p);
  }

  /** The high halves of the tokens, not copied: for {@link RingBuilder} only. */
  int[] hiArray() {
    return hi;
  }

  /** The low halves of the tokens, not copied: for {@link RingBuilder} only. */
  int[] loArray() {
    return lo;
  }

  /** Token {@code i}, as a signed 64-bit ring position. */
  long token(int i) {
    return ((long) hi[i] << 32) | (lo[i] & 0xffffffffL);
  }

  /** The member index of token {@code i}; for {@code i} = the token count, token 0's. */
  int ownerIndex(int i) {
    return (char) (int) ENTRY.get(entries, 4 * i);
  }

  /** A copy of the tokens, for tests. */
  long[] tokenArray() {
    long[] t = new long[hi.length];
    for (int i = 0; i < t.length; i++) {
      t[i] = token(i);
    }
    return t;
  }

  private int bucketOf(long p) {
    return (int) ((p ^ Long.MIN_VALUE) >>> shift);
  }

  /** Walks for at most this many owners compare each token's owner with those taken so far. */
  static final int SCANNING_WALK_MAX = 16;

  /**
   * The replica walk from token {@code start}: fills {@code out} with up to {@code want} member
   * indices ({@code out} must have room for them), zone-distinct ones first, and returns how many
   * it found. A walk for a few owners compares each token's owner with those taken so far; one for
   * more (all the members of a ring, say, whose walk passes about {@code N ln N} tokens) marks
   * them in arrays instead, so that each token costs the same however many are taken.
   */
  int walk(int start, int want, int[] out) {
    if (want <= 0) {
      return 0;
    }
    return want <= SCANNING_WALK_MAX ? walkScanning(start, want, out) : walkMarking(start, want, out);
  }

  /** {@link #walk}, comparing each token's owner with those taken so far; package-private for a test. */
  int walkScanning(int start, int want, int[] out) {
    int n = hi.length;
    int count = 0;
    // First turn: members whose zone is not taken yet. Stops once every zone is taken.
    int zonesGoal = Math.min(want, tokenZones);
    for (int s = 0, k = start; s < n && count < zonesGoal; s++, k = (k + 1 == n) ? 0 : k + 1) {
      int m = ownerIndex(k);
      int z = zoneOf[m];
      boolean taken = false;
      for (int q = 0; q < count; q++) {
        if (zoneOf[out[q]] == z) {
          taken = true;
          break;
        }
      }
      if (!taken) {
        out[count++] = m;
      }
    }
    // Second turn: any member not taken yet.
    for (int s = 0, k = start; s < n && count < want; s++, k = (k + 1 == n) ? 0 : k + 1) {
      int m = ownerIndex(k);
      boolean taken = false;
      for (int q = 0; q < count; q++) {
        if (out[q] == m) {
          taken = true;
          break;
        }
      }
      if (!taken) {
        out[count++] = m;
      }
    }
    return count;
  }

  /**
   * {@link #walk}, marking the members and zones taken in the thread's marks ({@link #WALK_MARKS}),
   * which it clears again before it returns, or throws (an {@code out} too small); package-private
   * for a test.
   */
  int walkMarking(int start, int want, int[] out) {
    int n = hi.length;
    int count = 0;
    boolean[][] marks = WALK_MARKS.get();
    if (marks[0].length < members.length) {
      marks[0] = new boolean[members.length];
    }
    if (marks[1].length < zoneCount) {
      marks[1] = new boolean[zoneCount];
    }
    boolean[] memberTaken = marks[0];
    boolean[] zoneTaken = marks[1];
    try {
      int zonesGoal = Math.min(want, tokenZones);
      for (int s = 0, k = start; s < n && count < zonesGoal; s++, k = (k + 1 == n) ? 0 : k + 1) {
        int m = ownerIndex(k);
        if (!zoneTaken[zoneOf[m]]) {
          zoneTaken[zoneOf[m]] = true;
          memberTaken[m] = true;
          out[count++] = m;
        }
      }
      for (int s = 0, k = start; s < n && count < want; s++, k = (k + 1 == n) ? 0 : k + 1) {
        int m = ownerIndex(k);
        if (!memberTaken[m]) {
          memberTaken[m] = true;
          out[count++] = m;
        }
      }
    } catch (RuntimeException | Error e) {
      // A mark may be set for a member that out had no room for: clear them all, or every later
      // walk on this thread would skip it.
      Arrays.fill(memberTaken, false);
      Arrays.fill(zoneTaken, false);
      throw e;
    }
    for (int q = 0; q < count; q++) { // every member and zone marked is one of those taken
      memberTaken[out[q]] = false;
      zoneTaken[zoneOf[out[q]]] = false;
    }
    return count;
  }

  /**
   * Each thread's marks for {@link #walkMarking}: of members, then of zones; all false between
   * walks, grown to the largest ring the thread walked. JDK types only, so that a thread of an
   * application server's pool keeps no class of this library, nor its class loader, reachable.
   */
  private static final ThreadLocal<boolean[][]> WALK_MARKS =
      ThreadLocal.withInitial(() -> new boolean[][] {new boolean[0], new boolean[0]});

  // ---------------------------------------------------------------- the ring as a value

  /** Virtual nodes per unit of weight. */
  public int virtualNodes() {
    return virtualNodes;
  }

  /** All members, weight 0 included, ordered by id (UTF-8 bytes, unsigned). Non-null. */
  public List<Member> members() {
    return List.of(members);
  }

  /** The member with this id, if it is in the ring. */
  public Optional<Member> member(String id) {
    Integer m = indexOfId.get(id);
    return m == null ? Optional.empty() : Optional.of(members[m]);
  }

  /** Whether a member with this id is in the ring. */
  public boolean contains(String id) {
    return indexOfId.containsKey(id);
  }

  /** The number of tokens: the sum over members of {@code round(virtualNodes * weight)}. */
  public int tokenCount() {
    return hi.length;
  }

  /** Whether the ring has no tokens, so that lookups fail. */
  public boolean isEmpty() {
    return hi.length == 0;
  }

  /**
   * The fraction of the key space, in {@code [0, 1]}, that the member owns as primary; 0 for an
   * unknown id.
   */
  public double share(String memberId) {
    Integer m = indexOfId.get(memberId);
    if (m == null) {
      return 0.0;
    }
    double[] s = shares;
    if (s == null) {
      shares = s = computeShares(); // deterministic, so a racing second computation is harmless
    }
    return s[m];
  }

  /**
   * The ranges the member owns as primary, merged where they touch, in ring order. Non-null, may
   * be empty.
   */
  public List<KeyRange> primaryRanges(String memberId) {
    return ownedRanges(memberId, 1);
  }

  /**
   * Every member's {@link #primaryRanges(String)}, by id, in the order of {@link #members()} (a
   * member without tokens with an empty list): one pass over the tokens, where a call per member
   * walks them all for each. Unmodifiable.
   */
  public Map<String, List<KeyRange>> primaryRangesByMember() {
    List<List<KeyRange>> runs = new ArrayList<>(members.length);
    for (int m = 0; m < members.length; m++) {
      runs.add(new ArrayList<>());
    }
    int n = hi.length;
    // Each token i owns (token i-1, token i] (the first one from the last token, across the wrap);
    // a member's consecutive tokens make one range. Equal tokens make empty ranges, left out, but
    // for tokens all at one position: then the first owns the whole circle, as a single token does.
    boolean oneSpot = n > 0 && token(0) == token(n - 1);
    for (int i = 0; i < n; i++) {
      long start = token(i == 0 ? n - 1 : i - 1);
      long end = token(i);
      if (start == end && !(oneSpot && i == 0)) {
        continue;
      }
      List<KeyRange> own = runs.get(ownerIndex(i));
      KeyRange last = own.isEmpty() ? null : own.get(own.size() - 1);
      if (last != null && last.end() == start) {
        own.set(own.size() - 1, new KeyRange(last.start(), end));
      } else {
        own.add(new KeyRange(start, end));
      }
    }
    Map<String, List<KeyRange>> out = new LinkedHashMap<>();
    for (int m = 0; m < members.length; m++) {
      List<KeyRange> own = runs.get(m);
      if (own.size() > 1 && own.get(own.size() - 1).end() == own.get(0).start()) { // touching across the wrap
        own.set(0, new KeyRange(own.get(own.size() - 1).start(), own.get(0).end()));
        own.remove(own.size() - 1);
      }
      out.put(members[m].id(), List.copyOf(own));
    }
    return Collections.unmodifiableMap(out);
  }

  /**
   * The ranges for which the member is among the first {@code replicas} owners, merged where they
   * touch, in ring order. Non-null, may be empty.
   *
   * @throws IllegalArgumentException if {@code replicas} is below 1
   */
  public List<KeyRange> ownedRanges(String memberId, int replicas) {
    HashRing none = new Builder().virtualNodes(virtualNodes).build();
    List<KeyRange> out = new ArrayList<>();
    KeyRange last = null;
    for (RingDiff.Gained g : RingDiff.compute(none, this, memberId, replicas).gained()) {
      if (last != null && last.end() == g.range().start()) {
        last = new KeyRange(last.start(), g.range().end());
        out.set(out.size() - 1, last);
      } else {
        last = g.range();
        out.add(last);
      }
    }
    if (out.size() > 1 && last.end() == out.get(0).start()) { // touching across the wrap
      out.set(0, new KeyRange(last.start(), out.get(0).end()));
      out.remove(out.size() - 1);
    }
    return List.copyOf(out);
  }

  /**
   * A 64-bit hash of the spec version, {@code virtualNodes} and the sorted members (id, weight,
   * zone). Equal checksums mean equal tokens and equal ownership for any replica count; members
   * compare checksums to prove they agree.
   */
  public long checksum() {
    return checksum;
  }

  /**
   * This ring plus one member (or with the member's metadata replaced), built incrementally.
   *
   * @throws IllegalArgumentException if {@code member} is null, or the ring would pass a limit:
   *                                  {@link #MAX_MEMBERS}, {@link #MAX_TOKENS},
   *                                  {@link #MAX_TOKENS_PER_MEMBER}
   */
  public HashRing with(Member member) {
    if (member == null) {
      throw new IllegalArgumentException("member must not be null");
    }
    Integer m = indexOfId.get(member.id());
    if (m != null && members[m].equals(member)) {
      return this;
    }
    List<Member> next = new ArrayList<>(members.length + 1);
    for (Member x : members) {
      if (!x.id().equals(member.id())) {
        next.add(x);
      }
    }
    next.add(member);
    return withMembers(next);
  }

  /** This ring without the member with this id (the same ring if it is absent), built incrementally. */
  public HashRing without(String memberId) {
    if (memberId == null) {
      throw new IllegalArgumentException("member id must not be null");
    }
    if (!indexOfId.containsKey(memberId)) {
      return this;
    }
    List<Member> next = new ArrayList<>(members.length);
    for (Member x : members) {
      if (!x.id().equals(memberId)) {
        next.add(x);
      }
    }
    return withMembers(next);
  }

  /**
   * A ring with exactly these members and this ring's {@code virtualNodes}. The tokens of members
   * that stay (same id, weight and zone) are reused in order; only the new members' tokens are
   * hashed, sorted and merged in, so the cost is one pass over the ring plus the new tokens.
   *
   * @throws IllegalArgumentException on duplicate ids or a null member, or if the ring would pass
   *                                  a limit: {@link #MAX_MEMBERS}, {@link #MAX_TOKENS},
   *                                  {@link #MAX_TOKENS_PER_MEMBER}
   */
  public HashRing withMembers(Collection<Member> next) {
    Objects.requireNonNull(next, "members");
    for (Member m : next) {
      if (m == null) {
        throw new IllegalArgumentException("member must not be null");
      }
    }
    if (next.size() == members.length && Set.copyOf(next).equals(Set.of(members))) {
      return this;
    }
    return RingBuilder.build(virtualNodes, tokenFunction, this, next);
  }

  /**
   * A ring over token arrays in spec order: high and low halves, which the ring keeps (the caller
   * must not change them), and the owners' indices into {@code members}, which it copies. Each
   * member must hold exactly {@code RingBuilder.tokenCount(member, virtualNodes)} tokens.
   */
  static HashRing assemble(int virtualNodes, TokenFunction tokenFunction, Member[] members, int[] hi, int[] lo,
                           char[] owners) {
    return new HashRing(virtualNodes, tokenFunction, members, hi, lo, owners);
  }

  /** Members that hold at least one token: the most owners any walk can find. */
  int membersWithTokens() {
    return tokenMembers;
  }

  /** The index of the member with this id, or -1. */
  int indexOf(String id) {
    Integer m = indexOfId.get(id);
    return m == null ? -1 : m;
  }

  Member[] memberArray() {
    return members;
  }

  TokenFunction tokenFunction() {
    return tokenFunction;
  }

  private double[] computeShares() {
    double[] s = new double[members.length];
    int n = hi.length;
    if (n == 0) {
      return s;
    }
    if (token(0) == token(n - 1)) {
      s[ownerIndex(0)] = 1.0; // every token at one position: the first owns the whole circle
      return s;
    }
    // Each member's arcs summed exactly, as an unsigned 64-bit sum plus a carry, then divided
    // once: adding the arcs as doubles could exceed 1 for a member owning the whole circle.
    long[] sums = new long[members.length];
    boolean[] whole = new boolean[members.length];
    for (int i = 0; i < n; i++) {
      int m = ownerIndex(i);
      long before = sums[m];
      sums[m] += token(i) - token(i == 0 ? n - 1 : i - 1);
      whole[m] |= Long.compareUnsigned(sums[m], before) < 0; // carried: the arcs add up to 2^64
    }
    for (int m = 0; m < s.length; m++) {
      s[m] = whole[m] ? 1.0 : KeyRange.unsignedToDouble(sums[m]) / 0x1p64;
    }
    return s;
  }

  private long computeChecksum() {
    byte[] tag = "ringmaster-ring".getBytes(StandardCharsets.US_ASCII);
    int length = 4 + tag.length + 4 + 4 + 4;
    byte[][] ids = new byte[members.length][];
    byte[][] zones = new byte[members.length][];
    for (int m = 0; m < members.length; m++) {
      ids[m] = members[m].id().getBytes(StandardCharsets.UTF_8);
      zones[m] = members[m].zone().getBytes(StandardCharsets.UTF_8);
      length += 4 + ids[m].length + 8 + 4 + zones[m].length;
    }
    ByteBuffer b = ByteBuffer.allocate(length); // big-endian
    b.putInt(tag.length).put(tag).putInt(SPEC_VERSION).putInt(virtualNodes).putInt(members.length);
    for (int m = 0; m < members.length; m++) {
      b.putInt(ids[m].length).put(ids[m]);
      b.putLong(Double.doubleToLongBits(members[m].weight()));
      b.putInt(zones[m].length).put(zones[m]);
    }
    return Murmur3.hash(b.array());
  }

  /** Equal when the virtual nodes and the members (ids, weights, zones) are equal. */
  @Override
  public boolean equals(Object o) {
    return o instanceof HashRing r
        && r.checksum == checksum
        && r.virtualNodes == virtualNodes
        && Arrays.equals(r.members, members);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(checksum);
  }

  @Override
  public String toString() {
    return "HashRing[virtualNodes=" + virtualNodes + ", members=" + members.length
        + ", tokens=" + hi.length + ", checksum=" + Long.toHexString(checksum) + "]";
  }

  /**
   * Collects the members and {@code virtualNodes} of a new ring. Not thread-safe; reusable.
   */
  public static final class Builder {
    /**
     * Chosen from the measurements in {@code docs/performance.md}: with 1024 tokens per member,
     * the most loaded of 100 members holds at most about 10% more than the mean.
     */
    public static final int DEFAULT_VIRTUAL_NODES = 1024;

    private int virtualNodes = DEFAULT_VIRTUAL_NODES;
    private TokenFunction tokenFunction = SPEC_TOKENS;
    private final Map<String, Member> members = new LinkedHashMap<>();

    private Builder() {}

    /**
     * Tokens per unit of weight, the same on every member of a cluster; at least 1. {@link #build()}
     * also refuses a member given more than {@link #MAX_TOKENS_PER_MEMBER} tokens, and a ring of
     * more than {@link #MAX_TOKENS}.
     */
    public Builder virtualNodes(int virtualNodes) {
      if (virtualNodes < 1) {
        throw new IllegalArgumentException("virtualNodes must be at least 1: " + virtualNodes);
      }
      this.virtualNodes = virtualNodes;
      return this;
    }

    /**
     * Adds a member.
     *
     * @throws IllegalArgumentException if a member with the same id was already added
     */
    public Builder add(Member member) {
      if (member == null) {
        throw new IllegalArgumentException("member must not be null");
      }
      Member previous = members.putIfAbsent(member.id(), member);
      if (previous != null) {
        throw new IllegalArgumentException(
            "duplicate member id: " + Member.quote(member.id()) + " (" + previous + " and " + member + ")");
      }
      return this;
    }

    /**
     * Adds each member, as {@link #add(Member)}, all or none: a collection refused (a null member, an
     * id given twice or already added) leaves the builder as it was.
     *
     * @throws IllegalArgumentException as {@link #add(Member)}, naming the first member refused
     */
    public Builder addAll(Collection<Member> toAdd) {
      Objects.requireNonNull(toAdd, "members");
      Map<String, Member> before = new LinkedHashMap<>(members);
      try {
        for (Member m : toAdd) {
          add(m);
        }
      } catch (RuntimeException e) {
        members.clear();
        members.putAll(before);
        throw e;
      }
      return this;
    }

    Builder tokenFunction(TokenFunction tokenFunction) {
      this.tokenFunction = tokenFunction;
      return this;
    }

    /**
     * The ring of the members added so far (a ring with no member has no tokens).
     *
     * @throws IllegalArgumentException if the ring would pass a limit: {@link #MAX_MEMBERS},
     *                                  {@link #MAX_TOKENS}, {@link #MAX_TOKENS_PER_MEMBER}
     */
    public HashRing build() {
      return RingBuilder.build(virtualNodes, tokenFunction, null, members.values());
    }
  }
}
