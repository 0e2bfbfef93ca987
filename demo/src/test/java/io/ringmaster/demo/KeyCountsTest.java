package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ringmaster.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer's key counts: each entry counted by this peer's place among its owners, as the routing
 * names them; counted again only when the store, the ring or the peer's place in it changed (the
 * status asks every second, and each pass read the whole store).
 */
class KeyCountsTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void counts_matchEachEntrysOwners_andAreCountedAgainOnlyAfterAChange() throws Exception {
    InJvmPeer.startAll(peers, "key-counts", List.of("a", "b", "c"));
    InJvmPeer a = peers.get(0);
    Routing routing = a.routing();
    HashRing ring = routing.ring(); // one ring for the expected counts
    long primary = 0;
    long backup = 0;
    long stray = 0;
    for (int i = 0; i < 600; i++) {
      String key = "user:" + i;
      a.store().merge(Entry.of(key, "v" + i, new Version(VersionClock.systemMicros(), "a")));
      int role = routing.indexOfSelf(routing.owners(ring, key));
      primary += role == 0 ? 1 : 0;
      backup += role > 0 ? 1 : 0;
      stray += role < 0 ? 1 : 0;
    }
    a.store().merge(Entry.tombstone("gone", new Version(VersionClock.systemMicros(), "a")));
    KeyCounts.Cached cached = new KeyCounts.Cached();

    KeyCounts counts = cached.of(a.store(), routing);
    assertEquals(ring, routing.ring(), "no view change meanwhile (else the counts may differ)");
    assertEquals(new KeyCounts(primary, backup, stray, 1), counts);
    assertEquals(counts, cached.of(a.store(), routing));
    assertEquals(1, cached.passes, "nothing changed: not counted again");

    a.store().merge(Entry.of("user:0", "newer", new Version(VersionClock.systemMicros() + 1, "a")));
    assertEquals(counts, cached.of(a.store(), routing), "the same keys");
    assertEquals(2, cached.passes, "the store changed: counted again");
    a.store().merge(Entry.tombstone("gone-too", new Version(VersionClock.systemMicros(), "a")));
    assertEquals(2, cached.of(a.store(), routing).tombstones());
    assertEquals(3, cached.passes);

    // c stops: a's ring changes and its store does not (no rebalancer here), and the counts follow the ring.
    peers.remove(2).close();
    await("a's ring without c").atMost(Duration.ofSeconds(30))
        .until(() -> routing.ring().members().size() == 2);
    HashRing two = routing.ring();
    long[] now = new long[3];
    for (Entry e : a.store().all()) {
      if (!e.deleted()) {
        int role = routing.indexOfSelf(routing.owners(two, e.key()));
        now[role == 0 ? 0 : role > 0 ? 1 : 2]++;
      }
    }
    assertEquals(new KeyCounts(now[0], now[1], now[2], 2), cached.of(a.store(), routing));
    assertEquals(4, cached.passes, "the ring changed: counted again");
    assertEquals(0, now[2], "with two members and two replicas, a owns every key");
  }

  /**
   * A peer out of the ring (its node closed, nothing noted it in the ring: see {@link
   * Routing#inRing}) owns nothing: every entry it holds is a stray, tombstones apart.
   */
  @Test
  void aPeerOutOfTheRing_countsEveryEntryAsAStray() throws Exception {
    InJvmPeer.startAll(peers, "key-counts-out", List.of("a", "b"));
    InJvmPeer a = peers.get(0);
    for (int i = 0; i < 5; i++) {
      a.store().merge(Entry.of("user:" + i, "v" + i, new Version(VersionClock.systemMicros(), "a")));
    }
    a.store().merge(Entry.tombstone("gone", new Version(VersionClock.systemMicros(), "a")));
    a.node().close();

    assertEquals(List.of("b"), a.routing().ring().members().stream().map(m -> m.id()).toList());
    assertEquals(new KeyCounts(0, 0, 5, 1), new KeyCounts.Cached().of(a.store(), a.routing()));
  }
}
