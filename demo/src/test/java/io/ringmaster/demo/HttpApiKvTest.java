package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The key routes of the API ({@code /kv/{key}}, {@code ?local=true}, {@code /keys}) over the key
 * service, store and routing of a real peer in this JVM: peer a of a, b and c, replicas 2. What is
 * pinned is what a client sees: statuses, reasons, the replies' fields, and the value limit.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HttpApiKvTest {
  private final List<InJvmPeer> peers = new ArrayList<>();
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private HttpServer http;
  private InJvmPeer a;

  @BeforeEach
  void start() throws Exception {
    InJvmPeer.startAll(peers, "http-api-kv", List.of("a", "b", "c"));
    a = peers.get(0);
    http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(a.kv(), a.store(), a.routing(), null, null, null, a.node()::viewId));
    http.start();
  }

  @AfterEach
  void stop() {
    if (http != null) {
      http.stop(0);
    }
    InJvmPeer.closeAll(peers);
  }

  private HttpResponse<String> send(String method, String path, HttpRequest.BodyPublisher body) throws Exception {
    URI uri = URI.create("http://127.0.0.1:" + http.getAddress().getPort() + path);
    return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(20)).method(method, body).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return send("GET", path, HttpRequest.BodyPublishers.noBody());
  }

  private static JsonNode json(int status, HttpResponse<String> r) {
    assertEquals(status, r.statusCode(), r::body);
    assertEquals("application/json; charset=utf-8", r.headers().firstValue("Content-Type").orElse(""), r::body);
    return PeerCluster.parse(r.body());
  }

  /** A key whose owners, in order, are {@code owners}. */
  private String keyOwnedInOrder(List<String> owners) {
    for (int i = 0; ; i++) {
      String key = "key-" + i;
      if (a.routing().owners(key).equals(owners)) {
        return key;
      }
    }
  }

  /**
   * A write, a read, a delete and the reads after it: each reply names the key, its owners, the
   * version and its writer; a deleted key is a 404 "deleted" that says so, a key never written a
   * 404 "not found" that does not.
   */
  @Test
  void putGetDelete_answerWithTheDocumentedStatusesAndFields() throws Exception {
    String key = keyOwnedInOrder(List.of("b", "c")); // written and read through the owners
    JsonNode put = json(200, send("PUT", "/kv/" + key, HttpRequest.BodyPublishers.ofString("héllo",
        StandardCharsets.UTF_8)));
    assertEquals(key, put.path("key").asText());
    assertEquals("[\"b\",\"c\"]", put.path("owners").toString());
    assertEquals("a", put.path("writer").asText());
    assertTrue(put.path("version").asLong() > 0, put::toString);
    assertFalse(put.path("deleted").asBoolean(true), put::toString);

    JsonNode read = json(200, get("/kv/" + key));
    assertEquals("héllo", read.path("value").asText(), read::toString);
    assertEquals(put.path("version").asLong(), read.path("version").asLong(), read::toString);
    assertEquals("a", read.path("writer").asText(), read::toString);
    assertEquals("[\"b\",\"c\"]", read.path("owners").toString());
    assertTrue(Set.of("b", "c").contains(read.path("owner").asText()), read::toString);
    JsonNode notLocal = json(200, get("/kv/" + key + "?local=false"));
    assertEquals("héllo", notLocal.path("value").asText(), "local=false is a read through the owners: " + notLocal);

    JsonNode deleted = json(200, send("DELETE", "/kv/" + key, HttpRequest.BodyPublishers.noBody()));
    assertTrue(deleted.path("deleted").asBoolean(), deleted::toString);
    assertEquals("a", deleted.path("writer").asText(), deleted::toString);
    assertTrue(deleted.path("version").asLong() > put.path("version").asLong(), deleted::toString);
    JsonNode gone = json(404, get("/kv/" + key));
    assertEquals("deleted", gone.path("error").asText(), gone::toString);
    assertTrue(gone.path("deleted").asBoolean(), gone::toString);
    assertEquals(key, gone.path("key").asText(), gone::toString);

    JsonNode never = json(404, get("/kv/" + keyOwnedInOrder(List.of("c", "b"))));
    assertEquals("not found", never.path("error").asText(), never::toString);
    assertFalse(never.path("deleted").asBoolean(true), never::toString);
    assertEquals("[\"c\",\"b\"]", never.path("owners").toString());
  }

  /**
   * A value of exactly 64 KiB is stored, declared or chunked; one byte more is a 413 naming the
   * declared length, or saying it is over the limit when none was declared.
   */
  @Test
  void aValueOfTheLimit_isStored_oneByteMore_is413() throws Exception {
    int max = KeyCodec.MAX_VALUE_BYTES;
    assertEquals(65_536, max);
    String key = keyOwnedInOrder(List.of("a", "b"));
    assertEquals(200, send("PUT", "/kv/" + key, HttpRequest.BodyPublishers.ofByteArray(value(max))).statusCode());
    assertEquals(max, a.store().get(key).orElseThrow().value().length());
    assertEquals(200, send("PUT", "/kv/" + key, chunked(value(max))).statusCode());
    JsonNode declared = json(413, send("PUT", "/kv/" + key, HttpRequest.BodyPublishers.ofByteArray(value(max + 1))));
    assertEquals("value too large: 65537 bytes, at most 65536", declared.path("error").asText());
    JsonNode over = json(413, send("PUT", "/kv/" + key, chunked(value(max + 1))));
    assertEquals("value too large: over 65536 bytes", over.path("error").asText());
  }

  private static byte[] value(int bytes) {
    byte[] v = new byte[bytes];
    Arrays.fill(v, (byte) 'v');
    return v;
  }

  /** A body of unknown length: the client sends it chunked, with no Content-Length. */
  private static HttpRequest.BodyPublisher chunked(byte[] body) {
    return HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body));
  }

  /**
   * Keys a holds as primary, as backup and as a stray (a copy of a key it does not own), and a
   * tombstone: {@code /keys} lists each live one under its role and under all, with the view of
   * the ring it labelled them by; {@code ?local=true} gives a's copy and a's role for it, a 404
   * naming a for a key it does not hold. A limit of 0 lists nothing and says keys were left out.
   */
  @Test
  void keysAndLocalCopies_areLabelledByThisPeersRole() throws Exception {
    String primary = keyOwnedInOrder(List.of("a", "b"));
    String backup = keyOwnedInOrder(List.of("b", "a"));
    String stray = keyOwnedInOrder(List.of("b", "c"));
    long now = VersionClock.systemMicros();
    for (String key : List.of(primary, backup, stray)) {
      a.store().merge(Entry.of(key, "v-" + key, new Version(now, "a")));
    }
    a.store().merge(Entry.tombstone(keyOwnedInOrder(List.of("a", "c")), new Version(now, "a")));

    JsonNode all = json(200, get("/keys"));
    assertEquals(new TreeSet<>(List.of(primary, backup, stray)), keys(all));
    assertEquals(3, all.path("count").asInt(), all::toString);
    assertFalse(all.path("truncated").asBoolean(true), all::toString);
    assertEquals("a", all.path("local").asText(), all::toString);
    assertEquals("all", all.path("role").asText(), all::toString);
    assertEquals(a.node().viewId(), all.path("viewId").asLong(-1), all::toString);
    for (String[] role : new String[][] {{"primary", primary}, {"backup", backup}, {"stray", stray}}) {
      JsonNode listed = json(200, get("/keys?role=" + role[0]));
      assertEquals(Set.of(role[1]), keys(listed), role[0] + ": " + listed);
      assertEquals(role[0], listed.path("role").asText(), listed::toString);

      JsonNode local = json(200, get("/kv/" + role[1] + "?local=true"));
      assertEquals(role[0], local.path("role").asText(), local::toString);
      assertEquals("a", local.path("holder").asText(), local::toString);
      assertEquals("v-" + role[1], local.path("value").asText(), local::toString);
      assertEquals(now, local.path("version").asLong(), local::toString);
      assertFalse(local.path("deleted").asBoolean(true), local::toString);
    }
    JsonNode notHeld = json(404, get("/kv/" + keyOwnedInOrder(List.of("c", "a")) + "?local=true"));
    assertEquals("not held by a", notHeld.path("error").asText(), notHeld::toString);

    JsonNode none = json(200, get("/keys?limit=0"));
    assertEquals(0, none.path("count").asInt(), none::toString);
    assertTrue(none.path("truncated").asBoolean(), "keys were left out: " + none);
    JsonNode one = json(200, get("/keys?role=all&limit=1"));
    assertEquals(1, one.path("count").asInt(), one::toString);
    assertTrue(one.path("truncated").asBoolean(), one::toString);
    JsonNode bound = json(200, get("/keys?limit=" + HttpApi.MAX_KEYS_LISTED));
    assertEquals(3, bound.path("count").asInt(), "the bound itself is a limit: " + bound);
  }

  private static Set<String> keys(JsonNode reply) {
    Set<String> out = new TreeSet<>();
    reply.path("keys").forEach(k -> out.add(k.asText()));
    return out;
  }
}
