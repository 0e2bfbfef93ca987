package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The repair after a partition heals. "c" is cut off alone (see {@link DuplicateIdHealTest} for
 * the ports) and takes writes there, each key with a single copy. In the merged ring of four
 * peers with two replicas, about half of those keys stay with "c" and get their second owner
 * among the others: nothing in the ownership change moves them (c keeps them, the other owner
 * gains nothing from its own side), so only the repair's push brings the second copy. Every peer
 * refuses the first repair pushes from each sender, as many as a push tries, so each peer's first
 * repair fails, and only a repair that tries again gives every key its two copies. (A refusal is
 * counted per request, and a push tries each request {@link Transfers#ATTEMPTS} times.) Keys
 * written on the other side before c started, and deleted through c, end deleted on every owner:
 * the newer tombstones win over the older values, whoever holds them.
 */
class MergeRepairTest extends WithPeerCluster {
  private static final int KEYS = 60;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void repairPushesRefusedAtFirst_areTriedAgain_andEveryKeyWrittenApartGetsItsSecondCopy(@TempDir Path dir)
      throws Exception {
    String config = PeerCluster.healableConfig(dir).toString();
    cluster = new PeerCluster("merge-repair", 2);
    Map<String, String> refuse = Map.of(TestingAids.REFUSE_REPAIRS, Integer.toString(Transfers.ATTEMPTS));
    cluster.awaitReady(cluster.start("a", "a", refuse, "--config", config));
    cluster.awaitReady(cluster.start("b", "b", refuse, "--config", config));
    // Keys written on a and b's side, then deleted on c's, where they never were: after the heal
    // the deletes, newer, win, whoever owns the keys then (c's tombstones are strays where it
    // does not own them, for the repair or the sweep to hand on).
    List<String> deletedApart = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      String key = "deleted-apart-" + i;
      assertEquals(200, cluster.put("a", key, "old").statusCode(), key);
      deletedApart.add(key);
    }
    cluster.awaitReady(cluster.start("c", "c", PeerCluster.with(refuse, "ringmaster.bind_port", "7860",
        "ringmaster.initial_hosts", "127.0.0.1[7850]", "ringmaster.join_timeout", "1s"), "--config", config));
    assertEquals(1, cluster.json("c", "/stats").path("members").asInt(), "c is alone");
    for (String key : deletedApart) {
      var r = cluster.send("c", HttpRequest.newBuilder(cluster.uri("c", PeerCluster.keyPath(key))).DELETE());
      assertEquals(200, r.statusCode(), () -> "delete " + key + " via c: " + r.body());
    }

    List<String> keys = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      String key = "apart-" + i;
      var r = cluster.put("c", key, "v-" + key);
      assertEquals(200, r.statusCode(), () -> "put " + key + " via c: " + r.body());
      keys.add(key);
    }

    // The heal: d binds 7850 and joins a and b; c finds it there, and through it the others.
    cluster.awaitReady(cluster.start("d", "d", PeerCluster.with(refuse, "ringmaster.bind_port", "7850"), "--config", config));
    List<String> all = List.of("a", "b", "c", "d");
    await("the partition healed").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> all.stream()
            .allMatch(p -> cluster.json(p, "/stats").path("members").asInt() == 4));
    await("every key written apart held by both its owners").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500)).ignoreExceptions()
        .untilAsserted(() -> assertEquals(Map.of(), notHeldAsPrimaryAndBackup(all, keys)));
    await("no repair left to try again").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> all.stream()
            .noneMatch(p -> cluster.json(p, "/stats").path("repairRetryPending").asBoolean(true)));

    String log = Files.readString(cluster.peer("c").log());
    assertTrue(log.contains("could not reach") && log.matches("(?s).*repair after merge view \\d+ done after \\d+ failed rounds.*"),
        "c's first repair was refused, and its second went through: see " + cluster.peer("c").log());
    for (String key : keys) {
      assertEquals("v-" + key, PeerCluster.parse(cluster.get("a", key).body()).path("value").asText(), key);
    }
    // Every owner of a key deleted apart holds the tombstone, not the older value: read locally, so
    // that no read through the cluster finds the newest copy and repairs it first.
    await("the deletes made apart held by every owner").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() -> {
          for (String key : deletedApart) {
            List<String> owners = ownersInTheRingOfA(key);
            assertEquals(2, owners.size(), key + ": " + owners);
            for (String owner : owners) {
              var local = cluster.send(owner, HttpRequest.newBuilder(cluster.uri(owner,
                  PeerCluster.keyPath(key) + "?local=true")).GET());
              assertEquals(200, local.statusCode(), () -> key + " on " + owner + ": " + local.body());
              assertTrue(PeerCluster.parse(local.body()).path("deleted").asBoolean(),
                  () -> key + " on " + owner + ": " + local.body());
              assertEquals(owner.equals(owners.get(0)) ? "primary" : "backup",
                  PeerCluster.parse(local.body()).path("role").asText(), () -> key + " on " + owner);
            }
          }
        });
    for (String key : deletedApart) {
      var r = cluster.get("a", key);
      assertEquals(404, r.statusCode(), () -> key + " came back: " + r.body());
    }
  }

  /** The owners of a key in a's ring, built here from what a's /ring says of it (its checksum checked). */
  private List<String> ownersInTheRingOfA(String key) {
    JsonNode said = cluster.json("a", "/ring?ranges=false");
    HashRing.Builder builder = HashRing.builder()
        .virtualNodes(said.path("virtualNodes").asInt());
    for (JsonNode m : said.path("members")) {
      builder.add(new Member(m.path("id").asText(), m.path("weight").asDouble(),
          m.path("zone").asText()));
    }
    HashRing ring = builder.build();
    assertEquals(said.path("checksum").asText(), Long.toHexString(ring.checksum()), "the ring a has");
    return ring.owners(key, said.path("replicas").asInt()).stream().map(Member::id).toList();
  }

  /**
   * The keys that not exactly one peer holds as primary and one as backup, with how many hold
   * each as which ("primary count/backup count").
   */
  private Map<String, String> notHeldAsPrimaryAndBackup(List<String> peers, List<String> keys) {
    Map<String, int[]> copies = new TreeMap<>();
    keys.forEach(k -> copies.put(k, new int[2]));
    for (String p : peers) {
      for (int r = 0; r < 2; r++) {
        int role = r;
        for (JsonNode k : cluster.json(p, "/keys?role=" + (role == 0 ? "primary" : "backup")).path("keys")) {
          copies.computeIfPresent(k.asText(), (key, n) -> {
            n[role]++;
            return n;
          });
        }
      }
    }
    Map<String, String> wrong = new TreeMap<>();
    copies.forEach((key, n) -> {
      if (n[0] != 1 || n[1] != 1) {
        wrong.put(key, n[0] + "/" + n[1]);
      }
    });
    return wrong;
  }
}
