package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

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

    outer.get().submit("go");
    // TRUE: returned at once, not at the deadline (which gives FALSE).
    assertEquals(Boolean.TRUE, outerIdle.get(), "the outer callback is up this thread's stack: nothing to wait for");
    assertEquals(0, outer.get().pending());
  }

  /**
   * A listener whose callbacks pile up behind a busy one gets one WARNING as its queue reaches
   * {@link SerialDelivery#LAG_WARNING}, not one per callback after it; once it has caught up, an
   * INFO line says so, and a second lag is warned of again.
   */
  @Test
  void aListenerThatFallsBehind_isWarnedOfOncePerLag_andItsCatchingUpIsLogged() {
    List<Runnable> held = new CopyOnWriteArrayList<>(); // the executor runs nothing until told
    List<String> delivered = new CopyOnWriteArrayList<>();
    SerialDelivery<String> d = new SerialDelivery<>("slow listener", delivered::add, held::add, new Object(), () -> { });
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith("slow listener"))) {
      for (int lag = 1; lag <= 2; lag++) {
        for (int i = 0; i < SerialDelivery.LAG_WARNING * 2; i++) {
          d.submit("event " + i);
          assertEquals(i + 1 < SerialDelivery.LAG_WARNING ? 2 * (lag - 1) : 2 * lag - 1, log.records().size(),
              "after " + (i + 1) + " queued: " + log.records().stream().map(r -> r.getMessage()).toList());
        }
        assertEquals(1, held.size(), "one drain launched");
        held.remove(0).run(); // the listener catches up
        assertEquals(SerialDelivery.LAG_WARNING * 2 * lag, delivered.size());
        assertEquals(2 * lag, log.records().size());
      }
      assertEquals(List.of(Level.WARNING, Level.INFO, Level.WARNING, Level.INFO), log.levels());
      assertTrue(log.records().get(0).getMessage().startsWith("slow listener falls behind: " + SerialDelivery.LAG_WARNING
          + " callbacks are queued"), log.records().get(0).getMessage());
      assertEquals("slow listener caught up: no callback queued", log.records().get(1).getMessage());
    }
  }

  /**
   * An interrupt a callback leaves set (one it was sent, and kept, as it should) is not the next
   * callback's on the node's own pool, where close() sends them: that one starts without it, and
   * the thread gets it back when the drain ends. On an application's executor the interrupt is the
   * application's (close() never interrupts those threads, and shutdownNow() would mean it for
   * every callback after): the next callback sees it.
   */
  @Test
  void anInterruptLeftByACallback_isHiddenFromTheNextOnTheNodesPool_butNotOnTheApplications() {
    for (boolean foreign : new boolean[] {false, true}) {
      List<Runnable> held = new CopyOnWriteArrayList<>();
      List<Boolean> seen = new CopyOnWriteArrayList<>();
      SerialDelivery<String> d = new SerialDelivery<>("listener", event -> {
        seen.add(Thread.currentThread().isInterrupted());
        if (event.equals("first")) {
          Thread.currentThread().interrupt(); // as if sent during the callback, and kept
        }
      }, held::add, foreign, new Object(), () -> { }, new LongAdder());
      d.submit("first");
      d.submit("second");
      assertEquals(1, held.size(), "one drain for both");
      held.remove(0).run(); // on this thread, as the executor's would
      boolean after = Thread.interrupted(); // and cleared: later tests run on this thread
      assertEquals(List.of(false, foreign), seen, foreign ? "on the application's executor" : "on the node's pool");
      assertTrue(after, "the thread has the interrupt when the drain ends");
    }
  }

  /**
   * The WARNING of a listener that falls behind is logged by the launch the publisher makes after
   * releasing its lock, not while it queues the change under that lock: a logger that blocks (a
   * full asynchronous appender) would hold every thread that takes the node's publish lock.
   */
  @Test
  void theLagWarning_isLoggedByTheLaunchAfterTheQueuing_notByTheQueuing() {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    SerialDelivery<String> d = new SerialDelivery<>("lagging listener", e -> { }, held::add, new Object(), () -> { });
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith("lagging listener"))) {
      assertTrue(d.enqueue("event 1"), "idle: to be launched");
      d.launch();
      for (int i = 2; i < SerialDelivery.LAG_WARNING; i++) {
        assertFalse(d.enqueue("event " + i), "running: nothing to launch");
      }
      assertTrue(d.enqueue("event " + SerialDelivery.LAG_WARNING), "fell behind: a WARNING for the launch to log");
      assertEquals(List.of(), log.levels(), "nothing logged while queuing");
      d.launch();
      assertEquals(List.of(Level.WARNING), log.levels());
      d.launch();
      assertEquals(List.of(Level.WARNING), log.levels(), "once");
      assertEquals(1, held.size());
    }
  }

  /**
   * The adding thread claims the first launch in the same step that lets others launch: while it
   * logs (here, a lag WARNING, held by a logger that blocks), another thread's launch finds nothing
   * to launch, and the executor's refusal of the first callback reaches the adding thread.
   */
  @Test
  void aFirstLaunch_thatLogsFirst_isStillTheAddingThreads() throws Exception {
    AtomicInteger offered = new AtomicInteger();
    Executor refusing = task -> {
      offered.incrementAndGet();
      throw new RejectedExecutionException("pool full");
    };
    SerialDelivery<String> delivery = new SerialDelivery<>("first listener", event -> { }, refusing, new Object(),
        () -> { });
    CountDownLatch logging = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (NodeLog log = new NodeLog(r -> {
      if (r.getMessage().startsWith("first listener falls behind")) {
        logging.countDown();
        try {
          release.await(30, TimeUnit.SECONDS); // bounded: a regression that blocks the other thread here fails below
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return true;
    })) {
      assertTrue(delivery.enqueueFirst("initial"));
      for (int i = 1; i < SerialDelivery.LAG_WARNING; i++) {
        delivery.enqueue("change " + i); // the last one makes a lag WARNING due
      }
      Thread adding = new Thread(delivery::launchFirst, "adding thread");
      adding.start();
      assertTrue(logging.await(10, TimeUnit.SECONDS), "the adding thread logs the WARNING");
      Thread other = new Thread(delivery::launch, "another launcher");
      other.start();
      other.join(10_000);
      assertFalse(other.isAlive(), "the other launch returned at once");
      assertEquals(0, offered.get(), "the other thread launched nothing");
      release.countDown();
      adding.join(10_000);
      assertFalse(adding.isAlive());
      assertEquals(1, offered.get());
      assertThrows(RejectedExecutionException.class, delivery::requireAccepted);
    } finally {
      release.countDown();
    }
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

  /**
   * An event that cannot be queued (in the field, no memory for the queue to grow; here a null,
   * which the queue refuses too) does not throw at the publisher, and removes the listener, by the
   * next launch, rather than leave it a sequence with a gap: the events after it are not delivered.
   */
  @Test
  void anEventThatCannotBeQueued_removesTheListener_withoutThrowingAtThePublisher() throws Exception {
    List<String> delivered = new CopyOnWriteArrayList<>();
    AtomicInteger removed = new AtomicInteger();
    CountDownLatch release = new CountDownLatch(1);
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
    try {
      SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
        delivered.add(event);
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, pool, new Object(), removed::incrementAndGet);
      delivery.submit("first");
      await("busy with the first event").atMost(Duration.ofMinutes(1))
          .until(() -> delivered.size() == 1); // the next events queue behind it
      assertFalse(assertDoesNotThrow(() -> delivery.enqueue("second")), "queued behind a busy callback");
      assertTrue(assertDoesNotThrow(() -> delivery.enqueue(null)), "the caller must launch, to report it");
      assertEquals(0, removed.get(), "reported by the launch, outside the publisher's lock");
      assertDoesNotThrow(delivery::launch);
      assertEquals(1, removed.get(), "the listener is removed");
      assertFalse(delivery.enqueue("third"), "nothing more is queued");
      release.countDown();
      pool.shutdown();
      assertTrue(pool.awaitTermination(1, TimeUnit.MINUTES));
      assertEquals(List.of("first"), delivered, "the listener removed: nothing queued with or after the lost event");
      assertDoesNotThrow(delivery::requireAccepted, "the listener was added: its first event was delivered");
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }

  /** A first event that cannot be queued fails the add, on the adding thread, as a refused one does. */
  @Test
  void aFirstEventThatCannotBeQueued_failsTheAdd() {
    AtomicInteger removed = new AtomicInteger();
    AtomicInteger offered = new AtomicInteger();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, task -> {
      offered.incrementAndGet();
      task.run();
    }, new Object(), removed::incrementAndGet);
    assertTrue(delivery.enqueueFirst(null));
    delivery.launch(); // another thread's launch leaves the report to the adding thread
    assertEquals(0, removed.get());
    delivery.launchFirst();
    assertEquals(1, removed.get());
    assertEquals(0, offered.get(), "nothing to deliver");
    RejectedExecutionException e = assertThrows(RejectedExecutionException.class, delivery::requireAccepted);
    assertTrue(e.getCause() instanceof NullPointerException, e::toString);
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

  /**
   * An Error thrown by a listener (an assertion, a class that failed to load) is the listener's
   * failure like any other: logged, and the later callbacks still come, on the caller's thread and
   * on a pool alike. Caught narrower, it would kill the pool's worker with the listener marked
   * running (deaf from then on), or escape the same-thread executor as if it refused the callback.
   */
  @Test
  void aListenerThatThrowsAnError_stillGetsTheLaterCallbacks_onTheCallersThreadAndOnAPool() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try {
      for (Executor executor : List.<Executor>of(Runnable::run, pool)) {
        List<String> delivered = new CopyOnWriteArrayList<>();
        SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
          delivered.add(event);
          if (event.equals("first")) {
            throw new AssertionError("the listener's own bug");
          }
        }, executor, new Object(), () -> { });
        try (NodeLog log = new NodeLog(record -> record.getThrown() instanceof AssertionError)) {
          delivery.submit("first");
          delivery.submit("second");
          assertTrue(delivery.awaitIdle(System.nanoTime() + ONE_MINUTE, thread -> false), "the callbacks ran");
          assertEquals(1, log.records().size(), "the listener's Error was logged");
        }
        String where = executor == pool ? "on a pool" : "on the caller's thread";
        assertEquals(List.of("first", "second"), delivered, where);
        assertFalse(delivery.refused(), "an Error of the listener is no refusal of its executor");
        assertEquals(0, delivery.pending(), "not left marked running");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest(name = "the logger throws an Error: {0}")
  @ValueSource(booleans = {false, true})
  void aListenerThatThrows_whileLoggingThrowsToo_stillGetsTheLaterCallbacks(boolean loggerThrowsAnError) {
    List<String> delivered = new CopyOnWriteArrayList<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
      delivered.add(event);
      if (event.equals("first")) {
        throw new IllegalStateException("the listener's own bug");
      }
    }, Runnable::run, new Object(), () -> { });
    try (ThrowingLog log = new ThrowingLog(record -> true, loggerThrowsAnError)) {
      delivery.submit("first");
      delivery.submit("second");
      assertTrue(log.thrown() >= 1, "the listener's exception was logged, and the logging threw");
    }
    assertEquals(List.of("first", "second"), delivered);
    assertEquals(0, delivery.pending(), "not left marked running");
  }

  /**
   * An executor's refusal removes the listener and stays for requireAccepted, even while logging
   * it throws: the launch does not throw, so the launches to other listeners after it still go.
   * (A first callback's refusal is logged at DEBUG, which the logger takes here.)
   */
  @Test
  void aRefusal_whileLoggingThrows_stillRemovesTheListener_andTheLaunchDoesNotThrow() {
    AtomicInteger removed = new AtomicInteger();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, task -> {
      throw new RejectedExecutionException("pool full");
    }, new Object(), removed::incrementAndGet);
    try (NodeLog every = new NodeLog(record -> true); ThrowingLog log = new ThrowingLog(record -> true)) {
      assertTrue(delivery.enqueueFirst("refused"));
      delivery.launchFirst();
      assertTrue(log.thrown() >= 1, "the refusal was logged, and the logging threw");
    }
    assertEquals(1, removed.get(), "the listener was removed");
    assertTrue(delivery.refused());
    assertThrows(RejectedExecutionException.class, delivery::requireAccepted);

    // A later callback's refusal, logged at ERROR: the same while that line throws.
    AtomicInteger laterRemoved = new AtomicInteger();
    AtomicBoolean refuse = new AtomicBoolean();
    SerialDelivery<String> later = new SerialDelivery<>("later", event -> { }, task -> {
      if (refuse.get()) {
        throw new RejectedExecutionException("pool full");
      }
      task.run();
    }, new Object(), laterRemoved::incrementAndGet);
    assertTrue(later.enqueueFirst("taken"));
    later.launchFirst();
    later.requireAccepted();
    refuse.set(true);
    try (ThrowingLog log = new ThrowingLog(ThrowingLog.messageContains("its executor refused a callback"))) {
      assertTrue(later.enqueue("refused"));
      later.launch(); // returns: the launches after it, to other listeners, still go
      assertEquals(1, log.thrown(), "the refusal's ERROR line threw");
    }
    assertEquals(1, laterRemoved.get(), "the listener was removed");
    assertTrue(later.refused());
  }

  /**
   * An executor that throws an Error (no memory for a new thread, say) refuses the callback as a
   * RejectedExecutionException does: the listener is removed, loudly, and nothing escapes the
   * launch, so the launches to other listeners after it still go; the listener is not left
   * marked running, with every wait for it until its deadline.
   */
  @Test
  void anExecutorThatThrowsAnError_refusesTheCallback_andNothingEscapesTheLaunch() throws Exception {
    AtomicInteger removed = new AtomicInteger();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, task -> {
      // An Error as no thread for the callback is (an OutOfMemoryError, which JUnit would not let
      // a failing test report cleanly).
      throw new Error("unable to create native thread");
    }, new Object(), removed::incrementAndGet);
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("its executor refused a callback"))) {
      assertDoesNotThrow(() -> delivery.submit("change"));
      assertEquals(List.of(Level.SEVERE), log.levels());
    }
    assertTrue(delivery.refused());
    assertEquals(1, removed.get(), "the listener was removed");
    assertTrue(delivery.awaitIdle(System.nanoTime(), runner -> false), "nothing left running");
  }

  /**
   * A listener removed between the queuing of a change and its launch (its registration closed,
   * then its executor shut down): the launch hands nothing to the executor, so no refusal is
   * reported for a listener already gone, and nothing is left marked running.
   */
  @Test
  void aLaunchAfterTheListenerWasRemoved_offersTheExecutorNothing() throws Exception {
    AtomicInteger offered = new AtomicInteger();
    AtomicInteger removed = new AtomicInteger();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, task -> {
      offered.incrementAndGet();
      throw new RejectedExecutionException("shut down");
    }, new Object(), removed::incrementAndGet);
    assertTrue(delivery.enqueue("change"));
    delivery.close();
    delivery.launch();
    assertEquals(0, offered.get(), "nothing handed to the executor");
    assertFalse(delivery.refused(), "no refusal reported");
    assertEquals(1, removed.get(), "removed once, by the close");
    assertTrue(delivery.awaitIdle(System.nanoTime(), runner -> false), "nothing left running");
  }

  /**
   * A listener removed while its launch is under way (its registration closed as the executor takes
   * the callback, which it then refuses, shut down meanwhile): the refusal is said only at DEBUG,
   * since no listener is left to report it for; it is no refusal of the listener, which was removed
   * once, by the close.
   */
  @Test
  void aRefusal_afterTheRegistrationWasClosedDuringTheLaunch_isOnlyDebug() throws Exception {
    AtomicInteger removed = new AtomicInteger();
    @SuppressWarnings("unchecked")
    SerialDelivery<String>[] delivery = new SerialDelivery[1];
    delivery[0] = new SerialDelivery<>("closing listener", event -> { }, task -> {
      delivery[0].close();
      throw new RejectedExecutionException("shut down");
    }, new Object(), removed::incrementAndGet);
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("refused"))) {
      assertDoesNotThrow(() -> delivery[0].submit("change"));
      assertEquals(List.of(Level.FINE), log.levels());
      assertEquals(List.of("closing listener: removed; its executor refused a callback after that"
          + " (java.util.concurrent.RejectedExecutionException: shut down)"), log.messages());
    }
    assertFalse(delivery[0].refused(), "no refusal of the listener");
    assertEquals(1, removed.get(), "removed once, by the close");
    assertTrue(delivery[0].awaitIdle(System.nanoTime(), runner -> false), "nothing left running");
  }

  /**
   * The first callback ran; a later one, refused before the adding thread checks, removes the
   * listener as any refusal does, but does not make the add fail: the listener was added, and has
   * already had its first callback.
   */
  @Test
  void aLaterCallbackRefused_beforeTheAddingThreadChecks_doesNotFailTheAdd() {
    AtomicInteger calls = new AtomicInteger();
    AtomicInteger removed = new AtomicInteger();
    List<String> seen = new CopyOnWriteArrayList<>();
    Executor firstOnly = task -> {
      if (calls.getAndIncrement() > 0) {
        throw new RejectedExecutionException("pool full");
      }
      task.run();
    };
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", seen::add, firstOnly, new Object(),
        removed::incrementAndGet);
    assertTrue(delivery.enqueueFirst("initial"));
    delivery.launchFirst();
    delivery.submit("next");
    assertEquals(List.of("initial"), seen);
    assertTrue(delivery.refused());
    assertEquals(1, removed.get(), "the refusal removed the listener");
    assertDoesNotThrow(delivery::requireAccepted);
  }

  /**
   * A shut-down pool whose policy discards tasks without a word (CallerRunsPolicy, once the pool is
   * shut down) counts as refusing: the listener is removed, not left waiting for a callback that
   * will never run.
   */
  @Test
  void aShutDownPoolThatDiscardsTheCallback_countsAsRefusingIt() throws Exception {
    AtomicInteger removed = new AtomicInteger();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        new ThreadPoolExecutor.CallerRunsPolicy());
    pool.shutdown();
    List<String> seen = new CopyOnWriteArrayList<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", seen::add, pool, new Object(),
        removed::incrementAndGet);
    delivery.submit("change");
    assertEquals(List.of(), seen);
    assertTrue(delivery.refused());
    assertEquals(1, removed.get(), "the listener was removed");
    assertTrue(delivery.awaitIdle(System.nanoTime(), runner -> false), "nothing left running");
  }

  /**
   * A pool shut down by the callback it runs (here, on the launching thread) ran that callback: the
   * launch finds the pool shut down, but the callback taken, and the listener stays.
   */
  @Test
  void aPoolShutDownAfterItRanTheCallback_isNoRefusal() {
    AtomicInteger removed = new AtomicInteger();
    ToyPool inline = new ToyPool((pool, task) -> task.run());
    List<String> seen = new CopyOnWriteArrayList<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
      seen.add(event);
      inline.shutdown();
    }, inline, new Object(), removed::incrementAndGet);
    delivery.submit("change");
    assertEquals(List.of("change"), seen);
    assertFalse(delivery.refused());
    assertEquals(0, removed.get());
  }

  /**
   * A pool shut down while it takes the callback, which its policy then drops (as a
   * ThreadPoolExecutor does when the shutdown comes during execute(), with CallerRunsPolicy):
   * refused too, not a listener stalled for good.
   */
  @Test
  void aPoolShutDownWhileTakingTheCallback_thatDropsIt_countsAsRefusingIt() throws Exception {
    AtomicInteger removed = new AtomicInteger();
    ToyPool dropping = new ToyPool((pool, task) -> pool.shutdown());
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, dropping, new Object(),
        removed::incrementAndGet);
    delivery.submit("change");
    assertTrue(delivery.refused());
    assertEquals(1, removed.get());
    assertTrue(delivery.awaitIdle(System.nanoTime(), runner -> false), "nothing left running");
  }

  /**
   * pending() counts the callbacks queued plus the one running (stats().pendingCallbacks() and
   * close()'s list of busy listeners read it), and runner() names the thread running them while a
   * drain runs (the walk of ListenerWaits, from one wait to the next, follows it).
   */
  @Test
  void pendingAndRunner_countTheQueuedCallbacksPlusTheOneRunning_andNameItsThread() {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    List<Integer> pendingSeen = new CopyOnWriteArrayList<>();
    List<Thread> runnerSeen = new CopyOnWriteArrayList<>();
    AtomicReference<SerialDelivery<String>> self = new AtomicReference<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
      pendingSeen.add(self.get().pending());
      runnerSeen.add(self.get().runner());
    }, held::add, new Object(), () -> { });
    self.set(delivery);
    for (String event : List.of("a", "b", "c")) {
      delivery.submit(event);
    }
    assertEquals(3, delivery.pending(), "three queued, none running yet");
    assertNull(delivery.runner(), "no drain runs yet");
    held.remove(0).run();
    assertEquals(List.of(3, 2, 1), pendingSeen, "those queued behind each callback, plus that one");
    Thread here = Thread.currentThread();
    assertEquals(List.of(here, here, here), runnerSeen);
    assertEquals(0, delivery.pending());
    assertNull(delivery.runner(), "none between drains");
  }

  /** A wait for a listener that does not finish ends at its deadline, saying so: it does not wait on. */
  @Test
  void awaitIdle_forAListenerThatDoesNotFinish_returnsFalseAtTheDeadline() {
    List<Runnable> held = new CopyOnWriteArrayList<>(); // the executor never runs the drain
    SerialDelivery<String> delivery = new SerialDelivery<>("stuck listener", event -> { }, held::add, new Object(),
        () -> { });
    delivery.submit("change");
    boolean idle = assertTimeoutPreemptively(Duration.ofSeconds(10),
        () -> delivery.awaitIdle(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50), runner -> false),
        "waited on past a deadline 50 ms away");
    assertFalse(idle, "busy at the deadline");
    assertEquals(1, delivery.pending());
  }

  /**
   * Removing a listener (its registration closed; an event that could not be queued; its executor's
   * refusal) drops the callbacks queued for it, which no one will run (and which hold their rings
   * until then), and wakes at once a wait for it, which stops waiting for a listener gone.
   */
  @ParameterizedTest(name = "removed by {0}")
  @ValueSource(strings = {"close", "an event not queued", "a refusal"})
  void removingAListener_dropsItsQueuedCallbacks_andWakesAWaitForIt(String how) throws Exception {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    AtomicBoolean refuse = new AtomicBoolean();
    List<String> delivered = new CopyOnWriteArrayList<>();
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", delivered::add, task -> {
      if (refuse.get()) {
        throw new RejectedExecutionException("pool full");
      }
      held.add(task);
    }, new Object(), () -> { });
    assertTrue(delivery.enqueue("a"), "idle: to be launched");
    assertFalse(delivery.enqueue("b"));
    if (!how.equals("a refusal")) {
      delivery.launch(); // handed to the executor, which does not run it yet
    }
    CompletableFuture<Boolean> waited = new CompletableFuture<>();
    Thread waiter = new Thread(() -> {
      try {
        waited.complete(delivery.awaitIdle(System.nanoTime() + ONE_MINUTE, runner -> false));
      } catch (InterruptedException e) {
        waited.completeExceptionally(e);
      }
    }, "waiter");
    waiter.start();
    await("the waiter waits").atMost(Duration.ofSeconds(30))
        .until(() -> waiter.getState() == Thread.State.TIMED_WAITING);
    switch (how) {
      case "close" -> delivery.close();
      case "an event not queued" -> assertTrue(delivery.enqueue(null));
      default -> {
        refuse.set(true);
        delivery.launch();
      }
    }
    assertEquals(Boolean.TRUE, waited.get(10, TimeUnit.SECONDS), "woken at once, not at its deadline a minute away");
    assertEquals(0, delivery.pending(), "the queued callbacks dropped");
    held.forEach(Runnable::run); // a drain the executor took before: it delivers nothing now
    assertEquals(List.of(), delivered);
  }

  /**
   * The lines of an event that could not be queued: for a listener's later event an ERROR, which
   * says it is removed; for the first, while it is added, a DEBUG line only (the add fails, and
   * says it all to the caller).
   */
  @Test
  void anEventThatCannotBeQueued_isLoggedAtError_orAtDebugForAListenersFirst() {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    SerialDelivery<String> later = new SerialDelivery<>("later listener", event -> { }, held::add, new Object(),
        () -> { });
    SerialDelivery<String> first = new SerialDelivery<>("first listener", event -> { }, held::add, new Object(),
        () -> { });
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith("later listener")
        || r.getMessage().startsWith("first listener"))) {
      later.submit("taken");
      assertTrue(later.enqueue(null));
      later.launch();
      assertTrue(first.enqueueFirst(null));
      first.launchFirst();
      assertEquals(List.of(Level.SEVERE, Level.FINE), log.levels());
      String error = log.records().get(0).getMessage();
      assertTrue(error.startsWith("later listener: a callback could not be queued (java.lang.NullPointerException"),
          error);
      assertTrue(error.endsWith("; the listener is removed so that it never sees a sequence with a gap. Register it"
          + " again to start over."), error);
      String debug = log.records().get(1).getMessage();
      assertTrue(debug.startsWith("first listener: its first callback could not be queued"), debug);
      assertTrue(debug.endsWith("; not added"), debug);
    }
  }

  /**
   * A refused LEAVING change (queued, with any before it, when the executor refuses) is said as
   * such: the listener never heard its node leave, which a hand-off waits for.
   */
  @Test
  void aRefusedLeavingChange_isSaidAsSuch() {
    HashRing empty = HashRing.builder().virtualNodes(8).build();
    OwnershipChange leaving = new OwnershipChange(OwnershipChange.Reason.LEAVING, 3, 3, empty, empty,
        RingDiff.compute(empty, empty, "me", 1));
    SerialDelivery<Object> delivery = new SerialDelivery<>("leaving listener", event -> { }, task -> {
      throw new RejectedExecutionException("shut down");
    }, new Object(), () -> { });
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith("leaving listener"))) {
      assertTrue(delivery.enqueue("an earlier change"));
      assertFalse(delivery.enqueue(leaving), "queued behind it");
      delivery.launch();
      assertEquals(List.of(Level.SEVERE), log.levels());
      String line = log.records().get(0).getMessage();
      assertTrue(line.startsWith("leaving listener: its executor refused the LEAVING change (java.util.concurrent"
          + ".RejectedExecutionException: shut down); the listener never heard this node leave"), line);
    }
    assertTrue(delivery.refused());
  }

  /**
   * The INFO line of a listener that caught up comes once its queue is empty, after the last
   * callback queued behind the lag, not as its drain starts.
   */
  @Test
  void theCaughtUpLine_comesAfterTheLastQueuedCallback() {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    List<Integer> linesBefore = new CopyOnWriteArrayList<>();
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith("slow listener"))) {
      SerialDelivery<String> delivery = new SerialDelivery<>("slow listener",
          event -> linesBefore.add(log.records().size()), held::add, new Object(), () -> { });
      for (int i = 0; i < SerialDelivery.LAG_WARNING; i++) {
        delivery.submit("event " + i);
      }
      assertEquals(List.of(Level.WARNING), log.levels(), "fell behind");
      held.remove(0).run();
      assertEquals(Collections.nCopies(SerialDelivery.LAG_WARNING, 1), linesBefore,
          "no line but the WARNING while callbacks were still queued");
      assertEquals(List.of(Level.WARNING, Level.INFO), log.levels(), "then caught up");
    }
  }

  /**
   * A callback holds up the launches after its own only when its executor runs it in its launch in
   * a batch ({@link SerialDelivery#launchInTurn()}): not when launched alone, nor when the executor
   * runs it later, on that same thread, as a pool's worker would.
   */
  @Test
  void holdsUpLaunches_onlyForACallbackRunInItsOwnLaunchInTurn() throws Exception {
    onANewThread(() -> holdsUpLaunchesOnlyInTurn()); // no trace of earlier launches on it
  }

  private static void holdsUpLaunchesOnlyInTurn() {
    Object node = new Object();
    List<String> holds = new CopyOnWriteArrayList<>();
    List<Runnable> held = new CopyOnWriteArrayList<>();
    AtomicReference<SerialDelivery<String>> pooledSelf = new AtomicReference<>();
    SerialDelivery<String> pooled = new SerialDelivery<>("pooled", event -> holds.add(event + ": "
        + SerialDelivery.holdsUpLaunches(List.of(pooledSelf.get()))), held::add, node, () -> { });
    pooledSelf.set(pooled);
    assertTrue(pooled.enqueue("run later"));
    pooled.launchInTurn(); // handed to the executor, which runs nothing yet
    held.remove(0).run(); // then on this thread, out of any launch

    AtomicReference<SerialDelivery<String>> self = new AtomicReference<>();
    SerialDelivery<String> sameThread = new SerialDelivery<>("same-thread", event -> holds.add(event + ": "
        + SerialDelivery.holdsUpLaunches(List.of(self.get()))), Runnable::run, node, () -> { });
    self.set(sameThread);
    assertTrue(sameThread.enqueue("in turn"));
    sameThread.launchInTurn();
    assertTrue(sameThread.enqueue("alone"));
    sameThread.launch();
    assertEquals(List.of("run later: false", "in turn: true", "alone: false"), holds);
  }

  /**
   * A launch nested in another's (an executor that launches another listener's delivery before it
   * runs the task handed to it) gives the outer launch back its place: the outer callback, run
   * after it in its own launch in turn, still holds up the launches after it.
   */
  @Test
  void holdsUpLaunches_aLaunchNestedInAnotherInTurn_leavesTheOuterOneInTurn() throws Exception {
    onANewThread(() -> nestedLaunchLeavesTheOuterInTurn());
  }

  private static void nestedLaunchLeavesTheOuterInTurn() {
    Object node = new Object();
    List<String> holds = new CopyOnWriteArrayList<>();
    AtomicReference<SerialDelivery<String>> innerSelf = new AtomicReference<>();
    SerialDelivery<String> inner = new SerialDelivery<>("inner", event -> holds.add("inner: "
        + SerialDelivery.holdsUpLaunches(List.of(innerSelf.get()))), Runnable::run, node, () -> { });
    innerSelf.set(inner);
    AtomicReference<SerialDelivery<String>> outerSelf = new AtomicReference<>();
    SerialDelivery<String> outer = new SerialDelivery<>("outer", event -> holds.add("outer: "
        + SerialDelivery.holdsUpLaunches(List.of(outerSelf.get()))), task -> {
          if (inner.enqueue("change")) {
            inner.launchInTurn();
          }
          task.run();
        }, node, () -> { });
    outerSelf.set(outer);
    assertTrue(outer.enqueue("change"));
    outer.launchInTurn();
    assertEquals(List.of("inner: true", "outer: true"), holds);
  }

  /** A listener removed queues nothing more, and asks for no launch, first event or not. */
  @Test
  void aRemovedListener_queuesNothing_andAsksForNoLaunch() {
    SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> { }, Runnable::run, new Object(),
        () -> { });
    delivery.close();
    assertFalse(delivery.enqueueFirst("initial"));
    assertFalse(delivery.enqueue("change"));
    assertEquals(0, delivery.pending());
    assertFalse(delivery.isActive());
  }

  /**
   * A listener that throws while the logger throws too is still reported, on standard error, with
   * what it threw and why logging it failed.
   */
  @Test
  void aListenerThatThrows_whileLoggingThrows_isReportedOnStandardError() {
    SerialDelivery<String> delivery = new SerialDelivery<>("failing listener", event -> {
      throw new IllegalStateException("the listener's own bug");
    }, Runnable::run, new Object(), () -> { });
    PrintStream before = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try (ThrowingLog log = new ThrowingLog(ThrowingLog.messageContains("failing listener threw"))) {
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      delivery.submit("change");
      assertEquals(1, log.thrown());
    } finally {
      System.setErr(before);
    }
    String printed = err.toString(StandardCharsets.UTF_8);
    assertTrue(printed.contains("failing listener threw java.lang.IllegalStateException: the listener's own bug;"
        + " logging it failed: java.lang.IllegalStateException: a logging filter's bug"), printed);
  }

  /**
   * A drain leaves no trace on the thread that ran it (an application's, say): once it returns, the
   * thread runs no listener's callback. On a thread of its own, with none before it.
   */
  @Test
  void aDrain_leavesNoTraceOnItsThread() throws Exception {
    onANewThread(() -> {
      Object node = new Object();
      List<Object> inside = new CopyOnWriteArrayList<>();
      SerialDelivery<String> delivery = new SerialDelivery<>("listener", event -> {
        inside.add(SerialDelivery.callingExecutor(node));
        inside.add(SerialDelivery.runningOnCurrentThread(node));
      }, Runnable::run, node, () -> { });
      delivery.submit("change");
      assertEquals(List.of(delivery.executor(), List.of(delivery)), inside, "inside the callback");
      assertNull(SerialDelivery.callingExecutor(node), "after it");
      assertEquals(List.of(), SerialDelivery.runningOnCurrentThread(node));
    });
  }

  /** Runs {@code body} on a thread of its own, and fails as it fails. */
  private static void onANewThread(Runnable body) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread thread = new Thread(() -> {
      try {
        body.run();
        done.complete(null);
      } catch (Throwable t) {
        done.completeExceptionally(t);
      }
    }, "fresh thread");
    thread.start();
    try {
      done.get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Error error) {
        throw error;
      }
      throw e;
    }
  }

  /** An executor service whose execute() is given, and which does nothing else but say whether it was shut down. */
  private static final class ToyPool extends AbstractExecutorService {
    private final BiConsumer<ToyPool, Runnable> execute;
    private volatile boolean shutDown;

    ToyPool(BiConsumer<ToyPool, Runnable> execute) {
      this.execute = execute;
    }

    @Override
    public void execute(Runnable task) {
      execute.accept(this, task);
    }

    @Override
    public void shutdown() {
      shutDown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
      shutDown = true;
      return List.of();
    }

    @Override
    public boolean isShutdown() {
      return shutDown;
    }

    @Override
    public boolean isTerminated() {
      return shutDown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return shutDown;
    }
  }
}
