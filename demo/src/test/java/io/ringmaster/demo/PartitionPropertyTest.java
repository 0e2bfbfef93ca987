package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.Ringmaster;
import io.ringmaster.testing.LocalCluster;
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
import java.util.SplittableRandom;
import java.util.TreeMap;
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
import org.jgroups.Address;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random partitions under writes, from fixed seeds: four {@link Peer}s in this JVM (the in-memory
 * stack, two replicas, HTTP on free ports) go through 2-3 rounds drawn from a seed, each of which
 * splits them into two sides that cannot hear each other, lets writers put, overwrite and delete
 * keys through random peers of both sides (each side acknowledges the keys its own ring gives it),
 * then heals the split and waits for the peers to settle. Keys are shared by both sides, so most
 * are written on each. After each heal, what docs/demo.md promises of the merge repair must
 * hold: each key sits on exactly its two owners in the merged ring, each holding the newest
 * version acknowledged on either side, by the peers' own rule (the greater version; of two equal
 * ones, the tombstone, then the greater value), so a delete newer than every put of its key reads
 * as deleted, and a put newer than every delete reads back.
 *
 * <p>It is a split of one peer from three that needs the repair: with two peers a side, each
 * holds every key of its side and hands half of them to their merged owners, both sides' copies
 * reaching each owner as hand-offs; a peer alone keeps its keys, as does their other merged owner
 * on the side of three, so only the repair takes the lone peer's newer copies (tombstones
 * included) to that owner. Both default seeds draw such a split, and each heal is checked, since
 * a later split's hand-offs would mend what an earlier repair missed.
 *
 * <p>"Newer" is what the write replies say (their {@code version} and {@code writer}), not the
 * order the writes were made in. A write a peer did not acknowledge may sit on some owners, with a
 * version no reply gave: for such a key only a version at least as new as every acknowledged one
 * is asked for. Reads do not repair ({@link TestingAids#NO_READ_REPAIR}), so the copies counted are
 * the merge repair's and the sweep's work. Failure detection and merges run faster than the
 * stack's defaults (the {@code ringmaster.fd.*} and {@code ringmaster.merge.*} properties, for
 * this test's nodes). A failure names its seed and rounds; {@code -Dpartition.seeds=7,8} runs
 * other seeds.
 */
class PartitionPropertyTest {
  private static final int REPLICAS = 2;
  private static final List<String> PEERS = List.of("p1", "p2", "p3", "p4");
  private static final int KEYS = 40;
  private static final int WRITERS = 4;
  /** Acknowledged writes each side takes in a round, at least. */
  private static final int WRITES_PER_SIDE = 50;
  /** The stack's timings while the peers start: a cut-off side noticed in about 2 s, a healed one merged in 1-3 s. */
  private static final Map<String, String> FAST_STACK = Map.of("ringmaster.fd.timeout", "1500ms",
      "ringmaster.fd.interval", "300ms", "ringmaster.merge.min", "300ms", "ringmaster.merge.max", "1s");

  @TempDir
  Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();
  private final List<Running> peers = new ArrayList<>();
  /** Per node, the addresses it ignores while split: the heal takes these back. */
  private final Map<Ringmaster, Set<Address>> cut = new ConcurrentHashMap<>();
  private final Map<String, String> propertiesBefore = new LinkedHashMap<>();
  private Writers writers;
  /** The seed and the splits it drew, for every failure's message. */
  private String replay = "";

  private record Running(String id, int port, Peer peer, Ringmaster node) {
    URI uri(String path) {
      return URI.create("http://127.0.0.1:" + port + path);
    }
  }

  /** An acknowledged write: its version as the reply gave it, and the value (null for a delete). */
  private record Acked(long stamp, String writer, String value) {
    boolean deleted() {
      return value == null;
    }

    /** Entry#supersedes, on what the replies say: the greater version; of equal ones, the tombstone, then the greater value. */
    boolean supersedes(Acked other) {
      int c = stamp != other.stamp ? Long.compare(stamp, other.stamp) : writer.compareTo(other.writer);
      if (c != 0) {
        return c > 0;
      }
      if (deleted() != other.deleted()) {
        return deleted();
      }
      return !deleted() && value.compareTo(other.value) > 0;
    }

    boolean sameVersion(JsonNode copy) {
      return copy.path("version").asLong() == stamp && writer.equals(copy.path("writer").asText());
    }

    @Override
    public String toString() {
      return (deleted() ? "deleted" : "\"" + value + "\"") + " @" + stamp + "/" + writer;
    }
  }

  static LongStream seeds() {
    return ChaosPeers.seeds("partition.seeds", 5, 10);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void randomPartitionsDuringWrites_healToTheNewestAcknowledgedVersion_onExactlyTheOwners(long seed)
      throws Exception {
    set(TestingAids.NO_READ_REPAIR, "true"); // read by each Peer.start
    FAST_STACK.forEach(this::set); // read by each node's stack as it starts
    List<List<String>> plan = plan(seed);
    replay = "seed " + seed + ", splits " + plan.stream().map(PartitionPropertyTest::describe).toList();
    System.out.println("partition: " + replay);

    String cluster = InJvmPeer.clusterName("partition");
    for (String id : PEERS) {
      start(cluster, id);
    }
    awaitSettled(replay + ": the first ring", peers, Duration.ofSeconds(30));

    writers = new Writers(seed);
    Map<String, Acked> newest = Map.of();
    for (int round = 0; round < plan.size(); round++) {
      List<Running> a = byId(plan.get(round));
      List<Running> b = peers.stream().filter(p -> !a.contains(p)).toList();
      String at = replay + ", round " + (round + 1) + " (" + describe(plan.get(round)) + ")";
      split(a, b);
      awaitSettled(at + ": side " + ids(a) + " alone", a, Duration.ofSeconds(30));
      awaitSettled(at + ": side " + ids(b) + " alone", b, Duration.ofSeconds(30));
      writers.writeThrough(at, a, b);
      heal();
      awaitSettled(at + ": healed", peers, Duration.ofSeconds(40));
      newest = assertCopiesOfTheNewest(at);
    }
    assertTrue(newest.values().stream().anyMatch(Acked::deleted) && newest.values().stream().anyMatch(w -> !w.deleted()),
        replay + ": both kinds of newest writes: " + newest);
    List<String> wrongReads = new ArrayList<>();
    Random via = new Random(seed);
    newest.forEach((key, acked) -> readProblem(peers.get(via.nextInt(peers.size())), key, acked)
        .ifPresent(wrongReads::add));
    assertEquals(List.of(), wrongReads.subList(0, Math.min(20, wrongReads.size())), replay + ": "
        + wrongReads.size() + " reads of " + newest.size() + " keys");
    System.out.printf("partition: %s: %d writes acknowledged, %d keys (%d deleted), %d writes not acknowledged%n",
        replay, writers.count.get(), newest.size(), newest.values().stream().filter(Acked::deleted).count(),
        writers.notAcknowledged.get());
  }

  /**
   * Asserts, once the peers have settled after a heal, that every key written so far sits on
   * exactly its two owners, each with the newest version acknowledged on either side, and returns
   * those versions.
   */
  private Map<String, Acked> assertCopiesOfTheNewest(String at) {
    assertEquals(List.of(), List.copyOf(writers.unexpected), at + ": replies that were neither a 200 nor a"
        + " refusal to try again");
    Map<String, Acked> newest = new TreeMap<>();
    writers.acked.forEach((key, all) -> newest.put(key, all.stream().reduce((x, y) -> y.supersedes(x) ? y : x)
        .orElseThrow()));
    // The repair pushes at once and the sweep drops strays within seconds: the copies settle a little after the ring.
    List<String> wrongCopies = new ArrayList<>();
    try {
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(250)).until(() -> {
        wrongCopies.clear();
        newest.forEach((key, acked) -> copyProblem(key, acked).ifPresent(wrongCopies::add));
        return wrongCopies.isEmpty();
      });
    } catch (ConditionTimeoutException e) {
      assertEquals(List.of(), wrongCopies.subList(0, Math.min(20, wrongCopies.size())), at + ": "
          + wrongCopies.size() + " of " + newest.size() + " keys without exactly their owners' copies of the newest"
          + " acknowledged version (writes not acknowledged of " + writers.unacknowledged + ")");
    }
    return newest;
  }

  /** The rounds seed {@code seed} draws: 2 or 3, each the ids of one side of a split into two non-empty sides. */
  private static List<List<String>> plan(long seed) {
    SplittableRandom random = new SplittableRandom(seed); // Random's first draws barely differ for nearby seeds
    List<List<String>> rounds = new ArrayList<>();
    int count = 2 + random.nextInt(2);
    while (rounds.size() < count) {
      List<String> side = PEERS.stream().filter(id -> random.nextBoolean()).toList();
      if (!side.isEmpty() && side.size() < PEERS.size()) {
        rounds.add(side);
      }
    }
    return rounds;
  }

  private static String describe(List<String> side) {
    List<String> other = PEERS.stream().filter(id -> !side.contains(id)).toList();
    return String.join("+", side) + " | " + String.join("+", other);
  }

  private void set(String property, String value) {
    propertiesBefore.putIfAbsent(property, System.getProperty(property));
    System.setProperty(property, value);
  }

  private void start(String cluster, String id) throws Exception {
    int port = PeerCluster.freePort();
    Peer peer = ChaosPeers.start(dir, cluster, id, port, REPLICAS);
    peers.add(new Running(id, port, peer, ChaosPeers.node(peer)));
  }

  /** Each side's nodes drop every message from the other side's, as {@link LocalCluster#partition} has them do. */
  private void split(List<Running> a, List<Running> b) {
    cutOff(a, b);
    cutOff(b, a);
  }

  private void cutOff(List<Running> side, List<Running> from) {
    Address[] others = from.stream().map(r -> r.node().channel().getAddress()).toArray(Address[]::new);
    for (Running r : side) {
      cut.computeIfAbsent(r.node(), k -> ConcurrentHashMap.newKeySet()).addAll(List.of(others));
      LocalCluster.discard(r.node()).addIgnoredMembers(others);
    }
  }

  private void heal() {
    cut.forEach((node, addresses) -> addresses.forEach(LocalCluster.discard(node)::removeIgnoredMember));
    cut.clear();
  }

  private List<Running> byId(List<String> ids) {
    return peers.stream().filter(p -> ids.contains(p.id())).toList();
  }

  private static List<String> ids(Collection<Running> peers) {
    return peers.stream().map(Running::id).toList();
  }

  /**
   * Waits until {@code side} forms one ring of exactly its peers, which agree on its view and
   * checksum, and have no change pending or running, no pull or repair to try again and no stray
   * value left.
   */
  private void awaitSettled(String what, List<Running> side, Duration atMost) {
    await(what).atMost(atMost).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> ChaosPeers.settled(side.stream().map(p -> json(p, "/stats")).toList()));
  }

  /**
   * What is wrong with the copies of {@code key}, if anything: exactly two peers must hold it, as
   * its primary and its backup, each the newest acknowledged version (or, if a write of the key
   * went unacknowledged, one copy of a version at least as new on both).
   */
  private Optional<String> copyProblem(String key, Acked newest) {
    Map<String, JsonNode> holders = new LinkedHashMap<>();
    for (Running p : peers) {
      HttpResponse<String> r = send(p.uri(PeerCluster.keyPath(key) + "?local=true"), HttpRequest.newBuilder().GET());
      if (r.statusCode() != 404) {
        holders.put(p.id(), PeerCluster.parse(r.body()));
      }
    }
    Set<String> roles = new HashSet<>();
    Set<String> versions = new HashSet<>();
    boolean right = holders.size() == REPLICAS;
    for (JsonNode copy : holders.values()) {
      roles.add(copy.path("role").asText());
      versions.add(copy.path("version").asLong() + "/" + copy.path("writer").asText() + "/"
          + copy.path("deleted").asBoolean() + "/" + copy.path("value").asText());
      Acked held = new Acked(copy.path("version").asLong(), copy.path("writer").asText(),
          copy.path("deleted").asBoolean() ? null : copy.path("value").asText());
      right &= writers.unacknowledged.contains(key) ? !newest.supersedes(held)
          : newest.sameVersion(copy) && held.equals(newest);
    }
    right &= roles.equals(Set.of("primary", "backup")) && versions.size() == 1;
    return right ? Optional.empty() : Optional.of(key + " (newest acknowledged: " + newest + ", of "
        + writers.acked.get(key) + ") held as " + holders);
  }

  private Optional<String> readProblem(Running via, String key, Acked newest) {
    HttpResponse<String> r = send(via.uri(PeerCluster.keyPath(key)), HttpRequest.newBuilder().GET());
    JsonNode body = PeerCluster.parse(r.body());
    boolean right = newest.deleted() ? r.statusCode() == 404 && body.path("deleted").asBoolean()
        : r.statusCode() == 200 && newest.value().equals(body.path("value").asText());
    return right || writers.unacknowledged.contains(key) ? Optional.empty()
        : Optional.of(key + " via " + via.id() + ": " + r.statusCode() + " " + r.body() + " (newest acknowledged: "
        + newest + ")");
  }

  private JsonNode json(Running p, String path) {
    HttpResponse<String> r = send(p.uri(path), HttpRequest.newBuilder().GET());
    assertEquals(200, r.statusCode(), () -> replay + ": " + p.id() + " " + path + ": " + r.body());
    return PeerCluster.parse(r.body());
  }

  private HttpResponse<String> send(URI uri, HttpRequest.Builder request) {
    return ChaosPeers.send(http, uri, request, replay);
  }

  /**
   * Writers that share every key: each picks a key and puts a value no write had before (two
   * times in three) or deletes it, through a random peer of a random side, and records the version
   * the reply gives. A write that is not acknowledged is not tried again (its key is noted as
   * written unacknowledged). The choices come from the seed; only their timing does not.
   */
  private final class Writers {
    private final ExecutorService threads = Executors.newFixedThreadPool(WRITERS);
    private final Random seeds;
    private volatile boolean stopping;
    final AtomicLong count = new AtomicLong();
    /** Numbers the values put, so that no two puts have one. */
    private final AtomicLong values = new AtomicLong();
    final AtomicLong notAcknowledged = new AtomicLong();
    /** Key to every acknowledged write of it. */
    final Map<String, Collection<Acked>> acked = new ConcurrentHashMap<>();
    /** Keys a write of which got no acknowledgement: it may sit on some owners, with a version nobody was told. */
    final Set<String> unacknowledged = ConcurrentHashMap.newKeySet();
    /** Replies neither a 200 nor a refusal {@link KeyWriter#RETRIED} allows: faults. */
    final Collection<String> unexpected = new ConcurrentLinkedQueue<>();

    Writers(long seed) {
      this.seeds = new Random(seed * 31);
    }

    /** Writes through the peers of both sides until each has acknowledged {@link #WRITES_PER_SIDE}. */
    void writeThrough(String at, List<Running> a, List<Running> b) throws Exception {
      Map<Running, AtomicLong> perPeer = new ConcurrentHashMap<>();
      stopping = false;
      List<CompletableFuture<Void>> all = new ArrayList<>();
      for (int w = 0; w < WRITERS; w++) {
        long writerSeed = seeds.nextLong();
        int writer = w;
        all.add(CompletableFuture.runAsync(() -> write(writer, new Random(writerSeed), List.of(a, b), perPeer),
            threads));
      }
      try {
        await(at + ": writes on both sides").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
            .until(() -> acked(perPeer, a) >= WRITES_PER_SIDE && acked(perPeer, b) >= WRITES_PER_SIDE);
      } finally {
        stopping = true;
      }
      for (CompletableFuture<Void> f : all) {
        try {
          f.get(30, TimeUnit.SECONDS); // each writer ends its last write first
        } catch (ExecutionException e) {
          throw new AssertionError(at + ": " + e.getCause(), e.getCause());
        }
      }
    }

    private long acked(Map<Running, AtomicLong> perPeer, List<Running> side) {
      return side.stream().mapToLong(p -> perPeer.getOrDefault(p, new AtomicLong()).get()).sum();
    }

    private void write(int writer, Random random, List<List<Running>> sides, Map<Running, AtomicLong> perPeer) {
      while (!stopping) {
        String key = "part-" + random.nextInt(KEYS);
        String value = random.nextInt(3) == 0 ? null : key + "-w" + writer + "-" + values.incrementAndGet();
        List<Running> side = sides.get(random.nextInt(sides.size())); // a peer alone takes half the writes too
        Running p = side.get(random.nextInt(side.size()));
        HttpRequest.Builder request = value == null ? HttpRequest.newBuilder().DELETE()
            : HttpRequest.newBuilder().PUT(HttpRequest.BodyPublishers.ofString(value, StandardCharsets.UTF_8));
        HttpResponse<String> r = send(p.uri(PeerCluster.keyPath(key)), request);
        JsonNode body = PeerCluster.parse(r.body());
        if (r.statusCode() == 200) {
          acked.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>())
              .add(new Acked(body.path("version").asLong(), body.path("writer").asText(), value));
          perPeer.computeIfAbsent(p, k -> new AtomicLong()).incrementAndGet();
          count.incrementAndGet();
          continue;
        }
        unacknowledged.add(key);
        notAcknowledged.incrementAndGet();
        if (r.statusCode() != 503 || !KeyWriter.RETRIED.matcher(body.path("error").asText()).matches()) {
          unexpected.add((value == null ? "delete " : "put ") + key + " via " + p.id() + ": " + r.statusCode() + " "
              + r.body());
        }
      }
    }
  }

  /** Stops the writers, heals any split, stops every peer at once, and puts the system properties back. */
  @AfterEach
  void stopAll() {
    Steps steps = new Steps();
    if (writers != null) {
      steps.run(() -> {
        writers.stopping = true;
        ChaosPeers.stopWriters(writers.threads);
      });
    }
    steps.run(this::heal);
    List<CompletableFuture<Void>> closing = new ArrayList<>();
    for (Running r : peers) {
      closing.add(ChaosPeers.onOwnThread("partition-close-" + r.id(), r.peer()::close));
    }
    for (CompletableFuture<Void> c : closing) {
      steps.run(() -> c.orTimeout(60, TimeUnit.SECONDS).join());
    }
    propertiesBefore.forEach((property, before) -> steps.run(() -> {
      if (before == null) {
        System.clearProperty(property);
      } else {
        System.setProperty(property, before);
      }
    }));
    steps.throwFirst();
  }
}
