package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A hand-off's pushes ({@link Transfers#pushToOwners}) go to all their destinations at once: five
 * {@link InJvmPeer}s with one copy a key, a the one handing off, to each of the other four. Each
 * destination holds the first page a sends it until all four were asked, or {@link #HOLD} has
 * passed: pushes made one after another would each wait out the hold alone.
 */
class ParallelPushTest {
  private static final List<String> DESTINATIONS = List.of("b", "c", "d", "e");
  private static final int KEYS = 400;
  /** Less than {@link Transfers#PUSH_TIMEOUT}, so that a page held this long is still answered in time. */
  private static final Duration HOLD = Duration.ofMillis(1500);
  /**
   * How long a first page waits for {@link #released} at most: long enough for a test that holds
   * the pages to check what it needs while they are held, however loaded the machine.
   */
  private static final Duration RELEASE_WITHIN = Duration.ofSeconds(20);
  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  /** Each destination's first push counts down once, then waits for the others'. */
  private final CountDownLatch asked = new CountDownLatch(DESTINATIONS.size());
  /** The destinations whose first page came while some other destination was not asked yet, after the hold. */
  private final List<String> askedAlone = new CopyOnWriteArrayList<>();
  /** Once every destination was asked, the first pages are still held until this opens, or for {@link #RELEASE_WITHIN}. */
  private volatile CountDownLatch released = new CountDownLatch(0);
  /** How many held first pages were let go (released, or held for {@link #RELEASE_WITHIN}) and taken in. */
  private final AtomicInteger holdsEnded = new AtomicInteger();

  /**
   * Starts a, then the destinations, each with the aids given, each holding its first page (see the class
   * comment), and fills a's store with the keys each destination owns in the ring without a.
   *
   * @return a's entries by the destination that owns them
   */
  private Map<List<String>, List<Entry>> start(Supplier<TestingAids> destinationAids) throws Exception {
    String cluster = InJvmPeer.clusterName("parallel-push");
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), builder -> builder.replicas(1)));
    for (String id : DESTINATIONS) {
      InJvmPeer destination = InJvmPeer.start(cluster, id, destinationAids.get(), builder -> builder.replicas(1));
      peers.add(destination);
      AtomicBoolean first = new AtomicBoolean(true);
      destination.rpc().handle(Wire.OP_PUSH, in -> {
        if (first.getAndSet(false)) {
          asked.countDown();
          if (!asked.await(HOLD.toMillis(), TimeUnit.MILLISECONDS)) {
            askedAlone.add(id);
          }
          released.await(RELEASE_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
          holdsEnded.incrementAndGet();
        }
        return destination.transfers().handlePush(in);
      });
    }
    InJvmPeer.awaitOneRing(peers);
    HashRing after = a.node().ring().without("a");
    Map<List<String>, List<Entry>> byOwner = new LinkedHashMap<>();
    for (int i = 0; i < KEYS; i++) {
      Entry entry = Entry.of("key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "a"));
      a.store().merge(entry);
      byOwner.computeIfAbsent(List.of(after.ownerOf(entry.key()).id()), k -> new ArrayList<>()).add(entry);
    }
    assertEquals(Set.copyOf(DESTINATIONS), byOwner.keySet().stream().map(o -> o.get(0)).collect(Collectors.toSet()),
        "each destination owns some of a's keys");
    return byOwner;
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  private InJvmPeer peer(String id) {
    return peers.stream().filter(p -> p.id().equals(id)).findFirst().orElseThrow();
  }

  /** Each destination with the process of it that a routes to: what a push acknowledged by all returns. */
  private Map<String, Address> everyDestination() {
    Map<String, Address> all = new HashMap<>();
    for (String id : DESTINATIONS) {
      all.put(id, a.routing().addressOf(id).orElseThrow());
    }
    return all;
  }

  @Test
  void pushToOwners_asksEveryDestinationAtOnce_andReturnsEachThatTookItsEntries() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(TestingAids::fromSystemProperties);

    Map<String, Address> took = assertTimeoutPreemptively(Duration.ofSeconds(30),
        () -> a.transfers().pushToOwners(byOwner, owner -> true, Wire.PushKind.MIGRATION, () -> false));

    assertEquals(0, asked.getCount(), "every destination was asked");
    assertEquals(List.of(), askedAlone, "destinations asked one after another, each holding its page alone for " + HOLD);
    assertEquals(everyDestination(), took, "each destination took its entries, through the process a routes to");
    byOwner.forEach((owner, entries) -> {
      for (Entry x : entries) {
        assertEquals(Optional.of(x), peer(owner.get(0)).store().get(x.key()), owner + " took " + x.key());
      }
      assertEquals(entries.size(), peer(owner.get(0)).store().size(), owner + " took its entries, and only those");
    });
  }

  /**
   * A leave hands off to its four destinations at once, and then drops what they took: every key
   * is on its new owner, none is left on a, and the hand-off is logged as complete.
   */
  @Test
  void aLeave_handsOffToItsFourDestinationsAtOnce_andDropsWhatTheyTook() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(TestingAids::fromSystemProperties);
    EventLog events = new EventLog();
    Rebalancer rebalancer = rebalancerOfA(events, Duration.ofSeconds(15));

    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> rebalancer.onOwnershipChange(leavingOfA()));

    assertEquals(List.of(), askedAlone, "destinations asked one after another, each holding its page alone for " + HOLD);
    byOwner.forEach((owner, entries) -> {
      for (Entry x : entries) {
        assertEquals(Optional.of(x), peer(owner.get(0)).store().get(x.key()), owner + " took " + x.key());
      }
    });
    assertEquals(0, a.store().size(), "a dropped what its destinations took");
    assertEquals(KEYS, a.counters().keysMigratedOut.sum());
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), rebalancer.leaveOutcome());
    assertEquals(1, a.counters().migrationsCompleted.sum());
  }

  /**
   * A leave whose destinations all refuse it: each push ends once the budget has run out, before
   * it made all its attempts, and a keeps every entry.
   */
  @Test
  void aLeave_whoseBudgetRunsOut_endsEveryPush_andKeepsWhatWasNotTaken() throws Exception {
    TestingAids refusing = InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE));
    start(() -> refusing);
    Rebalancer rebalancer = rebalancerOfA(new EventLog(), Duration.ofSeconds(1));

    // Each push tries again after 0.2, 0.4 and 0.6 s: its fourth attempt, 1.2 s in, is past the
    // budget, so it gives up there; the drain after it sends each page once. Without the budget,
    // each push would make all Transfers.ATTEMPTS, and the drain would pass again for ever.
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThrows(Rebalancer.HandOffIncomplete.class,
        () -> rebalancer.onOwnershipChange(leavingOfA()), "an incomplete leave throws: the node must not say it handed off"));

    int refused = Integer.MAX_VALUE - refusing.handoffsLeftToRefuse(); // the four destinations share the aids
    assertEquals(0, asked.getCount(), "every destination was asked");
    assertTrue(refused >= DESTINATIONS.size() && refused < DESTINATIONS.size() * Transfers.ATTEMPTS,
        "pushes refused: " + refused);
    assertEquals(KEYS, a.store().size(), "a kept every entry");
    for (String id : DESTINATIONS) {
      assertEquals(0, peer(id).store().size(), id + " refused all");
    }
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.INCOMPLETE), rebalancer.leaveOutcome());
    assertEquals(1, a.counters().migrationsFailed.sum());
  }

  /**
   * The thread pushing is interrupted (the peer stopping its sweeps) while each destination holds
   * the first page: every push ends then, on its own thread, and the call returns with its
   * interrupt kept, no destination counted as having taken anything, while every one still holds
   * its page.
   */
  @Test
  void pushToOwners_interruptedWhileItsPushesWait_endsThemAll() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(TestingAids::fromSystemProperties);
    released = new CountDownLatch(1);
    AtomicReference<Map<String, Address>> took = new AtomicReference<>();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicBoolean stillInterrupted = new AtomicBoolean();
    Thread sweep = new Thread(() -> {
      try {
        took.set(a.transfers().pushToOwners(byOwner, owner -> true, Wire.PushKind.SWEEP, () -> false));
        stillInterrupted.set(Thread.currentThread().isInterrupted());
      } catch (RuntimeException | Error x) {
        thrown.set(x);
      }
    }, "sweep");
    sweep.setDaemon(true);
    sweep.start();
    try {
      await("every destination asked").atMost(Duration.ofSeconds(10)).until(() -> asked.getCount() == 0);
      sweep.interrupt();
      sweep.join(10_000);
      assertFalse(sweep.isAlive(), "the call returned");
      assertEquals(0, holdsEnded.get(), "the call returned while every destination still held its page");
    } finally {
      released.countDown();
      sweep.interrupt();
      sweep.join(Transfers.PUSH_TIMEOUT.toMillis() * 2); // the test leaves no thread running
    }
    assertEquals(null, thrown.get());
    assertTrue(stillInterrupted.get(), "the call returns with its interrupt");
    assertEquals(Map.of(), took.get(), "no push was acknowledged");
    assertEquals(KEYS, a.store().size());
  }

  /**
   * The thread pushing is interrupted (the peer stopping its sweeps) while every push is still
   * queued behind other work on the push threads; the peer then stops those threads, which runs
   * what was queued on the thread that stops them: the pushes of the interrupted call send nothing
   * there either, as they would have sent nothing on the call's own thread.
   */
  @Test
  void pushToOwners_interruptedWhileItsPushesAreQueued_sendsNothingOnceThePushThreadsStop() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(TestingAids::fromSystemProperties);
    CountDownLatch holding = new CountDownLatch(Transfers.PARALLEL_PUSHES);
    CountDownLatch freed = new CountDownLatch(1);
    for (int i = 0; i < Transfers.PARALLEL_PUSHES; i++) {
      a.pushes().execute(() -> {
        holding.countDown();
        try {
          freed.await();
        } catch (InterruptedException stopped) {
          // the push threads stop: let this one go
        }
      });
    }
    AtomicReference<Map<String, Address>> took = new AtomicReference<>();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread sweep = new Thread(() -> {
      try {
        took.set(a.transfers().pushToOwners(byOwner, owner -> true, Wire.PushKind.SWEEP, () -> false));
      } catch (RuntimeException | Error x) {
        thrown.set(x);
      }
    }, "sweep");
    sweep.setDaemon(true);
    try {
      assertTrue(holding.await(10, TimeUnit.SECONDS), "every push thread is held");
      sweep.start();
      await("the call waits for its queued pushes").atMost(Duration.ofSeconds(10))
          .until(() -> sweep.getState() == Thread.State.WAITING);
      sweep.interrupt();
      // Its wait consumed the interrupt, and it waits again: the call knows it was interrupted.
      await("the call saw its interrupt").atMost(Duration.ofSeconds(10))
          .until(() -> sweep.getState() == Thread.State.WAITING && !sweep.isInterrupted());

      a.pushes().shutdownNow(); // runs the queued pushes here

      sweep.join(10_000);
      assertFalse(sweep.isAlive(), "the call returned");
    } finally {
      freed.countDown();
      sweep.interrupt();
      sweep.join(Transfers.PUSH_TIMEOUT.toMillis() * 2); // the test leaves no thread running
    }
    assertEquals(null, thrown.get());
    assertEquals(DESTINATIONS.size(), asked.getCount(), "no destination was asked");
    assertEquals(Map.of(), took.get(), "no push was acknowledged");
    for (String id : DESTINATIONS) {
      assertEquals(0, peer(id).store().size(), id + " got nothing");
    }
    assertEquals(KEYS, a.store().size());
  }

  /**
   * Once the peer stopped its push threads (a leave that outlived the node's close), the pushes
   * are still made, in full, on the calling thread: here each destination refuses the first page,
   * and takes it when it comes again.
   */
  @Test
  void pushToOwners_afterThePushThreadsStopped_pushesEverythingOnTheCallingThread() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(() -> InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, "1"));
    a.pushes().shutdownNow();
    List<Thread> pushing = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = page -> pushing.add(Thread.currentThread());
    AtomicReference<Thread> caller = new AtomicReference<>();

    Map<String, Address> took = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
      caller.set(Thread.currentThread());
      return a.transfers().pushToOwners(byOwner, owner -> true, Wire.PushKind.MIGRATION, () -> false);
    });

    assertEquals(everyDestination(), took, "each destination took its entries");
    assertEquals(DESTINATIONS.size(), pushing.size(), "one page to each");
    assertTrue(pushing.stream().allMatch(t -> t == caller.get()), "on the calling thread: " + pushing);
    byOwner.forEach((owner, entries) -> {
      for (Entry x : entries) {
        assertEquals(Optional.of(x), peer(owner.get(0)).store().get(x.key()), owner + " took " + x.key());
      }
    });
  }

  /**
   * A push that throws (a bug; here each does, once its page is acknowledged) fails the call once
   * every push has ended: all four destinations were asked, and the first failure is thrown with
   * the three others suppressed in it.
   */
  @Test
  void pushToOwners_whosePushesThrow_throwsOnceAllEnded_theFirstWithTheOthersSuppressed() throws Exception {
    Map<List<String>, List<Entry>> byOwner = start(TestingAids::fromSystemProperties);
    a.transfers().afterPage = page -> {
      throw new IllegalStateException("a push that fails once its page is acknowledged");
    };

    IllegalStateException thrown = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> assertThrows(
        IllegalStateException.class,
        () -> a.transfers().pushToOwners(byOwner, owner -> true, Wire.PushKind.MIGRATION, () -> false)));

    assertEquals(0, asked.getCount(), "every destination was asked");
    assertEquals(DESTINATIONS.size() - 1, thrown.getSuppressed().length, "the others, suppressed in the first");
    assertEquals(DESTINATIONS.size(), holdsEnded.get(), "thrown once every push had ended");
  }

  /**
   * The repair after a merge pushes what a holds to the owners of each key in the merged ring at
   * once, as a hand-off does: each of the four takes the keys it owns, a keeps its copies (a repair
   * drops nothing), and the repair is logged as complete.
   */
  @Test
  void aRepairAfterAMerge_pushesToEveryOwnerAtOnce() throws Exception {
    start(TestingAids::fromSystemProperties);
    HashRing ring = a.node().ring();
    Map<String, List<Entry>> owned = new HashMap<>();
    a.store().all().forEach(x -> owned.computeIfAbsent(ring.ownerOf(x.key()).id(), k -> new ArrayList<>()).add(x));
    assertTrue(owned.keySet().containsAll(DESTINATIONS), "each destination owns some of a's keys: " + owned.keySet());
    EventLog events = new EventLog();
    Sweeper sweeper = new Sweeper(a.routing(), a.store(), a.transfers(), a.counters(), events, () -> 0);

    assertTrue(assertTimeoutPreemptively(Duration.ofSeconds(30), () -> sweeper.repairAfterMerge(11)), "the repair ran");

    assertEquals(0, asked.getCount(), "every destination was asked");
    assertEquals(List.of(), askedAlone, "destinations asked one after another, each holding its page alone for " + HOLD);
    for (String id : DESTINATIONS) {
      for (Entry x : owned.get(id)) {
        assertEquals(Optional.of(x), peer(id).store().get(x.key()), id + " took " + x.key());
      }
      assertEquals(owned.get(id).size(), peer(id).store().size(), id + " took the keys it owns, and only those");
    }
    assertEquals(KEYS, a.store().size(), "a repair drops nothing");
    assertEquals(1, events.recent().size(), events.recent()::toString);
    assertTrue(events.recent().get(0).contains("\"ok\":true"), events.recent()::toString);
  }

  private Rebalancer rebalancerOfA(EventLog events, Duration leaveBudget) {
    Routing routing = a.routing();
    PullRetries retries = new PullRetries(a.transfers()::pull, routing::isLive, routing::owns, routing::isLeaving,
        System::nanoTime, events);
    return new Rebalancer(routing, a.store(), a.transfers(), retries, a.counters(), events, leaveBudget, a.pulls());
  }

  /** The change a's node delivers when a leaves: everything it owns, lost to the four others. */
  private OwnershipChange leavingOfA() {
    HashRing before = a.node().ring();
    HashRing after = before.without("a");
    long view = a.node().viewId();
    return new OwnershipChange(OwnershipChange.Reason.LEAVING, view, view, before, after,
        RingDiff.compute(before, after, "a", 1));
  }
}
