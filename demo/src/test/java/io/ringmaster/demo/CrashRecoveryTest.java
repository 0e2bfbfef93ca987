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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A peer killed with SIGKILL while writes go on: its keys come back from the surviving replicas. */
class CrashRecoveryTest extends WithPeerCluster {
  private static final System.Logger LOG = System.getLogger(CrashRecoveryTest.class.getName());
  static final int KEYS = 5_000;

  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang fails; the awaits inside bound each step
  void killMinus9_duringWritesWithTwoReplicas_losesNoAcknowledgedKey() throws Exception {
    cluster = new PeerCluster("crash", 2);
    cluster.startAll("peer-1", "peer-2", "peer-3", "peer-4");
    cluster.awaitSettled(List.of("peer-1", "peer-2", "peer-3", "peer-4"), Duration.ofSeconds(30));
    writer = new KeyWriter(cluster, 24);

    CompletableFuture<Void> writes = writer.writeAll(KEYS);
    await().atMost(Duration.ofSeconds(60)).until(() -> writer.ackedWrites.get() >= KEYS * 2 / 5);
    Map<String, String> beforeKill = writer.acknowledged();
    long killedAt = System.nanoTime();
    long killedAtEpoch = System.currentTimeMillis();
    cluster.kill("peer-3");
    List<String> survivors = List.of("peer-1", "peer-2", "peer-4");

    // The moment the writes end, taken as they complete (a callback's field, read after get(),
    // could still be unset: get() returns once the future completes, maybe before its callbacks ran).
    CompletableFuture<Long> writesDoneAt = writes.thenApply(done -> System.nanoTime());

    // Keys acknowledged before the kill, read through the survivors in turn (one full pass each
    // time the condition is polled) until one pass finds every one of them: reads fall back to the
    // surviving replica at once, so this is mostly how long failure detection and one pass take.
    AtomicInteger passes = new AtomicInteger();
    AtomicLong passStartedMillis = new AtomicLong();
    await("every key acknowledged before the kill readable through a survivor").atMost(Duration.ofSeconds(60))
        .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
          passStartedMillis.set(millisSince(killedAt));
          List<String> missing = writer.mismatches(survivors.get(passes.getAndIncrement() % survivors.size()),
              beforeKill.keySet(), KeyWriter::anyWritten);
          assertTrue(missing.isEmpty(), () -> missing.size() + " unreadable, e.g. " + missing.get(0));
        });
    long readableMillis = millisSince(killedAt);

    long writesDoneMillis = (writesDoneAt.get(90, TimeUnit.SECONDS) - killedAt) / 1_000_000;
    cluster.awaitSettled(survivors, Duration.ofSeconds(60));
    long settledMillis = millisSince(killedAt);

    Map<String, String> acked = writer.acknowledged();
    assertEquals(KEYS, acked.size());
    List<String> lost = new ArrayList<>();
    for (String peer : survivors) {
      lost.addAll(writer.mismatches(peer, acked));
    }
    long verifiedMillis = millisSince(killedAt);
    assertEquals(List.of(), lost.subList(0, Math.min(20, lost.size())), lost.size() + " reads failed");
    writer.assertNoUnexpectedReplies();

    // Every key is back to two copies: one primary and one backup, on the survivors.
    long primary = 0;
    long backup = 0;
    for (String peer : survivors) {
      primary += cluster.json(peer, "/stats").path("primaryKeys").asLong();
      backup += cluster.json(peer, "/stats").path("backupKeys").asLong();
    }
    assertEquals(KEYS, primary, "primary copies");
    assertEquals(KEYS, backup, "backup copies");

    // From the survivors' own event logs: when they saw the crash, and when their pulls finished.
    long viewMillis = 0;
    long migratedMillis = 0;
    for (String peer : survivors) {
      long crashView = -1;
      for (JsonNode e : cluster.json(peer, "/events/recent")) {
        if (e.path("type").asText().equals("membership") && e.path("left").toString().contains("peer-3")) {
          crashView = e.path("viewId").asLong();
          viewMillis = Math.max(viewMillis, e.path("time").asLong() - killedAtEpoch);
        }
        if (e.path("type").asText().equals("migration") && e.path("viewId").asLong() == crashView) {
          migratedMillis = Math.max(migratedMillis, e.path("time").asLong() - killedAtEpoch);
        }
      }
    }
    String timeline = String.format("kill -9 -> all survivors installed the view without peer-3: %d ms; -> their "
        + "pulls from the surviving replicas finished: %d ms", viewMillis, migratedMillis);
    System.out.println(timeline);
    String figures = String.format("kill -9 of peer-3 with %d of %d keys acknowledged (2 replicas, 4 peers): all keys "
            + "acknowledged before the kill read back by %d ms (first complete pass started at %d ms); all writes "
            + "acknowledged by %d ms (%d attempts retried); ring agreed, migrations and sweeps done by %d ms; all %d keys "
            + "verified on each of %d survivors by %d ms", beforeKill.size(), KEYS, readableMillis, passStartedMillis.get(),
        writesDoneMillis, writer.failedAttempts.get(), settledMillis, KEYS, survivors.size(), verifiedMillis);
    LOG.log(System.Logger.Level.INFO, figures);
    System.out.println(figures);
  }

  private static long millisSince(long nanos) {
    return (System.nanoTime() - nanos) / 1_000_000;
  }

  /**
   * A pull that fails five times is tried again (PullRetries). After a crash, the peer that gains
   * the dead peer's backup ranges pulls them from the surviving replica, which here refuses the
   * first five pulls it serves (the testing aid {@link TestingAids#REFUSE_PULLS}): the pull fails,
   * and without a retry those keys would keep one copy.
   */
  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS) // a hang fails; the awaits inside bound each step
  void aPullThatFailsAfterACrash_isTriedAgain_andEveryKeyGetsItsSecondCopy() throws Exception {
    int keys = 500;
    cluster = new PeerCluster("pull-retry", 2);
    cluster.startAll("peer-1", "peer-2");
    // The last to join: nobody pulls from it until the crash.
    cluster.awaitReady(cluster.start("peer-3", "peer-3", Map.of(TestingAids.REFUSE_PULLS, "5")));
    cluster.awaitSettled(List.of("peer-1", "peer-2", "peer-3"), Duration.ofSeconds(30));
    for (int k = 0; k < keys; k++) {
      assertEquals(200, cluster.put("peer-1", "retry-" + k, "v" + k).statusCode());
    }
    // A tenth deleted: their tombstones come with the pulls, or the dead peer's keys would read as
    // never written, and a stray copy could bring them back.
    List<String> deleted = new ArrayList<>();
    for (int k = 0; k < keys; k += 10) {
      String key = "retry-" + k;
      assertEquals(200, cluster.send("peer-1", HttpRequest.newBuilder(cluster.uri("peer-1",
          PeerCluster.keyPath(key))).DELETE()).statusCode(), key);
      deleted.add(key);
    }
    int live = keys - deleted.size();

    long failedBefore = cluster.json("peer-2", "/stats").path("migrationsFailed").asLong(); // since it started

    cluster.kill("peer-1");
    List<String> survivors = List.of("peer-2", "peer-3");
    // peer-2 gains what peer-1 and peer-3 held, and pulls it from peer-3, which refuses.
    await("peer-2's pull failed").atMost(Duration.ofSeconds(60)).ignoreExceptions()
        .until(() -> cluster.json("peer-2", "/stats").path("migrationsFailed").asLong() > failedBefore);
    cluster.awaitSettled(survivors, Duration.ofSeconds(60));
    await("the retry brought every key's second copy").atMost(Duration.ofSeconds(60)).ignoreExceptions()
        .until(() -> cluster.json("peer-2", "/stats").path("pullRetriesPending").asInt() == 0
            && copies(survivors) == 2L * live);
    for (String peer : survivors) {
      JsonNode held = cluster.json(peer, "/keys");
      assertEquals(live, held.path("count").asInt(), peer + " holds every key (two peers, two replicas)");
      assertEquals(deleted.size(), cluster.json(peer, "/stats").path("tombstones").asInt(),
          peer + " holds every tombstone");
      for (String key : deleted) {
        HttpResponse<String> r = cluster.get(peer, key);
        assertEquals(404, r.statusCode(), () -> key + " via " + peer + ": " + r.body());
        assertTrue(PeerCluster.parse(r.body()).path("deleted").asBoolean(), () -> key + " via " + peer + ": " + r.body());
      }
    }
  }

  private long copies(List<String> peers) {
    long copies = 0;
    for (String peer : peers) {
      JsonNode stats = cluster.json(peer, "/stats");
      copies += stats.path("primaryKeys").asLong() + stats.path("backupKeys").asLong();
    }
    return copies;
  }
}
