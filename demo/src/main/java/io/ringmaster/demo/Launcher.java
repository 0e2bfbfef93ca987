package io.ringmaster.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * {@code cluster}: starts peers as child processes of this one (the same jar, {@code peer}
 * command) and reads commands from stdin. Children never outlive the launcher: a shutdown hook
 * stops them, and each child also watches this process's pid and leaves when it is gone, which
 * covers a {@code kill -9} of the launcher.
 */
final class Launcher {
  /**
   * How long a peer started may take to answer as itself at {@code /stats} before the launcher
   * stops it as one that did not start.
   */
  static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
  /** How long the launcher waits for its live peers to agree on one ring, after a start or an add. */
  static final Duration AGREEMENT_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration READY_POLL = Duration.ofMillis(250);
  /**
   * The most keys one {@code load} writes: a peer alone (or each of two, with two replicas) then
   * holds them all in a few hundred bytes each, well within its heap ({@link PeerProcess}).
   */
  static final int MAX_LOAD = 1_000_000;
  /**
   * How long a graceful stop may take before the launcher kills the peer: the longest the peer's
   * shutdown can take with the settings the launcher starts it with. A peer still starting first
   * finishes its start ({@link PeerOptions#START_TIMEOUT}); its leave may then wait for a rejoin
   * under way and for its hand-off (each up to {@link PeerOptions#LEAVE_TIMEOUT}), and closing its
   * channel and threads takes a few seconds more. A peer normally stops within a second or two.
   */
  static final Duration STOP_TIMEOUT =
      PeerOptions.START_TIMEOUT.plus(PeerOptions.LEAVE_TIMEOUT.multipliedBy(2)).plusSeconds(10);
  /** The first port any user may listen on: Linux's setting if there is one, else 1024. */
  static final int UNPRIVILEGED_PORT_START = unprivilegedPortStart();

  static final String HELP = String.join("\n",
      "commands:",
      "  add [n]           start n more peers (1 if not given), up to " + ClusterOptions.MAX_PEERS + " in all",
      "  stop <id>         graceful stop (SIGTERM): the peer hands its keys off, then leaves",
      "  kill <id>         SIGKILL: the peer crashes; survivors restore its keys from the replicas",
      "  put <key> <value> write through a random live peer",
      "  get <key>         read through a random live peer",
      "  load <n>          write n keys (up to 1000000) concurrently, with a progress bar and keys/s",
      "  split <id> [...]  cut the peers listed off from the others: a network partition on this machine",
      "  heal              end the split: the two sides hear each other again and merge",
      "  status            members, key counts per peer, and whether all peers agree on the ring",
      "  help              this list",
      "  quit              stop all peers and exit");

