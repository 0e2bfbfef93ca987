package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The spacing of the encryption's WARN lines about dropped messages. */
class DropLogTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final DropLog drops = new DropLog(now::get);

  @Test
  void aSendersFirstDropIsLogged_thenOneLineEachInterval_countingThoseInBetween() {
    assertEquals("", drops.admit("x"), "the first drop: a line");
    for (int i = 0; i < 5; i++) {
      now.addAndGet(DropLog.INTERVAL_NANOS / 10);
      assertNull(drops.admit("x"), "within the interval: no line");
    }
    now.set(1_000 + DropLog.INTERVAL_NANOS - 1);
    assertNull(drops.admit("x"), "a nanosecond short of the interval");
    now.set(1_000 + DropLog.INTERVAL_NANOS);
    assertEquals(" (not logged since the last line, only at DEBUG: 6 more from this sender)", drops.admit("x"));
    now.addAndGet(DropLog.INTERVAL_NANOS);
    assertEquals("", drops.admit("x"), "none in between this time");
  }

  @Test
  void sendersAreSpacedApart_aMessageWithoutOneToo_andTheLeastRecentIsForgottenPastTheLimit() {
    assertEquals("", drops.admit("x"));
    assertNull(drops.admit("x"), "x again within the interval: counted for its next line");
    assertEquals("", drops.admit("y"), "another sender has lines of its own");
    assertEquals("", drops.admit(null));
    assertNull(drops.admit(null));
    for (int i = 0; i < DropLog.MAX_SENDERS; i++) {
      now.addAndGet(DropLog.INTERVAL_NANOS); // a new interval each time: no limit in the way
      drops.admit("other-" + i); // pushes out x, y and null, the least recently seen
    }
    assertEquals("", drops.admit("x"), "forgotten, with its count: its next drop is logged, as a first");
    assertNull(drops.admit("other-" + (DropLog.MAX_SENDERS - 1)), "remembered");
  }

  /** A stranger naming a new sender in every message gets MAX_LINES lines an interval, not one a message. */
  @Test
  void newSendersInEveryMessage_getAtMostMaxLinesAnInterval_andTheNextLineCountsTheRest() {
    int logged = 0;
    for (int i = 0; i < 1000; i++) {
      if (drops.admit("stranger-" + i) != null) {
        logged++;
      }
    }
    assertEquals(DropLog.MAX_LINES, logged);
    now.addAndGet(DropLog.INTERVAL_NANOS);
    assertEquals(" (not logged since the last line, only at DEBUG: " + (1000 - DropLog.MAX_LINES)
        + " past the limit of " + DropLog.MAX_LINES + " lines every 10 s)", drops.admit("stranger-next"));
  }

  /**
   * The limit of lines holds at any reading of the clock (System.nanoTime() may be anywhere, even
   * negative, or wrap): MAX_LINES lines in an interval, and again in the next one.
   */
  @Test
  void theLimitOfLines_holdsAtAnyClockReading_intervalAfterInterval() {
    for (long start : new long[] {3 * DropLog.INTERVAL_NANOS, -5 * DropLog.INTERVAL_NANOS,
        Long.MAX_VALUE - DropLog.INTERVAL_NANOS / 2}) {
      AtomicLong clock = new AtomicLong(start);
      DropLog log = new DropLog(clock::get);
      for (int interval = 0; interval < 2; interval++) {
        int logged = 0;
        for (int i = 0; i < 100; i++) {
          if (log.admit("stranger-" + interval + "-" + i) != null) {
            logged++;
          }
        }
        assertEquals(DropLog.MAX_LINES, logged, "clock from " + start + ", interval " + interval);
        clock.addAndGet(DropLog.INTERVAL_NANOS);
      }
    }
  }

  /** MAX_SENDERS senders are remembered, not one fewer: the oldest still has its count on its next line. */
  @Test
  void maxSendersAreRemembered_theOldestWithItsCount() {
    assertEquals("", drops.admit("oldest"));
    assertNull(drops.admit("oldest"), "counted for its next line");
    for (int i = 1; i < DropLog.MAX_SENDERS; i++) {
      now.addAndGet(DropLog.INTERVAL_NANOS); // a new interval each time: no limit in the way
      assertEquals("", drops.admit("other-" + i));
    }
    now.addAndGet(DropLog.INTERVAL_NANOS);
    assertEquals(" (not logged since the last line, only at DEBUG: 1 more from this sender)", drops.admit("oldest"),
        "remembered among " + DropLog.MAX_SENDERS + ", with its count");
  }
}
