package io.ringmaster.demo;

import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Runs a peer's maintenance tasks (the status, the sweep, the retries, a repair after a merge),
 * logging what they throw: a periodic task that threw would never run again (the scheduler cancels
 * it without a word), so an Error is caught too. A periodic task that keeps failing the same way
 * every second must not fill the log: its first failure of a kind (the exception's class) is
 * logged at WARNING, an Error at ERROR, with the stack trace; the same kind again at DEBUG, but at
 * its level again once a minute while it lasts; the task's next success at INFO. A task run once (a
 * repair after a merge) is logged every time it fails: each is news.
 */
final class TaskGuard {
  private static final System.Logger LOG = System.getLogger(TaskGuard.class.getName());
  private static final long REPEAT_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** The periodic tasks whose last run failed, each with the kinds of failure said, and when. */
  private final Map<String, Map<Class<?>, Long>> failing = new ConcurrentHashMap<>();

  /** Runs a task that runs again and again (each second, say). */
  void run(String what, Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      long now = System.nanoTime();
      Map<Class<?>, Long> said = failing.computeIfAbsent(what, k -> new ConcurrentHashMap<>());
      Long last = said.get(e.getClass());
      boolean say = last == null || now - last >= REPEAT_NANOS;
      if (say) {
        said.put(e.getClass(), now);
      }
      Level level = !say ? Level.DEBUG : e instanceof Error ? Level.ERROR : Level.WARNING;
      LOG.log(level, what + " failed" + (say ? " (until it succeeds again, its failures of this kind are logged at"
          + " DEBUG, and once a minute at " + level + ")" : ""), e);
      return;
    }
    if (!failing.isEmpty() && failing.remove(what) != null) {
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
