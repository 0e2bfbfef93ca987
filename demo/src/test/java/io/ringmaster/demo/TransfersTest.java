package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.TestThreads;
import io.ringmaster.ring.KeyRange;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * {@link Transfers#handlePull}: the source of a pull scans its store only once it routes by the
 * puller's view, so that no write it stores by an older ring escapes both the scan and forwarding.
 */
class TransfersTest {
  private static final List<KeyRange> WHOLE_CIRCLE = List.of(new KeyRange(0, 0));
  private static final long PULLERS_VIEW = 9;

  private static Store store() {
    Store store = new Store();
    for (int i = 0; i < 50; i++) {
      store.merge(Entry.of("k" + i, "v" + i, new Version(1, "p1")));
    }
    return store;
  }

  /** Only handlePull is called: it uses the store, the view id and the counters, nothing else. */
  private static byte[] pull(LongSupplier viewId) throws Exception {
    return pull(viewId, settled(), () -> 0);
  }

  /** Counters of a peer that has handled its first ownership change. */
  private static Counters settled() {
    Counters counters = new Counters();
    counters.settled.set(true);
    return counters;
  }

  private static byte[] pull(LongSupplier viewId, Counters counters, IntSupplier pending)
      throws Exception {
    return pull(viewId, counters, pending, (ranges, view) -> false);
  }

  private static byte[] pull(LongSupplier viewId, Counters counters, IntSupplier pending,
                             Transfers.Retrying retrying) throws Exception {
    Transfers transfers = new Transfers(null, store(), null, counters, viewId, pending, member -> true, null,
        TestingAids.fromSystemProperties(), null);
    transfers.retrying(retrying);
    byte[] request = Wire.pull(new Wire.PullRequest(PULLERS_VIEW, WHOLE_CIRCLE, Store.Cursor.START,
        Transfers.PAGE_BYTES));
    return transfers.handlePull(Wire.open(request, 0, request.length));
  }

  private static Store.Page page(byte[] reply) throws IOException {
    assertEquals(Wire.OK, reply[0], "an answer, not an error");
    return Wire.readPage(Wire.open(reply, 0, reply.length));
  }

  /** A puller asking for a bigger page gets PAGE_BYTES at most: what a slow one holds on a source's worker. */
  @Test
  void aPullAskingForMoreThanAPage_getsOnePageAtMost() throws Exception {
    Store big = new Store();
    String value = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    for (int i = 0; i < 20; i++) {
      big.merge(Entry.of("big" + i, value, new Version(1, "p1")));
    }
    Transfers transfers = new Transfers(null, big, null, settled(), () -> PULLERS_VIEW, () -> 0, member -> true,
        null, TestingAids.fromSystemProperties(), null);
    byte[] request = Wire.pull(new Wire.PullRequest(PULLERS_VIEW, WHOLE_CIRCLE, Store.Cursor.START,
        4 * Transfers.PAGE_BYTES));
    Store.Page page = page(transfers.handlePull(Wire.open(request, 0, request.length)));
    assertEquals(2, page.entries().size(), "one page's worth, not four");
    assertTrue(page.next().isPresent(), "the rest comes on the next request");
  }

  @Test
  void aSourceOnThePullersView_sendsTheRange() throws Exception {
    Store.Page page = page(pull(() -> PULLERS_VIEW));
    assertEquals(50, page.entries().size());
    assertTrue(page.next().isEmpty());
  }

  @Test
  void aSourceThatReachesTheViewWhileThePullWaits_sendsTheRange() throws Exception {
    AtomicInteger reads = new AtomicInteger();
    // The view arrives on the source's third look at it.
    Store.Page page = page(pull(() -> reads.incrementAndGet() < 3 ? PULLERS_VIEW - 1 : PULLERS_VIEW));
    assertEquals(50, page.entries().size());
    assertTrue(reads.get() >= 3);
  }

  @Test
  void aSourceStillOnAnOlderView_refusesNamingBothViews_insteadOfScanning() throws Exception {
    byte[] reply = pull(() -> PULLERS_VIEW - 2);
    assertEquals(Wire.ERROR, reply[0]);
    assertEquals("view 9 not installed here yet (this peer has view 7)",
        Wire.open(reply, 0, reply.length).readUTF());
  }

  /**
   * A source still handling an ownership change of an earlier view may still be receiving these
   * ranges: it refuses, and the puller asks again. A change of the puller's own view does not stop
   * it (two owners that gained ranges in one view pull from each other).
   */
  @Test
  void aSourceStillTakingInRanges_refuses_oneMovingDataForTheSameViewAnswers() throws Exception {
    Counters counters = settled();
    counters.migratingView.set(PULLERS_VIEW - 1);
    assertRefused("still moving data for view 8; ask again", pull(() -> PULLERS_VIEW, counters, () -> 1));

    counters.migratingView.set(PULLERS_VIEW);
    assertEquals(50, page(pull(() -> PULLERS_VIEW, counters, () -> 1)).entries().size());
    counters.migratingView.set(-1);
    assertEquals(50, page(pull(() -> PULLERS_VIEW, counters, () -> 0)).entries().size());
    // Between two changes: the next one is queued, not running yet.
    assertRefused("ownership changes queued here; ask again", pull(() -> PULLERS_VIEW, counters, () -> 1));
    // Before its first change is handled, a peer's ranges may be partial: a joiner, asked for them
    // after an owner crashed.
    assertRefused("still taking in its first ranges; ask again", pull(() -> PULLERS_VIEW, new Counters(), () -> 0));
  }

  /**
   * A source whose own pull of part of these ranges failed, for an earlier view, and is still to be
   * tried again: its copy may be short, and what its retry brings in later would never reach a
   * puller that counted the range as pulled. It refuses; once the retry is done, it answers.
   */
  @Test
  void aSourceStillPullingPartOfTheRangesAgain_refuses() throws Exception {
    List<Long> askedFor = new ArrayList<>();
    assertRefused("still pulling part of these ranges again, for an earlier view; ask again",
        pull(() -> PULLERS_VIEW, settled(), () -> 0, (ranges, view) -> askedFor.add(view)));
    assertEquals(List.of(PULLERS_VIEW), askedFor, "asked about the pull's ranges and view");
    assertEquals(50, page(pull(() -> PULLERS_VIEW, settled(), () -> 0, (ranges, view) -> false)).entries().size());
  }

  @Test
  void aRefusalAsLeaving_countsOnlyForThePeerThatIsLeaving_notForOneThatCalledIt() {
    String refusal = Transfers.leavingRefusal("x");
    assertTrue(Transfers.refusedAsLeaving(new Rpc.RemoteError("x", refusal), "x"));
    // y failed because x, which y forwarded to, is leaving: y is not.
    Throwable passedBack = new Rpc.RemoteError("y", new Rpc.RemoteError("x", refusal).toString());
    assertTrue(passedBack.getMessage().endsWith(refusal), passedBack.getMessage());
    assertFalse(Transfers.refusedAsLeaving(passedBack, "y"));
    assertFalse(Transfers.refusedAsLeaving(new IllegalStateException(refusal), "x"), "not a peer's answer");
  }

  /**
   * A leaving peer's refusal names it: "x is leaving". Another error from it, even an empty one, is
   * no refusal as leaving.
   */
  @Test
  void aLeavingPeersRefusal_namesIt_andNoOtherErrorOfItsCountsAsOne() {
    assertEquals("x is leaving", Transfers.leavingRefusal("x"));
    assertFalse(Transfers.refusedAsLeaving(new Rpc.RemoteError("x", ""), "x"));
    assertFalse(Transfers.refusedAsLeaving(new Rpc.RemoteError("x", "busy or stopping"), "x"));
  }

  /** A change of view 0 being handled is one still under way: a pull for a later view is refused. */
  @Test
  void aSourceMovingDataForViewZero_refusesAPullForALaterView() throws Exception {
    Counters counters = settled();
    counters.migratingView.set(0);
    assertRefused("still moving data for view 0; ask again", pull(() -> PULLERS_VIEW, counters, () -> 0));
  }

  private static void assertRefused(String reason, byte[] reply) throws IOException {
    assertEquals(Wire.ERROR, reply[0]);
    assertEquals(reason, Wire.open(reply, 0, reply.length).readUTF());
  }

  /** The testing aid's property: a value that is not a count fails the peer's start, naming both. */
  @Test
  void refusePullsProperty_notACount_isRefusedNamingPropertyAndValue() {
    keeping(TestingAids.REFUSE_PULLS, () -> {
      assertEachRefused(TestingAids.REFUSE_PULLS, "a whole number from 0", List.of("five", "-1", "", "2.5"),
          () -> TestingAids.count(TestingAids.REFUSE_PULLS));
      System.setProperty(TestingAids.REFUSE_PULLS, " 3 ");
      assertEquals(3, TestingAids.count(TestingAids.REFUSE_PULLS));
      System.clearProperty(TestingAids.REFUSE_PULLS);
      assertEquals(0, TestingAids.count(TestingAids.REFUSE_PULLS));
    });
  }

  /** The read-repair switch: true or false, nothing else. */
  @Test
  void noReadRepairProperty_notTrueOrFalse_isRefusedNamingPropertyAndValue() {
    keeping(TestingAids.NO_READ_REPAIR, () -> {
      assertEachRefused(TestingAids.NO_READ_REPAIR, "true or false", List.of("yes", "1", "", "TRUE"),
          TestingAids::fromSystemProperties);
      System.setProperty(TestingAids.NO_READ_REPAIR, " true");
      assertFalse(TestingAids.fromSystemProperties().readRepair());
      System.setProperty(TestingAids.NO_READ_REPAIR, "false");
      assertTrue(TestingAids.fromSystemProperties().readRepair());
      System.clearProperty(TestingAids.NO_READ_REPAIR);
      assertTrue(TestingAids.fromSystemProperties().readRepair());
    });
  }

  /** The clock offset: whole milliseconds, either way, within a day. */
  @Test
  void clockOffsetProperty_outsideADayOrNotANumber_isRefusedNamingPropertyAndValue() {
    keeping(TestingAids.CLOCK_OFFSET, () -> {
      assertEachRefused(TestingAids.CLOCK_OFFSET, "whole milliseconds within 86400000 either way",
          List.of("soon", "86400001", "-86400001", "1.5", Long.toString(Long.MIN_VALUE)), TestingAids::clockOffset);
      System.setProperty(TestingAids.CLOCK_OFFSET, "-60000");
      assertEquals(-60_000, TestingAids.clockOffset());
    });
  }

  /**
   * The hand-off's push threads: {@link Transfers#PARALLEL_PUSHES} unless set, else 1 to 16 (1 is
   * the sequential hand-off a benchmark measures the parallel one against).
   */
  @Test
  void pushThreadsProperty_outside1To16OrNotANumber_isRefusedNamingPropertyAndValue() {
    keeping(TestingAids.PUSH_THREADS, () -> {
      assertEachRefused(TestingAids.PUSH_THREADS, "a whole number from 1 to 16", List.of("0", "17", "-1", "four", ""),
          TestingAids::fromSystemProperties);
      System.setProperty(TestingAids.PUSH_THREADS, " 1 ");
      assertEquals(1, TestingAids.fromSystemProperties().pushThreads());
      System.setProperty(TestingAids.PUSH_THREADS, "16");
      assertEquals(16, TestingAids.fromSystemProperties().pushThreads());
      System.clearProperty(TestingAids.PUSH_THREADS);
      assertEquals(Transfers.PARALLEL_PUSHES, TestingAids.fromSystemProperties().pushThreads());
    });
  }

  /** The delay of each migration push page's answer: 0 unless set, else 0 to 1,000 ms (under a push's 2 s timeout). */
  @Test
  void pushPageDelayProperty_outside0To1000OrNotANumber_isRefusedNamingPropertyAndValue() {
    keeping(TestingAids.PUSH_PAGE_DELAY, () -> {
      assertEachRefused(TestingAids.PUSH_PAGE_DELAY, "a whole number from 0 to 1000", List.of("-1", "1001", "20ms", ""),
          TestingAids::fromSystemProperties);
      System.setProperty(TestingAids.PUSH_PAGE_DELAY, "1000");
      assertEquals(1_000, TestingAids.fromSystemProperties().pushPageDelayMillis());
      System.setProperty(TestingAids.PUSH_PAGE_DELAY, " 20");
      assertEquals(20, TestingAids.fromSystemProperties().pushPageDelayMillis());
      System.setProperty(TestingAids.PUSH_PAGE_DELAY, "0");
      assertEquals(0, TestingAids.fromSystemProperties().pushPageDelayMillis());
      System.clearProperty(TestingAids.PUSH_PAGE_DELAY);
      assertEquals(0, TestingAids.fromSystemProperties().pushPageDelayMillis());
    });
  }

  /** Each bad value of {@code property} makes {@code read} fail with a message naming the property, the rule and the value. */
  private static void assertEachRefused(String property, String rule, List<String> bad, Executable read) {
    for (String value : bad) {
      System.setProperty(property, value);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, read);
      assertEquals("system property " + property + " must be " + rule + ": \"" + value + "\"", e.getMessage());
    }
  }

  /** Runs {@code body}, then gives {@code property} back the value it had. */
  private static void keeping(String property, Runnable body) {
    KeptProperties.keeping(body, property);
  }

  // Pushes and pulls between peers (two InJvmPeers a and b, two replicas), and a peer taking pushes.

  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /** Starts a, and b with these aids, in one ring. */
  private void startAAndB(TestingAids forB) throws Exception {
    String cluster = InJvmPeer.clusterName("transfers");
    peers.add(a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties()));
    peers.add(b = InJvmPeer.start(cluster, "b", forB));
    InJvmPeer.awaitOneRing(peers);
  }

  private static Entry entry(String key, String value, long micros) {
    return Entry.of(key, value, new Version(micros, "a"));
  }

  /** Six entries of a's, two to a page: three pages. */
  private static List<Entry> threePages() {
    String big = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      entries.add(entry("big-" + i, big + i, VersionClock.systemMicros()));
    }
    return entries;
  }

  /**
   * A peer asked to hold back its answers to migration push pages holds back each page's: three
   * pages, each held, take at least three delays (a bound from below only: a held page is never
   * answered sooner). A sweep's pages are not held back.
   */
  @Test
  void aPeerHoldingBackMigrationPages_holdsEachOfThem_andNoSweepPage() throws Exception {
    long delay = 100;
    TestingAids forB = InJvmPeer.aidsWith(TestingAids.PUSH_PAGE_DELAY, Long.toString(delay));
    startAAndB(forB);
    List<Integer> pages = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = pages::add;

    long started = System.nanoTime();
    assertEquals(Set.of("b"), a.transfers().pushToEach(Map.of("b", threePages()), Wire.PushKind.MIGRATION,
        () -> false).keySet());
    long migrationMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertEquals(List.of(1, 2, 3), pages);
    assertEquals(3, forB.pushPagesHeld.get(), "each migration page's answer held back");
    assertTrue(migrationMillis >= 3 * delay, "three pages, each answered " + delay + " ms late: " + migrationMillis
        + " ms");

    assertEquals(Set.of("b"), a.transfers().pushToEach(Map.of("b", threePages()), Wire.PushKind.SWEEP,
        () -> false).keySet());
    assertEquals(3, forB.pushPagesHeld.get(), "no sweep page's answer held back");
  }

  /**
   * A push to an id not in the view fails at once, says so, and is not among those that took; b,
   * pushed the same entries, takes them through the process a sees under its id.
   */
  @Test
  void aPush_toAnIdNotInTheView_fails() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = List.of(entry("k1", "v1", 1), entry("k2", "v2", 1));

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Map.of(),
        a.transfers().pushToEach(Map.of("nobody", held), Wire.PushKind.MIGRATION, () -> false)));

    assertEquals(List.of("a: push of 2 entries to nobody failed: it is not in the view"),
        Logged.messages(logged, Level.WARNING));
    assertEquals(Map.of("b", a.routing().addressOf("b").orElseThrow()),
        a.transfers().pushToEach(Map.of("b", held), Wire.PushKind.MIGRATION, () -> false), "b takes them");
  }

  /**
   * Entries that fill a page exactly go in one page: two entries of half a page each, then a
   * third, make two pages, not three.
   */
  @Test
  void entriesThatFillAPageExactly_goInOnePage() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    int half = Transfers.PAGE_BYTES / 2;
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      String key = "e" + i;
      // weight: 32 + 3 a char of key, value and writer ("a")
      Entry e = entry(key, "x".repeat((half - 32) / 3 - key.length() - 1), VersionClock.systemMicros());
      assertEquals(half, e.weight(), "half a page");
      entries.add(e);
    }
    List<Integer> pages = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = pages::add;

    assertTrue(a.transfers().pushTo("b", entries, Wire.PushKind.MIGRATION, () -> false).isPresent());

    assertEquals(List.of(1, 2), pages);
    for (Entry e : entries) {
      assertEquals(Optional.of(e), b.store().get(e.key()));
    }
  }

  /**
   * A push whose second page b refuses, once out of time: given up before a second attempt,
   * naming the entries it had left to send (the second and third pages').
   */
  @Test
  void aPushOutOfTimeHalfWay_givesUp_namingTheEntriesLeft() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    AtomicInteger pushes = new AtomicInteger();
    b.rpc().handle(Wire.OP_PUSH, in -> pushes.incrementAndGet() == 1 ? b.transfers().handlePush(in)
        : Wire.error("refused by the test"));

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Optional.empty(),
        a.transfers().pushTo("b", threePages(), Wire.PushKind.MIGRATION, () -> true)));

    assertEquals(List.of("a: push of 4 entries to b given up: out of time"), Logged.messages(logged, Level.WARNING));
    assertEquals(2, pushes.get(), "the first page, and the second's first attempt");
  }

  /**
   * A push whose destination, still in the view, refuses every page gives up after
   * Transfers.ATTEMPTS tries of its first page, unacknowledged, naming that page's entries.
   */
  @Test
  void aPush_toAPeerThatKeepsRefusing_failsAfterItsAttempts() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    AtomicInteger pushes = new AtomicInteger();
    b.rpc().handle(Wire.OP_PUSH, in -> {
      pushes.incrementAndGet();
      return Wire.error("refused by the test");
    });

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Optional.empty(),
        a.transfers().pushTo("b", threePages(), Wire.PushKind.MIGRATION, () -> false)));

    assertEquals(Transfers.ATTEMPTS, pushes.get(), "the first page, once an attempt");
    List<String> warnings = Logged.messages(logged, Level.WARNING);
    assertEquals(1, warnings.size(), "" + warnings);
    assertTrue(warnings.get(0).startsWith("a: push of 2 entries to b failed: ")
        && warnings.get(0).endsWith("refused by the test"), warnings.get(0));
  }

  /** A push on a thread interrupted after its first page sends no more, naming what it did not send. */
  @Test
  void aPushInterruptedHalfWay_sendsNoMore_namingTheEntriesLeft() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Integer> pages = new CopyOnWriteArrayList<>();
    a.transfers().afterPage = page -> {
      pages.add(page);
      Thread.currentThread().interrupt();
    };
    Optional<Address> took;
    List<LogRecord> logged;
    try {
      List<Optional<Address>> result = new ArrayList<>();
      logged = Logged.by(Transfers.class,
          () -> result.add(a.transfers().pushTo("b", threePages(), Wire.PushKind.MIGRATION, () -> false)));
      took = result.get(0);
    } finally {
      assertTrue(Thread.interrupted(), "still interrupted");
    }

    assertEquals(Optional.empty(), took);
    assertEquals(List.of(1), pages);
    assertEquals(List.of("a: push of 4 entries to b not sent: interrupted"), Logged.messages(logged, Level.FINE));
  }

  /**
   * A push told to stop once its first page was acknowledged (a sweep whose ring changed) sends no
   * further page, not even once, ends unacknowledged and says so at DEBUG, naming the entries it
   * did not send; one told to stop before it starts (queued behind other pushes meanwhile) sends
   * nothing, and does not wait for its destination to serve (asked once, here where b never does,
   * rather than again and again for {@link Transfers#READY_WAIT}).
   */
  @Test
  void aPushStoppedHalfWay_sendsNoFurtherPage_namingTheEntriesLeft() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    AtomicInteger pushes = new AtomicInteger();
    b.rpc().handle(Wire.OP_PUSH, in -> {
      pushes.incrementAndGet();
      return b.transfers().handlePush(in);
    });
    AtomicBoolean stop = new AtomicBoolean();
    a.transfers().afterPage = page -> stop.set(true);
    List<Entry> entries = threePages();

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Optional.empty(),
        a.transfers().pushTo("b", entries, Wire.PushKind.SWEEP, () -> false, stop::get)));

    assertEquals(1, pushes.get(), "the first page only");
    assertEquals(List.of("a: push of 4 entries to b not sent: stopped"), Logged.messages(logged, Level.FINE));
    assertEquals(List.of(), Logged.messages(logged, Level.WARNING));
    assertEquals(2, b.store().size(), "b has the first page's two entries");

    AtomicInteger asked = new AtomicInteger();
    Transfers fromA = new Transfers(a.routing(), a.store(), a.rpc(), a.counters(), a.node()::viewId, () -> 0,
        id -> asked.incrementAndGet() < 0, new EventLog(), TestingAids.fromSystemProperties(), a.pushes());
    assertEquals(Optional.empty(), fromA.pushTo("b", entries, Wire.PushKind.SWEEP, () -> false, () -> true));
    assertEquals(1, pushes.get(), "no page sent");
    assertEquals(1, asked.get(), "asked once whether b serves");
  }

  /**
   * A push told to stop whose destination is no longer in the view (a sweep's, queued behind other
   * pushes while the ring changed with that destination's leave) ends as any stopped push does, at
   * DEBUG: no WARNING for a peer that left as it should.
   */
  @Test
  void aStoppedPush_toAnIdNoLongerInTheView_endsWithoutAWarning() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = List.of(entry("k1", "v1", 1), entry("k2", "v2", 1));

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Optional.empty(),
        a.transfers().pushTo("gone", held, Wire.PushKind.SWEEP, () -> false, () -> true)));

    assertEquals(List.of(), Logged.messages(logged, Level.WARNING));
    assertEquals(List.of("a: push of 2 entries to gone not sent: stopped"), Logged.messages(logged, Level.FINE));
  }

  /**
   * A push whose destination starts to leave after the first page: it refuses the second as
   * leaving, which is no fault (DEBUG, not WARNING), naming that page's entries.
   */
  @Test
  void aPushRefusedAsLeavingHalfWay_failsQuietly_namingThatPagesEntries() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    a.transfers().afterPage = page -> b.routing().startLeaving();

    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertEquals(Optional.empty(),
        a.transfers().pushTo("b", threePages(), Wire.PushKind.MIGRATION, () -> false)));

    assertEquals(List.of(), Logged.messages(logged, Level.WARNING));
    List<String> debug = Logged.messages(logged, Level.FINE);
    assertEquals(1, debug.size(), "" + debug);
    assertTrue(debug.get(0).startsWith("a: push of 2 entries to b failed: ") && debug.get(0).endsWith("b is leaving"),
        debug.get(0));
  }

  /**
   * A leaving peer's push refused by a peer that is leaving too is not tried again, and the pusher
   * learns of that leave: the writes it sends from then on name both, so that no owner forwards
   * them to either.
   */
  @Test
  void aPushRefusedByAPeerLeavingToo_isNotRetried_andTheLeaverIsNamedFromThenOn() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    AtomicInteger pushes = new AtomicInteger();
    b.rpc().handle(Wire.OP_PUSH, in -> {
      pushes.incrementAndGet();
      return b.transfers().handlePush(in);
    });
    a.routing().startLeaving();
    b.routing().startLeaving();
    assertEquals(Set.of("a"), a.routing().leavers().processes().keySet(), "a names only itself");

    assertEquals(Map.of(), a.transfers().pushToEach(Map.of("b", List.of(entry("k1", "v1", 1))),
        Wire.PushKind.MIGRATION, () -> false));

    assertEquals(1, pushes.get(), "asked once");
    assertEquals(Set.of("a", "b"), a.routing().leavers().processes().keySet());
  }

  /**
   * A push waiting for its answer when the pushing peer closes its RPC (the last step of its stop)
   * ends unacknowledged, without throwing at its caller (a hand-off, a sweep): the call fails as
   * JGroups fails the requests of a dispatcher it stops, and the pages after it are not sent.
   */
  @Test
  void aPushWaitingForItsAnswer_whenThePeersRpcCloses_endsUnacknowledged_withoutThrowing() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    CountDownLatch asked = new CountDownLatch(1);
    b.rpc().handleQuickly(Wire.OP_PUSH, in -> {
      asked.countDown();
      return new CompletableFuture<>(); // never answered
    });
    CompletableFuture<Optional<Address>> push = CompletableFuture.supplyAsync(
        () -> a.transfers().pushTo("b", threePages(), Wire.PushKind.MIGRATION, () -> false), TestThreads.ON_OWN_THREAD);
    assertTrue(asked.await(20, TimeUnit.SECONDS), "b was sent the first page");

    List<LogRecord> logged = Logged.by(Transfers.class, () -> {
      a.rpc().close();
      assertEquals(Optional.empty(), push.get(30, TimeUnit.SECONDS));
    });

    List<String> warnings = Logged.messages(logged, Level.WARNING);
    assertEquals(1, warnings.size(), "" + warnings);
    assertTrue(warnings.get(0).startsWith("a: push of 2 entries to b failed: java.lang.IllegalStateException: "),
        warnings.get(0));
  }

  /**
   * Once the peer stopped its push threads, a push is made on the calling thread: interrupted while
   * it waits for b's answer (the peer stopping its sweeps), it ends unacknowledged, and the call
   * returns with its interrupt kept.
   */
  @Test
  void aPushOnTheCallingThread_interruptedWhileItWaits_endsUnacknowledged_keepingTheInterrupt() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    CountDownLatch asked = new CountDownLatch(1);
    b.rpc().handleQuickly(Wire.OP_PUSH, in -> {
      asked.countDown();
      return new CompletableFuture<>(); // never answered
    });
    a.pushes().shutdownNow();
    Interrupting.Ended<Map<String, Address>> took = Interrupting.whileWaiting("sweep",
        () -> a.transfers().pushToEach(Map.of("b", threePages()), Wire.PushKind.SWEEP, () -> false), asked,
        "b was sent the first page", Transfers.PUSH_TIMEOUT.multipliedBy(2));
    assertEquals(Map.of(), took.result(), "no push was acknowledged");
    assertTrue(took.stillInterrupted(), "the call returns with its interrupt");
  }

  /**
   * The owners of each owner list some of whose entries were dropped are told, once per list, and
   * only those the list names (c, which took entries of another list, is not told of b's); a list
   * none of whose entries were dropped is not told of.
   */
  @Test
  void dropHandedOff_tellsTheOwnersOfEachListWithEntriesDropped() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = List.of(entry("k1", "v1", 1), entry("k2", "v2", 1));
    held.forEach(a.store()::merge);
    a.routing().startLeaving(); // a routes by the ring without it: b owns every key
    Address took = a.transfers().pushTo("b", held, Wire.PushKind.MIGRATION, () -> false).orElseThrow();
    Map<List<String>, List<Entry>> byOwners = new LinkedHashMap<>();
    byOwners.put(List.of("b"), held);
    byOwners.put(List.of("b", "c"), List.of()); // nothing of it dropped
    // c took entries of other owner lists only (the process it took them through does not matter here)
    Map<String, Address> tookSomething = Map.of("b", took, "c", a.routing().addressOf("a").orElseThrow());
    List<Set<String>> told = new ArrayList<>();

    assertEquals(2, a.transfers().dropHandedOff(byOwners, tookSomething, dropped -> told.add(Set.copyOf(dropped))));

    assertEquals(List.of(Set.of("b")), told);
    assertEquals(0, a.store().size());
  }

  /**
   * A key this peer owns is never dropped, not even when every owner, this peer included, is said
   * to have taken it: here a key a owns first, and one it owns second.
   */
  @Test
  void dropHandedOff_keepsWhatThisPeerOwns_evenIfEveryOwnerTookIt() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    List<Entry> held = new ArrayList<>();
    for (String first : List.of("a", "b")) {
      String key = null;
      for (int i = 0; key == null; i++) {
        if (a.routing().owners("key-" + i).get(0).equals(first)) {
          key = "key-" + i;
        }
      }
      held.add(entry(key, "v", 1));
    }
    held.forEach(a.store()::merge);
    Map<String, Address> everyOwner = Map.of("a", a.routing().addressOf("a").orElseThrow(),
        "b", a.routing().addressOf("b").orElseThrow());

    assertEquals(0, a.transfers().dropHandedOff(held, everyOwner));

    assertEquals(2, a.store().size());
  }

  /**
   * A pull from a source that keeps refusing gives up after Transfers.ATTEMPTS asks, incomplete,
   * and says why; it asks again only after a back-off that grows with each attempt (200 ms times
   * the attempt's number), giving a source that just joined time to serve.
   */
  @Test
  void aPull_fromASourceThatKeepsRefusing_endsIncompleteAfterItsAttempts() throws Exception {
    startAAndB(InJvmPeer.aidsWith(TestingAids.REFUSE_PULLS, String.valueOf(Integer.MAX_VALUE)));
    b.counters().settled.set(true);
    List<Long> askedAt = new CopyOnWriteArrayList<>();
    b.rpc().handle(Wire.OP_PULL, in -> {
      askedAt.add(System.nanoTime());
      return b.transfers().handlePull(in);
    });

    List<Transfers.Pulled> pulled = new ArrayList<>();
    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> pulled.add(a.transfers().pull("b", WHOLE_CIRCLE, a.node().viewId()))));

    assertEquals(List.of(new Transfers.Pulled(0, false)), pulled);
    assertEquals(Transfers.ATTEMPTS, askedAt.size(), "asked once an attempt");
    long backOffs = 0;
    for (int attempt = 1; attempt < Transfers.ATTEMPTS; attempt++) {
      backOffs += 200L * attempt;
    }
    // A bound from below, at half the back-offs: a request may take longer to reach b than another
    // does on a loaded machine, which can only shorten the span; no back-off at all, or one that
    // shrinks, asks all within a fraction of it.
    long spanMillis = TimeUnit.NANOSECONDS.toMillis(askedAt.get(askedAt.size() - 1) - askedAt.get(0));
    assertTrue(spanMillis >= backOffs / 2, "asked again only after each back-off: " + spanMillis + " ms");
    List<String> warnings = Logged.messages(logged, Level.WARNING);
    assertEquals(1, warnings.size(), "" + warnings);
    assertTrue(warnings.get(0).startsWith("a: pull of 1 ranges from b failed: ")
        && warnings.get(0).contains(TestingAids.REFUSE_PULLS), warnings.get(0));
  }

  /**
   * A source whose pages do not move the scan on (each ends where the pull asked from) would be
   * asked for the same page for good: the pull merges that page, ends incomplete after it, and
   * says why.
   */
  @Test
  void aPull_fromASourceWhosePageDoesNotMoveOn_endsIncomplete_sayingWhy() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    Entry stuck = entry("k1", "v1", 1);
    List<Store.Cursor> askedFrom = new CopyOnWriteArrayList<>();
    b.rpc().handleQuickly(Wire.OP_PULL, in -> {
      Store.Cursor from = Wire.readPull(in).cursor();
      askedFrom.add(from);
      return CompletableFuture.completedFuture(Wire.page(new Store.Page(List.of(stuck), Optional.of(from))));
    });

    List<Transfers.Pulled> pulled = new ArrayList<>();
    List<LogRecord> logged = Logged.by(Transfers.class, () -> assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> pulled.add(a.transfers().pull("b", WHOLE_CIRCLE, a.node().viewId()))));

    assertEquals(List.of(new Transfers.Pulled(1, false)), pulled, "the page merged, the pull incomplete");
    assertEquals(List.of(Store.Cursor.START), askedFrom, "asked once");
    assertEquals(Optional.of(stuck), a.store().get("k1"));
    assertEquals(List.of("a: pull of 1 ranges from b failed: its page ends at " + Store.Cursor.START + ", not past "
        + Store.Cursor.START), Logged.messages(logged, Level.WARNING));
  }

  /** A pull told to stop asks nothing, and says so. */
  @Test
  void aPull_toldToStop_endsIncomplete_sayingSo() throws Exception {
    startAAndB(TestingAids.fromSystemProperties());
    b.store().merge(entry("k1", "v1", 1));
    b.counters().settled.set(true);

    List<Transfers.Pulled> pulled = new ArrayList<>();
    List<LogRecord> logged = Logged.by(Transfers.class,
        () -> pulled.add(a.transfers().pull("b", WHOLE_CIRCLE, a.node().viewId(), () -> true)));

    assertEquals(List.of(new Transfers.Pulled(0, false)), pulled);
    assertEquals(List.of("a: pull of 1 ranges from b ended: this peer is stopping"), Logged.messages(logged, Level.INFO));
    assertTrue(a.store().get("k1").isEmpty());
  }

  /** One peer alone in its ring, taking pushes through a Transfers with these aids, counters and events. */
  private Transfers pushedTo(TestingAids aids, Counters counters, EventLog events) throws Exception {
    peers.add(a = InJvmPeer.start(InJvmPeer.clusterName("transfers"), "a", TestingAids.fromSystemProperties()));
    InJvmPeer.awaitOneRing(peers);
    return new Transfers(a.routing(), a.store(), a.rpc(), counters, a.node()::viewId, () -> 0, id -> true, events,
        aids, a.pushes());
  }

  private static byte[] push(Transfers to, Wire.PushKind kind, String from, List<Entry> entries) throws Exception {
    byte[] request = Wire.push(new Wire.PushRequest(kind, from, entries));
    return to.handlePush(Wire.open(request, 0, request.length));
  }

  private static int changed(byte[] reply) throws IOException {
    assertEquals(Wire.OK, reply[0], "an answer, not an error");
    return Wire.open(reply, 0, reply.length).readInt();
  }

  /**
   * A push taken answers how many entries changed the store; a hand-off's count in keysMigratedIn
   * (a sweep's not), and each that changed something is reported (what it brought, of how many).
   * Repairs refused by the aid are refused; hand-offs from the same sender are not.
   */
  @Test
  void aPushTaken_countsAndReportsWhatItChanged() throws Exception {
    Counters counters = new Counters();
    EventLog events = new EventLog();
    Transfers to = pushedTo(InJvmPeer.aidsWith(TestingAids.REFUSE_REPAIRS, "1"), counters, events);

    assertEquals(3, changed(push(to, Wire.PushKind.MIGRATION, "x",
        List.of(entry("k1", "v", 1), entry("k2", "v", 1), entry("k3", "v", 1)))));
    assertEquals(3, counters.keysMigratedIn.sum());
    List<Entry> oneNewer = List.of(entry("k1", "v", 1), entry("k2", "v", 1), entry("k3", "w", 2));
    assertEquals(1, changed(push(to, Wire.PushKind.MIGRATION, "x", oneNewer)));
    assertEquals(4, counters.keysMigratedIn.sum());
    assertEquals(0, changed(push(to, Wire.PushKind.MIGRATION, "x", oneNewer)), "nothing new");
    assertEquals(2, changed(push(to, Wire.PushKind.SWEEP, "x", List.of(entry("k4", "v", 1), entry("k5", "v", 1)))));
    assertEquals(4, counters.keysMigratedIn.sum(), "a sweep is no migration");
    assertRefused("repair push refused (" + TestingAids.REFUSE_REPAIRS + ")",
        push(to, Wire.PushKind.REPAIR, "x", List.of(entry("k6", "v", 1))));

    assertEquals(List.of("received migration x 3 3", "received migration x 1 3", "received sweep x 2 2"),
        events.recent().stream().map(TransfersTest::received).toList());
    assertTrue(a.store().get("k6").isEmpty(), "the refused repair merged nothing");
  }

  /**
   * A hand-off push merged and then refused (here by a leaving peer; also by one the cluster
   * refuses) still counts and reports what it changed: those entries are here, and this peer's
   * leave (counted as migrated out) or sweep hands them on. A retry of the same push adds nothing.
   */
  @Test
  void aHandOffMergedThenRefused_countsAndReportsWhatItChanged_andItsRetryNothingMore() throws Exception {
    Counters counters = new Counters();
    EventLog events = new EventLog();
    Transfers to = pushedTo(TestingAids.fromSystemProperties(), counters, events);
    List<Entry> two = List.of(entry("k1", "v", 1), entry("k2", "v", 1));

    a.routing().startLeaving();
    assertRefused(Transfers.leavingRefusal("a"), push(to, Wire.PushKind.MIGRATION, "x", two));
    assertTrue(a.store().get("k1").isPresent() && a.store().get("k2").isPresent(), "merged before the refusal");
    assertEquals(2, counters.keysMigratedIn.sum());
    assertRefused(Transfers.leavingRefusal("a"), push(to, Wire.PushKind.MIGRATION, "x", two));
    assertEquals(2, counters.keysMigratedIn.sum(), "the retry brought nothing new");
    assertEquals(List.of("received migration x 2 2"), events.recent().stream().map(TransfersTest::received).toList());
  }

  /** A hand-off push refused by the aid says so, and merges nothing; the next is taken. */
  @Test
  void aHandOffRefusedByTheAid_namesIt_andMergesNothing() throws Exception {
    Transfers to = pushedTo(InJvmPeer.aidsWith(TestingAids.REFUSE_HANDOFFS, "1"), new Counters(), new EventLog());
    List<Entry> one = List.of(entry("k1", "v", 1));

    assertRefused("migration push refused (" + TestingAids.REFUSE_HANDOFFS + ")",
        push(to, Wire.PushKind.MIGRATION, "x", one));
    assertTrue(a.store().get("k1").isEmpty());
    assertEquals(1, changed(push(to, Wire.PushKind.MIGRATION, "x", one)), "the next is taken");
  }

  /** A received event as "type kind from keys entries". */
  private static String received(String json) {
    return field(json, "type") + " " + field(json, "kind") + " " + field(json, "from") + " " + field(json, "keys")
        + " " + field(json, "entries");
  }

  private static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":\"?([^\",}]*)").matcher(json);
    assertTrue(m.find(), name + " in " + json);
    return m.group(1);
  }
}
