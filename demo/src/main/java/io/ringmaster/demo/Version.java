package io.ringmaster.demo;

import java.util.Objects;

/**
 * The version of a write: a stamp from the peer that accepted it, ties broken by that peer's id,
 * so any two versions of a key are ordered the same way on every peer (last writer wins).
 *
 * @param stamp  microseconds since the epoch on the accepting peer (made unique there); see {@link VersionClock}
 * @param writer id of the peer that accepted the write
 */
record Version(long stamp, String writer) implements Comparable<Version> {
  /**
   * The highest stamp a peer accepts, 2<sup>53</sup> - 1 (the year 2255 in microseconds): the
   * largest that JavaScript reads exactly, and far enough from {@code Long.MAX_VALUE} that a clock
   * moved past a stamp (plus one) cannot wrap around to a negative one.
   */
  static final long MAX_STAMP = (1L << 53) - 1;

  Version {
    Objects.requireNonNull(writer, "writer");
  }

  /** Whether a stamp read from another peer is one a peer could have made: 0 to {@link #MAX_STAMP}. */
  static boolean isValidStamp(long stamp) {
    return stamp >= 0 && stamp <= MAX_STAMP;
  }

  @Override
  public int compareTo(Version o) {
    int c = Long.compare(stamp, o.stamp);
    return c != 0 ? c : writer.compareTo(o.writer);
  }

  boolean isNewerThan(Version o) {
    return compareTo(o) > 0;
  }
}
