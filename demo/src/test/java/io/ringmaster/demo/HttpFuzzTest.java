package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random requests, from a fixed seed, to two {@link Peer}s in this JVM (the in-memory stack, one
 * copy a key, so that about half the key requests are forwarded to the other peer), over raw
 * sockets and, for requests it can express, Java's {@code HttpClient}: every method, every route,
 * keys valid and not (empty, 256 and 257 bytes, escapes of every kind, {@code ..}, {@code //}),
 * query parameters unknown, repeated and empty, bodies empty, binary and around 64 KiB, framing
 * the JDK's server refuses, and other hosts. Each reply must be a status docs/demo.md gives for
 * that request, never a 500: the API's refusals a JSON reason (with {@code Allow} for a 405), the
 * JDK's own a one-line HTML reason; a key's replies must agree with what the earlier ones wrote.
 * Afterwards the peers still agree on the ring, a key written before still reads back, and no
 * thread of theirs died.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HttpFuzzTest {
  private static final long SEED = 0x416;
  private static final int REQUESTS = 4_000;
  private static final int MAX = KeyCodec.MAX_VALUE_BYTES;
  /** Characters a path segment holds as they are (RFC 3986 pchar, less the {@code %}). */
  private static final String SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/";
  /** Characters the JDK's URI parser refuses in a request target. */
  private static final String ILLEGAL = "|{}\"^\\`<>\u0001";
  private static final List<String> KEYED_METHODS = List.of("GET", "PUT", "DELETE");
  private static final List<String> OTHER_METHODS = List.of("HEAD", "POST", "OPTIONS", "PATCH", "FOO", "get",
      "G@T", "PUTX", "BREW");
  private static final List<String> ROUTES = List.of("/", "/index.html", "/web/app.js", "/web/nope.js",
      "/web/..%2Fweb%2Findex.html", "/ring", "/stats", "/events", "/events/recent", "/keys", "/nowhere", "//kv/a",
      "/kvx", "/kv%2Fa", "/kv");
  private static final List<String> PARAMETERS = List.of("local=true", "local=false", "local=yes", "local",
      "local=tr%75e", "ranges=false", "ranges=true", "ranges=no", "role=primary", "role=backup", "role=stray",
      "role=all", "role=boss", "limit=0", "limit=5", "limit=-1", "limit=100001", "limit=abc", "lastEventId=3",
      "x=1", "=1", "", "a+b=1");
  /** Keys the fuzz comes back to, so that its writes, deletes and reads meet; sent in random encodings. */
  private static final List<String> POOL = List.of("pool-0", "pool-1", "pool-2", "pool-3", "pool/é-4", "pool..5",
      "p".repeat(256), "€-pool-7", "pool#?8", "pool%9");
  private static final String KNOWN_KEY = "written before the fuzz";
  private static final String KNOWN_VALUE = "and read back after it: ✓";

  @TempDir
  Path dir;

  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();
  private final List<Peer> peers = new ArrayList<>();
  private final int[] ports = new int[2];
  private final List<String> died = new CopyOnWriteArrayList<>();
  private Thread.UncaughtExceptionHandler handlerBefore;

  @BeforeEach
  void startPeers() throws Exception {
    handlerBefore = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
      if (t.getName().matches("(http|rpc|rpc-timer|sweep|pull-retries|pulls|status)-[0-9]+")) { // the peers' pools
        died.add(t.getName() + ": " + e);
      }
    });
    String cluster = InJvmPeer.clusterName("http-fuzz");
    for (int i = 0; i < 2; i++) {
      ports[i] = PeerCluster.freePort();
      peers.add(PeerWiringTest.startInJvm(dir, cluster, "p" + i, ports[i]));
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(0) && agreed(1));
  }

  @AfterEach
  void closePeers() {
    try {
      peers.forEach(Peer::close);
    } finally {
      Thread.setDefaultUncaughtExceptionHandler(handlerBefore);
    }
  }

  @Test
  void randomRequests_eachGetAStatusTheReadmeAllows_withAReason_andThePeersKeepServing() throws Exception {
    Reply known = send(new Request(0, "PUT", "/kv/" + encode(KNOWN_KEY, new SplittableRandom(1)), "1.1",
        List.of(host(0)), Framing.LENGTH, KNOWN_VALUE.getBytes(StandardCharsets.UTF_8)), false);
    assertEquals(200, known.status(), known::toString);

    SplittableRandom random = new SplittableRandom(SEED);
    Model model = new Model();
    Map<String, Integer> seen = new TreeMap<>();
    for (int i = 0; i < REQUESTS; i++) {
      Request request = request(random);
      Expected expected = expect(request);
      boolean viaClient = random.nextInt(5) == 0 && clientCanSend(request);
      Reply reply;
      try {
        reply = send(request, viaClient);
      } catch (IOException e) {
        throw new AssertionError("request " + i + ", no reply: " + request, e);
      }
      String what = "request " + i + (viaClient ? " (HttpClient)" : " (socket)") + ": " + request + "\n  got " + reply
          + "\n  docs/demo.md allows " + expected;
      check(request, expected, reply, what);
      model.check(request, expected, reply, what);
      seen.merge(reply.status() + (reply.fromJdk() ? " jdk" : ""), 1, Integer::sum);
    }
    // Every kind of answer came up, so that the run tested what it claims to.
    for (String status : List.of("200", "404", "400", "405", "413", "421", "400 jdk", "404 jdk", "501 jdk")) {
      assertTrue(seen.containsKey(status), "no reply " + status + " in " + seen);
    }
    assertTrue(model.reads > 50 && model.writes > 50 && model.deletes > 10, model + " " + seen);

    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(0) && agreed(1));
    assertEquals(ring(0).path("checksum").asText(), ring(1).path("checksum").asText(), "one ring");
    for (int peer = 0; peer < 2; peer++) {
      Reply read = send(new Request(peer, "GET", "/kv/" + encode(KNOWN_KEY, new SplittableRandom(peer)), "1.1",
          List.of(host(peer)), Framing.LENGTH, new byte[0]), false);
      assertEquals(200, read.status(), read::toString);
      assertEquals(KNOWN_VALUE, PeerCluster.parse(read.body()).path("value").asText(), read::toString);
      for (String key : POOL) {
        Request get = new Request(peer, "GET", "/kv/" + encode(key, random), "1.1", List.of(host(peer)),
            Framing.LENGTH, new byte[0]);
        model.check(get, expect(get), send(get, false), "pool key " + key + " after the run, on p" + peer);
      }
    }
    assertEquals(List.of(), died, "threads that died of an exception");
    // The HTTP pools start 64 threads each and replace one that dies: a 65th means one did.
    int highest = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
        .filter(n -> n.matches("http-[0-9]+")).mapToInt(n -> Integer.parseInt(n.substring(5))).max().orElse(0);
    assertTrue(highest <= 64, "HTTP thread http-" + highest + " replaced one that died");
  }

  // ---- the requests

  enum Framing {
    /** Content-Length as sent; none for an empty body sent with a method of an even length (GET, PUT...). */
    LENGTH,
    CHUNKED,
    /** A chunk size that is not hex. */
    BAD_CHUNK,
    /** A Content-Length past the body, which then ends: the client closes its side. */
    LENGTH_LONG,
    LENGTH_NAN,
    LENGTH_NEGATIVE,
    LENGTH_TWICE,
    LENGTH_AND_CHUNKED,
    GZIP,
    /** A request line without spaces. */
    BAD_LINE
  }

  /** A request as it is sent: {@code target} one character a byte (ISO-8859-1), the Host headers in {@code headers}. */
  record Request(int peer, String method, String target, String version, List<String> headers, Framing framing,
                 byte[] body) {
    @Override
    public String toString() {
      String shown = body.length > 40 ? body.length + " bytes" : "\"" + new String(body, StandardCharsets.ISO_8859_1) + "\"";
      return "p" + peer + " " + method + " " + target + " HTTP/" + version + " " + headers + " " + framing + " body "
          + shown;
    }
  }

  private Request request(SplittableRandom r) {
    int peer = r.nextInt(2);
    String version = r.nextInt(10) == 0 ? "1.0" : "1.1";
    int m = r.nextInt(100);
    String method = m < 75 ? KEYED_METHODS.get(m % 3) : OTHER_METHODS.get(r.nextInt(OTHER_METHODS.size()));
    String path = r.nextInt(100) < 60 ? "/kv/" + key(r) : ROUTES.get(r.nextInt(ROUTES.size()));
    if (r.nextInt(3) == 0) {
      List<String> query = new ArrayList<>();
      for (int n = 1 + r.nextInt(3); n > 0; n--) {
        query.add(PARAMETERS.get(r.nextInt(PARAMETERS.size())));
      }
      path += "?" + String.join("&", query) + (r.nextInt(20) == 0 ? "&a=%zz" : "");
    }
    if (path.startsWith("/events?") || path.equals("/events")) {
      path = "/events?x=1"; // a GET of /events that is not refused would be an endless stream
    }
    if (r.nextInt(40) == 0) {
      path += "#fragment";
    }
    int a = r.nextInt(100);
    String target = a < 2 ? "http://127.0.0.1:" + ports[peer] + path : a < 3 ? "http://localhost" + path
        : a < 4 ? "http://evil.example" + path : a < 5 ? "http://127.0.0.1" : path;
    List<String> headers = new ArrayList<>();
    int h = r.nextInt(100);
    if (h < 4) {
      headers.add("Host: evil.example:" + ports[peer]);
    } else if (h < 8) {
      headers.add(host(peer));
      headers.add(host(peer));
    } else if (h < 12 || version.equals("1.0") && h < 50) {
      // none
    } else {
      headers.add(h < 15 ? "Host: localhost" : h < 18 ? "Host: peer.localhost:1" : host(peer));
    }
    int f = r.nextInt(100);
    Framing framing = f < 78 ? Framing.LENGTH : f < 88 ? Framing.CHUNKED : f < 90 ? Framing.BAD_CHUNK
        : f < 94 ? Framing.LENGTH_LONG : Framing.values()[Framing.LENGTH_NAN.ordinal() + f - 94]; // one each
    if (version.equals("1.0") && (framing == Framing.CHUNKED || framing == Framing.BAD_CHUNK)) {
      framing = Framing.LENGTH;
    }
    byte[] body = method.equals("PUT") || r.nextInt(5) == 0 ? body(r) : new byte[0];
    Request request = new Request(peer, method, target, version, headers, framing, body);
    Expected expected = expect(request);
    // The JDK's server refuses these before their body is read, and closes the connection: a body
    // left unread turns that close into a reset, which can destroy the reply.
    return expected.jdk() || expected.jdkMay() ? new Request(peer, method, target, version, headers, framing, new byte[0])
        : request;
  }

  private String host(int peer) {
    return "Host: 127.0.0.1:" + ports[peer];
  }

  /** A key as sent after {@code /kv/}: mostly valid, of lengths around the limit, sometimes broken. */
  private static String key(SplittableRandom r) {
    if (r.nextInt(4) == 0) {
      return encode(POOL.get(r.nextInt(POOL.size())), r);
    }
    int c = r.nextInt(100);
    int length = c < 5 ? 0 : c < 55 ? 1 + r.nextInt(20) : c < 65 ? 255 : c < 75 ? 256 : c < 85 ? 257 : 258 + r.nextInt(60);
    StringBuilder raw = new StringBuilder();
    int bytes = 0;
    while (bytes < length) {
      int p = r.nextInt(100);
      if (p < 5 && length - bytes >= 4) {
        String special = List.of("%00", "%23", "%3F", "%25", "%2F", "%2e%2E", "..", "//", "%C3%A9", "%e2%82%ac",
            "%F0%9F%98%80").get(r.nextInt(11));
        raw.append(special);
        bytes += special.startsWith("%") ? special.length() / 3 : special.length();
      } else {
        raw.append(encode(String.valueOf(SAFE.charAt(r.nextInt(SAFE.length()))), r));
        bytes++;
      }
    }
    if (r.nextInt(6) == 0) { // one flaw, somewhere
      String flaw = switch (r.nextInt(4)) {
        case 0 -> List.of("%FF", "%C3", "%80", "%ed%a0%80").get(r.nextInt(4)); // not UTF-8 once decoded
        case 1 -> List.of("%zz", "%g1", "%4z", "%").get(r.nextInt(4)); // not an escape
        case 2 -> String.valueOf(ILLEGAL.charAt(r.nextInt(ILLEGAL.length())));
        default -> List.of("\u00e9", "\u00c3\u00a9", "\u00e2\u0082\u00ac", "\u007f").get(r.nextInt(4)); // raw bytes
      };
      raw.insert(r.nextInt(raw.length() + 1), flaw);
    } else if (r.nextInt(30) == 0) {
      raw.append("%4"); // cut short at the end
    }
    return raw.toString();
  }

  /** {@code key}'s UTF-8, each byte as it is or as an escape in either case, at random. */
  private static String encode(String key, SplittableRandom r) {
    StringBuilder out = new StringBuilder();
    for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
      if (b > 0 && SAFE.indexOf(b) >= 0 && r.nextBoolean()) {
        out.append((char) b);
      } else {
        String hex = String.format("%%%02X", b & 0xff);
        out.append(r.nextBoolean() ? hex : hex.toLowerCase(Locale.ROOT));
      }
    }
    return out.toString();
  }

  private static byte[] body(SplittableRandom r) {
    int c = r.nextInt(100);
    if (c < 15) {
      return new byte[0];
    }
    if (c < 55) {
      return ("v" + r.nextInt(1_000_000)).getBytes(StandardCharsets.UTF_8);
    }
    if (c < 65) {
      return "é€😀 value".getBytes(StandardCharsets.UTF_8);
    }
    byte[] body = new byte[c < 75 ? 1 + r.nextInt(64) : List.of(MAX - 1, MAX, MAX + 1, 70_000).get(r.nextInt(4))];
    if (c < 75) {
      r.nextBytes(body); // binary: not UTF-8, nearly always
    } else {
      Arrays.fill(body, (byte) 'x');
    }
    return body;
  }

  // ---- what docs/demo.md gives for a request

  enum Op { PUT, DELETE, GET, LOCAL, OTHER }

  /**
   * The statuses docs/demo.md allows: {@code jdk} when the JDK's server answers (or may answer: then
   * {@code statuses} are the API's, and a JDK 400 is allowed too).
   */
  record Expected(Set<Integer> statuses, boolean jdk, boolean jdkMay, String reason, String allow, Op op, String key,
                  String value) {
    static Expected jdk(int status) {
      return new Expected(Set.of(status), true, false, null, null, Op.OTHER, null, null);
    }

    static Expected api(String reason, int... statuses) {
      return api(reason, null, statuses);
    }

    static Expected api(String reason, String allow, int... statuses) {
      return new Expected(Arrays.stream(statuses).boxed().collect(Collectors.toSet()), false, false,
          reason, allow, Op.OTHER, null, null);
    }

    Expected op(Op op, String key, String value) {
      return new Expected(statuses, jdk, jdkMay, reason, allow, op, key, value);
    }

    Expected orJdk400(boolean may) {
      return may ? new Expected(statuses, jdk, true, reason, allow, op, key, value) : this;
    }
  }

  private Expected expect(Request q) {
    String target = q.target();
    if (q.framing() == Framing.BAD_LINE || target.matches("(?s).*%([^0-9a-fA-F].|.[^0-9a-fA-F]|.?$).*")
        || target.chars().anyMatch(c -> ILLEGAL.indexOf(c) >= 0)) {
      return Expected.jdk(400); // no target, a malformed escape, or a character a URI may not hold
    }
    switch (q.framing()) {
      case LENGTH_NAN, LENGTH_NEGATIVE, LENGTH_TWICE, LENGTH_AND_CHUNKED:
        return Expected.jdk(400);
      case GZIP:
        return Expected.jdk(501);
      default:
        break;
    }
    String path = target;
    String authority = null;
    if (target.startsWith("http://")) {
      int slash = target.indexOf('/', 7);
      if (slash < 0) {
        return Expected.jdk(404); // no path
      }
      authority = target.substring(7, slash);
      path = target.substring(slash);
    }
    boolean rawBytes = target.chars().anyMatch(c -> c >= 0x7f); // the JDK may refuse them
    return api(q, authority, path).orJdk400(rawBytes);
  }

  private static Expected api(Request q, String authority, String target) {
    String method = q.method();
    boolean unreadable = q.framing() == Framing.BAD_CHUNK || q.framing() == Framing.LENGTH_LONG;
    if (!method.equals("PUT") && unreadable) {
      return Expected.api("cannot read the request body", 400);
    }
    List<String> hosts = q.headers().stream().filter(h -> h.startsWith("Host:")).toList();
    if (hosts.size() > 1) {
      return Expected.api("a request has one Host header; got 2", 400);
    }
    if (hosts.isEmpty() && q.version().equals("1.1")) {
      return Expected.api("request needs a Host header", 400);
    }
    if (hosts.stream().anyMatch(h -> h.contains("evil")) || authority != null && authority.contains("evil")) {
      return Expected.api("this peer answers requests addressed to localhost or an IP address", 421);
    }
    if (target.contains("#")) {
      return Expected.api("a request path has no fragment", 400);
    }
    String[] split = target.split("\\?", 2);
    String path = split[0];
    String query = split.length > 1 ? split[1] : "";
    if (path.equals("/kv") || path.startsWith("/kv/")) {
      return kv(q, path.length() <= 4 ? "" : path.substring(4), query, unreadable);
    }
    boolean getOrHead = method.equals("GET") || method.equals("HEAD");
    String[] taken = switch (path) {
      case "/", "/index.html", "/web/app.js", "/web/nope.js", "/web/..%2Fweb%2Findex.html", "/stats",
          "/events/recent" -> new String[0];
      case "/ring" -> new String[] {"ranges"};
      case "/keys" -> new String[] {"role", "limit"};
      case "/events" -> new String[] {"lastEventId"};
      default -> null;
    };
    if (taken == null) {
      return Expected.api("no route " + method + " ", 404);
    }
    if (path.equals("/events") ? !method.equals("GET") : !getOrHead) {
      String allow = path.equals("/events") ? "GET" : "GET, HEAD";
      return Expected.api("method " + method + " not allowed on " + path + "; allowed: " + allow, allow, 405);
    }
    Optional<Expected> bad = badQuery(query, taken);
    if (bad.isPresent()) {
      return bad.get();
    }
    Map<String, String> parameters = parameters(query);
    if (path.equals("/ring") && !List.of("true", "false").contains(parameters.getOrDefault("ranges", "true"))) {
      return Expected.api("ranges must be true or false", 400);
    }
    if (path.equals("/keys")) {
      if (!List.of("all", "primary", "backup", "stray").contains(parameters.getOrDefault("role", "all"))) {
        return Expected.api("role must be all, primary, backup or stray", 400);
      }
      String limit = parameters.getOrDefault("limit", "0");
      if (!limit.matches("[0-9]+") || Long.parseLong(limit) > HttpApi.MAX_KEYS_LISTED) {
        return Expected.api("limit must be in 0..100000", 400);
      }
    }
    return path.startsWith("/web/") && !path.equals("/web/app.js") ? Expected.api("no such file", 404)
        : Expected.api(null, 200);
  }

  private static Expected kv(Request q, String rawKey, String query, boolean unreadable) {
    String method = q.method();
    if (!List.of("GET", "PUT", "DELETE").contains(method)) {
      return Expected.api("method " + method + " not allowed on /kv/{key}", "GET, PUT, DELETE", 405);
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (int i = 0; i < rawKey.length(); i++) {
      if (rawKey.charAt(i) == '%') {
        bytes.write(Integer.parseInt(rawKey.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        bytes.write(rawKey.charAt(i));
      }
    }
    Optional<String> key = utf8(bytes.toByteArray());
    if (key.isEmpty()) {
      return Expected.api("the key is not valid UTF-8", 400);
    }
    if (key.get().isEmpty()) {
      return Expected.api("empty key", 400);
    }
    if (bytes.size() > KeyCodec.MAX_KEY_BYTES) {
      return Expected.api("key too long: " + bytes.size() + " UTF-8 bytes, at most 256", 400);
    }
    Optional<Expected> bad = badQuery(query, method.equals("GET") ? new String[] {"local"} : new String[0]);
    if (bad.isPresent()) {
      return bad.get();
    }
    String local = parameters(query).getOrDefault("local", "false");
    if (!local.equals("true") && !local.equals("false")) {
      return Expected.api("local must be true or false", 400);
    }
    return switch (method) {
      case "PUT" -> {
        if (unreadable) {
          // the body ends before its declared length: unreadable, or too large if it declared so
          yield Expected.api(null, 400, 413);
        }
        if (q.body().length > MAX) {
          yield Expected.api("value too large", 413);
        }
        Optional<String> value = utf8(q.body());
        yield value.isEmpty() ? Expected.api("the value is not valid UTF-8", 400)
            : Expected.api(null, 200, 409, 503).op(Op.PUT, key.get(), value.get());
      }
      case "DELETE" -> Expected.api(null, 200, 409, 503).op(Op.DELETE, key.get(), null);
      default -> local.equals("true") ? Expected.api(null, 200, 404).op(Op.LOCAL, key.get(), null)
          : Expected.api(null, 200, 404, 503).op(Op.GET, key.get(), null);
    };
  }

  /** The 400 for a parameter the route does not take, or one given twice, if any. */
  private static Optional<Expected> badQuery(String query, String... taken) {
    Set<String> names = new HashSet<>();
    for (String pair : query.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      String name = URLDecoder.decode(pair.split("=", 2)[0], StandardCharsets.UTF_8);
      if (!List.of(taken).contains(name)) {
        return Optional.of(Expected.api("unknown query parameter \"" + name + "\"", 400));
      }
      if (!names.add(name)) {
        return Optional.of(Expected.api("query parameter " + name + " given more than once", 400));
      }
    }
    return Optional.empty();
  }

  private static Map<String, String> parameters(String query) {
    Map<String, String> out = new HashMap<>();
    for (String pair : query.split("&")) {
      if (!pair.isEmpty()) {
        String[] nv = pair.split("=", 2);
        out.put(URLDecoder.decode(nv[0], StandardCharsets.UTF_8),
            nv.length < 2 ? "" : URLDecoder.decode(nv[1], StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  private static Optional<String> utf8(byte[] bytes) {
    try {
      return Optional.of(StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString());
    } catch (CharacterCodingException e) {
      return Optional.empty();
    }
  }

  // ---- each reply

  record Reply(int status, Map<String, List<String>> headers, String body) {
    String header(String name) {
      return headers.getOrDefault(name.toLowerCase(Locale.ROOT), List.of()).stream().findFirst().orElse(null);
    }

    /** The JDK server's own refusal: a one-line HTML reason. */
    boolean fromJdk() {
      return String.valueOf(header("Content-Type")).startsWith("text/html") && body.startsWith("<h1>" + status + " ");
    }

    @Override
    public String toString() {
      return status + " " + headers + " " + (body.length() > 300 ? body.substring(0, 300) + "..." : body);
    }
  }

  private static void check(Request q, Expected e, Reply r, String what) {
    assertTrue(r.status() != 500, "a 500: " + what);
    if (r.fromJdk()) {
      assertTrue(e.jdk() && e.statuses().contains(r.status()) || e.jdkMay() && r.status() == 400,
          "the JDK's own reply where the API should answer: " + what);
      assertFalse(r.body().contains("\n") || r.body().contains("\tat "), "a one-line reason: " + what);
      return;
    }
    assertFalse(e.jdk(), "the JDK's server refuses this, with its own reply: " + what);
    assertTrue(e.statuses().contains(r.status()), what);
    if (r.status() >= 400) {
      assertFalse(r.body().contains("\tat ") || r.body().contains("Exception"), "a stack trace: " + what);
      assertEquals("application/json; charset=utf-8", r.header("Content-Type"), what);
      if (!q.method().equals("HEAD")) {
        String error = PeerCluster.parse(r.body()).path("error").asText("");
        assertFalse(error.isBlank(), "a reason: " + what);
        if (e.reason() != null) {
          assertTrue(error.contains(e.reason()), "the reason: " + what);
        }
      }
    }
    if (r.status() == 405) {
      assertEquals(e.allow(), r.header("Allow"), what);
    }
  }

  /** What a client may expect of a key: the value of its last acknowledged write, or 404 after a delete. */
  private static final class Model {
    /** Each key written or deleted with a 200, and its value then (empty: deleted). */
    private final Map<String, Optional<String>> keys = new HashMap<>();
    /** Keys a write of which had no 200 (a 503 may have stored it anyway). */
    private final Set<String> unsure = new HashSet<>();
    int reads;
    int writes;
    int deletes;

    void check(Request q, Expected e, Reply r, String what) {
      if (e.op() == Op.OTHER || e.op() == Op.LOCAL || r.fromJdk() || r.status() >= 500) {
        if (e.key() != null && r.status() == 503 && e.op() != Op.GET) {
          unsure.add(e.key());
        }
        return;
      }
      JsonNode json = PeerCluster.parse(r.body());
      if (r.status() == 409) {
        unsure.add(e.key());
        return;
      }
      assertEquals(e.key(), json.path("key").asText(), "the key as decoded: " + what);
      switch (e.op()) {
        case PUT -> {
          assertFalse(json.path("deleted").asBoolean(true), what);
          keys.put(e.key(), Optional.of(e.value()));
          unsure.remove(e.key());
          writes++;
        }
        case DELETE -> {
          assertTrue(json.path("deleted").asBoolean(false), what);
          keys.put(e.key(), Optional.empty());
          unsure.remove(e.key());
          deletes++;
        }
        default -> {
          reads++;
          if (unsure.contains(e.key())) {
            return;
          }
          Optional<String> last = keys.get(e.key());
          if (last != null && last.isPresent()) {
            assertEquals(200, r.status(), "written before: " + what);
            assertEquals(last.get(), json.path("value").asText(), "the value written last: " + what);
          } else {
            assertEquals(404, r.status(), (last == null ? "never written: " : "deleted: ") + what);
            assertEquals(last == null ? "not found" : "deleted", json.path("error").asText(), what);
          }
        }
      }
    }

    @Override
    public String toString() {
      return "reads " + reads + ", writes " + writes + ", deletes " + deletes;
    }
  }

  // ---- sending

  /** Whether {@code HttpClient} sends the request as it is: a plain target, a method token, its own Host. */
  private boolean clientCanSend(Request q) {
    return !expect(q).jdk() && q.version().equals("1.1") && q.headers().equals(List.of(host(q.peer())))
        && (q.framing() == Framing.LENGTH || q.framing() == Framing.CHUNKED) && q.target().startsWith("/")
        && q.target().chars().allMatch(c -> c > 0x20 && c < 0x7f) && !q.target().contains("#")
        && !q.target().contains("/.") && !q.target().startsWith("//") && q.method().matches("[A-Za-z]+");
  }

  private Reply send(Request q, boolean viaClient) throws Exception {
    return viaClient ? sendWithClient(q) : sendOnSocket(q);
  }

  private Reply sendWithClient(Request q) throws Exception {
    HttpRequest.BodyPublisher body = q.framing() == Framing.CHUNKED
        ? HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(q.body()))
        : q.body().length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(q.body());
    HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports[q.peer()]
        + q.target())).timeout(Duration.ofSeconds(20)).method(q.method(), body).build(),
        HttpResponse.BodyHandlers.ofString());
    Map<String, List<String>> headers = new HashMap<>();
    r.headers().map().forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), v));
    return new Reply(r.statusCode(), headers, r.body());
  }

  private Reply sendOnSocket(Request q) throws IOException {
    StringBuilder head = new StringBuilder();
    if (q.framing() == Framing.BAD_LINE) {
      head.append("GARBAGE").append(q.method()).append("\r\n");
    } else {
      head.append(q.method()).append(' ').append(q.target()).append(" HTTP/").append(q.version()).append("\r\n");
    }
    q.headers().forEach(h -> head.append(h).append("\r\n"));
    if (q.version().equals("1.1")) {
      head.append("Connection: close\r\n");
    }
    byte[] body = q.body();
    switch (q.framing()) {
      case LENGTH -> head.append(body.length == 0 && q.method().length() % 2 == 0 ? ""
          : "Content-Length: " + body.length + "\r\n");
      case CHUNKED, BAD_CHUNK -> head.append("Transfer-Encoding: chunked\r\n");
      case LENGTH_LONG -> head.append("Content-Length: ").append(body.length + 1 + body.length % 7).append("\r\n");
      case LENGTH_NAN -> head.append("Content-Length: abc\r\n");
      case LENGTH_NEGATIVE -> head.append("Content-Length: -5\r\n");
      case LENGTH_TWICE -> head.append("Content-Length: 0\r\nContent-Length: 0\r\n");
      case LENGTH_AND_CHUNKED -> head.append("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n");
      case GZIP -> head.append("Transfer-Encoding: gzip\r\n");
      default -> { }
    }
    head.append("\r\n");
    try (Socket s = new Socket("127.0.0.1", ports[q.peer()])) {
      s.setSoTimeout(20_000);
      OutputStream out = s.getOutputStream();
      ByteArrayOutputStream request = new ByteArrayOutputStream();
      request.writeBytes(head.toString().getBytes(StandardCharsets.ISO_8859_1));
      if (q.framing() == Framing.CHUNKED) {
        int half = body.length / 2; // two chunks, the first perhaps empty... then the last
        for (byte[] chunk : new byte[][] {Arrays.copyOfRange(body, 0, half), Arrays.copyOfRange(body, half, body.length)}) {
          if (chunk.length > 0) {
            request.writeBytes((Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
            request.writeBytes(chunk);
            request.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
          }
        }
        request.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      } else if (q.framing() == Framing.BAD_CHUNK) {
        request.writeBytes("zz\r\nhello\r\n0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      } else {
        request.writeBytes(body);
      }
      out.write(request.toByteArray());
      out.flush();
      if (q.framing() == Framing.LENGTH_LONG) {
        s.shutdownOutput();
      }
      return parse(s.getInputStream().readAllBytes());
    }
  }

  private static Reply parse(byte[] bytes) {
    String all = new String(bytes, StandardCharsets.ISO_8859_1);
    int end = all.indexOf("\r\n\r\n");
    assertTrue(all.startsWith("HTTP/1.1 ") && end > 0, "a reply: " + all);
    String[] lines = all.substring(0, end).split("\r\n");
    Map<String, List<String>> headers = new HashMap<>();
    for (int i = 1; i < lines.length; i++) {
      String[] nv = lines[i].split(":", 2);
      headers.computeIfAbsent(nv[0].trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(nv[1].trim());
    }
    String body = new String(Arrays.copyOfRange(bytes, end + 4, bytes.length), StandardCharsets.UTF_8);
    return new Reply(Integer.parseInt(lines[0].substring(9, 12)), headers, body);
  }

  // ---- the peers

  private boolean agreed(int peer) throws Exception {
    JsonNode ring = ring(peer);
    return ring.path("agreed").asBoolean() && ring.path("inRing").asBoolean() && ring.path("members").size() == 2;
  }

  private JsonNode ring(int peer) throws Exception {
    HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports[peer]
        + "/ring?ranges=false")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return PeerCluster.parse(r.body());
  }
}
