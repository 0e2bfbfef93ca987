package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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

  /**
   * The same for a key still coming in to its owner. "joiner" owns it now, but it refuses hand-off
   * pushes and its pulls from "ahead", the key's previous owner, are refused for a while, so it
   * holds no copy when the write through "behind" reaches it: it asks "ahead" for the version held
   * there, and the write is stamped past that. When the pull at last brings "ahead"'s older write,
   * that one loses. (Without asking, the write would be acknowledged with its lagging stamp, and the
   * pull would then replace it.)
   */
  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void aWriteThroughAPeerWhoseClockIsBehind_toAKeyStillComingIn_isStampedPastThePreviousOwnersVersion()
      throws Exception {
    cluster = new PeerCluster("clock-skew-moving", 1);
    // "behind" first, so that "ahead" joins it and "ahead" serves its first pull to "joiner".
    cluster.awaitReady(cluster.start("behind", "behind", Map.of(TestingAids.CLOCK_OFFSET, "-60000")));
    // A round of pulls makes 5 attempts in 2 s, and the rounds after it wait 2, 4, 8 s: "ahead"
    // refuses three rounds, so the joiner's pull is still under way about 20 s after it joined,
    // several times what the writes below take, and fails the test below if it ever is not.
    cluster.awaitReady(cluster.start("ahead", "ahead", Map.of(TestingAids.REFUSE_PULLS, "15")));
    cluster.awaitSettled(List.of("behind", "ahead"), Duration.ofSeconds(60));
    HashRing before = ring("behind", "ahead");
    HashRing after = ring("behind", "ahead", "joiner");
    List<String> keys = new ArrayList<>();
    Map<String, Long> firstVersions = new LinkedHashMap<>();
    for (int i = 0; keys.size() < 5; i++) {
      String key = "moving-" + i;
      if (before.ownerOf(key).id().equals("ahead") && after.ownerOf(key).id().equals("joiner")) {
        keys.add(key);
        firstVersions.put(key, written(cluster.put("ahead", key, "first")).path("version").asLong());
      }
    }

    cluster.awaitReady(cluster.start("joiner", "joiner", Map.of(TestingAids.REFUSE_HANDOFFS,
        Integer.toString(Integer.MAX_VALUE))));
    List<String> all = List.of("behind", "ahead", "joiner");
    await("one ring of three").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> all.stream()
            .map(p -> cluster.json(p, "/stats")).allMatch(st -> st.path("members").asInt() == 3)
            && all.stream().map(p -> cluster.json(p, "/stats").path("checksum").asText()).distinct().count() == 1);
    Map<String, Long> secondVersions = new LinkedHashMap<>();
    for (String key : keys) {
      JsonNode second = written(cluster.put("behind", key, "second"));
      assertEquals("[\"joiner\"]", second.path("owners").toString(), key);
      secondVersions.put(key, second.path("version").asLong());
    }
    JsonNode joining = cluster.json("joiner", "/stats");
    assertTrue(joining.path("migrationsInProgress").asInt() + joining.path("pullRetriesPending").asInt() > 0,
        "joiner's pull from ahead was still not through after the writes, so they met keys still coming in: "
            + joining);

    for (String key : keys) {
      assertTrue(secondVersions.get(key) > firstVersions.get(key), key + ": the write through behind is stamped"
          + " past the version its previous owner held: " + firstVersions.get(key) + ", " + secondVersions.get(key));
    }
    await("joiner's pull from ahead through").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500))
        .until(() -> {
          JsonNode st = cluster.json("joiner", "/stats");
          return st.path("migrationsInProgress").asInt() == 0 && st.path("pullRetriesPending").asInt() == 0;
        });
    for (String key : keys) {
      for (String via : all) {
        JsonNode read = PeerCluster.parse(cluster.get(via, key).body());
        assertEquals("second", read.path("value").asText(), key + " read through " + via + ": " + read);
      }
    }
  }

  /** The demo's ring of these peers (default weight and virtual nodes). */
  private static HashRing ring(String... ids) {
    HashRing.Builder b = HashRing.builder().virtualNodes(PeerOptions.DEFAULT_VIRTUAL_NODES);
    for (String id : ids) {
      b.add(Member.of(id));
    }
    return b.build();
  }

  private static JsonNode written(HttpResponse<String> r) {
    assertEquals(200, r.statusCode(), r::body);
    return PeerCluster.parse(r.body());
  }
}
