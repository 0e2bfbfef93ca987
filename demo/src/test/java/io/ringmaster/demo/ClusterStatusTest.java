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
    return peer(id, inRing, 200);
  }

  /** A stand-in peer whose {@code /stats} answers {@code status} (a refusal's JSON reason unless 200). */
  private PeerProcess peer(String id, boolean inRing, int status) throws Exception {
    return peer(id, inRing, status, "ab12", "{\"error\":\"the peer is starting\"}");
  }

  /**
   * A stand-in peer reporting view 3 with {@code checksum}, whose {@code /stats} answers
   * {@code status}, with {@code refusal} as its body unless 200.
   */
  private PeerProcess peer(String id, boolean inRing, int status, String checksum, String refusal) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    byte[] stats = ("{\"id\":\"" + id + "\",\"viewId\":3,\"checksum\":\"" + checksum + "\",\"members\":2,"
        + "\"inRing\":" + inRing + ",\"primaryKeys\":0,\"backupKeys\":0,\"strayKeys\":0}")
        .getBytes(StandardCharsets.UTF_8);
    // The ring as both peers report it: both members, so that only inRing can tell them apart.
    byte[] ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}"
        .getBytes(StandardCharsets.UTF_8);
    if (status != 200) {
      stats = refusal.getBytes(StandardCharsets.UTF_8);
    }
    for (Map.Entry<String, byte[]> reply : Map.of("/stats", stats, "/ring", ring).entrySet()) {
      int code = reply.getKey().equals("/stats") ? status : 200;
      server.createContext(reply.getKey(), ex -> {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, reply.getValue().length);
        ex.getResponseBody().write(reply.getValue());
        ex.close();
      });
    }
    server.start();
    servers.add(server);
    return new PeerProcess(id, server.getAddress().getPort(), null, null);
  }

  /** A status that prints to {@code out}. */
  private static ClusterStatus status(ByteArrayOutputStream out) {
    return new ClusterStatus(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
        new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  /** What status prints for these peers, once its agreement check said they do not agree; never "agree (". */
  private static String printedDisagreeing(List<PeerProcess> peers) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ClusterStatus status = status(bytes);
    assertFalse(status.agree(peers, Set.of()));
    status.print(peers, Set.of());
    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertFalse(printed.contains("agree ("), printed);
    return printed;
  }

  @Test
  void aPeerNotInTheRing_isNamed_andTheRingIsNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", false)));
    assertTrue(printed.contains("ring: not in the ring: peer-2 (refused, as when another peer holds its id, or"
        + " rejoining"), printed);

    List<PeerProcess> both = List.of(peer("peer-1", true), peer("peer-2", true));
    assertTrue(status(new ByteArrayOutputStream()).agree(both, Set.of()), "the same stand-ins, both in the ring, agree");
  }

  /**
   * A ring that still holds a peer that exited (killed, not yet out of the view) is no agreement;
   * one that holds a peer started by hand, which this launcher never ran, is.
   */
  @Test
  void aRingStillHoldingAPeerThatExited_isNotSaidToAgree() throws Exception {
    List<PeerProcess> one = List.of(peer("peer-1", true)); // its ring holds peer-1 and peer-2
    ClusterStatus status = status(new ByteArrayOutputStream());
    assertTrue(status.agree(one, Set.of()), "peer-2, started by hand");
    assertFalse(status.agree(one, Set.of("peer-2")), "peer-2 exited, and no process answers for it");
  }

  /** A peer that answers with a refusal is named with its reason, and the ring is not said to agree. */
  @Test
  void aPeerThatDoesNotServeYet_isNamedWithItsReason_andTheRingIsNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", true, 503)));
    assertTrue(printed.contains("(the peer is starting)"), printed);
    assertTrue(printed.contains("ring: peers DISAGREE or did not answer"), printed);
  }
  /** Peers in the ring, all answering, but on two rings (other checksums of one view): no agreement. */
  @Test
  void peersOnTwoRings_areNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true, 200, "ab12", ""),
        peer("peer-2", true, 200, "cd34", "")));
    assertTrue(printed.contains("ring: peers DISAGREE or did not answer: [3/ab12, 3/cd34]"), printed);
  }

  /**
   * Something else on a peer's port, answering with a page that is no JSON (a 404 of another
   * server): the peer is named as having answered that status, not as silent.
   */
  @Test
  void aPeerAnsweringWithAPageThatIsNoJson_isNamedWithTheStatus() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", true, 404, "ab12",
        "<h1>Not Found</h1>")));
    assertTrue(printed.contains("(answered 404)"), printed);
    PeerProcess page = peer("peer-3", true);
    servers.get(servers.size() - 1).removeContext("/stats");
    servers.get(servers.size() - 1).createContext("/stats", ex -> {
      byte[] html = "<h1>Hello</h1>".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, html.length);
      ex.getResponseBody().write(html);
      ex.close();
    });
    printed = printedDisagreeing(List.of(peer("peer-1", true), page));
    assertTrue(printed.contains("(answered 200, not with a peer's JSON)"), printed);
  }
}
