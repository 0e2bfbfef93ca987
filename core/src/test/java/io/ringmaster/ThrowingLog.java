package io.ringmaster;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.logging.Filter;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * A logger that throws (a filter's bug, a logging backend's), while open: every record of the
 * node's logger that {@code throwsOn} accepts makes the log call throw; the others pass through
 * the filter that was there before, which is put back on close.
 */
final class ThrowingLog implements AutoCloseable {
  private final Logger logger = Logger.getLogger(Ringmaster.class.getName());
  private final Filter before = logger.getFilter();
  private final AtomicInteger thrown = new AtomicInteger();

  ThrowingLog(Predicate<LogRecord> throwsOn) {
    this(throwsOn, false);
  }

  /** A logger that throws an IllegalStateException, or an Error (a backend out of memory, say). */
  ThrowingLog(Predicate<LogRecord> throwsOn, boolean error) {
    logger.setFilter(record -> {
      if (throwsOn.test(record)) {
        thrown.incrementAndGet();
        if (error) {
          throw new Error("a logging backend's failure");
        }
        throw new IllegalStateException("a logging filter's bug");
      }
      return before == null || before.isLoggable(record);
    });
  }

  /** A record whose message (the pattern, before its parameters) contains {@code fragment}. */
  static Predicate<LogRecord> messageContains(String fragment) {
    return record -> String.valueOf(record.getMessage()).contains(fragment);
  }

  /** How many log calls threw so far. */
  int thrown() {
    return thrown.get();
  }

  @Override
  public void close() {
    logger.setFilter(before);
  }
}
