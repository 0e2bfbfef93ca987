package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jgroups.Address;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@link ViewThreadWatch} on a clock of its own: when a held view thread is said, how often, and
 * what starts its count over. ClusterAgreementTest holds a real node's view thread for the same
 * lines; here each rule is checked alone, without waiting ten seconds.
 */
class ViewThreadWatchTest {
  private static final String NODE = "watched-node";
  private static final long HELD = ViewThreadWatch.HELD_AFTER.toNanos();
  private static final Address CREATOR = UUID.randomUUID();

  private static View view(long id) {
    return new View(new ViewId(CREATOR, id), List.of(CREATOR));
  }

  private static NodeLog log() {
    return new NodeLog(r -> r.getParameters() != null && r.getParameters().length > 0
        && NODE.equals(r.getParameters()[0]));
  }

  @Test
  void check_viewAheadForHeldAfter_saysWarningOnce_andCatchingUpAtInfoOnce() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      long t = 1_000;
      watch.check(view(7), CREATOR, view(5), false, t);
      watch.check(view(7), CREATOR, view(5), false, t + HELD - 1);
      assertEquals(List.of(), log.levels(), "ahead for just under " + ViewThreadWatch.HELD_AFTER);
      watch.check(view(8), CREATOR, view(5), false, t + HELD + TimeUnit.SECONDS.toNanos(2));
      watch.check(view(9), CREATOR, view(6), false, t + 2 * HELD);
      assertEquals(List.of(Level.WARNING), log.levels(), "said once, not at every round");
      LogRecord held = log.records().get(0);
      assertEquals(view(8).getViewId(), held.getParameters()[1], "the channel's view");
      assertEquals(Long.toString(TimeUnit.NANOSECONDS.toSeconds(HELD) + 2), held.getParameters()[2],
          "seconds since it was first seen ahead");
      assertEquals("5", held.getParameters()[3], "the ring's view");

      watch.check(view(9), CREATOR, view(9), false, t + 3 * HELD);
      watch.check(view(10), CREATOR, view(10), false, t + 4 * HELD);
      assertEquals(List.of(Level.WARNING, Level.INFO), log.levels(), "caught up, said once");
      assertEquals("9", log.records().get(1).getParameters()[1]);
    }
  }

  @Test
  void check_aheadAgainAfterCatchingUp_countsAfreshAndSaysItAgain() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      watch.check(view(3), CREATOR, view(2), false, 10);
      watch.check(view(3), CREATOR, view(2), false, 10 + HELD);
      watch.check(view(3), CREATOR, view(3), false, 20 + HELD);
      watch.check(view(4), CREATOR, view(3), false, 30 + HELD);
      watch.check(view(4), CREATOR, view(3), false, 30 + 2 * HELD - 1);
      assertEquals(List.of(Level.WARNING, Level.INFO), log.levels(), "a new stretch counts from its start");
      watch.check(view(4), CREATOR, view(3), false, 30 + 2 * HELD);
      assertEquals(List.of(Level.WARNING, Level.INFO, Level.WARNING), log.levels());
    }
  }

  @Test
  void check_aFailedViewOrARejoin_startsTheCountOver_withoutALine() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      watch.check(view(3), CREATOR, view(2), false, 100);
      watch.check(view(3), CREATOR, view(2), true, 100 + HELD); // a view failed: its own lines say so
      watch.check(view(3), CREATOR, view(2), false, 100 + HELD + 1);
      watch.check(view(3), CREATOR, view(2), false, 100 + 2 * HELD);
      assertEquals(List.of(), log.levels(), "the count began again after the failed view");
      watch.check(null, CREATOR, view(2), false, 100 + 2 * HELD + 1); // rejoining: no view
      watch.check(view(3), CREATOR, view(2), false, 100 + 2 * HELD + 2);
      watch.check(view(3), CREATOR, view(2), false, 100 + 3 * HELD + 1);
      assertEquals(List.of(), log.levels(), "the count began again after the rejoin");
      watch.check(view(3), CREATOR, view(2), false, 100 + 3 * HELD + 2);
      assertEquals(List.of(Level.WARNING), log.levels());
    }
  }

  /**
   * After a rejoin (a new address) into a cluster whose views are numbered below the ring's (the
   * node was on the larger side of a split, say), the ring is behind until it has a view of the
   * node's new self, though the channel's view number is lower: a held view thread is seen there
   * too, and the ring catching up with that view is said.
   */
  @Test
  void check_afterARejoinIntoViewsNumberedBelowTheRings_theRingIsBehindUntilItHoldsTheNewSelf() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      Address rejoined = UUID.randomUUID();
      Address otherCreator = UUID.randomUUID();
      View lower = new View(new ViewId(otherCreator, 3), List.of(otherCreator, rejoined));
      watch.check(lower, rejoined, view(9), false, 10);
      watch.check(lower, rejoined, view(9), false, 10 + HELD);
      assertEquals(List.of(Level.WARNING), log.levels());
      assertEquals("9", log.records().get(0).getParameters()[3]);
      watch.check(lower, rejoined, lower, false, 20 + HELD);
      assertEquals(List.of(Level.WARNING, Level.INFO), log.levels(), "the ring has that view now");
    }
  }

  /**
   * The channel's last view numbered below the ring's under the same address (handed up out of
   * order, as JGroups before 5.5.7 could, and rightly skipped by the ring): not ahead, so nothing
   * is said, however long it lasts.
   */
  @Test
  void check_aChannelViewOlderThanTheRingsUnderTheSameAddress_isNotBehind() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      watch.check(view(5), CREATOR, view(6), false, 10);
      watch.check(view(5), CREATOR, view(6), false, 10 + 3 * HELD);
      assertEquals(List.of(), log.levels());
    }
  }

  @Test
  void check_aClockAtZero_stillCountsTheStretch() {
    try (NodeLog log = log()) {
      ViewThreadWatch watch = new ViewThreadWatch(NODE);
      watch.check(view(3), CREATOR, view(2), false, 0); // 0 means "not behind": the stretch must still begin here
      watch.check(view(3), CREATOR, view(2), false, HELD);
      assertEquals(List.of(), log.levels(), "not yet: the stretch began at the clock's first tick");
      watch.check(view(3), CREATOR, view(2), false, HELD + 1);
      assertEquals(List.of(Level.WARNING), log.levels());
    }
  }

  /**
   * The seconds the WARNING says are those since the stretch began, at any reading of the clock
   * (System.nanoTime() may be far from 0, or negative).
   */
  @Test
  void check_saysTheSecondsSinceTheStretchBegan_atAnyClockReading() {
    for (long start : new long[] {TimeUnit.DAYS.toNanos(3), -TimeUnit.DAYS.toNanos(3)}) {
      try (NodeLog log = log()) {
        ViewThreadWatch watch = new ViewThreadWatch(NODE);
        watch.check(view(7), CREATOR, view(5), false, start);
        watch.check(view(7), CREATOR, view(5), false, start + HELD + TimeUnit.SECONDS.toNanos(3));
        assertEquals(List.of(Level.WARNING), log.levels(), "from " + start);
        assertEquals(Long.toString(TimeUnit.NANOSECONDS.toSeconds(HELD) + 3), log.records().get(0).getParameters()[2],
            "from " + start);
      }
    }
  }
}
