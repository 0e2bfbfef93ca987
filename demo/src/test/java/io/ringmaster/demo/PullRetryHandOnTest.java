package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A later owner's pull of ranges whose pull, for an earlier view, is still being retried. One copy
 * a key. b joins a and gains ranges from it, but a refuses the first 30 pulls it serves (five
 * attempts a pull: b's first pull and its retries, after 2, 4, 8 ... s, and c's pulls from a, for
 * half a minute or so) and b refuses every hand-off push, so b holds none of those keys. c joins
 * as soon as b retries, and takes part of b's ranges, from b; c refuses every hand-off push too,
 * so its own pulls are the only way its keys reach it. b refuses c's pull while its retry covers
 * those ranges (its copy is short), and once the retry has brought them, c's pull takes them.
 * Were b to serve its short copy, c would take it for a whole one, and the keys it took from b
 * would never reach it. (Should b's retry end before c's pull, on a machine slow to start c, c
 * just pulls b's whole copy.) Real processes on 127.0.0.1.
 */
class PullRetryHandOnTest extends WithPeerCluster {
  private static final int KEYS = 200;
  private static final String FOR_EVER = Integer.toString(Integer.MAX_VALUE);

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void aLaterOwnersPull_waitsForTheRetryOfAnEarlierView_andGetsEveryKey() throws Exception {
    cluster = new PeerCluster("retry-hand-on", 1);
    cluster.awaitReady(cluster.start("a", "a", Map.of(TestingAids.REFUSE_PULLS, "30")));
    List<String> keys = cluster.putKeys("a", "retried-", "v-", KEYS);

    cluster.awaitReady(cluster.start("b", "b", Map.of(TestingAids.REFUSE_HANDOFFS, FOR_EVER)));
    await("b's pull from a failed, and waits to be tried again").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> cluster.json("b", "/stats").path("pullRetriesPending").asInt() >= 1);
    cluster.awaitReady(cluster.start("c", "c", Map.of(TestingAids.REFUSE_HANDOFFS, FOR_EVER)));
    List<String> three = List.of("a", "b", "c");
    await("c in every ring").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> three.stream()
            .allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 3));

    List<String> ownedByC = new ArrayList<>();
    for (String key : keys) {
      if (PeerCluster.parse(cluster.get("a", key).body()).path("owners").get(0).asText().equals("c")) {
        ownedByC.add(key);
      }
    }
    assertTrue(ownedByC.size() > KEYS / 10, () -> "c owns " + ownedByC.size() + " of " + KEYS + " keys");
    await("c holds every key it owns").atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(1))
        .ignoreExceptions().untilAsserted(() -> assertEquals(new TreeSet<>(), cluster.missingOn("c", ownedByC)));
  }
}
