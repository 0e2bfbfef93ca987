package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A delete leaves a tombstone for the grace period, and only after it does the peer drop the tombstone. */
class TombstoneTest extends WithPeerCluster {

  @Test
  @Timeout(value = 180, unit = TimeUnit.SECONDS)
  void delete_afterTheGracePeriod_tombstoneDroppedAndKeyWritableAgain() throws Exception {
    cluster = new PeerCluster("tombstones", 1);
    cluster.awaitReady(cluster.start("solo", "--tombstone-grace", "20"));
    assertEquals(200, cluster.put("solo", "gone", "v1").statusCode());
    assertEquals(200, cluster.put("solo", "kept", "v1").statusCode());
    assertEquals(200, send("DELETE", "gone").statusCode());

    // Kept through the grace, across the purges that run meanwhile (every 2 s, a tenth of the
    // grace): a purge that came early would let an old copy bring the key back.
    // Watched for 7 s after the delete's reply, so that a tombstone dropped at any age under 7 s
    // fails; the watch may take until 14 s (a stats reply or two served late on a slow machine),
    // at least 6 s before the tombstone is 20 s old and a purge is due.
    await("the tombstone kept while it is younger than the grace").during(Duration.ofSeconds(7))
        .atMost(Duration.ofSeconds(14)).pollInterval(Duration.ofMillis(200)).until(() -> {
          JsonNode s = cluster.json("solo", "/stats");
          return s.path("tombstones").asLong() == 1 && s.path("tombstonesPurged").asLong() == 0;
        });
    // Then a purge drops it, once it is older than 20 s.
    await("the tombstone dropped and counted").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
        .until(() -> {
          JsonNode s = cluster.json("solo", "/stats");
          return s.path("tombstones").asLong() == 0 && s.path("tombstonesPurged").asLong() >= 1;
        });
    JsonNode stats = cluster.json("solo", "/stats");
    assertEquals(1, stats.path("tombstonesPurged").asLong(), stats::toString);
    assertEquals(1, stats.path("primaryKeys").asLong(), "the value is kept: " + stats);
    HttpResponse<String> gone = cluster.get("solo", "gone");
    assertEquals(404, gone.statusCode(), gone::body);
    assertFalse(PeerCluster.parse(gone.body()).path("deleted").asBoolean(), "no tombstone left: " + gone.body());
    assertEquals(200, cluster.get("solo", "kept").statusCode());
    assertEquals(200, cluster.put("solo", "gone", "v2").statusCode());
    HttpResponse<String> back = cluster.get("solo", "gone");
    assertTrue(back.body().contains("\"v2\""), back::body);
  }

  private HttpResponse<String> send(String method, String key) {
    return cluster.send("solo", HttpRequest.newBuilder(cluster.uri("solo", "/kv/" + key))
        .method(method, HttpRequest.BodyPublishers.noBody()));
  }
}
