package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.ringmaster.Ringmaster;
import io.ringmaster.ring.Member;
import io.ringmaster.testing.LocalCluster;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jgroups.protocols.DISCARD;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /admin/split} and {@code /admin/heal} on the HTTP API, over real nodes in this JVM
 * (the in-memory stack): refused with a 403 naming the flag when fault injection is off, a 400
 * with a reason for each bad body (nothing cut off then), and, when on, a split that each side's
 * view shows and a heal after which they merge.
 */
class FaultInjectionRoutesTest {
  private final List<HttpServer> servers = new ArrayList<>();
  private final List<AutoCloseable> closing = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stopEverything() throws Exception {
    servers.forEach(s -> s.stop(0));
    for (AutoCloseable c : closing) {
      c.close();
    }
  }

  /** Off (a peer's default), both routes are 403s naming the flag, whatever the body, and nothing is cut off. */
  @Test
  void adminRoutes_withFaultInjectionOff_are403NamingTheFlag() throws Exception {
    LocalCluster cluster = new LocalCluster("fault-routes-off");
    closing.add(cluster);
    List<Ringmaster> nodes = cluster.startAll("a", "b");
    cluster.awaitAgreement(Duration.ofSeconds(30));
    String url = serve(Faults.of(false, nodes.get(0)));

    for (String path : List.of("/admin/split", "/admin/heal")) {
      HttpResponse<String> r = post(url + path, "{\"ids\": [\"b\"]}");
      assertEquals(403, r.statusCode(), path + ": " + r.body());
      assertEquals("fault injection is off: start the peer with --fault-injection to use /admin/split and"
          + " /admin/heal (only for trying partitions out on one machine)", error(r));
    }
    HttpResponse<String> r = post(url + "/admin/split", "not JSON either");
    assertEquals(403, r.statusCode(), "off, whatever the body: " + r.body());
    assertNull(nodes.get(0).channel().getProtocolStack().findProtocol(DISCARD.class), "nothing cut off");
    HttpResponse<String> byDefault = post(serve(Faults.off()) + "/admin/split", "{\"ids\": [\"b\"]}");
    assertEquals(403, byDefault.statusCode(), "an API made without faults: " + byDefault.body());
    HttpResponse<String> get = http.send(HttpRequest.newBuilder(URI.create(url + "/admin/split")).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(405, get.statusCode(), get.body());
    assertEquals("POST", get.headers().firstValue("Allow").orElse(""));
  }

  @Test
  void split_badBodies_are400WithAReason_andCutNothing() throws Exception {
    LocalCluster cluster = new LocalCluster("fault-routes-bad");
    closing.add(cluster);
    List<Ringmaster> nodes = cluster.startAll("a", "b");
    cluster.awaitAgreement(Duration.ofSeconds(30));
    String url = serve(Faults.of(true, nodes.get(0)));

    assertRefused(url, "not JSON", 400, "the body must be JSON");
    assertRefused(url, "", 400, "the body must be a JSON object");
    assertRefused(url, "[\"b\"]", 400, "the body must be a JSON object");
    assertRefused(url, "{}", 400, "\"ids\" must be a non-empty array");
    assertRefused(url, "{\"ids\": []}", 400, "\"ids\" must be a non-empty array");
    assertRefused(url, "{\"ids\": \"b\"}", 400, "\"ids\" must be a non-empty array");
    assertRefused(url, "{\"ids\": [\"b\", 7]}", 400, "each of \"ids\" must be a non-empty string: 7");
    assertRefused(url, "{\"ids\": [\"b\"], \"side\": 1}", 400, "unknown field \"side\"");
    assertRefused(url, "{\"ids\": [\"nobody\"]}", 400, "no member \"nobody\" in this peer's view; members: [a, b]");
    assertRefused(url, "{\"ids\": [\"b\", \"a\"]}", 400, "a peer cannot be cut off from itself: \"a\"");
    HttpResponse<String> large = post(url + "/admin/split", "{\"ids\": [\"" + "b".repeat(Faults.MAX_BODY_BYTES) + "\"]}");
    assertEquals(413, large.statusCode(), large.body());
    assertEquals("body too large: over " + Faults.MAX_BODY_BYTES + " bytes", error(large));
    HttpResponse<String> query = post(url + "/admin/split?ids=b", "{\"ids\": [\"b\"]}");
    assertEquals(400, query.statusCode(), query.body());

    assertNull(nodes.get(0).channel().getProtocolStack().findProtocol(DISCARD.class), "nothing cut off");
    assertEquals(2, nodes.get(0).members().size());
  }

  /**
   * A web page of any site can make a browser POST a text body to the peer without asking it
   * first: on, both routes refuse a request that names a page's origin (browsers do on every
   * POST), and nothing is cut off; the same request without it splits.
   */
  @Test
  void adminRoutes_fromAWebPage_are403_andCutNothing() throws Exception {
    LocalCluster cluster = new LocalCluster("fault-routes-page");
    closing.add(cluster);
    List<Ringmaster> nodes = cluster.startAll("a", "b");
    cluster.awaitAgreement(Duration.ofSeconds(30));
    String url = serve(Faults.of(true, nodes.get(0)));

    for (String origin : List.of("https://example.com", url, "null")) {
      for (String path : List.of("/admin/split", "/admin/heal")) {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + path))
            .timeout(Duration.ofSeconds(10)).header("Origin", origin).header("Content-Type", "text/plain")
            .POST(HttpRequest.BodyPublishers.ofString("{\"ids\": [\"b\"]}", StandardCharsets.UTF_8)).build(),
            HttpResponse.BodyHandlers.ofString());
        assertEquals(403, r.statusCode(), origin + " " + path + ": " + r.body());
        assertEquals("the /admin routes are not for web pages: refused a request from \"" + origin
            + "\" (its Origin header)", error(r));
      }
    }
    assertNull(nodes.get(0).channel().getProtocolStack().findProtocol(DISCARD.class), "nothing cut off");
    HttpResponse<String> plain = post(url + "/admin/split", "{\"ids\": [\"b\"]}");
    assertEquals(200, plain.statusCode(), "without an Origin: " + plain.body());
    assertEquals(200, post(url + "/admin/heal", "").statusCode());
  }

  /**
   * Each side told to stop hearing the other: each view holds only its own side; a second split
   * while one is in force is a 409; after a heal on both, one view of both again.
   */
  @Test
  void splitThenHeal_onBothSides_splitsTheViews_thenTheyMerge() throws Exception {
    LocalCluster cluster = new LocalCluster("fault-routes-split");
    closing.add(cluster);
    List<Ringmaster> nodes = cluster.startAll("a", "b", "c");
    cluster.awaitAgreement(Duration.ofSeconds(30));
    String a = serve(Faults.of(true, nodes.get(0)));
    String b = serve(Faults.of(true, nodes.get(1)));
    String c = serve(Faults.of(true, nodes.get(2)));

    HttpResponse<String> cutA = post(a + "/admin/split", "{\"ids\": [\"c\"]}");
    assertEquals(200, cutA.statusCode(), cutA.body());
    assertEquals("{\"local\":\"a\",\"cutOffFrom\":[\"c\"]}", cutA.body());
    assertEquals(200, post(b + "/admin/split", "{\"ids\": [\"c\"]}").statusCode());
    HttpResponse<String> cutC = post(c + "/admin/split", "{\"ids\": [\"b\", \"a\", \"b\"]}");
    assertEquals("{\"local\":\"c\",\"cutOffFrom\":[\"a\",\"b\"]}", cutC.body(), "sorted, once each");
    HttpResponse<String> again = post(a + "/admin/split", "{\"ids\": [\"b\"]}");
    assertEquals(409, again.statusCode(), again.body());
    assertEquals("already cut off from [c]; POST /admin/heal first", error(again));

    await("each side alone").atMost(Duration.ofSeconds(30)).until(() ->
        ids(nodes.get(0)).equals(List.of("a", "b")) && ids(nodes.get(1)).equals(List.of("a", "b"))
            && ids(nodes.get(2)).equals(List.of("c")));

    HttpResponse<String> healed = post(a + "/admin/heal", "");
    assertEquals("{\"local\":\"a\",\"healed\":[\"c\"]}", healed.body());
    post(b + "/admin/heal", "");
    post(c + "/admin/heal", "");
    assertEquals("{\"local\":\"c\",\"healed\":[]}", post(c + "/admin/heal", "").body(), "a second heal: nothing");
    await("one view again").atMost(Duration.ofSeconds(60)).until(() ->
        nodes.stream().allMatch(n -> ids(n).equals(List.of("a", "b", "c"))));
  }

  private static List<String> ids(Ringmaster node) {
    return node.members().stream().map(Member::id).sorted().toList();
  }

  private void assertRefused(String url, String body, int status, String reason) throws Exception {
    HttpResponse<String> r = post(url + "/admin/split", body);
    assertEquals(status, r.statusCode(), body + ": " + r.body());
    assertTrue(error(r).startsWith(reason), body + ": " + r.body());
  }

  private static String error(HttpResponse<String> r) {
    JsonNode tree = PeerCluster.parse(r.body());
    return tree.path("error").asText();
  }

  private HttpResponse<String> post(String url, String body) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
        .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** An API on 127.0.0.1 whose only service is {@code faults}; its base URL. */
  private String serve(Faults faults) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    servers.add(server);
    server.createContext("/", new HttpApi(null, null, null, null, null, null, null, faults));
    server.start();
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }
}
