package io.ringmaster.demo;

import java.lang.System.Logger.Level;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs a peer's maintenance tasks (the status, the sweep, the retries, a repair after a merge),
 * logging what they throw: a periodic task that threw would never run again (the scheduler cancels
 * it without a word), so an Error is caught too. A task that keeps failing the same way every
 * second must not fill the log: its first failure is logged at WARNING (an Error at ERROR) with
 * the stack trace, the ones after it at DEBUG, and its next success at INFO.
 */
final class TaskGuard {
  private static final System.Logger LOG = System.getLogger(TaskGuard.class.getName());
  /** The tasks, by name, whose last run failed. */
  private final Set<String> failing = ConcurrentHashMap.newKeySet();

  void run(String what, Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      boolean first = failing.add(what);
      Level level = !first ? Level.DEBUG : e instanceof Error ? Level.ERROR : Level.WARNING;
      LOG.log(level, what + " failed" + (first ? " (until it succeeds again, its failures are logged at DEBUG)" : ""),
          e);
      return;
    }
    if (!failing.isEmpty() && failing.remove(what)) {
      LOG.log(Level.INFO, "{0} succeeded again", what);
    }
  }
}
