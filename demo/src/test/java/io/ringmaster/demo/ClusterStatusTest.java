package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The launcher's {@code status} against two stand-in peers on 127.0.0.1 that report the same view
 * and checksum, one of them refused (not in the ring, as when another peer holds its id): status
 * must not say the peers agree, as its agreement check does not.
 */
class ClusterStatusTest {
  private final List<HttpServer> servers = new ArrayList<>();

  @AfterEach
  void stop() {
    servers.forEach(s -> s.stop(0));
  }

  private PeerProcess peer(String id, boolean inRing) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    byte[] stats = ("{\"node\":\"" + id + "\",\"viewId\":3,\"checksum\":\"ab12\",\"members\":2,\"inRing\":" + inRing
        + ",\"primaryKeys\":0,\"backupKeys\":0,\"strayKeys\":0}").getBytes(StandardCharsets.UTF_8);
    // The ring as both peers report it: both members, so that only inRing can tell them apart.
    byte[] ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}"
        .getBytes(StandardCharsets.UTF_8);
    for (Map.Entry<String, byte[]> reply : Map.of("/stats", stats, "/ring", ring).entrySet()) {
      server.createContext(reply.getKey(), ex -> {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, reply.getValue().length);
        ex.getResponseBody().write(reply.getValue());
        ex.close();
      });
    }
    server.start();
    servers.add(server);
    return new PeerProcess(id, server.getAddress().getPort(), null, null);
  }

  @Test
  void aPeerNotInTheRing_isNamed_andTheRingIsNotSaidToAgree() throws Exception {
    List<PeerProcess> peers = List.of(peer("peer-1", true), peer("peer-2", false));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ClusterStatus status = new ClusterStatus(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
        new PrintStream(bytes, true, StandardCharsets.UTF_8));
    assertFalse(status.agree(peers, Set.of()));
    status.print(peers, Set.of());
    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertFalse(printed.contains("agree ("), printed);
    assertTrue(printed.contains("ring: not in the ring: peer-2 (refused, as when another peer holds its id, or"
        + " rejoining"), printed);

    List<PeerProcess> both = List.of(peer("peer-1", true), peer("peer-2", true));
    assertTrue(status.agree(both, Set.of()), "the same stand-ins, both in the ring, agree");
  }
}
