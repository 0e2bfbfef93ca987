package io.ringmaster.demo;

import io.ringmaster.ring.KeyRange;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Pulls of gained ranges that failed (their source overloaded, say), tried again in the
 * background until they complete, after 2, 4, 8 ... seconds, at most a minute apart. Without
 * them, a range whose pull failed would keep one copy fewer until some later change moved it
 * again. A retry asks only for the ranges this peer still owns, and is dropped once its source is
 * no longer in the ring (a source that left handed its data on; one that crashed is replaced by
 * the pulls of that change) or this peer is leaving. A range counts as owned by its end, one of
 * this peer's tokens with one copy a key: a later joiner takes part of it, never all, so the retry
 * goes on and the joiner's pull of that part waits for it ({@link #pulling}). With more copies a
 * later owner may take a whole range, and then pulls it from its other previous owners too.
 */
final class PullRetries {
  private static final System.Logger LOG = System.getLogger(PullRetries.class.getName());
  static final Duration FIRST_DELAY = Duration.ofSeconds(2);
  static final Duration MAX_DELAY = Duration.ofMinutes(1);

  /** {@link Transfers#pull}, or a stand-in. */
  interface Puller {
    Transfers.Pulled pull(String source, List<KeyRange> ranges, long viewId);
  }

  private record Retry(String source, List<KeyRange> ranges, long viewId, int failures, long dueNanos) {}

  private final Puller puller;
  private final Predicate<String> live;
  private final Predicate<KeyRange> owned;
  private final BooleanSupplier leaving;
  private final LongSupplier nanoTime;
  private final EventLog events;
  private final List<Retry> retries = new ArrayList<>(); // guarded by this
  private final List<Retry> running = new ArrayList<>(); // guarded by this
  /**
   * The retries waiting, then those running, published again under the lock at each change and
   * read without it: a write at this peer asks {@link #sourcesFor} on a JGroups thread, which must
   * not wait while a pull's {@link #pulling} asks the ring about each range of every retry.
   */
  private volatile List<Retry> all = List.of();

  /**
   * @param live     whether a member is in the ring, worth pulling from
   * @param owned    whether this peer still owns a range
   * @param leaving  whether this peer is leaving
   * @param nanoTime the clock, {@link System#nanoTime()} but in tests
   * @param events   where each round that pulls is logged, as a migration in for reason "retry"
   */
  PullRetries(Puller puller, Predicate<String> live, Predicate<KeyRange> owned, BooleanSupplier leaving,
              LongSupplier nanoTime, EventLog events) {
    this.puller = puller;
    this.live = live;
    this.owned = owned;
    this.leaving = leaving;
    this.nanoTime = nanoTime;
    this.events = events;
  }

  /** Schedules a pull that failed (for a change of view {@code viewId}) to be tried again. */
  void failed(String source, List<KeyRange> ranges, long viewId) {
    schedule(new Retry(source, List.copyOf(ranges), viewId, 1, nanoTime.getAsLong() + delayAfter(1)));
  }

  private synchronized void schedule(Retry r) {
    retries.add(r);
    publish();
  }

  /** Under the lock: {@link #all} as the two lists are now. */
  private void publish() {
    List<Retry> both = new ArrayList<>(retries);
    both.addAll(running);
    all = List.copyOf(both);
  }

  /** Retries waiting for their turn or running: none means no failed pull is left to finish. */
  int pending() {
    return all.size();
  }

  /**
   * The sources of the retries, waiting or running, whose ranges hold ring position {@code position}.
   * Lock-free, and without allocating while no retry is pending.
   */
  List<String> sourcesFor(long position) {
    List<Retry> now = all;
    if (now.isEmpty()) {
      return List.of();
    }
    List<String> sources = new ArrayList<>();
    for (Retry r : now) {
      if (!sources.contains(r.source()) && r.ranges().stream().anyMatch(range -> range.contains(position))) {
        sources.add(r.source());
      }
    }
    return sources;
  }

  /**
   * Whether a retry for a view before {@code view}, waiting or running, still pulls part of
   * {@code ranges}: this peer's copy of them may then be short, and a pull of them for {@code view}
   * (by an owner that gained them later) must wait. Only earlier views, so that no two peers can
   * each wait for the other.
   */
  boolean pulling(List<KeyRange> ranges, long view) {
    if (leaving.getAsBoolean()) {
      return false; // its retries are dropped
    }
    for (Retry r : all) {
      // Only a retry that will pull: its source is in the ring, and it still owns the range.
      if (r.viewId() < view && live.test(r.source()) && r.ranges().stream()
          .anyMatch(mine -> owned.test(mine) && ranges.stream().anyMatch(mine::overlaps))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Runs the retries that are due, on the calling thread (a pull takes up to about half a minute);
   * returns how many entries they changed here.
   */
  long runDue() {
    List<Retry> due = new ArrayList<>();
    long now = nanoTime.getAsLong();
    synchronized (this) {
      for (Iterator<Retry> it = retries.iterator(); it.hasNext(); ) {
        Retry r = it.next();
        if (now - r.dueNanos() >= 0) {
          due.add(r);
          it.remove();
          running.add(r);
        }
      }
      if (!due.isEmpty()) {
        publish();
      }
    }
    long changed = 0;
    for (Retry r : due) {
      try {
        changed += run(r);
      } catch (RuntimeException | Error e) { // tried again later, like a pull that failed
        // Logged here, naming the source, an Error too: the other retries still run, and what they
        // changed is still counted.
        LOG.log(e instanceof Error ? Level.ERROR : Level.WARNING, "pull retry from " + r.source() + " failed", e);
        schedule(next(r, r.ranges()));
      } finally {
        synchronized (this) {
          running.remove(r);
          publish();
        }
      }
    }
    return changed;
  }

  /** The retry after {@code r} failed again. */
  private Retry next(Retry r, List<KeyRange> ranges) {
    int failures = r.failures() + 1;
    return new Retry(r.source(), ranges, r.viewId(), failures, nanoTime.getAsLong() + delayAfter(failures));
  }

  /**
   * The wait, in nanoseconds, before trying again after {@code failures} failed rounds: 2, 4, 8 ...
   * seconds, at most {@link #MAX_DELAY}. The repair after a merge waits the same way.
   */
  static long delayAfter(int failures) {
    return Math.min(MAX_DELAY.toNanos(), FIRST_DELAY.toNanos() << Math.min(failures - 1, 16));
  }

  /** Pulls again what is still owned of a retry's ranges; returns how many entries it changed here. */
  private long run(Retry r) {
    List<KeyRange> ranges = r.ranges().stream().filter(owned).toList();
    if (ranges.isEmpty() || leaving.getAsBoolean() || !live.test(r.source())) {
      return 0;
    }
    long started = System.nanoTime();
    Transfers.Pulled pulled = puller.pull(r.source(), ranges, r.viewId());
    // Logged as the failed pull was: what it brought in is counted as keys migrated in, and the
    // log would otherwise show the failure and never the keys that came after it.
    events.publish(Events.migration("in", "retry", r.viewId(), pulled.changed(), ranges.size(), List.of(r.source()),
        (System.nanoTime() - started) / 1_000_000, pulled.complete()));
    if (pulled.complete()) {
      LOG.log(Level.INFO, "pull of {0} ranges from {1} done after {2} failed rounds", ranges.size(), r.source(),
          r.failures());
    } else {
      schedule(next(r, ranges));
    }
    return pulled.changed();
  }
}
