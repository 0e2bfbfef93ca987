package io.ringmaster.demo;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Map;

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

  private StaticFiles() {}

  /** Sends {@code web/<relative>}; 404 for anything else, ".." segments included. */
  static void serve(HttpExchange exchange, String relative) throws IOException {
    String name = relative.isEmpty() || relative.endsWith("/") ? relative + "index.html" : relative;
    if (name.startsWith("/") || name.contains("..") || name.contains("//") || name.contains("\\")) {
      throw new HttpError(404, "no such file: /web/" + relative);
    }
    try (InputStream in = StaticFiles.class.getClassLoader().getResourceAsStream("web/" + name)) {
      if (in == null) {
        throw new HttpError(404, "no such file: /web/" + relative);
      }
      byte[] body = in.readAllBytes();
      int dot = name.lastIndexOf('.');
      String type = TYPES.getOrDefault(dot < 0 ? "" : name.substring(dot + 1), "application/octet-stream");
      exchange.getResponseHeaders().set("Content-Type", type);
      exchange.getResponseHeaders().set("Cache-Control", "no-cache");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }
}
