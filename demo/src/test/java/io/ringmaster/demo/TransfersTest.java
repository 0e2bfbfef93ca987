package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.KeyRange;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
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

  private static byte[] pull(LongSupplier viewId, Counters counters, java.util.function.IntSupplier pending)
      throws Exception {
    return pull(viewId, counters, pending, (ranges, view) -> false);
  }

  private static byte[] pull(LongSupplier viewId, Counters counters, java.util.function.IntSupplier pending,
                             Transfers.Retrying retrying) throws Exception {
    Transfers transfers = new Transfers(null, store(), null, counters, viewId, pending, member -> true, null,
        TestingAids.fromSystemProperties());
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
        null, TestingAids.fromSystemProperties());
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
    List<Long> askedFor = new java.util.ArrayList<>();
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
}
