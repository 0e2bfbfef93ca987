package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The launcher's {@code status} and its agreement check, against real peer processes: a peer the
 * launcher started that exited and was restarted by hand under the same id is a live member, not
 * one "not yet out of the ring", and its keys count.
 */
class LauncherStatusTest extends WithPeerCluster {

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void status_peerRestartedByHandUnderAGoneId_isListedLive_countsItsKeys_andTheRingAgrees() throws Exception {
    cluster = new PeerCluster("launcher-status", 1);
    cluster.startAll("peer-1", "peer-2");
    List<String> both = List.of("peer-1", "peer-2");
    cluster.awaitSettled(both, Duration.ofSeconds(30));
    int keys = 200;
    for (int k = 0; k < keys; k++) {
      assertEquals(200, cluster.put("peer-1", "status:" + k, "v").statusCode());
    }
    cluster.awaitSettled(both, Duration.ofSeconds(30));
    long peer2Primary = cluster.json("peer-2", "/stats").path("primaryKeys").asLong();
    assertTrue(peer2Primary > 0 && peer2Primary < keys, "peer-2 holds some keys: " + peer2Primary);

    // The launcher started peer-1, and a peer-2 that exited; the peer-2 running now was started by hand.
    PeerCluster.TestPeer p1 = cluster.peer("peer-1");
    List<PeerProcess> launched = List.of(new PeerProcess("peer-1", p1.httpPort(), p1.process(), p1.log()));
    Set<String> gone = Set.of("peer-2");
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ClusterStatus status = new ClusterStatus(http, new PrintStream(bytes, true, StandardCharsets.UTF_8));

    assertTrue(status.agree(launched, gone), "peer-2 answers for its id: not a leftover of the exited one");
    status.print(launched, gone);
    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertTrue(printed.contains("also in it: peer-2 (started by hand)"), printed);
    assertFalse(printed.contains("exited"), printed);
    assertTrue(printed.contains(cluster.peer("peer-2").url()), "peer-2's row, at its endpoint: " + printed);
    assertTrue(printed.contains("keys: " + keys + " primary copies"), "every key counted once: " + printed);
  }
}
