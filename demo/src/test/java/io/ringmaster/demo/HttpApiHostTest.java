package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Requests addressed to a host name other than localhost are refused before any route runs: a
 * page of another site that made its own name resolve to 127.0.0.1 (DNS rebinding) must not read
 * or write keys. IP addresses are served: no name is looked up for them. No service is given to the API, so a request that got past the check to a route that
 * uses one would be a 500, and one to no route is a 404.
 */
class HttpApiHostTest {
  private HttpServer http;

  @BeforeEach
  void start() throws Exception {
    http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
  }

  @AfterEach
  void stop() {
    http.stop(0);
  }

  @ParameterizedTest
  @ValueSource(strings = {"evil.example:8081", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example:80",
      "localhost@evil.example", "[::1", "[::1].evil.example", "[::1]@evil.example", "[::1]x", "localhost:80x",
      "localhost:8081:80", ".localhost", "localhost.evil:80", "1.2.3.4.evil.example", "[evil.example]:80",
      "7f000001.evil.example"})
  void aRequestNamingAnotherHost_isRefusedWith421_beforeAnyRoute(String host) throws Exception {
    for (String request : new String[] {"PUT /kv/a", "DELETE /kv/a", "GET /kv/a", "GET /keys", "GET /nowhere"}) {
      String reply = send(request + " HTTP/1.1", "Host: " + host + "\r\n");
      assertTrue(reply.startsWith("HTTP/1.1 421 "), request + " " + host + ": " + reply);
      assertTrue(reply.contains("{\"error\":\"this peer answers requests addressed to localhost or an IP address"
          + " (127.0.0.1) only, not " + host), reply);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"127.0.0.1", "127.0.0.1:8081", "localhost", "LocalHost:8081", "localhost.:8081",
      "[::1]:8081", "peer-a.localhost:8081", "0.0.0.0:8081", "127.0.0.2", "10.0.0.7:8081", "[::ffff:127.0.0.1]:80"})
  void aRequestNamingLocalhostOrAnIpAddress_reachesItsRoute(String host) throws Exception {
    String reply = send("GET /nowhere HTTP/1.1", "Host: " + host + "\r\n");
    assertTrue(reply.startsWith("HTTP/1.1 404 ") && reply.contains("no route GET /nowhere"), host + ": " + reply);
  }

