package io.ringmaster.demo;

import java.util.concurrent.Executor;

/** Threads for the tasks tests start beside their own. */
final class TestThreads {
  /**
   * Runs each task on a thread of its own, for tasks meant to run at the same time as each other or
   * as the test's thread (a write in flight while the test stops a peer, a request the test's
   * thread answers). Not the common pool: on Java 21 and later CompletableFuture queues a task
   * given no executor there even when the pool has a single worker (on 2 cores), and such tasks
   * would run one after another, or wait for good behind one that waits for another. Each task
   * must end by its test's end.
   */
  static final Executor ON_OWN_THREAD = task -> {
    Thread t = new Thread(task, "test-own-thread");
    t.setDaemon(true);
    t.start();
  };

  private TestThreads() {
  }
}
