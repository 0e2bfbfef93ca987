package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Peers whose clocks disagree, as on several hosts: "behind" stamps its writes a minute earlier
 * than the others. A write through "behind" to a key that "ahead" wrote a moment before reaches
 * an owner holding a newer version; it must be stamped again, past that version, so that the
 * write the client was told succeeded is the one the owner keeps (last writer wins), not one
 * silently dropped as older. Keys "behind" owns are skipped: an owner observes every stamp it
 * stores, so its clock would already be past.
 */
class ClockSkewTest extends WithPeerCluster {

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void aWriteThroughAPeerWhoseClockIsBehind_isStampedPastTheNewerVersion_andKept() throws Exception {
    cluster = new PeerCluster("clock-skew", 1);
    cluster.startAll("ahead", "third");
    cluster.awaitReady(cluster.start("behind", "behind", Map.of(TestingAids.CLOCK_OFFSET, "-60000")));
    List<String> all = List.of("ahead", "third", "behind");
    cluster.awaitSettled(all, Duration.ofSeconds(60));

    int checked = 0;
    for (int i = 0; checked < 10; i++) {
      String key = "skew-" + i;
      JsonNode first = written(cluster.put("ahead", key, "first"));
      if (first.path("owners").toString().contains("\"behind\"")) {
        continue;
      }
      JsonNode second = written(cluster.put("behind", key, "second"));
      long late = second.path("version").asLong();
      assertTrue(late > first.path("version").asLong(),
          key + ": the later write is stamped past the version its owner held: " + first + " then " + second);
      for (String via : all) {
        JsonNode read = PeerCluster.parse(cluster.get(via, key).body());
        assertEquals("second", read.path("value").asText(), key + " read through " + via + ": " + read);
        assertEquals(late, read.path("version").asLong(), key + " read through " + via);
      }
      checked++;
    }
  }

  private static JsonNode written(HttpResponse<String> r) {
    assertEquals(200, r.statusCode(), r::body);
    return PeerCluster.parse(r.body());
  }
}
