package io.ringmaster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/**
 * The threads a test starts beside its own (a close, a start, held until the test lets them go),
 * each ended before the test is, whether it passed or failed halfway. Closing this joins every
 * thread; one still running after {@code patience} is interrupted and waited for as long again,
 * and one still running then fails the test, by name. Declared as the last resource of a
 * try-with-resources, it closes before the cluster the threads act on: a failed test leaves no
 * close or start of its under way while the cluster stops its nodes. What the threads wait for (a
 * latch, the coordinator's held requests) must be let go in a {@code finally} inside that try,
 * which runs first.
 */
final class JoinedThreads implements AutoCloseable {
  private final Duration patience;
  private final List<Thread> threads = new CopyOnWriteArrayList<>();

  JoinedThreads(Duration patience) {
    this.patience = patience;
  }

  /** Runs {@code task} on a new thread named {@code name}; the future has its result, or what it threw. */
  <T> CompletableFuture<T> supply(String name, Supplier<T> task) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        result.complete(task.get());
      } catch (Throwable e) {
        result.completeExceptionally(e);
      }
    }, name);
    threads.add(t);
    t.start();
    return result;
  }

  /** As {@link #supply}, for a task with no result. */
  CompletableFuture<Void> run(String name, Runnable task) {
    return supply(name, () -> {
      task.run();
      return null;
    });
  }

  @Override
  public void close() throws InterruptedException {
    List<String> running = new ArrayList<>();
    for (Thread t : threads) {
      t.join(patience.toMillis());
      if (t.isAlive()) {
        t.interrupt();
        t.join(patience.toMillis());
      }
      if (t.isAlive()) {
        running.add(t.getName());
      }
    }
    if (!running.isEmpty()) {
      throw new AssertionError("threads still running " + patience.multipliedBy(2).toSeconds()
          + " s after the test, the last half of it interrupted: " + running);
    }
  }
}
