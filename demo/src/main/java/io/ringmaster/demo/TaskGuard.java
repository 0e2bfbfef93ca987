package io.ringmaster.demo;

import java.lang.System.Logger.Level;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs a peer's maintenance tasks (the status, the sweep, the retries, a repair after a merge),
 * logging what they throw: a periodic task that threw would never run again (the scheduler cancels
 * it without a word), so an Error is caught too, and always logged at ERROR. A periodic task that
 * keeps failing the same way every second must not fill the log: its first exception of a kind is
 * logged at WARNING with the stack trace, the same kind again at DEBUG, and its next success at
 * INFO. A task run once (a repair after a merge) is logged every time it fails: each is news.
 */
final class TaskGuard {
  private static final System.Logger LOG = System.getLogger(TaskGuard.class.getName());
  /** The periodic tasks whose last run failed, each with the kinds of exception said since. */
  private final java.util.Map<String, Set<Class<?>>> failing = new ConcurrentHashMap<>();

  /** Runs a task that runs again and again (each second, say). */
  void run(String what, Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      boolean first = failing.computeIfAbsent(what, k -> ConcurrentHashMap.newKeySet()).add(e.getClass());
      Level level = e instanceof Error ? Level.ERROR : first ? Level.WARNING : Level.DEBUG;
      LOG.log(level, what + " failed" + (first && level == Level.WARNING
          ? " (until it succeeds again, its failures of this kind are logged at DEBUG)" : ""), e);
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
