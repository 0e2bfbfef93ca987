package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.TestThreads;
import io.ringmaster.ring.KeyRange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link PullRetries}: when a failed pull is tried again, with what, and when it is dropped. */
class PullRetriesTest {
  private static final KeyRange FIRST = new KeyRange(0, 100);
  private static final KeyRange SECOND = new KeyRange(100, 200);
  private static final long VIEW = 7;

  private final AtomicLong clock = new AtomicLong(1_000);
  private final Set<String> live = new HashSet<>(Set.of("peer-1"));
  private final Set<KeyRange> owned = new HashSet<>(Set.of(FIRST, SECOND));
  private final AtomicBoolean leaving = new AtomicBoolean();
  /** Each pull, as "source ranges view"; the first {@link #failing} of them fail half way. */
  private final List<String> pulls = new ArrayList<>();
  private int failing;
  private final EventLog events = new EventLog();
  private PullRetries retries;

  @BeforeEach
  void setUp() {
    retries = new PullRetries((source, ranges, view) -> {
      pulls.add(source + " " + ranges + " " + view);
      return pulls.size() <= failing ? new Transfers.Pulled(1, false) : new Transfers.Pulled(10, true);
    }, live::contains, owned::contains, leaving::get, clock::get, events);
  }

  private void advance(Duration d) {
    clock.addAndGet(d.toNanos());
  }

  @Test
  void aFailedPull_isTriedAgainAfter2Then4Seconds_untilItCompletes() {
    failing = 1;
    retries.failed("peer-1", List.of(FIRST, SECOND), VIEW);
    advance(Duration.ofMillis(1_999));
    assertEquals(0, retries.runDue(), "not due yet");
    assertEquals(List.of(), pulls);

    advance(Duration.ofMillis(1));
    assertEquals(1, retries.runDue(), "the entries the failed retry merged before it failed");
    assertEquals(1, retries.pending());
    advance(Duration.ofMillis(3_999));
    assertEquals(0, retries.runDue());
    advance(Duration.ofMillis(1));
    assertEquals(10, retries.runDue());
    assertEquals(0, retries.pending(), "done");
    String pull = "peer-1 " + List.of(FIRST, SECOND) + " " + VIEW;
    assertEquals(List.of(pull, pull), pulls);
  }

  /** However many rounds failed, the delay stays a minute: it never overflows into a negative one. */
  @Test
  void theDelay_staysAMinute_afterAnyNumberOfFailures() {
    for (int failures : new int[] {7, 34, 64, 1000, Integer.MAX_VALUE}) {
      assertEquals(PullRetries.MAX_DELAY.toNanos(), PullRetries.delayAfter(failures), "after " + failures);
    }
  }

  @Test
  void theDelayDoubles_upToAMinute() {
    failing = Integer.MAX_VALUE;
    retries.failed("peer-1", List.of(FIRST), VIEW);
    List<Long> waited = new ArrayList<>();
    for (int round = 0; round < 8; round++) {
      long seconds = 0;
      while (pulls.size() == round) {
        advance(Duration.ofSeconds(1));
        seconds++;
        retries.runDue();
      }
      waited.add(seconds);
    }
    assertEquals(List.of(2L, 4L, 8L, 16L, 32L, 60L, 60L, 60L), waited);
  }

  @Test
  void onlyTheRangesStillOwnedArePulled_andARetryWithNoneIsDropped() {
    failing = 1;
    retries.failed("peer-1", List.of(FIRST, SECOND), VIEW);
    owned.remove(FIRST);
    advance(PullRetries.FIRST_DELAY);
    retries.runDue();
    assertEquals(List.of("peer-1 " + List.of(SECOND) + " " + VIEW), pulls);

    owned.remove(SECOND);
    advance(PullRetries.MAX_DELAY);
    assertEquals(0, retries.runDue());
    assertEquals(1, pulls.size(), "nothing left to pull");
    assertEquals(0, retries.pending());
  }

  /**
   * While a retry of a view waits or runs, a pull of overlapping ranges for a later view is told to
   * wait (this peer's copy may be short); ranges beside it, the same view, and a retry done are not.
   */
  @Test
  void pulling_answersForOverlappingRangesOfLaterViews_whileARetryWaitsOrRuns() {
    List<Boolean> duringThePull = new ArrayList<>();
    retries = new PullRetries((source, ranges, view) -> {
      duringThePull.add(retries.pulling(List.of(new KeyRange(50, 60)), VIEW + 1));
      return new Transfers.Pulled(0, true);
    }, live::contains, owned::contains, leaving::get, clock::get, new EventLog());
    retries.failed("peer-1", List.of(FIRST), VIEW);
    assertEquals(true, retries.pulling(List.of(new KeyRange(50, 60)), VIEW + 1), "inside FIRST");
    assertEquals(true, retries.pulling(List.of(SECOND, new KeyRange(-10, 1)), VIEW + 1), "across FIRST's start");
    assertEquals(false, retries.pulling(List.of(SECOND), VIEW + 1), "beside FIRST: (100, 200] against (0, 100]");
    assertEquals(false, retries.pulling(List.of(FIRST), VIEW), "a pull for the retry's own view");
    advance(PullRetries.FIRST_DELAY);
    retries.runDue();
    assertEquals(List.of(true), duringThePull, "while the retry runs");
    assertEquals(false, retries.pulling(List.of(FIRST), VIEW + 1), "the retry is done");
  }

