package io.ringmaster.demo;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.LogManager;

/**
 * The peer process's {@code java.util.logging} manager: it keeps the log handlers through the
 * JVM's shutdown until the peer's graceful leave is over. The JDK's own manager closes them in a
 * shutdown hook of its own, which runs beside the one that hands the peer's keys off, so what the
 * hand-off logs (a push that failed, and why) would be lost just when an operator needs it.
 *
 * <p>{@link Main} installs it through the system property {@code java.util.logging.manager}
 * before anything logs, unless that property names another manager; in a JVM where logging
 * started earlier (tests, or an application embedding the demo) the JDK's manager stays. It holds
 * the handlers as long as the peer's settings let its leave take (at least {@link #HOLD_SECONDS}),
 * and only those in place when the JVM began to shut down (the peer logs at its start, which puts
 * the console handler in place).
 */
public final class LeaveLogManager extends LogManager {
  /** Longer than a leave may take with the demo's timeouts: the launcher waits 80 s for a stopping peer. */
  static final long HOLD_SECONDS = 90;
  private static volatile CompletableFuture<?> leave;
  private static volatile long holdSeconds = HOLD_SECONDS;

  /** Called by the JDK, which instantiates the class named by {@code java.util.logging.manager}. */
  public LeaveLogManager() {
    super();
  }

  /**
   * Holds the handlers, once the JVM shuts down, until {@code done} completes (at most
   * {@link #HOLD_SECONDS}, or what {@link #holdAtMost} sets).
   */
  static void holdUntil(CompletableFuture<?> done) {
    leave = done;
  }

  /** Holds up to {@code bound} instead, when that is longer: a peer whose settings allow a longer leave. */
  static void holdAtMost(Duration bound) {
    holdSeconds = Math.max(HOLD_SECONDS, bound.toSeconds());
  }

  @Override
  public void reset() {
    CompletableFuture<?> done = leave;
    if (done != null && !done.isDone() && shuttingDown()) {
      try {
        done.get(holdSeconds, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException | TimeoutException e) {
        // the leave failed or took too long: close the handlers now, as the JDK would have
      }
    }
    super.reset();
  }

  /** Whether the JVM is running its shutdown hooks: it takes no new hook then. */
  private static boolean shuttingDown() {
    Thread probe = new Thread(() -> { });
    try {
      Runtime.getRuntime().addShutdownHook(probe);
      Runtime.getRuntime().removeShutdownHook(probe);
      return false;
    } catch (IllegalStateException shutdownUnderWay) {
      return true;
    }
  }
}
