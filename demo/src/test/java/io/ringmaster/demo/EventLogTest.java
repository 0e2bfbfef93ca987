package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpPrincipal;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a browser reconnecting to {@code /events} is sent, against a real HTTP server on 127.0.0.1;
 * what a stream's writer does and when it stops, against an exchange in this JVM that records it.
 */
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

    // This process's epoch but no number it can read: all the buffered ones, and no gap, since
    // nothing says which were missed.
    for (String unreadable : List.of(epoch + "x", epoch + "99999999999999999999")) {
      assertEquals(101, keys(events(unreadable, 1).get(0)), "the oldest buffered one first, after " + unreadable);
    }
  }

  /**
   * A browser reconnecting that had seen the newest event is sent none of the buffered ones again:
   * only what is published after it reconnected.
   */
  @Test
  void reconnect_namingTheNewestEvent_getsOnlyLaterOnes() throws Exception {
    for (int i = 1; i <= 3; i++) {
      log.publish(Events.sweep(i, List.of()));
    }
    try (Stream<String> first = open(null).body()) {
      String newest = read(first.iterator(), 3).get(2)[0];
      try (Stream<String> again = open(newest).body()) {
        assertEquals(2, log.subscribers(), "both streams subscribed (the headers came after the place)");
        log.publish(Events.sweep(4, List.of()));
        assertEquals(4, keys(read(again.iterator(), 1).get(0)), "the 4th first: none of the 3 seen again");
      }
    }
  }

  /**
   * An idle stream gets a heartbeat comment every {@link EventLog#HEARTBEAT}, not a flood: between
   * the first heartbeat and an event published as soon as it arrived, at most a few more.
   */
  @Test
  void anIdleStream_getsAHeartbeat_notAFloodOfThem() throws Exception {
    long opened = System.nanoTime();
    try (Stream<String> lines = open(null).body()) {
      Iterator<String> it = lines.iterator();
      assertEquals(": connected", it.next(), "the first line");
      String line = it.next();
      while (line.isEmpty()) {
        line = it.next();
      }
      assertEquals(": heartbeat", line, "an idle stream's next line");
      assertTrue(System.nanoTime() - opened >= EventLog.HEARTBEAT.toNanos(), "the first heartbeat: one heartbeat in");
      log.publish(Events.sweep(1, List.of()));
      int heartbeats = 0;
      for (line = it.next(); !line.startsWith("data: "); line = it.next()) {
        heartbeats += line.equals(": heartbeat") ? 1 : 0;
      }
      assertTrue(heartbeats <= 2, heartbeats + " more heartbeats before an event published after the first");
    }
  }

  /** Closing the log (the peer stops) ends every open stream, so that the browser sees it end. */
  @Test
  void close_endsEveryOpenStream() throws Exception {
    try (Stream<String> lines = open(null).body()) {
      Iterator<String> it = lines.iterator();
      assertEquals(": connected", it.next(), "the first line");
      Future<?> drained = threads.submit(() -> {
        while (it.hasNext()) {
          it.next();
        }
      });
      log.close();
      await("the stream ended").atMost(Duration.ofSeconds(20)).until(drained::isDone);
      assertEquals(0, log.subscribers(), "no subscriber left");
    }
  }

  /**
   * A stream whose reply cannot start (the browser left before the headers went out) gives its
   * place among the {@value EventLog#MAX_SUBSCRIBERS} back at once: no writer runs to free it.
   */
  @Test
  void aStreamWhoseHeadersCannotBeSent_givesItsPlaceBack() {
    IOException e = assertThrows(IOException.class, () -> log.subscribe(new LeftExchange()));
    assertEquals("Broken pipe", e.getMessage(), "the failure, passed on");
    assertEquals(0, log.subscribers(), "no place kept");
  }

  /** A GET /events whose client left before the reply's headers could be sent. */
  private static class LeftExchange extends HttpExchange {
    private final Headers request = new Headers();
    private final Headers response = new Headers();

    @Override
    public Headers getRequestHeaders() {
      return request;
    }

    @Override
    public Headers getResponseHeaders() {
      return response;
    }

    @Override
    public URI getRequestURI() {
      return URI.create("/events");
    }

    @Override
    public String getRequestMethod() {
      return "GET";
    }

    @Override
    public HttpContext getHttpContext() {
      return null;
    }

    @Override
    public void close() {
    }

    @Override
    public InputStream getRequestBody() {
      return InputStream.nullInputStream();
    }

    @Override
    public OutputStream getResponseBody() {
      return OutputStream.nullOutputStream();
    }

    @Override
    public void sendResponseHeaders(int code, long length) throws IOException {
      throw new IOException("Broken pipe");
    }

    @Override
    public InetSocketAddress getRemoteAddress() {
      return new InetSocketAddress(InetAddress.getLoopbackAddress(), 1);
    }

    @Override
    public int getResponseCode() {
      return -1;
    }

    @Override
    public InetSocketAddress getLocalAddress() {
      return new InetSocketAddress(InetAddress.getLoopbackAddress(), 2);
    }

    @Override
    public String getProtocol() {
      return "HTTP/1.1";
    }

    @Override
    public Object getAttribute(String name) {
      return null;
    }

    @Override
    public void setAttribute(String name, Object value) {
    }

    @Override
    public void setStreams(InputStream i, OutputStream o) {
    }

    @Override
    public HttpPrincipal getPrincipal() {
      return null;
    }
  }

  /**
   * A GET /events whose reply starts, in this JVM: its request body, the thread that writes its
   * stream, what that thread wrote and flushed, and whether the exchange was closed.
   */
  private static final class OpenExchange extends LeftExchange {
    private final InputStream body;
    private final boolean browserLeft;
    private final StringBuilder written = new StringBuilder();
    private final StringBuilder flushed = new StringBuilder();
    private volatile Thread writer;
    private volatile boolean closed;

    /** One whose request has {@code body}; if {@code browserLeft}, every write to it fails. */
    OpenExchange(byte[] body, boolean browserLeft) {
      this.body = new ByteArrayInputStream(body);
      this.browserLeft = browserLeft;
    }

    OpenExchange() {
      this(new byte[0], false);
    }

    @Override
    public InputStream getRequestBody() {
      return body;
    }

    @Override
    public void sendResponseHeaders(int code, long length) {
    }

    @Override
    public OutputStream getResponseBody() {
      writer = Thread.currentThread();
      return new OutputStream() {
        @Override
        public void write(int b) throws IOException {
          write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          if (browserLeft) {
            throw new IOException("Broken pipe");
          }
          synchronized (OpenExchange.this) {
            written.append(new String(b, off, len, StandardCharsets.UTF_8));
          }
        }

        @Override
        public void flush() {
          synchronized (OpenExchange.this) {
            flushed.setLength(0);
            flushed.append(written);
          }
        }
      };
    }

    @Override
    public void close() {
      closed = true;
    }

    synchronized String written() {
      return written.toString();
    }

    synchronized String flushed() {
      return flushed.toString();
    }
  }

  /**
   * A stream starts with a comment flushed at once, so the browser sees it open; closing the log
   * frees every place before it returns, and each writer, a daemon that never keeps the JVM up,
   * stops where it is, sending nothing more (no heartbeat after the close), and closes its exchange.
   */
  @Test
  void close_freesEveryPlaceAtOnce_andEachWriterStopsWithoutAnotherWrite() throws Exception {
    OpenExchange ex = new OpenExchange();
    log.subscribe(ex);
    await("connected").atMost(Duration.ofSeconds(20)).until(() -> !ex.flushed().isEmpty());
    assertEquals(": connected\n\n", ex.flushed(), "flushed on its own, before any heartbeat");
    assertTrue(ex.writer.isDaemon(), "the writer is a daemon thread");

    log.close();
    assertEquals(0, log.subscribers(), "no place left taken once close returned");
    await("the writer ended").atMost(Duration.ofSeconds(20)).until(() -> ex.closed && !ex.writer.isAlive());
    assertEquals(": connected\n\n", ex.written(), "nothing written after the close");
  }

  /** A browser that went away is noticed on the first write that fails, which frees its place. */
  @Test
  void aStreamWhoseWritesFail_givesItsPlaceBack() throws Exception {
    OpenExchange ex = new OpenExchange(new byte[0], true);
    log.subscribe(ex);
    await("dropped").atMost(Duration.ofSeconds(20)).until(() -> log.subscribers() == 0);
    await("the exchange closed").atMost(Duration.ofSeconds(20)).until(() -> ex.closed && !ex.writer.isAlive());
  }

  /**
   * At most {@value EventLog#MAX_SUBSCRIBERS} streams at once: the next is refused with a 503 and
   * takes no place.
   */
  @Test
  void subscribe_pastTheMostSubscribers_isRefusedWith503() throws Exception {
    for (int i = 0; i < EventLog.MAX_SUBSCRIBERS; i++) {
      log.subscribe(new OpenExchange());
    }
    assertEquals(EventLog.MAX_SUBSCRIBERS, log.subscribers());
    HttpError refused = assertThrows(HttpError.class, () -> log.subscribe(new OpenExchange()));
    assertEquals(503, refused.status());
    assertEquals(EventLog.MAX_SUBSCRIBERS, log.subscribers(), "the refused one took no place");
  }

  /**
   * A GET /events sent with a body has it read before its stream starts: the JDK's server counts a
   * request as arriving until its body is read, and cuts one that takes more than 10 s.
   */
  @Test
  void subscribe_readsTheRequestsBody() throws Exception {
    OpenExchange ex = new OpenExchange("x".repeat(10_000).getBytes(StandardCharsets.UTF_8), false);
    log.subscribe(ex);
    assertEquals(-1, ex.getRequestBody().read(), "the body read to its end");
  }

  /**
   * A subscriber that stops reading (a browser tab frozen in the background) is dropped once it
   * falls {@value EventLog#QUEUE} events behind, so that it does not hold one of the places for
   * good, while the publisher goes on publishing.
   */
  @Test
  void aSubscriberThatStopsReading_isDropped_onceItFallsAQueueBehind() throws Exception {
    List<LogRecord> logged = Logged.by(EventLog.class, this::fallBehind);
    assertEquals(1, Logged.messages(logged, Level.INFO).stream()
        .filter(m -> m.startsWith("dropping an /events subscriber that fell ")).count(), "said once, at INFO: " + logged);
  }

  private void fallBehind() throws Exception {
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
    try (Stream<String> lines = open(lastEventId).body()) {
      return read(lines.iterator(), count);
    }
  }

  /** A new stream, naming {@code lastEventId} (none if null), checked to be one: the caller closes its body. */
  private HttpResponse<Stream<String>> open(String lastEventId) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
        + server.getAddress().getPort() + "/events")).GET();
    if (lastEventId != null) {
      request.header("Last-Event-ID", lastEventId);
    }
    HttpResponse<Stream<String>> stream = client.send(request.build(), HttpResponse.BodyHandlers.ofLines());
    try {
      assertEquals(200, stream.statusCode());
      assertEquals("text/event-stream; charset=utf-8", stream.headers().firstValue("Content-Type").orElse(""),
          "an event stream");
      assertEquals("no-cache", stream.headers().firstValue("Cache-Control").orElse(""), "never cached");
    } catch (AssertionError e) {
      stream.body().close();
      throw e;
    }
    return stream;
  }

  /** The next {@code count} events (id and data) from {@code it}, fewer if the stream ends. */
  private static List<String[]> read(Iterator<String> it, int count) {
    List<String[]> out = new ArrayList<>();
    String id = null;
    while (out.size() < count && it.hasNext()) {
      String line = it.next();
      if (line.startsWith("id: ")) {
        id = line.substring(4);
      } else if (line.startsWith("data: ")) {
        out.add(new String[] {id, line.substring(6)});
      }
    }
    return out;
  }
}
