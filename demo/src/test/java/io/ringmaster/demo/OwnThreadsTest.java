package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** What a peer's stop waits for: every thread of its pools ended, not only the pools. */
class OwnThreadsTest {
  private final OwnThreads threads = new OwnThreads();

  /**
   * A pool counts as terminated once its last worker has left its loop, while the thread may still
   * run: here it is held past that point, and only its end ends the wait.
   */
  @Test
  void awaitEnded_waitsForAThreadThatOutlivesItsTerminatedPool() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<Thread> made = new AtomicReference<>();
    ThreadFactory named = threads.named("held");
    ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
      Thread t = named.newThread(() -> {
        r.run();
        awaitQuietly(release); // after the worker's loop: the pool has terminated by then
      });
      made.set(t);
      return t;
    });
    pool.execute(() -> { });
    pool.shutdown();
    assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "the pool terminated");
    assertTrue(made.get().isAlive(), "its thread still runs");
    assertEquals(List.of("held-1"), threads.awaitEnded(deadlineIn(Duration.ofMillis(50))), "still held");

    // The thread is let go only once a wait for it has begun (or has returned already, wrongly).
    AtomicReference<List<String>> alive = new AtomicReference<>();
    Thread waiter = new Thread(() -> {
      try {
        alive.set(threads.awaitEnded(deadlineIn(Duration.ofSeconds(30))));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    waiter.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> waiter.getState() == Thread.State.TIMED_WAITING
        || !waiter.isAlive());
    release.countDown();
    waiter.join();
    assertEquals(List.of(), alive.get(), "the wait returned once the thread had ended");
    assertFalse(made.get().isAlive());
  }

  /** A stop run on one of the peer's own threads does not wait for that thread. */
  @Test
  void awaitEnded_fromOneOfItsThreads_doesNotWaitForThatOne() throws Exception {
    AtomicReference<List<String>> alive = new AtomicReference<>();
    Thread t = threads.named("self").newThread(() -> {
      try {
        alive.set(threads.awaitEnded(deadlineIn(Duration.ofSeconds(1))));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    t.start();
    t.join();
    assertEquals(List.of(), alive.get());
  }

  /** A long-lived peer's pools make threads as they come and go: those that ended are not kept. */
  @Test
  void named_dropsThreadsThatEnded_asNewOnesAreMade() throws Exception {
    ThreadFactory named = threads.named("short");
    for (int i = 0; i < 5; i++) {
      Thread t = named.newThread(() -> { });
      t.start();
      t.join();
    }
    assertEquals(1, threads.kept(), "the last one only");
    Thread notStarted = named.newThread(() -> { });
    assertEquals(1, threads.kept(), "the one made, not yet started");
    assertTrue(notStarted.isDaemon(), "a daemon: it holds up no JVM exit");
    assertEquals("short-6", notStarted.getName());
  }

  private static long deadlineIn(Duration d) {
    return System.nanoTime() + d.toNanos();
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
