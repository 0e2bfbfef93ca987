package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link FanOut} on its own, with tasks that only wait and say what they saw: the cases the pulls
 * and pushes over real peers ({@link ParallelPullTest}, {@link ParallelPushTest}) do not reach.
 */
class FanOutTest {
  /**
   * With one thread, the second task waits its turn behind the first; the caller interrupted
   * meanwhile interrupts the first, and the second starts interrupted, told so as well: a push still
   * queued at the interrupt sends nothing.
   */
  @Test
  void aTaskStartingAfterTheCallerWasInterrupted_startsInterrupted() throws Exception {
    ExecutorService pool = FanOut.threads(OwnThreads.daemons("fan-out-interrupted"), 1);
    CountDownLatch firstStarted = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    AtomicBoolean firstInterrupted = new AtomicBoolean();
    AtomicBoolean secondStartedInterrupted = new AtomicBoolean();
    AtomicBoolean secondToldSo = new AtomicBoolean();
    AtomicReference<List<String>> results = new AtomicReference<>();
    AtomicBoolean callerStillInterrupted = new AtomicBoolean();
    List<FanOut.Task<String>> tasks = List.of(interrupted -> {
      firstStarted.countDown();
      try {
        never.await();
      } catch (InterruptedException e) {
        firstInterrupted.set(true);
      }
      return "first";
    }, interrupted -> {
      secondStartedInterrupted.set(Thread.currentThread().isInterrupted());
      secondToldSo.set(interrupted.getAsBoolean());
      return "second";
    });
    Thread caller = new Thread(() -> {
      results.set(FanOut.run(pool, tasks));
      callerStillInterrupted.set(Thread.currentThread().isInterrupted());
    }, "caller");
    caller.setDaemon(true);
    try {
      caller.start();
      assertTrue(firstStarted.await(10, TimeUnit.SECONDS), "the first task started");
      await("the caller waits").atMost(Duration.ofSeconds(10)).until(() -> caller.getState() == Thread.State.WAITING);
      caller.interrupt();
      caller.join(10_000);
      assertFalse(caller.isAlive(), "the call returned");
    } finally {
      never.countDown();
      caller.interrupt();
      caller.join(10_000);
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the pool's thread ended");
    }
    assertEquals(List.of("first", "second"), results.get(), "each task's result, in the order of the tasks");
    assertTrue(firstInterrupted.get(), "the running task was interrupted");
    assertTrue(secondStartedInterrupted.get(), "the queued task started interrupted");
    assertTrue(secondToldSo.get(), "and was told the caller was interrupted");
    assertTrue(callerStillInterrupted.get(), "the caller keeps its interrupt");
  }

  /**
   * A caller interrupted already when it calls (the peer stopped its sweeps before this one began)
   * starts every task interrupted, and tells it so, as its own thread would be: even a task that
   * runs before the caller gets to wait, which a pool with idle threads may start at once. Here
   * the "pool" runs each task to its end, on a thread of its own, before it takes the next.
   */
  @Test
  void aCallerInterruptedWhenItCalls_startsEveryTaskInterrupted_evenOneThatRunsBeforeItWaits() throws Exception {
    ExecutorService runsAtOnce = new FinishFirstWorkers();
    FanOut.Task<List<Boolean>> task = interrupted -> List.of(Thread.currentThread().isInterrupted(),
        interrupted.getAsBoolean());

    Thread.currentThread().interrupt();
    List<List<Boolean>> seen;
    boolean stillInterrupted;
    try {
      seen = FanOut.run(runsAtOnce, List.of(task, task));
    } finally {
      stillInterrupted = Thread.interrupted();
    }

    assertEquals(List.of(List.of(true, true), List.of(true, true)), seen,
        "each task started interrupted, and was told the caller was: [interrupted, told] for each");
    assertTrue(stillInterrupted, "the caller keeps its interrupt");
  }

