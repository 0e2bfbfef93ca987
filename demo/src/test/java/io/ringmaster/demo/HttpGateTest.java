package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.ringmaster.TestThreads;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link HttpGate}: 503 while the peer starts, the API while it serves, and a stop that lets requests in flight end. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HttpGateTest {
  private final HttpGate gate = new HttpGate();
  private final ExecutorService threads = Executors.newFixedThreadPool(4);
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch entered = new CountDownLatch(1);
  private HttpServer server;

  @BeforeEach
  void listen() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    server.createContext("/", gate);
    server.setExecutor(threads);
    server.start();
  }

  @AfterEach
  void stop() {
    release.countDown();
    server.stop(0);
    threads.shutdownNow();
  }

  /** A GET of {@code /slow} on another thread, which the slow API holds until the test lets it go. */
  private CompletableFuture<HttpResponse<String>> slowRequest() {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return get("/slow");
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, TestThreads.ON_OWN_THREAD);
  }

  private HttpResponse<String> get(String path) throws Exception {
    return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path))
        .timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** An API whose /slow waits for {@link #release}, and whose other paths answer 200 "served". */
  private void openSlowApi() {
    gate.open(exchange -> {
      if (exchange.getRequestURI().getPath().equals("/slow")) {
        entered.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      HttpApi.send(exchange, 200, "served");
    });
  }

  @Test
  void beforeOpen_everyRequestIs503Starting_thenTheApiServes() throws Exception {
    HttpResponse<String> starting = get("/stats");
    assertEquals(503, starting.statusCode());
    assertTrue(starting.body().contains("the peer is starting"), starting.body());
    assertEquals("1", starting.headers().firstValue("Retry-After").orElse(""));
    openSlowApi();
    HttpResponse<String> served = get("/stats");
    assertEquals(200, served.statusCode());
    assertEquals("\"served\"", served.body());
  }

  @Test
  void close_refusesNewRequestsAs503Stopping_andWaitsForTheOneInFlight() throws Exception {
    openSlowApi();
    CompletableFuture<HttpResponse<String>> slow = slowRequest();
    assertTrue(entered.await(20, TimeUnit.SECONDS), "the slow request reached the API");
    CompletableFuture<Boolean> closed = CompletableFuture.supplyAsync(() -> gate.close(Duration.ofSeconds(30)),
        TestThreads.ON_OWN_THREAD);
    await("close() has begun").atMost(Duration.ofSeconds(20)).until(gate::isClosing);
    // A request arriving while the gate waits is refused at once: it cannot be the one waited for.
    HttpResponse<String> late = get("/stats");
    assertEquals(503, late.statusCode());
    assertTrue(late.body().contains("the peer is stopping"), late.body());
    assertEquals("close", late.headers().firstValue("Connection").orElse(""), "this peer will not answer on it again");
    assertEquals("1", late.headers().firstValue("Retry-After").orElse(""));
    assertFalse(closed.isDone(), "close() waits while a request is in flight");
    release.countDown();
    assertTrue(closed.get(20, TimeUnit.SECONDS), "every request in flight ended");
    assertEquals(200, slow.get(20, TimeUnit.SECONDS).statusCode(), "the request in flight got its reply");
  }

  @Test
  void close_givesUpAfterItsGrace_whenARequestNeverEnds() throws Exception {
    openSlowApi();
    slowRequest(); // cut off when the server stops after the test
    assertTrue(entered.await(20, TimeUnit.SECONDS));
    assertFalse(gate.close(Duration.ofMillis(200)), "the request in flight did not end within the grace");
  }

  /**
   * The gate says it is closing only once close() has begun, and close() hands back the caller's
   * thread as it found it: it sets the interrupt flag only when an interrupt cut its wait short.
   */
  @Test
  void isClosing_onlyOnceCloseBegan_andClose_leavesAnUninterruptedCallerUninterrupted() throws Exception {
    openSlowApi();
    slowRequest();
    assertTrue(entered.await(20, TimeUnit.SECONDS));
    assertFalse(gate.isClosing(), "serving");
    // What close() returned, and whether it left its thread interrupted (read and cleared).
    CompletableFuture<List<Boolean>> closed = CompletableFuture.supplyAsync(
        () -> List.of(gate.close(Duration.ofSeconds(30)), Thread.interrupted()), TestThreads.ON_OWN_THREAD);
    await("close() has begun").atMost(Duration.ofSeconds(20)).until(gate::isClosing);
    release.countDown();
    assertEquals(List.of(true, false), closed.get(20, TimeUnit.SECONDS), "the request ended in time; no interrupt set");
  }

  /**
   * A close() interrupted while it waits goes on waiting for the request in flight, within its
   * grace, and hands the interrupt back to its caller once it returns.
   */
  @Test
  void close_interruptedWhileItWaits_goesOnWaiting_andLeavesItsCallerInterrupted() throws Exception {
    openSlowApi();
    CompletableFuture<HttpResponse<String>> slow = slowRequest();
    assertTrue(entered.await(20, TimeUnit.SECONDS));
    CompletableFuture<List<Boolean>> closed = new CompletableFuture<>();
    Thread closer = new Thread(() -> closed.complete(List.of(gate.close(Duration.ofSeconds(30)), Thread.interrupted())),
        "closer");
    closer.start();
    try {
      await("close() waits").atMost(Duration.ofSeconds(20))
          .until(() -> closer.getState() == Thread.State.TIMED_WAITING);
      closer.interrupt();
      // The wait ended with the interrupt (its flag cleared by the exception) and began again.
      await("close() waits again").atMost(Duration.ofSeconds(20))
          .until(() -> !closer.isInterrupted() && closer.getState() == Thread.State.TIMED_WAITING);
      assertFalse(closed.isDone(), "still waiting for the request in flight");
      release.countDown();
      assertEquals(List.of(true, true), closed.get(20, TimeUnit.SECONDS), "ended in time; the interrupt kept");
      assertEquals(200, slow.get(20, TimeUnit.SECONDS).statusCode());
    } finally {
      release.countDown();
      closer.join(TimeUnit.SECONDS.toMillis(30));
    }
  }

  /**
   * An API that fails with an IOException (the client went away; the API answers every other
   * failure itself) has its exchange closed, not left open until the client gives up, and the
   * request counts as ended.
   */
  @Test
  void handle_anApiFailingWithAnIOException_closesTheExchange_andTheRequestEnds() throws Exception {
    gate.open(exchange -> {
      throw new IOException("the client went away (a test)");
    });
    IOException cut = assertThrows(IOException.class, () -> get("/stats"));
    assertFalse(cut instanceof HttpTimeoutException, "the connection was closed, not left open: " + cut);
    // The gate counts the request ended just after the exchange is closed: waited for, not raced.
    assertTrue(gate.close(Duration.ofSeconds(20)), "the request ended");
  }

  @Test
  void close_withNothingInFlight_returnsAtOnce() {
    openSlowApi();
    assertTrue(gate.close(Duration.ZERO));
  }
}
