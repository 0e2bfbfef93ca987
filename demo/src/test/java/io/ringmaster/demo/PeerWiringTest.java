package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.StreamSupport;
import io.ringmaster.RingmasterException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Peer} as {@link Peer#start} wires it, two of them (four in one test) in this JVM on the
 * in-memory stack with one copy a key: the ring each reports to the other, the events it logs and
 * their order, the writes and reads it serves for the other, the tombstones it purges, the pulls it
 * tries again, the words it leaves with, and the port a start that fails lets go of.
 */
class PeerWiringTest {
  private static final String STACK = "ringmaster/jgroups/in-jvm.xml";
  /** The names {@link Peer}'s own pools give their threads. */
  private static final List<String> POOLS = List.of("http-", "rpc-", "sweep-", "pull-retries-", "pulls-", "pushes-",
      "status-");

  @TempDir
  Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final List<Peer> peers = new ArrayList<>();

  /**
   * The last started first (a peer closed already returns at once): a peer that refuses hand-offs
   * then leaves before the one that would hand it keys, which would otherwise wait its whole leave
   * budget for a push that is refused.
   */
  @AfterEach
  void closeAll() {
    for (int i = peers.size() - 1; i >= 0; i--) {
      peers.get(i).close();
    }
  }

  /**
   * Each peer reports its ring to the other and keeps doing so (the reports of a peer that went
   * quiet grow old and the ring is no longer agreed), logs its start and the other's join, serves
   * the keys the other owns through it, runs on daemon threads, and on close hands every key it
   * owns to the one staying, saying so on its output, flushed, then lets its port go.
   */
  @Test
  void twoPeers_agreeAndServeEachOthersKeys_andOneLeavingHandsItsKeysOff_sayingSo() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring");
    int portA = PeerCluster.freePort();
    int portB = PeerCluster.freePort();
    start(cluster, "a", portA);
    Peer b = start(cluster, "b", portB);
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && agreed(portB, 2));
    // Past the age at which a report counts as old: only the periodic reports keep the ring agreed.
    await().during(Duration.ofMillis(PeerDirectory.FRESH_MILLIS + 1_000)).atMost(Duration.ofSeconds(30))
        .until(() -> agreed(portA, 2));

    List<JsonNode> eventsOfA = events(portA);
    assertTrue(eventsOfA.stream().anyMatch(e -> e.path("type").asText().equals("started")
        && e.path("id").asText().equals("a")), eventsOfA::toString);
    assertTrue(eventsOfA.stream().anyMatch(e -> e.path("type").asText().equals("membership")
        && e.path("joined").toString().equals("[\"b\"]")), eventsOfA::toString);

    int keys = 40;
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> put = send(portA, "/kv/k" + i, HttpRequest.newBuilder().PUT(
          HttpRequest.BodyPublishers.ofString("v" + i)));
      assertEquals(200, put.statusCode(), put.body());
    }
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> get = send(portB, "/kv/k" + i, HttpRequest.newBuilder());
      assertEquals(200, get.statusCode(), get.body());
      assertEquals("v" + i, PeerCluster.parse(get.body()).path("value").asText(), get.body());
    }
    List<Thread> notDaemons = Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && !t.isDaemon() && POOLS.stream().anyMatch(t.getName()::startsWith)).toList();
    assertEquals(List.of(), notDaemons, "the peers' threads hold up no JVM exit");

    long heldByB = stats(portB).path("primaryKeys").asLong();
    assertTrue(heldByB > 0 && heldByB < keys, "b owns part of the keys: " + heldByB);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream before = System.out;
    long closing = System.nanoTime();
    System.setOut(new PrintStream(new BufferedOutputStream(bytes, 1 << 16), false, StandardCharsets.UTF_8));
    try {
      b.close();
    } finally {
      System.setOut(before);
    }
    long tookMillis = (System.nanoTime() - closing) / 1_000_000;
    String said = bytes.toString(StandardCharsets.UTF_8);
    Matcher left = Pattern.compile("b left the cluster in (\\d+) ms; keys handed off in total: (\\d+);"
        + " every entry reached its owners").matcher(said);
    assertTrue(left.find(), "on the output, flushed, once close() returned: " + said);
    assertTrue(Long.parseLong(left.group(1)) <= tookMillis, said + " in " + tookMillis + " ms");
    assertEquals(heldByB, Long.parseLong(left.group(2)), said);

    assertEquals(keys, stats(portA).path("primaryKeys").asLong(), "a took every key b held");
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> get = send(portA, "/kv/k" + i + "?local=true", HttpRequest.newBuilder());
      assertEquals(200, get.statusCode(), get.body());
    }
    try (ServerSocket again = new ServerSocket(portB, 1, InetAddress.getLoopbackAddress())) {
      assertEquals(portB, again.getLocalPort(), "b's HTTP port is free once it closed");
    }
  }

  /**
   * The words a peer leaves with count what its leave handed off, not also the keys it handed to
   * a joiner before: c's join takes part of b's keys, then b leaves and says it handed off the keys
   * it held then.
   */
  @Test
  void leaving_saysWhatTheLeaveHandedOff_notAlsoWhatAJoinerTookBefore() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-leave-count");
    int portA = PeerCluster.freePort();
    int portB = PeerCluster.freePort();
    int portC = PeerCluster.freePort();
    start(cluster, "a", portA);
    Peer b = start(cluster, "b", portB);
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && agreed(portB, 2));
    for (int i = 0; i < 60; i++) {
      HttpResponse<String> put = send(portA, "/kv/k" + i, HttpRequest.newBuilder().PUT(
          HttpRequest.BodyPublishers.ofString("v" + i)));
      assertEquals(200, put.statusCode(), put.body());
    }
    start(cluster, "c", portC);
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portB, 3) && settled(portA) && settled(portB)
        && settled(portC) && stats(portB).path("strayKeys").asLong() == 0);
    JsonNode before = stats(portB);
    assertTrue(before.path("keysMigratedOut").asLong() > 0, "c's join took keys from b: " + before);
    long held = before.path("primaryKeys").asLong();
    assertTrue(held > 0, "b still holds keys: " + before);

    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = System.out;
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      b.close();
    } finally {
      System.setOut(out);
    }
    String said = bytes.toString(StandardCharsets.UTF_8);
    Matcher left = Pattern.compile("b left the cluster in \\d+ ms; keys handed off in total: (\\d+);").matcher(said);
    assertTrue(left.find(), said);
    assertEquals(held, Long.parseLong(left.group(1)), said);
  }

  /**
   * Through joins and leaves, each peer's log shows a view's membership event before this peer's
   * ownership event of that view, and that before its migrations, also when the membership listener
   * is held up (as a busy pool would) until the rebalancer is done with the view: the log keeps the
   * ownership event back meanwhile, while the data moves.
   */
  @Test
  void eachViewsMembershipEvent_comesBeforeTheOwnershipEvent_evenWhenItsListenerIsLate() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-order");
    int portA = PeerCluster.freePort();
    Peer a = start(cluster, "a", portA);
    // Its first view has no membership event (the "started" event reports it): its ownership event
    // waits for none.
    await().atMost(Duration.ofSeconds(30)).until(() -> events(portA).stream().anyMatch(
        e -> e.path("type").asText().equals("ownership") && e.path("previousViewId").asLong() < 0));
    start(cluster, "b", PeerCluster.freePort());
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && settled(portA));
    long doneBefore = stats(portA).path("migrationsCompleted").asLong();

    CountDownLatch late = new CountDownLatch(1);
    a.beforeMembershipEvent = () -> {
      try {
        late.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
    Peer c;
    long view;
    try {
      c = start(cluster, "c", PeerCluster.freePort());
      // The rebalancer done with c's join (the membership callback held counts as pending still).
      await().atMost(Duration.ofSeconds(30)).until(() -> stats(portA).path("members").asInt() == 3
          && stats(portA).path("migrationsCompleted").asLong() > doneBefore
          && stats(portA).path("migrationsInProgress").asInt() == 0);
      view = stats(portA).path("viewId").asLong();
      List<JsonNode> meanwhile = events(portA);
      assertTrue(meanwhile.stream().noneMatch(e -> e.path("viewId").asLong() == view), "c's join, handed off to it "
          + "with its membership event not yet logged, is kept back: " + meanwhile);
    } finally {
      late.countDown();
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> events(portA).stream().anyMatch(
        e -> e.path("type").asText().equals("ownership") && e.path("viewId").asLong() == view));

    int portD = PeerCluster.freePort();
    start(cluster, "d", portD);
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 4) && agreed(portD, 4));
    peers.get(1).close(); // b leaves
    c.close();
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && agreed(portD, 2)
        && settled(portA) && settled(portD));
    for (int port : new int[] {portA, portD}) {
      List<JsonNode> log = events(port);
      assertInViewOrder(log);
      long ownershipEvents = log.stream().filter(e -> e.path("type").asText().equals("ownership")).count();
      assertTrue(ownershipEvents >= (port == portA ? 6 : 3), "a: its start, b, c and d joining, b and c leaving;"
          + " d: its start, b and c leaving: " + log);
    }
  }

  /**
   * A peer's LEAVING change repeats the id of the last view it installed, which may be one with no
   * membership event: here a view in which a member the cluster refused (another holds its id)
   * left, changing no member of the ring. Its ownership event, and the drain's events after it, are
   * logged while the leave runs, not kept back until the peer has stopped.
   */
  @Test
  void leavingEvent_isLoggedDuringTheLeave_whenTheLastViewBroughtNoMembershipEvent() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-leaving");
    int portA = PeerCluster.freePort();
    // A short leave (its hand-off refused throughout, it lasts its whole budget, 0.9 of this).
    Path config = Files.writeString(dir.resolve("a-leaving.json"), "{\"nodeId\": \"a\", \"clusterName\": \""
        + cluster + "\", \"jgroupsConfig\": \"" + STACK + "\", \"leaveTimeoutMillis\": 6000}");
    Peer a = Peer.start(PeerOptions.parse(new String[] {"--http-port", Integer.toString(portA), "--config",
        config.toString(), "--replicas", "1"}, 0));
    peers.add(a);
    startWith(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE), cluster, "b", PeerCluster.freePort());
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && settled(portA));
    for (int i = 0; i < 20; i++) {
      HttpResponse<String> put = send(portA, "/kv/k" + i, HttpRequest.newBuilder().PUT(
          HttpRequest.BodyPublishers.ofString("v")));
      assertEquals(200, put.statusCode(), put.body());
    }
    assertTrue(stats(portA).path("primaryKeys").asLong() > 0, "a has keys to hand off");
    long before = stats(portA).path("viewId").asLong();
    RingmasterException refused = assertThrows(RingmasterException.class,
        () -> start(cluster, "b", PeerCluster.freePort()), "b's twin is refused");
    assertEquals(RingmasterException.Reason.ID_HELD, refused.reason(), refused::toString);
    // The twin's view (its refusal logged) and the view it left in (no membership event).
    await().atMost(Duration.ofSeconds(30)).until(() -> stats(portA).path("viewId").asLong() >= before + 2
        && settled(portA));
    long last = stats(portA).path("viewId").asLong();
    assertTrue(events(portA).stream().noneMatch(e -> e.path("type").asText().equals("membership")
        && e.path("viewId").asLong() == last), "the twin's leave changed no member");

    Thread closing = new Thread(a::close, "closing-a");
    closing.start();
    try {
      await().atMost(Duration.ofSeconds(4)).until(() -> events(portA).stream().anyMatch(
          e -> e.path("type").asText().equals("ownership") && e.path("reason").asText().equals("leaving")
              && e.path("viewId").asLong() == last));
    } finally {
      closing.join();
    }
  }

  /** Whether the peer on {@code port} has no migration in progress and no view still to hand to its listeners. */
  private boolean settled(int port) throws Exception {
    JsonNode s = stats(port);
    return s.path("migrationsInProgress").asInt() == 0 && s.path("pendingCallbacks").asInt() == 0;
  }

  /**
   * Each ownership event comes after the membership event of its view (but the first view's, which
   * the {@code started} event reports), and each migration of an ownership change after that
   * change's event.
   */
  private static void assertInViewOrder(List<JsonNode> log) {
    Set<Long> membershipIn = new HashSet<>();
    Set<String> ownershipIn = new HashSet<>();
    for (JsonNode e : log) {
      long view = e.path("viewId").asLong();
      switch (e.path("type").asText()) {
        case "membership" -> membershipIn.add(view);
        case "ownership" -> {
          assertTrue(membershipIn.contains(view) || e.path("previousViewId").asLong() < 0,
              "ownership event of view " + view + " before its membership event: " + log);
          ownershipIn.add(e.path("reason").asText() + " " + view);
        }
        case "migration" -> {
          String reason = e.path("reason").asText();
          assertTrue(reason.equals("retry") || reason.equals("drain") || ownershipIn.contains(reason + " " + view),
              "migration of " + reason + " " + view + " before its ownership event: " + log);
        }
        default -> { }
      }
    }
  }

  /**
   * A tombstone goes once its grace is over, on the peer that took its key from the other when it
   * joined too: that key is no longer coming in once the join's change is done.
   */
  @Test
  void tombstones_arePurgedAfterTheirGrace_alsoOnThePeerThatTookItsKeysFromTheOther() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-purge");
    int portA = PeerCluster.freePort();
    int portB = PeerCluster.freePort();
    start(cluster, "a", portA, "--tombstone-grace", "1");
    start(cluster, "b", portB, "--tombstone-grace", "1");
    await().atMost(Duration.ofSeconds(30)).until(() -> agreed(portA, 2) && agreed(portB, 2));
    int keys = 20;
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> put = send(portA, "/kv/k" + i, HttpRequest.newBuilder().PUT(
          HttpRequest.BodyPublishers.ofString("v")));
      assertEquals(200, put.statusCode(), put.body());
    }
    assertTrue(stats(portB).path("primaryKeys").asLong() > 0, "b owns some of the keys");
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> delete = send(portA, "/kv/k" + i, HttpRequest.newBuilder().DELETE());
      assertEquals(200, delete.statusCode(), delete.body());
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> stats(portA).path("tombstones").asLong() == 0
        && stats(portB).path("tombstones").asLong() == 0);
    assertEquals(keys, stats(portA).path("tombstonesPurged").asLong()
        + stats(portB).path("tombstonesPurged").asLong(), "each tombstone counted where it was purged");
  }

  /**
   * A joiner whose pull is refused (and that takes no hand-off push) reads the keys it gained from
   * the peer it pulls them from while the pull is tried again, then gets them from the retry, run
   * on the peer's own timer, and counts them as migrated in.
   */
  @Test
  void aPullRefusedAtFirst_isTriedAgainByThePeer_andWhatItBringsIsCounted() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-retry");
    int portA = PeerCluster.freePort();
    int portB = PeerCluster.freePort();
    // The first pull and the first retry (2 s after it) fail, five attempts in 2 s each: the next retry,
    // 4 s after that one, succeeds about 10 s after the pull began.
    startWith(TestingAids.REFUSE_PULLS, Integer.toString(2 * Transfers.ATTEMPTS), cluster, "a", portA);
    int keys = 20;
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> put = send(portA, "/kv/k" + i, HttpRequest.newBuilder().PUT(
          HttpRequest.BodyPublishers.ofString("v")));
      assertEquals(200, put.statusCode(), put.body());
    }
    startWith(TestingAids.REFUSE_HANDOFFS, Integer.toString(Integer.MAX_VALUE), cluster, "b", portB);
    await().atMost(Duration.ofSeconds(30)).until(() -> stats(portB).path("migrationsFailed").asLong() > 0);
    for (int i = 0; i < keys; i++) {
      HttpResponse<String> get = send(portB, "/kv/k" + i, HttpRequest.newBuilder());
      assertEquals(200, get.statusCode(), "while the pull is tried again: " + get.body());
    }
    assertTrue(stats(portB).path("pullRetriesPending").asLong() > 0, "read while the retry was pending");
    await().atMost(Duration.ofSeconds(60)).until(() -> stats(portB).path("pullRetriesPending").asLong() == 0
        && stats(portB).path("keysMigratedIn").asLong() > 0);
    JsonNode b = stats(portB);
    assertEquals(b.path("primaryKeys").asLong(), b.path("keysMigratedIn").asLong(), "b's keys came by the retry: " + b);
    assertEquals(keys, stats(portA).path("primaryKeys").asLong() + b.path("primaryKeys").asLong());
  }

  /**
   * A peer's hand-offs push to as many destinations at once as {@link TestingAids#PUSH_THREADS}
   * says (1: one after another, the hand-off a benchmark times the parallel one against), and to
   * {@link Transfers#PARALLEL_PUSHES} when it is unset.
   */
  @Test
  void pushThreadsProperty_sizesThePeersPushPool() throws Exception {
    String cluster = InJvmPeer.clusterName("peer-wiring-push-threads");
    Peer one = startWith(TestingAids.PUSH_THREADS, "1", cluster, "a", PeerCluster.freePort());
    Peer unset = start(cluster, "b", PeerCluster.freePort());
    assertEquals(1, ((ThreadPoolExecutor) one.pushThreads).getMaximumPoolSize());
    assertEquals(Transfers.PARALLEL_PUSHES, ((ThreadPoolExecutor) unset.pushThreads).getMaximumPoolSize());
  }

  /**
   * A start that fails once the HTTP port is bound (the stack refuses a setting) closes what it
   * opened without a failure of its own: the port is free again and no thread of the peer is left.
   */
  @Test
  void start_thatFailsAfterBindingItsPort_letsThePortGo_andAddsNoFailureOfItsOwn() throws Exception {
    String stack;
    try (var in = getClass().getClassLoader().getResourceAsStream(STACK)) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Files.writeString(dir.resolve("bad.xml"), stack.replace("<pbcast.GMS", "<pbcast.GMS no_such_setting=\"1\""));
    Path config = Files.writeString(dir.resolve("bad.json"), "{\"nodeId\": \"p\", \"clusterName\": \""
        + InJvmPeer.clusterName("peer-wiring-bad") + "\", \"jgroupsConfig\": \"bad.xml\"}");
    int port = PeerCluster.freePort();
    Exception e = assertThrows(Exception.class, () -> peers.add(Peer.start(PeerOptions.parse(new String[] {
        "--http-port", Integer.toString(port), "--config", config.toString()}, 0))));
    assertTrue(String.valueOf(e.getMessage()).contains("no_such_setting"), e.toString());
    assertEquals(List.of(), Arrays.asList(e.getSuppressed()), "the start's own cleanup failed");
    try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      assertEquals(port, again.getLocalPort(), "the port is free once the start failed");
    }
  }

  private Peer start(String cluster, String id, int port, String... more) throws IOException {
    Peer peer = startInJvm(dir, cluster, id, port, more);
    peers.add(peer);
    return peer;
  }

  /**
   * A peer started in this JVM as {@code Main} starts one, on the in-memory stack with one copy a
   * key, its settings in a config file written to {@code dir}; {@code more} are further flags.
   */
  static Peer startInJvm(Path dir, String cluster, String id, int port, String... more) throws IOException {
    Path config = Files.writeString(dir.resolve(id + "-" + port + ".json"), "{\"nodeId\": \"" + id
        + "\", \"clusterName\": \"" + cluster + "\", \"jgroupsConfig\": \"" + STACK + "\"}");
    List<String> args = new ArrayList<>(List.of("--http-port", Integer.toString(port), "--config", config.toString(),
        "--replicas", "1"));
    args.addAll(List.of(more));
    return Peer.start(PeerOptions.parse(args.toArray(String[]::new), 0));
  }

  /** Starts a peer with the testing aid {@code property = value}; the property is restored afterwards. */
  private Peer startWith(String property, String value, String cluster, String id, int port) throws IOException {
    String before = System.getProperty(property);
    System.setProperty(property, value);
    try {
      return start(cluster, id, port);
    } finally {
      if (before == null) {
        System.clearProperty(property);
      } else {
        System.setProperty(property, before);
      }
    }
  }

  /** Whether the peer on {@code port} sees {@code members} members, each reporting its ring recently. */
  private boolean agreed(int port, int members) throws Exception {
    JsonNode ring = PeerCluster.parse(send(port, "/ring", HttpRequest.newBuilder()).body());
    return ring.path("agreed").asBoolean() && ring.path("members").size() == members;
  }

  private JsonNode stats(int port) throws Exception {
    HttpResponse<String> r = send(port, "/stats", HttpRequest.newBuilder());
    assertEquals(200, r.statusCode(), r.body());
    return PeerCluster.parse(r.body());
  }

  private List<JsonNode> events(int port) throws Exception {
    HttpResponse<String> r = send(port, "/events/recent", HttpRequest.newBuilder());
    assertEquals(200, r.statusCode(), r.body());
    return StreamSupport.stream(PeerCluster.parse(r.body()).spliterator(), false).toList();
  }

  private HttpResponse<String> send(int port, String path, HttpRequest.Builder request) throws Exception {
    return http.send(request.uri(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
