package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.awaitility.Awaitility;
import org.jgroups.BytesMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Ringmaster#awaitRing} and {@link Ringmaster#awaitListeners}: waiting for a ring and for
 * the listeners, on real in-memory stacks.
 */
class AwaitTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void waiter_returnsTheFirstRingThatHolds_onceTheMembersJoin() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring")) {
      Ringmaster a = cluster.start("a");
      CompletableFuture<HashRing> three = CompletableFuture.supplyAsync(() -> await(a, 3, WAIT),
          TestThreads.ON_OWN_THREAD);
      Awaitility.await().atMost(WAIT).until(() -> a.ringWaiters() == 1); // it is waiting
      assertEquals(1, a.awaitRing(r -> r.contains("a"), Duration.ZERO).members().size(),
          "a condition that holds now returns at once, even with no time to wait");
      cluster.start("b");
      cluster.start("c");
      HashRing ring = three.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertEquals(List.of("a", "b", "c"), ring.members().stream().map(Member::id).toList());
    }
  }

  /**
   * A thread interrupted while it waits in awaitRing or awaitListeners gets an
   * InterruptedException at once, its flag cleared as the exception's contract says.
   */
  @Test
  void awaitRingAndAwaitListeners_interrupted_throwInterruptedException() throws Exception {
    try (TestCluster cluster = new TestCluster("await-interrupted")) {
      Ringmaster a = cluster.start("a");
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean busy = new AtomicBoolean();
      a.addOwnershipListener(change -> { // busy with the INITIAL change until released
        busy.set(true);
        try {
          release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      try {
        Awaitility.await().atMost(WAIT).until(busy::get);
        List<String> outcomes = new CopyOnWriteArrayList<>();
        List<Thread> waiters = List.of(
            new Thread(() -> outcomes.add("awaitRing " + outcome(() -> a.awaitRing(r -> r.contains("never"), WAIT)))),
            new Thread(() -> outcomes.add("awaitListeners " + outcome(() -> a.awaitListeners(WAIT)))));
        waiters.forEach(Thread::start);
        Awaitility.await("both wait").atMost(WAIT)
            .until(() -> waiters.stream().allMatch(t -> t.getState() == Thread.State.TIMED_WAITING
                || t.getState() == Thread.State.WAITING));
        waiters.forEach(Thread::interrupt);
        for (Thread t : waiters) {
          t.join(TimeUnit.SECONDS.toMillis(5));
        }
        assertEquals(List.of("awaitListeners InterruptedException", "awaitRing InterruptedException"),
            outcomes.stream().sorted().toList());
      } finally {
        release.countDown();
      }
    }
  }

  private interface Wait {
    Object run() throws Exception;
  }

  /** The simple name of what {@code wait} threw, or "returned". */
  private static String outcome(Wait wait) {
    try {
      wait.run();
      return "returned";
    } catch (Exception e) {
      return e.getClass().getSimpleName();
    }
  }

  /**
   * awaitRing from a listener on a same-thread executor, which runs on the node's view thread, fails
   * at once naming the thread: waiting there would hold up the very rings it waits for (and every
   * listener) for its whole timeout. The next view is installed as usual.
   */
  @Test
  void awaitRing_onTheViewThread_failsAtOnce_andHoldsUpNoRing() throws Exception {
    try (TestCluster cluster = new TestCluster("await-on-view-thread")) {
      Ringmaster a = cluster.start("a");
      AtomicReference<Object> outcome = new AtomicReference<>();
      a.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.VIEW && outcome.get() == null) {
          try {
            outcome.set(a.awaitRing(r -> r.contains("never"), Duration.ofSeconds(5)));
          } catch (RuntimeException e) {
            outcome.set(e);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            outcome.set(e);
          }
        }
      }, Runnable::run);
      Ringmaster b = cluster.start("b");
      Awaitility.await().atMost(WAIT).until(() -> outcome.get() != null);
      IllegalStateException e = assertInstanceOf(IllegalStateException.class, outcome.get());
      assertTrue(e.getMessage().startsWith("awaitRing called on node a's view thread"), e.getMessage());
      Ringmaster c = cluster.start("c");
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
    }
  }

  /**
   * awaitListeners only waits: a same-thread listener's callback that another same-thread
   * listener's callback holds up (queued, not yet launched) runs on the node's thread once that
   * one returns, never on the thread that waits (an application's thread, or a JGroups one).
   */
  @Test
  void awaitListeners_fromAnApplicationThread_neverRunsAHeldUpCallbackOnIt() throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners-thread")) {
      Ringmaster a = cluster.start("a");
      HeldUp held = HeldUp.on(a);
      try {
        cluster.start("b"); // a's view thread runs the first listener's callback for the join, which blocks
        assertTrue(held.inFirst().await(WAIT.toSeconds(), TimeUnit.SECONDS));

        assertFalse(a.awaitListeners(Duration.ofMillis(200)), "the first listener is still busy");
        assertEquals(List.of(), held.secondRanOn(), "the second listener's callback did not run on the waiting thread");
      } finally {
        held.release().countDown();
      }
      assertTrue(a.awaitListeners(WAIT));
      assertEquals(1, held.secondRanOn().size());
      assertNotEquals(Thread.currentThread(), held.secondRanOn().get(0));
    }
  }

  /**
   * The same from a listener on the node's pool: its callback, on a thread of its own, holds up no
   * launch, so its awaitListeners() only waits too, and the held-up callback runs on the view
   * thread once the first one returns (not on the pool's thread, with no time limit, nor at the
   * same time as the first listener's).
   */
  @Test
  void awaitListeners_fromAPoolListener_neverRunsAHeldUpCallbackOnItsThread() throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners-pool")) {
      Ringmaster a = cluster.start("a");
      HeldUp held = HeldUp.on(a);
      CompletableFuture<Boolean> poolWaited = new CompletableFuture<>();
      a.addOwnershipListener(change -> {
        if (change.reason() != OwnershipChange.Reason.INITIAL) {
          try {
            held.inFirst().await(); // the view thread launched this one first, then went into the first listener
            poolWaited.complete(a.awaitListeners(Duration.ofMillis(200)));
          } catch (InterruptedException e) {
            poolWaited.completeExceptionally(e);
          }
        }
      });
      try {
        cluster.start("b");
        assertFalse(poolWaited.get(WAIT.toSeconds(), TimeUnit.SECONDS), "the first listener is still busy");
        assertEquals(List.of(), held.secondRanOn(), "the second listener's callback did not run on the pool's thread");
      } finally {
        held.release().countDown();
      }
      held.ranOnceOnTheViewThreadOf(a);
    }
  }

  /**
   * The same from same-thread callbacks that hold up no launch of the view thread: a divergence
   * listener's, which the gossip thread runs, and an ownership listener's first, which the thread
   * adding it runs. Their awaitListeners() only waits, too: the held-up callback is not theirs to
   * run (it would run on the gossip thread, stopping its rounds, or on the application's thread,
   * inside addOwnershipListener, with no time limit, and alongside the first listener's).
   */
  @Test
  void awaitListeners_fromASameThreadCallbackThatHoldsUpNothing_neverRunsAHeldUpCallbackOnItsThread()
      throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners-nothing-held")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      HeldUp held = HeldUp.on(a);
      List<String> waitedOn = new CopyOnWriteArrayList<>();
      List<String> firstWaitedOn = new CopyOnWriteArrayList<>();
      try {
        cluster.start("c"); // a's view thread runs the first listener's callback for the join, which blocks
        assertTrue(held.inFirst().await(WAIT.toSeconds(), TimeUnit.SECONDS));

        a.addDivergenceListener(d -> waitedOn.add(awaitBriefly(a)), Runnable::run);
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), a.channel().getView().getCreator(), a.ring().checksum() ^ 1, "b")));
        Awaitility.await("the divergence listener waited").atMost(WAIT).until(() -> !waitedOn.isEmpty());
        assertTrue(waitedOn.get(0).startsWith("false on ringmaster-gossip-a"), waitedOn::toString);
        assertEquals(List.of(), held.secondRanOn(), "the second listener's callback did not run on the gossip thread");

        a.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.INITIAL) {
            firstWaitedOn.add(awaitBriefly(a));
          }
        }, Runnable::run);
        assertEquals(List.of("false on " + Thread.currentThread().getName()), firstWaitedOn);
        assertEquals(List.of(), held.secondRanOn(), "the second listener's callback did not run on the adding thread");
      } finally {
        held.release().countDown();
      }
      held.ranOnceOnTheViewThreadOf(a);
    }
  }

  /** What {@code node.awaitListeners} for 200 ms returned, and on which thread. */
  private static String awaitBriefly(Ringmaster node) {
    try {
      return node.awaitListeners(Duration.ofMillis(200)) + " on " + Thread.currentThread().getName();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted on " + Thread.currentThread().getName();
    }
  }

  /**
   * Two same-thread listeners added to {@code node}: the first blocks in its callback for the
   * node's next change (after {@code inFirst}) until {@code release}; the second, held up behind
   * it, records the threads its callbacks for that change run on.
   */
  private record HeldUp(CountDownLatch inFirst, CountDownLatch release, List<Thread> secondRanOn) {
    /** Once released: the held-up callback ran, once, on {@code node}'s view thread. */
    void ranOnceOnTheViewThreadOf(Ringmaster node) throws InterruptedException {
      assertTrue(node.awaitListeners(WAIT));
      assertEquals(1, secondRanOn.size());
      String ranOn = secondRanOn.get(0).getName();
      assertTrue(ranOn.startsWith("ringmaster-view-" + node.localMember().id()), ranOn);
    }

    static HeldUp on(Ringmaster node) {
      HeldUp held = new HeldUp(new CountDownLatch(1), new CountDownLatch(1), new CopyOnWriteArrayList<>());
      node.addOwnershipListener(change -> {
        if (change.reason() != OwnershipChange.Reason.INITIAL) {
          held.inFirst.countDown();
          try {
            held.release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }, Runnable::run);
      node.addOwnershipListener(change -> {
        if (change.reason() != OwnershipChange.Reason.INITIAL) {
          held.secondRanOn.add(Thread.currentThread());
        }
      }, Runnable::run);
      return held;
    }
  }

  @Test
  void timeout_failsNamingTheTimeoutAndTheMembers() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring-timeout")) {
      Ringmaster a = cluster.start("a");
      RingmasterException e = assertThrows(RingmasterException.class,
          () -> a.awaitRing(r -> r.contains("nobody"), Duration.ofMillis(200)));
      assertTrue(e.getMessage().contains("within PT0.2S"), e.getMessage());
      assertEquals(RingmasterException.Reason.AWAIT_TIMEOUT, e.reason());
      assertTrue(e.getMessage().endsWith("members [a]"), e.getMessage());
    }
  }

  @Test
  void closingTheNode_wakesAWaiter_withIllegalState_andLaterCallsFailAtOnce() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring-closed")) {
      Ringmaster a = cluster.start("a");
      CompletableFuture<HashRing> waiter = CompletableFuture.supplyAsync(() -> await(a, 2, Duration.ofMinutes(10)),
          TestThreads.ON_OWN_THREAD);
      Awaitility.await().atMost(WAIT).until(() -> a.ringWaiters() == 1); // it is waiting
      a.close();
      ExecutionException e = assertThrows(ExecutionException.class,
          () -> waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS));
      assertInstanceOf(IllegalStateException.class, e.getCause(), String.valueOf(e.getCause()));
      assertTrue(e.getCause().getMessage().contains("is closed"), e.getCause().getMessage());
      assertThrows(IllegalStateException.class, () -> a.awaitRing(r -> r.contains("b"), Duration.ofMinutes(10)));
      assertSame(a.ring(), a.awaitRing(r -> true, Duration.ZERO), "a condition that holds still returns the ring");
    }
  }

  /**
   * A listener on a same-thread executor that calls awaitListeners from its callback, on the view
   * thread, holds up the launches of the listeners queued after it there: the call launches them
   * itself, so a listener on another same-thread executor runs its callback and the call returns
   * true, where it would otherwise wait for a callback that cannot start until it returns.
   */
  @Test
  void awaitListeners_fromASameThreadListener_launchesTheListenersItHoldsUp() throws Exception {
    try (TestCluster cluster = new TestCluster("await-held-up")) {
      Ringmaster a = cluster.start("a");
      AtomicBoolean secondRan = new AtomicBoolean();
      CompletableFuture<List<Boolean>> result = new CompletableFuture<>();
      Executor first = Runnable::run;
      Executor another = task -> task.run(); // another executor: its listener is waited for
      a.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.VIEW && !result.isDone()) {
          try {
            boolean idle = a.awaitListeners(Duration.ofSeconds(20));
            result.complete(List.of(idle, secondRan.get()));
          } catch (InterruptedException e) {
            result.completeExceptionally(e);
          }
        }
      }, first);
      a.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.VIEW) {
          secondRan.set(true);
        }
      }, another);
      cluster.start("b");
      assertEquals(List.of(true, true), result.get(WAIT.toSeconds(), TimeUnit.SECONDS),
          "idle, the second listener's callback run from within the call");
    }
  }

  /**
   * close() wakes a listener waiting in awaitRing before it waits for the listeners' hand-off, so
   * that waiter does not hold the leave until leaveTimeout: the listener gets IllegalStateException
   * at once, its callback returns, and the leave finds every listener idle.
   */
  @Test
  void close_wakesAListenerWaitingInAwaitRing_beforeWaitingForTheListeners() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring-listener-closed")) {
      Ringmaster a = cluster.start(cluster.builder("a").leaveTimeout(Duration.ofSeconds(20)));
      CompletableFuture<Throwable> woken = new CompletableFuture<>();
      AtomicBoolean first = new AtomicBoolean(true);
      a.addOwnershipListener(change -> {
        if (first.getAndSet(false)) { // its first change, on the node's pool: wait for a third member
          try {
            a.awaitRing(r -> r.members().size() >= 3, Duration.ofMinutes(1));
            woken.complete(null);
          } catch (RuntimeException | InterruptedException e) {
            woken.complete(e);
          }
        }
      });
      Awaitility.await().atMost(WAIT).until(() -> a.ringWaiters() == 1);
      a.close();
      assertInstanceOf(IllegalStateException.class, woken.getNow(null), "woken by close(), before it returned");
      assertTrue(a.leftIdle(), "the leave found the listener done, not busy until leaveTimeout");
    }
  }

  /**
   * Called from a LEAVING callback, awaitRing counts the node as closed: on a condition its ring
   * does not satisfy yet it throws at once, rather than wait while close() waits for the callback
   * (a hand-off waiting for an unreachable destination to leave the ring, say); on one it satisfies,
   * it returns the ring. So the leave finds the listener done, not busy until leaveTimeout.
   */
  @Test
  void awaitRing_fromALeavingCallback_throwsAtOnceUnlessTheConditionHolds() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring-leaving")) {
      Ringmaster a = cluster.start(cluster.builder("a").leaveTimeout(Duration.ofSeconds(20)));
      cluster.start("b");
      TestCluster.awaitAgreement(List.of(a), 2, WAIT);
      List<Object> results = new CopyOnWriteArrayList<>();
      a.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          try {
            results.add(a.awaitRing(r -> r.members().size() >= 3, Duration.ofMinutes(1)));
          } catch (RuntimeException | InterruptedException e) {
            results.add(e);
          }
          try {
            results.add(a.awaitRing(r -> r.contains("b"), Duration.ofMinutes(1)).members().size());
          } catch (RuntimeException | InterruptedException e) {
            results.add(e);
          }
        }
      });
      assertTrue(a.awaitListeners(WAIT));
      a.close();
      assertEquals(2, results.size(), String.valueOf(results));
      assertInstanceOf(IllegalStateException.class, results.get(0), String.valueOf(results.get(0)));
      assertTrue(((Exception) results.get(0)).getMessage().contains("is closed"), String.valueOf(results.get(0)));
      assertEquals(2, results.get(1), "a condition that holds returns the ring, b in it");
      assertTrue(a.leftIdle(), "the leave found the listener done, not busy until leaveTimeout");
    }
  }

  /**
   * The listener lag counts each callback once: queued behind an executor that has not run the
   * delivery yet, a change is one pending callback, not one queued plus one running.
   */
  @Test
  void pendingCallbacks_queuedOnAnExecutorNotYetRun_countsEachCallbackOnce() throws Exception {
    try (TestCluster cluster = new TestCluster("pending-count")) {
      Ringmaster a = cluster.start("a");
      List<Runnable> held = new CopyOnWriteArrayList<>();
      List<OwnershipChange> seen = new CopyOnWriteArrayList<>();
      AtomicBoolean open = new AtomicBoolean();
      // An executor that runs nothing until told; once open, it runs deliveries at once (the
      // LEAVING change when the test closes the node, which would otherwise wait leaveTimeout).
      a.addOwnershipListener(seen::add, task -> {
        if (open.get()) {
          task.run();
        } else {
          held.add(task);
        }
      });
      Awaitility.await("the first change, queued").atMost(WAIT).until(() -> a.stats().pendingCallbacks() == 1);
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      Awaitility.await().atMost(WAIT).until(() -> a.stats().pendingCallbacks() == 2); // b's join, queued behind it
      assertEquals(1, held.size(), "one delivery launched, for both");
      open.set(true);
      held.remove(0).run();
      assertEquals(2, seen.size());
      assertEquals(0, a.stats().pendingCallbacks());
      assertTrue(a.awaitListeners(WAIT));
    }
  }

  /**
   * The listener lag counts the membership listeners' callbacks too, not only the ownership ones:
   * two membership changes queued behind an executor that has not run them yet are two pending
   * callbacks, and none once it has.
   */
  @Test
  void pendingCallbacks_ofMembershipListeners_areCountedToo() throws Exception {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    List<MembershipChange> seen = new CopyOnWriteArrayList<>();
    try (FedNode a = new FedNode(FedNode.meta("a"))) {
      a.node.addMembershipListener(new SerialDelivery<>("held members", seen::add, held::add, a, () -> { }));
      a.view(1, a.self);
      a.view(2, a.self, FedNode.meta("b").newAddress());
      assertEquals(2, a.node.pendingCallbacks(), "two membership changes queued (FedNode's own listeners are idle)");
      assertEquals(1, held.size(), "one delivery launched, for both");
      held.remove(0).run();
      assertEquals(2, seen.size());
      assertEquals(0, a.node.pendingCallbacks());
    }
  }

  @Test
  void awaitListeners_waitsForASlowListener_saysFalseOnTimeout_andDoesNotWaitForItsCaller() throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners")) {
      CountDownLatch release = new CountDownLatch(1);
      List<OwnershipChange> seen = new CopyOnWriteArrayList<>();
      List<Boolean> fromInside = new CopyOnWriteArrayList<>();
      Ringmaster a = cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(change -> {
        try {
          release.await(WAIT.toSeconds(), TimeUnit.SECONDS); // bounded: a failed test frees it too
          fromInside.add(n.awaitListeners(WAIT)); // waits for no one: the only listener is this one
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        seen.add(change);
      }));
      try {
        assertFalse(a.awaitListeners(Duration.ofMillis(200)), "the first change is held by the latch");
        assertEquals(List.of(), seen);
      } finally {
        release.countDown();
      }
      assertTrue(a.awaitListeners(WAIT));
      assertEquals(1, seen.size(), "idle means the queued change has run");
      assertEquals(List.of(true), fromInside);
      assertEquals(0, a.stats().pendingCallbacks());
    }
  }

  /**
   * A listener whose callback waits until {@code inside} is counted down (by as many such callbacks,
   * each on a pool thread of its own), then calls awaitListeners with ten minutes to wait (which
   * each waited out, before circles were broken) and hands on its answer.
   */
  private static OwnershipListener waitingForTheOthers(CountDownLatch inside, Ringmaster node,
                                                       Consumer<Boolean> answer) {
    return change -> {
      inside.countDown();
      try {
        if (inside.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
          answer.accept(node.awaitListeners(Duration.ofMinutes(10)));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
  }

  @ParameterizedTest(name = "{0} listeners")
  @ValueSource(ints = {2, 3})
  void awaitListeners_fromListenersWaitingForEachOther_allReturn_onlyTheFirstToWaitTrue(int listeners) throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners-circle-" + listeners)) {
      CountDownLatch allInside = new CountDownLatch(listeners);
      List<Boolean> results = new CopyOnWriteArrayList<>();
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        OwnershipListener waiting = waitingForTheOthers(allInside, n, results::add);
        for (int i = 0; i < listeners; i++) {
          n.addOwnershipListener(waiting);
        }
      });
      Awaitility.await().atMost(WAIT).until(() -> results.size() == listeners);
      List<Boolean> expected = new ArrayList<>(Collections.nCopies(listeners - 1, false));
      expected.add(true);
      assertEquals(expected, results, "each later call stops waiting for its circle; the first to wait returns last, idle");
      assertTrue(a.awaitListeners(WAIT));
      assertEquals(0, a.stats().pendingCallbacks());
    }
  }

  @Test
  void awaitListeners_theLastOfACircleStillWaitsForTheListenersOutsideIt() throws Exception {
    try (TestCluster cluster = new TestCluster("await-listeners-circle-and-slow")) {
      CountDownLatch bothInside = new CountDownLatch(2);
      CountDownLatch release = new CountDownLatch(1);
      List<String> events = new CopyOnWriteArrayList<>();
      OwnershipListener slow = new OwnershipListener() {
        @Override
        public void onOwnershipChange(OwnershipChange change) {
          try {
            release.await(WAIT.toSeconds(), TimeUnit.SECONDS); // bounded: a failed test frees it too
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }

        @Override
        public String toString() {
          return "the slow one";
        }
      };
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        OwnershipListener waiting = waitingForTheOthers(bothInside, n, idle -> events.add(String.valueOf(idle)));
        n.addOwnershipListener(waiting);
        n.addOwnershipListener(waiting);
        n.addOwnershipListener(slow);
      });
      // The later of the two waits has left the circle and waits for the slow listener.
      Awaitility.await().atMost(WAIT)
          .until(() -> a.listenerWaits().stream().anyMatch(name -> name.contains("the slow one")));
      events.add("released");
      release.countDown();
      Awaitility.await().atMost(WAIT).until(() -> events.size() == 3);
      assertEquals(List.of("released", "false", "true"), events);
    }
  }

  /** The closer runs on the node's pool, or on an executor of the application's. */
  @ParameterizedTest(name = "closer on its own executor: {0}")
  @ValueSource(booleans = {false, true})
  void close_fromAListenerThatAnotherWaitsFor_leavesWithoutInterruptingIt(boolean ownExecutor) throws Exception {
    ExecutorService application = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("await-listeners-close-" + ownExecutor)) {
      List<String> events = new CopyOnWriteArrayList<>();
      AtomicReference<Ringmaster> node = new AtomicReference<>();
      AtomicBoolean waiterStarted = new AtomicBoolean();
      AtomicBoolean closerStarted = new AtomicBoolean();
      OwnershipListener waiter = change -> {
        if (waiterStarted.compareAndSet(false, true)) {
          try {
            events.add("waiter: " + node.get().awaitListeners(Duration.ofMinutes(10)));
          } catch (InterruptedException e) {
            events.add("waiter interrupted");
          }
        }
      };
      OwnershipListener closer = new OwnershipListener() {
        @Override
        public void onOwnershipChange(OwnershipChange change) {
          if (closerStarted.compareAndSet(false, true)) {
            // Once the waiter waits for this callback: the leave in close() waits for the waiter.
            Awaitility.await().atMost(WAIT)
                .until(() -> node.get().listenerWaits().stream().anyMatch(name -> name.contains("the closer")));
            node.get().close();
            events.add("closed");
          }
        }

        @Override
        public String toString() {
          return "the closer";
        }
      };
      Ringmaster a = cluster.start(cluster.builder("a").leaveTimeout(Duration.ofMinutes(10)), n -> {
        node.set(n);
        n.addOwnershipListener(waiter);
        if (ownExecutor) {
          n.addOwnershipListener(closer, application);
        } else {
          n.addOwnershipListener(closer);
        }
      });
      Awaitility.await().atMost(WAIT).until(() -> events.size() == 2);
      assertEquals(List.of("closed", "waiter: true"), events,
          "close() does not wait for the waiter, which waits for it, nor interrupt it");
      assertThrows(IllegalStateException.class, () -> a.addOwnershipListener(change -> { }), "closed");
    } finally {
      application.shutdownNow();
      application.awaitTermination(30, TimeUnit.SECONDS); // not asserted: it would hide the test's own failure
    }
  }

  @Test
  void aNodeThatFailsToStart_orClosesUnstarted_wakesItsWaiters_withIllegalState() throws Exception {
    try (TestCluster cluster = new TestCluster("await-ring-failed")) {
      cluster.start("a");
      // Closed on the way out whatever happens, so that a failing test leaves no waiter behind.
      try (Ringmaster twin = cluster.builder("a").build()) { // the same id: refused when it joins
        CompletableFuture<HashRing> waiter =
            CompletableFuture.supplyAsync(() -> await(twin, 1, Duration.ofMinutes(10)), TestThreads.ON_OWN_THREAD);
        Awaitility.await().atMost(WAIT).until(() -> twin.ringWaiters() == 1);
        assertThrows(RingmasterException.class, twin::start);
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> waiter.get(WAIT.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, e.getCause(), String.valueOf(e.getCause()));
      }

      try (Ringmaster unstarted = cluster.builder("b").build()) {
        CompletableFuture<HashRing> other =
            CompletableFuture.supplyAsync(() -> await(unstarted, 1, Duration.ofMinutes(10)), TestThreads.ON_OWN_THREAD);
        Awaitility.await().atMost(WAIT).until(() -> unstarted.ringWaiters() == 1);
        unstarted.close();
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> other.get(WAIT.toSeconds(), TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, e.getCause(), String.valueOf(e.getCause()));
      }
    }
  }

  @Test
  void badArguments_failNamingThem() throws Exception {
    try (Ringmaster a = Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).build()) {
      IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
          () -> a.awaitRing(r -> true, Duration.ofSeconds(-1)));
      assertEquals("timeout must not be negative: PT-1S", negative.getMessage());
      NullPointerException nul = assertThrows(NullPointerException.class, () -> a.awaitRing(null, WAIT));
      assertEquals("condition", nul.getMessage());
      // A null timeout too, as the package's rule for nulls says: not read as "no wait", nor as "forever".
      assertEquals("timeout", assertThrows(NullPointerException.class, () -> a.awaitRing(r -> true, null)).getMessage());
      assertEquals("timeout", assertThrows(NullPointerException.class, () -> a.awaitListeners(null)).getMessage());
      assertEquals("timeout must not be negative: PT-0.001S", assertThrows(IllegalArgumentException.class,
          () -> a.awaitListeners(Duration.ofMillis(-1))).getMessage());
      // The longest timeout is accepted (Duration.toNanos() would overflow).
      assertEquals(0, a.awaitRing(r -> true, Duration.ofSeconds(Long.MAX_VALUE)).tokenCount());
    }
  }

  /** The longest timeout is a wait as long as it takes, not one that has already run out. */
  @Test
  void awaitRing_withTheLongestTimeout_waitsUntilTheRingComes() throws Exception {
    try (TestCluster cluster = new TestCluster("await-longest")) {
      Ringmaster a = cluster.start("a");
      CompletableFuture<HashRing> two = CompletableFuture.supplyAsync(() -> await(a, 2,
          Duration.ofSeconds(Long.MAX_VALUE)), TestThreads.ON_OWN_THREAD);
      Awaitility.await("waiting").atMost(WAIT).until(() -> a.ringWaiters() == 1 || two.isDone());
      assertFalse(two.isDone(), () -> "gave up at once: " + two.handle((r, e) -> e).join());
      cluster.start("b");
      assertEquals(2, two.get(WAIT.toSeconds(), TimeUnit.SECONDS).members().size());
    }
  }

  private static HashRing await(Ringmaster node, int members, Duration timeout) {
    try {
      return node.awaitRing(r -> r.members().size() >= members, timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CompletionException(e);
    }
  }
}
