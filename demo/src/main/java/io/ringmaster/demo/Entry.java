package io.ringmaster.demo;

import io.ringmaster.ring.HashRing;
import java.util.Objects;
import java.util.Optional;

/**
 * One stored key: its value and version, or a tombstone. Tombstones carry a version like values,
 * so a migration that brings an older value does not resurrect a deleted key while the tombstone
 * is kept (the peer's tombstone grace period).
 *
 * @param key     non-empty
 * @param value   the value; empty for a tombstone
 * @param version who wrote it and when
 * @param deleted whether this is a tombstone
 */
record Entry(String key, String value, Version version, boolean deleted) {

  Entry {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(version, "version");
    if (deleted && !value.isEmpty()) {
      throw new IllegalArgumentException("a tombstone has no value: key " + key);
    }
  }

  static Entry of(String key, String value, Version version) {
    return new Entry(key, value, version, false);
  }

  static Entry tombstone(String key, Version version) {
    return new Entry(key, "", version, true);
  }

  /**
   * Whether this entry wins over {@code other}, an entry of the same key: the newer version; of
   * two with one version (two processes under one peer id, writing in the same microsecond), the
   * tombstone, then the greater value. Every replica then keeps the same one, whatever the order
   * they arrive in, where keeping the first would leave the replicas different for good.
   */
  boolean supersedes(Entry other) {
    int c = version.compareTo(other.version);
    if (c != 0) {
      return c > 0;
    }
    if (deleted != other.deleted) {
      return deleted;
    }
    return value.compareTo(other.value) > 0;
  }

  /** Of two copies, each maybe none, the one that wins: {@code b} if it supersedes {@code a} or {@code a} is none. */
  static Optional<Entry> newer(Optional<Entry> a, Optional<Entry> b) {
    return b.isPresent() && (a.isEmpty() || b.get().supersedes(a.get())) ? b : a;
  }

  long position() {
    return HashRing.position(key);
  }

  /** Rough wire size, to cut migration batches. */
  int weight() {
    return 32 + key.length() * 3 + value.length() * 3 + version.writer().length() * 3;
  }
}