  @Test
  void theHostOfATargetInAbsoluteForm_isCheckedToo() throws Exception {
    String elsewhere = send("GET http://evil.example:8081/nowhere HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(elsewhere.startsWith("HTTP/1.1 421 ") && elsewhere.contains("not evil.example:8081"), elsewhere);
    String here = send("GET http://localhost:8081/nowhere HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(here.startsWith("HTTP/1.1 404 ") && here.contains("no route GET /nowhere;"),
        "served as its path: " + here);
    // Absolute form without an authority: no host to check, so refused as one not this peer's.
    String noAuthority = send("GET http:/nowhere HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(noAuthority.startsWith("HTTP/1.1 421 "), noAuthority);
  }

  @Test
  void aMissingHost_isRefusedForHttp11_andServedForHttp10() throws Exception {
    String http11 = send("GET /nowhere HTTP/1.1", "");
    assertTrue(http11.startsWith("HTTP/1.1 400 ") && http11.contains("an HTTP/1.1 request needs a Host header"), http11);
    String twice = send("GET /nowhere HTTP/1.1", "Host: 127.0.0.1\r\nHost: evil.example\r\n");
    assertTrue(twice.startsWith("HTTP/1.1 400 ") && twice.contains("one Host header; got 2"), twice);
    String http10 = send("GET /nowhere HTTP/1.0", "");
    assertTrue(http10.startsWith("HTTP/1.1 404 "), http10);
  }

  /**
   * Each route but {@code /kv} takes GET and HEAD only, and {@code /events} GET only (a stream: a
   * HEAD would hold a subscriber's place for nothing): another method is a 405 naming the method
   * and the path, with an {@code Allow} header, refused before any service is used. HEAD of the
   * page is served (no service needed). Not the host check, but the same server serves it.
   */
  @Test
  void aMethodARouteDoesNotTake_is405WithAllow_beforeAnyService() throws Exception {
    for (String path : new String[] {"/", "/index.html", "/web/app.js", "/ring", "/stats", "/events/recent", "/keys"}) {
      String reply = send("DELETE " + path + " HTTP/1.1", "Host: 127.0.0.1\r\n");
      assertTrue(reply.startsWith("HTTP/1.1 405 ") && reply.contains("\r\nAllow: GET, HEAD\r\n"), path + ": " + reply);
      assertTrue(reply.contains("{\"error\":\"method DELETE not allowed on " + path + "; allowed: GET, HEAD\"}"),
          path + ": " + reply);
    }
    for (String method : new String[] {"HEAD", "POST"}) {
      String reply = send(method + " /events HTTP/1.1", "Host: 127.0.0.1\r\n");
      assertTrue(reply.startsWith("HTTP/1.1 405 ") && reply.contains("\r\nAllow: GET\r\n"), method + ": " + reply);
    }
    String head = send("HEAD / HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(head.startsWith("HTTP/1.1 200 "), "HEAD of the page: " + head);
  }

  /**
   * A query parameter with an empty name ({@code ?=x}) is refused naming that empty name, not
   * the whole pair: a route with no parameters to take refuses it before any service is used.
   */
  @Test
  void aQueryParameterWithAnEmptyName_isRefusedNamingIt() throws Exception {
    String reply = send("GET /stats?=x HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(reply.startsWith("HTTP/1.1 400 ")
        && reply.endsWith("{\"error\":\"unknown query parameter \\\"\\\" for /stats; it takes none\"}"), reply);
  }

  /**
   * A path starting "//" is matched as sent, not as java.net.URI parses it ("//x/nowhere": an
   * authority "x", then "/nowhere"): no route, and the 404 names the path the client sent.
   */
  @Test
  void aPathStartingWithTwoSlashes_isNoRoute_namedAsSent() throws Exception {
    String reply = send("GET //x/nowhere HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(reply.startsWith("HTTP/1.1 404 ") && reply.contains("\"no route GET //x/nowhere; try /kv/{key}"),
        reply);
  }

  /**
   * Each route checks its query parameters, and their values, before it uses any service: a
   * parameter it does not take (a PUT takes none, a GET of a key takes {@code local}), a flag that
   * is not true or false (no "=" is an empty value), an unknown role or a limit out of range is a
   * 400 with that reason. (With no service given, a request that got past its check would be a 500.)
   */
  @Test
  void aQueryParameterOrValueARouteDoesNotTake_isRefusedWithItsReason_beforeAnyService() throws Exception {
    assertReason("PUT /kv/a?local=true", "unknown query parameter \\\"local\\\" for PUT /kv/{key}; it takes none");
    assertReason("DELETE /kv/a?local=true",
        "unknown query parameter \\\"local\\\" for DELETE /kv/{key}; it takes none");
    assertReason("GET /kv/a?x=1", "unknown query parameter \\\"x\\\" for GET /kv/{key}; it takes local");
    assertReason("GET /kv/a?local=1", "local must be true or false: 1");
    assertReason("GET /kv/a?local=TRUE", "local must be true or false: TRUE");
    assertReason("GET /ring?ranges=0", "ranges must be true or false: 0");
    assertReason("GET /ring?ranges", "ranges must be true or false: ");
    assertReason("GET /keys?role=bogus&limit=1", "role must be all, primary, backup or stray: bogus");
    assertReason("GET /keys?limit=1&role=primary&limit=2", "query parameter limit given more than once");
    for (String limit : new String[] {"-1", "100001", "ten", ""}) {
      assertReason("GET /keys?limit=" + limit, "limit must be in 0..100000: " + limit);
    }
  }

  private void assertReason(String request, String reason) throws Exception {
    String reply = send(request + " HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(reply.startsWith("HTTP/1.1 400 ") && reply.endsWith("{\"error\":\"" + reason + "\"}"),
        request + ": " + reply);
  }

  /**
   * The page and its files need no service: each is served with its own content type, not JSON,
   * and revalidated on every load, so a browser does not keep the page of an older build.
   */
  @Test
  void thePageAndItsFiles_areServed_withTheirContentTypes() throws Exception {
    String page = send("GET / HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(page.startsWith("HTTP/1.1 200 ") && page.contains("\r\nContent-type: text/html; charset=utf-8\r\n")
        && page.contains("\r\nCache-control: no-cache\r\n") && page.contains("/web/app.js"), page);
    String script = send("GET /web/app.js HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(script.startsWith("HTTP/1.1 200 ")
        && script.contains("\r\nContent-type: text/javascript; charset=utf-8\r\n") && script.contains("/events"),
        script.substring(0, Math.min(300, script.length())));
    String missing = send("GET /web/missing.js HTTP/1.1", "Host: 127.0.0.1\r\n");
    assertTrue(missing.startsWith("HTTP/1.1 404 ") && missing.endsWith("{\"error\":\"no such file: /web/missing.js\"}"),
        missing);
  }

  private String send(String requestLine, String headers) throws Exception {
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write((requestLine + "\r\n" + headers + "Connection: close\r\nContent-Length: 0\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }
}
