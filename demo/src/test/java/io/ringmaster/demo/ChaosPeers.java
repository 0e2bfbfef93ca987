package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.Ringmaster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

/**
 * What the property tests of churn and partitions ({@link ChurnPropertyTest},
 * {@link PartitionPropertyTest}) share: whole {@link Peer}s started as {@code Main} starts one, on
 * the in-memory stack and a free HTTP port, requests to them, their nodes, and stops on threads
 * of their own.
 */
final class ChaosPeers {
  static final String STACK = "ringmaster/jgroups/in-jvm.xml";
  /** Longer than a write's own 10 s deadline: the peer answers first, so no write goes on unseen. */
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

  private ChaosPeers() {}

  /** The seeds system property {@code property} lists (comma-separated), else {@code defaults}. */
  static LongStream seeds(String property, long... defaults) {
    String given = System.getProperty(property);
    return given == null ? LongStream.of(defaults)
        : Arrays.stream(given.split(",")).map(String::trim).mapToLong(Long::parseLong);
  }

  /** Starts peer {@code id} of {@code cluster} on HTTP port {@code port}, its config file in {@code dir}. */
  static Peer start(Path dir, String cluster, String id, int port, int replicas) throws IOException {
    return start(dir, cluster, id, port, replicas, PeerOptions.LEAVE_TIMEOUT);
  }

  /** As {@link #start(Path, String, String, int, int)}, the node's leaveTimeout {@code leaveTimeout}. */
  static Peer start(Path dir, String cluster, String id, int port, int replicas, Duration leaveTimeout)
      throws IOException {
    Path config = Files.writeString(dir.resolve(id + ".json"), "{\"nodeId\": \"" + id + "\", \"clusterName\": \""
        + cluster + "\", \"jgroupsConfig\": \"" + STACK + "\", \"virtualNodes\": 64, \"leaveTimeoutMillis\": "
        + leaveTimeout.toMillis() + "}");
    return Peer.start(PeerOptions.parse(new String[] {"--http-port", Integer.toString(port),
        "--config", config.toString(), "--replicas", Integer.toString(replicas)}, 0));
  }

  /**
   * A peer's node, a private field of {@link Peer} (an application reaches it through the HTTP API
   * only): reached by reflection, for a test that drops its messages or stops it abruptly.
   */
  static Ringmaster node(Peer peer) {
    try {
      Field field = Peer.class.getDeclaredField("node");
      field.setAccessible(true);
      return (Ringmaster) field.get(peer);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Sends {@code request} to {@code uri}; a failure to reach it names {@code context} and the address. */
  static HttpResponse<String> send(HttpClient http, URI uri, HttpRequest.Builder request, String context) {
    try {
      return http.send(request.uri(uri).timeout(REQUEST_TIMEOUT).build(),
          HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(context + ": " + uri + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Whether peers whose {@code /stats} these are form one ring of exactly them, agree on its view
   * and checksum, and have no change pending or running, no pull or repair to try again and no
   * stray value left.
   */
  static boolean settled(List<JsonNode> stats) {
    Set<String> rings = new HashSet<>();
    for (JsonNode s : stats) {
      if (s.path("members").asInt() != stats.size() || s.path("migrationsInProgress").asInt() != 0
          || s.path("pendingCallbacks").asInt() != 0 || s.path("pullRetriesPending").asInt() != 0
          || s.path("repairRetryPending").asBoolean(true) || s.path("strayKeys").asLong() != 0) {
        return false;
      }
      rings.add(s.path("viewId").asLong() + "/" + s.path("checksum").asText());
    }
    return rings.size() == 1;
  }

  /** Interrupts the writers' threads and waits for them to end, at most 10 s. */
  static void stopWriters(ExecutorService threads) {
    threads.shutdownNow();
    try {
      if (!threads.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the writers did not stop within 10 s of an interrupt");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Runs {@code task} on a daemon thread of its own: a graceful close can take seconds, and so can a start. */
  static CompletableFuture<Void> onOwnThread(String name, Runnable task) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        task.run();
        done.complete(null);
      } catch (RuntimeException | Error e) {
        done.completeExceptionally(e);
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return done;
  }
}
