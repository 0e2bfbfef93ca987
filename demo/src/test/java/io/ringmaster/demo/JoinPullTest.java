package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A joiner's own pulls. Its first ownership change names, for each range it gains, the owners the
 * range had in the ring before the view that admitted it; the joiner pulls from them. Here the
 * joiner refuses every hand-off push (the losers' migration pushes and their sweeps), so its
 * pulls are the only way its keys reach it.
 */
class JoinPullTest extends WithPeerCluster {
  private static final int KEYS = 200;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void joinerRefusingEveryHandoffPush_pullsEveryKeyItOwns_fromTheOwnersBeforeIt() throws Exception {
    List<String> three = List.of("a", "b", "c");
    cluster = new PeerCluster("join-pull", 2);
    cluster.startAll(three.toArray(String[]::new));
    cluster.awaitSettled(three, Duration.ofSeconds(30));
    List<String> keys = cluster.putKeys("a", "pulled-", "v-", KEYS);
    long failedBefore = failedMigrations(three); // counted since each peer started

    cluster.awaitReady(cluster.start("d", "d",
        Map.of(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE))));
    List<String> four = List.of("a", "b", "c", "d");
    await("d in every ring").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> four.stream()
            .allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 4));

    List<String> owned = new ArrayList<>();
    for (String key : keys) {
      HttpResponse<String> r = cluster.get("a", key);
      assertEquals(200, r.statusCode(), () -> "get " + key + " via a after d joined: " + r.body());
      JsonNode read = PeerCluster.parse(r.body());
      read.path("owners").forEach(o -> {
        if (o.asText().equals("d")) {
          owned.add(key);
        }
      });
    }
    assertTrue(owned.size() > KEYS / 10, () -> "d owns " + owned.size() + " of " + KEYS + " keys");
    await("d holds every key it owns").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500))
        .ignoreExceptions().untilAsserted(() -> assertEquals(new TreeSet<>(), cluster.missingOn("d", owned)));
    // The losers' pushes to d, refused, count as failed migrations once their attempts are spent,
    // which may be after d's pulls brought everything.
    await("the losers' hand-off pushes to d were refused").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500)).ignoreExceptions().until(() -> failedMigrations(three) > failedBefore);
  }

  private long failedMigrations(List<String> peers) throws Exception {
    long failed = 0;
    for (String p : peers) {
      failed += cluster.json(p, "/stats").path("migrationsFailed").asLong();
    }
    return failed;
  }
}
