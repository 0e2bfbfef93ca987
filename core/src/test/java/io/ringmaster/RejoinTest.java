package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;

/**
 * How {@link Rejoin} says that its attempts fail, on a clock of its own: an attempt every
 * {@code gossipInterval} would fill the log, so the first of a stretch is an ERROR and the rest
 * DEBUG, with an ERROR again at most once a minute. SplitViewTest fails real rejoins for the
 * first lines; here the minute is checked without waiting for it.
 */
class RejoinTest {
  private static final String NODE = "rejoin-log";
  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

  private static RingmasterConfig config() {
    return Ringmaster.builder().nodeId(NODE).jgroupsConfig(TestCluster.STACK).buildConfig();
  }

  @Test
  void logFailure_saysTheFirstOfAStretchAtError_thenErrorAgainAtMostOnceAMinute() {
    RingmasterConfig config = config();
    Rejoin rejoin = new Rejoin(config, () -> null, () -> false, null);
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith(NODE + ": rejoining the cluster failed"))) {
      long t = 5 * SECOND;
      IOException e = new IOException("no route");
      for (long at : new long[] {0, 1, 59}) {
        rejoin.logFailure(e, true, t + at * SECOND);
      }
      rejoin.logFailure(e, true, t + 60 * SECOND - 1);
      rejoin.logFailure(e, true, t + 60 * SECOND);
      rejoin.logFailure(e, true, t + 119 * SECOND);
      rejoin.logFailure(e, true, t + 120 * SECOND);
      assertEquals(List.of(Level.SEVERE, Level.FINE, Level.FINE, Level.FINE, Level.SEVERE, Level.FINE, Level.SEVERE),
          log.levels(), "an ERROR at the first failure, then one a minute after the last ERROR");
      assertEquals(NODE + ": rejoining the cluster failed; next attempt in " + config.gossipInterval().toMillis()
          + " ms", log.records().get(0).getMessage(), "the first of a stretch: no count");
      assertEquals(e, log.records().get(4).getThrown());
      assertEquals(NODE + ": rejoining the cluster failed (5 attempts in a row; those between the ERROR lines at DEBUG);"
          + " next attempt in " + config.gossipInterval().toMillis() + " ms", log.records().get(4).getMessage());
    }
  }

  @Test
  void logFailure_whileClosing_saysItAtDebugOnly() {
    RingmasterConfig config = config();
    Rejoin rejoin = new Rejoin(config, () -> null, () -> true, null);
    try (NodeLog log = new NodeLog(r -> r.getMessage().startsWith(NODE + ": rejoining the cluster failed"))) {
      rejoin.logFailure(new IOException("closed"), false, SECOND);
      rejoin.logFailure(new IOException("closed"), false, 100 * SECOND);
      assertEquals(List.of(Level.FINE, Level.FINE), log.levels(), "no retry comes: nothing to alert on");
    }
  }
}
