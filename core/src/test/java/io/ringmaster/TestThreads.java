package io.ringmaster;

import java.util.concurrent.Executor;

/** Threads for the tasks tests start beside their own, in core's tests and the demo's. */
public final class TestThreads {
  /**
   * Runs each task on a thread of its own, for tasks meant to run at the same time as each other or
   * as the test's thread (a write in flight while the test stops a peer, a request held until the
   * test lets it go, a close). Not the common pool: on Java 21 and later CompletableFuture queues a
   * task given no executor there even when the pool has a single worker (on 2 cores), so such tasks
   * overlap only where one blocks in a wait the pool makes up for with another thread (a
   * CompletableFuture's get, say), and one waiting on a latch holds up those queued behind it. Each
   * task must end by its test's end.
   */
  public static final Executor ON_OWN_THREAD = task -> {
    Thread t = new Thread(task, "test-own-thread");
    t.setDaemon(true);
    t.start();
  };

  private TestThreads() {
  }
}
