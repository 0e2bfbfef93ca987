package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ringmaster.ClusterNode.ListenersState;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * {@link ListenerWaits} on its own, with real deliveries on threads of their own: a circle of
 * listeners waiting for each other that forms only after the later wait looked for one. AwaitTest
 * covers circles through a node; there the later wait usually finds its circle at once.
 */
class ListenerWaitsTest {

  /**
   * l1's callback waits for s, then for l2; l2's callback, which began waiting later, waits for l1.
   * When l2's wait looks, l1 waits for s: no circle yet. Once s is done, l1 waits for l2, closing
   * the circle, and wakes l2's wait to look again: l2 stops waiting (IN_A_CIRCLE), its callback
   * returns, and l1's wait ends with every listener idle. Without that wake, both would wait until
   * their deadline.
   */
  @Test
  void await_aCircleClosedAfterTheLaterWaitLooked_isBrokenByTheLaterWait() throws Exception {
    ListenerWaits waits = new ListenerWaits();
    ExecutorService sThread = Executors.newSingleThreadExecutor();
    ExecutorService l1Thread = Executors.newSingleThreadExecutor();
    ExecutorService l2Thread = Executors.newSingleThreadExecutor();
    CountDownLatch releaseS = new CountDownLatch(1);
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      Object owner = new Object();
      SerialDelivery<String> s = new SerialDelivery<>("s", e -> awaitQuietly(releaseS), sThread, owner, () -> { });
      CompletableFuture<ListenersState> first = new CompletableFuture<>();
      CompletableFuture<ListenersState> later = new CompletableFuture<>();
      @SuppressWarnings("unchecked")
      SerialDelivery<String>[] l = new SerialDelivery[2];
      l[0] = new SerialDelivery<>("l1", e -> waitFor(waits, List.of(s, l[1]), l[0], deadline, first), l1Thread,
          owner, () -> { });
      l[1] = new SerialDelivery<>("l2", e -> waitFor(waits, List.of(l[0]), l[1], deadline, later), l2Thread,
          owner, () -> { });

      s.submit("held");
      l[0].submit("change");
      Awaitility.await("l1 waits for s").atMost(Duration.ofSeconds(30))
          .until(() -> waits.names().contains("s"));
      l[1].submit("change");
      Awaitility.await("l2 waits for l1").atMost(Duration.ofSeconds(30))
          .until(() -> waits.names().contains("l1"));
      releaseS.countDown();

      assertEquals(ListenersState.IN_A_CIRCLE, later.get(30, TimeUnit.SECONDS), "the later wait stops");
      assertEquals(ListenersState.IDLE, first.get(30, TimeUnit.SECONDS), "the first goes on, and ends idle");
      assertEquals(List.of(), waits.names(), "no wait left");
    } finally {
      releaseS.countDown();
      sThread.shutdownNow();
      l1Thread.shutdownNow();
      l2Thread.shutdownNow();
    }
  }

  private static void waitFor(ListenerWaits waits, List<SerialDelivery<?>> awaited, SerialDelivery<?> running,
                              long deadline, CompletableFuture<ListenersState> result) {
    try {
      result.complete(waits.await(awaited, List.of(running), deadline));
    } catch (InterruptedException | RuntimeException e) {
      result.completeExceptionally(e);
    }
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(60, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
