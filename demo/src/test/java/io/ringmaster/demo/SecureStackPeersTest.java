package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.Registration;
import io.ringmaster.Ringmaster;
import io.ringmaster.SharedSecretEncrypt;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The demo's requests between peers on {@code secure-tcp.xml}, the shared-secret stack a peer runs
 * on with {@code jgroupsConfig} and a secret: its fork channel sits above FRAG2, so every request,
 * reply and status report is sealed by {@code SharedSecretEncrypt} below it, and each peer must
 * take the other's. Two {@link InJvmPeer}s on TCP at 127.0.0.1, ports 7978 and 7979 (their failure
 * detectors 100 above), with one copy a key, so that a key written through the peer that does not
 * own it reaches its owner only over the fork channel.
 */
class SecureStackPeersTest {
  private static final String STACK = "ringmaster/jgroups/secure-tcp.xml";
  private static final String SECRET = "s3cret-of-the-peers";
  private static final int KEYS = 40;

  private final String cluster = InJvmPeer.clusterName("secure-stack-peers");
  private final List<InJvmPeer> peers = new ArrayList<>();
  private Registration rebalancing;

  /** On the shared-secret stack at {@code port}, joining through 7978, with one copy a key. */
  private static UnaryOperator<Ringmaster.Builder> secure(int port) {
    return builder -> builder.jgroupsConfig(STACK).secret(SECRET).bindAddress("127.0.0.1").bindPort(port)
        .initialHosts("127.0.0.1[7978]").replicas(1);
  }

  private InJvmPeer start(String id, int port) throws Exception {
    InJvmPeer peer = InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), secure(port));
    peers.add(peer);
    return peer;
  }

  @AfterEach
  void closePeers() {
    Steps all = new Steps();
    if (rebalancing != null) { // first: b's leave on close would hand its keys to a closed peer
      all.run(rebalancing::close);
    }
    all.run(() -> InJvmPeer.closeAll(peers));
    all.throwFirst();
  }

  @Test
  void twoPeersOnTheSharedSecretStack_pullForwardReadAndReport_overTheirSealedForkChannel() throws Exception {
    InJvmPeer a = start("a", 7978);
    // Alone, a's first ownership change gains every key with nobody to pull from: it is settled,
    // and serves pulls.
    a.counters().settled.set(true);
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      keys.add("key-" + i);
      assertEquals(List.of("a"), a.kv().put(keys.get(i), "v" + i).owners());
    }

    InJvmPeer b = start("b", 7979);
    InJvmPeer.awaitOneRing(peers);
    for (InJvmPeer peer : peers) {
      assertNotNull(peer.node().channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class),
          () -> peer.id() + " runs the shared-secret stack");
    }

    // b's join: its rebalancer, listening from now, is handed b's ownership (previous ring empty)
    // and pulls the ranges b gained from a, their owner before b.
    PullRetries retries = new PullRetries(b.transfers()::pull, b.routing()::isLive, b.routing()::owns,
        b.routing()::isLeaving, System::nanoTime, new EventLog());
    b.transfers().retrying(retries::pulling);
    rebalancing = b.node().addOwnershipListener(new Rebalancer(b.routing(), b.store(), b.transfers(), retries,
        b.counters(), new EventLog(), Duration.ofSeconds(5), b.pulls()));
    await("b handled its first ownership change").atMost(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(50)).until(() -> b.counters().settled.get());
    List<String> ofB = keys.stream().filter(k -> b.routing().owners(k).equals(List.of("b"))).toList();
    assertTrue(!ofB.isEmpty() && ofB.size() < KEYS, () -> "b owns some of the keys a wrote, not all: " + ofB);
    for (String key : ofB) {
      assertEquals("v" + key.substring(key.indexOf('-') + 1),
          b.store().get(key).orElseThrow(() -> new AssertionError("b pulled " + key + " from a")).value());
    }
    assertEquals(ofB.size(), b.counters().keysMigratedIn.sum(), "every key b gained came in by its pull");
    assertEquals(1, b.counters().migrationsCompleted.sum(), "b's join pull completed");

    // Writes through the peer that does not own the key, stored on the owner alone, and read back
    // through either peer: keys a did not write alone, since no sweep drops those b took from it.
    String keyOfA = keyOwnedBy(a, "a");
    String keyOfB = keyOwnedBy(a, "b");
    assertEquals(List.of("b"), a.kv().put(keyOfB, "through a").owners());
    assertEquals(List.of("a"), b.kv().put(keyOfA, "through b").owners());
    assertEquals("through a", b.store().get(keyOfB).orElseThrow(() -> new AssertionError("b stored a's write"))
        .value());
    assertFalse(a.store().get(keyOfB).isPresent(), "a, not an owner, kept no copy");
    assertEquals("through b", a.store().get(keyOfA).orElseThrow(() -> new AssertionError("a stored b's write"))
        .value());
    assertFalse(b.store().get(keyOfA).isPresent(), "b, not an owner, kept no copy");
    for (InJvmPeer through : peers) {
      KvService.Read read = through.kv().get(keyOfB);
      assertEquals("through a", read.entry().orElseThrow().value(), "read through " + through.id());
      assertEquals("b", read.servedBy(), "read through " + through.id());
      read = through.kv().get(keyOfA);
      assertEquals("through b", read.entry().orElseThrow().value(), "read through " + through.id());
      assertEquals("a", read.servedBy(), "read through " + through.id());
    }

    // b's status report, broadcast on its fork channel, reaches a's directory.
    PeerDirectory directoryOfA = directory(a);
    PeerDirectory directoryOfB = directory(b);
    directoryOfB.publish(b.node().ring()::contains, b.node()::isInRing);
    await("a has b's report").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> directoryOfA.hasReported("b"));
    assertEquals(b.node().viewId(), directoryOfA.report("b").orElseThrow().status().viewId());
    assertEquals(b.node().ring().checksum(), directoryOfA.report("b").orElseThrow().status().checksum());
  }

  /** The first key {@code written-0, written-1, ...} that {@code owner} alone owns in this peer's ring. */
  private static String keyOwnedBy(InJvmPeer peer, String owner) {
    for (int i = 0; ; i++) {
      String key = "written-" + i;
      if (peer.routing().owners(key).equals(List.of(owner))) {
        return key;
      }
    }
  }

  /** A directory of this peer's reports and the others', taking the reports its fork channel receives. */
  private static PeerDirectory directory(InJvmPeer peer) {
    PeerDirectory directory = new PeerDirectory(sequence -> new Wire.PeerStatus(peer.id(), peer.node().viewId(),
        peer.node().ring().checksum(), 0L, 0L, 0L, 0, sequence), peer.rpc(),
        peer.routing()::processOf, peer.routing()::ownProcess);
    peer.rpc().onStatus(directory::accept);
    return directory;
  }
}
