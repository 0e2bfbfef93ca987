package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.TestThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A write still going round its loop when its peer has left ends with 503 "the peer is stopping"
 * at its next round, instead of calling owners it can no longer reach until its 10 s deadline
 * (which held up the peer's stop, and then had its connection cut); but one that every owner
 * stored in the round under way when the peer stopped is written.
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
        KvService.Timeouts.DEFAULT, kv -> in -> {
          asked.countDown();
          return new CompletableFuture<>();
        }));
    InJvmPeer.awaitOneRing(peers);

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put("k", "v"),
        TestThreads.ON_OWN_THREAD);
    assertTrue(asked.await(20, TimeUnit.SECONDS), "b was asked to store the write");
    a.kv().stopped();
    ExecutionException failed = assertThrows(ExecutionException.class,
        () -> write.get(30, TimeUnit.SECONDS));
    KvService.Unavailable unavailable = assertInstanceOf(
        KvService.Unavailable.class, failed.getCause());
    assertEquals("the peer is stopping", unavailable.getMessage());
  }

  /**
   * A write waiting for an owner's reply when its peer stops ends at once with 503, not when the
   * call times out: the node has left, so no reply can come, and the peer gives requests in flight
   * only a short grace before it cuts their connections. Here the call would wait a minute.
   */
  @Test
  void aWriteWaitingForAReply_whenThePeerStops_endsAsStopping_notAtTheCallsTimeout() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write-waiting");
    CountDownLatch asked = new CountDownLatch(1);
    KvService.Timeouts minute = new KvService.Timeouts(Duration.ofMinutes(1),
        Duration.ofMinutes(2));
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2), minute,
        kv -> kv::handleWrite);
    peers.add(a);
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.Timeouts.DEFAULT, kv -> in -> {
          asked.countDown();
          return new CompletableFuture<>(); // never answers
        }));
    InJvmPeer.awaitOneRing(peers);

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put("k", "v"),
        TestThreads.ON_OWN_THREAD);
    assertTrue(asked.await(20, TimeUnit.SECONDS), "b was asked to store the write");
    a.kv().stopped();
    ExecutionException failed = assertThrows(ExecutionException.class,
        () -> write.get(20, TimeUnit.SECONDS), "ended well before the call's minute");
    assertEquals("the peer is stopping", assertInstanceOf(
        KvService.Unavailable.class, failed.getCause()).getMessage());
  }

  @Test
  void aWriteEveryOwnerStored_whileThePeerStopped_isWritten() throws Exception {
    startAAndB("stopped-write-stored");
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    // b stores the write, then a stops, then b says it stored it.
    b.rpc().handleQuickly(Wire.OP_WRITE, in -> b.kv().handleWrite(in).thenApply(reply -> {
      a.kv().stopped();
      return reply;
    }));
    KvService.Written written = a.kv().put("k", "v");
    assertEquals(List.of("a", "b"), written.owners().stream().sorted().toList());
    assertTrue(b.store().get("k").isPresent(), "b holds it");
  }

  /**
   * A write whose owner refuses it at once, round after round, ends as "the peer is stopping" at
   * the first round after the peer stops, not at its deadline with the owners' refusal: the rounds
   * left would only spin, holding up the peer's stop.
   */
  @Test
  void aWriteWhoseOwnerRefusesAtOnce_whenThePeerStops_endsAsStopping() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write-refused");
    CountDownLatch refused = new CountDownLatch(1);
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2));
    peers.add(a);
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.Timeouts.DEFAULT, kv -> in -> {
          refused.countDown();
          return CompletableFuture.failedFuture(new Rpc.Declined("not now"));
        }));
    InJvmPeer.awaitOneRing(peers);

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put("k", "v"),
        TestThreads.ON_OWN_THREAD);
    assertTrue(refused.await(20, TimeUnit.SECONDS), "b refused the write");
    a.kv().stopped();
    ExecutionException failed = assertThrows(ExecutionException.class,
        () -> write.get(5, TimeUnit.SECONDS), "ended well before the write's 10 s deadline");
    assertEquals("the peer is stopping", assertInstanceOf(
        KvService.Unavailable.class, failed.getCause()).getMessage());
  }

  /**
   * The last peer, leaving, routes by a ring with no owners: a write through it is refused (503),
   * not acknowledged as written to no one.
   */
  @Test
  void aWriteThroughTheLastPeer_whileItLeaves_isRefused() throws Exception {
    InJvmPeer a = InJvmPeer.start(InJvmPeer.clusterName("stopped-write-last"), "a",
        TestingAids.fromSystemProperties(), b -> b.replicas(2));
    peers.add(a);
    a.routing().startLeaving();
    KvService.Unavailable refused = assertThrows(KvService.Unavailable.class,
        () -> a.kv().put("k", "v"));
    assertEquals("the ring has no owners", refused.getMessage());
    assertTrue(a.store().get("k").isEmpty(), "stored nowhere");
  }

  /**
   * A reply already on its way when the peer stops is still waited for (a short grace after the
   * stop): the owner stored the write, so it is written, not answered 503. Here b stores it, a
   * stops, and b's reply comes 0.2 s later (a's grace is 10 s here, not the default 1 s, so that a
   * loaded machine cannot make the reply late).
   */
  @Test
  void aReplyComingJustAfterThePeerStopped_isWaitedFor_andTheWriteIsWritten() throws Exception {
    startAAndB("stopped-write-late-reply", KvService.Timeouts.DEFAULT.withReplyAfterStop(Duration.ofSeconds(10)));
    InJvmPeer a = peers.get(0);
    InJvmPeer b = peers.get(1);
    b.rpc().handleQuickly(Wire.OP_WRITE, in -> b.kv().handleWrite(in).thenApply(reply -> {
      a.kv().stopped();
      return reply;
    }).thenApplyAsync(reply -> reply, CompletableFuture.delayedExecutor(200, TimeUnit.MILLISECONDS)));

    KvService.Written written = a.kv().put("k", "v");

    assertEquals(List.of("a", "b"), written.owners().stream().sorted().toList());
    assertEquals(written.version(), b.store().get("k").orElseThrow().version(), "b holds the write acknowledged");
  }

  /**
   * A write whose owner never answers fails at its deadline naming that owner alone, not the owner
   * that stored it (the writer itself here).
   */
  @Test
  void aWriteWhoseOwnerNeverAnswers_failsAtItsDeadline_namingOnlyThatOwner() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write-deadline");
    // b's call would wait 1 s, past the write's 0.2 s deadline; it gets the time left: one round, then the failure.
    KvService.Timeouts shortDeadline = new KvService.Timeouts(Duration.ofSeconds(1),
        Duration.ofMillis(200));
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        shortDeadline, kv -> kv::handleWrite);
    peers.add(a);
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.Timeouts.DEFAULT, kv -> in -> new CompletableFuture<>())); // never answers
    InJvmPeer.awaitOneRing(peers);

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class,
        () -> a.kv().put("k", "v"));

    assertTrue(failed.getMessage().startsWith("owners [b] of \"k\" did not store the write"), failed.getMessage());
    assertTrue(a.store().get("k").isPresent(), "a stored it");
  }

  /**
   * A write whose owner refuses it at once is sent again when the view changes, or a quarter of a
   * second later, not round after round as fast as the refusals come, until its deadline: here,
   * over its 2 s, at most 9 times (12 allowed), and at least 3 (the third is due at 0.5 s); a
   * spinning writer sends it hundreds of times, one that gives up after the first refusal once.
   */
  @Test
  void aWriteWhoseOwnerRefusesAtOnce_isSentAgainAQuarterSecondApart_untilItsDeadline() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write-rounds");
    AtomicInteger refusals = new AtomicInteger();
    KvService.Timeouts twoSeconds = new KvService.Timeouts(Duration.ofSeconds(2),
        Duration.ofSeconds(2));
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2), twoSeconds,
        kv -> kv::handleWrite);
    peers.add(a);
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.Timeouts.DEFAULT, kv -> in -> {
          refusals.incrementAndGet();
          return CompletableFuture.failedFuture(new Rpc.Declined("not now"));
        }));
    InJvmPeer.awaitOneRing(peers);

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class,
        () -> a.kv().put("k", "v"));

    assertTrue(failed.getMessage().contains("b: not now"), failed.getMessage());
    assertTrue(refusals.get() >= 3 && refusals.get() <= 12, "rounds: " + refusals.get());
  }

  /**
   * A write whose thread is interrupted while it waits for an owner's reply ends as 503
   * "interrupted" at once, and leaves its thread interrupted, for whoever runs it to see.
   */
  @Test
  void aWriteInterruptedWhileItWaitsForAReply_endsAsInterrupted_andKeepsTheInterrupt() throws Exception {
    String cluster = InJvmPeer.clusterName("stopped-write-interrupted");
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2));
    peers.add(a);
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2),
        KvService.Timeouts.DEFAULT, kv -> in -> new CompletableFuture<>())); // never answers
    InJvmPeer.awaitOneRing(peers);

    boolean kept;
    Thread.currentThread().interrupt();
    try {
      KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> a.kv().put("k", "v"));
      assertEquals("interrupted", failed.getMessage());
    } finally {
      kept = Thread.interrupted(); // cleared either way: the next test runs on this thread
    }
    assertTrue(kept, "the writer's thread is still interrupted");
  }

  /** Starts a and b, keeping two copies of each key, once they share a ring. */
  private void startAAndB(String name) throws Exception {
    startAAndB(name, KvService.Timeouts.DEFAULT);
  }

  /** As {@link #startAAndB(String)}, a waiting as {@code aTimeouts} says. */
  private void startAAndB(String name, KvService.Timeouts aTimeouts) throws Exception {
    String cluster = InJvmPeer.clusterName(name);
    peers.add(InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(2), aTimeouts,
        kv -> kv::handleWrite));
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), b -> b.replicas(2)));
    InJvmPeer.awaitOneRing(peers);
  }
}
