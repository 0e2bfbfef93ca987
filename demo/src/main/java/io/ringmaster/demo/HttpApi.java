package io.ringmaster.demo;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.ringmaster.ring.HashRing;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The peer's HTTP API. Every refusal is a 4xx with {@code {"error": reason}}; an unexpected
 * failure is a 500 with the exception's class only (the stack trace goes to the peer's log).
 */
final class HttpApi implements HttpHandler {
  private static final System.Logger LOG = System.getLogger(HttpApi.class.getName());
  /**
   * Bodies over the limit are read this far, so that a client sending no more than this before it
   * reads the reply gets the 413 instead of a reset.
   */
  private static final int DRAIN_BYTES = 1024 * 1024;
  static final int MAX_KEYS_LISTED = 100_000;
  /**
   * At most this many bytes of keys in a {@code GET /keys} reply, as JSON: 100,000 keys of up to
   * 256 bytes, escaped, could otherwise take more than a small peer's heap.
   */
  static final int MAX_KEYS_LISTED_BYTES = 4 * 1024 * 1024;

  record ErrorReply(String error) {}

  record Written(String key, List<String> owners, long version, String writer, boolean deleted) {}

  record Found(String key, String value, String owner, List<String> owners, long version, String writer) {}

  record Missing(String error, String key, boolean deleted, String owner, List<String> owners) {}

  /** {@code GET /kv/{key}?local=true}: this peer's own copy and its role for the key. */
  record LocalCopy(String key, String value, boolean deleted, long version, String writer, String holder,
                   String role) {}

  record Keys(String local, long viewId, String role, int count, boolean truncated, List<String> keys) {}

  private final KvService kv;
  private final Store store;
  private final Routing routing;
  private final RingView ring;
  private final Supplier<?> stats;
  private final EventLog events;
  private final LongSupplier viewId;
  private final Faults faults;

  /** An API whose {@code /admin} routes are refused: fault injection off. */
  HttpApi(KvService kv, Store store, Routing routing, RingView ring, Supplier<?> stats, EventLog events,
          LongSupplier viewId) {
    this(kv, store, routing, ring, stats, events, viewId, Faults.off());
  }

  HttpApi(KvService kv, Store store, Routing routing, RingView ring, Supplier<?> stats, EventLog events,
          LongSupplier viewId, Faults faults) {
    this.faults = faults;
    this.kv = kv;
    this.store = store;
    this.routing = routing;
    this.ring = ring;
    this.stats = stats;
    this.events = events;
    this.viewId = viewId;
  }

  @Override
  public void handle(HttpExchange exchange) {
    try {
      route(exchange);
    } catch (HttpError e) {
      exchange.getResponseHeaders().putAll(multi(e.headers()));
      // A body that cannot be read (its error cuts the connection) is not read again, nor is one
      // a 413 has read as far as it reads. Any other is read before the reply (a value read to its
      // end reads as empty); one refused before it was read may turn out malformed then.
      boolean drain = e.status() != 413 && !e.headers().containsKey("Connection");
      sendRaw(exchange, e.status(), Json.bytes(new ErrorReply(e.getMessage())), drain);
    } catch (KvService.Unavailable e) {
      send(exchange, 503, new ErrorReply(e.getMessage()));
    } catch (IOException e) {
      if (exchange.getResponseCode() == -1) { // before the reply began: a failure here, not the client's
        failed(exchange, e);
        return;
      }
      // Writing a page or an event stream to a client that went away (a reload, a closed tab): an
      // everyday event. (Request bodies that cannot be read are 400s above.)
      LOG.log(Level.DEBUG, "request {0} {1}: client gone: {2}", exchange.getRequestMethod(),
          exchange.getRequestURI(), e.toString());
      exchange.close();
    } catch (Exception | Error e) {
      failed(exchange, e);
    }
  }

  private static void failed(HttpExchange exchange, Throwable e) {
    LOG.log(Level.ERROR, "request " + exchange.getRequestMethod() + " " + exchange.getRequestURI() + " failed", e);
    send(exchange, 500, new ErrorReply("internal error: " + e.getClass().getSimpleName()));
  }

