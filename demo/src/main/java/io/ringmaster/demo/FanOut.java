package io.ringmaster.demo;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BooleanSupplier;

/**
 * Runs one task a peer at once on a small pool of the peer's, and waits until every one has ended:
 * a change's pulls, one a source ({@link Rebalancer}), and a hand-off's pushes, one a destination
 * ({@link Transfers#pushToEach}). The caller waits on its own thread, never on one of the pool's,
 * and a task never waits for another task of its pool: so callers that share a pool (a sweep's
 * pushes beside a change's) only queue behind each other, and cannot deadlock on its threads.
 *
 * <p>Interrupted while it waits, or already when it calls (the node stopping a callback that
 * outlived its leave timeout, the peer stopping its sweeps), the caller interrupts the tasks
 * running on the pool, and a task that starts on the pool after that starts interrupted, as it
 * would on the caller's thread; it still waits for every task to end, and returns with its
 * interrupt kept. A task the pool refuses (it is shut down) runs on the calling
 * thread instead, and a task queued when the pool is shut down runs on the thread that shuts it
 * down ({@link #threads}): none is dropped, since the caller waits for each. A task running off
 * the pool is not interrupted by the caller: whether a shut-down pool ends a task is the task's
 * call (a pull ends at once, a push is still made). A task that throws (a bug) fails the call once
 * every task has ended: the first in the order of the tasks is thrown, the later ones suppressed
 * in it.
 */
final class FanOut {
  private FanOut() {}

  /** One peer's task. */
  interface Task<T> {
    /**
     * @param callerInterrupted whether the caller was interrupted, when it called or while it
     *                          waited: a task running off the pool is not interrupted, and may
     *                          end on this instead
     */
    T run(BooleanSupplier callerInterrupted);
  }

  /**
   * A pool for {@link #run}: {@code max} threads at most, the other tasks queued, and none kept
   * once idle for 30 seconds (a peer needs them only when data moves). Its {@code shutdownNow()}
   * interrupts the tasks running and runs those still queued on the calling thread, rather than
   * dropping them: their caller waits for each to end.
   */
  static ExecutorService threads(ThreadFactory threads, int max) {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(max, max, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        threads) {
      @Override
      public List<Runnable> shutdownNow() {
        super.shutdownNow().forEach(Runnable::run);
        return List.of();
      }
    };
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /**
   * What the tasks of a {@link #runAll} did.
   *
   * @param results what each task returned, in the order of the tasks; null for one that threw
   * @param failure the first task's failure, in the order of the tasks, the later ones suppressed
   *                in it; null if none threw
   */
  record Ended<T>(List<T> results, Throwable failure) {
    /**
     * Throws {@link #failure}, if there is one, as it was thrown (an {@link Error} as it is); a
     * checked exception, which no task declares, wrapped in an {@link IllegalStateException}.
     */
    void rethrow() {
      if (failure instanceof Error error) {
        throw error;
      } else if (failure instanceof RuntimeException e) {
        throw e;
      } else if (failure != null) {
        throw new IllegalStateException(failure);
      }
    }
  }

  /**
   * Runs every task on {@code pool} and returns once all have ended: what each returned, in the
   * order of the tasks; a failure is thrown once all have ended (see the class comment).
   */
  static <T> List<T> run(ExecutorService pool, List<? extends Task<T>> tasks) {
    Ended<T> ended = runAll(pool, tasks);
    ended.rethrow();
    return ended.results();
  }

  /**
   * As {@link #run}, but a failure is returned with what the other tasks returned rather than
   * thrown, for a caller that must account for those before it fails.
   */
  static <T> Ended<T> runAll(ExecutorService pool, List<? extends Task<T>> tasks) {
    int n = tasks.size();
    AtomicReferenceArray<T> results = new AtomicReferenceArray<>(n);
    AtomicReferenceArray<Throwable> thrown = new AtomicReferenceArray<>(n);
    CountDownLatch ended = new CountDownLatch(n);
    // Guarded by itself: a task leaves it under the lock the caller interrupts under, so that no
    // interrupt of this call reaches a pool thread once its task ended (it may be running another
    // caller's task by then: a sweep and a hand-off share the push threads).
    Set<Thread> running = new HashSet<>();
    // Reaches the tasks that have not started yet too; set at once if the caller comes interrupted
    // (the peer stopped its sweeps before this one began): then no task starts uninterrupted.
    AtomicBoolean interruptedHere = new AtomicBoolean(Thread.currentThread().isInterrupted());
    for (int i = 0; i < n; i++) {
      int at = i;
      Task<T> task = tasks.get(at);
      Runnable run = () -> {
        Thread worker = null;
        try {
          // Inside the try: whatever the pool throws here, the task counts as ended. Once the pool
          // is shut down, the task runs on the thread that shut it down or on the caller's: it is
          // not one to interrupt.
          if (!pool.isShutdown()) {
            worker = Thread.currentThread();
            synchronized (running) {
              running.add(worker);
            }
            if (interruptedHere.get()) { // after the add: an interrupt sent since then reached it anyway
              worker.interrupt();
            }
          }
          results.set(at, task.run(interruptedHere::get));
        } catch (Throwable e) { // a checked one too, thrown where the compiler did not see it
          thrown.set(at, e);
        } finally {
          if (worker != null) {
            synchronized (running) {
              running.remove(worker); // an interrupt sent before this is cleared by the pool before its next task
            }
          }
          ended.countDown();
        }
      };
      try {
        pool.execute(run);
      } catch (RejectedExecutionException stopped) {
        run.run(); // the peer stopped the pool
      }
    }
    while (true) {
      try {
        ended.await();
        break;
      } catch (InterruptedException e) {
        interruptedHere.set(true); // before the interrupts: a task starting now sees it instead
        synchronized (running) {
          running.forEach(Thread::interrupt);
        }
      }
    }
    if (interruptedHere.get()) {
      Thread.currentThread().interrupt();
    }
    Throwable first = null;
    for (int at = 0; at < n; at++) {
      Throwable e = thrown.get(at);
      if (first == null) {
        first = e;
      } else if (e != null) {
        first.addSuppressed(e);
      }
    }
    List<T> all = new ArrayList<>(n);
    for (int at = 0; at < n; at++) {
      all.add(results.get(at));
    }
    return new Ended<>(Collections.unmodifiableList(all), first);
  }
}
