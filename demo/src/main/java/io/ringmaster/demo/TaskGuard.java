package io.ringmaster.demo;

import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs a peer's maintenance tasks (the status, the sweep, the retries, a repair after a merge),
 * logging what they throw: a periodic task that threw would never run again (the scheduler cancels
 * it without a word), so an Error is caught too. A periodic task that keeps failing the same way
 * every second, or on and off, must not fill the log: a failure of a kind (the exception's class)
 * not said in the last minute is logged at WARNING, an Error at ERROR, with the stack trace; the
 * others at DEBUG; the task's next success at INFO, if a failure was said since the last one. A
 * task run once (a repair after a merge) is logged every time it fails: each is news.
 */
final class TaskGuard {
  private static final System.Logger LOG = System.getLogger(TaskGuard.class.getName());
  private static final long REPEAT_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** Per periodic task that has failed: when each kind of failure was last said, and whether one was since a success. */
  private final Map<String, Failures> failures = new ConcurrentHashMap<>();

  private static final class Failures {
    final Map<Class<?>, Long> saidAt = new ConcurrentHashMap<>();
    volatile boolean saidSinceSuccess;
  }

  /** Runs a task that runs again and again (each second, say). */
  void run(String what, Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      long now = System.nanoTime();
      Failures f = failures.computeIfAbsent(what, k -> new Failures());
      Long last = f.saidAt.get(e.getClass());
      boolean say = last == null || now - last >= REPEAT_NANOS;
      if (say) {
        f.saidAt.put(e.getClass(), now);
        f.saidSinceSuccess = true;
      }
      Level level = !say ? Level.DEBUG : e instanceof Error ? Level.ERROR : Level.WARNING;
      LOG.log(level, what + " failed" + (say ? " (failures of this kind are logged at DEBUG for a minute)" : ""), e);
      return;
    }
    Failures f = failures.isEmpty() ? null : failures.get(what);
    if (f != null && f.saidSinceSuccess) {
      f.saidSinceSuccess = false;
      LOG.log(Level.INFO, "{0} succeeded again", what);
    }
  }

  /** Runs a task once: a failure is logged at WARNING, an Error at ERROR, every time. */
  void runOnce(String what, Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      LOG.log(e instanceof Error ? Level.ERROR : Level.WARNING, what + " failed", e);
    }
  }
}