  private void route(HttpExchange ex) throws IOException {
    String method = ex.getRequestMethod();
    URI uri = ex.getRequestURI();
    // The path as the client sent it, up to any query or fragment. Not the URI's path: one starting
    // "//" parses as an authority and a path ("//kv/a": "kv" and "/a"; "///kv/a": an empty one and
    // "/kv/a"), and is no route. A target in absolute form ("http://127.0.0.1/kv/a") is served as its path.
    String path = uri.getScheme() != null ? uri.getRawPath() : uri.toString().split("[?#]", 2)[0];
    if (!method.equals("PUT") && !(method.equals("POST") && path.equals("/admin/split"))) {
      // Only a PUT, or a POST of a split, has a body to read. Another request's body (a GET or
      // DELETE sent with one) is read now, not after the work: the server counts a request as
      // arriving until its body is read, and cuts one that takes more than 10 s, such as a DELETE
      // waiting for an owner. One that cannot be read is refused now, and not read again before
      // the reply: reading on past a malformed chunk would wait for the client.
      InputStream in = ex.getRequestBody();
      try {
        discard(in, DRAIN_BYTES);
      } catch (IOException | RuntimeException e) {
        throw unreadable(in, e);
      }
    }
    checkHost(ex, uri);
    if (uri.getRawFragment() != null) {
      // "PUT /kv/a#b" would otherwise write "a": a "#" in a key is sent as %23.
      throw new HttpError(400, "a request path has no fragment (a \"#\" and what follows): send a \"#\" in a"
          + " key as %23");
    }
    if (path.equals("/kv") || path.startsWith("/kv/")) {
      kv(ex, method, path.length() <= 4 ? "" : path.substring(4));
    } else if (path.equals("/") || path.equals("/index.html")) {
      allowGetOrHead(ex);
      query(ex, path);
      StaticFiles.serve(ex, "index.html");
    } else if (path.startsWith("/web/")) {
      allowGetOrHead(ex);
      query(ex, "/web/{file}");
      StaticFiles.serve(ex, path.substring("/web/".length()));
    } else if (path.equals("/ring")) {
      allowGetOrHead(ex);
      // ?ranges=false leaves out the ranges (megabytes for 50 members of 1024 virtual nodes):
      // the page polls without them and fetches them only when the ring changes.
      send(ex, 200, ring.reply(flag(query(ex, "/ring", "ranges"), "ranges", true)));
    } else if (path.equals("/stats")) {
      allowGetOrHead(ex);
      query(ex, "/stats");
      send(ex, 200, stats.get());
    } else if (path.equals("/events")) {
      allow(ex, "GET"); // a stream: HEAD would hold a subscriber's place for nothing
      // ?lastEventId= names the last event seen as the Last-Event-ID header does, for a page that
      // opens a new stream (a browser sets the header only on its own reconnects); the header wins.
      events.subscribe(ex, query(ex, "/events", "lastEventId").get("lastEventId"));
    } else if (path.equals("/events/recent")) {
      allowGetOrHead(ex);
      query(ex, "/events/recent");
      sendRaw(ex, 200, "[" + String.join(",", events.recent()) + "]");
    } else if (path.equals("/keys")) {
      allowGetOrHead(ex);
      keys(ex);
    } else if (path.equals("/admin/split")) {
      allow(ex, "POST");
      query(ex, "/admin/split");
      faults.requireEnabled(); // before the body: off, any body gets the 403 that says why
      refusePages(ex);
      send(ex, 200, faults.split(readBody(ex)));
    } else if (path.equals("/admin/heal")) {
      allow(ex, "POST");
      query(ex, "/admin/heal");
      faults.requireEnabled();
      refusePages(ex);
      send(ex, 200, faults.heal());
    } else {
      throw new HttpError(404, "no route " + method + " " + path
          + "; try /kv/{key}, /ring, /stats, /events, /events/recent, /keys, /admin/split, /admin/heal or /");
    }
  }

