package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.ringmaster.TestThreads;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Request bodies the server cannot read are the request's fault: a 4xx with a reason. */
class HttpApiBodyTest {

  /**
   * A request refused before its body is read (here a 300 KB body: past the 64 KiB the JDK's
   * server reads after a reply, within the 1 MiB the API reads first) still gets its 4xx: a body
   * left unread would make the server's close a reset, which fails the client's writes and can
   * destroy the reply before the client reads it.
   */
  @ParameterizedTest
  @ValueSource(strings = {"1.1 PUT /kv/ 400 key", "1.1 POST /kv/a 405 POST", "1.1 PUT /nowhere 404 no route",
      "1.0 PUT /kv/a?x=1 400 unknown query parameter", "1.0 PUT /kv/ 400 key"})
  void aRequestRefusedBeforeItsBodyIsRead_getsItsReply_notAReset(String request) throws Exception {
    String[] r = request.split(" ", 5);
    String version = r[0];
    r = Arrays.copyOfRange(r, 1, 5);
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      byte[] body = new byte[300_000];
      Arrays.fill(body, (byte) 'v');
      // HTTP/1.0 closes after the reply without asking; the JDK's server then sets a Connection
      // header on the exchange before the handler runs.
      String connection = version.equals("1.0") ? "" : "Connection: close\r\n";
      s.getOutputStream().write((r[0] + " " + r[1] + " HTTP/" + version + "\r\nHost: 127.0.0.1\r\n" + connection + "Content-Length: "
          + body.length + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().write(body);
      String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
      assertTrue(reply.startsWith("HTTP/1.1 " + r[2] + " "), reply);
      assertTrue(reply.contains("{\"error\":") && reply.contains(r[3]), reply);
    } finally {
      http.stop(0);
    }
  }

  /**
   * A value over the limit, sent whole (900,000 bytes, under the 1 MiB the API reads of it) before
   * the client reads the reply, declared or chunked: the client gets the 413 and its reason, not a
   * reset that fails its writes (the JDK's server alone reads only 64 KiB after a reply).
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void anOversizeValue_sentWholeBeforeTheReplyIsRead_gets413WithItsReason(boolean chunked) throws Exception {
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null)); // refused before any service
    http.start();
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      byte[] body = new byte[900_000];
      Arrays.fill(body, (byte) 'v');
      String framing = chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: " + body.length + "\r\n";
      s.getOutputStream().write(("PUT /kv/a HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + framing + "\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      if (chunked) {
        s.getOutputStream().write((Integer.toHexString(body.length) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      }
      s.getOutputStream().write(body);
      if (chunked) {
        s.getOutputStream().write("\r\n0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      }
      String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
      assertTrue(reply.startsWith("HTTP/1.1 413 "), reply);
      // A declared length is refused before the body is read, naming it; a chunked body once it is over.
      assertTrue(reply.endsWith(chunked ? "{\"error\":\"value too large: over 65536 bytes\"}"
          : "{\"error\":\"value too large: 900000 bytes, at most 65536\"}"), reply);
    } finally {
      http.stop(0);
    }
  }

  /**
   * Chunk sizes that are not hex, and hex sizes past {@code Integer.MAX_VALUE}, which the JDK's
   * chunk reader sums into a negative int and then fails on with an unchecked exception. The
   * request asks to keep the connection; the server cuts it after the reply (the rest of a
   * malformed body cannot be told from the next request), so reading to the end returns. A GET
   * or DELETE sent with such a body gets the same at once: its body is read before the route,
   * and not read again (reading on past the bad chunk would wait for the client, 10 s). So does a
   * PUT refused before its body is read (no route, no key, a bad query): the refusal is its
   * reply, and its body, found malformed when read before that reply, is not read again. A size
   * that is not hex is refused with the JDK's reason for it.
   */
  @ParameterizedTest
  @ValueSource(strings = {"PUT /kv/k zz 400 cannot read the request body: invalid chunk length\"}",
      "PUT /kv/k ffffffff 400 cannot read the request body", "PUT /kv/k 80000000 400 cannot read the request body",
      "GET /stats zz 400 cannot read the request body: invalid chunk length\"}",
      "DELETE /kv/k zz 400 cannot read the request body: invalid chunk length\"}",
      "GET /stats 80000000 400 cannot read the request body", "PUT /kv/ 80000000 400 empty key",
      "PUT /kv/ zz 400 empty key", "PUT /nowhere 80000000 404 no route", "PUT /nowhere zz 404 no route",
      "PUT /kv/k?x=1 80000000 400 unknown query parameter", "PUT /kv/k?x=1 zz 400 unknown query parameter"})
  void malformedChunkedBody_isRefusedWithAReason_andTheConnectionCut(String request) throws Exception {
    String[] r = request.split(" ", 5);
    String chunkSize = r[2];
    // The body is read before any service is used, so none is needed here.
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(5_000);
      s.getOutputStream().write((r[0] + " " + r[1] + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          + chunkSize + "\r\nhello\r\n0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      InputStream in = s.getInputStream();
      String reply = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
      assertTrue(reply.startsWith("HTTP/1.1 " + r[3] + " "), reply);
      assertTrue(reply.contains("{\"error\":\"" + r[4]), reply);
      assertTrue(reply.contains("\r\nConnection: close\r\n"), reply);
    } finally {
      http.stop(0);
    }
  }

  /**
   * A route that fails unexpectedly (here {@code /stats}, its statistics throwing) gets a 500
   * whose reason names the exception's class only, never its message, which goes with the stack
   * trace to the peer's log at ERROR; an IOException before the reply began is such a failure too,
   * not a client gone away, so it is answered, not cut. Each reply is JSON and not to be cached.
   */
  @Test
  void aRouteThatFails_gets500NamingOnlyTheClass_andTheFailureIsLoggedAtError() throws Exception {
    List<LogRecord> logged = Logged.by(HttpApi.class, () -> {
      String reply = getStats(() -> {
        throw new IllegalStateException("secret detail");
      });
      assertTrue(reply.startsWith("HTTP/1.1 500 "), reply);
      assertTrue(reply.endsWith("{\"error\":\"internal error: IllegalStateException\"}"), reply);
      assertJsonNotCached(reply);
    });
    assertTrue(logged.stream().anyMatch(r -> r.getLevel() == Level.SEVERE
            && r.getThrown() instanceof IllegalStateException && r.getMessage().contains("GET /stats failed")),
        "the failure and its stack trace, logged at ERROR: " + logged.stream().map(LogRecord::getMessage).toList());

    String io = getStats(() -> {
      throw HttpApiBodyTest.<RuntimeException>sneaky(new IOException("disk gone"));
    });
    assertTrue(io.startsWith("HTTP/1.1 500 "), "an IOException before the reply is answered: " + io);
    assertTrue(io.endsWith("{\"error\":\"internal error: IOException\"}"), io);
  }

  /**
   * A route the key-value service cannot serve now ({@link KvService.Unavailable}, thrown here by
   * the statistics) gets a 503 with the service's reason, not a 500: the client may retry.
   */
  @Test
  void aRouteThatIsUnavailable_gets503WithTheReason() throws Exception {
    String reply = getStats(() -> {
      throw new KvService.Unavailable("the peer is stopping");
    });
    assertTrue(reply.startsWith("HTTP/1.1 503 "), reply);
    assertTrue(reply.endsWith("{\"error\":\"the peer is stopping\"}"), reply);
    assertJsonNotCached(reply);
  }

  /** {@code /stats} replies with what its statistics give, as JSON not to be cached. */
  @Test
  void stats_areTheStatisticsAsJson() throws Exception {
    String reply = getStats(() -> Map.of("putsServed", 3));
    assertTrue(reply.startsWith("HTTP/1.1 200 ") && reply.endsWith("\r\n\r\n{\"putsServed\":3}"), reply);
    assertJsonNotCached(reply);
  }

  /**
   * {@code /events/recent} is the buffered events as one JSON array, oldest first; empty as
   * {@code []}. HEAD gets the same status and type, no body.
   */
  @Test
  void recentEvents_areOneJsonArray_oldestFirst() throws Exception {
    EventLog events = new EventLog();
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, events, null));
    http.start();
    try {
      int port = http.getAddress().getPort();
      String none = request(port, "GET /events/recent");
      assertTrue(none.startsWith("HTTP/1.1 200 ") && none.endsWith("\r\n\r\n[]"), none);
      events.publish(Events.gap(1));
      events.publish(Events.gap(2));
      String two = request(port, "GET /events/recent");
      assertTrue(two.startsWith("HTTP/1.1 200 ") && two.matches("(?s).*\r\n\r\n\\[\\{\"type\":\"gap\",\"time\":[0-9]+,"
          + "\"missed\":1},\\{\"type\":\"gap\",\"time\":[0-9]+,\"missed\":2}]"), two);
      assertJsonNotCached(two);
      String head = request(port, "HEAD /events/recent");
      assertTrue(head.startsWith("HTTP/1.1 200 ") && head.endsWith("\r\n\r\n"), head);
      assertJsonNotCached(head);
    } finally {
      http.stop(0);
      events.close();
    }
  }

