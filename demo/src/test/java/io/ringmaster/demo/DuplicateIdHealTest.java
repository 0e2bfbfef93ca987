package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two peers started with one id on the two sides of a partition. When it heals, the cluster keeps
 * the id for one of them and refuses the other, which then owns nothing: it hands what it holds to
 * the owners of the merged ring, the one holding its id included, and routes every write and read
 * to them. With one replica, any copy left on the wrong peer would be a lost write.
 */
class DuplicateIdHealTest extends WithPeerCluster {
  private static final int KEYS = 100;

  @Test
  @Timeout(value = 150, unit = TimeUnit.SECONDS)
  void heal_withOneIdOnBothSides_refusesOne_andLosesNoAcknowledgedWrite() throws Exception {
    cluster = new PeerCluster("duplicate-heal", 1);
    // The twin starts first, alone, with id "a". It binds 7860 and looks for peers at 7830-7849;
    // the peers started next bind 7830-7831 and look at 7830-7849 only, so they form a cluster of
    // their own (a partition) until the twin's merge protocol finds them (a heal).
    PeerCluster.TestPeer twin = cluster.start("a-twin", "a", Map.of("ringmaster.bind_port", "7860"));
    cluster.awaitReady(twin);
    Map<String, String> written = new LinkedHashMap<>(write("a-twin", "twin-"));
    cluster.startAll("a", "b");
    written.putAll(write("b", "main-")); // before or after the heal: either way none may be lost

    List<String> all = List.of("a", "a-twin", "b");
    String refused = awaitMergedAndSettled(all);
    String holder = refused.equals("a") ? "a-twin" : "a";
    assertEquals(true, cluster.json(holder, "/stats").path("inRing").asBoolean(), holder + " keeps the id");

    for (String via : List.of("b", refused)) {
      assertEquals(List.of(), mismatches(via, written), "acknowledged writes read through " + via);
    }

    // After the heal, writes through the refused peer go to the owners, not to its own store.
    Map<String, String> late = write(refused, "late-");
    written.putAll(late);
    awaitMergedAndSettled(all);
    assertEquals(List.of(), mismatches("b", written), "every write, read through b");
    JsonNode stats = cluster.json(refused, "/stats");
    assertEquals(0, stats.path("primaryKeys").asLong() + stats.path("backupKeys").asLong()
        + stats.path("strayKeys").asLong(), "the refused peer keeps no copy: " + stats);
  }

  /** Writes {@link #KEYS} keys through one peer; each write must be acknowledged. */
  private Map<String, String> write(String via, String prefix) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < KEYS; i++) {
      String key = prefix + i;
      String value = "v-" + key;
      var r = cluster.put(via, key, value);
      assertEquals(200, r.statusCode(), () -> "put " + key + " via " + via + ": " + r.body());
      out.put(key, value);
    }
    return out;
  }

  /**
   * Waits until the peers have one view and one ring of two members ("a" and "b"), exactly
   * one peer is out of the ring, and no peer is moving data or holds a key it does not own.
   *
   * @return the name of the refused peer
   */
  private String awaitMergedAndSettled(List<String> peers) {
    String[] refused = new String[1];
    await("merged and settled").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> {
          Set<String> rings = new HashSet<>();
          List<String> out = new ArrayList<>();
          for (String p : peers) {
            JsonNode s = cluster.json(p, "/stats");
            if (s.path("members").asInt() != 2 || s.path("migrationsInProgress").asInt() != 0
                || s.path("pendingCallbacks").asInt() != 0 || s.path("strayKeys").asLong() != 0) {
              return false;
            }
            rings.add(s.path("viewId").asLong() + "/" + s.path("checksum").asText());
            if (!s.path("inRing").asBoolean()) {
              out.add(p);
            }
          }
          refused[0] = out.size() == 1 ? out.get(0) : null;
          return rings.size() == 1 && refused[0] != null;
        });
    return refused[0];
  }

  private List<String> mismatches(String via, Map<String, String> expected) {
    List<String> out = new ArrayList<>();
    expected.forEach((key, value) -> {
      var r = cluster.get(via, key);
      if (r.statusCode() != 200 || !value.equals(PeerCluster.parse(r.body()).path("value").asText())) {
        out.add(key + ": " + r.statusCode() + " " + r.body());
      }
    });
    return out;
  }
}