  /**
   * Refuses a request addressed to a host other than this machine's loopback. The peer listens on
   * 127.0.0.1 only, yet a page from another site can reach it under that site's own name: the
   * name is made to resolve to 127.0.0.1 once the page has loaded (DNS rebinding), and the
   * browser then lets the page read and write keys as if it were the peer's own. Such a request
   * names the other site in its {@code Host} header (or in its target, in absolute form), so the
   * only names served are {@code localhost} and names under {@code .localhost}, which browsers
   * resolve to loopback themselves. An IP address ({@code 127.0.0.1}, {@code 0.0.0.0},
   * {@code [::1]}) is served too: no name is looked up for it, so no page of another site can
   * take it over. Any port, so that a forwarded port works. An HTTP/1.0 request may come without
   * a {@code Host}.
   */
  static void checkHost(HttpExchange ex, URI uri) {
    List<String> hosts = ex.getRequestHeaders().getOrDefault("Host", List.of());
    if (hosts.size() > 1) {
      throw new HttpError(400, "a request has one Host header; got " + hosts.size());
    }
    if (hosts.isEmpty() && !ex.getProtocol().equals("HTTP/1.0")) {
      throw new HttpError(400, "an " + ex.getProtocol() + " request needs a Host header");
    }
    if (!hosts.isEmpty()) {
      refuseUnlessLoopback(hosts.get(0));
    }
    if (uri.getScheme() != null) {
      refuseUnlessLoopback(uri.getRawAuthority() == null ? "" : uri.getRawAuthority());
    }
  }

  /**
   * Refuses an {@code /admin} request that a web page sent. A page of any site can make a browser
   * POST a text body to 127.0.0.1 without asking the peer first (for a PUT or a DELETE it must
   * ask, and this peer never allows one), and a split would take effect though the page cannot
   * read the reply. Browsers name the page's origin in an {@code Origin} header on every POST; the
   * launcher and curl send none, and the ring page makes no such request.
   */
  private static void refusePages(HttpExchange ex) {
    String origin = ex.getRequestHeaders().getFirst("Origin");
    if (origin != null) {
      throw new HttpError(403, "the /admin routes are not for web pages: refused a request from "
          + Flags.quoted(origin) + " (its Origin header)");
    }
  }

  /** A host (a name, an IPv4 address, or an IPv6 one in brackets), then a port or none. */
  private static final Pattern AUTHORITY = Pattern.compile("(\\[[^\\]]*\\]|[^\\[\\]:@]*)(:[0-9]{0,5})?");

  private static void refuseUnlessLoopback(String authority) {
    Matcher m = AUTHORITY.matcher(authority);
    String name = m.matches() ? m.group(1).toLowerCase(Locale.ROOT) : "";
    name = name.endsWith(".") ? name.substring(0, name.length() - 1) : name;
    if (!(name.equals("localhost") || name.matches("([a-z0-9-]+\\.)+localhost")
        || name.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}") || name.matches("\\[[0-9a-f:.]+\\]"))) {
      throw new HttpError(421, "this peer answers requests addressed to localhost or an IP address (127.0.0.1)"
          + " only, not " + authority + " (a page of another site could be using that name to reach it)");
    }
  }

  private void kv(HttpExchange ex, String method, String rawKey) throws IOException {
    if (!method.equals("GET") && !method.equals("PUT") && !method.equals("DELETE")) {
      throw HttpError.methodNotAllowed(method, "/kv/{key}", "GET, PUT, DELETE");
    }
    String key = KeyCodec.validate(KeyCodec.decode(rawKey));
    Map<String, String> q = method.equals("GET")
        ? query(ex, "GET /kv/{key}", "local") : query(ex, method + " /kv/{key}");
    switch (method) {
      case "PUT" -> {
        KvService.Written w = kv.put(key, readValue(ex));
        send(ex, 200, new Written(key, w.owners(), w.version().stamp(), w.version().writer(), false));
      }
      case "DELETE" -> {
        KvService.Written w = kv.delete(key);
        send(ex, 200, new Written(key, w.owners(), w.version().stamp(), w.version().writer(), true));
      }
      default -> {
        if (flag(q, "local", false)) {
          local(ex, key);
          return;
        }
        KvService.Read r = kv.get(key);
        Optional<Entry> e = r.entry();
        if (e.isPresent() && !e.get().deleted()) {
          Version v = e.get().version();
          send(ex, 200, new Found(key, e.get().value(), r.servedBy(), r.owners(), v.stamp(), v.writer()));
        } else {
          send(ex, 404, new Missing(e.isPresent() ? "deleted" : "not found", key, e.isPresent(), r.servedBy(),
              r.owners()));
        }
      }
    }
  }

