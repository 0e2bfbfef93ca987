package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A joiner's pulls ({@link Rebalancer} on its first change) ask all their sources at once: five
 * {@link InJvmPeer}s with one copy a key, e the joiner, gaining from each of the other four (or
 * six, gaining from five: one more than the pull threads), whose stores hold the keys they owned
 * before e. Each source holds the first page e asks it for until all have been asked, or
 * {@link #HOLD} has passed: pulls made one after another would each wait out the hold alone. e's
 * rebalancer is called directly with the change its node would deliver.
 */
class ParallelPullTest {
  private static final List<String> SOURCES = List.of("a", "b", "c", "d");
  /** One source more than {@link Rebalancer#PARALLEL_PULLS}: the last one's pull waits its turn. */
  private static final List<String> FIVE_SOURCES = List.of("a", "b", "c", "d", "f");
  private static final int KEYS = 400;
  /** Less than {@link Transfers#PULL_TIMEOUT}, so that a page held this long is still answered in time. */
  private static final Duration HOLD = Duration.ofSeconds(3);
  private final List<InJvmPeer> peers = new ArrayList<>();
  private final EventLog eventsOfE = new EventLog();
  private InJvmPeer e;
  private OwnershipChange join;
  /** Each source's first pull request counts down once, then waits for the others'. */
  private CountDownLatch asked;
  /** The sources whose first page was asked for while some other source was not asked yet, after the hold. */
  private final List<String> askedAlone = new CopyOnWriteArrayList<>();
  /** Once every source was asked, the first pages are still held until this opens, or for {@link #HOLD}. */
  private volatile CountDownLatch released = new CountDownLatch(0);
  /** How many held first pages were let go (released, or held for {@link #HOLD}) and answered. */
  private final AtomicInteger holdsEnded = new AtomicInteger();

  /** Starts the sources, then e, and fills the sources' stores: see the class comment. */
  private void start(List<String> sources) throws Exception {
    asked = new CountDownLatch(sources.size());
    String cluster = InJvmPeer.clusterName("parallel-pull");
    for (String id : sources) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder.replicas(1)));
    }
    e = InJvmPeer.start(cluster, "e", TestingAids.fromSystemProperties(), builder -> builder.replicas(1));
    peers.add(e);
    InJvmPeer.awaitOneRing(peers);
    HashRing all = e.node().ring();
    HashRing before = all.without("e");
    join = new OwnershipChange(OwnershipChange.Reason.VIEW, e.node().viewId(), e.node().viewId(), before, all,
        RingDiff.compute(before, all, "e", 1));
    for (int i = 0; i < KEYS; i++) {
      Entry entry = Entry.of("key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "a"));
      peer(before.ownerOf(entry.key()).id()).store().merge(entry);
    }
    for (String id : sources) {
      InJvmPeer source = peer(id);
      source.counters().settled.set(true); // serves pulls (it has no rebalancer to say it handled its first change)
      AtomicBoolean first = new AtomicBoolean(true);
      source.rpc().handle(Wire.OP_PULL, in -> {
        if (first.getAndSet(false)) {
          asked.countDown();
          if (!asked.await(HOLD.toMillis(), TimeUnit.MILLISECONDS)) {
            askedAlone.add(id);
          }
          released.await(HOLD.toMillis(), TimeUnit.MILLISECONDS);
          holdsEnded.incrementAndGet();
        }
        return source.transfers().handlePull(in);
      });
    }
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  private InJvmPeer peer(String id) {
    return peers.stream().filter(p -> p.id().equals(id)).findFirst().orElseThrow();
  }

  /** The sources of the change, in the order e pulls from them: that of its gained ranges. */
  private List<String> sourcesInOrder() {
    return join.gained().stream().flatMap(g -> g.sources().stream()).map(Member::id).distinct().toList();
  }

  @Test
  void aJoinersPulls_askEverySourceAtOnce_andCountWhatEachBroughtIn() throws Exception {
    start(SOURCES);
    assertEquals(SOURCES, sourcesInOrder().stream().sorted().toList(), "e gains from each of the four");
    List<Entry> gained = new ArrayList<>();
    for (String id : SOURCES) {
      peer(id).store().all().stream().filter(x -> join.ring().ownerOf(x.key()).id().equals("e")).forEach(gained::add);
    }
    PullRetries retries = retriesOfE();
    Rebalancer rebalancer = rebalancerOfE(retries);

    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> rebalancer.onOwnershipChange(join));

    assertEquals(0, asked.getCount(), "every source was asked");
    assertEquals(List.of(), askedAlone, "sources asked one after another, each holding its page alone for " + HOLD);
    for (Entry x : gained) {
      assertEquals(Optional.of(x), e.store().get(x.key()), "e pulled " + x.key());
    }
    assertEquals(gained.size(), e.store().size(), "e pulled what it gained, and only that");
    assertEquals(gained.size(), e.counters().keysMigratedIn.sum(), "the keys of every source are counted");
    assertEquals(1, e.counters().migrationsCompleted.sum());
    assertEquals(0, e.counters().migrationsFailed.sum());
    assertEquals(0, retries.pending(), "complete pulls leave nothing to retry");
    String in = migrationIn();
    assertEquals(gained.size(), number(in, "keys"), in);
    assertTrue(in.contains("\"peers\":[\"" + String.join("\",\"", sourcesInOrder()) + "\"]"),
        "the sources, in the order of the ranges: " + in);
    assertTrue(in.contains("\"ok\":true"), in);
  }

  /**
   * The node interrupts a callback still busy long after it began to close: the pulls, on threads of
   * their own, end then too (as they did on the callback's thread), each left to the pull retries, and
   * the callback returns with its interrupt kept, well before the sources would have answered.
   */
  @Test
  void aCallbackInterruptedWhileItsPullsWait_endsThemAll_andLeavesThemToTheRetries() throws Exception {
    start(SOURCES);
    PullRetries retries = retriesOfE();
    boolean stillInterrupted = interruptOnceAsked(rebalancerOfE(retries), SOURCES.size());

    assertTrue(stillInterrupted, "the callback returns with its interrupt");
    assertEquals(SOURCES.size(), retries.pending(), "each source's pull is left to the retries");
    assertEquals(1, e.counters().migrationsFailed.sum());
    assertTrue(migrationIn().contains("\"ok\":false"), migrationIn());
  }

  /**
   * With one source more than the pull threads, the last source's pull waits its turn; the callback
   * interrupted meanwhile ends that one too, before it asks its source, and returns at once.
   */
  @Test
  void aCallbackInterruptedWithAPullStillQueued_endsThatOneUnasked() throws Exception {
    start(FIVE_SOURCES);
    assertEquals(FIVE_SOURCES, sourcesInOrder().stream().sorted().toList(), "e gains from each of the five");
    PullRetries retries = retriesOfE();
    interruptOnceAsked(rebalancerOfE(retries), Rebalancer.PARALLEL_PULLS);

    assertEquals(1, asked.getCount(), "the fifth source was never asked");
    assertEquals(FIVE_SOURCES.size(), retries.pending(), "each source's pull is left to the retries");
    assertEquals(1, e.counters().migrationsFailed.sum());
  }

  /**
   * A change made once the peer stopped its pull threads runs its pulls on its own thread, where
   * they end at once, unasked, each left to the pull retries (the peer is stopping).
   */
  @Test
  void aChangeAfterThePullThreadsStopped_asksNoSource_andLeavesEachPullToTheRetries() throws Exception {
    start(SOURCES);
    e.pulls().shutdownNow();
    PullRetries retries = retriesOfE();
    Rebalancer rebalancer = rebalancerOfE(retries);

    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> rebalancer.onOwnershipChange(join));

    assertEquals(SOURCES.size(), asked.getCount(), "no source was asked");
    assertEquals(0, e.store().size());
    assertEquals(SOURCES.size(), retries.pending(), "each source's pull is left to the retries");
    assertTrue(migrationIn().contains("\"ok\":false"), migrationIn());
  }

  /**
   * A pull that throws (a bug) fails the change, once every other pull has ended: those bring in
   * what they pulled, and are counted and logged as any change's pulls are; the sources whose pulls
   * threw are left to the pull retries, as failed pulls are; then the failure of the first source
   * in the order of the sources is thrown (an {@link Error} as it is), the later one suppressed in
   * it. Here the first and the third source's pulls throw as they start, before asking anything.
   */
  @Test
  void aChangeWhosePullsThrow_waitsForTheOthers_thenThrowsTheFirst_withTheLaterOneSuppressed() throws Exception {
    start(SOURCES);
    List<String> order = sourcesInOrder();
    Error first = new Error("the pull from " + order.get(0) + " throws");
    IllegalStateException third = new IllegalStateException("the pull from " + order.get(2) + " throws");
    List<Entry> gained = new ArrayList<>();
    for (String id : List.of(order.get(1), order.get(3))) {
      peer(id).store().all().stream().filter(x -> join.ring().ownerOf(x.key()).id().equals("e")).forEach(gained::add);
    }
    asked.countDown(); // the two pulls that throw ask nothing: the sources asked hold no page for them
    asked.countDown();
    PullRetries retries = retriesOfE();
    Rebalancer rebalancer = new Rebalancer(e.routing(), e.store(), e.transfers(), retries, e.counters(),
        eventsOfE, Duration.ofSeconds(15), new ThrowingPulls(e.pulls(), Map.of(0, first, 2, third)));

    Throwable thrown = assertTimeoutPreemptively(Duration.ofSeconds(30),
        () -> assertThrows(Throwable.class, () -> rebalancer.onOwnershipChange(join)));

    assertSame(first, thrown, "the first source's failure");
    assertEquals(List.of(third), List.of(thrown.getSuppressed()), "the third's, suppressed in it");
    assertEquals(0, asked.getCount(), "the other two sources were asked");
    for (Entry x : gained) {
      assertEquals(Optional.of(x), e.store().get(x.key()), "the pulls that did not throw ended first: " + x.key());
    }
    assertEquals(gained.size(), e.store().size());
    assertEquals(gained.size(), e.counters().keysMigratedIn.sum(), "what the other pulls brought in is counted");
    assertEquals(0, e.counters().migrationsCompleted.sum());
    assertEquals(1, e.counters().migrationsFailed.sum());
    assertEquals(2, retries.pending(), "the two sources whose pulls threw are left to the retries");
    for (RingDiff.Gained g : join.diff().gained()) { // one copy a key: each range has one source
      List<String> threw = g.sources().stream().map(Member::id)
          .filter(id -> id.equals(order.get(0)) || id.equals(order.get(2))).toList();
      assertEquals(threw, retries.sourcesFor(g.range().end()), "the retry of " + g.range() + ", from " + g.sources());
    }
    String in = migrationIn();
    assertTrue(in.contains("\"ok\":false"), in);
    assertEquals(gained.size(), number(in, "keys"), in);
  }

  /**
   * The pull threads' shutdownNow() runs the pulls still queued behind the busy threads, rather
   * than dropping them: a change whose sources outnumber the threads waits for every one of its
   * pulls, and would otherwise wait for good.
   */
  @Test
  void pullThreadsShutDownNow_runTheQueuedPulls_ratherThanDropThem() throws Exception {
    ExecutorService pool = Rebalancer.pullThreads(OwnThreads.daemons("shutdown-now-pulls"));
    CountDownLatch busy = new CountDownLatch(Rebalancer.PARALLEL_PULLS);
    CountDownLatch never = new CountDownLatch(1);
    CountDownLatch ended = new CountDownLatch(Rebalancer.PARALLEL_PULLS + 1);
    try {
      for (int i = 0; i < Rebalancer.PARALLEL_PULLS; i++) {
        pool.execute(() -> {
          busy.countDown();
          try {
            never.await();
          } catch (InterruptedException stopped) {
            Thread.currentThread().interrupt();
          } finally {
            ended.countDown();
          }
        });
      }
      assertTrue(busy.await(10, TimeUnit.SECONDS), "every pull thread is busy");
      pool.execute(ended::countDown); // queued

      assertEquals(List.of(), pool.shutdownNow());

      assertTrue(ended.await(10, TimeUnit.SECONDS), "the busy pulls were interrupted and the queued one ran");
    } finally {
      never.countDown();
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the pull threads ended");
    }
  }

  /**
   * The pull threads are {@link Rebalancer#PARALLEL_PULLS} at most, and none is kept once idle for
   * 30 seconds, those of the core included: a peer pulls only when ownership changes.
   */
  @Test
  void pullThreads_areAtMostFour_andNoneIsKeptOnceIdle() {
    ThreadPoolExecutor pool = (ThreadPoolExecutor) Rebalancer.pullThreads(OwnThreads.daemons("idle-pulls"));
    try {
      assertEquals(Rebalancer.PARALLEL_PULLS, pool.getMaximumPoolSize());
      assertTrue(pool.allowsCoreThreadTimeOut(), "core threads end once idle too");
      assertEquals(30, pool.getKeepAliveTime(TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Runs e's callback on a thread of its own while each source asked holds its first page, waits
   * until {@code sources} were asked, interrupts the callback, and checks that it returned while
   * every one of them still held its page: the pulls ended at the interrupt, not once answered.
   *
   * @return whether the callback returned with its interrupt kept
   */
  private boolean interruptOnceAsked(Rebalancer rebalancer, int sources) throws Exception {
    released = new CountDownLatch(1);
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicBoolean stillInterrupted = new AtomicBoolean();
    Thread callback = new Thread(() -> {
      try {
        rebalancer.onOwnershipChange(join);
        stillInterrupted.set(Thread.currentThread().isInterrupted());
      } catch (RuntimeException | Error x) {
        thrown.set(x);
      }
    }, "callback");
    callback.setDaemon(true);
    callback.start();
    try {
      await(sources + " sources asked").atMost(HOLD)
          .until(() -> asked.getCount() == peers.size() - 1 - sources);
      callback.interrupt();
      callback.join(HOLD.toMillis() * 3);
      assertFalse(callback.isAlive(), "the callback returned");
      assertEquals(0, holdsEnded.get(), "the callback returned while every source asked still held its page");
    } finally {
      released.countDown();
      callback.interrupt();
      callback.join(Transfers.PULL_TIMEOUT.toMillis() * 2); // the test leaves no thread running
    }
    assertEquals(null, thrown.get());
    return stillInterrupted.get();
  }

  /**
   * e's pull threads, where the pulls given by their number (in the order they were handed over)
   * throw what they are given, from the first thing each does: ask whether the pool is shut down.
   */
  private static final class ThrowingPulls extends AbstractExecutorService {
    private final ExecutorService pool;
    private final Map<Integer, Throwable> throwing;
    private final AtomicInteger handedOver = new AtomicInteger();
    /** In a pull that throws: what it throws. */
    private final ThreadLocal<Throwable> toThrow = new ThreadLocal<>();

    ThrowingPulls(ExecutorService pool, Map<Integer, Throwable> throwing) {
      this.pool = pool;
      this.throwing = throwing;
    }

    @Override
    public void execute(Runnable pull) {
      Throwable t = throwing.get(handedOver.getAndIncrement());
      pool.execute(t == null ? pull : () -> {
        toThrow.set(t);
        try {
          pull.run();
        } finally {
          toThrow.remove();
        }
      });
    }

    @Override
    public boolean isShutdown() {
      Throwable t = toThrow.get();
      if (t instanceof Error error) {
        throw error;
      }
      if (t != null) {
        throw (RuntimeException) t;
      }
      return pool.isShutdown();
    }

    @Override
    public void shutdown() {
      pool.shutdown();
    }

    @Override
    public List<Runnable> shutdownNow() {
      return pool.shutdownNow();
    }

    @Override
    public boolean isTerminated() {
      return pool.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return pool.awaitTermination(timeout, unit);
    }
  }

  private PullRetries retriesOfE() {
    Routing routing = e.routing();
    return new PullRetries(e.transfers()::pull, routing::isLive, routing::owns, routing::isLeaving, System::nanoTime,
        eventsOfE);
  }

  private Rebalancer rebalancerOfE(PullRetries retries) {
    return new Rebalancer(e.routing(), e.store(), e.transfers(), retries, e.counters(), eventsOfE,
        Duration.ofSeconds(15), e.pulls());
  }

  /** e's one "migration in" event, as JSON. */
  private String migrationIn() {
    List<String> in = eventsOfE.recent().stream()
        .filter(json -> json.contains("\"type\":\"migration\"") && json.contains("\"direction\":\"in\"")).toList();
    assertEquals(1, in.size(), "" + in);
    return in.get(0);
  }

  private static long number(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(-?[0-9]+)").matcher(json);
    assertTrue(m.find(), name + " in " + json);
    return Long.parseLong(m.group(1));
  }
}
