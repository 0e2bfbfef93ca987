package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A write still going round its loop when its peer has left ends with 503 "the peer is stopping"
 * at its next round, instead of calling owners it can no longer reach until its 10 s deadline
 * (which held up the peer's stop, and then had its connection cut).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StoppedWriteTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void aWriteInFlight_whenThePeerStops_endsAsStopping_notAtItsDeadline() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write");
    CountDownLatch asked = new CountDownLatch(1);
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2));
    peers.add(a);
    // b takes every write it is sent and never answers: a's write retries round after round.
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.WriteTimeouts.DEFAULT, kv -> in -> {
          asked.countDown();
          return new CompletableFuture<>();
        }));
    InJvmPeer.awaitOneRing(peers);

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put("k", "v"));
    assertTrue(asked.await(20, TimeUnit.SECONDS), "b was asked to store the write");
    a.kv().stopped();
    ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
        () -> write.get(30, TimeUnit.SECONDS));
    KvService.Unavailable unavailable = org.junit.jupiter.api.Assertions.assertInstanceOf(
        KvService.Unavailable.class, failed.getCause());
    assertEquals("the peer is stopping", unavailable.getMessage());
  }
}
