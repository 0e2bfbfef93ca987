package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

  /** Counted down at the end of each test: stand-ins that hold their reply until then let go. */
  private final CountDownLatch ended = new CountDownLatch(1);

  @AfterEach
  void stop() {
    ended.countDown();
    servers.forEach(s -> s.stop(0));
  }

  /** A stand-in peer that answers every request with {@code status}, noting each path it was sent. */
  private String peer(int status, Set<String> paths) throws IOException {
    return peer(status, paths, () -> { });
  }

  /** Runs before a stand-in answers. */
  @FunctionalInterface
  private interface BeforeReply {
    void run() throws InterruptedException;
  }

  /** As {@link #peer(int, Set)}, running {@code first} before each answer. */
  private String peer(int status, Set<String> paths, BeforeReply first) throws IOException {
    return peer(status, paths, exchange -> {
      try {
        first.run();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "");
  }

  /** As {@link #peer(int, Set)}, telling {@code seen} of each request, and answering with {@code body}. */
  private String peer(int status, Set<String> paths, Consumer<HttpExchange> seen, String body) throws IOException {
    byte[] reply = body.getBytes(StandardCharsets.UTF_8);
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      paths.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath());
      seen.accept(exchange);
      exchange.sendResponseHeaders(status, reply.length == 0 ? -1 : reply.length);
      exchange.getResponseBody().write(reply);
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

  /** What a terminal shows: every byte that reached it, and a latch counted down at each bar drawn (each '\r'). */
  private static final class Terminal extends OutputStream {
    private final ByteArrayOutputStream shown = new ByteArrayOutputStream();
    final CountDownLatch twoBars = new CountDownLatch(2);

    @Override
    public synchronized void write(int b) {
      shown.write(b);
      if (b == '\r') {
        twoBars.countDown();
      }
    }

    synchronized String shown() {
      return shown.toString(StandardCharsets.UTF_8);
    }
  }

  /**
   * The bar is drawn as the load goes, on a buffered terminal too (each bar is flushed): here the
   * peers answer once two bars (200 ms apart) have reached the terminal, both with nothing done.
   * The last bar is full; it and the summary give rates that the time the run took bears out, and
   * the summary counts only the writes the peers took (here two of every three), naming the run's
   * keys by its short tag.
   */
  @Test
  void load_drawsItsBarAsItGoes_endsFull_andSaysWhatItWroteAtTheRateItDid() throws Exception {
    Terminal terminal = new Terminal();
    AtomicBoolean barsMissed = new AtomicBoolean();
    BeforeReply afterTwoBars = () -> {
      if (!terminal.twoBars.await(10, TimeUnit.SECONDS)) {
        barsMissed.set(true);
        terminal.twoBars.countDown(); // the writes waiting go on: the test has failed
        terminal.twoBars.countDown();
      }
    };
    Set<String> taken = ConcurrentHashMap.newKeySet();
    Set<String> refused = ConcurrentHashMap.newKeySet();
    List<String> urls = List.of(peer(200, taken, afterTwoBars), peer(200, taken, afterTwoBars),
        peer(503, refused, afterTwoBars));
    PrintStream out = new PrintStream(new BufferedOutputStream(terminal, 1 << 16), false, StandardCharsets.UTF_8);

    long started = System.nanoTime();
    new LoadGenerator(urls, out).run(30);
    double took = (System.nanoTime() - started) / 1e9;
    out.flush(); // the summary; each bar was flushed by the load itself
    String shown = terminal.shown();

    assertFalse(barsMissed.get(), "two bars reached the terminal while the writes waited: " + shown);
    assertTrue(shown.startsWith(("\r[" + ".".repeat(30) + "] 0/30  0 keys/s").repeat(2)), shown);
    Matcher end = Pattern.compile("\r\\[([#.]*)] (\\d+)/30  (\\d+) keys/s\\R"
        + "wrote (\\d+) keys \\(load-([0-9a-z]+)-0\\.\\.(\\d+)\\) in (\\d+[.,]\\d\\d) s: (\\d+) keys/s;"
        + " (\\d+) failed\\R$").matcher(shown);
    assertTrue(end.find(), "the last bar, then the summary: " + shown);
    assertEquals("#".repeat(30), end.group(1), "the last bar is full");
    assertEquals("30", end.group(2));
    // The bar's rate is over the time since the load started, no more than the run took here.
    assertTrue(Long.parseLong(end.group(3)) >= Math.round(30 / took), end.group(3) + " keys/s over " + took + " s");
    assertEquals("20", end.group(4), "written: the writes the two peers took");
    assertEquals("10", end.group(9), "failed: those the third refused");
    String tag = end.group(5);
    assertTrue(tag.length() <= 4, "a short tag for the run: " + tag);
    assertEquals("29", end.group(6), "the last key's number");
    assertEquals(20, taken.size(), taken.toString());
    assertTrue(taken.stream().allMatch(p -> p.matches("PUT /kv/load-" + tag + "-[0-9]+")), taken.toString());
    double seconds = Double.parseDouble(end.group(7).replace(',', '.'));
    assertTrue(seconds >= 0.19 && seconds <= took + 0.005, seconds + " s printed, " + took + " s taken");
    // The rate is the writes taken over the seconds, each printed rounded.
    long rate = Long.parseLong(end.group(8));
    assertTrue(rate >= Math.round(20 / (seconds + 0.005)) && rate <= Math.round(20 / (seconds - 0.005)),
        rate + " keys/s for 20 keys in " + seconds + " s");
  }

  /**
   * A peer whose host does not answer (here, one whose queue of connections waiting to be
   * accepted is full, so that the next is never set up) costs a write the connect timeout, 2 s:
   * it is counted as failed rather than holding the load for minutes.
   */
  @Test
  void load_toAPeerThatNeverAcceptsTheConnection_failsTheWriteAfterTheConnectTimeout() throws Exception {
    List<Socket> queued = new ArrayList<>();
    try (ServerSocket never = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), never.getLocalPort());
      for (int tried = 0; ; tried++) { // fill its queue until a connection is no longer set up
        assertTrue(tried < 1_000, "the queue of connections to accept never filled");
        Socket s = new Socket();
        try {
          s.connect(address, 500);
          queued.add(s);
        } catch (SocketTimeoutException full) {
          s.close();
          break;
        }
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();

      new LoadGenerator(List.of("http://127.0.0.1:" + never.getLocalPort()), new PrintStream(out, true,
          StandardCharsets.UTF_8)).run(1);

      String said = out.toString(StandardCharsets.UTF_8);
      assertTrue(said.contains("wrote 0 keys (load-") && said.contains("; 1 failed"), said);
    } finally {
      for (Socket s : queued) {
        s.close();
      }
    }
  }

  /**
   * Each reply is read to its end, an error's too, so that its connection goes back to the
   * keep-alive pool: 200 writes to a peer that answers with a body (a 200, or a 400) take far
   * fewer connections than writes.
   */
  @Test
  void load_readsEachReplyToTheEnd_soItsConnectionIsUsedAgain() throws Exception {
    for (int status : new int[] {200, 400}) {
      Set<Integer> connections = ConcurrentHashMap.newKeySet();
      Set<String> paths = ConcurrentHashMap.newKeySet();
      String url = peer(status, paths, exchange -> connections.add(exchange.getRemoteAddress().getPort()),
          "{\"error\":\"" + "x".repeat(1_000) + "\"}");

      new LoadGenerator(List.of(url), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))
          .run(200);

      assertEquals(200, paths.size(), "status " + status);
      assertTrue(connections.size() < 100, connections.size() + " connections for 200 writes answered " + status);
    }
  }

  /**
   * A peer that takes a write and then never answers (a JVM stopped, or stuck) costs that write
   * the read timeout, 15 s: it is counted as failed rather than holding the load for good.
   */
  @Test
  void load_toAPeerThatNeverAnswers_failsTheWriteAfterTheReadTimeout() throws Exception {
    Set<String> paths = ConcurrentHashMap.newKeySet();
    String url = peer(200, paths, ended::await);
    ByteArrayOutputStream out = new ByteArrayOutputStream();

    long started = System.nanoTime();
    new LoadGenerator(List.of(url), new PrintStream(out, true, StandardCharsets.UTF_8)).run(1);
    double took = (System.nanoTime() - started) / 1e9;

    String said = out.toString(StandardCharsets.UTF_8);
    assertTrue(said.contains("wrote 0 keys (load-") && said.contains("; 1 failed"), said);
    assertEquals(1, paths.size(), "the write reached the peer: " + paths);
    assertTrue(took >= 14, "failed after " + took + " s, not at the read timeout");
  }

  /**
   * A write whose connection closes before any reply (the peer's process died mid-request) is
   * counted as failed and not sent again: each key is written once, as the summary says. The
   * stand-in reads each request in full, then closes its connection.
   */
  @Test
  void load_whenAConnectionClosesBeforeTheReply_countsTheWriteFailed_andSendsItOnce() throws Exception {
    AtomicInteger requests = new AtomicInteger();
    try (ServerSocket closing = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread acceptor = new Thread(() -> {
        while (!closing.isClosed()) {
          try (Socket s = closing.accept()) {
            readRequest(s.getInputStream());
            requests.incrementAndGet();
          } catch (IOException closed) {
            // the test is over, or the client gave up
          }
        }
      }, "closing-stand-in");
      acceptor.start();
      try {
        ByteArrayOutputStream out = new ByteArrayOutputStream();

        new LoadGenerator(List.of("http://127.0.0.1:" + closing.getLocalPort()), new PrintStream(out, true,
            StandardCharsets.UTF_8)).run(1);

        String said = out.toString(StandardCharsets.UTF_8);
        assertTrue(said.contains("wrote 0 keys (load-") && said.contains("; 1 failed"), said);
        assertEquals(1, requests.get(), "requests sent for one key");
      } finally {
        closing.close();
        acceptor.join(10_000);
      }
      assertFalse(acceptor.isAlive(), "the stand-in stopped");
    }
  }

  /** Reads an HTTP request's head and its body of Content-Length bytes. */
  private static void readRequest(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("the request ended early: " + head);
      }
      head.append((char) b);
    }
    Matcher length = Pattern.compile("(?im)^content-length: *(\\d+)").matcher(head);
    in.readNBytes(length.find() ? Integer.parseInt(length.group(1)) : 0);
  }

  /**
   * A load run on an interrupted thread returns without waiting for its writers, and keeps the
   * interrupt for its caller.
   */
  @Test
  void load_onAnInterruptedThread_returnsKeepingTheInterrupt() throws Exception {
    Set<String> paths = ConcurrentHashMap.newKeySet();
    String url = peer(200, paths);
    Thread.currentThread().interrupt();
    boolean kept;
    try {
      new LoadGenerator(List.of(url), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8))
          .run(4);
    } finally {
      kept = Thread.interrupted(); // cleared either way: the next test runs on this thread
    }
    assertTrue(kept, "the interrupt was swallowed");
    // Its writers are not stopped mid-write: they end once the keys are written.
    await("the load's writers end").atMost(Duration.ofSeconds(20)).until(() -> Thread.getAllStackTraces().keySet()
        .stream().noneMatch(t -> t.getName().startsWith("load-") && t.isAlive()));
  }
}
