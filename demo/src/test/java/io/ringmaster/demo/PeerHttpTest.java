package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The HTTP surface of one peer: refusals, the event stream, the ring JSON, the static page. */
class PeerHttpTest {
  private PeerCluster cluster;

  @BeforeEach
  void startPeer() throws IOException {
    cluster = new PeerCluster("http", 1);
    cluster.startAll("solo");
  }

  @AfterEach
  void tearDown() throws Exception {
    if (cluster != null) { // null if its constructor failed: that failure is the one to report
      cluster.close();
    }
  }

  private HttpResponse<String> send(String method, String path, String body) {
    HttpRequest.BodyPublisher publisher = body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8);
    return cluster.send("solo", HttpRequest.newBuilder(cluster.uri("solo", path)).method(method, publisher));
  }

  private HttpResponse<String> sendBytes(String path, byte[] body) {
    return cluster.send("solo", HttpRequest.newBuilder(cluster.uri("solo", path))
        .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  private static void assertRefused(int status, HttpResponse<String> r) {
    assertEquals(status, r.statusCode(), r::body);
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
    JsonNode json = PeerCluster.parse(r.body());
    assertFalse(json.path("error").asText().isEmpty(), r::body);
    assertFalse(r.body().contains("\tat "), "no stack trace: " + r.body());
  }

  /** A refusal whose reason is exactly {@code reason}. */
  private static void assertReason(int status, HttpResponse<String> r, String reason) {
    assertRefused(status, r);
    assertEquals(reason, PeerCluster.parse(r.body()).path("error").asText());
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void badRequests_eachRefusedWithJsonReason_peerKeepsServing() throws Exception {
    assertRefused(400, send("PUT", "/kv/", "v"));
    assertRefused(400, send("PUT", "/kv", "v"));
    assertRefused(400, send("GET", "/kv/" + "k".repeat(257), null));
    assertEquals(200, send("PUT", "/kv/" + "k".repeat(256), "v").statusCode(), "a 256-byte key is fine");
    assertRefused(400, send("GET", "/kv/" + "%C3%A9".repeat(129), null)); // 258 UTF-8 bytes
    assertRefused(413, sendBytes("/kv/big", new byte[64 * 1024 + 1]));
    assertEquals(200, sendBytes("/kv/big", new byte[64 * 1024]).statusCode(), "exactly 64 KiB is fine");
    assertRefused(400, sendBytes("/kv/bad-utf8", new byte[] {(byte) 0xC3, 0x28}));
    assertRefused(404, send("GET", "/nope", null));
    HttpResponse<String> post = send("POST", "/kv/a", "v");
    assertRefused(405, post);
    assertEquals("GET, PUT, DELETE", post.headers().firstValue("Allow").orElse(""));
    HttpResponse<String> deleteRing = send("DELETE", "/ring", null);
    assertRefused(405, deleteRing);
    assertEquals("GET, HEAD", deleteRing.headers().firstValue("Allow").orElse(""));
    assertRefused(400, send("GET", "/kv/%C3%28", null)); // escapes that are not UTF-8
    assertRefused(400, send("GET", "/keys?role=bogus", null));
    // Query parameters: a misspelt, repeated or unreadable one is refused, not ignored.
    assertReason(400, send("GET", "/kv/q?local=1", null), "local must be true or false: 1");
    assertReason(400, send("GET", "/kv/q?local", null), "local must be true or false: "); // no "=": no value
    assertRefused(400, send("GET", "/keys?role", null));
    assertReason(400, send("GET", "/kv/q?lcoal=true", null),
        "unknown query parameter \"lcoal\" for GET /kv/{key}; it takes local");
    assertReason(400, send("GET", "/ring?ranges=0", null), "ranges must be true or false: 0");
    assertReason(400, send("GET", "/keys?role=primary&role=backup", null),
        "query parameter role given more than once");
    assertReason(400, send("GET", "/stats?verbose=true", null),
        "unknown query parameter \"verbose\" for /stats; it takes none");
    assertReason(400, send("GET", "/?page=2", null), "unknown query parameter \"page\" for /; it takes none");
    assertReason(400, send("GET", "/web/app.js?v=2", null),
        "unknown query parameter \"v\" for /web/{file}; it takes none");
    assertReason(400, send("PUT", "/kv/q?local=true", "v"),
        "unknown query parameter \"local\" for PUT /kv/{key}; it takes none");
    assertRefused(404, send("GET", "/kv/q", null)); // the refused PUT stored nothing
    assertEquals(200, send("GET", "/keys?role=primary&limit=5&", null).statusCode(), "a trailing & asks nothing");
    assertReason(400, send("GET", "/keys?limit=100001", null), "limit must be in 0..100000: 100001");
    assertReason(400, send("GET", "/keys?limit=-1", null), "limit must be in 0..100000: -1");
    assertReason(400, send("GET", "/keys?limit=ten", null), "limit must be in 0..100000: ten");
    assertEquals(200, send("GET", "/keys?limit=100000", null).statusCode(), "the bound itself");
    // Escapes that are not hex never reach the API: the JDK server refuses the request line itself.
    assertTrue(rawRequest("GET /kv/%zz HTTP/1.1").startsWith("HTTP/1.1 400"));
    String doubleSlash = rawRequest("GET //kv/a HTTP/1.1");
    assertTrue(doubleSlash.startsWith("HTTP/1.1 404") && doubleSlash.contains("no route GET //kv/a"), doubleSlash);
    assertEquals(200, send("PUT", "/kv/frag", "v").statusCode());
    // Nor is "///kv/frag" a read of "frag" (java.net.URI reads an empty authority and "/kv/frag"):
    // every path starting "//" is a 404 naming the path sent.
    String tripleSlash = rawRequest("GET ///kv/frag HTTP/1.1");
    assertTrue(tripleSlash.startsWith("HTTP/1.1 404") && tripleSlash.contains("no route GET ///kv/frag;"), tripleSlash);
    String quadrupleSlash = rawRequest("GET ////kv/a HTTP/1.1");
    assertTrue(quadrupleSlash.startsWith("HTTP/1.1 404") && quadrupleSlash.contains("no route GET ////kv/a;"),
        quadrupleSlash);
    // A "#" that a raw client did not escape: not a read of "frag".
    String fragment = rawRequest("GET /kv/frag#ment HTTP/1.1");
    assertTrue(fragment.startsWith("HTTP/1.1 400") && fragment.contains("has no fragment"), fragment);
    // A target in absolute form is served as its path; one without a path, by the JDK server alone.
    String absolute = rawRequest("GET http://127.0.0.1/kv/frag HTTP/1.1");
    assertTrue(absolute.startsWith("HTTP/1.1 200") && absolute.contains("\"value\":\"v\""), absolute);
    String noPath = rawRequest("GET http://127.0.0.1 HTTP/1.1");
    assertTrue(noPath.startsWith("HTTP/1.1 404") && !noPath.contains("{"), noPath);
    assertRefused(404, send("GET", "/kv/never-written", null));
    // HEAD: GET's status and headers, no body; not on the event stream.
    for (String path : List.of("/", "/web/app.js", "/stats", "/ring?ranges=false", "/keys", "/events/recent")) {
      HttpResponse<String> head = send("HEAD", path, null);
      assertEquals(200, head.statusCode(), path);
      assertEquals(send("GET", path, null).headers().firstValue("Content-Type"),
          head.headers().firstValue("Content-Type"), path);
      assertEquals("", head.body(), path);
    }
    assertEquals(404, send("HEAD", "/web/nope.js", null).statusCode());
    HttpResponse<String> headEvents = send("HEAD", "/events", null);
    assertEquals(405, headEvents.statusCode());
    assertEquals("GET", headEvents.headers().firstValue("Allow").orElse(""));
    assertEquals(405, send("HEAD", "/kv/a", null).statusCode());
    // The JDK server warns when a reply to HEAD declares a body; these declare none.
    assertFalse(Files.readString(cluster.peer("solo").log()).contains("HEAD request"));

    assertEquals(200, send("PUT", "/kv/a%20b+c%2Fd", "héllo").statusCode());
    HttpResponse<String> read = send("GET", "/kv/a%20b+c%2Fd", null);
    assertEquals(200, read.statusCode(), read::body);
    JsonNode json = PeerCluster.parse(read.body());
    assertEquals("a b+c/d", json.path("key").asText());
    assertEquals("héllo", json.path("value").asText());
    assertEquals("solo", json.path("owner").asText());
    assertEquals(200, send("DELETE", "/kv/a%20b+c%2Fd", null).statusCode());
    HttpResponse<String> gone = send("GET", "/kv/a%20b+c%2Fd", null);
    assertRefused(404, gone);
    assertTrue(PeerCluster.parse(gone.body()).path("deleted").asBoolean(), gone::body);
  }

  /** Each reply carries the fields docs/demo.md's table names for it, with their values. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void replies_carryTheDocumentedFields() {
    JsonNode put = PeerCluster.parse(send("PUT", "/kv/a", "1").body());
    assertEquals("a", put.path("key").asText());
    assertEquals("[\"solo\"]", put.path("owners").toString());
    assertEquals("solo", put.path("writer").asText());
    assertTrue(put.path("version").asLong() > 0, put::toString);
    assertFalse(put.path("deleted").asBoolean(true), put::toString);
    JsonNode local = PeerCluster.parse(send("GET", "/kv/a?local=true", null).body());
    assertEquals("solo", local.path("holder").asText(), local::toString);
    assertEquals("primary", local.path("role").asText(), local::toString);
    assertEquals(put.path("version").asLong(), local.path("version").asLong());

    HttpResponse<String> never = send("GET", "/kv/never-written", null);
    assertEquals(404, never.statusCode());
    JsonNode missing = PeerCluster.parse(never.body());
    assertEquals("not found", missing.path("error").asText(), missing::toString);
    assertFalse(missing.path("deleted").asBoolean(true), missing::toString);
    assertEquals("[\"solo\"]", missing.path("owners").toString());

    JsonNode deleted = PeerCluster.parse(send("DELETE", "/kv/a", null).body());
    assertTrue(deleted.path("deleted").asBoolean(), deleted::toString);
    assertEquals("solo", deleted.path("writer").asText(), deleted::toString);
    JsonNode gone = PeerCluster.parse(send("GET", "/kv/a", null).body());
    assertEquals("deleted", gone.path("error").asText(), gone::toString);
    assertTrue(gone.path("deleted").asBoolean(), gone::toString);

    assertEquals(200, send("PUT", "/kv/b", "1").statusCode());
    // A lone peer is the primary of every key: b (a is a tombstone) is listed under all and primary only.
    for (String role : List.of("all", "primary", "backup", "stray")) {
      JsonNode listed = PeerCluster.parse(send("GET", "/keys?role=" + role, null).body());
      assertEquals(role.equals("all") || role.equals("primary") ? "[\"b\"]" : "[]", listed.path("keys").toString(),
          "role " + role + ": " + listed);
      assertEquals(role, listed.path("role").asText(), listed::toString);
    }
    JsonNode none = PeerCluster.parse(send("GET", "/keys?limit=0", null).body());
    assertEquals(0, none.path("count").asInt(), none::toString);
    assertTrue(none.path("truncated").asBoolean(), "b was left out: " + none);
    assertEquals("solo", none.path("local").asText(), none::toString);
    JsonNode stats = PeerCluster.parse(send("GET", "/stats", null).body());
    assertEquals(stats.path("viewId").asLong(), none.path("viewId").asLong(-1), none::toString);
    JsonNode ring = PeerCluster.parse(send("GET", "/ring?ranges=false", null).body());
    assertEquals(ring.path("virtualNodes").asInt(), ring.path("tokens").asInt(), "one member of weight 1: " + ring);
    assertEquals("[]", ring.path("cutOffFrom").toString(), "no split, an empty list: " + ring);
  }

  /**
   * {@code /stats} counts each request the peer served under its own name, and each write that
   * changed the store; a refused request counts nowhere. The peer is alone, so it owns every key
   * and nothing is forwarded or repaired.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void stats_countEachServedRequestUnderItsOwnName_andNoRefusedOne() {
    assertRefused(400, send("PUT", "/kv/", "v"));
    assertRefused(400, send("GET", "/kv/q?local=1", null));
    assertRefused(405, send("POST", "/kv/a", "v"));
    assertEquals(200, send("PUT", "/kv/a", "1").statusCode());
    assertEquals(200, send("PUT", "/kv/b", "1").statusCode());
    assertEquals(200, send("PUT", "/kv/a", "2").statusCode());
    assertEquals(200, send("PUT", "/kv/c", "1").statusCode());
    assertEquals(200, send("GET", "/kv/a", null).statusCode());
    assertRefused(404, send("GET", "/kv/never-written", null));
    assertEquals(200, send("DELETE", "/kv/b", null).statusCode());

    JsonNode stats = PeerCluster.parse(send("GET", "/stats", null).body());
    assertEquals(4, stats.path("putsServed").asLong(), stats::toString);
    assertEquals(2, stats.path("getsServed").asLong(), stats::toString);
    assertEquals(1, stats.path("deletesServed").asLong(), stats::toString);
    assertEquals(5, stats.path("writesStored").asLong(), "four puts and a delete, each new: " + stats);
    assertEquals(0, stats.path("writesForwarded").asLong(), stats::toString);
    assertEquals(0, stats.path("readRepairs").asLong(), stats::toString);
    assertEquals(2, stats.path("primaryKeys").asLong(), "a and c: " + stats);
    assertEquals(1, stats.path("tombstones").asLong(), "b's: " + stats);
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void stalledRequests_moreThanTheHttpThreads_areCut_andNothingIsStored() throws Exception {
    // Each sends 3 of the 10 body bytes it declares, then nothing: 70 of them would hold all 64
    // HTTP threads for as long as they stay connected if the peer waited for them.
    List<Socket> stalled = new ArrayList<>();
    try {
      for (int i = 0; i < 70; i++) {
        Socket s = new Socket("127.0.0.1", cluster.peer("solo").httpPort());
        stalled.add(s);
        s.getOutputStream().write(("PUT /kv/stalled-" + i + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc")
            .getBytes(StandardCharsets.ISO_8859_1));
      }
      for (Socket s : stalled) {
        s.setSoTimeout(60_000); // a SocketTimeoutException here: the peer never cut the connection
        String reply;
        try {
          reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (SocketException reset) { // cut with the unread bytes still queued: also cut
          reply = "";
        }
        assertTrue(reply.isEmpty() || reply.startsWith("HTTP/1.1 400"), reply);
      }
    } finally {
      for (Socket s : stalled) {
        s.close();
      }
    }
    assertEquals(200, send("GET", "/stats", null).statusCode());
    assertRefused(404, send("GET", "/kv/stalled-0", null));
    assertEquals(0, PeerCluster.parse(send("GET", "/stats", null).body()).path("primaryKeys").asLong());
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void malformedChunkedBody_refusedWithJsonReason_andTheConnectionClosed() throws Exception {
    try (Socket s = new Socket("127.0.0.1", cluster.peer("solo").httpPort())) {
      s.setSoTimeout(30_000);
      s.getOutputStream().write(("PUT /kv/chunky HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
      assertTrue(reply.startsWith("HTTP/1.1 400"), reply);
      assertTrue(reply.endsWith("{\"error\":\"cannot read the request body: invalid chunk length\"}"), reply);
    }
    assertRefused(404, send("GET", "/kv/chunky", null));
  }

  /**
   * A GET or DELETE sent with a large body, which no route reads: the peer reads it before it
   * replies, so the client gets the whole reply. Left unread, the server's close of a connection
   * with data still to come resets it: the client's write of the body fails, or the reply is lost.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void getAndDeleteSentWithALargeBody_answeredInFull() throws Exception {
    assertEquals(200, send("PUT", "/kv/bodied", "v").statusCode());
    String get = withBody("GET /kv/bodied", 300_000);
    assertTrue(get.startsWith("HTTP/1.1 200") && get.contains("\"value\":\"v\""), get);
    String page = withBody("GET /web/app.js", 300_000);
    assertTrue(page.startsWith("HTTP/1.1 200"), page.substring(0, Math.min(200, page.length())));
    String delete = withBody("DELETE /kv/bodied", 300_000);
    assertTrue(delete.startsWith("HTTP/1.1 200"), delete);
    assertRefused(404, send("GET", "/kv/bodied", null));
  }

  /** Sends {@code request} (a method and a path) with a body of {@code bytes} bytes; the whole reply. */
  private String withBody(String request, int bytes) throws IOException {
    try (Socket s = new Socket("127.0.0.1", cluster.peer("solo").httpPort())) {
      s.setSoTimeout(30_000);
      OutputStream out = s.getOutputStream();
      out.write((request + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: " + bytes + "\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      out.write(new byte[bytes]);
      out.flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  private String rawRequest(String requestLine) throws IOException {
    try (Socket s = new Socket("127.0.0.1", cluster.peer("solo").httpPort())) {
      s.setSoTimeout(5_000);
      s.getOutputStream().write((requestLine + "\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      InputStream in = s.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void events_newSubscriber_getsPastEventsThenLiveOnes() throws Exception {
    BlockingQueue<String> data = new LinkedBlockingQueue<>();
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<Stream<String>> stream = client.send(
        HttpRequest.newBuilder(cluster.uri("solo", "/events")).GET().build(), HttpResponse.BodyHandlers.ofLines());
    try (Stream<String> body = stream.body()) { // closed whatever happens: the reader thread then ends
      assertEquals(200, stream.statusCode());
      assertEquals("text/event-stream; charset=utf-8", stream.headers().firstValue("Content-Type").orElse(""));
      Thread reader = new Thread(() -> body.filter(l -> l.startsWith("data: "))
          .forEach(l -> data.add(l.substring("data: ".length()))));
      reader.setDaemon(true);
      reader.start();
      assertEventsThenAMembership(data);
    }
  }

  private void assertEventsThenAMembership(BlockingQueue<String> data) throws Exception {
    assertEquals("started", type(data.poll(10, TimeUnit.SECONDS)), "replayed: the peer's start");
    assertEquals("ownership", type(data.poll(10, TimeUnit.SECONDS)), "replayed: its initial ownership");
    assertEquals("migration", type(data.poll(10, TimeUnit.SECONDS)), "replayed: its initial (empty) pull");

    cluster.awaitReady(cluster.start("second"));
    JsonNode membership = null;
    for (String e = data.poll(20, TimeUnit.SECONDS); e != null; e = data.poll(20, TimeUnit.SECONDS)) {
      JsonNode json = PeerCluster.parse(e);
      assertTrue(json.path("time").asLong() > 0, e);
      if (json.path("type").asText().equals("membership")) {
        membership = json;
        break;
      }
    }
    assertTrue(membership != null, "a live membership event");
    assertEquals(List.of("second"), List.of(membership.path("joined").get(0).asText()));
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void events_reconnectNamingTheLastEventSeen_getsOnlyLaterOnes_anUnknownIdGetsAll() throws Exception {
    List<String> all = eventIds(null, 3);
    assertEquals(3, all.size(), "the buffered events: " + all);
    String epoch = all.get(0).substring(0, all.get(0).indexOf('-') + 1);
    assertTrue(all.stream().allMatch(id -> id.startsWith(epoch)), "one process, one epoch: " + all);
    assertTrue(sequence(all.get(0)) < sequence(all.get(1)) && sequence(all.get(1)) < sequence(all.get(2)),
        "ids ascend: " + all);
    assertEquals(all.subList(1, 3), eventIds(all.get(0), 2), "after the first one seen");
    assertEquals(all.get(2), eventIds(all.get(1), 1).get(0), "after the second one seen");
    // Ids from another process (the peer before a restart, whose count may be anywhere): all of them.
    assertEquals(all, eventIds("zzzzzzzz-" + sequence(all.get(0)), 3));
    assertEquals(all, eventIds("not an id", 3));
    // A page opening a new stream names the last event it showed in the query, as the header does;
    // a request with both is a browser's reconnect of such a stream: the header is the newer.
    assertEquals(all.subList(1, 3), eventIds(null, "lastEventId=" + all.get(0), 2), "the query alone");
    assertEquals(all.get(2), eventIds(all.get(1), "lastEventId=" + all.get(0), 1).get(0), "the header wins");
    assertEquals(400, send("GET", "/events?lastEventid=" + all.get(0), null).statusCode(), "a misspelt parameter");
  }

  private static long sequence(String eventId) {
    return Long.parseLong(eventId.substring(eventId.indexOf('-') + 1));
  }

  /** The ids of the first {@code count} events a new /events stream sends. */
  private List<String> eventIds(String lastEventId, int count) throws Exception {
    return eventIds(lastEventId, null, count);
  }

  /** The same, for a request to {@code /events?query} (none if null). */
  private List<String> eventIds(String lastEventId, String query, int count) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest.Builder request = HttpRequest.newBuilder(cluster.uri("solo", query == null ? "/events" : "/events?" + query)).GET();
    if (lastEventId != null) {
      request.header("Last-Event-ID", lastEventId);
    }
    HttpResponse<Stream<String>> stream = client.send(request.build(), HttpResponse.BodyHandlers.ofLines());
    try (Stream<String> lines = stream.body()) {
      assertEquals(200, stream.statusCode());
      return lines.filter(l -> l.startsWith("id: ")).limit(count).map(l -> l.substring(4)).toList();
    }
  }

  private static String type(String json) {
    assertTrue(json != null, "an event within 10 s");
    return PeerCluster.parse(json).path("type").asText();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void events_subscribersOverTheLimitRefused_andPlacesFreedSoonAfterClientsLeave() throws Exception {
    List<Socket> streams = new ArrayList<>();
    try {
      for (int i = 0; i < EventLog.MAX_SUBSCRIBERS; i++) {
        Socket s = cluster.openEvents("solo");
        streams.add(s);
        String head = readUntil(s, ": connected");
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
      }
      assertEquals(EventLog.MAX_SUBSCRIBERS, cluster.json("solo", "/stats").path("eventSubscribers").asInt());
      assertRefused(503, send("GET", "/events", null));
    } finally {
      for (Socket s : streams) {
        s.close(); // the browser tab goes away, without a word to the peer
      }
    }
    // A departed client is noticed when a heartbeat fails to reach it: about two heartbeats (4 s);
    // the wait allows far more, for a loaded machine. What is checked is that the places come back
    // without a restart: a reloading page would otherwise get 503s.
    await("every place freed").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
        .until(() -> cluster.json("solo", "/stats").path("eventSubscribers").asInt() == 0);
    try (Socket again = cluster.openEvents("solo")) {
      assertTrue(readUntil(again, ": connected").startsWith("HTTP/1.1 200"));
    }
  }

  /** Reads from {@code s} until {@code marker} has arrived; returns what was read. */
  private static String readUntil(Socket s, String marker) throws IOException {
    StringBuilder read = new StringBuilder();
    InputStream in = s.getInputStream();
    while (read.indexOf(marker) < 0) {
      int b = in.read();
      if (b < 0) {
        throw new AssertionError("stream ended before \"" + marker + "\": " + read);
      }
      read.append((char) b);
    }
    return read.toString();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void ringAndPage_served_withDocumentedShape() {
    JsonNode ring = cluster.json("solo", "/ring");
    assertEquals("solo", ring.path("local").asText());
    assertEquals(256, ring.path("virtualNodes").asInt());
    assertEquals(1, ring.path("replicas").asInt());
    JsonNode member = ring.path("members").get(0);
    assertEquals("solo", member.path("id").asText());
    assertEquals(1.0, member.path("share").asDouble(), 1e-9);
    assertEquals(cluster.peer("solo").url(), member.path("endpoint").asText());
    assertTrue(member.path("ranges").get(0).get(0).isTextual(), "positions as strings");
    assertTrue(ring.path("checksum").asText().matches("[0-9a-f]+"));
    cluster.awaitSettled(List.of("solo"), Duration.ofSeconds(30));
    await().atMost(Duration.ofSeconds(30))
        .until(() -> cluster.json("solo", "/ring").path("agreed").asBoolean());

    HttpResponse<String> page = send("GET", "/", null);
    assertEquals(200, page.statusCode());
    assertEquals("text/html; charset=utf-8", page.headers().firstValue("Content-Type").orElse(""));
    assertTrue(page.body().contains("/web/app.js"), "the page loads its script");
    HttpResponse<String> script = send("GET", "/web/app.js", null);
    assertEquals(200, script.statusCode());
    assertTrue(script.body().contains("/ring?ranges=false") && script.body().contains("/events"));
    assertEquals(200, send("GET", "/web/index.html", null).statusCode());
    assertTrue(cluster.json("solo", "/ring?ranges=false").path("members").get(0).path("ranges").isEmpty(),
        "ranges=false leaves the ranges out");
    assertRefused(404, send("GET", "/web/missing.js", null));
    assertRefused(404, send("GET", "/web/..%2Fweb%2Findex.html", null));
    // A folder read as a classpath resource lists its files (when run from target/classes): the
    // first two were served so. The path is matched as sent, so %2E is no dot.
    for (String folder : List.of("/web/.", "/web/./", "/web/%2E", "/web/style", "/web/.hidden.js")) {
      assertRefused(404, send("GET", folder, null));
    }
    assertRefused(405, send("PUT", "/", "x"));
  }
}
