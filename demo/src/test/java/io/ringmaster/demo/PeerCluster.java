package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.ringmaster.RingmasterConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Real peers as separate processes on 127.0.0.1, started from the test's class path. Their JGroups
 * ports are 7830-7849 (not the demo's 7800), so a demo running on this machine does not see them,
 * and each cluster has a name of its own. Output goes to {@code target/peer-logs/<test>/<id>.log}.
 * {@link #close()} kills every process it started.
 *
 * <p>Peers run the demo's stack with a more patient failure detector ({@link #patientStack}): on
 * a shared 2-core machine running five peer JVMs and the test's writers, a peer starved of CPU for
 * the shipped 3 s would be suspected, excluded and merged back, which tests of clean leaves and
 * rings do not expect. A killed peer is still noticed at once (its sockets close).
 */
final class PeerCluster implements AutoCloseable {
  static final int JGROUPS_PORT = 7830;
  private static final AtomicInteger CLUSTERS = new AtomicInteger();
  /** The peers' HTTP ports: 25000-25999, which no other test uses. */
  private static final int HTTP_PORTS = 25_000;
  private static final int HTTP_PORTS_COUNT = 1_000;
  private static final AtomicInteger NEXT_HTTP_PORT = new AtomicInteger();
  private static final ObjectMapper JSON = new ObjectMapper();

  record TestPeer(String name, int httpPort, Process process, Path log) {
    String url() {
      return "http://127.0.0.1:" + httpPort;
    }
  }

  private final String cluster;
  private final int replicas;
  private final Path logDir;
  /** The node config that names {@link #patientStack}, for peers started without a {@code --config}. */
  private final Path patientConfig;
  private final Map<String, TestPeer> peers = new LinkedHashMap<>();
  /** Set by {@link #close()}, under the lock of {@code peers}. */
  private boolean closed;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();

  PeerCluster(String test, int replicas) throws IOException {
    this.cluster = "demo-test-" + test + "-" + ProcessHandle.current().pid() + "-" + CLUSTERS.incrementAndGet();
    this.replicas = replicas;
    this.logDir = Files.createDirectories(Path.of("target", "peer-logs", test));
    this.patientConfig = config(logDir.resolve("patient"), patientStack());
  }

  /** The JGroups cluster name its peers join. */
  String name() {
    return cluster;
  }

  /** Starts the first peer alone and waits for it, then the others together. */
  void startAll(String... ids) throws IOException {
    awaitReady(start(ids[0]));
    List<TestPeer> rest = new ArrayList<>();
    for (int i = 1; i < ids.length; i++) {
      rest.add(start(ids[i]));
    }
    rest.forEach(this::awaitReady);
  }

  /** Starts a peer process, with {@code peerFlags} added to its command line. */
  TestPeer start(String id, String... peerFlags) throws IOException {
    return start(id, id, Map.of(), peerFlags);
  }

  /**
   * Starts a peer process known to this class as {@code name} (its log, {@link #peer}) with the node
   * id {@code id}, so that two peers can share an id; {@code properties} override the system
   * properties of its JGroups stack ({@code ringmaster.bind_port}, {@code ringmaster.initial_hosts})
   * and the peer's {@link TestingAids}. Peers start without read repair
   * ({@link TestingAids#NO_READ_REPAIR}): a test that reads its keys and then counts their copies
   * must see what the migrations did, not what its reads repaired.
   */
  TestPeer start(String name, String id, Map<String, String> properties, String... peerFlags) throws IOException {
    int port = freePort();
    Path log = logDir.resolve(name + ".log");
    Map<String, String> props = new LinkedHashMap<>();
    props.put("ringmaster.bind_port", Integer.toString(JGROUPS_PORT));
    props.put("ringmaster.initial_hosts", "127.0.0.1[" + JGROUPS_PORT + "]");
    props.put(TestingAids.NO_READ_REPAIR, "true");
    boolean joining;
    synchronized (peers) {
      joining = peers.values().stream().anyMatch(other -> other.process().isAlive());
    }
    if (joining) {
      // A peer started while another of this cluster runs waits up to 5 s, not 1 s, for the
      // cluster to answer its join (every stack here reads it: the demo's, and those made from
      // it). A joiner's JVM, just started on a loaded machine, that hears nothing within 1 s
      // founds a cluster of its own, merged seconds later: a merge repair then pushes it copies
      // where a test expects a join and its pulls (one that does hear the coordinator joins at
      // once, whatever the timeout). A peer meant to start alone is given 1 s back.
      props.put("ringmaster.join_timeout", "5s");
    }
    props.putAll(properties);
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Djava.net.preferIPv4Stack=true", "-XX:+UseSerialGC", "-Xmx256m", "-XX:TieredStopAtLevel=1"));
    props.forEach((k, v) -> command.add("-D" + k + "=" + v));
    command.addAll(List.of("-cp", System.getProperty("java.class.path"),
        Main.class.getName(), "peer", "--id", id, "--http-port", Integer.toString(port),
        "--replicas", Integer.toString(replicas), "--cluster", cluster));
    if (!List.of(peerFlags).contains("--config")) {
      command.addAll(List.of("--config", patientConfig.toString()));
    }
    if (!List.of(peerFlags).contains("--parent-pid")) {
      // A test JVM that dies (killed, or the IDE's stop button) takes its peers with it.
      command.addAll(List.of("--parent-pid", Long.toString(ProcessHandle.current().pid())));
    }
    command.addAll(List.of(peerFlags));
    Process p = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.to(log.toFile())).start();
    TestPeer peer = new TestPeer(name, port, p, log);
    synchronized (peers) {
      peers.put(name, peer);
      if (closed) { // a test thread abandoned at its timeout, starting a peer after the cluster closed
        p.destroyForcibly();
        throw new IllegalStateException("cluster " + cluster + " is closed: peer " + name + " not started");
      }
    }
    return peer;
  }

  /**
   * A node config for the demo's stack (with the patient failure detector every peer here has)
   * whose discovery answers with every address it knows, so that
   * a partition made of ports can heal: a peer alone at port 7860, looking only at 7850, finds the
   * others through whichever peer binds 7850 later. Its MERGE3 looks for subgroups every 1.6 s
   * instead of the shipped 8 s: the tests of a heal wait for what the merge does, not for when it
   * comes.
   */
  static Path healableConfig(Path dir) throws IOException {
    String healable = replace(patientStack(), "<TCPPING async_discovery=\"true\"",
        "<TCPPING async_discovery=\"true\" return_entire_cache=\"true\"");
    return config(dir, replace(healable, "<MERGE3 min_interval=\"2s\" max_interval=\"5s\"/>",
        "<MERGE3 min_interval=\"500ms\" max_interval=\"1s\"/>"));
  }

  /**
   * The demo's stack, its failure detector suspecting a silent peer after 10 s instead of 3 s, and
   * checking a suspicion for 1 s instead of 0.25 s (see the class comment).
   */
  static String patientStack() throws IOException {
    String stack;
    try (InputStream in = RingmasterConfig.class.getClassLoader()
        .getResourceAsStream(RingmasterConfig.DEFAULT_JGROUPS_CONFIG)) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    stack = replace(stack, "<FD_ALL3 timeout=\"${ringmaster.fd.timeout:3s}\"", "<FD_ALL3 timeout=\"10s\"");
    return replace(stack, "<VERIFY_SUSPECT2 timeout=\"${ringmaster.verify_suspect.timeout:250ms}\"",
        "<VERIFY_SUSPECT2 timeout=\"1s\"");
  }

  private static String replace(String stack, String setting, String by) {
    if (!stack.contains(setting)) {
      throw new AssertionError("the demo's stack has no " + setting);
    }
    return stack.replace(setting, by);
  }

  /** Writes {@code stack} and a node config naming it into {@code dir}; the config's path. */
  private static Path config(Path dir, String stack) throws IOException {
    Files.createDirectories(dir);
    Path xml = Files.writeString(dir.resolve("stack.xml"), stack);
    return Files.writeString(dir.resolve("node.json").toAbsolutePath(),
        "{\"jgroupsConfig\": \"" + xml.toAbsolutePath().toString().replace("\\", "\\\\") + "\"}");
  }

  /** {@code base} with more system properties, given as name, value, name, value ... */
  static Map<String, String> with(Map<String, String> base, String... more) {
    Map<String, String> out = new HashMap<>(base);
    for (int i = 0; i < more.length; i += 2) {
      out.put(more[i], more[i + 1]);
    }
    return out;
  }

  /**
   * Writes {@code count} keys through peer {@code via}, each {@code keyPrefix + i} with the value
   * {@code valuePrefix} + its key, each acknowledged (200); returns the keys in order.
   */
  List<String> putKeys(String via, String keyPrefix, String valuePrefix, int count) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String key = keyPrefix + i;
      HttpResponse<String> r = put(via, key, valuePrefix + key);
      assertEquals(200, r.statusCode(), () -> "put " + key + " via " + via + ": " + r.body());
      keys.add(key);
    }
    return keys;
  }

  /** Which of {@code keys} peer {@code id} holds no copy of (its {@code ?local=true} reads). */
  TreeSet<String> missingOn(String id, List<String> keys) {
    TreeSet<String> missing = new TreeSet<>();
    for (String key : keys) {
      HttpResponse<String> r = send(id, HttpRequest.newBuilder(uri(id, keyPath(key) + "?local=true")));
      if (r.statusCode() != 200) {
        missing.add(key);
      }
    }
    return missing;
  }

  void awaitReady(TestPeer peer) {
    await("peer " + peer.name() + " serving HTTP (log " + peer.log() + ")").atMost(Duration.ofSeconds(60))
        // A connection that fails (not listening yet) or a 503 (joining) is waited out: a peer that
        // exited fails at once.
        .pollInterval(Duration.ofMillis(100)).ignoreExceptionsInstanceOf(UncheckedIOException.class)
        .until(() -> {
          if (!peer.process().isAlive()) {
            throw new AssertionError(peer.name() + " exited with " + peer.process().exitValue() + "; see " + peer.log());
          }
          return send(peer.name(), HttpRequest.newBuilder(uri(peer.name(), "/stats")).GET()).statusCode() == 200;
        });
  }

  void kill(String id) {
    peer(id).process().destroyForcibly();
  }

  /** SIGTERM, then waits for the graceful leave to finish. */
  int stop(String id) throws InterruptedException {
    Process p = peer(id).process();
    p.destroy();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      throw new AssertionError(id + " did not stop within 60 s");
    }
    return p.exitValue();
  }

  TestPeer peer(String id) {
    synchronized (peers) {
      TestPeer p = peers.get(id);
      if (p == null) {
        throw new IllegalArgumentException("no peer " + id);
      }
      return p;
    }
  }

  List<String> live() {
    synchronized (peers) {
      return peers.values().stream().filter(p -> p.process().isAlive()).map(TestPeer::name).toList();
    }
  }

  URI uri(String id, String path) {
    return URI.create(peer(id).url() + path);
  }

  static String keyPath(String key) {
    return "/kv/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
  }

  HttpResponse<String> send(String id, HttpRequest.Builder request) {
    try {
      return http.send(request.timeout(Duration.ofSeconds(20)).build(),
          HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(id + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  HttpResponse<String> put(String id, String key, String value) {
    return send(id, HttpRequest.newBuilder(uri(id, keyPath(key)))
        .PUT(HttpRequest.BodyPublishers.ofString(value, StandardCharsets.UTF_8)));
  }

  HttpResponse<String> get(String id, String key) {
    return send(id, HttpRequest.newBuilder(uri(id, keyPath(key))).GET());
  }

  JsonNode json(String id, String path) {
    HttpResponse<String> r = send(id, HttpRequest.newBuilder(uri(id, path)).GET());
    assertEquals(200, r.statusCode(), () -> id + " " + path + ": " + r.body());
    return parse(r.body());
  }

  static JsonNode parse(String body) {
    try {
      return JSON.readTree(body);
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + body, e);
    }
  }

  /**
   * Waits until the peers form one ring of exactly them, agree on its checksum, and have no
   * migration running or queued, no failed pull waiting to be tried again, and no stray key left.
   */
  void awaitSettled(List<String> ids, Duration atMost) {
    await("peers " + ids + " settled").atMost(atMost).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> settled(ids));
  }

  private boolean settled(List<String> ids) {
    Set<String> checksums = new HashSet<>();
    for (String id : ids) {
      JsonNode s = json(id, "/stats");
      if (s.path("members").asInt() != ids.size() || s.path("migrationsInProgress").asInt() != 0
          || s.path("pendingCallbacks").asInt() != 0 || s.path("pullRetriesPending").asInt() != 0
          || s.path("strayKeys").asLong() != 0) {
        return false;
      }
      checksums.add(s.path("viewId").asLong() + "/" + s.path("checksum").asText());
    }
    return checksums.size() == 1;
  }

  /** Each key held as primary, by the peer holding it, from every peer's {@code /keys?role=primary}. */
  Map<String, String> primaryHolders(List<String> ids) {
    Map<String, String> holder = new LinkedHashMap<>();
    for (String id : ids) {
      for (JsonNode k : json(id, "/keys?role=primary").path("keys")) {
        String previous = holder.put(k.asText(), id);
        if (previous != null) {
          throw new AssertionError("key " + k.asText() + " is primary on both " + previous + " and " + id);
        }
      }
    }
    return holder;
  }

  /** The peer's {@code /events} stream, held open as a browser tab would; reads time out after 10 s. */
  Socket openEvents(String name) throws IOException {
    Socket s = new Socket("127.0.0.1", peer(name).httpPort());
    try {
      s.setSoTimeout(10_000);
      s.getOutputStream().write("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      return s;
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /**
   * A free port for a peer's HTTP API (or the browser test's driver), from {@link #HTTP_PORTS}:
   * below the kernel's ephemeral range (32768 and up here), so that no outgoing connection (the
   * peers' own JGroups connections open many) takes it between this check and the bind, as one
   * did to a port the kernel handed out. Each call moves on, so that peers started together get
   * different ports.
   */
  static int freePort() throws IOException {
    for (int tries = 0; tries < HTTP_PORTS_COUNT; tries++) {
      int port = HTTP_PORTS + Math.floorMod(NEXT_HTTP_PORT.getAndIncrement(), HTTP_PORTS_COUNT);
      try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        return s.getLocalPort();
      } catch (IOException taken) {
        // in use: the next one
      }
    }
    throw new IOException("no free port in " + HTTP_PORTS + ".." + (HTTP_PORTS + HTTP_PORTS_COUNT - 1));
  }

  @Override
  public void close() {
    List<TestPeer> all;
    synchronized (peers) {
      closed = true; // a start after this stops its peer itself
      all = new ArrayList<>(peers.values());
    }
    for (TestPeer p : all) {
      p.process().destroyForcibly();
    }
    for (TestPeer p : all) {
      try {
        p.process().waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
