package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ClusterNode.ListenersState;
import java.time.Duration;
import java.util.AbstractList;
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
 * listeners waiting for each other that forms only after the later wait looked for one, and chains
 * of waits that make no circle, which the later wait must not stop for. AwaitTest covers circles
 * through a node; there the later wait usually finds its circle at once.
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

  /**
   * As the class promises, a callback queued behind another on a serial executor makes no circle:
   * l1's callback waits for z, queued behind w's held callback on the same thread; l2's callback,
   * which began waiting later, waits for l1. Following the waits from l1 ends at z, which no thread
   * runs yet: l2 is in no circle and goes on waiting, and once w is released every wait ends idle.
   */
  @Test
  void await_throughACallbackQueuedBehindAnother_isNoCircle_andWaitsUntilItRuns() throws Exception {
    ListenerWaits waits = new ListenerWaits();
    ExecutorService zThread = Executors.newSingleThreadExecutor();
    ExecutorService l1Thread = Executors.newSingleThreadExecutor();
    ExecutorService l2Thread = Executors.newSingleThreadExecutor();
    CountDownLatch releaseW = new CountDownLatch(1);
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      Object owner = new Object();
      SerialDelivery<String> w = new SerialDelivery<>("w", e -> awaitQuietly(releaseW), zThread, owner, () -> { });
      SerialDelivery<String> z = new SerialDelivery<>("z", e -> { }, zThread, owner, () -> { });
      CompletableFuture<ListenersState> first = new CompletableFuture<>();
      CompletableFuture<ListenersState> later = new CompletableFuture<>();
      @SuppressWarnings("unchecked")
      SerialDelivery<String>[] l1 = new SerialDelivery[1];
      l1[0] = new SerialDelivery<>("l1", e -> waitFor(waits, List.of(z), l1[0], deadline, first), l1Thread,
          owner, () -> { });

      w.submit("held");
      z.submit("queued behind w");
      l1[0].submit("change");
      Awaitility.await("l1 waits for z").atMost(Duration.ofSeconds(30))
          .until(() -> waits.names().contains("z"));
      startLaterWaitFor(l1[0], waits, l2Thread, owner, deadline, later);
      releaseW.countDown();

      assertEquals(ListenersState.IDLE, later.get(30, TimeUnit.SECONDS), "the later wait, in no circle, waited");
      assertEquals(ListenersState.IDLE, first.get(30, TimeUnit.SECONDS), "z ran once w was done");
      assertEquals(List.of(), waits.names(), "no wait left");
    } finally {
      releaseW.countDown();
      zThread.shutdownNow();
      l1Thread.shutdownNow();
      l2Thread.shutdownNow();
    }
  }

  /**
   * A call that has begun but waits for no listener yet (between two, or before its first) is in no
   * circle: a later wait for the listener whose callback made that call goes on waiting. l1's call
   * is held while it looks among the callbacks its thread runs; l2's callback, which began waiting
   * later, waits for l1 meanwhile, and ends idle once l1's call is let go.
   */
  @Test
  void await_forACallbackWhoseOwnCallWaitsForNoOneYet_isNoCircle() throws Exception {
    ListenerWaits waits = new ListenerWaits();
    ExecutorService l1Thread = Executors.newSingleThreadExecutor();
    ExecutorService l2Thread = Executors.newSingleThreadExecutor();
    CountDownLatch looking = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      Object owner = new Object();
      SerialDelivery<String> idle = new SerialDelivery<>("idle", e -> { }, l1Thread, owner, () -> { });
      CompletableFuture<ListenersState> first = new CompletableFuture<>();
      CompletableFuture<ListenersState> later = new CompletableFuture<>();
      @SuppressWarnings("unchecked")
      SerialDelivery<String>[] l1 = new SerialDelivery[1];
      List<SerialDelivery<?>> l1Runs = new AbstractList<>() {
        @Override
        public SerialDelivery<?> get(int index) {
          return l1[0];
        }

        @Override
        public int size() {
          return 1;
        }

        @Override
        public boolean contains(Object o) {
          looking.countDown();
          awaitQuietly(letGo);
          return super.contains(o);
        }
      };
      l1[0] = new SerialDelivery<>("l1", e -> waitFor(waits, List.of(idle), l1Runs, deadline, first), l1Thread,
          owner, () -> { });

      l1[0].submit("change");
      assertTrue(looking.await(30, TimeUnit.SECONDS), "l1's call has begun");
      startLaterWaitFor(l1[0], waits, l2Thread, owner, deadline, later);
      letGo.countDown();

      assertEquals(ListenersState.IDLE, later.get(30, TimeUnit.SECONDS), "the later wait, in no circle, waited");
      assertEquals(ListenersState.IDLE, first.get(30, TimeUnit.SECONDS));
      assertEquals(List.of(), waits.names(), "no wait left");
    } finally {
      letGo.countDown();
      l1Thread.shutdownNow();
      l2Thread.shutdownNow();
    }
  }

  /**
   * A callback that waits for every listener, its own among them (a listener calling
   * awaitListeners()), does not wait for its own: that counts as idle, not as a circle, and the
   * wait ends idle once the others are.
   */
  @Test
  void await_fromACallback_forItsOwnListenerAmongOthers_endsIdle() throws Exception {
    ListenerWaits waits = new ListenerWaits();
    ExecutorService ownThread = Executors.newSingleThreadExecutor();
    ExecutorService otherThread = Executors.newSingleThreadExecutor();
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      Object owner = new Object();
      SerialDelivery<String> other = new SerialDelivery<>("other", e -> { }, otherThread, owner, () -> { });
      CompletableFuture<ListenersState> result = new CompletableFuture<>();
      @SuppressWarnings("unchecked")
      SerialDelivery<String>[] own = new SerialDelivery[1];
      own[0] = new SerialDelivery<>("own", e -> waitFor(waits, List.of(own[0], other), own[0], deadline, result),
          ownThread, owner, () -> { });

      other.submit("change");
      own[0].submit("change");

      assertEquals(ListenersState.IDLE, result.get(30, TimeUnit.SECONDS), "its own listener is not waited for");
      assertEquals(List.of(), waits.names(), "no wait left");
    } finally {
      ownThread.shutdownNow();
      otherThread.shutdownNow();
    }
  }

  /**
   * Starts l2, whose callback on {@code thread} waits for {@code l1}, its result going to
   * {@code later}; returns once that wait waits for l1, or has stopped.
   */
  private static void startLaterWaitFor(SerialDelivery<?> l1, ListenerWaits waits, ExecutorService thread,
                                        Object owner, long deadline, CompletableFuture<ListenersState> later)
      throws Exception {
    CompletableFuture<Thread> laterThread = new CompletableFuture<>();
    @SuppressWarnings("unchecked")
    SerialDelivery<String>[] l2 = new SerialDelivery[1];
    l2[0] = new SerialDelivery<>("l2", e -> {
      laterThread.complete(Thread.currentThread());
      waitFor(waits, List.of(l1), l2[0], deadline, later);
    }, thread, owner, () -> { });
    l2[0].submit("change");
    Thread runs = laterThread.get(30, TimeUnit.SECONDS);
    Awaitility.await("l2 waits for l1, or has stopped").atMost(Duration.ofSeconds(30))
        .until(() -> later.isDone() || waits.names().contains("l1") && runs.getState() == Thread.State.TIMED_WAITING);
  }

  private static void waitFor(ListenerWaits waits, List<SerialDelivery<?>> awaited, SerialDelivery<?> running,
                              long deadline, CompletableFuture<ListenersState> result) {
    waitFor(waits, awaited, List.of(running), deadline, result);
  }

  private static void waitFor(ListenerWaits waits, List<SerialDelivery<?>> awaited, List<SerialDelivery<?>> running,
                              long deadline, CompletableFuture<ListenersState> result) {
    try {
      result.complete(waits.await(awaited, running, deadline));
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
