package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.jgroups.Address;
import org.jgroups.View;
import org.jgroups.protocols.TP;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.jgroups.stack.ProtocolStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class OwnershipCallbacksTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  /** The ring positions an {@link OwnershipRecorder} folds at. */
  private static final long SEED = 20261203L;

  private static void awaitFolds(Map<Ringmaster, OwnershipRecorder> recorders, List<Ringmaster> alive) {
    for (Ringmaster n : alive) {
      OwnershipRecorder r = recorders.get(n);
      await().atMost(WAIT).until(() -> r.foldMatches(n.ring(), n.localMember().id(), n.config().replicas()));
      assertEquals(List.of(), r.violations());
    }
  }

  /**
   * Same-thread listeners run one after another on the view thread: an interrupt the first one's
   * callback leaves on it (one meant for it) does not reach the next one's callback.
   */
  @Test
  void sameThreadListener_leavingAnInterrupt_doesNotInterruptTheNextListenersCallback() throws Exception {
    try (TestCluster cluster = new TestCluster("interrupt-left")) {
      Ringmaster a = cluster.start("a");
      a.addOwnershipListener(change -> Thread.currentThread().interrupt(), Runnable::run);
      CompletableFuture<Boolean> nextInterrupted = new CompletableFuture<>();
      a.addOwnershipListener(change -> {
        if (change.reason() != OwnershipChange.Reason.INITIAL) {
          nextInterrupted.complete(Thread.currentThread().isInterrupted());
        }
      }, Runnable::run);
      Thread.interrupted(); // the first listener's INITIAL change ran on this thread
      cluster.start("b");
      assertFalse(nextInterrupted.get(30, TimeUnit.SECONDS), "the second callback started interrupted");
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void joinersInOneView_eachGainsFromTheMembersBeforeIt_neverFromAnotherJoiner(@TempDir Path dir) throws Exception {
    // The joiners never give up asking (JGroups' default is ten requests, a second apart, then a
    // cluster of their own), so that a slow machine cannot turn this into a merge.
    String stack;
    try (InputStream in = OwnershipCallbacksTest.class.getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      String xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(xml.contains("<pbcast.GMS "), "the in-JVM stack has GMS");
      stack = Files.writeString(dir.resolve("patient-joiners.xml"),
          xml.replace("<pbcast.GMS ", "<pbcast.GMS max_join_attempts=\"0\" ")).toString();
    }
    try (TestCluster cluster = new TestCluster("co-joiners")) {
      Ringmaster a = cluster.start(cluster.builder("a").replicas(2));
      Ringmaster b = cluster.start(cluster.builder("b").replicas(2));
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(20));
      HashRing before = a.ring();

      // Hold the coordinator's join requests, so that c, d and e join in one view.
      ViewHandler<?> joins = TestCluster.holdRequests(a);
      Map<String, List<OwnershipChange>> seen = new ConcurrentHashMap<>();
      List<CompletableFuture<Ringmaster>> joining = new ArrayList<>();
      for (String id : List.of("c", "d", "e")) {
        seen.put(id, new CopyOnWriteArrayList<>());
        // A thread each: all three block until the requests are let through.
        joining.add(CompletableFuture.supplyAsync(() -> cluster.start(cluster.builder(id).replicas(2)
            .jgroupsConfig(stack), n -> n.addOwnershipListener(seen.get(id)::add)),
            r -> new Thread(r, "start-" + id).start()));
      }
      // Each joiner sends its request again every join_timeout (1 s in in-jvm.xml); the queue
      // keeps one of each. Once all three are queued, the next
      // request to arrive, a repeat, starts the processing of all three.
      try {
        await("three join requests queued").atMost(Duration.ofSeconds(20)).until(() -> joins.size() >= 3);
      } finally {
        joins.processing(false); // in a finally: else the joiners, who never give up, would wait for good
      }
      List<Ringmaster> all = new ArrayList<>(List.of(a, b));
      all.addAll(TestCluster.joinAll(joining));
      TestCluster.awaitAgreement(all, 5, Duration.ofSeconds(20));

      Set<Long> firstViews = new HashSet<>();
      for (String id : List.of("c", "d", "e")) {
        await(id + "'s first change").atMost(Duration.ofSeconds(20)).until(() -> !seen.get(id).isEmpty());
        OwnershipChange first = seen.get(id).get(0);
        assertEquals(-1, first.previousViewId());
        // Not compared with a's view id now: a view after the joins (a false suspicion on a busy
        // machine) would move it on.
        assertEquals(5, first.ring().members().size(), id + " joined in the view that admitted all three");
        firstViews.add(first.viewId());
        assertEquals(before.checksum(), first.previousRing().checksum(),
            id + " compares with the ring of a and b, not with one holding the other joiners");
        TestCluster.assertGainsFrom(before, 2, first); // a or b, the members that hold the data
      }
      assertEquals(1, firstViews.size(), "c, d and e joined in one view: " + firstViews);
    }
  }

  /**
   * isLeaving() is false until close(), and true in the LEAVING callback, where the hand-off
   * starts while isLocal still answers true for the keys handed off: what a store reads to stop
   * taking writes for them. It stays true after close(), and says nothing of other nodes.
   */
  @Test
  void isLeaving_isFalseUntilClose_andTrueInTheLeavingCallback_whileIsLocalStillAnswersForItsKeys() {
    try (TestCluster cluster = new TestCluster("is-leaving")) {
      Ringmaster keeper = cluster.start("keeper");
      List<String> keys = IntStream.range(0, 1_000).mapToObj(k -> "key-" + k).toList();
      List<String> seen = new CopyOnWriteArrayList<>();
      Ringmaster leaver = cluster.start(cluster.builder("leaver"), node -> {
        seen.add("before start: leaving " + node.isLeaving());
        node.addOwnershipListener(change -> {
          List<String> handedOff = change.lostKeys(keys).values().stream().flatMap(List::stream).toList();
          seen.add(change.reason() + ": leaving " + node.isLeaving() + ", hands off " + !handedOff.isEmpty()
              + ", all still local " + handedOff.stream().allMatch(node::isLocal));
        });
      });
      await().atMost(WAIT).until(() -> seen.size() == 2);
      assertFalse(leaver.isLeaving(), "running");

      leaver.close();
      assertTrue(leaver.isLeaving(), "closed");
      assertFalse(keeper.isLeaving(), "another node");
      await().atMost(WAIT).until(() -> seen.size() == 3);
      assertEquals(List.of("before start: leaving false", "VIEW: leaving false, hands off false, all still local true",
          "LEAVING: leaving true, hands off true, all still local true"), seen);
    }
  }

  @Test
  void close_withLeaveTimeoutZero_stillDeliversLeaving_thenLooksUpInTheRingItLeftBehind() {
    // A leaveTimeout of 0 is no reason to give up on the view thread queuing the change: close()
    // waits at least 5 s for it, and says nothing of a view thread that was not held.
    try (TestCluster cluster = new TestCluster("zero-leave");
         NodeLog busy = new NodeLog(r -> r.getMessage().contains("the view thread was still busy"))) {
      // The default 1024 tokens: the larger the ring, the longer the LEAVING change takes to compute.
      Ringmaster keeper = cluster.start(cluster.builder("keeper").virtualNodes(1024));
      // Repeated: queueing the LEAVING change raced the shutdown, and lost about one close in two.
      for (int i = 0; i < 6; i++) {
        List<OwnershipChange> changes = new CopyOnWriteArrayList<>();
        Ringmaster n = cluster.start(cluster.builder("zero-" + i).virtualNodes(1024).leaveTimeout(Duration.ZERO),
            node -> node.addOwnershipListener(changes::add));
        await().atMost(WAIT).until(() -> !changes.isEmpty());
        String key = IntStream.range(0, 10_000).mapToObj(k -> "key-" + k).filter(n::isPrimary)
            .findFirst().orElseThrow();
        assertTrue(n.isInRing() && n.isLocal(key));
        String id = n.localMember().id();

        n.close();
        await().atMost(Duration.ofSeconds(5))
            .until(() -> changes.stream().anyMatch(c -> c.reason() == OwnershipChange.Reason.LEAVING));
        // What the node left behind: the ring of its LEAVING change, in which it owns nothing.
        OwnershipChange leaving = changes.get(changes.size() - 1);
        assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
        // Both rings of the last view it installed: one view id twice, and a node no longer in the ring after.
        assertEquals(n.viewId(), leaving.viewId());
        assertEquals(leaving.viewId(), leaving.previousViewId());
        assertFalse(leaving.inRing());
        assertEquals(leaving.ring(), leaving.previousRing().without(id));
        assertEquals(leaving.ring().checksum(), n.ring().checksum(), "the ring it left behind");
        assertFalse(n.ring().contains(id));
        assertFalse(n.isInRing());
        assertFalse(n.isPrimary(key.getBytes(StandardCharsets.UTF_8)));
        assertFalse(n.isLocal(key));
        assertEquals(keeper.localMember(), n.ownerOf(key), "the member that took the key");
        assertEquals(Optional.empty(), n.addressOf(id));
        await().atMost(WAIT).until(() -> keeper.ring().checksum() == n.ring().checksum());
      }
      assertEquals(List.of(), busy.records().stream().map(r -> r.getMessage()).toList());
    }
  }

  /**
   * A leaveTimeout of 0 asks close() not to wait for the listeners' hand-off: close() returns while
   * a listener on an executor of the application's still runs its LEAVING change, without the
   * warning that names busy listeners (that warning is for a wait that ran out), and the listener
   * still gets the whole change.
   */
  @Test
  void close_withLeaveTimeoutZero_doesNotWaitForABusyListener_norWarnsOfIt() throws Exception {
    ExecutorService own = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("zero-leave-busy");
         NodeLog busy = new NodeLog(r -> r.getMessage().contains("listeners still busy"))) {
      Ringmaster keeper = cluster.start("keeper");
      CountDownLatch handOff = new CountDownLatch(1);
      CountDownLatch handingOff = new CountDownLatch(1);
      List<OwnershipChange> leaving = new CopyOnWriteArrayList<>();
      Ringmaster n = cluster.start(cluster.builder("n").leaveTimeout(Duration.ZERO),
          node -> node.addOwnershipListener(change -> {
            if (change.reason() == OwnershipChange.Reason.LEAVING) {
              handingOff.countDown();
              awaitQuietly(handOff); // a hand-off that lasts until close() has returned
              leaving.add(change);
            }
          }, own));
      TestCluster.awaitAgreement(List.of(keeper, n), 2, WAIT);
      try {
        n.close();
        assertTrue(handingOff.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the LEAVING change is handed off");
        assertEquals(List.of(), leaving, "close() returned without waiting for the hand-off");
        assertFalse(n.leftIdle(), "it left with the listener still busy");
        assertEquals(List.of(), busy.records().stream().map(LogRecord::getMessage).toList());
      } finally {
        handOff.countDown();
      }
      await().atMost(WAIT).until(() -> leaving.size() == 1);
      assertEquals(List.of(keeper.localMember()), leaving.get(0).ring().members());
    } finally {
      own.shutdownNow();
    }
  }

  /**
   * A listener on an executor with many threads still gets its callbacks one at a time, in view
   * order: its first callback is held until the change after it has been published (the view with
   * c) and queued, and the executor has by then been handed that first callback only (the next is
   * handed over once it returns).
   */
  @Test
  void callbacks_onAManyThreadedExecutor_runOneAtATimeInViewOrder() throws Exception {
    ExecutorService pool = Executors.newCachedThreadPool();
    try (TestCluster cluster = new TestCluster("one-at-a-time")) {
      cluster.start("a");
      AtomicInteger inFlight = new AtomicInteger();
      AtomicInteger mostAtOnce = new AtomicInteger();
      List<Long> views = new CopyOnWriteArrayList<>();
      AtomicInteger handed = new AtomicInteger(); // tasks handed to the executor
      AtomicInteger handedWhileFirstRan = new AtomicInteger(-1);
      CountDownLatch sawC = new CountDownLatch(1);
      Executor counting = task -> {
        handed.incrementAndGet();
        pool.execute(task);
      };
      OwnershipListener slowFirst = change -> {
        mostAtOnce.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        try {
          views.add(change.viewId());
          if (views.size() == 1) {
            // Held until the view thread has launched what the view with c queued: it launches
            // the ownership listeners first, then the membership listeners, in registration order,
            // so once the membership listener added after this one has heard of c, this
            // listener's next callback was handed over, or kept back, already.
            await("the view with c, launched").atMost(WAIT).until(() -> sawC.getCount() == 0);
            handedWhileFirstRan.set(handed.get());
          }
        } finally {
          inFlight.decrementAndGet();
        }
      };
      cluster.start(cluster.builder("b"), node -> {
        node.addOwnershipListener(slowFirst, counting);
        node.addMembershipListener(change -> {
          if (change.members().stream().anyMatch(m -> m.id().equals("c"))) {
            sawC.countDown();
          }
        }, pool);
      });
      cluster.start("c");
      await("both callbacks ran").atMost(WAIT).until(() -> views.size() >= 2);
      assertEquals(1, handedWhileFirstRan.get(), "the executor was handed the next callback while the first ran");
      assertEquals(1, mostAtOnce.get(), "two callbacks of one listener ran at once");
      assertTrue(views.get(0) < views.get(1), "in view order: " + views);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a deadlock fails, not hangs
  void close_fromTheNodesOwnListener_doesNotWaitForIt_andItStillGetsLeaving() {
    try (TestCluster cluster = new TestCluster("close-inside")) {
      cluster.start("keeper");
      // Far longer than the await below: a close() that waited for its caller would fail it.
      Duration leaveTimeout = Duration.ofMinutes(5);
      ExecutorService own = Executors.newSingleThreadExecutor();
      try {
        for (Map.Entry<String, Executor> e : listenerExecutors(own).entrySet()) {
          List<OwnershipChange.Reason> reasons = new CopyOnWriteArrayList<>();
          List<Boolean> interrupted = new CopyOnWriteArrayList<>();
          AtomicReference<Ringmaster> self = new AtomicReference<>();
          OwnershipListener closeOnJoin = change -> {
            reasons.add(change.reason());
            if (reasons.size() == 1) { // the node's join
              self.get().close(); // waits for start() to return: both hold the node's lock
              interrupted.add(Thread.currentThread().isInterrupted());
            }
          };
          String id = "inside-" + e.getKey();
          Ringmaster n = startListening(cluster, cluster.builder(id).leaveTimeout(leaveTimeout), e.getValue(),
              closeOnJoin, self);
          await().atMost(WAIT).until(() -> !interrupted.isEmpty());
          assertEquals(List.of(false), interrupted, id + ": close() left the listener's thread uninterrupted");
          await().atMost(WAIT).until(() -> reasons.contains(OwnershipChange.Reason.LEAVING));
          assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), reasons, id);
          assertTrue(n.channel().isClosed(), id + " left the cluster");
          assertFalse(n.leftIdle(), id + ": its LEAVING hand-off ran after the node left");
          await().atMost(WAIT).until(() -> nodeThreads(id).isEmpty()); // none leaked
        }
      } finally {
        own.shutdown();
      }
    }
  }

  /**
   * A second close() waits for the first, and returns once interrupted, its flag set, while the
   * first goes on handing off: it waited without hearing interrupts, up to the first's whole leave.
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aSecondClose_waitsForTheFirst_andReturnsWhenInterrupted() throws Exception {
    try (TestCluster cluster = new TestCluster("close-second")) {
      CountDownLatch handOff = new CountDownLatch(1);
      AtomicBoolean leaving = new AtomicBoolean();
      Ringmaster n = handingOffUntil(cluster, handOff, leaving);
      CompletableFuture<Void> first = CompletableFuture.runAsync(n::close, TestThreads.ON_OWN_THREAD);
      await().atMost(WAIT).until(leaving::get);
      AtomicBoolean flagAfter = new AtomicBoolean();
      Thread second = new Thread(() -> {
        n.close();
        flagAfter.set(Thread.currentThread().isInterrupted());
      }, "second-close");
      second.start();
      await().atMost(WAIT).until(() -> second.getState() == Thread.State.WAITING);
      assertFalse(first.isDone(), "the first close() waits for the hand-off");
      second.interrupt();
      second.join(TimeUnit.SECONDS.toMillis(10));
      assertFalse(second.isAlive(), "the second close() returned once interrupted");
      assertTrue(flagAfter.get(), "with its interrupt flag set");
      assertFalse(first.isDone(), "the first close() goes on");
      handOff.countDown();
      first.get(30, TimeUnit.SECONDS);
      assertTrue(n.channel().isClosed());
    }
  }

  /**
   * Node n, beside a keeper, whose listener's LEAVING hand-off lasts until {@code handOff} opens;
   * {@code leaving} says when it began.
   */
  private static Ringmaster handingOffUntil(TestCluster cluster, CountDownLatch handOff, AtomicBoolean leaving) {
    cluster.start("keeper");
    return cluster.start(cluster.builder("n").leaveTimeout(Duration.ofMinutes(5)),
        node -> node.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            leaving.set(true);
            awaitQuietly(handOff); // a hand-off under way
          }
        }));
  }

  /**
   * A second close() called with its interrupt flag already set (in a {@code finally} after a caught
   * InterruptedException, say) still waits for the first to end, as the first close() does not cut
   * its leave short for a flag set before the call, and returns with the flag still set.
   */
  @Test
  void aSecondClose_calledWithTheInterruptFlagSet_stillWaitsForTheFirst_andKeepsTheFlag() throws Exception {
    try (TestCluster cluster = new TestCluster("close-second-flagged")) {
      CountDownLatch handOff = new CountDownLatch(1);
      AtomicBoolean leaving = new AtomicBoolean();
      Ringmaster n = handingOffUntil(cluster, handOff, leaving);
      CompletableFuture<Void> first = CompletableFuture.runAsync(n::close, TestThreads.ON_OWN_THREAD);
      CompletableFuture<Boolean> flagAfter = new CompletableFuture<>();
      Thread second = new Thread(() -> {
        Thread.currentThread().interrupt();
        n.close();
        flagAfter.complete(Thread.currentThread().isInterrupted());
      }, "second-close");
      try {
        await().atMost(WAIT).until(leaving::get);
        second.start();
        await().atMost(WAIT).until(() -> second.getState() == Thread.State.WAITING || !second.isAlive());
        assertTrue(second.isAlive(), "the second close() waits for the first, its flag notwithstanding");
        assertFalse(first.isDone(), "the first close() waits for the hand-off");
      } finally {
        handOff.countDown();
      }
      first.get(30, TimeUnit.SECONDS);
      assertTrue(flagAfter.get(30, TimeUnit.SECONDS), "the second close() returns with its flag still set");
      second.join(TimeUnit.SECONDS.toMillis(10));
      assertTrue(n.channel().isClosed());
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a deadlock fails, not hangs
  void close_whileItsListenerClosesTheNodeToo_bothReturn() {
    try (TestCluster cluster = new TestCluster("close-twice")) {
      cluster.start("keeper");
      ExecutorService own = Executors.newSingleThreadExecutor();
      try {
        // The listener's close() comes while the application's close() waits for it: the listener's
        // must not wait for the application's, nor the application's for the listener's.
        for (Map.Entry<String, Executor> e : listenerExecutors(own).entrySet()) {
          List<OwnershipChange.Reason> reasons = new CopyOnWriteArrayList<>();
          AtomicReference<Ringmaster> self = new AtomicReference<>();
          OwnershipListener closeOnLeaving = change -> {
            reasons.add(change.reason());
            if (change.reason() == OwnershipChange.Reason.LEAVING) {
              self.get().close();
            }
          };
          String id = "twice-" + e.getKey();
          Ringmaster n = startListening(cluster, cluster.builder(id).leaveTimeout(Duration.ofMinutes(5)),
              e.getValue(), closeOnLeaving, self);
          await().atMost(WAIT).until(() -> reasons.size() == 1);

          CompletableFuture<Void> closed = CompletableFuture.runAsync(n::close, TestThreads.ON_OWN_THREAD);
          await().atMost(WAIT).until(closed::isDone);
          assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), reasons, id);
          assertTrue(n.channel().isClosed(), id);
        }
      } finally {
        own.shutdown();
      }
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_fromASameThreadListener_otherListenersStillGetEveryChange() {
    try (TestCluster cluster = new TestCluster("close-others");
         NodeLog unwaited = new NodeLog(r -> r.getMessage().contains("still runs a task a second after close()"))) {
      cluster.start("keeper");
      List<OwnershipChange.Reason> others = new CopyOnWriteArrayList<>();
      List<MembershipChange> memberships = new CopyOnWriteArrayList<>();
      List<Boolean> closed = new CopyOnWriteArrayList<>();
      AtomicReference<Ringmaster> self = new AtomicReference<>();
      // Registered first, so its callback on the view thread comes before the others are launched.
      Ringmaster n = cluster.start(cluster.builder("closer").leaveTimeout(Duration.ofMinutes(5)), node -> {
        self.set(node);
        node.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.VIEW) {
            self.get().close();
            closed.add(true);
          }
        }, Runnable::run);
        node.addOwnershipListener(change -> others.add(change.reason()));
        node.addMembershipListener(memberships::add);
      });
      await().atMost(WAIT).until(() -> !closed.isEmpty());
      await().atMost(WAIT).until(() -> others.size() == 2 && memberships.size() == 1);
      assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), others);
      assertEquals(List.of("closer", "keeper"), memberships.get(0).members().stream().map(Member::id).toList());
      assertEquals(3, n.ownershipListenerCount() + n.membershipListenerCount(), "no listener was dropped");
      // close() did not wait for the view thread it ran on, nor warn that it still ran.
      assertEquals(List.of(), unwaited.records().stream().map(LogRecord::getMessage).toList());
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_fromAListener_doesNotWaitForListenersQueuedBehindItOnItsExecutor() {
    try (TestCluster cluster = new TestCluster("close-shared")) {
      cluster.start("keeper");
      ExecutorService serial = Executors.newSingleThreadExecutor();
      try {
        List<String> calls = new CopyOnWriteArrayList<>();
        CountDownLatch added = new CountDownLatch(1);
        AtomicReference<Ringmaster> self = new AtomicReference<>();
        OwnershipListener closer = change -> {
          calls.add("closer " + change.reason());
          if (change.reason() == OwnershipChange.Reason.VIEW) {
            awaitQuietly(added);
            self.get().close(); // the membership listener below waits on this very thread
            calls.add("closed");
          }
        };
        startListening(cluster, cluster.builder("shared").leaveTimeout(Duration.ofMinutes(5)), serial, closer, self);
        // start() returns once the ring is published, maybe before its callbacks reach their
        // executors: once the closer's join has begun it holds the executor, and the first call of a
        // listener added then, the members, queues behind it
        await().atMost(WAIT).until(() -> calls.contains("closer VIEW"));
        self.get().addMembershipListener(m -> calls.add("members"), serial);
        added.countDown();
        await().atMost(WAIT).until(() -> calls.contains("members") && calls.contains("closer LEAVING"));
        assertEquals(List.of("closer VIEW", "closed", "closer LEAVING", "members"), calls);
      } finally {
        serial.shutdown();
      }
    }
  }

  /**
   * The application thread that adds a same-thread listener runs its first callback, and the
   * changes queued meanwhile, itself: an interrupt the application sends it during one of them is
   * the application's, and the next callback on that thread sees it (Ringmaster hides an interrupt
   * left by a callback from the next one only on its own threads, where close() sends them).
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void sameThreadCallbacksOnTheAddingThread_seeTheApplicationsInterrupt() throws Exception {
    try (TestCluster cluster = new TestCluster("interrupt-adding-thread")) {
      Ringmaster a = cluster.start("a");
      List<OwnershipChange.Reason> reasons = new CopyOnWriteArrayList<>();
      List<Boolean> interrupted = new CopyOnWriteArrayList<>();
      AtomicReference<CompletableFuture<Ringmaster>> joiner = new AtomicReference<>();
      AtomicReference<Throwable> waitFailed = new AtomicReference<>();
      boolean kept;
      try {
        a.addOwnershipListener(change -> {
          reasons.add(change.reason());
          interrupted.add(Thread.currentThread().isInterrupted());
          if (change.reason() == OwnershipChange.Reason.INITIAL) {
            SerialDelivery<?> self = SerialDelivery.runningOnCurrentThread(a).get(0);
            joiner.set(CompletableFuture.supplyAsync(() -> cluster.start("b"), TestThreads.ON_OWN_THREAD));
            try {
              await("b's view, queued behind this callback").atMost(WAIT).until(() -> self.pending() >= 2);
            } catch (RuntimeException | Error e) {
              waitFailed.set(e);
            }
            Thread.currentThread().interrupt(); // the application's, sent during this callback
          }
        }, Runnable::run);
      } finally {
        kept = Thread.interrupted(); // and cleared: later tests run on this thread
      }
      assertEquals(null, waitFailed.get(), "b's view never queued behind the first callback");
      assertTrue(kept, "the adding thread has the interrupt when its callbacks are done");
      assertEquals(List.of(OwnershipChange.Reason.INITIAL, OwnershipChange.Reason.VIEW), reasons.subList(0, 2));
      assertEquals(List.of(false, true), interrupted.subList(0, 2), "the second callback saw the interrupt");
      joiner.get().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_fromAPoolListener_interruptsAnotherStillBusyAfterLeaveTimeout_butNotItself() throws Exception {
    try (TestCluster cluster = new TestCluster("close-stuck");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("listeners still busy after leaveTimeout"))) {
      cluster.start("keeper");
      CountDownLatch never = new CountDownLatch(1);
      CountDownLatch added = new CountDownLatch(1);
      List<Boolean> stuckInterrupted = new CopyOnWriteArrayList<>();
      List<Boolean> stuckLeavingInterrupted = new CopyOnWriteArrayList<>();
      List<Boolean> closerInterrupted = new CopyOnWriteArrayList<>();
      AtomicReference<Ringmaster> self = new AtomicReference<>();
      OwnershipListener closer = change -> {
        if (change.reason() == OwnershipChange.Reason.VIEW) {
          awaitQuietly(added);
          self.get().close();
          closerInterrupted.add(Thread.currentThread().isInterrupted());
        }
      };
      startListening(cluster, cluster.builder("stuck").leaveTimeout(Duration.ofMillis(300)), null, closer, self);
      OwnershipListener stuck = change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          stuckLeavingInterrupted.add(Thread.currentThread().isInterrupted());
          return;
        }
        try {
          never.await(); // a hand-off that never ends
        } catch (InterruptedException e) {
          stuckInterrupted.add(true);
          Thread.currentThread().interrupt(); // kept, as it should be
        }
      };
      self.get().addOwnershipListener(stuck);
      added.countDown();
      await().atMost(WAIT).until(() -> !closerInterrupted.isEmpty() && !stuckInterrupted.isEmpty());
      assertEquals(List.of(false), closerInterrupted, "the closing listener's own thread");
      await().atMost(WAIT).until(() -> !stuckLeavingInterrupted.isEmpty());
      assertEquals(List.of(false), stuckLeavingInterrupted,
          "the interrupted listener's LEAVING callback, next on that thread, starts without the interrupt");
      assertTrue(self.get().channel().isClosed());
      // The WARNING names the listener still handing off, not the one that called close(): no wait helps that one.
      String busy = String.valueOf(log.records().get(0).getParameters()[2]);
      assertTrue(busy.startsWith("ownership listener " + stuck + " of stuck (") && !busy.contains(closer.toString()),
          busy);
    }
  }

  /**
   * A listener that ignores close()'s interrupt does not hold close() up, and is not left running
   * unseen: a WARNING names the thread that still runs its callback, the node's listener pool for a
   * listener on it, the view thread for one on a same-thread executor. close() waits a second for
   * that thread first: without that wait there would be no WARNING.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_aListenerThatIgnoresTheInterrupt_isReportedInAWarningNamingItsThread_andCloseReturns(boolean sameThread)
      throws Exception {
    try (NodeLog log = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue()
        && r.getParameters() != null && "deaf".equals(r.getParameters()[0]));
         TestCluster cluster = new TestCluster("close-deaf")) {
      cluster.start("keeper");
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger interrupts = new AtomicInteger();
      OwnershipListener handOff = change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          TestCluster.awaitIgnoringInterrupts(release, interrupts, WAIT); // a hand-off deaf to interrupts
        }
      };
      Ringmaster deaf = cluster.start(cluster.builder("deaf").leaveTimeout(Duration.ofMillis(300)), n -> {
        if (sameThread) {
          n.addOwnershipListener(handOff, Runnable::run);
        } else {
          n.addOwnershipListener(handOff);
        }
      });
      try {
        deaf.close();
        assertFalse(deaf.leftIdle(), "it left with a listener still busy");
        await("close() interrupted the callback").atMost(WAIT).until(() -> interrupts.get() == 1);
        String thread = sameThread ? "view thread" : "listener pool";
        assertTrue(log.messages().contains("deaf: the " + thread + " still runs a task a second after close()"
            + " interrupted it; close() returns without waiting for it"), log.messages().toString());
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * close() interrupted while it waits for the node's threads to stop (here two hand-offs deaf to
   * interrupts hold the view thread and a listener-pool thread for a second each) stops waiting and
   * returns with its interrupt flag set; the node's pool is still shut down, so every thread of the
   * node ends once the hand-offs return, and the pool's hand-off is not interrupted.
   */
  @Test
  void close_interruptedWhileItWaitsForTheNodesThreads_returnsWithTheFlag_andTheThreadsStillEnd() throws Exception {
    try (TestCluster cluster = new TestCluster("close-interrupted-stop")) {
      cluster.start("keeper");
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger viewThreadInterrupts = new AtomicInteger();
      AtomicInteger poolInterrupts = new AtomicInteger();
      Ringmaster deaf = cluster.start(cluster.builder("deaf-twice").leaveTimeout(Duration.ofMillis(300)), n -> {
        n.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            TestCluster.awaitIgnoringInterrupts(release, viewThreadInterrupts, WAIT);
          }
        }, Runnable::run);
        n.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            TestCluster.awaitIgnoringInterrupts(release, poolInterrupts, WAIT);
          }
        });
      });
      AtomicBoolean flagAfter = new AtomicBoolean();
      Thread closer = new Thread(() -> {
        deaf.close();
        flagAfter.set(Thread.currentThread().isInterrupted());
      }, "closer");
      try {
        closer.start();
        // The view thread interrupted, and close() waiting a second for it (then one or two for the pool).
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20))
            .until(() -> viewThreadInterrupts.get() == 1 && waitingIn(closer, "shutdownSteps"));
        closer.interrupt();
        closer.join(WAIT.toMillis());
        assertFalse(closer.isAlive(), "close() returned");
        assertTrue(flagAfter.get(), "with its interrupt flag set");
      } finally {
        release.countDown();
      }
      await().atMost(WAIT).until(() -> nodeThreads("deaf-twice").isEmpty());
      assertEquals(0, poolInterrupts.get(), "the pool was shut down, its hand-off not interrupted");
    }
  }

  /**
   * close() waits for the view thread to queue the LEAVING change, then up to leaveTimeout for the
   * listeners. A listener on a same-thread executor runs its LEAVING callback on the view thread:
   * one still handing off after leaveTimeout is a busy listener, not a leave that was never
   * announced, and close() does not wait for it past leaveTimeout plus the pools' second. No
   * callback runs on the closing thread, not even that of a second same-thread listener, held up
   * behind the first: close() only waits, and the second gets its change on the view thread once
   * the first returns. A listener on the node's pool is not held up: it is handed the change first.
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_sameThreadListenerStillHandingOff_isReportedBusy_notAsALeaveNeverAnnounced() throws Exception {
    try (NodeLog log = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue());
         TestCluster cluster = new TestCluster("close-handing-off")) {
      cluster.start("keeper");
      CountDownLatch release = new CountDownLatch(1);
      AtomicReference<Thread> leavingOn = new AtomicReference<>();
      AtomicBoolean interrupted = new AtomicBoolean();
      AtomicBoolean firstReturned = new AtomicBoolean();
      CountDownLatch poolRecorded = new CountDownLatch(1);
      OwnershipListener handingOff = change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          leavingOn.set(Thread.currentThread());
          try {
            // A hand-off that outlasts leaveTimeout. Bounded: were the callback to run on the
            // closing thread, close() would return only after this, and the test fail below.
            release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            interrupted.set(true); // the shutdown of the view thread, after leaveTimeout
            try {
              // Not returning before the pool's listener has looked (bounded: it is held up
              // behind this callback if the node launched it after this one).
              poolRecorded.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            } catch (InterruptedException again) {
              Thread.currentThread().interrupt();
            }
          }
          firstReturned.set(true);
        }
      };
      List<Thread> heldUpOn = new CopyOnWriteArrayList<>();
      List<Boolean> onPoolWhileTheFirstHandsOff = new CopyOnWriteArrayList<>();
      Ringmaster leaver = cluster.start(cluster.builder("leaver").leaveTimeout(Duration.ofSeconds(1)), node -> {
        node.addOwnershipListener(handingOff, Runnable::run);
        node.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            heldUpOn.add(Thread.currentThread());
          }
        }, Runnable::run);
        node.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            onPoolWhileTheFirstHandsOff.add(!firstReturned.get());
            poolRecorded.countDown();
          }
        });
      });
      try {
        leaver.close();
        assertFalse(heldUpOn.contains(Thread.currentThread()), "the held-up callback did not run on the closing thread");
        await().atMost(WAIT).until(() -> leavingOn.get() != null);
        assertTrue(leavingOn.get().getName().startsWith("ringmaster-view-leaver"),
            "the LEAVING callback ran on the view thread, not on the closing one: " + leavingOn.get().getName());
        await().atMost(WAIT).untilTrue(interrupted);
        await().atMost(WAIT).until(() -> !heldUpOn.isEmpty());
        assertTrue(heldUpOn.get(0).getName().startsWith("ringmaster-view-leaver"),
            "the held-up callback ran on the view thread, once the first returned: " + heldUpOn.get(0).getName());
        await().atMost(WAIT).until(() -> !onPoolWhileTheFirstHandsOff.isEmpty());
        assertEquals(List.of(true), onPoolWhileTheFirstHandsOff,
            "the pool's listener got its LEAVING change while the same-thread one still handed off");
      } finally {
        release.countDown();
      }
      List<String> warnings = log.records().stream().map(LogRecord::getMessage).toList();
      assertTrue(warnings.stream().anyMatch(m -> m.contains("listeners still busy after leaveTimeout")), warnings::toString);
      LogRecord busy = log.records().stream()
          .filter(r -> r.getMessage().contains("listeners still busy after leaveTimeout")).findFirst().orElseThrow();
      assertEquals("1000", busy.getParameters()[1], "the leaveTimeout it waited");
      assertTrue(String.valueOf(busy.getParameters()[2]).startsWith("ownership listener " + handingOff + " of leaver ("),
          "names the listener still handing off: " + busy.getParameters()[2]);
      assertTrue(warnings.stream().noneMatch(m -> m.contains("could not announce the leave")), warnings::toString);
    }
  }

  /**
   * A listener on a same-thread executor holds the view thread in a long callback (a hand-off on a
   * view change) when close() is called. close() waits for the view thread to queue the LEAVING
   * change only for the longer of leaveTimeout and 5 s, then queues it itself, with a warning, from
   * the ring the listeners last heard of, and every listener hears the node leave, on a thread that
   * is not interrupted (as the view thread is once close() stops it): the listeners after the held
   * one, whose callbacks of the joiner's view the view thread has yet to start (a same-thread one,
   * on a pool thread; one on an executor of the application's), and listeners added while it is
   * held (one on the node's pool, a same-thread one). The two same-thread listeners run one after
   * the other on one pool thread, as they would have on the view thread, never on the closing one.
   * The listener holding the view thread gets the change there once its callback returns
   * (interrupted by the shutdown, it sets the flag again, as it should), and its LEAVING callback
   * starts without the interrupt meant for the one before it.
   * Before, close() gave up with "could not announce the leave" and no listener ever heard the node
   * leave: their folds kept what it had given up.
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_whileASameThreadListenerHoldsTheViewThread_stillDeliversLeavingToEveryListener() throws Exception {
    ExecutorService own = Executors.newSingleThreadExecutor(r -> new Thread(r, "application-thread"));
    try (NodeLog log = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue());
         TestCluster cluster = new TestCluster("close-view-held")) {
      Ringmaster keeper = cluster.start("keeper");
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean holding = new AtomicBoolean();
      CompletableFuture<Boolean> holderLeavingInterrupted = new CompletableFuture<>();
      OwnershipRecorder holder = new OwnershipRecorder(SEED);
      Map<String, OwnershipRecorder> recorders = new LinkedHashMap<>();
      Map<String, Thread> leavingOn = new ConcurrentHashMap<>();
      Map<String, Boolean> leavingInterrupted = new ConcurrentHashMap<>();
      Function<String, OwnershipListener> recording = name -> {
        OwnershipRecorder r = new OwnershipRecorder(SEED);
        recorders.put(name, r);
        return change -> {
          r.onOwnershipChange(change);
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            leavingInterrupted.put(name, Thread.currentThread().isInterrupted());
            leavingOn.put(name, Thread.currentThread()); // last: the test waits for it
          }
        };
      };
      Ringmaster leaver = cluster.start(cluster.builder("leaver").leaveTimeout(Duration.ofSeconds(3)), node -> {
        node.addOwnershipListener(change -> {
          if (change.reason() == OwnershipChange.Reason.LEAVING) {
            holderLeavingInterrupted.complete(Thread.currentThread().isInterrupted());
          }
          holder.onOwnershipChange(change);
          if (change.reason() != OwnershipChange.Reason.LEAVING && change.ring().contains("joiner")) {
            // the joiner's view: hold the view thread
            holding.set(true);
            try {
              release.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt(); // the shutdown of the view thread
            }
          }
        }, Runnable::run);
        node.addOwnershipListener(recording.apply("behind, same thread"), Runnable::run);
        node.addOwnershipListener(recording.apply("behind, application's"), own);
      });
      Ringmaster joiner = cluster.start("joiner");
      await().atMost(WAIT).until(holding::get);
      // Added while the view thread is held, so idle when the LEAVING change is queued.
      leaver.addOwnershipListener(recording.apply("added, pool"));
      leaver.addOwnershipListener(recording.apply("added, same thread"), Runnable::run);
      try {
        leaver.close();
        for (Map.Entry<String, OwnershipRecorder> e : recorders.entrySet()) {
          String name = e.getKey();
          await(name + " heard the node leave").atMost(WAIT).until(() -> leavingOn.containsKey(name));
          assertTrue(heardLeave(e.getValue()), name + ": " + e.getValue().changes());
          List<OwnershipChange> heard = e.getValue().changes();
          assertEquals(List.of("joiner", "keeper"), heard.get(heard.size() - 1).ring().members().stream()
              .map(Member::id).sorted().toList(), name + ": from the ring the listeners last heard of, the joiner's");
          assertTrue(e.getValue().ownsNothing(), name + ": the fold owns nothing once the node left");
          assertEquals(false, leavingInterrupted.get(name), name + " handed off on a thread not interrupted");
          assertEquals(List.of(), e.getValue().violations(), name);
        }
        for (String sameThread : List.of("behind, same thread", "added, same thread")) {
          assertTrue(leavingOn.get(sameThread).getName().startsWith("ringmaster-listener-leaver"),
              sameThread + ": on the node's pool, not the closing thread: " + leavingOn.get(sameThread).getName());
        }
        assertEquals(leavingOn.get("behind, same thread"), leavingOn.get("added, same thread"),
            "the same-thread listeners one after another on one pool thread, as on the view thread");
        assertEquals("application-thread", leavingOn.get("behind, application's").getName());
      } finally {
        release.countDown();
      }
      await("the listener holding the view thread heard the node leave").atMost(WAIT)
          .until(() -> heardLeave(holder));
      assertEquals(false, holderLeavingInterrupted.getNow(null), "its LEAVING callback started interrupted");
      assertTrue(holder.ownsNothing());
      assertEquals(List.of(), holder.violations());
      List<String> warnings = log.records().stream().map(LogRecord::getMessage).toList();
      assertTrue(warnings.stream().anyMatch(m -> m.contains("the LEAVING change was queued by close() instead, and the"
          + " callbacks the view thread had yet to start were handed to the node''s pool")),
          warnings::toString);
      assertTrue(warnings.stream().noneMatch(m -> m.contains("could not announce the leave")), warnings::toString);
      TestCluster.awaitAgreement(List.of(keeper, joiner), 2, WAIT);
    } finally {
      own.shutdownNow();
    }
  }

  /** Whether {@code thread} is in a node's wait for its listeners to finish the LEAVING change. */
  private static boolean waitsForListeners(Thread thread) {
    return thread.getState() == Thread.State.TIMED_WAITING
        && Arrays.stream(thread.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitListeners"));
  }

  private static boolean heardLeave(OwnershipRecorder recorder) {
    List<OwnershipChange> heard = recorder.changes();
    return !heard.isEmpty() && heard.get(heard.size() - 1).reason() == OwnershipChange.Reason.LEAVING;
  }

  /** For listeners: waits for the test to add the other listeners (never for long). */
  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(20, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Where a listener can run: the node's listener pool (null: the default), a same-thread executor
   * (the view thread, which close() needs to queue the LEAVING change), an application's thread.
   */
  private static Map<String, Executor> listenerExecutors(Executor own) {
    Map<String, Executor> executors = new LinkedHashMap<>();
    executors.put("pool", null);
    executors.put("same-thread", Runnable::run);
    executors.put("own-thread", own);
    return executors;
  }

  /** Starts a node with an ownership listener added before it joins, which finds it in {@code self}. */
  private static Ringmaster startListening(TestCluster cluster, Ringmaster.Builder builder, Executor executor,
                                           OwnershipListener listener, AtomicReference<Ringmaster> self) {
    return cluster.start(builder, node -> {
      self.set(node);
      if (executor == null) {
        node.addOwnershipListener(listener);
      } else {
        node.addOwnershipListener(listener, executor);
      }
    });
  }

  @Test
  void close_whenTheChannelsCloseThrows_stillStopsEveryThreadOfTheNode_andThrowsWhatItThrew() throws Exception {
    try (TestCluster cluster = new TestCluster("close-fails")) {
      Ringmaster n = cluster.start("failing");
      List<OwnershipChange.Reason> reasons = new CopyOnWriteArrayList<>();
      n.addOwnershipListener(change -> reasons.add(change.reason())); // a listener-pool thread runs it
      ProtocolStack stack = n.channel().getProtocolStack();
      stack.insertProtocol(new FailsOnDestroy(), ProtocolStack.Position.ABOVE,
          TP.class);

      AssertionError thrown = assertThrows(AssertionError.class, n::close);

      assertEquals("destroy failed", thrown.getMessage());
      assertEquals(List.of(OwnershipChange.Reason.INITIAL, OwnershipChange.Reason.LEAVING), reasons);
      await().atMost(WAIT).until(() -> nodeThreads("failing").isEmpty()); // the steps after the channel's close ran
    }
  }

  private static List<String> nodeThreads(String id) {
    return TestCluster.nodeThreads(id);
  }

  @Test
  void joinLeaveCrash_survivorsConverge_andEveryFoldEqualsOwnership() throws InterruptedException {
    Map<Ringmaster, OwnershipRecorder> rec = new HashMap<>();
    try (TestCluster cluster = new TestCluster("callbacks")) {
      List<Ringmaster> alive = new ArrayList<>();
      for (String id : List.of("a", "b", "c", "d")) {
        alive.add(cluster.startRecorded(cluster.builder(id).replicas(2), rec));
      }
      TestCluster.awaitAgreement(alive, 4, WAIT);
      awaitFolds(rec, alive);

      Ringmaster e = cluster.startRecorded(cluster.builder("e").replicas(2), rec);
      alive.add(e);
      TestCluster.awaitAgreement(alive, 5, WAIT);
      awaitFolds(rec, alive);
      // A joiner's first change names, for each gained range, the members that hold the data.
      OwnershipChange first = rec.get(e).changes().get(0);
      assertTrue(first.gained().stream().allMatch(g -> g.sources().size() == 2
          && g.sources().stream().noneMatch(m -> m.id().equals("e"))), first.gained().toString());

      Ringmaster b = alive.remove(1);
      b.close(); // graceful
      TestCluster.awaitAgreement(alive, 4, WAIT);
      awaitFolds(rec, alive);
      assertTrue(rec.get(b).ownsNothing(), "a node that left believes it owns nothing");
      assertEquals(OwnershipChange.Reason.LEAVING, last(rec.get(b).changes()).reason());

      Ringmaster c = alive.remove(1);
      cluster.crash(c);
      TestCluster.awaitAgreement(alive, 3, WAIT);
      awaitFolds(rec, alive);
      // Membership changes have a delivery of their own, which may run behind the ownership one.
      assertTrue(alive.get(0).awaitListeners(WAIT), "a's listeners ran what was queued");
      MembershipChange crashView = last(rec.get(alive.get(0)).memberships());
      assertEquals(List.of("c"), crashView.left().stream().map(Member::id).toList());
    }
  }

  @Test
  void join_onlyMembersWhoseOwnershipChanged_getCallbacks() throws InterruptedException {
    Map<Ringmaster, OwnershipRecorder> rec = new HashMap<>();
    try (TestCluster cluster = new TestCluster("only-changed")) {
      List<Ringmaster> alive = new ArrayList<>();
      alive.add(cluster.startRecorded(cluster.builder("a"), rec));
      alive.add(cluster.startRecorded(cluster.builder("b"), rec));
      alive.add(cluster.startRecorded(cluster.builder("router").weight(0), rec));
      TestCluster.awaitAgreement(alive, 3, WAIT);
      awaitFolds(rec, alive);
      HashRing before = alive.get(0).ring();
      Map<Ringmaster, Integer> callbacksBefore = new HashMap<>();
      alive.forEach(n -> callbacksBefore.put(n, rec.get(n).changes().size()));

      // A member of weight 0 joins: nobody's ownership changes, so nobody gets an ownership callback.
      Ringmaster observer = cluster.startRecorded(cluster.builder("observer").weight(0), rec);
      alive.add(observer);
      TestCluster.awaitAgreement(alive, 4, WAIT);
      await().atMost(WAIT).until(() -> rec.get(alive.get(0)).memberships().stream()
          .anyMatch(m -> m.joined().stream().anyMatch(j -> j.id().equals("observer"))));
      for (Ringmaster n : alive) { // every listener has handled the ring with the observer in it
        assertTrue(n.awaitListeners(WAIT), n.localMember().id());
      }
      for (Ringmaster n : alive.subList(0, 3)) {
        assertEquals(callbacksBefore.get(n), rec.get(n).changes().size(), n.localMember().id());
      }
      assertEquals(List.of(), rec.get(observer).changes());

      // A real member joins: exactly those whose diff is non-empty are called, with that diff.
      Ringmaster c = cluster.startRecorded(cluster.builder("c"), rec);
      alive.add(c);
      TestCluster.awaitAgreement(alive, 5, WAIT);
      awaitFolds(rec, alive);
      for (Ringmaster n : alive) {
        assertTrue(n.awaitListeners(WAIT), n.localMember().id());
      }
      HashRing after = c.ring();
      for (Ringmaster n : alive.subList(0, 4)) {
        RingDiff expected = RingDiff.compute(before, after, n.localMember().id(), 1);
        List<OwnershipChange> got = rec.get(n).changes().subList(callbacksBefore.getOrDefault(n, 0), rec.get(n).changes().size());
        if (expected.isEmpty()) {
          assertEquals(List.of(), got, n.localMember().id());
        } else {
          assertEquals(1, got.size(), n.localMember().id());
          assertEquals(expected, got.get(0).diff());
          assertEquals(after, got.get(0).ring());
        }
      }
      assertTrue(rec.get(alive.get(2)).changes().isEmpty(), "the router never owns anything");
    }
  }

  @Test
  void close_graceful_deliversLossesWithNewOwnersBeforeLeaving() throws Exception {
    try (TestCluster cluster = new TestCluster("graceful")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster c = cluster.start("c");
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
      HashRing ring = c.ring();
      List<OwnershipChange> leaving = new CopyOnWriteArrayList<>();
      List<Integer> membersSeenByA = new CopyOnWriteArrayList<>();
      c.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          leaving.add(change);
          membersSeenByA.add(a.ring().members().size());
        }
      });
      c.close();
      assertEquals(1, leaving.size(), "close() returned after the hand-off ran");
      assertEquals(List.of(3), membersSeenByA, "while the hand-off ran, c was still a member: a had not seen it leave");
      OwnershipChange change = leaving.get(0);
      assertTrue(change.gained().isEmpty());
      assertEquals(ring.without("c"), change.ring());
      double lost = change.lost().stream().mapToDouble(l -> l.range().fraction()).sum();
      assertEquals(ring.share("c"), lost, 1e-9);
      for (RingDiff.Lost l : change.lost()) {
        assertEquals(ring.without("c").ownerOfPosition(l.range().end()), l.destinations().get(0));
      }
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  /**
   * close() interrupted while it waits for a listener's hand-off stops waiting for it, but still
   * shuts the node down as any close() does: it gives the node's pool a second, then interrupts
   * the listener still handing off, and returns with the caller's flag set.
   */
  @Test
  void close_interruptedWhileItWaitsForAListener_stillInterruptsItAfterASecond_andKeepsTheFlag() throws Exception {
    try (TestCluster cluster = new TestCluster("close-interrupted-wait")) {
      cluster.start("keeper");
      Ringmaster x = cluster.start(cluster.builder("x").leaveTimeout(Duration.ofMinutes(1)));
      CountDownLatch handingOff = new CountDownLatch(1);
      CountDownLatch never = new CountDownLatch(1);
      CompletableFuture<Boolean> listenerInterrupted = new CompletableFuture<>();
      x.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          handingOff.countDown();
          try {
            boolean released = never.await(WAIT.toSeconds(), TimeUnit.SECONDS); // a hand-off that does not end
            listenerInterrupted.complete(released); // false: never interrupted
          } catch (InterruptedException e) {
            listenerInterrupted.complete(true);
          }
        }
      });
      CompletableFuture<Boolean> flagAfterClose = new CompletableFuture<>();
      Thread closer = TestCluster.closeOnAThreadOfItsOwn(x, flagAfterClose);
      assertTrue(handingOff.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the LEAVING change is handed off");
      closer.interrupt(); // close() waits up to its minute for that hand-off

      assertTrue(listenerInterrupted.get(WAIT.toSeconds() + 5, TimeUnit.SECONDS),
          "the listener still handing off was interrupted, a second after the leave");
      assertTrue(flagAfterClose.get(WAIT.toSeconds(), TimeUnit.SECONDS), "close() kept the interrupt");
      assertTrue(x.channel().isClosed());
    }
  }

  /**
   * A close() in a {@code finally} after a caught InterruptedException: the flag is set when it is
   * called. Before, every wait in close() gave up at once and the listeners got no LEAVING change.
   */
  @Test
  void close_calledWithTheInterruptFlagSet_stillHandsOff_andKeepsTheFlag() throws Exception {
    try (TestCluster cluster = new TestCluster("interrupted-close")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      List<OwnershipChange> leaving = new CopyOnWriteArrayList<>();
      List<Integer> membersSeenByA = new CopyOnWriteArrayList<>();
      List<Boolean> handOffInterrupted = new CopyOnWriteArrayList<>();
      CountDownLatch handingOff = new CountDownLatch(1);
      CountDownLatch handedOff = new CountDownLatch(1);
      b.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          membersSeenByA.add(a.ring().members().size());
          handingOff.countDown();
          awaitQuietly(handedOff); // a hand-off that lasts until close() is seen waiting for it
          handOffInterrupted.add(Thread.currentThread().isInterrupted());
          leaving.add(change);
        }
      });
      Thread closing = Thread.currentThread();
      Thread watcher = new Thread(() -> {
        awaitQuietly(handingOff);
        await().atMost(WAIT).until(() -> waitsForListeners(closing) || handedOff.getCount() == 0);
        handedOff.countDown();
      }, "hand-off-watcher");
      watcher.start();
      boolean kept;
      Thread.currentThread().interrupt();
      try {
        b.close();
      } finally {
        kept = Thread.interrupted(); // cleared either way: later tests run on this thread
        handedOff.countDown();
      }
      watcher.join(TimeUnit.SECONDS.toMillis(30));
      assertTrue(kept, "the caller keeps its interrupt");
      assertEquals(1, leaving.size(), "close() returned after the hand-off ran");
      assertEquals(List.of(false), handOffInterrupted, "close() waited for the hand-off instead of interrupting it");
      assertEquals(List.of(2), membersSeenByA, "while the hand-off ran, b was still a member");
      assertEquals(List.of(a.localMember()), leaving.get(0).ring().members(), "b's ranges go to a");
      TestCluster.awaitAgreement(List.of(a), 1, WAIT);
    }
  }

  /**
   * The closing thread interrupted while the LEAVING change waits to be queued (b's view thread
   * held by a same-thread membership listener): the change is still queued and delivered, and
   * close() returns with the flag set. Before, the interrupt let the shutdown close the node first,
   * and no LEAVING change ever came. After the interrupt close() waits at most 5 s more for the view
   * thread, however long its leaveTimeout: with the view thread still held (released here only
   * once close() returned), close() queues the change itself, and the shutdown frees that thread.
   */
  @ParameterizedTest(name = "view thread released once the interrupt is handled: {0}")
  @ValueSource(booleans = {true, false})
  void close_interruptedWhileTheLeavingChangeWaitsToQueue_stillDeliversIt(boolean releasedOnceHandled)
      throws Exception {
    try (TestCluster cluster = new TestCluster("interrupted-queue");
         NodeLog held = new NodeLog(r -> r.getMessage().contains("the view thread was still busy after"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start(cluster.builder("b").leaveTimeout(Duration.ofMinutes(5)));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean holding = new AtomicBoolean();
      b.addMembershipListener(change -> { // runs on b's view thread: holds it once c joined
        if (change.joined().stream().anyMatch(m -> m.id().equals("c"))) {
          holding.set(true);
          try {
            release.await(2, TimeUnit.MINUTES); // longer than the test waits for close() to return
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }, Runnable::run);
      List<OwnershipChange> leaving = new CopyOnWriteArrayList<>();
      b.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          leaving.add(change);
        }
      });
      cluster.start("c");
      AtomicBoolean flagAfter = new AtomicBoolean();
      Thread closer = new Thread(() -> {
        b.close();
        flagAfter.set(Thread.currentThread().isInterrupted());
      }, "closer");
      try {
        await().atMost(WAIT).until(holding::get);
        closer.start();
        await("close() waits for its change to queue").atMost(WAIT).until(() -> waitingIn(closer, "leave"));
        closer.interrupt();
        // Handled: close() waits again, or (the old code) it shut down.
        await("the interrupt handled").atMost(WAIT).until(() -> closer.getState() == Thread.State.TERMINATED
            || waitingIn(closer, "leave") && !closer.isInterrupted());
        if (releasedOnceHandled) {
          release.countDown();
        }
        closer.join(Duration.ofSeconds(60).toMillis()); // 5 s for the view thread, then the shutdown
        assertFalse(closer.isAlive(), releasedOnceHandled ? "close() returned" : "close() returned, the view thread held");
      } finally {
        release.countDown(); // a failed step frees the view thread too, and the closer after it
      }
      assertTrue(flagAfter.get(), "with the closing thread's interrupt flag set");
      if (!releasedOnceHandled) {
        // The time it waited: 5 s after the interrupt at least, but not b's leaveTimeout (5 min).
        long waited = Long.parseLong(String.valueOf(held.records().get(0).getParameters()[1]));
        assertTrue(waited >= 5_000 && waited < 60_000, held.records().get(0).getMessage() + ": " + waited);
      }
      // Queued before close() went on; run on b's pool, which the interrupted close() did not wait for.
      await("the LEAVING change came").atMost(WAIT).until(() -> !leaving.isEmpty());
      assertEquals(1, leaving.size());
      assertEquals(List.of("a", "c"), leaving.get(0).ring().members().stream().map(Member::id).sorted().toList());
    }
  }

  /** {@code node.start()} on a thread of its own: the node, or what start() threw. */
  private static CompletableFuture<Ringmaster> startElsewhere(Ringmaster node) {
    CompletableFuture<Ringmaster> started = new CompletableFuture<>();
    new Thread(() -> {
      try {
        started.complete(node.start());
      } catch (Throwable t) {
        started.completeExceptionally(t);
      }
    }, "starter").start();
    return started;
  }

  /** {@code node.close()} on a thread of its own, once it waits for a start() under way (which holds the node's lock). */
  private static Thread closeElsewhere(Ringmaster node) {
    return closeElsewhere(node, false);
  }

  /** As {@link #closeElsewhere(Ringmaster)}, or with {@code closeAbruptly()} (a crash) if {@code abruptly}. */
  private static Thread closeElsewhere(Ringmaster node, boolean abruptly) {
    Runnable stop = abruptly ? node::closeAbruptly : node::close;
    Thread closer = new Thread(stop, "closer");
    closer.start();
    String method = abruptly ? "closeAbruptly" : "close";
    await(method + "() waits for start()").atMost(WAIT).until(() -> TestCluster.blockedIn(closer, method));
    return closer;
  }

  /**
   * close() from another thread while start() is held in its connect (its first view held): the
   * start gives up when the connect returns, instead of joining only to leave again; no listener
   * hears of the node, and the cluster ends without it. The same for a crash (closeAbruptly, as
   * the test kit's LocalCluster.crash and close do).
   */
  @ParameterizedTest(name = "abruptly: {0}")
  @ValueSource(booleans = {false, true})
  void close_whileStartIsConnecting_startGivesUp_andNoListenerHearsOfIt(boolean abruptly) throws Exception {
    try (TestCluster cluster = new TestCluster("close-while-starting")) {
      Ringmaster a = cluster.start("a");
      List<Object> heard = new CopyOnWriteArrayList<>();
      Ringmaster b = cluster.builder("b").jgroupsConfig("holds-views.xml").build();
      b.addOwnershipListener(heard::add);
      b.addMembershipListener(heard::add);
      HoldsViews.hold();
      try {
        CompletableFuture<Ringmaster> started = startElsewhere(b);
        await("b's first view held").atMost(WAIT).until(HoldsViews::holding);
        Thread closer = closeElsewhere(b, abruptly); // it has told start() to give up
        HoldsViews.release();
        ExecutionException e = assertThrows(ExecutionException.class, () -> started.get(WAIT.toMillis(),
            TimeUnit.MILLISECONDS));
        assertTrue(e.getCause() instanceof RingmasterException && e.getCause().getMessage()
            .contains("node b was closed while it started"), String.valueOf(e.getCause()));
        closer.join(WAIT.toMillis());
        assertFalse(closer.isAlive(), "close() returned");
      } finally {
        HoldsViews.release();
        b.close();
      }
      assertFalse(b.isInRing());
      assertEquals(List.of(), heard, "no listener heard of a node whose start failed");
      TestCluster.awaitAgreement(List.of(a), 1, WAIT);
    }
  }

  /**
   * A crash (closeAbruptly, as the test kit's LocalCluster.crash) while close() waits for a
   * listener's LEAVING hand-off: the hand-off is cut short, close() returns, and leftIdle() does
   * not claim a leave that ended with every listener done (they were idle only because the crash
   * stopped them).
   */
  @Test
  void closeAbruptly_whileCloseWaitsForAHandOff_cutsItShort_andLeftIdleSaysNo() throws Exception {
    try (TestCluster cluster = new TestCluster("crash-while-leaving")) {
      cluster.start("keeper");
      CountDownLatch inHandOff = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      Ringmaster b = cluster.start(cluster.builder("b").leaveTimeout(WAIT), n -> n.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          inHandOff.countDown();
          try {
            release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS); // bounded: a failed test lets it go too
          } catch (InterruptedException crashed) {
            Thread.currentThread().interrupt();
          }
        }
      }));
      Thread closer = new Thread(b::close, "closer");
      try {
        closer.start();
        assertTrue(inHandOff.await(WAIT.toMillis(), TimeUnit.MILLISECONDS), "the LEAVING hand-off runs");
        b.closeAbruptly();
        closer.join(WAIT.toMillis());
        assertFalse(closer.isAlive(), "close() returned");
        assertEquals(1, release.getCount(), "cut short, not released");
        assertFalse(b.leftIdle(), "its hand-off was cut short");
        assertTrue(b.channel().isClosed());
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * close() from another thread while start() builds the stack (before it connects): the start
   * gives up without joining, so the cluster never sees the node come and go (each member would
   * have handed it ranges, and taken them back).
   */
  @Test
  void close_whileStartBuildsTheStack_startGivesUpWithoutJoining() throws Exception {
    try (TestCluster cluster = new TestCluster("close-while-building")) {
      Ringmaster a = cluster.start("a");
      List<MembershipChange> aHeard = new CopyOnWriteArrayList<>();
      a.addMembershipListener(aHeard::add);
      Ringmaster b = cluster.builder("b").jgroupsConfig("holds-views.xml").build();
      HoldsViews.holdInit();
      try {
        CompletableFuture<Ringmaster> started = startElsewhere(b);
        await("b's stack held as it is built").atMost(WAIT).until(HoldsViews::inInit);
        Thread closer = closeElsewhere(b);
        HoldsViews.releaseInit();
        ExecutionException e = assertThrows(ExecutionException.class, () -> started.get(WAIT.toMillis(),
            TimeUnit.MILLISECONDS));
        assertTrue(e.getCause() instanceof RingmasterException r && r.reason() == RingmasterException.Reason.CLOSED,
            String.valueOf(e.getCause()));
        closer.join(WAIT.toMillis());
        assertFalse(closer.isAlive(), "close() returned");
        assertTrue(b.channel().isClosed(), "the stack built is closed");
      } finally {
        HoldsViews.releaseInit();
        b.close();
      }
      assertTrue(a.awaitListeners(WAIT));
      assertTrue(aHeard.stream().noneMatch(c -> c.joined().stream().anyMatch(m -> m.id().equals("b"))),
          () -> "b never joined: " + aHeard);
      assertEquals(1, a.channel().getView().size());
    }
  }

  /**
   * A listener whose registration is closed while close() waits for it is no longer waited for:
   * close() goes on at once, not at leaveTimeout.
   */
  @Test
  void close_waitingForAListener_goesOnOnceItsRegistrationIsClosed() throws Exception {
    try (TestCluster cluster = new TestCluster("unregister-while-closing")) {
      cluster.start("a");
      Ringmaster b = cluster.start(cluster.builder("b").leaveTimeout(Duration.ofMinutes(5)));
      CountDownLatch release = new CountDownLatch(1);
      AtomicBoolean stuck = new AtomicBoolean();
      Registration stuckListener = b.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          stuck.set(true);
          try {
            release.await(3 * WAIT.toMillis(), TimeUnit.MILLISECONDS); // a hand-off that hangs
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      });
      Thread closer = new Thread(b::close, "closer");
      try {
        closer.start();
        await("close() waits for the stuck listener").atMost(WAIT).until(() -> stuck.get()
            && waitingIn(closer, "leave"));
        stuckListener.close(); // a watchdog gives up on it
        await("close() went on").atMost(WAIT).until(() -> closer.getState() == Thread.State.TERMINATED);
        assertTrue(b.leftIdle(), "a listener let go is none of the node's: the others were all done");
      } finally {
        release.countDown();
        closer.join(WAIT.toMillis());
      }
    }
  }

  /**
   * An application that shuts its listener's executor down before it closes the node (resources
   * closed in the wrong order): the executor refuses the LEAVING change, so that listener never
   * hands its data off, and leftIdle() must not say that every listener did.
   */
  @Test
  void close_whenAListenersExecutorRefusesTheLeavingChange_leftIdleSaysNo() throws Exception {
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("leaving-refused")) {
      cluster.start("a");
      List<OwnershipChange.Reason> heard = new CopyOnWriteArrayList<>();
      List<OwnershipChange.Reason> heardOnPool = new CopyOnWriteArrayList<>();
      Registration[] refusing = new Registration[1];
      Ringmaster b = cluster.start(cluster.builder("b"), n -> {
        refusing[0] = n.addOwnershipListener(change -> heard.add(change.reason()), executor);
        n.addOwnershipListener(change -> heardOnPool.add(change.reason()));
      });
      assertTrue(b.awaitListeners(WAIT));
      executor.shutdown();
      b.close();
      assertEquals(List.of(OwnershipChange.Reason.VIEW), heard, "the refused listener never heard the leave");
      assertFalse(refusing[0].isActive(), "removed for its executor's refusal");
      assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), heardOnPool);
      assertFalse(b.leftIdle(), "a listener never handed off what the node lost");
    } finally {
      executor.shutdownNow();
    }
  }

  /**
   * A listener added while close() runs, on an executor the application has already shut down,
   * whose add hands its first change over only once the LEAVING change was queued for it too: the
   * add throws, so the listener was never one of the node's, and the LEAVING change its executor
   * refused with that first change is no hand-off the node missed: leftIdle() still says yes.
   */
  @Test
  void close_whileAListenerIsAddedOnAShutDownExecutor_leftIdleCountsOnlyTheListenersAdded() throws Exception {
    ExecutorService shutDown = Executors.newSingleThreadExecutor();
    shutDown.shutdown();
    ExecutorService adder = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("added-while-leaving")) {
      cluster.start("a");
      CountDownLatch leavingQueued = new CountDownLatch(1);
      Ringmaster b = cluster.start(cluster.builder("b").leaveTimeout(Duration.ofMinutes(1)),
          n -> n.addOwnershipListener(change -> {
            if (change.reason() == OwnershipChange.Reason.LEAVING) {
              leavingQueued.countDown(); // queued for every listener at once, the one being added too
            }
          }));
      CountDownLatch handingOver = new CountDownLatch(1);
      Executor slowToRefuse = task -> {
        handingOver.countDown();
        try {
          leavingQueued.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        shutDown.execute(task); // refused: shut down
      };
      CompletableFuture<Registration> added = CompletableFuture.supplyAsync(
          () -> b.addOwnershipListener(change -> { }, slowToRefuse), adder);
      assertTrue(handingOver.await(WAIT.toMillis(), TimeUnit.MILLISECONDS), "the first change is being handed over");
      b.close();
      ExecutionException e = assertThrows(ExecutionException.class, () -> added.get(WAIT.toMillis(),
          TimeUnit.MILLISECONDS));
      // Refused by its executor, or, if close() stopped the node's pools first, as for a closed node:
      // either way, not added.
      assertTrue(e.getCause() instanceof RejectedExecutionException || e.getCause() instanceof IllegalStateException,
          String.valueOf(e.getCause()));
      assertEquals(0, leavingQueued.getCount(), "the LEAVING change was queued while the add went on");
      assertTrue(b.leftIdle(), "the listener that was never added is none of the node's: the others were all done");
    } finally {
      adder.shutdownNow();
    }
  }

  /** Whether {@code t} is waiting, inside a method named {@code method} of {@link Ringmaster}. */
  private static boolean waitingIn(Thread t, String method) {
    Thread.State state = t.getState();
    return (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING)
        && Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName().equals(Ringmaster.class.getName())
            && f.getMethodName().equals(method));
  }

  @Test
  void listener_throws_isLoggedAndLaterCallbacksStillCome() {
    try (NodeLog log = new NodeLog(r -> r.getThrown() != null
             && "listener bug, on purpose".equals(r.getThrown().getMessage()));
         TestCluster cluster = new TestCluster("throwing")) {
      AtomicInteger calls = new AtomicInteger();
      AtomicInteger membershipCalls = new AtomicInteger();
      OwnershipRecorder recorder = new OwnershipRecorder(7);
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        n.addOwnershipListener(change -> {
          calls.incrementAndGet();
          throw new IllegalStateException("listener bug, on purpose");
        });
        n.addOwnershipListener(recorder);
        n.addMembershipListener(change -> {
          membershipCalls.incrementAndGet();
          throw new IllegalStateException("membership listener bug, on purpose");
        });
      });
      await().atMost(WAIT).until(() -> calls.get() == 1);
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      await().atMost(WAIT).until(() -> calls.get() == 2);
      await().atMost(WAIT).until(() -> recorder.foldMatches(a.ring(), "a", 1));
      await().atMost(WAIT).until(() -> log.records().size() == 2);
      for (LogRecord r : log.records()) {
        assertEquals(Level.SEVERE, r.getLevel());
        assertTrue(r.getMessage().startsWith("ownership listener ") && r.getMessage().contains(" of a threw;"),
            r.getMessage());
      }
      // Counted, every listener's kind alike, for an alert: each throw once, on the node whose listener threw.
      await().atMost(WAIT).until(() -> membershipCalls.get() >= 2
          && a.stats().listenerFailures() == calls.get() + membershipCalls.get());
      assertEquals(0, b.stats().listenerFailures(), "b's listeners threw nothing");
    }
  }

  @Test
  void listener_blocksForSeconds_ringInstallationIsNotDelayed() throws Exception {
    try (TestCluster cluster = new TestCluster("blocking")) {
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger entered = new AtomicInteger();
      AtomicInteger returned = new AtomicInteger();
      OwnershipRecorder other = new OwnershipRecorder(3);
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        n.addOwnershipListener(change -> {
          entered.incrementAndGet();
          try {
            // Far past the three joins' waits below, however slow the machine: released by the
            // test, or interrupted when the cluster closes.
            release.await(5, TimeUnit.MINUTES);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          returned.incrementAndGet();
        });
        n.addOwnershipListener(other);
      });
      List<Ringmaster> nodes = new ArrayList<>(List.of(a));
      try {
        for (String id : List.of("b", "c", "d")) {
          nodes.add(cluster.start(id));
          TestCluster.awaitAgreement(nodes, nodes.size(), WAIT);
        }
        // a's first listener is still stuck in its first callback, yet a installed every ring and
        // its other listener is up to date.
        assertEquals(List.of(1, 0), List.of(entered.get(), returned.get()), "in its first callback still");
        assertTrue(a.stats().pendingCallbacks() >= 1);
        await().atMost(WAIT).until(() -> other.foldMatches(a.ring(), "a", 1));
      } finally {
        release.countDown(); // a failed step frees the listener too, rather than wait for the close
      }
      await().atMost(WAIT).until(() -> a.stats().pendingCallbacks() == 0);
      assertEquals(entered.get(), returned.get());
      assertTrue(entered.get() >= 2, "then it got the changes queued behind it");
    }
  }

  @Test
  void listener_addedToRunningNode_firstGetsCurrentOwnershipFromNothing() throws InterruptedException {
    try (TestCluster cluster = new TestCluster("late-listener")) {
      Ringmaster a = cluster.start(cluster.builder("a").replicas(2));
      Ringmaster b = cluster.start(cluster.builder("b").replicas(2));
      Ringmaster c = cluster.start(cluster.builder("c").replicas(2));
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
      OwnershipRecorder late = new OwnershipRecorder(11);
      Registration handle = b.addOwnershipListener(late);
      await().atMost(WAIT).until(() -> late.foldMatches(b.ring(), "b", 2));
      OwnershipChange first = late.changes().get(0);
      assertEquals(OwnershipChange.Reason.INITIAL, first.reason());
      assertTrue(first.gained().stream().allMatch(g -> g.sources().isEmpty()));
      assertTrue(handle.isActive());
      handle.close();
      assertFalse(handle.isActive());
      c.close();
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      assertTrue(b.awaitListeners(WAIT));
      assertEquals(1, late.changes().size(), "a closed registration hears nothing more");
      assertFalse(late.foldMatches(b.ring(), "b", 2));
    }
  }

  /**
   * Closing a registration lets go of its listener: an application that adds and removes
   * listeners as it goes (one per shard it hosts, say) leaves nothing behind in the node, of any
   * of the three kinds.
   */
  @Test
  void registrationsClosed_leaveNoListenerBehind_ofAnyKind() {
    try (TestCluster cluster = new TestCluster("registrations")) {
      Ringmaster a = cluster.start("a");
      int ownership = a.ownershipListenerCount();
      int membership = a.membershipListenerCount();
      int divergence = a.divergenceListenerCount();
      for (int i = 0; i < 20; i++) {
        List<Registration> handles = List.of(a.addOwnershipListener(change -> { }),
            a.addMembershipListener(change -> { }), a.addDivergenceListener(report -> { }));
        assertEquals(ownership + 1, a.ownershipListenerCount());
        assertEquals(membership + 1, a.membershipListenerCount());
        assertEquals(divergence + 1, a.divergenceListenerCount());
        handles.forEach(Registration::close);
      }
      assertEquals(ownership, a.ownershipListenerCount());
      assertEquals(membership, a.membershipListenerCount());
      assertEquals(divergence, a.divergenceListenerCount());
    }
  }

  /**
   * Where callbacks run, as OwnershipListener's javadoc says: those of listeners added without an
   * executor, ownership and membership alike, on the node's listener pool, never on a JGroups or
   * the view thread; and the first change of a listener added to a running node, on a same-thread
   * executor, on the thread that adds it, before addOwnershipListener returns.
   */
  @Test
  void callbacks_runOnTheNodesPool_andALateSameThreadListenersFirstRunsInsideTheAdd() throws InterruptedException {
    try (TestCluster cluster = new TestCluster("callback-threads")) {
      List<String> ownershipOn = new CopyOnWriteArrayList<>();
      List<String> membershipOn = new CopyOnWriteArrayList<>();
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        n.addOwnershipListener(change -> ownershipOn.add(Thread.currentThread().getName()));
        n.addMembershipListener(change -> membershipOn.add(Thread.currentThread().getName()));
      });
      List<String> lateOn = new CopyOnWriteArrayList<>();
      a.addOwnershipListener(change -> lateOn.add(change.reason() + " on " + Thread.currentThread().getName()),
          Runnable::run);
      assertEquals(List.of("INITIAL on " + Thread.currentThread().getName()), lateOn, "run inside the add");

      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      assertTrue(a.awaitListeners(WAIT));
      assertEquals(2, ownershipOn.size(), ownershipOn::toString); // its first ring, then b's join
      assertEquals(2, membershipOn.size(), membershipOn::toString);
      for (String thread : Stream.concat(ownershipOn.stream(), membershipOn.stream()).toList()) {
        assertTrue(thread.startsWith("ringmaster-listener-a-"), thread);
      }
    }
  }

  /**
   * A node's close() does not end its listeners' registrations (Registration's javadoc): they
   * stay active, on the node's pool and on an executor of the application's, once their LEAVING
   * change has run.
   */
  @Test
  void close_leavesTheListenersRegistered() {
    ExecutorService own = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("registered-after-close")) {
      List<OwnershipChange.Reason> reasons = new CopyOnWriteArrayList<>();
      Registration[] handles = new Registration[3];
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        handles[0] = n.addOwnershipListener(change -> reasons.add(change.reason()));
        handles[1] = n.addOwnershipListener(change -> { }, own);
        handles[2] = n.addMembershipListener(change -> { }, own);
      });
      a.close();
      assertTrue(a.leftIdle());
      assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), reasons);
      for (int i = 0; i < handles.length; i++) {
        assertTrue(handles[i].isActive(), "registration " + i);
      }
    } finally {
      own.shutdownNow();
    }
  }

  @Test
  void membershipListener_addedToRunningNode_firstGetsCurrentMembers_andTheFoldFollows() {
    try (TestCluster cluster = new TestCluster("late-membership")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      List<MembershipChange> changes = new CopyOnWriteArrayList<>();
      b.addMembershipListener(changes::add);
      await().atMost(WAIT).until(() -> changes.size() == 1);
      MembershipChange first = changes.get(0);
      assertEquals(-1, first.previousViewId());
      assertEquals(b.viewId(), first.viewId());
      assertEquals(b.members(), first.joined());
      assertEquals(List.of(), first.left());

      Ringmaster c = cluster.start("c");
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
      a.close();
      TestCluster.awaitAgreement(List.of(b, c), 2, WAIT);
      await().atMost(WAIT).until(() -> foldMembers(changes).equals(ids(b.members())));
      assertEquals(first.viewId(), changes.get(1).previousViewId(), "the next change follows the snapshot's view");
    }
  }

  /**
   * JGroups numbers a new cluster's first view 0 ({@code [a|0]}): a membership listener added to a
   * node whose ring came from view 0 (a cluster of one, say) first gets the current members, as a
   * listener added after any later view does, or its fold would start from nothing.
   */
  @Test
  void membershipListener_addedWhileTheRingIsOfViewZero_firstGetsCurrentMembers() throws Exception {
    try (FedNode a = new FedNode(FedNode.meta("a"))) {
      a.view(0, a.self);
      assertEquals(0, a.node.state().viewId(), "the ring of view 0 is published");
      List<MembershipChange> late = new CopyOnWriteArrayList<>();
      a.node.addMembershipListener(new SerialDelivery<>("late", late::add, Runnable::run, a, () -> { }));
      assertEquals(1, late.size(), "the current members, at once: " + late);
      assertEquals(-1, late.get(0).previousViewId());
      assertEquals(0, late.get(0).viewId());
      assertEquals(List.of("a"), ids(late.get(0).joined()), late.get(0).toString());
    }
  }

  /**
   * announceLeaving() (close() on the view thread) returns the time the LEAVING change was queued,
   * from which close() counts leaveTimeout: taken during the call, before the launches that run the
   * same-thread listeners' callbacks.
   */
  @Test
  void announceLeaving_returnsWhenTheChangeWasQueued_beforeTheCallbacksItRuns() throws Exception {
    try (FedNode a = new FedNode(FedNode.meta("a"))) {
      a.view(1, a.self);
      a.view(2, a.self, FedNode.meta("b").newAddress());
      AtomicReference<Long> heardAt = new AtomicReference<>();
      a.node.addOwnershipListener(new SerialDelivery<>("timer", change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          heardAt.set(System.nanoTime());
        }
      }, Runnable::run, a, () -> { }));
      long before = System.nanoTime();
      long queuedAt = a.node.announceLeaving();
      assertEquals(OwnershipChange.Reason.LEAVING, a.lastOwnership().reason());
      assertTrue(heardAt.get() != null, "the same-thread listener got the change in the call");
      assertTrue(queuedAt - before >= 0, "queued during the call: " + queuedAt + " < " + before);
      assertTrue(heardAt.get() - queuedAt >= 0,
          "queued before the callback ran: " + queuedAt + " > " + heardAt.get());
    }
  }

  /**
   * The launches give their thread back an interrupt that a same-thread callback left on it (one
   * meant for that listener), once the callbacks after it have run without it: here the launches
   * of announceLeaving(), as close() calls it on the view thread.
   */
  @Test
  void launches_giveTheThreadBackAnInterruptACallbackLeft_afterTheNextCallbackRanWithoutIt() throws Exception {
    try (FedNode a = new FedNode(FedNode.meta("a"))) {
      a.view(1, a.self);
      a.view(2, a.self, FedNode.meta("b").newAddress());
      a.node.addOwnershipListener(new SerialDelivery<>("interrupter", change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          Thread.currentThread().interrupt();
        }
      }, Runnable::run, a, () -> { }));
      List<Boolean> nextInterrupted = new CopyOnWriteArrayList<>();
      a.node.addOwnershipListener(new SerialDelivery<>("next", change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          nextInterrupted.add(Thread.currentThread().isInterrupted());
        }
      }, Runnable::run, a, () -> { }));
      boolean kept;
      try {
        a.node.announceLeaving();
      } finally {
        kept = Thread.interrupted(); // and cleared: later tests run on this thread
      }
      assertEquals(List.of(false), nextInterrupted,
          "the next listener's LEAVING callback started without the interrupt");
      assertTrue(kept, "the thread has the interrupt back once the launches are done");
    }
  }

  /**
   * The node's pool's listeners are launched first: a same-thread listener's callback, run on the
   * view thread in its launch, cannot hold them up, even one added before them that waits for them
   * (a hand-off to a listener on the pool, say).
   */
  @Test
  void launches_ofAView_startThePoolsListenersFirst_evenBeforeASameThreadOneAddedEarlier() throws Exception {
    ExecutorService viewThread = Executors.newSingleThreadExecutor();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    NodeMetadata meta = FedNode.meta("a");
    ClusterNode node = new ClusterNode(meta, viewThread, Duration.ofSeconds(10), pool);
    try {
      Address self = meta.newAddress();
      node.setLocalAddress(self);
      CountDownLatch poolStarted = new CountDownLatch(1);
      List<Boolean> poolStartedFirst = new CopyOnWriteArrayList<>();
      node.addOwnershipListener(new SerialDelivery<>("same-thread", change -> {
        try {
          poolStartedFirst.add(poolStarted.await(WAIT.toSeconds(), TimeUnit.SECONDS));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }, Runnable::run, node, () -> { }));
      node.addOwnershipListener(new SerialDelivery<>("pooled", change -> poolStarted.countDown(), pool, false, node,
          () -> { }, new LongAdder()));
      node.onView(View.create(self, 1, self));
      viewThread.submit(() -> { }).get(2 * WAIT.toSeconds(), TimeUnit.SECONDS);
      assertEquals(List.of(true), poolStartedFirst,
          "the pool's listener had its callback before the same-thread one");
    } finally {
      node.close();
      viewThread.shutdownNow();
      pool.shutdownNow();
    }
  }

  /**
   * close() queues the LEAVING change itself when a same-thread listener holds the view thread,
   * and hands the launches the view thread has yet to make to one task of the node's pool. A pool
   * that refuses that task (shut down meanwhile) does not strand them: they are made on the
   * closing thread, so the listeners after the one holding the view thread hear the view and then
   * the node leave.
   */
  @Test
  void leavingQueuedFromElsewhere_whenThePoolRefusesTheHandOver_launchesTheHeldUpListenersHere() throws Exception {
    ExecutorService viewThread = Executors.newSingleThreadExecutor();
    Executor refusing = task -> {
      throw new RejectedExecutionException("the node's pool is shut down");
    };
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    NodeMetadata meta = FedNode.meta("a");
    ClusterNode node = new ClusterNode(meta, viewThread, Duration.ofSeconds(10), refusing);
    try {
      Address self = meta.newAddress();
      node.setLocalAddress(self);
      List<OwnershipChange.Reason> holderHeard = new CopyOnWriteArrayList<>();
      node.addOwnershipListener(new SerialDelivery<>("holder", change -> {
        holderHeard.add(change.reason());
        if (change.viewId() == 2 && change.reason() == OwnershipChange.Reason.VIEW) {
          holding.countDown();
          awaitQuietly(release); // a long hand-off, on the view thread
        }
      }, Runnable::run, node, () -> { }));
      Thread closing = Thread.currentThread();
      List<String> heldUpHeard = new CopyOnWriteArrayList<>();
      node.addOwnershipListener(new SerialDelivery<>("held up", change -> heldUpHeard.add(change.reason() + " "
          + change.viewId() + (Thread.currentThread() == closing ? " on the closing thread" : "")),
          Runnable::run, node, () -> { }));
      node.onView(View.create(self, 1, self));
      node.onView(View.create(self, 2, self, FedNode.meta("b").newAddress()));
      assertTrue(holding.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the holder's callback of view 2 started");
      assertTrue(node.announceLeavingFromElsewhere(), "queued by the closing thread");
      assertEquals(List.of("VIEW 1", "VIEW 2 on the closing thread", "LEAVING 2 on the closing thread"), heldUpHeard,
          "the held-up listener heard view 2 and the leave on the closing thread, the view thread still held");
      release.countDown();
      await().atMost(WAIT).until(() -> holderHeard.contains(OwnershipChange.Reason.LEAVING));
      assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING),
          holderHeard, "the holder gets the change once its callback returns");
    } finally {
      release.countDown();
      node.close();
      viewThread.shutdownNow();
    }
  }

  /**
   * When the LEAVING change that close() queues itself (the view thread held) is the
   * {@link SerialDelivery#LAG_WARNING}th callback queued behind a busy listener's running one, that
   * call logs the listener's "falls behind" WARNING, as a view's launches would: it launches the
   * busy listener for the warning alone.
   */
  @Test
  void leavingQueuedFromElsewhere_toAListenerItPutsBehind_logsItsLagWarning() throws Exception {
    ExecutorService slow = Executors.newSingleThreadExecutor();
    CountDownLatch release = new CountDownLatch(1);
    try (FedNode a = new FedNode(FedNode.meta("a"));
         NodeLog log = new NodeLog(r -> r.getMessage().contains("falls behind"))) {
      a.view(1, a.self);
      List<OwnershipChange> heard = new CopyOnWriteArrayList<>();
      SerialDelivery<OwnershipChange> lagging = new SerialDelivery<>("lagging", change -> {
        heard.add(change);
        awaitQuietly(release);
      }, slow, a, () -> { });
      a.node.addOwnershipListener(lagging);
      await("its first callback, running").atMost(WAIT).until(() -> heard.size() == 1);
      Address b = FedNode.meta("b").newAddress();
      Address c = FedNode.meta("c").newAddress();
      for (int i = 0; i < SerialDelivery.LAG_WARNING - 1; i++) { // each an ownership change: a owns all, then 2/3
        if (i % 2 == 0) {
          a.view(2 + i, a.self, b, c);
        } else {
          a.view(2 + i, a.self);
        }
      }
      assertEquals(SerialDelivery.LAG_WARNING, lagging.pending(), "one running, one short of the warning queued");
      assertEquals(List.of(), log.messages(), "not behind yet");
      assertTrue(a.node.announceLeavingFromElsewhere(), "queued by the closing thread");
      assertEquals(1, log.records().size(), log.messages().toString());
      assertTrue(log.messages().get(0).startsWith("lagging falls behind: " + SerialDelivery.LAG_WARNING),
          log.messages().toString());
      release.countDown();
      await().atMost(WAIT).until(() -> heard.size() == SerialDelivery.LAG_WARNING + 1);
      assertEquals(OwnershipChange.Reason.LEAVING, heard.get(SerialDelivery.LAG_WARNING).reason());
    } finally {
      release.countDown();
      slow.shutdownNow();
    }
  }

  /**
   * close()'s WARNING names each listener still busy, with how many callbacks it has left (in words
   * that agree with the number), and no idle one.
   */
  @Test
  void busyListeners_nameEachBusyListenerWithItsCallbacksLeft_andNoIdleOne() throws Exception {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    try (FedNode a = new FedNode(FedNode.meta("a"))) {
      a.node.addOwnershipListener(new SerialDelivery<>("two behind", change -> { }, held::add, a, () -> { }));
      a.view(1, a.self);
      a.view(2, a.self, FedNode.meta("b").newAddress());
      a.node.addOwnershipListener(new SerialDelivery<>("one behind", change -> { }, held::add, a, () -> { }));
      assertEquals(List.of("two behind (2 callbacks left)", "one behind (1 callback left)"),
          a.node.busyListeners(null, List.of()), "FedNode's own listeners, on the view thread, are idle");
      held.forEach(Runnable::run);
      assertEquals(List.of(), a.node.busyListeners(null, List.of()));
    }
  }

  /**
   * A node with many more membership listeners than ownership listeners (ten and one) installs its
   * views and tells every listener: the room made for a view's launches, sized from the listeners
   * of both kinds before the ring is published, never comes out negative and fails the view.
   */
  @Test
  void manyMembershipListeners_andOneOwnershipListener_allHearEachView() throws Exception {
    try (FedNode n = new FedNode(FedNode.meta("a"))) { // one listener of each kind
      List<List<MembershipChange>> heard = new ArrayList<>();
      for (int i = 0; i < 9; i++) {
        List<MembershipChange> one = new CopyOnWriteArrayList<>();
        heard.add(one);
        n.node.addMembershipListener(new SerialDelivery<>("members-" + i, one::add, Runnable::run, this, () -> { }));
      }
      Address b = FedNode.meta("b").newAddress();
      n.view(1, n.self);
      n.view(2, n.self, b);

      assertEquals(2, n.node.state().viewId(), "view 2 installed");
      assertEquals(OptionalLong.empty(), n.node.failedViewId());
      assertEquals(List.of(1L, 2L), n.memberships.stream().map(MembershipChange::viewId).toList());
      assertEquals(List.of(1L, 2L), n.ownership.stream().map(OwnershipChange::viewId).toList());
      for (int i = 0; i < 9; i++) {
        assertEquals(List.of(1L, 2L), heard.get(i).stream().map(MembershipChange::viewId).toList(), "members-" + i);
      }
    }
  }

  private static List<String> foldMembers(List<MembershipChange> changes) {
    TreeSet<String> members = new TreeSet<>();
    for (MembershipChange c : changes) {
      c.left().forEach(m -> members.remove(m.id())); // first: a member replaced in one view is in both
      c.joined().forEach(m -> members.add(m.id()));
    }
    return List.copyOf(members);
  }

  private static List<String> ids(List<Member> members) {
    return members.stream().map(Member::id).sorted().toList();
  }

  private static <T> T last(List<T> list) {
    return list.get(list.size() - 1);
  }
}