  private static String request(int port, String request) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write((request + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
          .getBytes(StandardCharsets.ISO_8859_1));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static void assertJsonNotCached(String reply) {
    assertTrue(reply.contains("\r\nContent-type: application/json; charset=utf-8\r\n"), "JSON: " + reply);
    assertTrue(reply.contains("\r\nCache-control: no-cache\r\n"), "not to be cached: " + reply);
  }

  /** The raw reply to {@code GET /stats} from an API whose statistics are {@code stats}. */
  private static String getStats(Supplier<?> stats) throws Exception {
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, stats, null, null));
    http.start();
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write("GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.ISO_8859_1));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } finally {
      http.stop(0);
    }
  }

  /** Throws {@code t}, checked or not, where the compiler sees no checked exception. */
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
    throw (T) t;
  }

  /**
   * The API reads at most 1 MiB of a body it has no use for before each step that reads one (the
   * route, then the reply), not the whole of it: a GET declaring 10 MB of body, of which the
   * client sends 2.5 MiB and then waits, gets its 404 without sending the rest.
   */
  @Test
  void aLargeUnwantedBody_isReadOnlyAsFarAsTheBound_beforeTheReply() throws Exception {
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
    CompletableFuture<Void> sent = null;
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
          + "Content-Length: 10000000\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      byte[] part = new byte[5 * 512 * 1024];
      Arrays.fill(part, (byte) 'v');
      // Sent from another thread: what the API leaves unread waits in the socket's buffers, and a
      // write that could not finish must not hold up the test (closing the socket ends it).
      OutputStream out = s.getOutputStream();
      sent = CompletableFuture.runAsync(() -> {
        try {
          out.write(part);
        } catch (IOException closed) {
          // the test closed the socket: nothing more to send
        }
      }, TestThreads.ON_OWN_THREAD);
      InputStream in = s.getInputStream();
      StringBuilder reply = new StringBuilder();
      while (!(reply.indexOf("\r\n\r\n") >= 0 && reply.charAt(reply.length() - 1) == '}')) {
        int b = in.read(); // a bound not kept: no reply, and the read times out
        assertFalse(b < 0, "connection closed before the reply ended: " + reply);
        reply.append((char) b);
      }
      assertTrue(reply.toString().startsWith("HTTP/1.1 404 ") && reply.toString().contains("no route GET /nowhere"),
          reply::toString);
    } finally {
      http.stop(0);
      if (sent != null) {
        sent.get(30, TimeUnit.SECONDS); // the writer ends once the socket is closed
      }
    }
  }

  /**
   * The bound is exact: a chunked body of exactly twice the bound (in chunks of 1,000 bytes, so
   * that the first bound falls within a chunk and the second at a chunk's end), after which the
   * client waits, gets its 404. Reading past the first bound would leave the second step short
   * of bytes; reading on at the second, for the next chunk's header, would wait for the client.
   */
  @Test
  void anUnwantedChunkedBodyOfTwiceTheBound_isReadExactly_andAnswered() throws Exception {
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
    CompletableFuture<Void> sent = null;
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      int bound = 1024 * 1024;
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      body.writeBytes(("GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      byte[] chunk = new byte[1000];
      Arrays.fill(chunk, (byte) 'v');
      for (int left = 2 * bound; left > 0; left -= chunk.length) {
        int size = Math.min(chunk.length, left);
        body.writeBytes((Integer.toHexString(size) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        body.write(chunk, 0, size);
        body.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
      }
      // No last chunk: the client sends no more until it has its reply. Sent from another thread,
      // as a write the server does not read must not hold up the test.
      OutputStream out = s.getOutputStream();
      sent = CompletableFuture.runAsync(() -> {
        try {
          out.write(body.toByteArray());
        } catch (IOException closed) {
          // the test closed the socket: nothing more to send
        }
      }, TestThreads.ON_OWN_THREAD);
      String reply = readReply(s.getInputStream());
      assertTrue(reply.startsWith("HTTP/1.1 404 ")
          && reply.endsWith("{\"error\":\"no route GET /nowhere; try /kv/{key}, /ring, /stats, /events, /events/recent,"
          + " /keys, /admin/split, /admin/heal or /\"}"), reply);
    } finally {
      http.stop(0);
      if (sent != null) {
        sent.get(30, TimeUnit.SECONDS); // the writer ends once the socket is closed
      }
    }
  }

  /**
   * A page's file asked for with a body past the 1 MiB the API reads before it routes (here 1.5
   * MiB, of which the JDK's server would read only 64 KiB more after the reply) is read to its
   * end before the file is sent: the connection then stays open and answers the next request.
   */
  @Test
  void aFileAskedForWithABodyPastTheBound_isReadToItsEnd_andTheConnectionServesTheNextRequest() throws Exception {
    HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    http.createContext("/", new HttpApi(null, null, null, null, null, null, null));
    http.start();
    try (Socket s = new Socket("127.0.0.1", http.getAddress().getPort())) {
      s.setSoTimeout(10_000);
      byte[] body = new byte[3 * 1024 * 1024 / 2];
      Arrays.fill(body, (byte) 'v');
      OutputStream out = s.getOutputStream();
      // Sent from another thread, as a write the server does not read must not hold up the test.
      CompletableFuture<Void> sent = CompletableFuture.runAsync(() -> {
        try {
          out.write(("GET /web/app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + body.length + "\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
          out.write(body);
          out.write("GET /web/style.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
              .getBytes(StandardCharsets.ISO_8859_1));
        } catch (IOException closed) {
          // the connection was cut: the reads below say so
        }
      }, TestThreads.ON_OWN_THREAD);
      String script = readReply(s.getInputStream());
      assertTrue(script.startsWith("HTTP/1.1 200 ") && script.contains("\r\nContent-type: text/javascript"),
          () -> script.substring(0, Math.min(300, script.length())));
      String style = readReply(s.getInputStream());
      assertTrue(style.startsWith("HTTP/1.1 200 ") && style.contains("\r\nContent-type: text/css"),
          () -> style.substring(0, Math.min(300, style.length())));
      sent.join();
    } finally {
      http.stop(0);
    }
  }

  /** The reply's head and its body of the length it declares, read without waiting for the connection to close. */
  private static String readReply(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (head.indexOf("\r\n\r\n") < 0) {
      int b = in.read(); // no reply: the read times out
      assertFalse(b < 0, "connection closed before the reply's head ended: " + head);
      head.append((char) b);
    }
    Matcher length = Pattern.compile("\r\nContent-length: ([0-9]+)\r\n").matcher(head);
    assertTrue(length.find(), head::toString);
    return head + new String(in.readNBytes(Integer.parseInt(length.group(1))), StandardCharsets.UTF_8);
  }
}
