package io.ringmaster.demo;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Bounded polling, for the few places that wait on a condition no one signals (a view id). */
final class Waits {
  private static final long POLL_NANOS = Duration.ofMillis(20).toNanos();

  private Waits() {}

  /** Polls until {@code condition} holds or {@code max} passes; whether it held. */
  static boolean until(BooleanSupplier condition, Duration max) {
    return until(condition, max, POLL_NANOS);
  }

  /** As {@link #until(BooleanSupplier, Duration)}, polling every {@code every}: for a condition that costs a request. */
  static boolean until(BooleanSupplier condition, Duration max, Duration every) {
    return until(condition, max, every.toNanos());
  }

  private static boolean until(BooleanSupplier condition, Duration max, long pollNanos) {
    long deadline = System.nanoTime() + max.toNanos();
    while (!condition.getAsBoolean()) {
      long left = deadline - System.nanoTime();
      if (left <= 0 || Thread.currentThread().isInterrupted()) {
        return false;
      }
      LockSupport.parkNanos(Math.min(left, pollNanos));
    }
    return true;
  }

  /** Waits {@code d} (a retry back-off); returns early only if the thread is interrupted. */
  static void pause(Duration d) {
    until(() -> false, d);
  }
}
