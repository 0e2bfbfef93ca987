package io.ringmaster;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Spaces out the WARN lines of a protocol that drops messages: the first drop from a sender is
 * logged, then at most one every {@link #INTERVAL_NANOS} per sender, saying how many went unlogged
 * in between. A member sealing under another key, or a stranger flooding the port, would otherwise
 * write a line per message, on the JGroups threads that receive them.
 */
final class DropLog {
  /** Ten seconds between two WARN lines about one sender. */
  static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
  /** Senders remembered, the least recently seen forgotten first: a forgotten sender's next drop is logged. */
  static final int MAX_SENDERS = 64;

  private final LongSupplier nanoClock;
  /** Per sender: when its last line was logged, and the drops since that were not. */
  private final Map<Object, long[]> senders = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Object, long[]> eldest) {
      return size() > MAX_SENDERS;
    }
  };

  DropLog(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
  }

  /**
   * Counts a drop from {@code sender} (null for a message without one): -1 if it is not to be
   * logged at WARN, else how many drops from that sender were not logged since its last line.
   */
  synchronized long admit(Object sender) {
    long now = nanoClock.getAsLong();
    long[] s = senders.get(sender);
    if (s == null) {
      senders.put(sender, new long[] {now, 0});
      return 0;
    }
    if (now - s[0] < INTERVAL_NANOS) {
      s[1]++;
      return -1;
    }
    long unlogged = s[1];
    s[0] = now;
    s[1] = 0;
    return unlogged;
  }

  /** What a WARN line adds when drops went unlogged before it. */
  static String unloggedSuffix(long unlogged) {
    return unlogged == 0 ? "" : " (" + unlogged + " more from this sender dropped since the last line, logged at DEBUG)";
  }
}
