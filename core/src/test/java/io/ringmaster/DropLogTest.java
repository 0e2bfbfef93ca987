package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The spacing of the encryption's WARN lines about dropped messages. */
class DropLogTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final DropLog drops = new DropLog(now::get);

  @Test
  void aSendersFirstDropIsLogged_thenOneLineEachInterval_countingThoseInBetween() {
    assertEquals(0, drops.admit("x"), "the first drop: a line");
    for (int i = 0; i < 5; i++) {
      now.addAndGet(DropLog.INTERVAL_NANOS / 10);
      assertEquals(-1, drops.admit("x"), "within the interval: no line");
    }
    now.set(1_000 + DropLog.INTERVAL_NANOS - 1);
    assertEquals(-1, drops.admit("x"), "a nanosecond short of the interval");
    now.set(1_000 + DropLog.INTERVAL_NANOS);
    assertEquals(6, drops.admit("x"), "a line, with the six not logged");
    now.addAndGet(DropLog.INTERVAL_NANOS);
    assertEquals(0, drops.admit("x"), "none in between this time");
    assertEquals(" (6 more from this sender dropped since the last line, logged at DEBUG)",
        DropLog.unloggedSuffix(6));
    assertEquals("", DropLog.unloggedSuffix(0));
  }

  @Test
  void sendersAreSpacedApart_aMessageWithoutOneToo_andTheLeastRecentIsForgottenPastTheLimit() {
    assertEquals(0, drops.admit("x"));
    assertEquals(0, drops.admit("y"), "another sender has lines of its own");
    assertEquals(0, drops.admit(null));
    assertEquals(-1, drops.admit(null));
    for (int i = 0; i < DropLog.MAX_SENDERS; i++) {
      drops.admit("other-" + i); // pushes out x, y and null, the least recently seen
    }
    assertEquals(0, drops.admit("x"), "forgotten: its next drop is logged, as a first");
    assertEquals(-1, drops.admit("other-" + (DropLog.MAX_SENDERS - 1)), "remembered");
  }
}