  private void local(HttpExchange ex, String key) {
    Optional<Entry> e = store.get(key);
    if (e.isEmpty()) {
      throw new HttpError(404, "not held by " + routing.self());
    }
    int role = routing.indexOfSelf(routing.owners(key));
    Entry entry = e.get();
    send(ex, 200, new LocalCopy(key, entry.value(), entry.deleted(), entry.version().stamp(),
        entry.version().writer(), routing.self(), role == 0 ? "primary" : role > 0 ? "backup" : "stray"));
  }

  private void keys(HttpExchange ex) {
    Map<String, String> q = query(ex, "/keys", "role", "limit");
    String role = q.getOrDefault("role", "all");
    if (!List.of("all", "primary", "backup", "stray").contains(role)) {
      throw new HttpError(400, "role must be all, primary, backup or stray: " + role);
    }
    int limit = MAX_KEYS_LISTED;
    if (q.containsKey("limit")) {
      try {
        limit = Integer.parseInt(q.get("limit"));
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 0 || limit > MAX_KEYS_LISTED) {
        throw new HttpError(400, "limit must be in 0.." + MAX_KEYS_LISTED + ": " + q.get("limit"));
      }
    }
    // One ring for every key of the reply, and the view it is of: a view installed while the keys
    // are listed would otherwise label some by the ring before and some by the ring after.
    long view;
    HashRing ring;
    do {
      view = viewId.getAsLong();
      ring = routing.ring();
    } while (viewId.getAsLong() != view);
    HashRing listedRing = ring;
    Listed listed = listKeys(store.all(), key -> role.equals("all") || role.equals(roleHere(listedRing, key)), limit,
        MAX_KEYS_LISTED_BYTES);
    send(ex, 200, new Keys(routing.self(), view, role, listed.keys().size(), listed.truncated(), listed.keys()));
  }

  private String roleHere(HashRing ring, String key) {
    int index = routing.indexOfSelf(routing.owners(ring, key));
    return index == 0 ? "primary" : index > 0 ? "backup" : "stray";
  }

  /** Keys to list, and whether some that matched were left out. */
  record Listed(List<String> keys, boolean truncated) {}

  /**
   * The keys of the live entries (not tombstones) that {@code wanted} takes, in the entries' order:
   * at most {@code limit} of them, and at most {@code maxBytes} as a JSON array of strings.
   */
  static Listed listKeys(Iterable<Entry> entries, Predicate<String> wanted, int limit,
                         int maxBytes) {
    List<String> keys = new ArrayList<>();
    long bytes = 2; // []
    for (Entry e : entries) {
      if (e.deleted() || !wanted.test(e.key())) {
        continue;
      }
      bytes += jsonBytes(e.key()) + (keys.isEmpty() ? 0 : 1);
      if (keys.size() == limit || bytes > maxBytes) {
        return new Listed(keys, true);
      }
      keys.add(e.key());
    }
    return new Listed(keys, false);
  }

