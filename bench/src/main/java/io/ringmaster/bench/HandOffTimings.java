package io.ringmaster.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The demo's graceful leave with its hand-off pushed to up to four destinations at once (the
 * product) against one destination at a time (the rival, the sequential hand-off), in one run:
 * five demo peers as separate processes on 127.0.0.1, replicas 2, loaded with {@code keys} keys of
 * 1 KB through their HTTP API; once every key has its two copies, one peer is stopped with SIGTERM.
 * Each peer answers each page of a migration push {@code delayMillis} late
 * ({@code ringmaster.demo.pushPageDelayMillis}), as a slower network or destination would; the
 * rival's peers run with {@code ringmaster.demo.pushThreads=1}. The two settings alternate, each
 * run on a new cluster. Reported, in milliseconds: the leaver's own figure (its "left the cluster
 * in N ms" line, from the start of its leave to its node's close) and the time from the SIGTERM
 * until the four others hold every key twice again by their ring of four; min / median / max.
 *
 * <pre>{@code java -cp bench/target/benchmarks.jar io.ringmaster.bench.HandOffTimings [runs] [keys] [delayMillis]}</pre>
 *
 * runs (of each setting) defaults to 3, keys to 20,000, delayMillis to 20 (0 to 1,000). The peers'
 * cluster ports are a free block found from 17800 on, their cluster name is this run's own, and
 * they exit with this process ({@code --parent-pid}); each run's processes are killed at its end,
 * whatever happened. Exit status 1 on a failure (a leave whose hand-off did not complete included).
 */
public final class HandOffTimings {
  private static final String JAVA = ProcessHandle.current().info().command().orElse("java");
  private static final int PEERS = 5;
  private static final int PARALLEL = 4;
  private static final int SEQUENTIAL = 1;
  private static final Duration WAIT = Duration.ofMinutes(2);
  private static final Pattern LEFT = Pattern.compile("^(\\S+) left the cluster in (\\d+) ms; keys handed off in"
      + " total: (\\d+); (.*)$");
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private HandOffTimings() {}

  /** A peer process and the lines it printed (stdout and stderr). */
  private static final class Peer {
    final String id;
    final int httpPort;
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();
    final Thread reader;

