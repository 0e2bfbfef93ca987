package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The launcher takes a peer as started only when the peer itself answers on its port: a process
 * that took the port first (another launcher's peer, started at the same moment) answers too, with
 * another id.
 */
class LauncherReadyTest {

  @Test
  void answersAs_onlyThePeerWithThatId() throws IOException {
    AtomicReference<String> body = new AtomicReference<>("{\"id\":\"peer-1\",\"viewId\":3}");
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/stats", exchange -> {
      byte[] reply = body.get().getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, reply.length);
      exchange.getResponseBody().write(reply);
      exchange.close();
    });
    server.start();
    String url = "http://127.0.0.1:" + server.getAddress().getPort();
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    try {
      assertTrue(Launcher.answersAs(http, url, "peer-1"));
      assertFalse(Launcher.answersAs(http, url, "peer-2"), "another peer holds the port");
      body.set("not json");
      assertFalse(Launcher.answersAs(http, url, "peer-1"), "not a peer at all");
    } finally {
      server.stop(0);
    }
    assertFalse(Launcher.answersAs(http, url, "peer-1"), "nothing listens");
  }
}
