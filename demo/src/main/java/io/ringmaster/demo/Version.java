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

  Version {
    Objects.requireNonNull(writer, "writer");
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
