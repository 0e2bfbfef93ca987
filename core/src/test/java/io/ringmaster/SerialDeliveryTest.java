package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Filter;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** One listener's deliveries on a same-thread executor, and waiting for them from inside a callback. */
class SerialDeliveryTest {
  private static final long ONE_MINUTE = TimeUnit.MINUTES.toNanos(1);

  @Test
  void awaitIdle_fromACallbackRunInsideThatListenersCallback_returnsAtOnce_notAtTheDeadline() {
    Object node = new Object();
    AtomicReference<Boolean> outerIdle = new AtomicReference<>();
    AtomicReference<SerialDelivery<String>> outer = new AtomicReference<>();
    // The inner listener, on a same-thread executor, waits for the outer one, whose callback runs it.
    SerialDelivery<String> inner = new SerialDelivery<>("inner", event -> {
      try {
        outerIdle.set(outer.get().awaitIdle(System.nanoTime() + ONE_MINUTE, runner -> false));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, Runnable::run, node, () -> { });
    outer.set(new SerialDelivery<>("outer", inner::submit, Runnable::run, node, () -> { }));

    long started = System.nanoTime();
    outer.get().submit("go");
    assertEquals(Boolean.TRUE, outerIdle.get(), "the outer callback is up this thread's stack: nothing to wait for");
    assertTrue(System.nanoTime() - started < ONE_MINUTE, "returned before the deadline");
    assertEquals(0, outer.get().pending());
  }

  /**
   * The first callback of a listener being added is launched by the thread adding it, not by
   * another thread's launch in between (a listener's close() or awaitListeners()): a refusal
   * seen on that other thread would reach the adding thread too late, and it would return a
   * registration for a listener already removed.
   */
  @Test
  void aFirstEvent_isLaunchedOnlyByTheAddingThread_whichSoSeesTheExecutorRefuseIt() throws Exception {
    AtomicInteger offered = new AtomicInteger();
    AtomicInteger removed = new AtomicInteger();
    Executor refusing = task -> {
      offered.incrementAndGet();
      throw new RejectedExecutionException("pool full");
    };
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, refusing, new Object(),
        removed::incrementAndGet);
    assertTrue(delivery.enqueueFirst("initial"));
    Thread other = new Thread(delivery::launch, "another launcher");
    other.start();
    other.join();
    assertEquals(0, offered.get(), "another thread's launch leaves the first event to the adding thread");

    delivery.launchFirst();
    assertEquals(1, offered.get());
    assertEquals(1, removed.get(), "the refusal removed the listener");
    RejectedExecutionException e = assertThrows(RejectedExecutionException.class, delivery::requireAccepted);
    assertTrue(e.getMessage().contains("pool full"), e.getMessage());
  }

  @Test
  void callingExecutor_isTheInnermostListeners_andNoneOutsideACallback() {
    Object node = new Object();
    Executor innerExecutor = Runnable::run; // two same-thread executors, told apart by identity
    Executor outerExecutor = Runnable::run;
    List<Object> seen = new CopyOnWriteArrayList<>();
    SerialDelivery<String> inner = new SerialDelivery<>("inner",
        event -> seen.add(SerialDelivery.callingExecutor(node)), innerExecutor, node, () -> { });
    SerialDelivery<String> outer = new SerialDelivery<>("outer", event -> {
      inner.submit(event);
      seen.add(SerialDelivery.callingExecutor(node)); // back in the outer callback
    }, outerExecutor, node, () -> { });

    outer.submit("go");
    assertEquals(List.of(innerExecutor, outerExecutor), seen);
    assertNull(SerialDelivery.callingExecutor(node), "no trace left on this thread");
  }

  @Test
  void aListenerThatThrows_whileLoggingThrowsToo_stillGetsTheLaterCallbacks() {
    Logger log = Logger.getLogger(Ringmaster.class.getName()); // the logger SerialDelivery reports to
    Filter before = log.getFilter();
    List<String> delivered = new CopyOnWriteArrayList<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
      delivered.add(event);
      if (event.equals("first")) {
        throw new IllegalStateException("the listener's own bug");
      }
    }, Runnable::run, new Object(), () -> { });
    log.setFilter(record -> {
      throw new IllegalStateException("a logging filter's bug");
    });
    try {
      delivery.submit("first");
      delivery.submit("second");
    } finally {
      log.setFilter(before);
    }
    assertEquals(List.of("first", "second"), delivered);
    assertEquals(0, delivery.pending(), "not left marked running");
  }

  /**
   * An executor's refusal removes the listener and stays for requireAccepted, even while logging
   * it throws: the launch does not throw, so the launches to other listeners after it still go.
   */
  @Test
  void aRefusal_whileLoggingThrows_stillRemovesTheListener_andTheLaunchDoesNotThrow() {
    Logger log = Logger.getLogger(Ringmaster.class.getName());
    Filter before = log.getFilter();
    AtomicInteger removed = new AtomicInteger();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, task -> {
      throw new RejectedExecutionException("pool full");
    }, new Object(), removed::incrementAndGet);
    log.setFilter(record -> {
      throw new IllegalStateException("a logging filter's bug");
    });
    try {
      delivery.submit("refused");
    } finally {
      log.setFilter(before);
    }
    assertEquals(1, removed.get(), "the listener was removed");
    assertTrue(delivery.refused());
    assertThrows(RejectedExecutionException.class, delivery::requireAccepted);
  }
}
