package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer run inside a JVM that goes on (a test, an application) leaves none of its threads behind:
 * {@link Peer#close()} returns once they have ended, or says which it left running.
 */
class PeerThreadsTest {
  /** The names {@link Peer}'s own pools give their threads. */
  private static final List<String> POOLS = List.of("http-", "rpc-", "sweep-", "pull-retries-", "pulls-", "pushes-",
      "status-");

  @TempDir
  Path dir;

  @Test
  void close_afterServingRequests_leavesNoThreadOfThePeer() throws Exception {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    int port = PeerCluster.freePort();
    Peer peer = start(port);
    List<String> started;
    try {
      HttpClient client = HttpClient.newHttpClient();
      URI key = URI.create("http://127.0.0.1:" + port + "/kv/k");
      await().atMost(Duration.ofSeconds(30)).until(() -> client.send(HttpRequest.newBuilder(key)
          .PUT(HttpRequest.BodyPublishers.ofString("v")).build(), HttpResponse.BodyHandlers.discarding())
          .statusCode() == 200);
      for (int i = 0; i < 8; i++) { // a few HTTP threads, each to be stopped
        String read = client.send(HttpRequest.newBuilder(key).build(), HttpResponse.BodyHandlers.ofString()).body();
        assertTrue(read.contains("\"value\":\"v\""), read);
      }
      started = peersThreads(before);
    } finally {
      peer.close();
    }
    assertEquals(List.of(), peersThreads(before), "threads still alive once close() returned, of " + started);
  }

  /** A task that takes a while to see its interrupt holds close() up until it ends, within the grace. */
  @Test
  void close_waitsForATaskSlowToEnd() throws Exception {
    AtomicBoolean ended = new AtomicBoolean();
    closeWhileDeaf(Peer.THREADS_GRACE.dividedBy(4), ended);
    assertTrue(ended.get(), "close() returned while the status thread was still running its task");
  }

  /** One deaf for longer is left running, named, and close() returns after the grace. */
  @Test
  void close_namesAPoolWhoseTaskOutlivesTheGrace_andReturns() throws Exception {
    Logger logger = Logger.getLogger(Peer.class.getName());
    List<String> warnings = new CopyOnWriteArrayList<>();
    Handler handler = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel() == Level.WARNING) {
          Object[] p = r.getParameters();
          warnings.add(p == null ? r.getMessage() : MessageFormat.format(r.getMessage(), p));
        }
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    logger.addHandler(handler);
    AtomicBoolean ended = new AtomicBoolean();
    try {
      closeWhileDeaf(Peer.THREADS_GRACE.multipliedBy(3), ended);
      assertEquals(false, ended.get(), "close() waited beyond its grace");
      assertEquals(List.of("t: threads still running " + Peer.THREADS_GRACE.toMillis()
          + " ms after the stop, left behind: [status]"), warnings);
    } finally {
      logger.removeHandler(handler);
      await().atMost(Duration.ofSeconds(30)).untilTrue(ended); // the task's thread ends before the next test
    }
  }

  /**
   * close() called with its thread interrupted, while a task is slow to end, stops waiting for it
   * and returns with the interrupt still set, for the caller to see.
   */
  @Test
  void close_interruptedWhileATaskIsSlowToEnd_keepsTheInterrupt() throws Exception {
    Peer peer = start(PeerCluster.freePort());
    CountDownLatch running = new CountDownLatch(1);
    AtomicBoolean ended = new AtomicBoolean();
    boolean interruptedAfter;
    try {
      peer.statusTimer.execute(() -> {
        running.countDown();
        deafFor(Peer.THREADS_GRACE.dividedBy(2));
        ended.set(true);
      });
      assertTrue(running.await(30, TimeUnit.SECONDS));
      Thread.currentThread().interrupt();
      peer.close();
    } finally {
      interruptedAfter = Thread.interrupted();
      peer.close();
    }
    await().atMost(Duration.ofSeconds(30)).untilTrue(ended); // the task's thread ends before the next test
    assertTrue(interruptedAfter, "close() cleared the interrupt of its caller");
  }

  private Peer start(int port) throws Exception {
    Path config = Files.writeString(dir.resolve("node-" + port + ".json"), "{\"nodeId\": \"t\", \"clusterName\": \""
        + InJvmPeer.clusterName("peer-threads") + "\", \"jgroupsConfig\": \"ringmaster/jgroups/in-jvm.xml\"}");
    return Peer.start(PeerOptions.parse(new String[] {"--http-port", Integer.toString(port),
        "--config", config.toString()}, 0));
  }

  /**
   * Starts a peer, and closes it while its status thread runs a task deaf to interrupts for
   * {@code deaf}, which sets {@code ended} when it ends.
   */
  private void closeWhileDeaf(Duration deaf, AtomicBoolean ended) throws Exception {
    Peer peer = start(PeerCluster.freePort());
    CountDownLatch running = new CountDownLatch(1);
    try {
      peer.statusTimer.execute(() -> {
        running.countDown();
        deafFor(deaf);
        ended.set(true);
      });
      assertTrue(running.await(30, TimeUnit.SECONDS));
    } finally {
      peer.close();
    }
  }

  /** Parks for {@code time}, deaf to interrupts (it clears each one and parks again). */
  private static void deafFor(Duration time) {
    long until = System.nanoTime() + time.toNanos();
    for (long left = time.toNanos(); left > 0; left = until - System.nanoTime()) {
      Thread.interrupted();
      LockSupport.parkNanos(left);
    }
  }

  private static List<String> peersThreads(Set<Thread> before) {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> !before.contains(t) && t.isAlive() && POOLS.stream().anyMatch(t.getName()::startsWith))
        .map(Thread::getName).sorted().collect(Collectors.toList());
  }
}
