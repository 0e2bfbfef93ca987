package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OpenSockets;
import io.ringmaster.OpenSockets.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A peer started as {@code Main} starts one with its defaults (the localhost stack, the stack's own
 * addresses and ports) opens sockets on 127.0.0.1 alone, read from /proc/self/net: its HTTP port,
 * its cluster ports (TCP 7800-7819, failure detection 7900-7922) and no other listener, every
 * connection between loopback addresses, and no multicast group.
 */
class PeerSocketsTest {
  @Test
  void aPeerWithItsDefaults_listensOn127001Only_onItsHttpAndClusterPorts() throws Exception {
    int port = PeerCluster.freePort();
    Set<Long> before = OpenSockets.inodes();
    Map<String, Integer> groupsBefore = OpenSockets.multicastGroups();
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try (Peer peer = Peer.start(PeerOptions.parse(new String[] {"--id", "sockets", "--http-port", Integer.toString(port),
        "--cluster", InJvmPeer.clusterName("peer-sockets")}, 0))) {
      // A request served, so that the connection it came on is measured too.
      await().atMost(Duration.ofSeconds(30)).until(() -> client.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/stats")).build(), HttpResponse.BodyHandlers.ofString())
          .statusCode() == 200);
      List<Socket> opened = OpenSockets.openedSince(before);
      OpenSockets.assertEach(opened, s -> s.local().getAddress().isLoopbackAddress()
          && (s.remote().getAddress().isLoopbackAddress() || s.listening()), "sockets not on 127.0.0.1");
      List<Integer> listening = opened.stream().filter(Socket::listening).map(s -> s.local().getPort()).sorted().toList();
      assertEquals(3, listening.size(), "the HTTP port, the transport's and the failure detector's: " + opened);
      assertTrue(listening.contains(port), "the HTTP port " + port + ": " + opened);
      assertTrue(listening.stream().filter(p -> p != port).allMatch(p -> p >= 7800 && p <= 7819 || p >= 7900 && p <= 7922)
          && listening.stream().anyMatch(p -> p >= 7800 && p <= 7819), "cluster ports: " + opened);
      assertTrue(opened.stream().allMatch(Socket::tcp), "no UDP: " + opened);
      assertEquals(Set.of(), OpenSockets.joinedSince(groupsBefore), "multicast groups joined");
    }
  }
}