    Peer(String id, int httpPort, List<String> command) throws IOException {
      this.id = id;
      this.httpPort = httpPort;
      process = new ProcessBuilder(command).redirectErrorStream(true).start();
      reader = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
            StandardCharsets.UTF_8))) {
          for (String line; (line = r.readLine()) != null; ) {
            lines.add(line);
          }
        } catch (IOException ignored) {
          // the process ended
        }
      }, id + "-output");
      reader.setDaemon(true);
      reader.start();
    }

    String url(String path) {
      return "http://127.0.0.1:" + httpPort + path;
    }
  }

  /** One leave: the leaver's own figure, and the time until the others hold every key again. */
  private record Leave(long peerMillis, long copiesMillis, long handedOff) {}

  public static void main(String[] args) throws Exception {
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int keys = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
    int delay = args.length > 2 ? Integer.parseInt(args[2]) : 20;
    if (runs < 1 || keys < 1 || delay < 0 || delay > 1_000) {
      throw new IllegalArgumentException("usage: HandOffTimings [runs >= 1] [keys >= 1] [delayMillis 0..1000]; got runs "
          + runs + ", keys " + keys + ", delayMillis " + delay);
    }
    Map<Integer, List<Leave>> leaves = new TreeMap<>(Collections.reverseOrder());
    int status = 0;
    try {
      for (int run = 0; run < runs; run++) {
        // Alternating, and each pair in the other order than the last: neither setting always runs first.
        int[] order = run % 2 == 0 ? new int[] {PARALLEL, SEQUENTIAL} : new int[] {SEQUENTIAL, PARALLEL};
        for (int threads : order) {
          Leave leave = measure(run, threads, keys, delay);
          leaves.computeIfAbsent(threads, t -> new ArrayList<>()).add(leave);
          System.out.printf("run %d, %d push thread%s: leave %d ms (the peer's own figure), every key on two of the"
                  + " four others %d ms after the SIGTERM; %d keys handed off%n", run, threads, threads == 1 ? "" : "s",
              leave.peerMillis(), leave.copiesMillis(), leave.handedOff());
        }
      }
      System.out.printf("%d peers, replicas 2, %d keys of 1 KB, each migration page answered %d ms late%n", PEERS, keys,
          delay);
      System.out.println("| push threads | leave, the peer's own figure (min / median / max) | until every key has its"
          + " two copies again (min / median / max) |");
      System.out.println("|---|---|---|");
      leaves.forEach((threads, list) -> System.out.printf("| %d | %s | %s |%n", threads,
          summary(list.stream().map(Leave::peerMillis).toList()),
          summary(list.stream().map(Leave::copiesMillis).toList())));
    } catch (Exception | Error e) {
      e.printStackTrace();
      status = 1;
    }
    System.exit(status);
  }

  private static Leave measure(int run, int threads, int keys, int delay) throws Exception {
    String cluster = "handoff-" + ProcessHandle.current().pid() + "-" + run + "-" + threads;
    int clusterPort = freeClusterPorts();
    List<Peer> peers = new ArrayList<>();
    try {
      for (int i = 0; i < PEERS; i++) {
        peers.add(start("p" + i, cluster, clusterPort, threads, delay, i > 0));
        if (i == 0) {
          awaitServing(peers.get(0)); // the others join it, rather than found clusters of their own
        }
      }
      for (Peer p : peers) {
        awaitServing(p);
      }
      await("the five peers to agree on one ring", () -> everyKeyHeldTwice(peers, 0));
      load(peers, keys);
      await("every key to have its two copies", () -> everyKeyHeldTwice(peers, keys));
      Peer leaver = peers.get(2); // not the coordinator, p0
      List<Peer> staying = new ArrayList<>(peers);
      staying.remove(leaver);
      long sigterm = System.nanoTime();
      // SIGTERM: the peer's shutdown hook leaves gracefully. Through its handle: Process.destroy()
      // also closes our end of its output, and its leave line would be lost.
      leaver.process.toHandle().destroy();
      await("the four others to hold every key twice", () -> everyKeyHeldTwice(staying, keys));
      long copies = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sigterm);
      if (!leaver.process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)) {
        throw new IllegalStateException(leaver.id + " did not exit within " + WAIT.toSeconds() + " s");
      }
      leaver.reader.join(TimeUnit.SECONDS.toMillis(10)); // its last lines, read to the end of its output
      Matcher left = leaver.lines.stream().map(LEFT::matcher).filter(Matcher::matches).findFirst()
          .orElseThrow(() -> new IllegalStateException(leaver.id + " printed no leave line (exit status "
              + leaver.process.exitValue() + "): " + tail(leaver)));
      if (!left.group(4).equals("every entry reached its owners")) {
        throw new IllegalStateException(leaver.id + "'s hand-off did not complete: " + left.group());
      }
      return new Leave(Long.parseLong(left.group(2)), copies, Long.parseLong(left.group(3)));
    } catch (Exception | Error e) {
      for (Peer p : peers) {
        System.err.println("--- " + p.id + "'s last lines:\n" + tail(p));
      }
      throw e;
    } finally {
      for (Peer p : peers) {
        p.process.destroyForcibly();
      }
      for (Peer p : peers) {
        p.process.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private static Peer start(String id, String cluster, int clusterPort, int threads, int delay, boolean joining)
      throws IOException {
    int httpPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      httpPort = s.getLocalPort();
    }
    List<String> command = new ArrayList<>(List.of(JAVA, "-Djava.net.preferIPv4Stack=true", "-XX:+UseSerialGC",
        "-Xmx256m", "-XX:+ExitOnOutOfMemoryError",
        "-Dringmaster.bind_port=" + clusterPort, "-Dringmaster.initial_hosts=127.0.0.1[" + clusterPort + "]",
        // A patient failure detector, as the demo's process tests use: five JVMs and a loader on a
        // small machine may starve one for over the shipped 3 s, and a suspicion would end the run.
        "-Dringmaster.fd.timeout=10s", "-Dringmaster.verify_suspect.timeout=1s",
        // A joiner that hears no answer within the shipped 1 s would found a cluster of its own.
        "-Dringmaster.join_timeout=" + (joining ? "5s" : "1s"),
        "-Dringmaster.demo.pushThreads=" + threads, "-Dringmaster.demo.pushPageDelayMillis=" + delay,
        "-cp", System.getProperty("java.class.path"), "io.ringmaster.demo.Main", "peer", "--id", id,
        "--http-port", Integer.toString(httpPort), "--replicas", "2", "--cluster", cluster,
        "--parent-pid", Long.toString(ProcessHandle.current().pid())));
    return new Peer(id, httpPort, command);
  }

  /**
   * The first of a block of ports from 17800 on (every 200th) whose TCP ports (20 from it) and
   * failure-detection ports (100-122 above it) are all free on 127.0.0.1: the demo's own cluster
   * (7800) and its process tests (7830) stay out of this run's sight, and it out of theirs.
   */
  private static int freeClusterPorts() {
    for (int base = 17_800; base < 32_000; base += 200) {
      if (allFree(base, base + 19) && allFree(base + 100, base + 122)) {
        return base;
      }
    }
    throw new IllegalStateException("no free block of cluster ports between 17800 and 32000");
  }

  private static boolean allFree(int from, int to) {
    for (int port = from; port <= to; port++) {
      try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        // free
      } catch (IOException taken) {
        return false;
      }
    }
    return true;
  }

  private static void awaitServing(Peer p) throws Exception {
    await(p.id + " to serve", () -> {
      if (!p.process.isAlive()) {
        throw new IllegalStateException(p.id + " exited with " + p.process.exitValue() + ": " + tail(p));
      }
      return p.lines.stream().anyMatch(line -> line.startsWith(p.id + " serving "));
    });
  }

  /** PUTs key-0 ... key-(keys-1), 1 KB each, through the peers in turn, 16 at a time. */
  private static void load(List<Peer> peers, int keys) throws Exception {
    String value = "v".repeat(1_024);
    ExecutorService writers = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < keys; i++) {
        Peer via = peers.get(i % peers.size());
        String key = "key-" + i;
        done.add(writers.submit(() -> {
          put(via, key, value);
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      writers.shutdownNow();
    }
  }

  /** One PUT, tried again a few times on an error (a peer busy on a loaded machine answers 503). */
  private static void put(Peer via, String key, String value) throws Exception {
    HttpRequest request = HttpRequest.newBuilder(URI.create(via.url("/kv/" + key))).timeout(Duration.ofSeconds(30))
        .PUT(HttpRequest.BodyPublishers.ofString(value)).build();
    String last = "";
    for (int attempt = 1; attempt <= 5; attempt++) {
      HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 200) {
        return;
      }
      last = r.statusCode() + " " + r.body();
      TimeUnit.MILLISECONDS.sleep(200L * attempt); // a driver pacing its retries, not a test
    }
    throw new IllegalStateException("PUT " + key + " through " + via.id + " failed: " + last);
  }

  /**
   * Whether these peers, and only they, form the ring (one checksum, each seeing as many members),
   * move no data, and hold each of {@code keys} keys once as primary and once as backup, none as a
   * stray.
   */
  private static boolean everyKeyHeldTwice(List<Peer> peers, int keys) throws Exception {
    long primary = 0;
    long backup = 0;
    String checksum = null;
    for (Peer p : peers) {
      String stats = HTTP.send(HttpRequest.newBuilder(URI.create(p.url("/stats"))).timeout(Duration.ofSeconds(10))
          .build(), HttpResponse.BodyHandlers.ofString()).body();
      String sum = text(stats, "checksum");
      if (number(stats, "members") != peers.size() || checksum != null && !checksum.equals(sum)
          || number(stats, "migrationsInProgress") != 0 || number(stats, "strayKeys") != 0) {
        return false;
      }
      checksum = sum;
      primary += number(stats, "primaryKeys");
      backup += number(stats, "backupKeys");
    }
    return primary == keys && backup == keys;
  }

  private static long number(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*(-?\\d+)").matcher(json);
    if (!m.find()) {
      throw new IllegalStateException("no " + field + " in " + json);
    }
    return Long.parseLong(m.group(1));
  }

  private static String text(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*\"([^\"]*)\"").matcher(json);
    if (!m.find()) {
      throw new IllegalStateException("no " + field + " in " + json);
    }
    return m.group(1);
  }

  /** A condition the driver waits for. */
  private interface Condition {
    boolean holds() throws Exception;
  }

  private static void await(String what, Condition condition) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.holds()) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("waited " + WAIT.toSeconds() + " s for " + what);
      }
      TimeUnit.MILLISECONDS.sleep(20); // polling the peers in a benchmark driver, not a test
    }
  }

  private static String tail(Peer p) {
    List<String> lines = p.lines;
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
  }

  private static String summary(List<Long> values) {
    List<Long> v = new ArrayList<>(values);
    Collections.sort(v);
    return v.get(0) + " / " + v.get(v.size() / 2) + " / " + v.get(v.size() - 1);
  }
}
