package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The leak checks' thread list: a thread started since is named, but not a worker of the common
 * pool, which the whole JVM shares and which a check cannot wait out.
 */
class LeftBehindTest {
  @Test
  void liveThreads_leaveOutTheCommonPoolsWorkers() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<Thread> worker = new CompletableFuture<>();
    ForkJoinPool.commonPool().execute(() -> {
      worker.complete(Thread.currentThread());
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    try {
      Thread running = worker.get(30, TimeUnit.SECONDS);
      assertTrue(running.isAlive());
      assertFalse(LeftBehind.liveThreads().contains(running), running.getName() + " listed");
    } finally {
      release.countDown();
    }
  }

  @Test
  void awaitNoThreadBut_namesAThreadStartedSince() throws Exception {
    Set<Thread> before = LeftBehind.liveThreads();
    CountDownLatch release = new CountDownLatch(1);
    Thread late = new Thread(() -> {
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "left-behind-test");
    late.start();
    try {
      ConditionTimeoutException failed = assertThrows(ConditionTimeoutException.class,
          () -> LeftBehind.awaitNoThreadBut(before, Duration.ofMillis(300)));
      assertTrue(failed.getMessage().contains("left-behind-test (WAITING)"), failed.getMessage());
    } finally {
      release.countDown();
      late.join();
    }
    LeftBehind.awaitNoThreadBut(before, Duration.ofSeconds(10));
    assertFalse(late.isAlive());
  }
}
