package io.ringmaster.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of one peer's pools, kept so that a stop can wait until each has ended. A pool's
 * {@code awaitTermination} returns once its last worker has left its run loop, while that thread
 * (and others just before it) may still be alive for a moment: only a join says a thread is gone.
 * Threads that have ended are dropped as new ones start, so a long-lived peer whose pools come and
 * go keeps only about as many as are alive.
 */
final class OwnThreads {
  private final Set<Thread> threads = ConcurrentHashMap.newKeySet();

  /** Daemon threads named {@code prefix-1}, {@code prefix-2} and so on, each kept here. */
  ThreadFactory named(String prefix) {
    ThreadFactory daemons = daemons(prefix);
    return r -> {
      threads.removeIf(t -> t.getState() == Thread.State.TERMINATED);
      Thread t = daemons.newThread(r);
      threads.add(t);
      return t;
    };
  }

  /**
   * Daemon threads (they hold up no JVM exit) named {@code prefix-1}, {@code prefix-2} and so on,
   * kept by nobody: for threads outside a peer's pools.
   */
  static ThreadFactory daemons(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** How many threads are kept: those alive, and those ended since the last one started. */
  int kept() {
    return threads.size();
  }

  /**
   * Waits until every thread made here has ended, or until {@code deadline} (a reading of
   * {@link System#nanoTime()}).
   *
   * @return the names of those still alive, in no particular order; empty when all have ended
   * @throws InterruptedException if interrupted while waiting
   */
  List<String> awaitEnded(long deadline) throws InterruptedException {
    List<String> alive = new ArrayList<>();
    for (Thread t : threads) {
      if (t == Thread.currentThread()) {
        continue; // a stop run from one of the peer's own threads cannot wait for itself
      }
      long left = deadline - System.nanoTime();
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(t, left);
      }
      if (t.isAlive()) {
        alive.add(t.getName());
      }
    }
    return alive;
  }
}
