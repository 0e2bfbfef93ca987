package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.RingmasterConfig;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.junit.jupiter.api.io.TempDir;

/**
 * A real network partition between peer processes, made with {@code POST /admin/split} and ended
 * with {@code /admin/heal}: three peers with two replicas, peer-3 cut off from peer-1 and peer-2.
 * Each side's ring lists only its side and takes writes; after the heal one ring of three, every
 * key read from every peer with its last value (a key written on both sides: the later write),
 * and each peer's events show the merge.
 *
 * <p>The peers run the demo's stack with its failure detector's 3 s made 4 s (a little margin on a
 * shared machine) and MERGE3 looking for subgroups every 0.5-1 s instead of 2-5 s: the test waits
 * for what the split and the merge do, not for when they come.
 */
class SplitAndHealTest extends WithPeerCluster {
  private static final List<String> ALL = List.of("peer-1", "peer-2", "peer-3");
  private static final List<String> MAJORITY = List.of("peer-1", "peer-2");
  private static final int KEYS = 5;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void split_bothSidesTakeWrites_andAfterTheHeal_everyPeerReadsTheLastValues(@TempDir Path dir) throws Exception {
    String config = quickMergeConfig(dir).toString();
    Map<String, String> props = Map.of("ringmaster.fd.timeout", "4s");
    cluster = new PeerCluster("split-and-heal", 2);
    for (String id : ALL) {
      cluster.awaitReady(cluster.start(id, id, props, "--config", config, "--fault-injection"));
    }
    cluster.awaitSettled(ALL, Duration.ofSeconds(60));

    for (String id : MAJORITY) {
      assertEquals(200, split(id, "peer-3").statusCode(), id);
    }
    HttpResponse<String> cut = split("peer-3", "peer-1", "peer-2");
    assertEquals("{\"local\":\"peer-3\",\"cutOffFrom\":[\"peer-1\",\"peer-2\"]}", cut.body());
    assertEquals("[\"peer-1\",\"peer-2\"]", cluster.json("peer-3", "/stats").path("cutOffFrom").toString());
    await("each side's ring lists only its side").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> ringIds("peer-1").equals(MAJORITY) && ringIds("peer-2").equals(MAJORITY)
            && ringIds("peer-3").equals(List.of("peer-3")));

    Map<String, String> expected = new LinkedHashMap<>();
    for (int i = 0; i < KEYS; i++) {
      expected.put(write("peer-1", "left-" + i, "l" + i), "l" + i);
      expected.put(write("peer-3", "right-" + i, "r" + i), "r" + i);
    }
    long earlier = PeerCluster.parse(put("peer-2", "both", "from the majority").body()).path("version").asLong();
    long later = PeerCluster.parse(put("peer-3", "both", "from peer-3, later").body()).path("version").asLong();
    assertTrue(later > earlier, "stamped by this host's clock, later: " + earlier + " then " + later);
    expected.put("both", "from peer-3, later");

    for (String id : ALL) {
      HttpResponse<String> healed = cluster.send(id, HttpRequest.newBuilder(cluster.uri(id, "/admin/heal"))
          .POST(HttpRequest.BodyPublishers.noBody()));
      assertEquals(200, healed.statusCode(), () -> id + ": " + healed.body());
    }
    await("one ring of three, agreed").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(this::oneAgreedRing);

    await("every key's last value, from every peer").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() -> {
          for (String id : ALL) {
            assertEquals(expected, values(id, expected.keySet()), "read through " + id);
          }
        });
    for (String id : ALL) {
      assertEquals("[]", cluster.json(id, "/stats").path("cutOffFrom").toString(), id);
      assertTrue(sawMerge(id), id + " logged a membership event with \"merge\": true: "
          + cluster.json(id, "/events/recent"));
    }
  }

  /** The demo's stack, MERGE3 every 0.5-1 s (see the class comment); the node config naming it. */
  private static Path quickMergeConfig(Path dir) throws IOException {
    String stack;
    try (InputStream in = RingmasterConfig.class.getClassLoader()
        .getResourceAsStream(RingmasterConfig.DEFAULT_JGROUPS_CONFIG)) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String merge = "<MERGE3 min_interval=\"2s\" max_interval=\"5s\"/>";
    assertTrue(stack.contains(merge), "the demo's stack has " + merge);
    Path xml = Files.writeString(dir.resolve("stack.xml"),
        stack.replace(merge, "<MERGE3 min_interval=\"500ms\" max_interval=\"1s\"/>"));
    return Files.writeString(dir.resolve("node.json"),
        "{\"jgroupsConfig\": \"" + xml.toAbsolutePath().toString().replace("\\", "\\\\") + "\"}");
  }

  private HttpResponse<String> split(String id, String... cutOff) {
    String body = "{\"ids\": [\"" + String.join("\", \"", cutOff) + "\"]}";
    return cluster.send(id, HttpRequest.newBuilder(cluster.uri(id, "/admin/split"))
        .POST(HttpRequest.BodyPublishers.ofString(body)));
  }

  private List<String> ringIds(String id) {
    List<String> ids = new ArrayList<>();
    cluster.json(id, "/ring?ranges=false").path("members").forEach(m -> ids.add(m.path("id").asText()));
    return ids.stream().sorted().toList();
  }

  private boolean oneAgreedRing() {
    Set<String> rings = new HashSet<>();
    for (String id : ALL) {
      JsonNode ring = cluster.json(id, "/ring?ranges=false");
      if (!ringIds(id).equals(ALL) || !ring.path("agreed").asBoolean()) {
        return false;
      }
      rings.add(ring.path("viewId").asLong() + "/" + ring.path("checksum").asText());
    }
    return rings.size() == 1;
  }

  private HttpResponse<String> put(String via, String key, String value) {
    HttpResponse<String> r = cluster.put(via, key, value);
    assertEquals(200, r.statusCode(), () -> "put " + key + " via " + via + ": " + r.body());
    return r;
  }

  private String write(String via, String key, String value) {
    put(via, key, value);
    return key;
  }

  private Map<String, String> values(String via, Set<String> keys) {
    Map<String, String> read = new LinkedHashMap<>();
    for (String key : keys) {
      HttpResponse<String> r = cluster.get(via, key);
      read.put(key, r.statusCode() == 200 ? PeerCluster.parse(r.body()).path("value").asText() : r.body());
    }
    return read;
  }

  private boolean sawMerge(String id) {
    for (JsonNode e : cluster.json(id, "/events/recent")) {
      if (e.path("type").asText().equals("membership") && e.path("merge").asBoolean()) {
        return true;
      }
    }
    return false;
  }
}
