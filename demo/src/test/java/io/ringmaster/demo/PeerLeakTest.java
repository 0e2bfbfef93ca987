package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ringmaster.LeftBehind;
import java.io.OutputStream;
import java.lang.ref.WeakReference;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer embedded in a JVM that goes on (a test, an application restarting it) leaves nothing
 * behind once closed: no thread, and nothing that keeps it reachable, so that peers started and
 * closed over and over do not add up. Each joins a running peer and serves a write before it closes.
 */
class PeerLeakTest {
  /** Peers started and closed, one after another. */
  private static final int CYCLES = 4;
  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir
  Path dir;

  @Test
  void peersJoiningAndClosedOverAndOver_leaveNoThreadAndAreCollectable() throws Exception {
    Set<Thread> before = LeftBehind.liveThreads();
    List<WeakReference<Peer>> closed = joinAndCloseOverAndOver();
    LeftBehind.awaitNoThreadBut(before, WAIT);
    awaitCollected(closed, "once the peer they joined is closed too");
  }

  /**
   * Starts a peer, then {@link #CYCLES} peers one after another, each joining it, written to and
   * closed; checks that none of these is reachable while the first runs; closes it. A method of its
   * own, so that no local variable of the test's frame holds a peer.
   *
   * @return weak references to every peer closed, the first one's included
   */
  private List<WeakReference<Peer>> joinAndCloseOverAndOver() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-leak");
    List<WeakReference<Peer>> closed = new ArrayList<>();
    Peer member = start(cluster, "member", PeerCluster.freePort());
    try {
      for (int i = 0; i < CYCLES; i++) {
        closed.add(joinAndClose(cluster, member, "p" + i));
      }
      awaitCollected(closed, "while the peer they joined runs");
      closed.add(new WeakReference<>(member));
    } finally {
      member.close();
    }
    return closed;
  }

  /** Starts a peer that joins {@code member}, writes a key through it, and closes it: only a weak reference is kept. */
  private WeakReference<Peer> joinAndClose(String cluster, Peer member, String id) throws Exception {
    int port = PeerCluster.freePort();
    Peer peer = start(cluster, id, port);
    try {
      await(id + " joined").atMost(WAIT).pollInSameThread().until(() -> peer.stats().members() == 2
          && peer.stats().viewId() == member.stats().viewId());
      assertEquals(200, put(port, id), "a write through " + id);
      return new WeakReference<>(peer);
    } finally {
      peer.close();
    }
  }

  private Peer start(String cluster, String id, int port) throws Exception {
    Path config = Files.writeString(dir.resolve(id + ".json"), "{\"nodeId\": \"" + id + "\", \"clusterName\": \""
        + cluster + "\", \"jgroupsConfig\": \"ringmaster/jgroups/in-jvm.xml\"}");
    return Peer.start(PeerOptions.parse(new String[] {"--http-port", Integer.toString(port),
        "--config", config.toString()}, 0));
  }

  /**
   * Writes the key {@code key} through the peer listening on {@code port}: the status code. The
   * connection is closed, not kept for later requests, whose cache would keep a thread of its own.
   */
  private static int put(int port, String key) throws Exception {
    HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/kv/" + key).toURL()
        .openConnection();
    try {
      c.setRequestMethod("PUT");
      c.setDoOutput(true);
      try (OutputStream out = c.getOutputStream()) {
        out.write("v".getBytes(StandardCharsets.UTF_8));
      }
      int status = c.getResponseCode();
      (status < 400 ? c.getInputStream() : c.getErrorStream()).readAllBytes();
      return status;
    } finally {
      c.disconnect();
    }
  }

  /** Collects garbage until no closed peer is reachable, naming those that still are. */
  private static void awaitCollected(List<WeakReference<Peer>> closed, String when) {
    Map<String, List<WeakReference<?>>> weakly = new LinkedHashMap<>();
    for (int i = 0; i < closed.size(); i++) {
      weakly.put(i < CYCLES ? "p" + i : "member", List.of(closed.get(i)));
    }
    LeftBehind.awaitCollected(weakly, "(closed peers) " + when, WAIT);
  }
}
