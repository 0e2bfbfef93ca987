package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
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
 * A joiner's own pulls. A peer's first ring reports everything it owns as gained from nothing,
 * with no previous owner to pull from; the joiner works out where its ranges are from the ring
 * without itself. Here the joiner refuses every hand-off push (the losers' migration pushes and
 * their sweeps), so the pulls from those recomputed sources are the only way its keys reach it.
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
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      String key = "pulled-" + i;
      HttpResponse<String> r = cluster.put("a", key, "v-" + key);
      assertEquals(200, r.statusCode(), () -> "put " + key + ": " + r.body());
      keys.add(key);
    }

    cluster.awaitReady(cluster.start("d", "d",
        Map.of(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE))));
    List<String> four = List.of("a", "b", "c", "d");
    await("d in every ring").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> four.stream()
            .allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 4));

    List<String> owned = new ArrayList<>();
    for (String key : keys) {
      JsonNode read = PeerCluster.parse(cluster.get("a", key).body());
      read.path("owners").forEach(o -> {
        if (o.asText().equals("d")) {
          owned.add(key);
        }
      });
    }
    assertTrue(owned.size() > KEYS / 10, () -> "d owns " + owned.size() + " of " + KEYS + " keys");
    await("d holds every key it owns").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500))
        .ignoreExceptions().untilAsserted(() -> assertEquals(new TreeSet<>(), missingOnD(owned)));
    long refused = 0;
    for (String p : three) {
      refused += cluster.json(p, "/stats").path("migrationsFailed").asLong();
    }
    assertTrue(refused > 0, "the losers' hand-off pushes to d were refused: migrationsFailed " + refused);
  }

  private TreeSet<String> missingOnD(List<String> keys) {
    TreeSet<String> missing = new TreeSet<>();
    for (String key : keys) {
      HttpResponse<String> r = cluster.send("d",
          HttpRequest.newBuilder(cluster.uri("d", PeerCluster.keyPath(key) + "?local=true")));
      if (r.statusCode() != 200) {
        missing.add(key);
      }
    }
    return missing;
  }
}
