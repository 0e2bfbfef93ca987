package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two peers started with one id on the two sides of a partition. When it heals, the cluster keeps
 * the id for one of them and refuses the other, which then owns nothing: it hands what it holds to
 * the owners of the merged ring, the peer holding its id included, passes reads and writes on to
 * them, and hands off what is left when it stops. With one replica, a copy left on the wrong peer
 * would be a lost write.
 *
 * <p>The partition is made of ports. "a" and "b" bind 7830-7831 and look for peers at 7830-7849;
 * the twin (id "a" too) binds 7860 and looks at 7850-7869, so neither side can find the other. The
 * heal is a third peer, "c", binding 7850 and joining "a" and "b": the twin finds it there, and
 * through it (discovery answers with every address it knows: {@link PeerCluster#healableConfig})
 * the rest of the cluster. Then one of
 * the two peers with the id stops: the refused one, or the holder (the refused one is then
 * admitted under the id).
 */
class DuplicateIdHealTest extends WithPeerCluster {
  private static final int KEYS = 100;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang fails; the awaits inside bound each step
  void heal_thenTheRefusedPeerStops_losesNoAcknowledgedWrite(@TempDir Path dir) throws Exception {
    Healed h = partitionWritesAndHeal(dir);
    // The refused peer stops at once, maybe before its merge hand-off is done: what it holds must
    // still reach the owners.
    assertEquals(143, cluster.stop(h.refused()), "graceful stop (128 + SIGTERM) of the refused peer");
    List<String> staying = List.of(h.holder(), "b", "c");
    cluster.awaitSettled(staying, Duration.ofSeconds(60));
    assertPeer(h.holder(), 3, true);
    for (String via : List.of("b", "c")) {
      assertEquals(List.of(), mismatches(via, h.written()), "acknowledged writes read through " + via);
    }
  }

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang fails; the awaits inside bound each step
  void heal_thenTheHolderStops_refusedPeerTakesTheIdBack_losesNoAcknowledgedWrite(@TempDir Path dir)
      throws Exception {
    Healed h = partitionWritesAndHeal(dir);
    // The holder leaves, handing its data to the peers that stay; the refused peer is admitted
    // under the id and gains its ranges from them.
    assertEquals(143, cluster.stop(h.holder()), "graceful stop (128 + SIGTERM) of the holder");
    List<String> staying = List.of(h.refused(), "b", "c");
    cluster.awaitSettled(staying, Duration.ofSeconds(60));
    assertPeer(h.refused(), 3, true);
    for (String via : List.of(h.refused(), "b", "c")) {
      assertEquals(List.of(), mismatches(via, h.written()), "acknowledged writes read through " + via);
    }
  }

  /** Which peer kept the id, which one the cluster refused, and every acknowledged write. */
  private record Healed(String holder, String refused, Map<String, String> written) {}

  /**
   * Starts "a" and "b", then the twin apart from them, writes through both sides, heals, waits for
   * the refusal, and writes through the refused peer.
   */
  private Healed partitionWritesAndHeal(Path dir) throws Exception {
    String config = PeerCluster.healableConfig(dir).toString();
    cluster = new PeerCluster("duplicate-heal", 1);
    PeerCluster.TestPeer a = cluster.start("a", "a", Map.of(), "--config", config);
    cluster.awaitReady(a);
    cluster.awaitReady(cluster.start("b", "b", Map.of(), "--config", config));
    PeerCluster.TestPeer twin = cluster.start("a-twin", "a", Map.of(
        "ringmaster.bind_port", "7860", "ringmaster.initial_hosts", "127.0.0.1[7850]",
        "ringmaster.join_timeout", "1s"), "--config", config); // alone, by design: no need to wait 5 s
    cluster.awaitReady(twin);

    Map<String, String> written = new LinkedHashMap<>(write("b", "main-"));
    written.putAll(write("a-twin", "twin-"));
    // Both sides took their writes while apart, each holding id "a".
    assertPeer("a", 2, true);
    assertPeer("a-twin", 1, true);

    cluster.awaitReady(cluster.start("c", "c", Map.of("ringmaster.bind_port", "7850"), "--config", config));
    String[] refused = new String[1];
    await("one of the two peers with id \"a\" refused").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100)).ignoreExceptions().until(() -> {
          for (String p : List.of("a", "a-twin")) {
            JsonNode s = cluster.json(p, "/stats");
            if (s.path("members").asInt() == 3 && !s.path("inRing").asBoolean()) {
              refused[0] = p;
              return true;
            }
          }
          return false;
        });
    // Its ring page says so, and does not call the holder's "a" this peer.
    assertEquals(false, cluster.json(refused[0], "/ring?ranges=false").path("inRing").asBoolean(true));
    // Writes through the refused peer go to the owners, not to its own store.
    written.putAll(write(refused[0], "late-"));
    return new Healed(refused[0].equals("a") ? "a-twin" : "a", refused[0], written);
  }

  private void assertPeer(String name, int members, boolean inRing) {
    JsonNode s = cluster.json(name, "/stats");
    assertEquals(members, s.path("members").asInt(), name + ": " + s);
    assertEquals(inRing, s.path("inRing").asBoolean(), name + ": " + s);
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
