package io.ringmaster.ring;

/**
 * A member of the ring: a stable {@code id}, a {@code weight} and a {@code zone}.
 *
 * <p>The id must be stable across restarts (a host name, a pod name, a configured node id), never
 * a random per-process identifier: the ring places a member's tokens by hashing its id, so a new
 * id means new tokens and a reshuffle of everything that member owned.
 *
 * <p>A member gets {@link #tokenCount Math.round(virtualNodes * weight)} tokens. Weight 0 makes a member that
 * is known to the ring but owns nothing: a router, or a node that is draining. The zone spreads
 * replicas: {@link HashRing#owners(String, int)} picks owners in distinct zones first. The empty
 * zone is a zone like any other.
 *
 * @param id     non-empty
 * @param weight finite and {@code >= 0}; {@code -0.0} is stored as {@code 0.0}
 * @param zone   non-null, may be empty
 */
public record Member(String id, double weight, String zone) {

  /**
   * Checks the id, weight and zone.
   *
   * @throws IllegalArgumentException naming the bad value: a null or empty id; a negative, NaN or
   *                                  infinite weight; a null zone; an id or zone with an unpaired
   *                                  surrogate (it has no UTF-8 form)
   */
  public Member {
    if (id == null || id.isEmpty()) {
      throw new IllegalArgumentException("member id must be non-empty: " + quote(id));
    }
    if (!(weight >= 0) || Double.isInfinite(weight)) {
      throw new IllegalArgumentException(
          "member weight must be finite and >= 0: " + weight + " (member " + quote(id) + ")");
    }
    if (zone == null) {
      throw new IllegalArgumentException(
          "member zone must not be null, use \"\" for no zone (member " + quote(id) + ")");
    }
    // The ring hashes, orders and checksums ids and zones as UTF-8. A lone surrogate has no
    // UTF-8 form (Java writes '?'), so "x" + U+D800 and "x?" would be two ids with one set of tokens.
    int bad = unpairedSurrogate(id);
    if (bad >= 0) {
      throw new IllegalArgumentException("member id has an unpaired surrogate at index " + bad + ", which has no"
          + " UTF-8 form: " + escape(id));
    }
    bad = unpairedSurrogate(zone);
    if (bad >= 0) {
      throw new IllegalArgumentException("member zone has an unpaired surrogate at index " + bad + ", which has no"
          + " UTF-8 form: " + escape(zone) + " (member " + escape(id) + ")");
    }
    weight = weight == 0 ? 0.0 : weight; // one canonical zero for equals and the checksum
  }

  /** A member with weight 1 and the empty zone. */
  public static Member of(String id) {
    return new Member(id, 1.0, "");
  }

  /** A member with the given weight and the empty zone. */
  public static Member of(String id, double weight) {
    return new Member(id, weight, "");
  }

  /**
   * The number of tokens a member of this weight gets in a ring of {@code virtualNodes} per unit of
   * weight: {@code virtualNodes * weight} in double precision, rounded to the nearest integer,
   * halves up ({@code docs/ring-spec.md}). A ring refuses more than
   * {@link HashRing#MAX_TOKENS_PER_MEMBER}; a weight above 0 that gives 0 owns nothing. Checks
   * nothing: it is meant for {@code virtualNodes >= 1} and a weight a {@link Member} accepts (for
   * others it returns what {@link Math#round(double)} makes of the product: 0 for NaN, and
   * {@link Long#MAX_VALUE} past 2^63).
   */
  public static long tokenCount(int virtualNodes, double weight) {
    return Math.round(virtualNodes * weight);
  }

  /** The index of the first char of {@code s} that is half of no surrogate pair, or -1. */
  private static int unpairedSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }

  /** The string quoted, with each surrogate char written as a Java escape, so a log shows it. */
  private static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isSurrogate(c)) {
        b.append(String.format("\\u%04X", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static String quote(String s) {
    return s == null ? "null" : '"' + s + '"';
  }
}
