package io.ringmaster;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Spaces out the WARN lines of a protocol that drops messages: the first drop from a sender is
 * logged, then at most one every {@link #INTERVAL_NANOS} per sender, and at most
 * {@link #MAX_LINES} lines in all in each window of that length (a stranger can name a new sender
 * in each message; a window starts at the first line after the last one ended, so two windows
 * back to back can log twice as many lines within 10 s); each line says how many drops went
 * unlogged before it, except those of a sender forgotten before its next line. A member sealing under another
 * key, or a stranger flooding the port, would otherwise write a line per message, on the JGroups
 * threads that receive them.
 */
final class DropLog {
  /** Ten seconds between two WARN lines about one sender. */
  static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
  /** WARN lines at most in one interval, all senders together. */
  static final int MAX_LINES = 10;
  /** Senders remembered, the least recently seen forgotten first: a forgotten sender's next drop is logged. */
  static final int MAX_SENDERS = 64;

  private final LongSupplier nanoClock;
  /** Per sender: when its last line was logged, and its drops since that were not. */
  private final Map<Object, long[]> senders = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Object, long[]> eldest) {
      return size() > MAX_SENDERS;
    }
  };
  private final Window lines;
  /** Drops that were due a line but found the interval's lines spent, since the last line. */
  private long overLimit;

  DropLog(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
    this.lines = new Window(nanoClock, MAX_LINES);
  }

  /**
   * Counts a drop from {@code sender} (null for a message without one): null if it is not to be
   * logged at WARN, else what its line ends with: "" or how many drops went unlogged before it.
   */
  synchronized String admit(Object sender) {
    long now = nanoClock.getAsLong();
    long[] s = senders.get(sender);
    if (s != null && now - s[0] < INTERVAL_NANOS) {
      s[1]++;
      return null;
    }
    if (!lines.tryTake()) {
      overLimit++;
      return null;
    }
    long fromSender = s == null ? 0 : s[1];
    senders.put(sender, new long[] {now, 0});
    String suffix = suffix(fromSender, overLimit);
    overLimit = 0;
    return suffix;
  }

  /**
   * At most {@code limit} takes in each window of {@link #INTERVAL_NANOS}, a window starting at the
   * first take after the last one ended. Thread-safe.
   */
  static final class Window {
    private final LongSupplier nanoClock;
    private final int limit;
    private long start;
    private boolean started;
    private int taken;

    Window(LongSupplier nanoClock, int limit) {
      this.nanoClock = nanoClock;
      this.limit = limit;
    }

    /** Whether one more fits in the current window (and takes it). */
    synchronized boolean tryTake() {
      long now = nanoClock.getAsLong();
      if (!started || now - start >= INTERVAL_NANOS) {
        started = true;
        start = now;
        taken = 0;
      }
      if (taken >= limit) {
        return false;
      }
      taken++;
      return true;
    }
  }

  private static String suffix(long fromSender, long overLimit) {
    if (fromSender == 0 && overLimit == 0) {
      return "";
    }
    return " (not logged since the last line, only at DEBUG: "
        + (fromSender == 0 ? "" : fromSender + " more from this sender")
        + (fromSender != 0 && overLimit != 0 ? ", " : "")
        + (overLimit == 0 ? "" : overLimit + " past the limit of " + MAX_LINES + " lines every 10 s")
        + ")";
  }
}
