package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange;
import io.ringmaster.Ringmaster;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * A leave's hand-off ({@link Rebalancer} on a LEAVING change): everything the leaving peer holds
 * goes to the owners it leaves behind, pass after pass while they refuse it (each push tried
 * {@link Transfers#ATTEMPTS} times), until the leave budget is spent. Two {@link InJvmPeer}s,
 * replicas 2, so b owns every key once a leaves; a's rebalancer is called directly with the
 * change its node would deliver.
 */
class RebalancerTest {
  private static final int KEYS = 5;
  private final String cluster = InJvmPeer.clusterName("rebalancer");
  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private TestingAids aidsOfB;
  private final EventLog eventsOfA = new EventLog();

  /** Starts a and b; b refuses its first {@code handoffsBRefuses} hand-off pushes; a holds KEYS entries. */
  private List<Entry> start(int handoffsBRefuses) throws Exception {
    startAAndB(InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, String.valueOf(handoffsBRefuses)));
    return putInA();
  }

  /** Starts a, and b with these aids, in one ring. */
  private void startAAndB(TestingAids forB) throws Exception {
    startAAndB(forB, UnaryOperator.identity());
  }

  /** Starts a, and b with these aids, both with these settings, in one ring. */
  private void startAAndB(TestingAids forB, UnaryOperator<Ringmaster.Builder> settings) throws Exception {
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), settings));
    aidsOfB = forB;
    peers.add(b = InJvmPeer.start(cluster, "b", aidsOfB, settings));
    InJvmPeer.awaitOneRing(peers);
  }

  /**
   * Closes b and starts it again, a new process under its id, and waits for one ring in which a
   * knows b as the new process (a ring of the same ids, as a's before it saw b leave, would pass
   * for it); returns it.
   */
  private InJvmPeer restartB() throws Exception {
    b.close();
    peers.remove(b);
    InJvmPeer again = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties());
    peers.add(again);
    InJvmPeer.awaitOneRing(peers);
    UUID process = again.routing().ownProcess().orElseThrow();
    await("a knows the new b").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
        .until(() -> a.routing().processOf("b").equals(Optional.of(process)) && a.node().ring().contains("b"));
    return again;
  }

  /**
   * Closes b and starts it again, a new process under its id, admitted in the view that removes
   * its old process: a, the coordinator, holds its membership requests until both the leave and
   * the join are queued, so that JGroups handles them together. The view then holds the same
   * member ids, and a's ring stays the same object; waits until a knows b as the new process and
   * returns it.
   */
  private InJvmPeer replaceBInOneView() throws Exception {
    GMS membership = a.node().channel().getProtocolStack().findProtocol(GMS.class);
    ViewHandler<?> requests = membership.getViewHandler();
    InJvmPeer old = b;
    CompletableFuture<Void> closed;
    CompletableFuture<InJvmPeer> started = null;
    InJvmPeer again;
    try {
      requests.waitUntilComplete(30_000); // a run under way would take the requests that come meanwhile
      requests.processing(true);
      try {
        closed = CompletableFuture.runAsync(old::close, r -> new Thread(r, "close-b").start());
        await("b's leave queued at a").atMost(Duration.ofSeconds(20)).until(() -> requests.size() >= 1);
        started = CompletableFuture.supplyAsync(() -> {
          try {
            return InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties());
          } catch (Exception e) {
            throw new CompletionException(e);
          }
        }, r -> new Thread(r, "start-b").start());
        await("the new b's join queued at a").atMost(Duration.ofSeconds(20)).until(() -> requests.size() >= 2);
      } finally {
        // Each side sends its request again every second (in-jvm.xml): the next one to arrive
        // starts the processing of both. In a finally: else b's close and the new b's start would
        // wait for good.
        requests.processing(false);
      }
      again = started.get(30, TimeUnit.SECONDS);
    } catch (Exception | Error e) {
      if (started != null) {
        started.thenAccept(InJvmPeer::close); // whenever it does start
      }
      throw e;
    }
    peers.add(again);
    closed.get(30, TimeUnit.SECONDS); // b left in the view that admitted the new b
    peers.remove(old);
    b = again;
    UUID process = again.routing().ownProcess().orElseThrow();
    await("a knows the new b").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
        .until(() -> a.routing().processOf("b").equals(Optional.of(process)));
    return again;
  }

  /** KEYS entries, stored in a's store only. */
  private List<Entry> putInA() {
    return putInA(KEYS);
  }

  /** {@code keys} entries, stored in a's store only. */
  private List<Entry> putInA(int keys) {
    List<Entry> held = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      Entry e = Entry.of("key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "a"));
      a.store().merge(e);
      held.add(e);
    }
    return held;
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /** a's rebalancer, with this leave budget. */
  private Rebalancer rebalancerOfA(Duration leaveBudget) {
    return rebalancerOfA(leaveBudget, retriesOfA());
  }

  /** a's rebalancer, with this leave budget and these pull retries. */
  private Rebalancer rebalancerOfA(Duration leaveBudget, PullRetries retries) {
    return new Rebalancer(a.routing(), a.store(), a.transfers(), retries, a.counters(), eventsOfA, leaveBudget,
        a.pulls());
  }

  private PullRetries retriesOfA() {
    return retriesOfA(System::nanoTime);
  }

  /** a's pull retries, on this clock, logging to a's events. */
  private PullRetries retriesOfA(LongSupplier nanoTime) {
    Routing routing = a.routing();
    return new PullRetries(a.transfers()::pull, routing::isLive, routing::owns, routing::isLeaving, nanoTime,
        eventsOfA);
  }

  /** a's events of this type, as JSON. */
  private List<String> eventsOfA(String type) {
    return eventsOfA.recent().stream().filter(json -> json.contains("\"type\":\"" + type + "\"")).toList();
  }

  /** A number field of an event's JSON. */
  private static long number(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(-?[0-9]+)").matcher(json);
    assertTrue(m.find(), name + " in " + json);
    return Long.parseLong(m.group(1));
  }

  /** What {@code body} prints on System.out (the leave's last words), while it runs. */
  private static String printed(Executable body) throws Throwable {
    PrintStream out = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      body.execute();
    } finally {
      System.setOut(out);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  /** The change a's node delivers when a leaves: everything it owns, lost to b. */
  private OwnershipChange leavingOfA() {
    return leavingOfA(2);
  }

  /** The same, for keys kept on {@code replicas} owners. */
  private OwnershipChange leavingOfA(int replicas) {
    HashRing before = a.node().ring();
    HashRing after = before.without("a");
    long view = a.node().viewId();
    return new OwnershipChange(OwnershipChange.Reason.LEAVING, view, view, before, after,
        RingDiff.compute(before, after, "a", replicas));
  }

  @Test
  void aLeave_whoseHandOffIsRefused_passesAgain_untilTheNewOwnerTakesEverything() throws Exception {
    // Each push tries Transfers.ATTEMPTS times: the hand-off fails, then the drain's first pass;
    // its second pass is taken.
    List<Entry> held = start(2 * Transfers.ATTEMPTS + 2);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));
    OwnershipChange leaving = leavingOfA();
    long before = System.nanoTime();

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertTimeoutPreemptively(
        Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(leaving)));

    long tookMillis = (System.nanoTime() - before) / 1_000_000;
    // Each push made all its attempts: the hand-off's and the drain's ran within the budget.
    assertTrue(Logged.messages(logged, Level.WARNING).stream().noneMatch(m -> m.contains("out of time")),
        "" + Logged.messages(logged, Level.WARNING));
    List<String> out = eventsOfA("migration");
    assertEquals(3, out.size(), "the hand-off, then each pass of the drain: " + out);
    assertTrue(out.get(0).contains("\"direction\":\"out\"") && out.get(0).contains("\"reason\":\"leaving\"")
        && out.get(0).contains("\"keys\":0") && out.get(0).contains("\"ok\":false"),
        "the hand-off failed first: " + out);
    // Then the drain's passes, to b, for the view the peer leaves: the first refused too, the second taken.
    for (String pass : out.subList(1, 3)) {
      assertTrue(pass.contains("\"direction\":\"out\"") && pass.contains("\"reason\":\"drain\"")
          && pass.contains("\"peers\":[\"b\"]"), pass);
      assertEquals(leaving.viewId(), number(pass, "viewId"), pass);
    }
    assertTrue(out.get(1).contains("\"keys\":0") && out.get(1).contains("\"ok\":false"), "refused: " + out.get(1));
    assertEquals(KEYS, number(out.get(2), "keys"), out.get(2));
    assertTrue(out.get(2).contains("\"ok\":true"), out.get(2));
    // Its attempts waited 0.2 + 0.4 + 0.6 + 0.8 s between them.
    long millis = number(out.get(0), "millis");
    assertTrue(millis >= 2000 && millis <= tookMillis, millis + " ms of " + tookMillis);
    assertEquals(List.of(leaving.viewId()), eventsOfA("ownership").stream().map(json -> number(json, "viewId")).toList());
    assertEquals(List.of(leaving.viewId()), eventsOfA("leaving").stream().map(json -> number(json, "viewId")).toList());
    assertEquals(KEYS, a.counters().keysMigratedOut.sum(), "the drain moved them all");
    assertTrue(a.counters().settled.get(), "a change was handled: a serves pulls");
    assertEquals(0, aidsOfB.handoffsLeftToRefuse());
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what b took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsFailed.sum());
    assertTrue(a.routing().isLeaving());
  }

  /**
   * A peer that joins while a leaves: a's LEAVING change, computed before c joined, names only b as
   * the new owner, but once c is in, c owns every key too (two replicas, two peers left). The
   * hand-off to b alone must not drop a's copies: the drain hands them to c as well. (These peers
   * have no rebalancer, so c pulls nothing: as a real c whose pulls from a were over before a
   * stored the entries by its old ring.)
   */
  @Test
  void aPeerThatJoinsDuringTheLeave_getsTheEntriesTheLeaveNamedOnlyOthersFor() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    OwnershipChange staleLeave = leavingOfA();
    InJvmPeer c = InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties());
    peers.add(c);
    InJvmPeer.awaitOneRing(peers);
    List<Entry> held = putInA();

    assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> rebalancerOfA(Duration.ofSeconds(15)).onOwnershipChange(staleLeave));

    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
      assertEquals(Optional.of(e), c.store().get(e.key()), "c, which joined during the leave, took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what both owners took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
    // The hand-off moved none (a kept the entries, c owning them too); the drain's pass moved them all, to both.
    List<String> out = eventsOfA("migration");
    assertEquals(2, out.size(), "the hand-off, then the drain's one pass: " + out);
    assertTrue(out.get(0).contains("\"reason\":\"leaving\"") && out.get(0).contains("\"peers\":[\"b\"]"), out.get(0));
    assertEquals(0, number(out.get(0), "keys"), out.get(0));
    assertTrue(out.get(1).contains("\"reason\":\"drain\"") && out.get(1).contains("\"ok\":true"), out.get(1));
    assertTrue(out.get(1).contains("\"peers\":[\"b\",\"c\"]") || out.get(1).contains("\"peers\":[\"c\",\"b\"]"),
        out.get(1));
    assertEquals(KEYS, number(out.get(1), "keys"), out.get(1));
  }

  /** A leave whose hand-off took everything: its drain finds nothing left, and logs no pass. */
  @Test
  void aLeave_whoseHandOffTookEverything_logsNoPassOfItsDrain() throws Exception {
    start(0);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));

    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(leavingOfA()));

    assertEquals(0, a.store().size());
    List<String> out = eventsOfA("migration");
    assertEquals(1, out.size(), "the hand-off only: " + out);
    assertTrue(out.get(0).contains("\"reason\":\"leaving\"") && out.get(0).contains("\"ok\":true"), out.get(0));
    assertEquals(KEYS, number(out.get(0), "keys"), out.get(0));
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), rebalancer.leaveOutcome());
  }

  /**
   * A peer that joins during a pass of the leave's drain (here, once the drain's first page to b
   * is taken; the hand-off to b was refused): c owns every key by the end of the pass, and was not
   * pushed to. The pass keeps those entries, and the leave is not complete until a next pass has
   * handed them to c too; ending then would stop a with entries that c never got.
   */
  @Test
  void aPeerThatJoinsDuringADrainPass_getsTheEntriesInTheNextPass_beforeTheLeaveIsComplete() throws Exception {
    List<Entry> held = start(Transfers.ATTEMPTS); // b refuses the hand-off, then takes the drain's pushes
    AtomicReference<InJvmPeer> joined = new AtomicReference<>();
    a.transfers().afterPage = page -> {
      if (joined.get() == null) {
        try {
          joined.set(InJvmPeer.start(cluster, "c", TestingAids.fromSystemProperties()));
          peers.add(joined.get());
          InJvmPeer.awaitOneRing(peers);
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      }
    };

    assertTimeoutPreemptively(Duration.ofSeconds(30),
        () -> rebalancerOfA(Duration.ofSeconds(20)).onOwnershipChange(leavingOfA()));

    assertEquals(0, aidsOfB.handoffsLeftToRefuse(), "the hand-off was refused: the drain pushed");
    InJvmPeer c = joined.get();
    assertTrue(c != null, "c joined during the drain's pass");
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
      assertEquals(Optional.of(e), c.store().get(e.key()), "c, which joined during the pass, took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what both owners took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
  }

  /**
   * An owner restarted under its id during a pass of the leave's drain (here, once the drain's
   * page to b is taken; the hand-off to b was refused), the old process's leave and the new one's
   * join in one view: the ring holds the same members, the very ring the pass began with, but the
   * copies the old process took are gone with it. The pass keeps a's entries, and the leave is not
   * complete until a next pass has handed them to the new process; ending then would stop a with
   * entries that no owner holds.
   */
  @Test
  void anOwnerRestartedInOneViewDuringADrainPass_getsTheEntriesInTheNextPass_beforeTheLeaveIsComplete()
      throws Exception {
    List<Entry> held = start(Transfers.ATTEMPTS); // b refuses the hand-off, then takes the drain's pushes
    List<HashRing> ringsAroundTheRestart = new CopyOnWriteArrayList<>();
    AtomicReference<InJvmPeer> restarted = new AtomicReference<>();
    a.transfers().afterPage = page -> {
      if (restarted.get() == null) {
        ringsAroundTheRestart.add(a.routing().ring());
        try {
          restarted.set(replaceBInOneView());
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        ringsAroundTheRestart.add(a.routing().ring());
      }
    };
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(20));

    assertTimeoutPreemptively(Duration.ofSeconds(45), () -> rebalancer.onOwnershipChange(leavingOfA()));

    assertEquals(0, aidsOfB.handoffsLeftToRefuse(), "the hand-off was refused: the drain pushed");
    InJvmPeer newB = restarted.get();
    assertTrue(newB != null, "b was restarted during the drain's pass");
    assertEquals(2, ringsAroundTheRestart.size());
    assertSame(ringsAroundTheRestart.get(0), ringsAroundTheRestart.get(1),
        "the pass's ring is unchanged by the restart: only the process behind b's id changed");
    for (Entry e : held) {
      assertEquals(Optional.of(e), newB.store().get(e.key()), "b's new process took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what the new process took");
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), rebalancer.leaveOutcome());
    assertEquals(1, a.counters().migrationsCompleted.sum());
  }

  /**
   * A push of several pages to b, whose process is replaced under its id after the first page: the
   * new process never got that page, so the push starts again at it, and reports success only once
   * the new process holds every entry. (Sent by id page after page, the later pages would reach the
   * new process and the push would succeed without the first page's entries there.)
   */
  @Test
  void aPush_toAPeerRestartedBetweenPages_startsAgainAtItsNewProcess() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> entries = bigEntries(3);
    List<Integer> pagesAcked = new ArrayList<>();
    AtomicReference<InJvmPeer> restarted = new AtomicReference<>();
    a.transfers().afterPage = page -> {
      pagesAcked.add(page);
      if (page == 1 && restarted.get() == null) {
        try {
          restarted.set(restartB());
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      }
    };

    List<LogRecord> logged = Logged.by(Transfers.class,
        () -> assertEquals(Set.of("b"),
            a.transfers().pushToEach(Map.of("b", entries), Wire.PushKind.MIGRATION, () -> false).keySet(),
            "the push to b's new process"));

    assertEquals(List.of(1, 1, 2, 3), pagesAcked, "page 1 to the old process, then all three to the new one");
    assertEquals(List.of("a: b was restarted during a push; pushing its 6 entries again, from the first"),
        Logged.messages(logged, Level.INFO));
    for (Entry e : entries) {
      assertEquals(Optional.of(e), restarted.get().store().get(e.key()), "b's new process holds " + e.key());
    }
  }

  /**
   * A push whose destination is restarted after each first page: it starts again at each new
   * process, {@link Transfers#ATTEMPTS} rounds in all, then fails, saying so. (b is restarted one
   * more time at most, so that a push making more rounds ends too, and succeeds.)
   */
  @Test
  void aPush_whoseDestinationKeepsRestarting_failsAfterItsRounds() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> entries = bigEntries(2);
    AtomicInteger restarts = new AtomicInteger();
    a.transfers().afterPage = page -> {
      if (page == 1 && restarts.get() <= Transfers.ATTEMPTS) {
        try {
          b = restartB();
          restarts.incrementAndGet();
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      }
    };

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertTimeoutPreemptively(
        Duration.ofSeconds(60),
        () -> assertEquals(Map.of(), a.transfers().pushToEach(Map.of("b", entries), Wire.PushKind.MIGRATION, () -> false))));

    assertEquals(Transfers.ATTEMPTS, restarts.get(), "a round for each process");
    assertEquals(List.of("a: push of 4 entries to b failed: its process changed 5 times during the push"),
        Logged.messages(logged, Level.WARNING));
  }

  /**
   * Deletes during a leave's hand-off are not undone by it: once the first page is taken, every
   * key is deleted through a (a leaving peer passes the deletes on to b); the pages pushed after
   * that carry the old values of keys whose tombstones b already holds, and lose to them: b holds
   * every tombstone once the hand-off's last page is taken (before the drain, which would hand the
   * tombstones on again), and ends with them, and a with no live copy.
   */
  @Test
  void deletesDuringTheHandOff_areNotUndoneByThePagesPushedAfterThem() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    String big = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < 6; i++) { // three pages
      Entry e = Entry.of("doomed-" + i, big + i, new Version(VersionClock.systemMicros(), "a"));
      a.store().merge(e);
      entries.add(e);
    }
    Map<String, Version> deletions = new ConcurrentHashMap<>();
    List<Entry> atBAfterTheLastPage = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = page -> {
      if (page == 1 && deletions.isEmpty()) {
        entries.forEach(e -> deletions.put(e.key(), a.kv().delete(e.key()).version()));
      } else if (page == 3 && atBAfterTheLastPage.isEmpty()) {
        entries.forEach(e -> atBAfterTheLastPage.add(b.store().get(e.key()).orElseThrow()));
      }
    };

    assertTimeoutPreemptively(Duration.ofSeconds(30),
        () -> rebalancerOfA(Duration.ofSeconds(15)).onOwnershipChange(leavingOfA()));

    assertEquals(entries.size(), deletions.size(), "every key was deleted during the hand-off");
    assertEquals(entries.size(), atBAfterTheLastPage.size(), "the hand-off pushed three pages");
    for (Entry atB : atBAfterTheLastPage) {
      assertTrue(atB.deleted(), atB.key() + " at b after the hand-off's pages: an old value won over its tombstone");
    }
    for (Entry e : entries) {
      Entry atB = b.store().get(e.key()).orElseThrow();
      assertTrue(atB.deleted(), e.key() + " at b: " + atB.value());
      assertEquals(deletions.get(e.key()), atB.version(), e.key());
      assertTrue(a.store().get(e.key()).map(Entry::deleted).orElse(true), "a kept a live copy of " + e.key());
    }
  }

  /**
   * One replica, three peers: a's LEAVING change gives some of its ranges to b, the others to c,
   * which refuses them because it is leaving too. Once a knows that, its ring gives c's ranges to
   * b, which took only its own: the entries of c's ranges must stay in a (b took none of them)
   * until the drain hands them to b.
   */
  @Test
  void aLeave_whoseDestinationIsLeavingToo_dropsOnlyWhatTheOwnersLeftTook() throws Exception {
    UnaryOperator<Ringmaster.Builder> oneReplica = builder -> builder.replicas(1);
    TestingAids aids = TestingAids.fromSystemProperties();
    peers.add(a = InJvmPeer.start(cluster, "a", aids, oneReplica));
    peers.add(b = InJvmPeer.start(cluster, "b", aids, oneReplica));
    InJvmPeer c = InJvmPeer.start(cluster, "c", aids, oneReplica);
    peers.add(c);
    InJvmPeer.awaitOneRing(peers);
    List<Entry> held = putInA(40);
    OwnershipChange leave = leavingOfA(1);
    assertTrue(held.stream().anyMatch(e -> leave.ring().ownerOf(e.key()).id().equals("c")),
        "some of a's keys go to c");
    c.routing().startLeaving(); // c refuses pushes as leaving

    assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> rebalancerOfA(Duration.ofSeconds(15)).onOwnershipChange(leave));

    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b, the one owner left, took " + e.key());
    }
    assertEquals(0, a.store().size(), "a dropped what b took");
    assertEquals(1, a.counters().migrationsCompleted.sum());
  }

  /**
   * A drop after the destination's process was replaced under its id: the new process never got
   * what the old one took, so nothing is dropped until the new process acknowledges it too.
   */
  @Test
  void aDrop_afterTheDestinationRestarted_keepsWhatOnlyItsOldProcessTook() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = putInA();
    a.routing().startLeaving(); // a routes by the ring without it: b owns every key
    Optional<Address> oldProcess = a.transfers().pushTo("b", held, Wire.PushKind.MIGRATION, () -> false);
    assertTrue(oldProcess.isPresent(), "b's first process took them");
    restartB();

    assertEquals(0, a.transfers().dropHandedOff(held, Map.of("b", oldProcess.get())), "b's new process has none");
    assertFalse(a.transfers().stillHeldByThoseThatTook(Map.of("b", oldProcess.get())), "a drain's pass is not done");
    assertEquals(KEYS, a.store().size());
    Optional<Address> newProcess = a.transfers().pushTo("b", held, Wire.PushKind.MIGRATION, () -> false);
    assertTrue(newProcess.isPresent() && !newProcess.equals(oldProcess));
    assertEquals(KEYS, a.transfers().dropHandedOff(held, Map.of("b", newProcess.get())), "dropped once it took them");
    assertTrue(a.transfers().stillHeldByThoseThatTook(Map.of("b", newProcess.get())));
  }

  /**
   * A change that refuses the peer (another holds its id) handled once the peer began to stop: its
   * close() found it in the ring and skipped the refused peer's leave, and no LEAVING change comes
   * after this one, so the change drains what the peer holds, a key it does not own included.
   */
  @Test
  void aRefusalHandledOnceThePeerIsStopping_drainsWhatThePeerHolds() throws Exception {
    startAAndB(TestingAids.fromSystemProperties(), builder -> builder.replicas(1));
    HashRing both = a.node().ring();
    long view = a.node().viewId();
    Entry stray = null;
    for (int i = 0; stray == null; i++) {
      Entry e = Entry.of("stray-" + i, "v", new Version(VersionClock.systemMicros(), "a"));
      stray = both.ownerOf(e.key()).id().equals("b") ? e : null;
    }
    a.store().merge(stray); // a copy of a key b owns, which no range a loses holds
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));
    rebalancer.stopping();

    // The ring after holds "a", the other peer's id now: everything this "a" owned is lost.
    rebalancer.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.MERGE, view, view, both, both,
        RingDiff.compute(both, true, both, false, "a", 1), false));
    assertTrue(rebalancer.leaveOutcome().isPresent(), "a leave ran");
    String key = stray.key();
    assertEquals(Optional.of(stray.value()), b.store().get(key).map(Entry::value), "the stray reached its owner");
    long leaves = a.counters().migrationsCompleted.sum() + a.counters().migrationsFailed.sum();
    rebalancer.leaveRefused(view); // close() found it refused too, later: the leave ran already
    assertEquals(leaves, a.counters().migrationsCompleted.sum() + a.counters().migrationsFailed.sum(),
        "one leave, not two");
  }

  /**
   * A change (not the leave) that a stopping peer handles, while its LEAVING change waits behind
   * it: its hand-off tries each page once, not {@link Transfers#ATTEMPTS} times, and it pulls
   * nothing, so the leave's budget is left to the leave. One replica: in the first change a loses
   * ranges to b, which refuses hand-offs; in the second it gains b's (b holds keys there).
   */
  @Test
  void aChangeHandledOnceThePeerIsStopping_triesEachPushOnce_andPullsNothing() throws Exception {
    startAAndB(InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, String.valueOf(Integer.MAX_VALUE)), builder -> builder.replicas(1));
    HashRing both = a.node().ring();
    HashRing alone = both.without("b");
    long view = a.node().viewId();
    List<Entry> inA = putInA(40);
    assertTrue(inA.stream().anyMatch(e -> both.ownerOf(e.key()).id().equals("b")), "a loses some keys to b");
    List<Entry> inB = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      Entry e = Entry.of("b-key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "b"));
      if (both.ownerOf(e.key()).id().equals("b")) {
        b.store().merge(e);
        inB.add(e);
      }
    }
    assertTrue(!inB.isEmpty(), "b holds keys a would gain");
    b.counters().settled.set(true); // b serves pulls (it has no rebalancer to say it handled its first change)
    PullRetries retries = retriesOfA();
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15), retries);
    rebalancer.stopping();

    rebalancer.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, view, view, alone, both,
        RingDiff.compute(alone, both, "a", 1)));
    assertEquals(Integer.MAX_VALUE - 1, aidsOfB.handoffsLeftToRefuse(), "the push to b was tried once");

    rebalancer.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, view, view, both, alone,
        RingDiff.compute(both, alone, "a", 1)));
    for (Entry e : inB) {
      assertTrue(a.store().get(e.key()).isEmpty(), "a pulled " + e.key());
    }
    assertEquals(2, a.counters().migrationsFailed.sum(), "both changes end incomplete, for the drain to finish");
    assertEquals(List.of("b"), retries.sourcesFor(HashRing.position(inB.get(0).key())),
        "the pull not made is left to the retries, which name its source");
  }

  /**
   * A change handled while the peer is not stopping: its hand-off tries each page
   * {@link Transfers#ATTEMPTS} times (b refuses all but the last), and its pull brings in all that
   * the gained ranges hold; both count what they moved and report it, and the changes complete.
   * One replica: in the first change a loses ranges to b; in the second it gains them back.
   */
  @Test
  void aChange_handsOffWithEveryAttempt_andPullsWhatItGained() throws Exception {
    startAAndB(InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, String.valueOf(Transfers.ATTEMPTS - 1)), builder -> builder.replicas(1));
    HashRing both = a.node().ring();
    HashRing alone = both.without("b");
    long view = a.node().viewId();
    List<Entry> inA = putInA(40);
    List<Entry> toB = inA.stream().filter(e -> both.ownerOf(e.key()).id().equals("b")).toList();
    assertTrue(!toB.isEmpty() && toB.size() < inA.size(), "a loses some keys to b, not all");
    for (int i = 0; i < 40; i++) {
      Entry e = Entry.of("b-key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "b"));
      if (both.ownerOf(e.key()).id().equals("b")) {
        b.store().merge(e);
      }
    }
    b.counters().settled.set(true); // b serves pulls (it has no rebalancer to say it handled its first change)
    PullRetries retries = retriesOfA();
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15), retries);

    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(new OwnershipChange(
        OwnershipChange.Reason.VIEW, view, view, alone, both, RingDiff.compute(alone, both, "a", 1))));

    assertEquals(0, aidsOfB.handoffsLeftToRefuse(), "the last attempt was taken");
    for (Entry e : toB) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
    }
    assertEquals(inA.size() - toB.size(), a.store().size(), "a dropped what b took, and only that");
    assertEquals(toB.size(), a.counters().keysMigratedOut.sum());
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsFailed.sum());

    List<Entry> atB = new ArrayList<>(b.store().all());
    rebalancer.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, view, view, both, alone,
        RingDiff.compute(both, alone, "a", 1)));

    for (Entry e : atB) {
      assertEquals(Optional.of(e), a.store().get(e.key()), "a pulled " + e.key());
    }
    assertEquals(atB.size(), a.counters().keysMigratedIn.sum());
    List<String> in = eventsOfA("migration").stream().filter(json -> json.contains("\"direction\":\"in\"")).toList();
    assertEquals(1, in.size(), "" + in);
    assertEquals(atB.size(), number(in.get(0), "keys"));
    assertTrue(in.get(0).contains("\"ok\":true"), in.get(0));
    assertEquals(0, retries.pending(), "a complete pull leaves nothing to retry");
    assertEquals(2, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsFailed.sum());
  }

  /**
   * A pull that failed and was tried again in the background: the log shows the failed pull, then
   * the retry that brought the keys in (as many as it counted), from the same source, for the same
   * view, so that it does not read as if the keys never came. One replica: a's change is a join's,
   * gaining from b, which held every key; b refuses every attempt of the first pull, and serves
   * the retry.
   */
  @Test
  void aPullRetriedAfterItFailed_isLogged_withTheKeysItBroughtIn() throws Exception {
    startAAndB(InJvmPeer.aidsWith(TestingAids.REFUSE_PULLS, String.valueOf(Transfers.ATTEMPTS)),
        builder -> builder.replicas(1));
    HashRing both = a.node().ring();
    HashRing onlyB = both.without("a");
    long view = a.node().viewId();
    int forA = 0;
    for (int i = 0; i < 40; i++) {
      Entry e = Entry.of("b-key-" + i, "v" + i, new Version(VersionClock.systemMicros(), "b"));
      b.store().merge(e);
      forA += both.ownerOf(e.key()).id().equals("a") ? 1 : 0;
    }
    assertTrue(forA > 0, "a gains some of b's keys");
    b.counters().settled.set(true); // b serves pulls (it has no rebalancer to say it handled its first change)
    AtomicLong clock = new AtomicLong();
    PullRetries retries = retriesOfA(clock::get);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15), retries);
    OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, view, view, onlyB, both,
        RingDiff.compute(onlyB, both, "a", 1));

    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> rebalancer.onOwnershipChange(join));
    assertEquals(1, retries.pending(), "the pull failed, and waits to be tried again");
    clock.addAndGet(PullRetries.FIRST_DELAY.toNanos());
    long pulled = assertTimeoutPreemptively(Duration.ofSeconds(20), retries::runDue);
    assertEquals(forA, pulled, "the retry brought them");
    assertEquals(0, retries.pending());

    List<String> in = eventsOfA("migration");
    assertEquals(2, in.size(), "the pull, then its retry: " + in);
    assertTrue(in.get(0).contains("\"reason\":\"view\"") && in.get(0).contains("\"ok\":false"), in.get(0));
    assertEquals(0, number(in.get(0), "keys"), in.get(0));
    String retry = in.get(1);
    assertTrue(retry.contains("\"direction\":\"in\"") && retry.contains("\"reason\":\"retry\"")
        && retry.contains("\"peers\":[\"b\"]") && retry.contains("\"ok\":true"), retry);
    assertEquals(forA, number(retry, "keys"), retry);
    assertEquals(view, number(retry, "viewId"), retry);
    assertEquals(join.gained().size(), number(retry, "ranges"), retry);
  }

  /**
   * A leave whose peer began to stop before the LEAVING change was handled: its budget counts
   * from then. Here the budget is spent by the time the change is handled, so the hand-off and the
   * drain try their one page once each, and b (which refuses every hand-off) is asked twice.
   */
  @Test
  void aLeave_handledAfterThePeerBeganToStop_countsItsBudgetFromThen() throws Exception {
    List<Entry> held = start(Integer.MAX_VALUE);
    Duration budget = Duration.ofSeconds(2);
    Rebalancer rebalancer = rebalancerOfA(budget);
    rebalancer.stopping(System.nanoTime() - budget.toNanos() - 1); // more than the budget ago

    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThrows(Rebalancer.HandOffIncomplete.class,
        () -> rebalancer.onOwnershipChange(leavingOfA()), "an incomplete leave throws: the node must not say it handed off"));

    assertEquals(2, Integer.MAX_VALUE - aidsOfB.handoffsLeftToRefuse(), "one attempt each for the hand-off and the drain");
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.INCOMPLETE), rebalancer.leaveOutcome());
    assertEquals(KEYS, a.store().size());
    assertEquals(held.size(), KEYS);
  }

  /**
   * A refused peer's leave has half the budget (so that a LEAVING hand-off after it still fits):
   * with b refusing every push and a 3 s budget, its one pass gives up before its push's last
   * attempt, at 1.5 s, keeping the entries and saying so on System.out.
   */
  @Test
  void aRefusedPeersLeave_hasHalfTheBudget_andSaysWhatItKept() throws Exception {
    List<Entry> held = start(Integer.MAX_VALUE);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(3));

    String printed;
    try {
      printed = printed(() -> assertTimeoutPreemptively(Duration.ofSeconds(20),
          () -> rebalancer.leaveRefused(a.node().viewId())));
    } catch (Throwable t) {
      throw new AssertionError(t);
    }

    int refused = Integer.MAX_VALUE - aidsOfB.handoffsLeftToRefuse();
    assertTrue(refused >= 1 && refused < Transfers.ATTEMPTS, "pushes b refused: " + refused);
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.INCOMPLETE), rebalancer.leaveOutcome());
    assertEquals(held.size(), a.store().size());
    assertEquals(1, a.counters().migrationsFailed.sum());
    assertTrue(printed.contains("a: leave budget PT3S spent; still holding 5 entries"), printed);
  }

  @Test
  void aLeave_whoseOwnersKeepRefusing_endsWhenItsBudgetIsSpent_keepingItsData() throws Exception {
    List<Entry> held = start(Integer.MAX_VALUE);
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(1));

    // The hand-off's push tries again after 0.2, 0.4 and 0.6 s: its fourth attempt, 1.2 s in, is
    // past the budget, so it gives up there rather than make all Transfers.ATTEMPTS, and the drain
    // sends nothing. Without a budget the drain would pass again, half a second after each, for
    // ever; with one checked only between passes, each pass would make every attempt.
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThrows(Rebalancer.HandOffIncomplete.class,
        () -> rebalancer.onOwnershipChange(leavingOfA()), "an incomplete leave throws: the node must not say it handed off"));

    int refused = Integer.MAX_VALUE - aidsOfB.handoffsLeftToRefuse();
    assertTrue(refused >= 1 && refused < Transfers.ATTEMPTS, "pushes b refused: " + refused);
    for (Entry e : held) {
      assertEquals(Optional.of(e), a.store().get(e.key()), "a kept " + e.key());
      assertTrue(b.store().get(e.key()).isEmpty(), "b refused " + e.key());
    }
    assertEquals(0, a.counters().migrationsCompleted.sum());
    assertEquals(1, a.counters().migrationsFailed.sum());
  }
  /**
   * The last peer's leave: nobody to hand anything to. It keeps its entries (they leave with it),
   * moves none, says so, and the leave counts as done, not failed; no change is under way after it.
   */
  @Test
  void theLastPeersLeave_keepsItsEntries_andIsNoFailure() throws Exception {
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    putInA();

    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(5));
    rebalancer.onOwnershipChange(leavingOfA());

    assertEquals(Optional.of(Rebalancer.LeaveOutcome.LAST_PEER), rebalancer.leaveOutcome());
    assertEquals(KEYS, a.store().size());
    assertEquals(0, a.counters().keysMigratedOut.sum());
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsFailed.sum());
    assertEquals(-1, a.counters().migratingView.get(), "no change under way");
  }

  /**
   * A hand-off that throws (here, once its first page is acknowledged) does not keep the leave from
   * draining the rest: every entry reaches b; the failure is thrown at the end and the migration
   * counted as failed, though the drain completed.
   */
  @Test
  void aLeave_whoseHandOffThrows_stillDrainsEverything_andThrowsAtTheEnd() throws Exception {
    List<Entry> held = start(0);
    AtomicBoolean thrown = new AtomicBoolean();
    List<Long> viewsDuringThePush = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = page -> {
      viewsDuringThePush.add(a.counters().migratingView.get());
      if (thrown.compareAndSet(false, true)) {
        throw new IllegalStateException("a hand-off that fails half way");
      }
    };
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));
    OwnershipChange leaving = leavingOfA();

    IllegalStateException failed = assertThrows(IllegalStateException.class,
        () -> rebalancer.onOwnershipChange(leaving));

    assertEquals("a hand-off that fails half way", failed.getMessage());
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
    }
    assertEquals(0, a.store().size());
    assertEquals(0, a.counters().migrationsCompleted.sum());
    assertEquals(1, a.counters().migrationsFailed.sum());
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), rebalancer.leaveOutcome());
    assertTrue(viewsDuringThePush.stream().allMatch(v -> v == leaving.viewId()), "the change's view while it runs: "
        + viewsDuringThePush);
    assertEquals(-1, a.counters().migratingView.get(), "none after it");
  }
  /**
   * The leave of a peer the cluster refuses (another peer holds its id): its node delivers no
   * LEAVING change, so its close() drains what it holds to the owners, once, and says how it went;
   * its one pass is logged for the view it was refused in.
   */
  @Test
  void aRefusedPeersLeave_drainsWhatItHolds_once() throws Exception {
    List<Entry> held = start(Transfers.ATTEMPTS - 1); // taken at the last attempt: the drain has time for it
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));
    long view = a.node().viewId();

    rebalancer.leaveRefused(view);

    assertTrue(a.routing().isLeaving());
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.COMPLETE), rebalancer.leaveOutcome());
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()), "b took " + e.key());
    }
    assertEquals(0, a.store().size());
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(0, a.counters().migrationsInProgress.get());
    List<String> out = eventsOfA("migration");
    assertEquals(1, out.size(), "the drain's one pass: " + out);
    assertTrue(out.get(0).contains("\"direction\":\"out\"") && out.get(0).contains("\"reason\":\"drain\"")
        && out.get(0).contains("\"peers\":[\"b\"]") && out.get(0).contains("\"ok\":true"), out.get(0));
    assertEquals(view, number(out.get(0), "viewId"), out.get(0));
    assertEquals(held.size(), number(out.get(0), "keys"), out.get(0));
    putInA(1);
    rebalancer.leaveRefused(a.node().viewId());
    assertEquals(1, a.store().size(), "once: a second call drains nothing");
    assertEquals(1, a.counters().migrationsCompleted.sum());
    assertEquals(1, eventsOfA("migration").size(), "no second pass: " + eventsOfA("migration"));
  }
  /**
   * A push waits for a destination that does not serve requests yet (a peer that just joined, not
   * yet reported), asking until it does, and sends nothing before: here the destination serves
   * from the third time it is asked.
   */
  @Test
  void aPush_waitsForItsDestinationToServe_beforeSendingAPage() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = putInA();
    AtomicInteger asked = new AtomicInteger();
    List<Integer> askedAtReceipt = new CopyOnWriteArrayList<>();
    b.rpc().handle(Wire.OP_PUSH, in -> {
      askedAtReceipt.add(asked.get());
      return b.transfers().handlePush(in);
    });
    Transfers fromA = new Transfers(a.routing(), a.store(), a.rpc(), a.counters(), a.node()::viewId, () -> 0,
        id -> asked.incrementAndGet() >= 3, new EventLog(), TestingAids.fromSystemProperties(), a.pushes());

    assertTrue(fromA.pushTo("b", held, Wire.PushKind.MIGRATION, () -> false).isPresent());

    assertEquals(List.of(3), askedAtReceipt, "one page, sent once b served");
    for (Entry e : held) {
      assertEquals(Optional.of(e), b.store().get(e.key()));
    }
  }

  /**
   * A leave whose only other peer is leaving too (b refuses the hand-off as a leaving peer does):
   * nobody will take the data, so the drain ends at its first pass rather than resend it until the
   * budget is spent; a keeps every entry, says why on System.out, and the leave ends incomplete.
   */
  @Test
  void aLeave_whoseOtherPeersAreAllLeaving_keepsItsEntries_andSaysSo() throws Throwable {
    List<Entry> held = start(0);
    b.routing().startLeaving();
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));
    OwnershipChange leaving = leavingOfA();

    String note = printed(() -> assertThrows(Rebalancer.HandOffIncomplete.class, () -> rebalancer.onOwnershipChange(leaving)));

    assertTrue(note.contains("a: every other peer is leaving too; leaving with " + KEYS + " entries"), note);
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.INCOMPLETE), rebalancer.leaveOutcome());
    for (Entry e : held) {
      assertEquals(Optional.of(e), a.store().get(e.key()), "a kept " + e.key());
    }
    assertEquals(1, a.counters().migrationsFailed.sum());
  }

  /**
   * The last other peer leaves during a drain pass (here, once it took the pass's page): the pass
   * hands on to nobody after it, and the leave ends as the last peer's. One replica; a holds only a
   * key b owns, which no range a loses holds: its hand-off has nothing to push, its drain does.
   */
  @Test
  void aLeave_whoseLastOtherPeerLeavesDuringADrainPass_endsAsTheLastPeer() throws Exception {
    startAAndB(TestingAids.fromSystemProperties(), builder -> builder.replicas(1));
    HashRing both = a.node().ring();
    Entry stray = null;
    for (int i = 0; stray == null; i++) {
      Entry e = Entry.of("stray-" + i, "v", new Version(VersionClock.systemMicros(), "a"));
      stray = both.ownerOf(e.key()).id().equals("b") ? e : null;
    }
    a.store().merge(stray);
    AtomicBoolean closed = new AtomicBoolean();
    a.transfers().afterPage = page -> {
      if (closed.compareAndSet(false, true)) {
        b.close();
        peers.remove(b);
        await("a sees b gone").atMost(Duration.ofSeconds(20)).until(() -> a.routing().ring().isEmpty());
      }
    };
    Rebalancer rebalancer = rebalancerOfA(Duration.ofSeconds(15));

    rebalancer.onOwnershipChange(leavingOfA(1));

    assertTrue(closed.get(), "b took the drain's page, then left");
    assertEquals(Optional.of(Rebalancer.LeaveOutcome.LAST_PEER), rebalancer.leaveOutcome());
    List<String> out = eventsOfA("migration").stream().filter(json -> json.contains("\"reason\":\"drain\"")).toList();
    assertEquals(1, out.size(), "one pass: " + out);
    assertTrue(out.get(0).contains("\"peers\":[\"b\"]"), out.get(0));
  }

  /**
   * In a log in view order, a change's ownership event waits for the membership event of its view,
   * while a leave's is shown at once, with what its hand-off logs after it: the LEAVING change
   * repeats the id of the last view, which may have brought no membership event, and would
   * otherwise wait until the peer stopped.
   */
  @Test
  void ownershipEvents_waitForTheirViewsMembership_butNotALeaves() throws Exception {
    start(0);
    HashRing both = a.node().ring();
    long view = a.node().viewId();
    try (EventLog inViewOrder = EventLog.inViewOrder()) {
      Rebalancer rebalancer = new Rebalancer(a.routing(), a.store(), a.transfers(), retriesOfA(), a.counters(),
          inViewOrder, Duration.ofSeconds(15), a.pulls());
      rebalancer.onOwnershipChange(new OwnershipChange(OwnershipChange.Reason.VIEW, view, view, both, both,
          RingDiff.compute(both, both, "a", 2)));
      assertEquals(List.of(), ofType(inViewOrder, "ownership"), "kept back until its view's membership is in");
      inViewOrder.publishMembership(view, Map.of("type", "membership", "viewId", view));
      assertEquals(1, ofType(inViewOrder, "ownership").size(), "shown after it: " + inViewOrder.recent());

      try (EventLog leaveLog = EventLog.inViewOrder()) {
        Rebalancer leaving = new Rebalancer(a.routing(), a.store(), a.transfers(), retriesOfA(), a.counters(),
            leaveLog, Duration.ofSeconds(15), a.pulls());
        leaving.onOwnershipChange(leavingOfA());
        assertEquals(1, ofType(leaveLog, "ownership").size(), "no membership event of its view: " + leaveLog.recent());
        assertTrue(ofType(leaveLog, "migration").size() >= 1, "and its hand-off's after it: " + leaveLog.recent());
      }
    }
  }

  private static List<String> ofType(EventLog log, String type) {
    return log.recent().stream().filter(json -> json.contains("\"type\":\"" + type + "\"")).toList();
  }

  /** Entries big-0, big-1, ... of a's, two to a page, filling {@code pages} pages. */
  private static List<Entry> bigEntries(int pages) {
    List<Entry> entries = new ArrayList<>();
    String big = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    for (int i = 0; i < 2 * pages; i++) {
      entries.add(Entry.of("big-" + i, big + i, new Version(VersionClock.systemMicros(), "a")));
    }
    return entries;
  }
}
