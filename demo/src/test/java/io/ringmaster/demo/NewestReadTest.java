package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads after a partition heals, before the merge repair: "a" and "b" write every key, then "c",
 * cut off alone (see {@link DuplicateIdHealTest} for the ports), writes every key again, later.
 * Every peer refuses every repair push, so nothing but the reads can bring c's newer copies to the
 * keys' other owners: in the merged ring of four peers with two replicas, the keys that c keeps
 * still have their older copy on their other owner (c hands off only the keys it loses). A read
 * through any peer must return c's copy, the newest among the owners, and must bring every owner
 * to it.
 */
class NewestReadTest extends WithPeerCluster {
  private static final int KEYS = 40;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void afterAPartitionHeals_everyReadReturnsTheNewestCopyAmongTheOwners_andRepairsTheOlderOnes(@TempDir Path dir)
      throws Exception {
    String config = PeerCluster.healableConfig(dir).toString();
    cluster = new PeerCluster("newest-read", 2);
    Map<String, String> refuse = Map.of(TestingAids.REFUSE_REPAIRS, Integer.toString(Integer.MAX_VALUE),
        TestingAids.NO_READ_REPAIR, "false");
    cluster.awaitReady(cluster.start("a", "a", refuse, "--config", config));
    cluster.awaitReady(cluster.start("b", "b", refuse, "--config", config));
    List<String> keys = cluster.putKeys("a", "both-", "old-", KEYS);
    cluster.awaitReady(cluster.start("c", "c", PeerCluster.with(refuse, "ringmaster.bind_port", "7860",
        "ringmaster.initial_hosts", "127.0.0.1[7850]", "ringmaster.join_timeout", "1s"), "--config", config));
    assertEquals(1, cluster.json("c", "/stats").path("members").asInt(), "c is alone");
    for (String key : keys) {
      HttpResponse<String> r = cluster.put("c", key, "new-" + key);
      assertEquals(200, r.statusCode(), () -> "put " + key + " via c: " + r.body());
    }

    // The heal: d binds 7850 and joins a and b; c finds it there, and through it the others.
    cluster.awaitReady(cluster.start("d", "d", PeerCluster.with(refuse, "ringmaster.bind_port", "7850"),
        "--config", config));
    List<String> all = List.of("a", "b", "c", "d");
    cluster.awaitSettled(all, Duration.ofSeconds(90));

    Map<String, String> stale = ownersHolding(all, keys, "old-");
    assertFalse(stale.isEmpty(), "no owner kept an older copy: the repair went through, and the test shows nothing");

    // A read that got no answer (a failed connection, or a 503: no owner answered in time) is tried
    // again. One answered with "not found" (every owner holds a copy) fails at once. One answered
    // with the old value is tried again a few times only: a read waits READ_GRACE for the owners
    // slower than the first, and on a busy machine c may answer later than that; a read that took
    // any one owner's copy would return the old value every time.
    for (String key : keys) {
      for (String p : all) {
        JsonNode found = null;
        for (int attempt = 1; attempt <= 5; attempt++) {
          HttpResponse<String> r = await(key + " read via " + p + " answered").atMost(Duration.ofSeconds(30))
              .pollInterval(Duration.ofMillis(100)).ignoreExceptionsInstanceOf(UncheckedIOException.class)
              .until(() -> cluster.get(p, key), reply -> reply.statusCode() != 503);
          assertEquals(200, r.statusCode(), () -> key + " read via " + p + ": " + r.body());
          found = PeerCluster.parse(r.body());
          if (found.path("value").asText().equals("new-" + key)) {
            break;
          }
        }
        JsonNode last = found;
        assertEquals("new-" + key, last.path("value").asText(), () -> key + " read via " + p + ", five times: " + last);
      }
    }
    await("every owner brought to the newest copy by the reads").atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(500)).ignoreExceptions()
        .untilAsserted(() -> assertEquals(Map.of(), ownersHolding(all, keys, "old-")));
    long repairs = readRepairs(all);
    assertTrue(repairs >= stale.size(), "read repairs counted: " + repairs + ", stale copies: " + stale.size());

    // Owners that agree are left alone: reading every key again repairs nothing.
    for (String key : keys) {
      for (String p : all) {
        JsonNode found = PeerCluster.parse(cluster.get(p, key).body());
        assertEquals("new-" + key, found.path("value").asText(), () -> key + " read again via " + p + ": " + found);
      }
    }
    assertEquals(repairs, readRepairs(all), "read repairs sent while every owner held the newest copy");
  }

  private long readRepairs(List<String> peers) {
    long sum = 0;
    for (String p : peers) {
      sum += cluster.json(p, "/stats").path("readRepairs").asLong();
    }
    return sum;
  }

  /**
   * The owners' local copies ({@code GET /kv/{key}?local=true}, which reads only that peer's store
   * and repairs nothing) whose value starts with {@code prefix}, as {@code key@peer} to the value.
   * Once the ring settled every owner holds a copy (a and b wrote every key, d pulled its ranges
   * from them, c wrote every key, and a peer that lost a range handed it to its new owners).
   */
  private Map<String, String> ownersHolding(List<String> peers, List<String> keys, String prefix) {
    Map<String, String> out = new TreeMap<>();
    for (String key : keys) {
      for (String p : peers) {
        HttpResponse<String> r = cluster.send(p, HttpRequest.newBuilder(cluster.uri(p, PeerCluster.keyPath(key) + "?local=true")));
        if (r.statusCode() == 404) {
          continue; // not held: a peer that lost the key handed it off and dropped it
        }
        assertEquals(200, r.statusCode(), () -> p + " " + key + ": " + r.body());
        JsonNode copy = PeerCluster.parse(r.body());
        if (!copy.path("role").asText().equals("stray") && copy.path("value").asText().startsWith(prefix)) {
          out.put(key + "@" + p, copy.path("value").asText());
        }
      }
    }
    return out;
  }
}
