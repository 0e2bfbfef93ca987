package io.ringmaster.demo;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Map;
import java.util.regex.Pattern;

/** Serves the page's files from the classpath folder {@code web/}. */
final class StaticFiles {
  private static final Map<String, String> TYPES = Map.ofEntries(
      Map.entry("html", "text/html; charset=utf-8"),
      Map.entry("js", "text/javascript; charset=utf-8"),
      Map.entry("mjs", "text/javascript; charset=utf-8"),
      Map.entry("css", "text/css; charset=utf-8"),
      Map.entry("json", "application/json; charset=utf-8"),
      Map.entry("map", "application/json; charset=utf-8"),
      Map.entry("svg", "image/svg+xml"),
      Map.entry("png", "image/png"),
      Map.entry("jpg", "image/jpeg"),
      Map.entry("gif", "image/gif"),
      Map.entry("ico", "image/x-icon"),
      Map.entry("txt", "text/plain; charset=utf-8"),
      Map.entry("woff2", "font/woff2"));

  /**
   * A name the page may ask for: segments that do not start with a dot (so no ".", "..", nor
   * hidden file) and a last one with an extension. A classpath folder read as a resource lists
   * its entries, so a name without a known extension is never looked up.
   */
  private static final Pattern NAME =
      Pattern.compile("([A-Za-z0-9_-][A-Za-z0-9_.-]*/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\\.([a-z0-9]+)");

  private StaticFiles() {}

  /**
   * Sends {@code web/<relative>} ({@code index.html} for a folder); 404 for anything else: a
   * name outside {@link #NAME}, of a type not in {@link #TYPES}, or not on the classpath.
   */
  static void serve(HttpExchange exchange, String relative) throws IOException {
    String name = relative.isEmpty() || relative.endsWith("/") ? relative + "index.html" : relative;
    var matcher = NAME.matcher(name);
    if (!matcher.matches() || !TYPES.containsKey(matcher.group(2))) {
      throw new HttpError(404, "no such file: /web/" + relative);
    }
    try (InputStream in = StaticFiles.class.getClassLoader().getResourceAsStream("web/" + name)) {
      if (in == null) {
        throw new HttpError(404, "no such file: /web/" + relative);
      }
      byte[] body = in.readAllBytes();
      HttpApi.discardQuietly(exchange); // a GET sent with a body: see HttpApi
      exchange.getResponseHeaders().set("Content-Type", TYPES.get(matcher.group(2)));
      exchange.getResponseHeaders().set("Cache-Control", "no-cache");
      if (exchange.getRequestMethod().equals("HEAD")) { // no body, and none declared: the JDK warns otherwise
        exchange.sendResponseHeaders(200, -1);
        return;
      }
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }
}
