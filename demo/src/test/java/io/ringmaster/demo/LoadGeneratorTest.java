package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The launcher's {@code load}: it writes through every peer in turn, each key once, and counts a
 * write a peer refused as failed, not written. Two stand-in peers on 127.0.0.1, one that takes
 * every write and one that answers 503.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LoadGeneratorTest {
  private final List<HttpServer> servers = new ArrayList<>();

  @AfterEach
  void stop() {
    servers.forEach(s -> s.stop(0));
  }

  /** A stand-in peer that answers every request with {@code status}, noting each path it was sent. */
  private String peer(int status, Set<String> paths) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      paths.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
      exchange.sendResponseHeaders(status, -1);
      exchange.close();
    });
    server.start();
    servers.add(server);
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @Test
  void load_writesThroughEveryPeerInTurn_andCountsRefusedWritesAsFailed() throws IOException {
    Set<String> taken = ConcurrentHashMap.newKeySet();
    Set<String> refused = ConcurrentHashMap.newKeySet();
    List<String> urls = List.of(peer(200, taken), peer(503, refused));
    ByteArrayOutputStream out = new ByteArrayOutputStream();

    new LoadGenerator(urls, new PrintStream(out, true, StandardCharsets.UTF_8)).run(40);

    assertEquals(20, taken.size(), taken.toString());
    assertEquals(20, refused.size(), refused.toString());
    assertTrue(taken.stream().allMatch(p -> p.matches("PUT /kv/load-[0-9a-z]+-[0-9]*[02468]")), taken.toString());
    assertTrue(refused.stream().allMatch(p -> p.matches("PUT /kv/load-[0-9a-z]+-[0-9]*[13579]")), refused.toString());
    String said = out.toString(StandardCharsets.UTF_8);
    assertTrue(said.contains("wrote 20 keys (load-") && said.contains("; 20 failed"), said);
  }
}
