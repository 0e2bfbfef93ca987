package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Writes keys concurrently through random live peers, each key until a peer acknowledges it
 * (200), and remembers each key's last acknowledged value. Every fifth key is written twice, so
 * the check also covers overwrites racing a migration. Only the refusals a peer legitimately
 * answers while the ring changes ({@link #RETRIED}) and failed connections are tried again; any
 * other reply is a fault of the peer, which no retry may hide: it is recorded
 * ({@link #assertNoUnexpectedReplies}) and fails that key's write, and so {@link #writeAll}.
 */
final class KeyWriter implements AutoCloseable {
  static final Duration PER_KEY_DEADLINE = Duration.ofSeconds(60);
  /**
   * The reasons of the 503s that {@code KvService} answers a write with while the ring changes: no
   * ring yet (or none left, to the last peer leaving), the peer stopping under the request, or an
   * owner that did not store the write in time (crashed, or still joining); and those of the peer's
   * HTTP gate, before it serves and once it has left. Another 503 (a clock too far ahead, say) is
   * no passing state, and is not retried.
   */
  static final Pattern RETRIED = Pattern.compile("the ring has no owners|interrupted|the peer is stopping"
      + "|the peer is starting: .*"
      + "|owners \\[.*\\] of \".*\" did not store the write within [0-9]+ s; last error: .*", Pattern.DOTALL);

  private final PeerCluster cluster;
  private final ExecutorService threads;
  /** Reads have threads of their own: queued behind the writes, a read pass would time the writes. */
  private final ExecutorService readThreads;
  private final Map<String, String> acked = new ConcurrentHashMap<>();
  final AtomicLong ackedWrites = new AtomicLong();
  /** Attempts refused as {@link #RETRIED} allows, or whose connection failed: tried again. */
  final AtomicLong failedAttempts = new AtomicLong();
  /** Replies that are neither an acknowledgement nor a refusal to retry, each with its body. */
  private final Collection<String> unexpected = new ConcurrentLinkedQueue<>();

  KeyWriter(PeerCluster cluster, int concurrency) {
    this.cluster = cluster;
    this.threads = Executors.newFixedThreadPool(concurrency);
    this.readThreads = Executors.newFixedThreadPool(concurrency);
  }

  static String key(int i) {
    return "key-" + i;
  }

  /**
   * Starts writing keys {@code 0..n-1}; the future ends when all are acknowledged, or fails once all
   * have ended if a write was not (its deadline spent, or a reply no retry may hide).
   */
  CompletableFuture<Void> writeAll(int n) {
    CompletableFuture<?>[] tasks = new CompletableFuture<?>[n];
    for (int i = 0; i < n; i++) {
      int k = i;
      tasks[i] = CompletableFuture.runAsync(() -> {
        write(key(k), "v1-" + k);
        if (k % 5 == 0) {
          write(key(k), "v2-" + k);
        }
      }, threads);
    }
    return CompletableFuture.allOf(tasks);
  }

  /**
   * Reads every key through one peer, concurrently.
   *
   * @return a line for each key not readable there with its expected value; empty if all are
   */
  List<String> mismatches(String via, Map<String, String> expected) {
    return mismatches(via, expected.keySet(), key -> Set.of(expected.get(key)));
  }

  /** Values this writer ever wrote to the key (what a read may see while writes go on). */
  static Set<String> anyWritten(String key) {
    String i = key.substring("key-".length());
    return Set.of("v1-" + i, "v2-" + i);
  }

  /** As {@link #mismatches(String, Map)}, accepting any of {@code accepted}'s values for a key. */
  List<String> mismatches(String via, Collection<String> keys, Function<String, Set<String>> accepted) {
    List<CompletableFuture<String>> reads = new ArrayList<>();
    for (String key : keys) {
      reads.add(CompletableFuture.supplyAsync(() -> {
        try {
          HttpResponse<String> r = cluster.get(via, key);
          if (r.statusCode() == 200 && accepted.apply(key).contains(PeerCluster.parse(r.body()).path("value").asText())) {
            return null;
          }
          return key + " via " + via + ": " + r.statusCode() + " " + r.body() + " (expected " + accepted.apply(key) + ")";
        } catch (RuntimeException e) {
          return key + " via " + via + ": " + e;
        }
      }, readThreads));
    }
    List<String> out = new ArrayList<>();
    for (CompletableFuture<String> r : reads) {
      String problem = r.join();
      if (problem != null) {
        out.add(problem);
      }
    }
    return out;
  }

  /**
   * Writes until a peer acknowledges, at most {@link #PER_KEY_DEADLINE}. An attempt refused as
   * {@link #RETRIED} allows, or whose connection failed, is tried again through another peer after
   * 50 ms: a peer that is down refuses at once, and writers retrying without a pause would take the
   * cores from the peers.
   */
  private void write(String key, String value) {
    try {
      await().atMost(PER_KEY_DEADLINE).pollInSameThread()
          .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
          .until(() -> tryPut(key, value));
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("no peer acknowledged " + key + " within " + PER_KEY_DEADLINE);
    }
  }

  /**
   * One write through a random live peer; whether it was acknowledged.
   *
   * @throws AssertionError if the peer answered with neither a 200 nor a refusal to retry
   */
  private boolean tryPut(String key, String value) {
    if (Thread.currentThread().isInterrupted()) { // close(): the test is over, whatever its outcome
      throw new CancellationException("writer closed before " + key + " was acknowledged");
    }
    List<String> live = cluster.live();
    String via = live.get(ThreadLocalRandom.current().nextInt(live.size()));
    HttpResponse<String> r;
    try {
      r = cluster.put(via, key, value);
    } catch (RuntimeException e) {
      // the peer died under us, or is not serving yet: try another
      failedAttempts.incrementAndGet();
      return false;
    }
    if (r.statusCode() == 200) {
      acked.put(key, value);
      ackedWrites.incrementAndGet();
      return true;
    }
    if (r.statusCode() == 503 && RETRIED.matcher(PeerCluster.parse(r.body()).path("error").asText()).matches()) {
      failedAttempts.incrementAndGet();
      return false;
    }
    String reply = "put " + key + " via " + via + ": " + r.statusCode() + " " + r.body();
    unexpected.add(reply);
    throw new AssertionError(reply);
  }

  /** Key to its last acknowledged value. */
  Map<String, String> acknowledged() {
    return Map.copyOf(acked);
  }

  /**
   * Fails, naming the first 20, if any write was answered with other than a 200 or a refusal
   * {@link #RETRIED} allows: a 500 during a migration, say, which the writes retried until a peer
   * acknowledged would hide.
   */
  void assertNoUnexpectedReplies() {
    List<String> all = List.copyOf(unexpected);
    if (!all.isEmpty()) {
      throw new AssertionError(all.size() + " writes answered with neither a 200 nor a refusal to retry: "
          + all.subList(0, Math.min(20, all.size())));
    }
  }

  @Override
  public void close() {
    threads.shutdownNow();
    readThreads.shutdownNow();
    try {
      if (!threads.awaitTermination(10, TimeUnit.SECONDS) || !readThreads.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the writer's threads did not stop within 10 s of an interrupt");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