  private final ClusterOptions options;
  private final PrintStream out;
  private final PrintStream err;
  /** How long each peer started is given to answer as itself: {@link #READY_TIMEOUT}, unless made with another. */
  private final Duration readyTimeout;
  /** The peers started, by id; guarded by itself (package-private for tests). */
  final Map<String, PeerProcess> peers = new LinkedHashMap<>();
  private boolean closing; // guarded by peers: set by stopAll, after which spawn starts nothing
  private final CountDownLatch allStopped = new CountDownLatch(1);
  /** Peers this launcher asked to stop: any other exit is reported as it happens. */
  private final Set<String> stopping = ConcurrentHashMap.newKeySet();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2)).build();
  private final Splits splits;
  private Path logDir;
  private int nextIndex = 1;
  private int nextPort;
  /** Whether a peer could not start because this user may not listen on a port from --base-port. */
  private boolean basePortRefused;

  Launcher(ClusterOptions options, PrintStream out, PrintStream err) {
    this(options, out, err, READY_TIMEOUT);
  }

  /**
   * A launcher that gives each peer it starts up to {@code readyTimeout}, instead of
   * {@link #READY_TIMEOUT}, to answer as itself; one that has not by then is stopped, as one that
   * did not start.
   */
  Launcher(ClusterOptions options, PrintStream out, PrintStream err, Duration readyTimeout) {
    this.options = options;
    this.out = out;
    this.err = err;
    this.readyTimeout = readyTimeout;
    this.nextPort = options.basePort();
    this.splits = new Splits(http, out);
  }

  int run(InputStream stdin) {
    try {
      logDir = options.logDir().isPresent() ? Files.createDirectories(options.logDir().get())
          : Files.createTempDirectory("ringmaster-demo-logs-");
    } catch (IOException e) {
      if (options.logDir().isPresent()) { // the command line's fault: exit 2, as for any bad flag
        err.println("error: --log-dir " + options.logDir().get() + ": cannot create the directory: " + e);
        err.println("usage: " + ClusterOptions.USAGE);
        return 2;
      }
      err.println("error: cannot create a temporary log directory: " + e);
      return 1;
    }
    if (options.logDir().isPresent()) {
      try { // a directory that exists but takes no files would fail each peer's start with only a path
        Files.delete(Files.createTempFile(logDir, ".write-check-", ""));
      } catch (IOException e) {
        err.println("error: --log-dir " + options.logDir().get() + ": cannot write a file in the directory: " + e);
        err.println("usage: " + ClusterOptions.USAGE);
        return 2;
      }
    }
    Thread stopHook = new Thread(this::stopAll, "stop-peers");
    Runtime.getRuntime().addShutdownHook(stopHook);
    out.println("cluster \"" + options.cluster() + "\", " + options.peers() + (options.peers() == 1 ? " peer" : " peers")
        + ", replicas " + options.replicas() + "; peer logs in " + logDir);
    // The first peer alone: started together, several would each wait out the join timeout and
    // form singletons that merge only seconds later.
    if (add(1).isEmpty() && !isStopping()) {
      unhook(stopHook); // no peer started: nothing to stop
      removeTemporaryLogDirIfEmpty();
      if (basePortRefused) { // the command line's fault: exit 2, as for any bad flag
        err.println("usage: " + ClusterOptions.USAGE);
        return 2;
      }
      return 1;
    }
    if (!isStopping()) {
      add(options.peers() - 1);
    }
    if (isStopping()) { // Ctrl-C while the peers started: the shutdown hook stops them
      removeTemporaryLogDirIfEmpty(); // none started yet, say
      return 130;
    }
    awaitAgreement(AGREEMENT_TIMEOUT);
    out.println("open " + first().map(PeerProcess::url).orElse("?") + "/ in a browser; type help for commands");
    try (BufferedReader in = new BufferedReader(new InputStreamReader(stdin, StandardCharsets.UTF_8))) {
      out.print("> ");
      out.flush();
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (!command(line.strip())) {
          break;
        }
        out.print("> ");
        out.flush();
      }
    } catch (IOException e) {
      err.println("error reading commands: " + e);
    }
    stopAll();
    unhook(stopHook);
    return 0;
  }

  /**
   * Takes the shutdown hook back once every peer is stopped, so that a JVM running launchers one
   * after another (a test's) does not gather hooks, each holding its launcher; nothing if the JVM
   * is already shutting down (the hook runs, or has run).
   */
  private static void unhook(Thread hook) {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook stops the peers, or has
    }
  }

  /** Runs one command; false to quit. */
  boolean command(String line) {
    String[] words = line.split("\\s+", 3);
    String arg = words.length > 1 ? words[1] : "";
    int takes = switch (words[0]) {
      case "status", "help", "quit", "exit", "heal" -> 0;
      case "add", "stop", "kill", "get", "load" -> 1;
      default -> 2; // put: a key, then the rest of the line as the value; split: any number of ids
    };
    if (words.length > takes + 1) {
      String extra = line.split("\\s+", takes + 2)[takes + 1];
      out.println("\"" + words[0] + "\" takes " + (takes == 0 ? "no argument" : "one argument") + "; not understood: "
          + Flags.quoted(extra) + "; type help");
      return true;
    }
    switch (words[0]) {
      case "" -> { }
      case "help" -> out.println(HELP);
      case "add" -> addPeers(arg);
      case "stop" -> peer(arg).ifPresent(p -> stop(p, false));
      case "kill" -> peer(arg).ifPresent(p -> stop(p, true));
      case "put" -> {
        if (words.length < 3) {
          out.println("usage: put <key> <value>");
        } else {
          request("PUT", words[1], words[2]);
        }
      }
      case "get" -> {
        if (arg.isEmpty()) {
          out.println("usage: get <key>");
        } else {
          request("GET", arg, null);
        }
      }
      case "load" -> load(arg);
      case "split" -> splits.split(line.substring("split".length()), live(), started());
      case "heal" -> {
        if (splits.heal(live())) {
          awaitAgreement(AGREEMENT_TIMEOUT);
        }
      }
      case "status" -> {
        new ClusterStatus(http, out).print(live(), gone());
        splits.printSides(live());
      }
      case "quit", "exit" -> {
        return false;
      }
      default -> out.println("unknown command " + Flags.quoted(words[0]) + "; type help");
    }
    return true;
  }

  /**
   * Starts {@code n} peers at once and waits until each serves HTTP; returns those that do. Ids
   * that the ring already holds (peers started by hand, as its live peers see it) are skipped: the
   * cluster would refuse a second member with one of them.
   */
  private List<PeerProcess> add(int n) {
    Set<String> taken = new ClusterStatus(http, out).ringIds(live());
    List<PeerProcess> started = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      try {
        started.add(spawn(taken));
      } catch (IOException e) {
        if (isStopping()) {
          break; // Ctrl-C, say: stopAll says what it stops
        }
        // The class too, as some say only a path; not that of a refusal of ours, which says it all.
        err.println("error: cannot start a peer: " + (e instanceof PortNotAllowed ? e.getMessage() : e));
        basePortRefused |= e instanceof PortNotAllowed;
        if (e instanceof PortNotAllowed) {
          break; // the same for every other peer
        }
      }
    }
    List<PeerProcess> ready = new ArrayList<>();
    List<PeerProcess> slow = new ArrayList<>();
    for (PeerProcess p : started) {
      if (isStopping()) {
        return ready; // stopAll (Ctrl-C, say) stops them all and says so
      }
      if (awaitReady(p)) {
        out.println(p.id() + " ready at " + p.url() + "/  (log " + p.log() + ")");
        reportUnexpectedExit(p);
        ready.add(p);
      } else if (!isStopping()) {
        stopping.add(p.id());
        out.println(p.id() + " did not start" + (p.isAlive() ? "; stopping it" : " (exit code "
            + p.process().exitValue() + ")") + lastLine(p.log(), "error:").map(l -> ": " + l).orElse("") + "; see "
            + p.log());
        if (p.isAlive()) {
          p.process().destroy();
          slow.add(p);
        }
      }
    }
    awaitStopped(slow);
    return ready;
  }

  /**
   * Waits for peers sent SIGTERM to stop, together up to {@link #STOP_TIMEOUT}, then kills those
   * still running. A peer that did not get ready in time is stopped this way too, not killed at
   * once: it may have joined already and taken keys that old owners handed it and dropped (with one
   * replica, its copy is the only one). Returns the ids of those it killed.
   */
  private List<String> awaitStopped(List<PeerProcess> terminated) {
    long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
    List<String> killed = new ArrayList<>();
    for (PeerProcess p : terminated) {
      try {
        long left = Math.max(1, deadline - System.nanoTime());
        if (!p.process().waitFor(left, TimeUnit.NANOSECONDS)) {
          out.println(p.id() + " did not stop within " + STOP_TIMEOUT.toSeconds() + " s; killing it");
          p.process().destroyForcibly();
          killed.add(p.id());
        }
      } catch (InterruptedException e) {
        p.process().destroyForcibly();
        killed.add(p.id());
        Thread.currentThread().interrupt();
      }
    }
    return killed;
  }

  private boolean isStopping() {
    synchronized (peers) {
      return closing;
    }
  }

  private PeerProcess spawn(Set<String> taken) throws IOException {
    int port = freePort();
    synchronized (peers) { // with stopAll: a peer started is either in its list or not started at all
      if (closing) {
        throw new IOException("the launcher is stopping");
      }
      String id = "peer-" + nextIndex++;
      for (; taken.contains(id); id = "peer-" + nextIndex++) {
        out.println(id + " is in the ring already (a peer started by hand); skipping that id");
      }
      PeerProcess p = PeerProcess.start(id, port, options, logDir);
      peers.put(p.id(), p);
      return p;
    }
  }

  /** Once a peer serves: says so if it exits when this launcher did not stop it. */
  private void reportUnexpectedExit(PeerProcess p) {
    p.process().onExit().thenRun(() -> {
      if (!stopping.contains(p.id())) { // killed from another shell, out of memory, or a crash
        out.println(p.id() + " exited by itself (exit code " + p.process().exitValue() + "); see " + p.log());
      }
    });
  }

  private boolean awaitReady(PeerProcess p) {
    // Every 250 ms: a joining peer answers 503 at once, and the peer's JVM is busy joining.
    return Waits.until(() -> !p.isAlive() || answersAs(http, p.url(), p.id()) || Thread.currentThread().isInterrupted(),
        readyTimeout, READY_POLL) && p.isAlive();
  }

  /**
   * Whether the peer {@code id} answers at {@code url}: its {@code /stats}, with its id. Another
   * process that took the port first (a second launcher's peer, started at the same moment) answers
   * with another id, and the peer started here exits once it fails to bind. An interrupt is kept.
   */
  static boolean answersAs(HttpClient http, String url, String id) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/stats"))
          .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 && Json.tree(r.body()).path("id").asText().equals(id);
    } catch (IOException | RuntimeException e) { // not up yet, or not a peer's JSON
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** The temporary log directory made for this run, removed if no peer wrote a log in it. */
  private void removeTemporaryLogDirIfEmpty() {
    if (options.logDir().isEmpty()) {
      try {
        Files.deleteIfExists(logDir);
      } catch (IOException notEmpty) {
        // A peer that failed wrote its log there: kept, where the start said the logs would be.
      }
    }
  }

  /**
   * Waits until all live peers are in one ring. Peers that start together can form separate rings
   * that merge seconds later; writes in between would be resolved by the merge, but a demo should
   * start from one ring. Says which it found, after at most {@code limit}.
   */
  void awaitAgreement(Duration limit) {
    List<PeerProcess> live = live();
    if (live.isEmpty()) {
      return;
    }
    ClusterStatus status = new ClusterStatus(http, out);
    // Every 250 ms, as awaitReady: each /stats counts the keys a peer holds, and the peers are busy
    // moving them meanwhile.
    if (Waits.until(() -> status.agree(live, gone()), limit, READY_POLL)) {
      out.println(live.size() == 1 ? "ring: " + live.get(0).id() + " is in the ring" : "ring: all " + live.size()
          + " peers agree");
    } else {
      out.println("ring: the peers are not in one ring yet; type status to check");
    }
  }

  /** A port this user may not listen on: every other peer would fail on it too. */
  static final class PortNotAllowed extends IOException {
    PortNotAllowed(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * The next port from the last one used that nothing on 127.0.0.1 listens on, past the peers'
   * cluster ports (a peer started later would find its own taken); past 65535 the search goes on
   * from {@code --base-port}, so the ports of peers stopped since are used again, never the port
   * of a peer still running (one just started may not listen on it yet). A privileged port
   * this user may not listen on is an error naming {@code --base-port}, not a reason to go on to a
   * port the user did not choose; any other port that cannot be bound is taken for busy.
   */
  int freePort() throws IOException {
    ClusterOptions.ClusterPorts cluster = ClusterOptions.clusterPorts(System.getProperties());
    Set<Integer> given = live().stream().map(PeerProcess::port).collect(Collectors.toSet());
    int base = options.basePort();
    int span = 65536 - base;
    for (int i = 0; i < span; i++) {
      int port = base + (nextPort - base + i) % span;
      if (cluster.contains(port) || given.contains(port)) {
        continue;
      }
      try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        nextPort = probe.getLocalPort() + 1;
        return port;
      } catch (IOException e) {
        // Privileged, or busy: the exception's text depends on the system's language, so the port
        // tells them apart (a busy privileged port is reported too, with the system's reason).
        if (port < UNPRIVILEGED_PORT_START) {
          throw new PortNotAllowed("--base-port " + options.basePort() + ": cannot listen on 127.0.0.1:" + port
              + " (ports below " + UNPRIVILEGED_PORT_START + " may need privileges): " + e.getMessage(), e);
        }
      }
    }
    throw new IOException("no free port on 127.0.0.1 from --base-port " + base + " to 65535");
  }

  /**
   * The lowest port a user without privileges may listen on: Linux's setting, else 1024. Read a
   * line at a time: procfs reports the file's size as 0, so {@code Files.readString} reads one
   * byte first, and the kernel answers a setting's read from any later offset with end of file
   * ("1" instead of "1024", and no port would ever count as privileged).
   */
  private static int unprivilegedPortStart() {
    try {
      return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/net/ipv4/ip_unprivileged_port_start")).get(0).strip());
    } catch (IOException | RuntimeException notLinux) {
      return 1024;
    }
  }

  private void stop(PeerProcess p, boolean kill) {
    long started = System.nanoTime();
    stopping.add(p.id());
    if (kill) {
      p.process().destroyForcibly();
    } else {
      p.process().destroy();
    }
    try {
      if (!p.process().waitFor(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        out.println(p.id() + " did not stop within " + STOP_TIMEOUT.toSeconds() + " s; killing it");
        p.process().destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    long millis = (System.nanoTime() - started) / 1_000_000;
    int code = p.process().exitValue();
    if (kill) {
      out.printf("%s killed with SIGKILL (%d ms); %s%n", p.id(), millis, options.replicas() > 1
          ? "the others restore its keys from the replicas"
          : "with --replicas 1 the keys only it held are gone");
    } else if (code == 143 || code == 0) { // 143: a JVM ended by SIGTERM after its shutdown hook ran
      out.println(stopVerdict(p, millis, lastLine(p.log(), p.id() + " left the cluster")));
    } else {
      out.printf("%s stopped with exit code %d after %d ms; see %s%n", p.id(), code, millis, p.log());
    }
  }

  /**
   * What a peer that exited after SIGTERM did, from its last words: it left, handing off what it
   * could (with nobody left, or out of time, not all), or it never said so (its leave failed: its
   * shutdown hook threw before that line, and the JVM exits 143 all the same).
   */
  static String stopVerdict(PeerProcess p, long millis, Optional<String> leftLine) {
    return leftLine.map(l -> p.id() + " left gracefully in " + millis + " ms"
            + (l.contains("keys handed off") ? ": " + l.substring(l.indexOf("keys handed off")) : ""))
        .orElse(p.id() + " stopped after " + millis + " ms without reporting a finished leave: its keys may"
            + " not have been handed off; see " + p.log());
  }

  /**
   * Stops every live peer: SIGTERM to all, then SIGKILL to any still running after
   * {@link #STOP_TIMEOUT}, the time {@code stop} gives one peer: peers stopped together have nobody
   * to hand their keys to and leave at once, but with a peer started by hand still in the ring they
   * hand their keys off to it first, which must not be cut short. Runs once: a second call (the
   * shutdown hook after {@code quit}, or a Ctrl-C during {@code quit}) waits for the first.
   */
  private void stopAll() {
    List<PeerProcess> all;
    synchronized (peers) {
      if (closing) {
        all = null;
      } else {
        closing = true;
        all = new ArrayList<>(peers.values());
      }
    }
    if (all == null) {
      try {
        allStopped.await(STOP_TIMEOUT.toSeconds() + 10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return;
    }
    try {
      all.forEach(p -> stopping.add(p.id()));
      List<PeerProcess> alive = all.stream().filter(PeerProcess::isAlive).toList();
      if (!alive.isEmpty()) { // on quit, end of input, or Ctrl-C (from the shutdown hook): say what the wait is
        out.println("stopping " + alive.size() + (alive.size() == 1 ? " peer" : " peers") + " (each hands its keys"
            + " to the peers that stay, if any; up to " + STOP_TIMEOUT.toSeconds() + " s)");
        out.flush();
      }
      alive.forEach(p -> p.process().destroy());
      List<String> killed = awaitStopped(alive);
      if (!alive.isEmpty()) {
        out.println(killed.isEmpty() ? (alive.size() == 1 ? "the peer stopped" : "all " + alive.size() + " peers stopped")
            : (alive.size() - killed.size()) + " of " + alive.size() + " peers stopped; killed " + String.join(", ", killed));
        out.flush();
      }
    } finally {
      allStopped.countDown();
    }
  }

  /**
   * The last line of a peer's log that starts with {@code prefix}, written by its latest run (after
   * the last {@link PeerProcess#RUN_MARK} line), if the log can be read. Read a line at a time (a
   * log reused across runs can be large), bytes that are not UTF-8 replaced rather than refused.
   */
  static Optional<String> lastLine(Path log, String prefix) {
    try (BufferedReader in = new BufferedReader(
        new InputStreamReader(Files.newInputStream(log), StandardCharsets.UTF_8))) {
      Optional<String> found = Optional.empty();
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.startsWith(PeerProcess.RUN_MARK)) {
          found = Optional.empty();
        } else if (line.startsWith(prefix)) {
          found = Optional.of(line);
        }
      }
      return found;
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private Optional<PeerProcess> peer(String id) {
    PeerProcess p;
    synchronized (peers) {
      p = peers.get(id);
    }
    if (p == null || !p.isAlive()) {
      out.println(id.isEmpty() ? "which peer? live: " + ids(live())
          : "no live peer " + Flags.quoted(id) + "; live: " + ids(live()));
      return Optional.empty();
    }
    return Optional.of(p);
  }

  private List<PeerProcess> live() {
    synchronized (peers) {
      return peers.values().stream().filter(PeerProcess::isAlive).toList();
    }
  }

  /** The ids of every peer this launcher started, live or exited. */
  private Set<String> started() {
    synchronized (peers) {
      return Set.copyOf(peers.keySet());
    }
  }

  /** The ids of the peers this launcher started that have exited. */
  private Set<String> gone() {
    synchronized (peers) {
      return peers.values().stream().filter(p -> !p.isAlive()).map(PeerProcess::id).collect(Collectors.toSet());
    }
  }

  private Optional<PeerProcess> first() {
    return live().stream().findFirst();
  }

  private static List<String> ids(List<PeerProcess> ps) {
    return ps.stream().map(PeerProcess::id).toList();
  }

  private void request(String method, String key, String value) {
    List<PeerProcess> live = live();
    if (live.isEmpty()) {
      out.println("no live peers; add one");
      return;
    }
    PeerProcess via = live.get(ThreadLocalRandom.current().nextInt(live.size()));
    String path = "/kv/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(via.url() + path)).timeout(Duration.ofSeconds(15));
    b = value == null ? b.GET() : b.PUT(HttpRequest.BodyPublishers.ofString(value, StandardCharsets.UTF_8));
    try {
      HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      out.println(r.statusCode() + " via " + via.id() + ": " + r.body());
    } catch (IOException e) {
      out.println("request to " + via.id() + " failed: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** {@code add [n]}: starts n more peers, if that leaves at most {@link ClusterOptions#MAX_PEERS} running. */
  private void addPeers(String arg) {
    if (splits.sides().isPresent()) {
      // Nobody would drop its messages: it would hear both sides, and each would take it in.
      out.println("a split is in force: a new peer would hear both sides; type heal first");
      return;
    }
    // The localhost stack discovers peers on TCP ports 7800-7819: a 21st would be alone.
    int room = ClusterOptions.MAX_PEERS - live().size();
    if (room <= 0) {
      out.println("at most " + ClusterOptions.MAX_PEERS + " peers run at once; stop one first");
      return;
    }
    int n = arg.isEmpty() ? 1 : wholeNumber(arg);
    if (n < 1 || n > room) {
      out.println("add takes a whole number of peers from 1 to " + room + " (at most " + ClusterOptions.MAX_PEERS
          + " run at once): " + Flags.shown(arg));
      return;
    }
    if (live().isEmpty() && n > 1) {
      // The first alone, as at the start: started together, they would form singletons.
      if (add(1).isEmpty()) {
        return;
      }
      n--;
    }
    if (!add(n).isEmpty()) { // none started: no ring to wait for
      awaitAgreement(AGREEMENT_TIMEOUT);
    }
  }

  /** {@code arg} as an int, or -1 if it is not one. */
  private static int wholeNumber(String arg) {
    try {
      return Integer.parseInt(arg);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private void load(String arg) {
    int n = wholeNumber(arg);
    if (n < 1 || n > MAX_LOAD) {
      out.println("load takes a whole number of keys from 1 to " + MAX_LOAD + ": " + Flags.shown(arg));
      return;
    }
    List<String> urls = live().stream().map(PeerProcess::url).toList();
    if (urls.isEmpty()) {
      out.println("no live peers; add one");
      return;
    }
    new LoadGenerator(urls, out).run(n);
  }
}