  /**
   * Two callers share a pool of two threads (a sweep and a hand-off share the push threads): the
   * first caller's quick task ends, and its thread goes on to the second caller's task; the first
   * caller, interrupted while its other task still runs, interrupts only that one, not the thread
   * now running the other caller's task.
   */
  @Test
  void anInterruptOfOneCaller_doesNotReachAThreadNowRunningAnotherCallersTask() throws Exception {
    ExecutorService pool = FanOut.threads(OwnThreads.daemons("fan-out-shared"), 2);
    CountDownLatch quickEnded = new CountDownLatch(1);
    CountDownLatch slowStarted = new CountDownLatch(1);
    CountDownLatch otherStarted = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch otherReleased = new CountDownLatch(1);
    AtomicReference<Thread> quickThread = new AtomicReference<>();
    AtomicReference<Thread> otherThread = new AtomicReference<>();
    AtomicBoolean slowInterrupted = new AtomicBoolean();
    AtomicBoolean otherInterrupted = new AtomicBoolean();
    AtomicReference<List<String>> firstResults = new AtomicReference<>();
    AtomicReference<List<String>> otherResults = new AtomicReference<>();
    Thread first = new Thread(() -> firstResults.set(FanOut.run(pool, List.<FanOut.Task<String>>of(interrupted -> {
      quickThread.set(Thread.currentThread());
      quickEnded.countDown();
      return "quick";
    }, interrupted -> {
      slowStarted.countDown();
      try {
        never.await();
      } catch (InterruptedException e) {
        slowInterrupted.set(true);
      }
      return "slow";
    }))), "first-caller");
    Thread other = new Thread(() -> otherResults.set(FanOut.run(pool, List.<FanOut.Task<String>>of(interrupted -> {
      otherThread.set(Thread.currentThread());
      otherStarted.countDown();
      try {
        otherReleased.await();
      } catch (InterruptedException e) {
        otherInterrupted.set(true);
      }
      return "other";
    }))), "other-caller");
    first.setDaemon(true);
    other.setDaemon(true);
    try {
      first.start();
      assertTrue(quickEnded.await(10, TimeUnit.SECONDS) && slowStarted.await(10, TimeUnit.SECONDS), "both tasks ran");
      other.start(); // queued, then taken by the thread whose task ended
      assertTrue(otherStarted.await(10, TimeUnit.SECONDS), "the other caller's task started");
      assertEquals(quickThread.get(), otherThread.get(), "on the thread that ran the quick task");
      await("the first caller waits").atMost(Duration.ofSeconds(10)).until(() -> first.getState() == Thread.State.WAITING);
      first.interrupt();
      first.join(10_000);
      assertFalse(first.isAlive(), "the first call returned");
      otherReleased.countDown();
      other.join(10_000);
      assertFalse(other.isAlive(), "the other call returned");
    } finally {
      never.countDown();
      otherReleased.countDown();
      first.interrupt();
      other.interrupt();
      first.join(10_000);
      other.join(10_000);
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the pool's threads ended");
    }
    assertEquals(List.of("quick", "slow"), firstResults.get());
    assertTrue(slowInterrupted.get(), "the first caller's running task was interrupted");
    assertEquals(List.of("other"), otherResults.get());
    assertFalse(otherInterrupted.get(), "the other caller's task was not interrupted");
  }

  /**
   * A task that throws what it does not declare (a checked exception, thrown sneakily) still counts
   * as ended, and as failed: the call returns what the other task returned, and the failure, which
   * {@code run} would throw wrapped in an unchecked exception.
   */
  @Test
  void aTaskThrowingACheckedException_stillEnds_andItsFailureIsKept() throws Exception {
    ExecutorService pool = FanOut.threads(OwnThreads.daemons("fan-out-checked"), 2);
    IOException checked = new IOException("a checked failure");
    try {
      FanOut.Ended<String> ended = assertTimeoutPreemptively(Duration.ofSeconds(10),
          () -> FanOut.runAll(pool, List.<FanOut.Task<String>>of(interrupted -> {
            throw FanOutTest.<RuntimeException>sneaky(checked);
          }, interrupted -> "second")));

      assertEquals(Arrays.asList(null, "second"), ended.results());
      assertSame(checked, ended.failure(), "the failure is kept, not lost with the pool's thread");
      IllegalStateException thrown = assertThrows(IllegalStateException.class, ended::rethrow);
      assertSame(checked, thrown.getCause());
    } finally {
      pool.shutdownNow();
    }
    assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the pool's threads ended");
  }

  /** Throws {@code t}, checked or not, where the compiler sees no checked exception. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /** A pool shut down takes no task: each runs on the calling thread, in order, none dropped. */
  @Test
  void aShutDownPool_runsEveryTaskOnTheCallingThread() {
    ExecutorService pool = FanOut.threads(OwnThreads.daemons("fan-out-shut-down"), 4);
    pool.shutdownNow();
    AtomicReference<Thread> caller = new AtomicReference<>();

    List<Boolean> onCaller = assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
      caller.set(Thread.currentThread());
      return FanOut.run(pool, List.<FanOut.Task<Boolean>>of(interrupted -> Thread.currentThread() == caller.get(),
          interrupted -> Thread.currentThread() == caller.get()));
    });

    assertEquals(List.of(true, true), onCaller);
  }
}
