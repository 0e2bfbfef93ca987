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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Reads of keys whose new owner has not taken them in yet. With one replica, every key b gains has
 * b as its only owner, and only a holds it; here a and b refuse every pull, and b and c every
 * hand-off push, so the keys stay on a for the whole test. A read through any peer still finds
 * each key: b, missing it while it is coming in, asks the key's previous owner, and c, after a
 * second join, asks b, which asks a.
 */
class ReadWhileMovingTest extends WithPeerCluster {
  private static final int KEYS = 200;

  @Test
  @Timeout(value = 180, unit = TimeUnit.SECONDS)
  void keyNotYetTakenInByItsNewOwner_readsFromThePreviousOwner_throughEitherPeer() throws Exception {
    cluster = new PeerCluster("read-while-moving", 1);
    cluster.awaitReady(cluster.start("a", "a", Map.of(TestingAids.REFUSE_PULLS, Integer.toString(Integer.MAX_VALUE))));
    List<String> keys = cluster.putKeys("a", "moving-", "v-", KEYS);

    cluster.awaitReady(cluster.start("b", "b", Map.of(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE),
        TestingAids.REFUSE_PULLS, Integer.toString(Integer.MAX_VALUE))));
    await("b in both rings").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> List.of("a", "b").stream().allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 2));

    List<String> ownedByB = new ArrayList<>();
    for (String via : List.of("a", "b")) {
      for (String key : keys) {
        HttpResponse<String> r = cluster.get(via, key);
        assertEquals(200, r.statusCode(), () -> "get " + key + " via " + via + ": " + r.body());
        JsonNode read = PeerCluster.parse(r.body());
        assertEquals("v-" + key, read.path("value").asText());
        if (via.equals("a") && read.path("owners").get(0).asText().equals("b")) {
          ownedByB.add(key);
        }
      }
    }
    assertTrue(ownedByB.size() > KEYS / 10, () -> "b owns " + ownedByB.size() + " of " + KEYS + " keys");
    for (String key : ownedByB) {
      HttpResponse<String> local = cluster.send("b",
          HttpRequest.newBuilder(cluster.uri("b", PeerCluster.keyPath(key) + "?local=true")));
      assertEquals(404, local.statusCode(), () -> "b holds " + key + " after all: the test moved no data? " + local.body());
    }
    assertTrue(cluster.json("b", "/stats").path("readsFromPreviousOwners").asLong() >= 2L * ownedByB.size(),
        "each read of a key b owns, through a and through b, was answered with a's copy");

    // A second join at once: c takes some of b's keys, which b has not taken in either (b refuses
    // pulls now too). A read goes two steps back: c asks b, b asks a.
    cluster.awaitReady(cluster.start("c", "c", Map.of(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE))));
    await("c in every ring").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> List.of("a", "b", "c").stream().allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 3));
    List<String> fromBToC = new ArrayList<>();
    for (String key : ownedByB) {
      HttpResponse<String> r = cluster.get("a", key);
      assertEquals(200, r.statusCode(), () -> "get " + key + " via a after c joined: " + r.body());
      assertEquals("v-" + key, PeerCluster.parse(r.body()).path("value").asText());
      if (PeerCluster.parse(r.body()).path("owners").get(0).asText().equals("c")) {
        fromBToC.add(key);
      }
    }
    assertTrue(fromBToC.size() > 0, "c took some of b's keys");
    // Counted from here: the reads through a above went to c too, and c went back for them as well.
    long wentBack = cluster.json("c", "/stats").path("readsFromPreviousOwners").asLong();
    for (String key : fromBToC) {
      HttpResponse<String> viaC = cluster.get("c", key);
      assertEquals(200, viaC.statusCode(), () -> "get " + key + " via c: " + viaC.body());
      assertEquals("v-" + key, PeerCluster.parse(viaC.body()).path("value").asText(), viaC::body);
    }
    assertTrue(cluster.json("c", "/stats").path("readsFromPreviousOwners").asLong() - wentBack >= fromBToC.size(),
        "each read through c of a key c owns, and does not hold, was answered by going back to b and a");
  }
}