  /**
   * The bytes of {@code s} as a JSON string in UTF-8, quotes included, or a few more, never fewer:
   * exact for printable text; a control character counts six bytes, its longest escape, though a
   * writer may escape some of them in two; a character outside the Basic Multilingual Plane counts
   * twelve, as Jackson writes it (its two surrogates escaped), not four.
   */
  static int jsonBytes(String s) {
    int bytes = 2;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      bytes += c < 0x20 ? 6 : c == '"' || c == '\\' ? 2 : c < 0x80 ? 1 : c < 0x800 ? 2
          : Character.isSurrogate(c) ? 6 : 3;
    }
    return bytes;
  }

  /** The body of a {@code POST /admin/split}: at most {@link Faults#MAX_BODY_BYTES} of UTF-8. */
  private static String readBody(HttpExchange ex) {
    InputStream in = ex.getRequestBody();
    byte[] body;
    try {
      body = in.readNBytes(Faults.MAX_BODY_BYTES + 1);
    } catch (IOException | IndexOutOfBoundsException e) {
      throw unreadable(in, e);
    }
    if (body.length > Faults.MAX_BODY_BYTES) {
      try {
        discard(in, DRAIN_BYTES);
      } catch (IOException e) {
        throw unreadable(in, e);
      }
      throw new HttpError(413, "body too large: over " + Faults.MAX_BODY_BYTES + " bytes");
    }
    return KeyCodec.utf8(body, "the body");
  }

  /** The request body as a value: at most {@link KeyCodec#MAX_VALUE_BYTES} of UTF-8. */
  private static String readValue(HttpExchange ex) {
    int max = KeyCodec.MAX_VALUE_BYTES;
    String declared = ex.getRequestHeaders().getFirst("Content-Length");
    InputStream in = ex.getRequestBody();
    byte[] body;
    try {
      if (declared != null) {
        long length;
        try {
          length = Long.parseLong(declared.trim());
        } catch (NumberFormatException e) {
          throw new HttpError(400, "bad Content-Length: " + declared);
        }
        if (length > max) {
          discard(in, DRAIN_BYTES);
          throw new HttpError(413, "value too large: " + length + " bytes, at most " + max);
        }
      }
      body = in.readNBytes(max + 1);
      if (body.length > max) {
        discard(in, DRAIN_BYTES);
        throw new HttpError(413, "value too large: over " + max + " bytes");
      }
    } catch (IOException | IndexOutOfBoundsException e) {
      throw unreadable(in, e);
    }
    return KeyCodec.utf8(body, "the value");
  }

  /**
   * The 400 for a request body that cannot be read: a malformed chunk, a connection cut
   * mid-body. The request's fault, not the server's; the server cuts the connection after the
   * reply ({@code Connection: close}), as the rest of the body cannot be told from the next request.
   */
  private static HttpError unreadable(InputStream in, Exception e) {
    if (e instanceof IndexOutOfBoundsException) {
      // The JDK's chunk reader sums a chunk size's hex digits in an int, which wraps: one that
      // lands negative (80000000 to ffffffff) makes every read fail at once, unchecked. The
      // server's own close of the stream would fail so too, after the reply, and leave the
      // connection open; closed here, the stream counts as closed without its end reached, and
      // the server cuts the connection after the reply. (Sizes of nine digits or more wrap to any
      // int, and are read as that size: a limit of the JDK that no handler can see.)
      try {
        in.close();
      } catch (IOException | RuntimeException alsoUnreadable) {
        // expected: the same failure
      }
      return new HttpError(400, "cannot read the request body: malformed chunk size", Map.of("Connection", "close"));
    }
    // Otherwise the stream stays open: closing it would read on past the error for the rest of
    // the body, which a malformed one may never send, before the reply went out.
    // The JDK's reason names what is wrong with the body ("invalid chunk length"); there may be none.
    return new HttpError(400, "cannot read the request body" + (e.getMessage() == null ? ""
        : ": " + e.getMessage()), Map.of("Connection", "close"));
  }

  /**
   * {@link #discard} of up to {@link #DRAIN_BYTES} of the request body, whatever reading it throws:
   * before any reply to a request whose body was not read. A body that cannot be read (a malformed
   * chunk) is treated as {@link #unreadable} treats it: the reply, whatever it is, then cuts the
   * connection, and the server does not read on past the error.
   */
  static void discardQuietly(HttpExchange ex) {
    InputStream in = ex.getRequestBody();
    try {
      discard(in, DRAIN_BYTES);
    } catch (IOException | RuntimeException malformed) {
      ex.getResponseHeaders().putAll(multi(unreadable(in, malformed).headers()));
      LOG.log(Level.TRACE, "request body not drained before the reply: {0}", malformed.toString());
    }
  }

  /**
   * Reads and drops up to {@code limit} bytes. Not {@code skipNBytes}: on the JDK 17 server's
   * fixed-length body it leaves the stream thinking bytes remain, and closing it then blocks.
   */
  private static void discard(InputStream in, int limit) throws IOException {
    byte[] buffer = new byte[8192];
    for (int total = 0, n; total < limit && (n = in.read(buffer, 0, Math.min(buffer.length, limit - total))) > 0; ) {
      total += n;
    }
  }

  /**
   * The request's query parameters, refused with a 400 unless each is one of {@code allowed} and
   * given once: a misspelt or repeated parameter would otherwise be ignored, and the client would
   * get an answer to another question than the one it asked.
   */
  private static Map<String, String> query(HttpExchange ex, String route, String... allowed) {
    String raw = ex.getRequestURI().getRawQuery();
    Map<String, String> out = new HashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String pair : raw.split("&")) {
      if (pair.isEmpty()) {
        continue; // "?a=1&" or "?&": nothing asked
      }
      int eq = pair.indexOf('=');
      String name;
      String value;
      try {
        name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
        value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        throw new HttpError(400, "malformed query parameter: " + pair);
      }
      if (!List.of(allowed).contains(name)) {
        throw new HttpError(400, "unknown query parameter \"" + name + "\" for " + route + "; "
            + (allowed.length == 0 ? "it takes none" : "it takes " + String.join(", ", allowed)));
      }
      if (out.put(name, value) != null) {
        throw new HttpError(400, "query parameter " + name + " given more than once");
      }
    }
    return out;
  }

  /** A boolean query parameter: {@code true}, {@code false}, or absent for the default. */
  private static boolean flag(Map<String, String> query, String name, boolean absent) {
    String v = query.get(name);
    if (v == null) {
      return absent;
    }
    if (!v.equals("true") && !v.equals("false")) {
      throw new HttpError(400, name + " must be true or false: " + v);
    }
    return v.equals("true");
  }

  /** GET, or HEAD: the same reply without its body (RFC 9110, 9.3.2), a quick "is it up?" for curl -I. */
  private static void allowGetOrHead(HttpExchange ex) {
    if (!ex.getRequestMethod().equals("HEAD")) {
      allow(ex, "GET", "GET, HEAD");
    }
  }

  private static void allow(HttpExchange ex, String allowed) {
    allow(ex, allowed, allowed);
  }

  private static void allow(HttpExchange ex, String allowed, String allowHeader) {
    if (!ex.getRequestMethod().equals(allowed)) {
      throw HttpError.methodNotAllowed(ex.getRequestMethod(), ex.getRequestURI().getRawPath(), allowHeader);
    }
  }

  private static Map<String, List<String>> multi(Map<String, String> headers) {
    Map<String, List<String>> out = new HashMap<>();
    headers.forEach((k, v) -> out.put(k, List.of(v)));
    return out;
  }

  static void send(HttpExchange ex, int status, Object reply) {
    sendRaw(ex, status, Json.bytes(reply), true);
  }

  private static void sendRaw(HttpExchange ex, int status, String json) {
    sendRaw(ex, status, json.getBytes(StandardCharsets.UTF_8), true);
  }

  /**
   * Sends a reply, first reading what is left of the request body if {@code drain}: a request
   * refused before its body was read, say. A large body left unread makes the close a reset that
   * can destroy the reply. (Not decided by a {@code Connection} header: the JDK's server sets one
   * on every HTTP/1.0 exchange.)
   */
  private static void sendRaw(HttpExchange ex, int status, byte[] body, boolean drain) {
    if (drain) {
      discardQuietly(ex);
    }
    try {
      ex.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
      ex.getResponseHeaders().set("Cache-Control", "no-cache");
      if ("HEAD".equals(ex.getRequestMethod())) { // a reply without a body: declaring one makes the JDK warn
        ex.sendResponseHeaders(status, -1);
        return;
      }
      ex.sendResponseHeaders(status, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    } catch (IOException | RuntimeException e) {
      // the client went away, or the headers were already sent: nothing left to tell it
      LOG.log(Level.DEBUG, "could not send a reply: {0}", e.toString());
    } finally {
      ex.close();
    }
  }
}
