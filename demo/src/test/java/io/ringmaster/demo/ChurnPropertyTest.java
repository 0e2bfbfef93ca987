package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.Ringmaster;
import io.ringmaster.testing.LocalCluster;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random churn under writes, from fixed seeds: three {@link Peer}s in this JVM (the in-memory
 * stack, two replicas, HTTP on free ports) go through 5-8 steps drawn from a seed (a peer joins, a
 * peer leaves gracefully, a peer crashes, two peers restart under new ids at once), 2-5 peers alive
 * throughout, while writers put, overwrite and delete keys through random live peers. Once the
 * last step is done and the peers settle, what docs/demo.md promises must hold: every acknowledged
 * write's newest value reads back through every live peer, every acknowledged delete reads as
 * deleted (nothing comes back), and each key, tombstones included, has a copy of its newest
 * version on each of its two owners and nowhere else.
 *
 * <p>A crash of both owners of a key loses it by design, so a crash comes only once the peers have
 * settled since the last one (the survivors pulled the crashed peer's ranges back to two copies);
 * the other steps follow each other with migrations still running, waiting only for a joiner to
 * be in the others' ring ({@link #awaitOneRing}). Reads do not repair ({@link
 * TestingAids#NO_READ_REPAIR}), so the copies counted are the migrations' work. A failure names
 * its seed and the steps it drew; {@code -Dchurn.seeds=7,8} runs other seeds.
 */
class ChurnPropertyTest {
  private static final int REPLICAS = 2;
  private static final int KEYS = 90;
  private static final int WRITERS = 3;
  /** The leaveTimeout of a peer the plan crashes: what the end of the test waits for its close to spend. */
  private static final Duration CRASHED_LEAVE_TIMEOUT = Duration.ofSeconds(2);

  @TempDir
  Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();
  /** The peers the writers use: started and neither crashed nor stopped (a leaving one stays in until it has left). */
  private final List<Running> live = new ArrayList<>();
  /**
   * The closes of crashed peers, under way: a peer's close after its node stopped abruptly finds
   * itself out of the ring and tries to hand off what it holds over a closed channel, which fails
   * until its leave budget is spent. Nothing reaches the others: only the end of the test waits for them.
   */
  private final List<CompletableFuture<Void>> crashedClosing = new ArrayList<>();
  /**
   * The peers the plan crashes, started with a leaveTimeout of {@link #CRASHED_LEAVE_TIMEOUT}: only
   * their close after the crash reads it, and spends it all, reaching no one.
   */
  private final Set<String> toCrash = new HashSet<>();
  private Writers writers;
  private String readRepairBefore;

  private record Running(String id, int port, Peer peer) {
    URI uri(String path) {
      return URI.create("http://127.0.0.1:" + port + path);
    }
  }

  /** A step of the churn: what it does to which peers, and the ids it starts. */
  private record Step(String kind, List<String> victims, List<String> newIds) {
    @Override
    public String toString() {
      return kind + (victims.isEmpty() ? "" : " " + String.join("+", victims))
          + (newIds.isEmpty() ? "" : (victims.isEmpty() ? " " : " as ") + String.join("+", newIds));
    }
  }

  /** What a key's last acknowledged write left: a value, or a tombstone ({@code value} null). */
  private record Written(String value) {
    boolean deleted() {
      return value == null;
    }

    @Override
    public String toString() {
      return deleted() ? "deleted" : "\"" + value + "\"";
    }
  }

  /** Two seeds whose steps catch a pull that skips tombstones (42's do not), so the build stays short. */
  static LongStream seeds() {
    return ChaosPeers.seeds("churn.seeds", 11, 23);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void randomChurnDuringWrites_keepsEveryAcknowledgedWriteAndDelete_withTwoCopiesOnTheOwners(long seed)
      throws Exception {
    readRepairBefore = System.setProperty(TestingAids.NO_READ_REPAIR, "true"); // read by each Peer.start
    String cluster = InJvmPeer.clusterName("churn");
    List<Step> plan = plan(seed);
    plan.stream().filter(s -> s.kind().equals("crash")).forEach(s -> toCrash.addAll(s.victims()));
    String replay = "seed " + seed + ", steps " + plan;
    System.out.println("churn: " + replay);

    for (String id : List.of("p1", "p2", "p3")) {
      start(cluster, id);
    }
    awaitSettled(replay, Duration.ofSeconds(30));

    writers = new Writers(seed);
    List<CompletableFuture<Void>> writing = writers.start();
    await(replay + ": the first writes").atMost(Duration.ofSeconds(30)).until(() -> writers.acked.get() >= KEYS / 2);
    boolean crashedSinceSettled = false;
    for (Step step : plan) {
      long acked = writers.acked.get();
      switch (step.kind()) {
        case "join" -> {
          start(cluster, step.newIds().get(0));
          awaitOneRing(replay);
        }
        case "leave" -> stop(step.victims().get(0));
        case "crash" -> {
          if (crashedSinceSettled) { // the last crash's ranges must be back to two copies first
            awaitSettled(replay, Duration.ofSeconds(30));
          }
          crash(step.victims().get(0));
          crashedSinceSettled = true;
        }
        case "restart" -> {
          restart(cluster, step.victims(), step.newIds());
          awaitOneRing(replay);
        }
        default -> throw new AssertionError(step.kind());
      }
      // Writes go on between the steps, not only during them.
      await(replay + ": writes after " + step).atMost(Duration.ofSeconds(30))
          .until(() -> writers.acked.get() >= acked + 20);
    }
    writers.stop();
    for (CompletableFuture<Void> w : writing) {
      try {
        w.get(90, TimeUnit.SECONDS); // each writer ends its last write first, until it is acknowledged
      } catch (ExecutionException e) {
        throw new AssertionError(replay + ": " + e.getCause().getMessage(), e.getCause());
      }
    }
    awaitSettled(replay, Duration.ofSeconds(40));

    Map<String, Written> expected = new TreeMap<>(writers.last);
    assertEquals(List.of(), List.copyOf(writers.unexpected), replay + ": replies that were neither a 200 nor a"
        + " refusal to try again");
    assertTrue(expected.values().stream().anyMatch(Written::deleted)
        && expected.values().stream().anyMatch(w -> !w.deleted()), replay + ": both kinds of writes: " + expected);
    List<String> wrongReads = new ArrayList<>();
    List<Running> left = liveNow();
    for (Running via : left) {
      expected.forEach((key, written) -> readProblem(via, key, written).ifPresent(wrongReads::add));
    }
    assertEquals(List.of(), wrongReads.subList(0, Math.min(20, wrongReads.size())), replay + ": "
        + wrongReads.size() + " reads of " + expected.size() + " keys through " + ids(left) + " after "
        + writers.acked.get() + " acknowledged writes");

    // The sweep hands a stray (a tombstone too) on within seconds: the copies settle a little after the ring.
    List<String> wrongCopies = new ArrayList<>();
    try {
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
        wrongCopies.clear();
        expected.forEach((key, written) -> wrongCopies.addAll(copyProblems(key, written)));
        return wrongCopies.isEmpty();
      });
    } catch (ConditionTimeoutException e) {
      assertEquals(List.of(), wrongCopies.subList(0, Math.min(20, wrongCopies.size())), replay + ": "
          + wrongCopies.size() + " keys without exactly their owners' copies of the newest version");
    }
    System.out.printf("churn: %s: %d writes acknowledged (%d attempts tried again), %d keys, %d peers left %s%n",
        replay, writers.acked.get(), writers.retried.get(), expected.size(), left.size(), ids(left));
  }

  /**
   * The steps seed {@code seed} draws, each allowed by the peers it leaves: a join while fewer than
   * five run, a leave or a crash while more than two do, a restart of two while three or more do
   * (one stays to take their hand-offs while the new ones join).
   */
  private static List<Step> plan(long seed) {
    Random random = new Random(seed);
    List<String> running = new ArrayList<>(List.of("p1", "p2", "p3"));
    int next = 4;
    List<Step> steps = new ArrayList<>();
    int count = 5 + random.nextInt(4);
    while (steps.size() < count) {
      List<String> kinds = new ArrayList<>();
      if (running.size() < 5) {
        kinds.add("join");
      }
      if (running.size() > 2) {
        kinds.addAll(List.of("leave", "crash"));
      }
      if (running.size() >= 3) {
        kinds.add("restart");
      }
      String kind = kinds.get(random.nextInt(kinds.size()));
      switch (kind) {
        case "join" -> {
          String id = "p" + next++;
          running.add(id);
          steps.add(new Step(kind, List.of(), List.of(id)));
        }
        case "leave", "crash" -> steps.add(new Step(kind, List.of(running.remove(random.nextInt(running.size()))),
            List.of()));
        default -> {
          List<String> victims = new ArrayList<>();
          victims.add(running.remove(random.nextInt(running.size())));
          victims.add(running.remove(random.nextInt(running.size())));
          List<String> ids = List.of("p" + next++, "p" + next++);
          running.addAll(ids);
          steps.add(new Step(kind, victims, ids));
        }
      }
    }
    return steps;
  }

  private Running start(String cluster, String id) throws IOException {
    int port = PeerCluster.freePort();
    Peer peer = toCrash.contains(id) ? ChaosPeers.start(dir, cluster, id, port, REPLICAS, CRASHED_LEAVE_TIMEOUT)
        : ChaosPeers.start(dir, cluster, id, port, REPLICAS);
    Running r = new Running(id, port, peer);
    synchronized (this) {
      live.add(r);
    }
    return r;
  }

  /** A graceful leave: returns once the peer has handed everything off and left. */
  private void stop(String id) {
    Running r = running(id);
    r.peer().close();
    synchronized (this) {
      live.remove(r);
    }
  }

  /**
   * Two peers stop gracefully while two new ones start, all at once, and this returns once all
   * four are done.
   */
  private void restart(String cluster, List<String> victims, List<String> newIds) {
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (String id : victims) {
      all.add(ChaosPeers.onOwnThread("churn-stop-" + id, () -> stop(id)));
    }
    for (String id : newIds) {
      all.add(ChaosPeers.onOwnThread("churn-start-" + id, () -> {
        try {
          start(cluster, id);
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
      }));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
  }

  /**
   * A crash, as of a killed process: the peer's node hears and says nothing from now on and stops
   * without a LEAVING change; the others notice it only by their failure detector. Then its HTTP
   * server and threads stop, in the background (see {@link #crashedClosing}).
   */
  private void crash(String id) throws Exception {
    Running r = running(id);
    synchronized (this) {
      live.remove(r); // the writers go elsewhere at once, as they would after a connection refused
    }
    stopAbruptly(r.peer());
    crashedClosing.add(ChaosPeers.onOwnThread("churn-close-crashed-" + id, r.peer()::close));
  }

  /**
   * Drops every message of the peer's node, then closes it as {@code Ringmaster.closeAbruptly()}
   * does; the node is a private field of {@link Peer}, and that method package-private in core (an
   * application has no use for a crash): both are reached by reflection, as
   * {@link LocalCluster#crash} reaches the latter.
   */
  private static void stopAbruptly(Peer peer) throws Exception {
    Ringmaster node = ChaosPeers.node(peer);
    LocalCluster.discard(node).discardAll(true);
    Method abrupt = Ringmaster.class.getDeclaredMethod("closeAbruptly");
    abrupt.setAccessible(true);
    try {
      abrupt.invoke(node);
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private synchronized Running running(String id) {
    return live.stream().filter(r -> r.id().equals(id)).findFirst()
        .orElseThrow(() -> new AssertionError("no live peer " + id + " among " + ids(live)));
  }

  private synchronized List<Running> liveNow() {
    return List.copyOf(live);
  }

  private static List<String> ids(Collection<Running> peers) {
    return peers.stream().map(Running::id).toList();
  }

  /**
   * Waits until the live peers form one ring of exactly them, agree on its view and checksum, and
   * have no change pending or running, no pull or repair to try again and no stray value left.
   */
  private void awaitSettled(String replay, Duration atMost) {
    List<Running> peers = liveNow();
    await(replay + ": peers " + ids(peers) + " settled").atMost(atMost).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> ChaosPeers.settled(peers.stream().map(p -> json(p, "/stats")).toList()));
  }

  /**
   * Waits until the live peers share one ring of exactly them, their migrations maybe still
   * running. A joiner that heard no answer from the others in time (a loaded machine) founds a
   * cluster of its own, merged seconds later: until then a leave on the other side can find
   * nobody there to hand its keys to, which loses them by design, not by a fault.
   */
  private void awaitOneRing(String replay) {
    List<Running> peers = liveNow();
    await(replay + ": peers " + ids(peers) + " in one ring").atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100)).ignoreExceptions().until(() -> {
          Set<String> rings = new HashSet<>();
          for (Running p : peers) {
            JsonNode s = json(p, "/stats");
            if (s.path("members").asInt() != peers.size()) {
              return false;
            }
            rings.add(s.path("viewId").asLong() + "/" + s.path("checksum").asText());
          }
          return rings.size() == 1;
        });
    for (Running p : peers) { // a listener that threw is only logged: the peer's counter says so
      assertEquals(0, json(p, "/stats").path("listenerFailures").asLong(-1), replay + ": a listener of " + p + " threw");
    }
  }

  /** What is wrong with a read of {@code key} through {@code via}, if anything. */
  private Optional<String> readProblem(Running via, String key, Written written) {
    HttpResponse<String> r = send(via.uri(PeerCluster.keyPath(key)), HttpRequest.newBuilder().GET());
    JsonNode body = PeerCluster.parse(r.body());
    boolean right = written.deleted()
        ? r.statusCode() == 404 && body.path("deleted").asBoolean()
        : r.statusCode() == 200 && written.value().equals(body.path("value").asText());
    return right ? Optional.empty() : Optional.of(key + " via " + via.id() + ": " + r.statusCode() + " " + r.body()
        + " (acknowledged: " + written + ")");
  }

  /**
   * Each live peer's own copy of {@code key}: its owners (in the ring of the live peers, which they
   * agree on) must hold the newest version, the others nothing.
   */
  private List<String> copyProblems(String key, Written written) {
    List<String> problems = new ArrayList<>();
    Map<String, String> holders = new LinkedHashMap<>();
    for (Running p : liveNow()) {
      HttpResponse<String> r = send(p.uri(PeerCluster.keyPath(key) + "?local=true"), HttpRequest.newBuilder().GET());
      if (r.statusCode() == 404) {
        continue;
      }
      JsonNode copy = PeerCluster.parse(r.body());
      boolean newest = written.deleted() ? copy.path("deleted").asBoolean()
          : !copy.path("deleted").asBoolean() && written.value().equals(copy.path("value").asText());
      holders.put(p.id(), copy.path("role").asText() + (newest ? "" : " holding " + r.body()));
    }
    long owners = holders.values().stream().filter(role -> role.equals("primary") || role.equals("backup")).count();
    if (owners != REPLICAS || holders.size() != REPLICAS) {
      problems.add(key + " (acknowledged: " + written + ") held as " + holders);
    }
    return problems;
  }

  private JsonNode json(Running p, String path) {
    HttpResponse<String> r = send(p.uri(path), HttpRequest.newBuilder().GET());
    assertEquals(200, r.statusCode(), () -> p.id() + " " + path + ": " + r.body());
    return PeerCluster.parse(r.body());
  }

  private HttpResponse<String> send(URI uri, HttpRequest.Builder request) {
    return ChaosPeers.send(http, uri, request, "churn");
  }

  /**
   * Writers, each with keys of its own, so that the writes of a key follow each other and its last
   * acknowledged one is the newest: each picks one of its keys and puts a value no write had before
   * (three times in four) or deletes it, through a random live peer, trying again until a peer
   * acknowledges it. The choices come from the seed; only their timing does not.
   */
  private final class Writers {
    private final long seed;
    private final ExecutorService threads = Executors.newFixedThreadPool(WRITERS);
    private volatile boolean stopping;
    final AtomicLong acked = new AtomicLong();
    final AtomicLong retried = new AtomicLong();
    /** Key to what its last acknowledged write left. */
    final Map<String, Written> last = new ConcurrentHashMap<>();
    /** Replies neither a 200 nor a refusal {@link KeyWriter#RETRIED} allows: faults, whatever a retry did next. */
    final Collection<String> unexpected = new ConcurrentLinkedQueue<>();

    Writers(long seed) {
      this.seed = seed;
    }

    List<CompletableFuture<Void>> start() {
      List<CompletableFuture<Void>> all = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        all.add(CompletableFuture.runAsync(() -> write(writer), threads));
      }
      return all;
    }

    void stop() {
      stopping = true;
    }

    private void write(int writer) {
      Random random = new Random(seed * 31 + writer);
      for (long n = 0; !stopping; n++) {
        String key = "churn-" + (writer + WRITERS * random.nextInt(KEYS / WRITERS));
        Written w = random.nextInt(4) == 0 && last.containsKey(key) ? new Written(null)
            : new Written(key + "-w" + writer + "-" + n);
        Random via = new Random(random.nextLong());
        try {
          await().atMost(Duration.ofSeconds(60)).pollInSameThread().pollDelay(Duration.ZERO)
              .pollInterval(Duration.ofMillis(50)).until(() -> tryOnce(key, w, via));
        } catch (ConditionTimeoutException e) {
          throw new AssertionError("no peer acknowledged " + w + " of " + key + " within 60 s");
        }
        last.put(key, w);
        acked.incrementAndGet();
      }
    }

    private boolean tryOnce(String key, Written w, Random random) {
      if (Thread.currentThread().isInterrupted()) { // the test is over, whatever its outcome
        throw new CancellationException("writers closed before " + w + " of " + key + " was acknowledged");
      }
      List<Running> peers = liveNow();
      Running via = peers.get(random.nextInt(peers.size()));
      HttpRequest.Builder request = w.deleted() ? HttpRequest.newBuilder().DELETE()
          : HttpRequest.newBuilder().PUT(HttpRequest.BodyPublishers.ofString(w.value(), StandardCharsets.UTF_8));
      HttpResponse<String> r;
      try {
        r = send(via.uri(PeerCluster.keyPath(key)), request);
      } catch (RuntimeException stoppedOrCrashed) {
        retried.incrementAndGet();
        return false;
      }
      if (r.statusCode() == 200) {
        return true;
      }
      if (r.statusCode() == 503
          && KeyWriter.RETRIED.matcher(PeerCluster.parse(r.body()).path("error").asText()).matches()) {
        retried.incrementAndGet();
        return false;
      }
      unexpected.add((w.deleted() ? "delete " : "put ") + key + " via " + via.id() + ": " + r.statusCode() + " "
          + r.body());
      retried.incrementAndGet();
      return false;
    }
  }

  /**
   * Stops the writers, then every peer still running, all at once (each finds the others leaving
   * too, and leaves without waiting for its hand-off), and waits for the crashed peers' closes.
   */
  @AfterEach
  void stopAll() {
    Steps steps = new Steps();
    if (writers != null) {
      steps.run(() -> {
        writers.stop();
        ChaosPeers.stopWriters(writers.threads);
      });
    }
    List<CompletableFuture<Void>> closing = new ArrayList<>(crashedClosing);
    for (Running r : liveNow()) {
      closing.add(ChaosPeers.onOwnThread("churn-close-" + r.id(), r.peer()::close));
    }
    for (CompletableFuture<Void> c : closing) {
      steps.run(() -> c.orTimeout(60, TimeUnit.SECONDS).join());
    }
    steps.run(() -> {
      if (readRepairBefore == null) {
        System.clearProperty(TestingAids.NO_READ_REPAIR);
      } else {
        System.setProperty(TestingAids.NO_READ_REPAIR, readRepairBefore);
      }
    });
    steps.throwFirst();
  }
}