  /**
   * A write at this peer reads the retries' sources on a JGroups thread: it does not wait while a
   * pull's check of the retries asks about their ranges (here, a question that does not return
   * until the write has its answer), nor does a count of the retries.
   */
  @Test
  void sourcesFor_andPending_doNotWaitForAPullsCheckOfTheRetries() throws Exception {
    CountDownLatch asking = new CountDownLatch(1);
    CountDownLatch answered = new CountDownLatch(1);
    retries = new PullRetries((source, ranges, view) -> new Transfers.Pulled(0, true), live::contains, range -> {
      asking.countDown();
      try {
        return answered.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }, leaving::get, clock::get, new EventLog());
    retries.failed("peer-1", List.of(FIRST), VIEW);
    // A thread per task, not the common pool: on 2 cores it has one thread (Java 25 uses it even
    // then), and the check would hold it until the write, queued behind, had its answer.
    Executor ownThread = TestThreads.ON_OWN_THREAD;
    CompletableFuture<Boolean> check =
        CompletableFuture.supplyAsync(() -> retries.pulling(List.of(FIRST), VIEW + 1), ownThread);
    try {
      assertEquals(true, asking.await(30, TimeUnit.SECONDS), "the pull's check runs");
      CompletableFuture<List<String>> write =
          CompletableFuture.supplyAsync(() -> retries.sourcesFor(50), ownThread);
      assertEquals(List.of("peer-1"), write.get(30, TimeUnit.SECONDS));
      assertEquals(1, CompletableFuture.supplyAsync(retries::pending, ownThread)
          .get(30, TimeUnit.SECONDS));
      assertEquals(List.of(), retries.sourcesFor(150), "outside the retry's range");
    } finally {
      answered.countDown();
    }
    assertEquals(true, check.get(30, TimeUnit.SECONDS));
  }

  /** A retry that will not pull (dropped when it comes due) makes no later pull wait. */
  @Test
  void pulling_ignoresRetriesThatWillNotPull() {
    retries.failed("peer-1", List.of(FIRST), VIEW);
    assertEquals(true, retries.pulling(List.of(FIRST), VIEW + 1));
    live.remove("peer-1");
    assertEquals(false, retries.pulling(List.of(FIRST), VIEW + 1), "its source left the ring");
    live.add("peer-1");
    owned.remove(FIRST);
    assertEquals(false, retries.pulling(List.of(FIRST), VIEW + 1), "the range is no longer this peer's");
    owned.add(FIRST);
    leaving.set(true);
    assertEquals(false, retries.pulling(List.of(FIRST), VIEW + 1), "this peer is leaving");
  }

  /** A pull that throws, even an Error, is tried again later, like one that failed; none stays "running". */
  @Test
  void aRetryThatThrows_isScheduledAgain_andNoRetryStaysRunning() {
    retries = new PullRetries((source, ranges, view) -> {
      throw new IllegalStateException("a bug, on purpose");
    }, live::contains, owned::contains, leaving::get, clock::get, new EventLog());
    retries.failed("peer-1", List.of(FIRST), VIEW);
    advance(PullRetries.FIRST_DELAY);
    assertEquals(0, retries.runDue());
    assertEquals(1, retries.pending(), "scheduled again");
    assertEquals(true, retries.pulling(List.of(FIRST), VIEW + 1), "waiting again");

    retries = new PullRetries((source, ranges, view) -> {
      if (source.equals("peer-1")) {
        throw new AssertionError("an Error, on purpose");
      }
      return new Transfers.Pulled(5, true);
    }, live::contains, owned::contains, leaving::get, clock::get, new EventLog());
    live.add("peer-3");
    retries.failed("peer-1", List.of(FIRST), VIEW);
    retries.failed("peer-3", List.of(SECOND), VIEW);
    advance(PullRetries.FIRST_DELAY);
    List<LogRecord> logged = Logged.by(PullRetries.class, () ->
        assertEquals(5, retries.runDue(), "not thrown on: the other retry still runs, and what it changed counts"));
    assertEquals(List.of("pull retry from peer-1 failed"), logged.stream()
        .filter(r -> r.getLevel() == Level.SEVERE).map(LogRecord::getMessage).toList(),
        "logged here at ERROR, naming its source");
    assertEquals(1, retries.pending(), "the one that threw scheduled again");
    assertEquals(true, retries.pulling(List.of(FIRST), VIEW + 1), "waiting again, as any failed retry");
  }

  /** A retry that completes says so at INFO: how many ranges, from whom, after how many failed rounds. */
  @Test
  void aRetryThatCompletes_saysSoAtInfo_withTheFailedRounds() {
    failing = 1; // the first retry fails too: two failed rounds, the pull's own and that retry
    retries.failed("peer-1", List.of(FIRST, SECOND), VIEW);
    List<LogRecord> logged = Logged.by(PullRetries.class, () -> {
      advance(PullRetries.FIRST_DELAY);
      retries.runDue();
      advance(Duration.ofNanos(PullRetries.delayAfter(2)));
      assertEquals(10, retries.runDue());
    });
    assertEquals(List.of("pull of 2 ranges from peer-1 done after 2 failed rounds"),
        Logged.messages(logged, Level.INFO));
  }

  /**
   * Each round that pulls is logged as a migration in for reason "retry", with what it brought in
   * and whether it completed, for the failed pull's view and from its source; a retry dropped
   * without pulling is not.
   */
  @Test
  void eachRoundThatPulls_isLogged_withItsKeysAndWhetherItCompleted() {
    failing = 1;
    retries.failed("peer-1", List.of(FIRST, SECOND), VIEW);
    retries.failed("peer-2", List.of(SECOND), VIEW); // not in the ring: dropped
    advance(PullRetries.FIRST_DELAY);
    retries.runDue();
    advance(Duration.ofNanos(PullRetries.delayAfter(2)));
    retries.runDue();

    List<String> logged = events.recent().stream()
        .map(json -> json.replaceAll("\"time\":[0-9]+,", "").replaceAll("\"millis\":[0-9]+,", "")).toList();
    String round = "{\"type\":\"migration\",\"direction\":\"in\",\"reason\":\"retry\",\"viewId\":" + VIEW + ",";
    assertEquals(List.of(round + "\"keys\":1,\"ranges\":2,\"peers\":[\"peer-1\"],\"ok\":false}",
        round + "\"keys\":10,\"ranges\":2,\"peers\":[\"peer-1\"],\"ok\":true}"), logged);
  }

  @Test
  void aRetryIsDropped_whenItsSourceLeftTheRing_orThisPeerIsLeaving() {
    retries.failed("peer-1", List.of(FIRST), VIEW);
    retries.failed("peer-2", List.of(SECOND), VIEW); // not in the ring
    advance(PullRetries.FIRST_DELAY);
    leaving.set(true);
    assertEquals(0, retries.runDue());
    assertEquals(List.of(), pulls);
    assertEquals(0, retries.pending());

    leaving.set(false);
    retries.failed("peer-2", List.of(SECOND), VIEW);
    retries.failed("peer-1", List.of(FIRST), VIEW);
    advance(PullRetries.FIRST_DELAY);
    assertEquals(10, retries.runDue());
    assertEquals(List.of("peer-1 " + List.of(FIRST) + " " + VIEW), pulls, "only the source in the ring");
  }

  /**
   * A round's event gives how long its pull took, in milliseconds of the real clock (a pull is
   * timed as it runs, not by the clock that says when a retry is due): here a pull of at least
   * 5 ms, within the time the round took.
   */
  @Test
  void aRoundsEvent_givesHowLongItsPullTook() {
    PullRetries timed = new PullRetries((source, ranges, view) -> {
      long started = System.nanoTime();
      while (System.nanoTime() - started < 5_000_000) {
        Thread.onSpinWait(); // a pull that takes 5 ms of the real clock
      }
      return new Transfers.Pulled(10, true);
    }, live::contains, owned::contains, leaving::get, clock::get, events);
    timed.failed("peer-1", List.of(FIRST), VIEW);
    advance(PullRetries.FIRST_DELAY);
    long before = System.nanoTime();
    assertEquals(10, timed.runDue());
    long roundMillis = (System.nanoTime() - before) / 1_000_000;

    assertEquals(1, events.recent().size(), events.recent()::toString);
    Matcher millis = Pattern.compile("\"millis\":(-?[0-9]+),").matcher(events.recent().get(0));
    assertTrue(millis.find(), events.recent().get(0));
    long logged = Long.parseLong(millis.group(1));
    assertTrue(logged >= 5 && logged <= roundMillis, logged + " ms logged, the round took " + roundMillis + " ms");
  }
}
