package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.TestThreads;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An owner restarted while a write to it is still under way: the copy the old process stored
 * went with it, so the writer must not count it, and writes again to the process that now holds
 * the owner's id ({@link KvService#replicate}). Three real nodes in this JVM (the in-memory
 * JGroups stack, replicas 2, no rebalancer, so nothing but the writer brings the new process the
 * key). Writer a, owners b and c; c stores the write at once but holds its answer until the test
 * lets it go, after b has been stopped and started again under its id. a waits for each answer
 * up to {@link #PATIENT}, so that its one call to c is still pending then, however slow the
 * machine: the write is not sent again before c answers, and c forwards nothing (it handled the
 * write before b restarted, when its ring matched a's).
 */
class OwnerRestartMidWriteTest {
  private static final KvService.Timeouts PATIENT =
      new KvService.Timeouts(Duration.ofSeconds(60), Duration.ofSeconds(120));
  private final List<InJvmPeer> peers = new ArrayList<>();
  /** Completed when c may answer the writes it stored. */
  private final CompletableFuture<Void> cMayAnswer = new CompletableFuture<>();

  @AfterEach
  void closePeers() {
    cMayAnswer.complete(null);
    InJvmPeer.closeAll(peers);
  }

  @Test
  void aCopyStoredByTheOwnersOldProcess_doesNotCount_andTheNewProcessGetsTheWrite() throws Exception {
    String cluster = InJvmPeer.clusterName("owner-restart-mid-write");
    TestingAids aids = TestingAids.fromSystemProperties();
    InJvmPeer a = InJvmPeer.start(cluster, "a", aids, builder -> builder, PATIENT, kv -> kv::handleWrite);
    peers.add(a);
    InJvmPeer b = InJvmPeer.start(cluster, "b", aids);
    peers.add(b);
    peers.add(InJvmPeer.start(cluster, "c", aids, builder -> builder, KvService.Timeouts.DEFAULT,
        kv -> in -> kv.handleWrite(in).thenCombine(cMayAnswer, (reply, mayAnswer) -> reply)));
    InJvmPeer c = peers.get(2);
    InJvmPeer.awaitOneRing(peers);
    String key = a.keyOwnedBy(Set.of("b", "c"));
    UUID oldB = b.routing().ownProcess().orElseThrow();

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v1"),
        TestThreads.ON_OWN_THREAD);
    await().atMost(Duration.ofSeconds(10)).until(() -> b.store().get(key).isPresent() && c.store().get(key).isPresent());
    assertFalse(write.isDone(), "a waits for c's answer");

    // b restarts under its id while a waits: its old process, and the copy it stored, are gone.
    peers.remove(b);
    b.close();
    InJvmPeer newB = InJvmPeer.start(cluster, "b", aids);
    peers.add(newB);
    UUID newProcess = newB.routing().ownProcess().orElseThrow();
    assertNotEquals(oldB, newProcess);
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
        .until(() -> a.routing().processOf("b").equals(Optional.of(newProcess)) && a.node().ring().contains("b"));
    assertTrue(newB.store().get(key).isEmpty(), "the new b holds nothing yet: a still waits for c");
    assertFalse(write.isDone());

    cMayAnswer.complete(null);
    KvService.Written written = write.get(30, TimeUnit.SECONDS);

    assertEquals(Set.of("b", "c"), Set.copyOf(written.owners()));
    Entry held = newB.store().get(key).orElseThrow(() -> new AssertionError(
        "a wrote again to the process now holding b's id, rather than count the old one's copy"));
    assertEquals(written.version(), held.version());
    assertEquals("v1", held.value());
    assertEquals(written.version(), c.store().get(key).orElseThrow().version());
  }

  /**
   * The same through a writer that owns the key too (replicas 3: a, b and c own every key): the
   * writer's own copy counts as its own, and b's, stored by its old process, still does not.
   */
  @Test
  void throughAnOwner_aCopyStoredByAnotherOwnersOldProcess_doesNotCount() throws Exception {
    String cluster = InJvmPeer.clusterName("owner-restart-mid-write-owner");
    TestingAids aids = TestingAids.fromSystemProperties();
    InJvmPeer a = InJvmPeer.start(cluster, "a", aids, builder -> builder.replicas(3), PATIENT, kv -> kv::handleWrite);
    peers.add(a);
    InJvmPeer b = InJvmPeer.start(cluster, "b", aids, builder -> builder.replicas(3));
    peers.add(b);
    peers.add(InJvmPeer.start(cluster, "c", aids, builder -> builder.replicas(3), KvService.Timeouts.DEFAULT,
        kv -> in -> kv.handleWrite(in).thenCombine(cMayAnswer, (reply, mayAnswer) -> reply)));
    InJvmPeer c = peers.get(2);
    InJvmPeer.awaitOneRing(peers);
    String key = "k";
    assertEquals(Set.of("a", "b", "c"), Set.copyOf(a.routing().owners(key)));
    UUID oldB = b.routing().ownProcess().orElseThrow();

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v1"),
        TestThreads.ON_OWN_THREAD);
    await().atMost(Duration.ofSeconds(10)).until(() -> b.store().get(key).isPresent() && c.store().get(key).isPresent());
    assertFalse(write.isDone(), "a waits for c's answer");

    peers.remove(b);
    b.close();
    InJvmPeer newB = InJvmPeer.start(cluster, "b", aids, builder -> builder.replicas(3));
    peers.add(newB);
    UUID newProcess = newB.routing().ownProcess().orElseThrow();
    assertNotEquals(oldB, newProcess);
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
        .until(() -> a.routing().processOf("b").equals(Optional.of(newProcess)) && a.node().ring().contains("b"));
    assertTrue(newB.store().get(key).isEmpty(), "the new b holds nothing yet: a still waits for c");

    cMayAnswer.complete(null);
    KvService.Written written = write.get(30, TimeUnit.SECONDS);

    assertEquals(Set.of("a", "b", "c"), Set.copyOf(written.owners()));
    Entry held = newB.store().get(key).orElseThrow(() -> new AssertionError(
        "a wrote again to the process now holding b's id, rather than count the old one's copy"));
    assertEquals(written.version(), held.version());
    assertEquals(written.version(), a.store().get(key).orElseThrow().version());
  }
}
