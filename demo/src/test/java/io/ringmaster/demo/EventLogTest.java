package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What a browser reconnecting to {@code /events} is sent, against a real HTTP server on 127.0.0.1. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EventLogTest {
  private final EventLog log = new EventLog();
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private HttpServer server;

  @BeforeEach
  void serve() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/events", log::subscribe);
    server.setExecutor(threads);
    server.start();
  }

  @AfterEach
  void stop() throws InterruptedException {
    log.close();
    server.stop(0);
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void reconnect_namingAnEventNoLongerBuffered_getsAGapThenTheBufferedOnes() throws Exception {
    int published = EventLog.CAPACITY + 100;
    for (int i = 1; i <= published; i++) {
      log.publish(Events.sweep(i, List.of()));
    }
    List<String[]> all = events(null, EventLog.CAPACITY);
    assertEquals(101, keys(all.get(0)), "the oldest buffered one");
    String epoch = all.get(0)[0].substring(0, all.get(0)[0].indexOf('-') + 1);

    // Last seen: the 5th. The 6th to the 100th are gone: said first, under the 100th's id.
    List<String[]> after5 = events(epoch + 5, 1 + EventLog.CAPACITY);
    JsonNode gap = PeerCluster.parse(after5.get(0)[1]);
    assertEquals("gap", gap.path("type").asText());
    assertEquals(95, gap.path("missed").asLong());
    assertEquals(epoch + 100, after5.get(0)[0], "a browser that reconnects again is sent the buffered ones");
    assertEquals(101, keys(after5.get(1)));
    assertEquals(published, keys(after5.get(EventLog.CAPACITY)));

    // Last seen: the 100th (the gap's own id) or a buffered one: no gap.
    List<String[]> after100 = events(epoch + 100, 1);
    assertEquals(101, keys(after100.get(0)));
    List<String[]> after150 = events(epoch + 150, 1);
    assertEquals(151, keys(after150.get(0)));
  }

  /**
   * A subscriber that stops reading (a browser tab frozen in the background) is dropped once it
   * falls {@value EventLog#QUEUE} events behind, so that it does not hold one of the places for
   * good, while the publisher goes on publishing.
   */
  @Test
  void aSubscriberThatStopsReading_isDropped_onceItFallsAQueueBehind() throws Exception {
    try (Socket reader = new Socket()) {
      reader.setReceiveBufferSize(4096); // before connecting: a small window, so the server's writes block soon
      reader.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getAddress().getPort()));
      reader.getOutputStream().write("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
          .getBytes(StandardCharsets.ISO_8859_1));
      await("subscribed").atMost(Duration.ofSeconds(20))
          .until(() -> log.subscribers() == 1);
      List<String> peers = Collections.nCopies(100, "x".repeat(100)); // about 10 KB an event
      for (int i = 0; i < 5 * EventLog.QUEUE && log.subscribers() > 0; i++) {
        log.publish(Events.sweep(i, peers));
      }
      await("dropped").atMost(Duration.ofSeconds(30))
          .until(() -> log.subscribers() == 0);
    }
  }

  private static long keys(String[] event) {
    return PeerCluster.parse(event[1]).path("keys").asLong();
  }

  /** The first {@code count} events (id and data) a new stream sends. */
  private List<String[]> events(String lastEventId, int count) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + server.getAddress().getPort() + "/events")).GET();
    if (lastEventId != null) {
      request.header("Last-Event-ID", lastEventId);
    }
    HttpResponse<Stream<String>> stream = client.send(request.build(), HttpResponse.BodyHandlers.ofLines());
    List<String[]> out = new ArrayList<>();
    try (Stream<String> lines = stream.body()) {
      assertEquals(200, stream.statusCode());
      Iterator<String> it = lines.iterator();
      String id = null;
      while (out.size() < count && it.hasNext()) {
        String line = it.next();
        if (line.startsWith("id: ")) {
          id = line.substring(4);
        } else if (line.startsWith("data: ")) {
          out.add(new String[] {id, line.substring(6)});
        }
      }
    }
    return out;
  }
}
