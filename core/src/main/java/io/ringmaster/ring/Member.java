package io.ringmaster.ring;

/**
 * A member of the ring: a stable {@code id}, a {@code weight} and a {@code zone}.
 *
 * <p>The id must be stable across restarts (a host name, a pod name, a configured node id), never
 * a random per-process identifier: the ring places a member's tokens by hashing its id, so a new
 * id means new tokens and a reshuffle of everything that member owned.
 *
 * <p>A member gets {@code Math.round(virtualNodes * weight)} tokens. Weight 0 makes a member that
 * is known to the ring but owns nothing: a router, or a node that is draining. The zone spreads
 * replicas: {@link HashRing#owners(String, int)} picks owners in distinct zones first. The empty
 * zone is a zone like any other.
 *
 * @param id     non-empty
 * @param weight finite and {@code >= 0}; {@code -0.0} is stored as {@code 0.0}
 * @param zone   non-null, may be empty
 */
public record Member(String id, double weight, String zone) {

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

  static String quote(String s) {
    return s == null ? "null" : '"' + s + '"';
  }
}
