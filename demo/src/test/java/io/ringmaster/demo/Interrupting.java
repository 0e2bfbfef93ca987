package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Runs a call that waits (a pull for its page, a push for its answer) on a thread of its own and
 * interrupts that thread while it waits, for the tests of what an interrupted wait does: whether the
 * call returns, with what, and whether its thread keeps the interrupt for its caller to see.
 */
final class Interrupting {
  private Interrupting() {}

  /** What the interrupted call returned, and whether its thread was still interrupted then. */
  record Ended<T>(T result, boolean stillInterrupted) {}

  /**
   * Starts {@code call} on a daemon thread named {@code name}, interrupts it once {@code waiting}
   * is counted down (within 20 s: the test fails, saying {@code what}, if it is not), and returns
   * what the call returned once it ended (within 10 s: else the test fails). Whatever happens, the
   * thread is interrupted again and waited for, up to {@code atMost}, so that the test leaves none
   * running.
   */
  static <T> Ended<T> whileWaiting(String name, Supplier<T> call, CountDownLatch waiting, String what,
                                   Duration atMost) throws InterruptedException {
    AtomicReference<Ended<T>> ended = new AtomicReference<>();
    Thread caller = new Thread(() -> {
      T result = call.get();
      ended.set(new Ended<>(result, Thread.currentThread().isInterrupted()));
    }, name);
    caller.setDaemon(true);
    caller.start();
    try {
      assertTrue(waiting.await(20, TimeUnit.SECONDS), what);
      caller.interrupt();
      caller.join(10_000);
      assertFalse(caller.isAlive(), "the call returned once interrupted");
    } finally {
      caller.interrupt();
      caller.join(atMost.toMillis());
    }
    return ended.get();
  }
}
