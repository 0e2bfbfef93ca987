package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A read that finds an owner behind sends it the newest copy ({@link KvService#get}): an owner
 * whose copy is older, and one that had none at all (missed the write while it was down, say),
 * which would otherwise stay a replica short. Three real nodes in this JVM (the in-memory JGroups
 * stack), replicas 2, with read repair on.
 */
class ReadRepairTest {
  private final List<InJvmPeer> nodes = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;
  private InJvmPeer c;

  @BeforeEach
  void startThreePeers() throws Exception {
    String cluster = InJvmPeer.clusterName("read-repair");
    for (String id : List.of("a", "b", "c")) {
      nodes.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), builder -> builder,
          KvService.WriteTimeouts.DEFAULT, kv -> kv::handleWrite, key -> List.of(), owner -> true, true));
    }
    InJvmPeer.awaitOneRing(nodes);
    a = nodes.get(0);
    b = nodes.get(1);
    c = nodes.get(2);
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(nodes);
  }

  @Test
  void aReadThroughANonOwner_repairsTheOwnerThatHadNoCopy() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(v1); // b missed the write

    assertEquals(Optional.of("v1"), c.kv().get(key).entry().map(Entry::value));

    await("b repaired").atMost(Duration.ofSeconds(20)).until(() -> b.store().get(key).equals(Optional.of(v1)));
    assertEquals(1, c.counters().readRepairs.sum(), "one repair, of b");
  }

  @Test
  void aReadThroughAnOwner_repairsTheOwnerWithAnOlderCopy_andLeavesANewerOneAlone() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    long now = VersionClock.systemMicros();
    Entry v0 = Entry.of(key, "v0", new Version(now - 1_000_000L, "b"));
    Entry v1 = Entry.of(key, "v1", new Version(now, "a"));
    a.store().merge(v1);
    b.store().merge(v0);

    assertEquals(Optional.of("v1"), a.kv().get(key).entry().map(Entry::value));

    await("b repaired").atMost(Duration.ofSeconds(20)).until(() -> b.store().get(key).equals(Optional.of(v1)));
    assertEquals(1, a.counters().readRepairs.sum(), "one repair, of b; a held the newest");
    assertEquals(Optional.of(v1), a.store().get(key));
  }
  /**
   * A key no owner holds reads as not found, through an owner and through a non-owner alike, with
   * read repair on (nothing to repair), and the read says which owner answered; and the repair's
   * owner named is the one whose copy was returned, not the first that answered.
   */
  @Test
  void aKeyNoOwnerHolds_readsAsNotFound_andARead_namesTheOwnerWhoseCopyItReturns() {
    String missing = a.keyOwnedBy(Set.of("a", "b"));
    assertEquals(Optional.empty(), a.kv().get(missing).entry(), "through an owner");
    assertEquals(Optional.empty(), c.kv().get(missing).entry(), "through a non-owner");
    assertEquals(0, a.counters().readRepairs.sum() + c.counters().readRepairs.sum());

    String key = null;
    for (int i = 0; key == null; i++) { // b first in the ring's order, so it is asked first
      key = a.routing().owners("key-" + i).equals(List.of("b", "a")) ? "key-" + i : null;
    }
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "a"));
    a.store().merge(v1); // only a, the second owner, holds it
    KvService.Read read = c.kv().get(key);
    assertEquals(Optional.of(v1), read.entry());
    assertEquals("a", read.servedBy(), "the owner whose copy it is");
  }
  /**
   * An owner's quick "none" does not start the read's grace: only a copy found does. The other
   * owner, which holds the key and answers 0.8 s later (past the grace after a "none"), is waited
   * for, and its copy read.
   */
  @Test
  void anOwnersQuickNone_doesNotCutShortTheWaitForAnOwnerHoldingTheKey() {
    String key = a.keyOwnedBy(Set.of("a", "b"));
    Entry v1 = Entry.of(key, "v1", new Version(VersionClock.systemMicros(), "b"));
    b.store().merge(v1); // a missed the write
    b.rpc().handleQuickly(Wire.OP_GET, in -> b.kv().handleGet(in).thenApplyAsync(reply -> reply,
        java.util.concurrent.CompletableFuture.delayedExecutor(800, java.util.concurrent.TimeUnit.MILLISECONDS)));

    assertEquals(Optional.of("v1"), a.kv().get(key).entry().map(Entry::value));
  }
}
