package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher ({@code cluster}) as a user runs it: a process of its own that starts its peers as
 * child processes and reads commands from stdin. Its HTTP ports start at 26000, which no other
 * test uses; its peers find the cluster on {@link PeerCluster}'s JGroups ports, through the system
 * properties the launcher hands on to them.
 */
class LauncherProcessTest extends WithPeerCluster {
  /**
   * The timeout of the test whose peers watch stand-in launchers rather than this JVM, and how long
   * the stand-ins live: should this JVM die, its peers still leave within it.
   */
  private static final int STAND_IN_SECONDS = 120;
  /**
   * A more patient failure detector for the launcher's peers, which it passes on to them (as
   * {@link PeerCluster}'s peers have): five JVMs on a shared 2-core machine, one starved for the
   * shipped 3 s would be suspected and merged back, and the launcher judges the ring once.
   */
  private static final String PATIENT_FD = "-Dringmaster.fd.timeout=10s";
  private static final String PATIENT_VERIFY = "-Dringmaster.verify_suspect.timeout=1s";
  private static final String NL = System.lineSeparator();
  private Process launcher;
  private final StringBuffer output = new StringBuffer();
  private final List<ProcessHandle> children = new ArrayList<>();

  @AfterEach
  void killTheLauncherAndItsPeers() throws InterruptedException {
    if (launcher != null) {
      launcher.descendants().forEach(children::add);
      launcher.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
    // And what they started, even where the test failed before it could list it (the stand-in
    // launcher's background sleep, say).
    for (ProcessHandle child : List.copyOf(children)) {
      child.descendants().filter(d -> !children.contains(d)).forEach(children::add);
    }
    for (ProcessHandle child : children) {
      child.destroyForcibly();
      if (!Main.exitedUnreaped(child.pid())) { // a zombie is gone already; whoever adopts it collects it
        child.onExit().orTimeout(30, TimeUnit.SECONDS).exceptionally(e -> child).join();
      }
    }
  }

  @Test
  @Timeout(value = 180, unit = TimeUnit.SECONDS)
  void add_skipsAnIdAPeerStartedByHandHolds_andQuitStopsEveryPeerItStarted() throws Exception {
    cluster = new PeerCluster("launcher-process", 2);
    cluster.startAll("peer-3"); // by hand, under the id the launcher would give its third peer

    Path logs = Files.createDirectories(Path.of("target", "peer-logs", "launcher-process", "launched"));
    startLauncher("--peers", "2", "--cluster", cluster.name(), "--base-port", "26000", "--log-dir", logs.toString());
    OutputStream stdin = launcher.getOutputStream();

    // A peer is said to be ready once it answers as itself (the launcher asks it), not when its
    // process is merely up: asked the moment the line appears, it answers.
    Pattern ready = Pattern.compile("peer-1 ready at http://127\\.0\\.0\\.1:(\\d+)/ ");
    await("peer-1 ready").atMost(Duration.ofSeconds(60)).until(() -> ready.matcher(output).find());
    Matcher first = ready.matcher(output);
    assertTrue(first.find(), output.toString());
    int port1 = Integer.parseInt(first.group(1));
    HttpResponse<String> stats = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port1 + "/stats")).timeout(Duration.ofSeconds(10))
            .build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, stats.statusCode(), stats.body());
    assertEquals("peer-1", Json.tree(stats.body()).path("id").asText(), stats.body());
    await("the launcher's first two peers, in one ring with peer-3").atMost(Duration.ofSeconds(90))
        .until(() -> output.toString().contains("ring: all 2 peers agree"));
    // The first peer gets the base port (or the first free one after it), the second the next; the
    // start ends with the first peer's page and a prompt, shown while the launcher waits for a command.
    assertTrue(port1 >= 26000, output.toString());
    assertTrue(output.toString().contains("peer-2 ready at http://127.0.0.1:" + (port1 + 1) + "/ "), output.toString());
    await("the prompt").atMost(Duration.ofSeconds(30)).until(() -> output.toString().endsWith("open http://127.0.0.1:"
        + port1 + "/ in a browser; type help for commands" + NL + "> "));
    // "All 2 peers agree" holds for a ring without peer-3 too (a join that missed it, merged seconds
    // later): the add must find peer-3 in the ring.
    await("peer-1, peer-2 and peer-3 in one ring").atMost(Duration.ofSeconds(60)).ignoreExceptions()
        .until(() -> ringMembers("peer-3").equals(Set.of("peer-1", "peer-2", "peer-3")));

    stdin.write("add\n".getBytes(StandardCharsets.UTF_8));
    stdin.flush();
    await("the launcher's verdict on the ring after add").atMost(Duration.ofSeconds(90))
        .until(() -> output.toString().split("\nring: ", -1).length == 3);
    await("the prompt after add").atMost(Duration.ofSeconds(30))
        .until(() -> output.toString().endsWith("ring: all 3 peers agree" + NL + "> "));
    String out = output.toString();
    assertTrue(out.contains("peer-3 is in the ring already (a peer started by hand); skipping that id"), out);
    assertTrue(out.contains("peer-4 ready at http://127.0.0.1:"), out);
    assertFalse(out.contains("did not start"), out);
    assertEquals(Set.of("peer-1", "peer-2", "peer-3", "peer-4"), ringMembers("peer-3"));

    launcher.descendants().forEach(children::add);
    assertEquals(3, children.size(), "the launcher's three peers: " + children);
    // peer-4 killed from outside: the launcher says it exited by itself. The peers it stops at quit
    // are not said to.
    ProcessHandle peer4 = children.stream() // the last one the launcher started
        .max(Comparator.comparing(c -> c.info().startInstant().orElse(Instant.MIN))).orElseThrow();
    peer4.destroyForcibly();
    await("the launcher's word on peer-4").atMost(Duration.ofSeconds(60))
        .until(() -> output.toString().contains("peer-4 exited by itself (exit code 137); see "));
    // Out of the ring before quit, so that the others' leaves do not push to it.
    await("the ring without peer-4").atMost(Duration.ofSeconds(60)).ignoreExceptions()
        .until(() -> ringMembers("peer-3").equals(Set.of("peer-1", "peer-2", "peer-3")));
    // The id after the skipped one moves on: the next add neither meets peer-3 again nor reuses the
    // id of peer-4, which exited.
    stdin.write("add\n".getBytes(StandardCharsets.UTF_8));
    stdin.flush();
    await("the launcher's verdict on the ring after the second add").atMost(Duration.ofSeconds(90))
        .until(() -> output.toString().split("\nring: ", -1).length == 4);
    out = output.toString();
    assertTrue(out.contains("peer-5 ready at http://127.0.0.1:"), out);
    assertEquals(2, out.split("skipping that id", -1).length, "peer-3 skipped once: " + out);
    launcher.descendants().filter(d -> !children.contains(d)).forEach(children::add);
    stdin.write("quit\n".getBytes(StandardCharsets.UTF_8));
    stdin.flush();
    assertTrue(launcher.waitFor(120, TimeUnit.SECONDS), "the launcher exits after quit: " + output);
    assertEquals(0, launcher.exitValue(), output.toString());
    assertFalse(output.toString().contains("peer-1 exited by itself") || output.toString().contains("peer-2 exited by"
        + " itself"), "stopped by the launcher: " + output);
    for (ProcessHandle child : children) {
      assertFalse(child.isAlive(), "a peer outlived the launcher's quit: " + child.pid());
    }
    assertTrue(cluster.peer("peer-3").process().isAlive(), "the peer started by hand is not the launcher's to stop");
    await("peer-3 alone in its ring").atMost(Duration.ofSeconds(60))
        .until(() -> cluster.json("peer-3", "/stats").path("members").asInt() == 1);
  }

  @Test
  @Timeout(value = STAND_IN_SECONDS, unit = TimeUnit.SECONDS)
  void peers_whoseLauncherIsKilled_leave_alsoWhenTheLauncherIsLeftAZombie() throws Exception {
    // Stand-ins for two launchers. The first is a child of a process that never waits for its
    // children (the shell becomes a sleep): once killed, it stays a zombie while that one runs.
    String sleep = "sleep " + STAND_IN_SECONDS;
    Process parent = new ProcessBuilder("sh", "-c", sleep + " & echo $!; exec " + sleep).start();
    children.add(parent.toHandle());
    long unreaped = Long.parseLong(new BufferedReader(
        new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8)).readLine().strip());
    ProcessHandle.of(unreaped).ifPresent(children::add);
    Process reaped = new ProcessBuilder(sleep.split(" ")).start(); // this JVM reaps it at once
    children.add(reaped.toHandle());
    cluster = new PeerCluster("launcher-gone", 1);
    PeerCluster.TestPeer a = cluster.start("peer-a", "--parent-pid", Long.toString(unreaped));
    cluster.awaitReady(a);
    PeerCluster.TestPeer b = cluster.start("peer-b", "--parent-pid", Long.toString(reaped.pid()));
    cluster.awaitReady(b);

    ProcessHandle.of(unreaped).orElseThrow().destroyForcibly();
    reaped.destroyForcibly();
    await("the first stand-in, a zombie").atMost(Duration.ofSeconds(10)).until(() -> Main.exitedUnreaped(unreaped));
    for (PeerCluster.TestPeer p : List.of(a, b)) {
      assertTrue(p.process().waitFor(30, TimeUnit.SECONDS), p.name() + " outlived its launcher");
      String log = Files.readString(p.log());
      assertEquals(0, p.process().exitValue(), log);
      assertTrue(log.contains("is gone; leaving"), log);
      // Exit code 0 comes from System.exit whatever the shutdown hook did: only its last line shows
      // that the graceful leave ran to its end.
      assertTrue(log.contains(p.name() + " left the cluster in "), log);
    }
    assertTrue(Main.exitedUnreaped(unreaped), "still a zombie: the check, not a reaping, let peer-a go");

    // A launcher gone before its peer looked it up (killed while the peer's JVM started): no process
    // has the pid, and the peer leaves at its first look.
    PeerCluster.TestPeer orphan = cluster.start("peer-c", "--parent-pid", Long.toString(Long.MAX_VALUE));
    assertTrue(orphan.process().waitFor(30, TimeUnit.SECONDS), "peer-c outlived a launcher it never found");
    String log = Files.readString(orphan.log());
    assertEquals(0, orphan.process().exitValue(), log);
    assertTrue(log.contains("launcher process " + Long.MAX_VALUE + " is gone; leaving"), log);
  }

  /**
   * The pid a peer is given may belong to a new process by the time the peer looks it up, if the
   * launcher died first: only a process that started no later than the peer can be its launcher.
   */
  @Test
  void aProcessStartedAfterThePeer_isNotTakenForItsLauncher() throws Exception {
    ProcessHandle self = ProcessHandle.current();
    ProcessHandle launcher = self.parent().orElseThrow(); // what started this JVM: Maven, or the IDE
    assertEquals(Optional.of(launcher), Main.launcher(launcher.pid(), self), "the process that started this one");
    Process later = new ProcessBuilder("sleep", "30").start(); // what could take a dead launcher's pid
    children.add(later.toHandle());
    assertTrue(later.toHandle().info().startInstant().isPresent(), "this system gives start times");
    assertEquals(Optional.empty(), Main.launcher(later.pid(), self), "a process started after this one");
  }

  /** The stand-ins above stand for the launcher because a peer it starts names it so. */
  @Test
  void thePeersTheLauncherStarts_nameItAsTheirParent() {
    List<String> command = PeerProcess.command("peer-7", 8087, ClusterOptions.parse(new String[0], 0));
    int at = command.indexOf("--parent-pid");
    assertTrue(at > 0, command::toString);
    assertEquals(Long.toString(ProcessHandle.current().pid()), command.get(at + 1));
    assertEquals(List.of("peer", "--id", "peer-7", "--http-port", "8087"),
        command.subList(command.indexOf("peer"), command.indexOf("peer") + 5));
  }

  /**
   * A launcher stopped by SIGTERM (what a service manager sends; Ctrl-C's SIGINT takes the same
   * path) stops every peer it started, each with its graceful leave, before it exits with 143; one
   * whose input ends stops them alike and exits 0. Each peer's log says it left the cluster, and
   * none says it noticed its launcher gone (a peer does that within a second of the launcher's exit,
   * so a launcher that exited first would show it).
   */
  @Test
  @Timeout(value = 600, unit = TimeUnit.SECONDS)
  void sigtermOrTheEndOfInput_stopsEveryPeerGracefully_beforeTheLauncherExits() throws Exception {
    for (String how : List.of("sigterm", "end-of-input")) {
      int peers = how.equals("sigterm") ? 2 : 1;
      Path logs = Files.createTempDirectory(Files.createDirectories(Path.of("target", "peer-logs")), "stop-" + how + "-");
      output.setLength(0);
      Thread reader = startLauncher("--peers", Integer.toString(peers), "--cluster", "launcher-stop-" + how,
          "--base-port", "26100", "--log-dir", logs.toString());
      // Its verdict on the ring ends the start, whichever it is: each peer leaves gracefully from a
      // ring of its own too.
      await(how + ": the launcher's peers started").atMost(Duration.ofSeconds(120))
          .until(() -> output.toString().contains("ring: "));
      List<ProcessHandle> started = launcher.children().toList();
      children.addAll(started);
      assertEquals(peers, started.size(), how + ": " + output);

      if (how.equals("sigterm")) {
        launcher.toHandle().destroy(); // SIGTERM (Process.destroy would close this end of its output too)
      } else {
        launcher.getOutputStream().close();
      }
      assertTrue(launcher.waitFor(150, TimeUnit.SECONDS), how + ": the launcher exits: " + output);
      assertEquals(how.equals("sigterm") ? 143 : 0, launcher.exitValue(), how + ": " + output);
      reader.join(TimeUnit.SECONDS.toMillis(30)); // all the launcher printed
      assertFalse(reader.isAlive(), how + ": the launcher's output ends with it");
      // What the wait is, once; and no peer said to have overrun it.
      assertTrue(output.toString().contains("stopping " + peers + (peers == 1 ? " peer" : " peers") + " (each hands"
          + " its keys to the peers that stay, if any; up to " + Launcher.STOP_TIMEOUT.toSeconds() + " s)" + NL),
          how + ": " + output);
      assertFalse(output.toString().contains("did not stop"), how + ": " + output);
      assertTrue(output.toString().endsWith((peers == 1 ? "the peer stopped" : "all " + peers + " peers stopped") + NL),
          how + ": the last line says the peers stopped: " + output);
      for (ProcessHandle peer : started) {
        assertFalse(peer.isAlive(), how + ": a peer outlived its launcher: " + peer.pid());
      }
      for (int i = 1; i <= peers; i++) {
        String log = Files.readString(logs.resolve("peer-" + i + ".log"));
        assertTrue(log.contains("peer-" + i + " left the cluster in "), how + ", peer-" + i + ": " + log);
        assertFalse(log.contains("is gone; leaving"), how + ", peer-" + i + ": " + log);
      }
      launcher = null;
      children.clear();
    }
  }

  /**
   * add with no live peer (all stopped) starts the first alone and then the rest, n in all, and
   * gives its verdict on their ring, a lone peer's too; ids go on from the last one given, and stop
   * says the peer left gracefully.
   */
  @Test
  @Timeout(value = 300, unit = TimeUnit.SECONDS)
  void add_withNoLivePeer_startsNPeers_theFirstAlone_andSaysWhetherTheyAgree() throws Exception {
    Path logs = Files.createTempDirectory(Files.createDirectories(Path.of("target", "peer-logs")), "add-none-");
    startLauncher("--peers", "1", "--cluster", "launcher-add-none", "--base-port", "26200", "--log-dir", logs.toString());
    OutputStream stdin = launcher.getOutputStream();
    await("the first peer").atMost(Duration.ofSeconds(90))
        .until(() -> output.toString().endsWith("type help for commands" + NL + "> "));

    for (String[] step : List.of(new String[] {"stop peer-1", "peer-1 left gracefully in "},
        new String[] {"add", "ring: peer-2 is in the ring" + NL + "> "},
        new String[] {"stop peer-2", "peer-2 left gracefully in "},
        new String[] {"add 2", "ring: all 2 peers agree" + NL + "> "})) {
      int before = output.length();
      stdin.write((step[0] + "\n").getBytes(StandardCharsets.UTF_8));
      stdin.flush();
      await(step[0]).atMost(Duration.ofSeconds(90)).until(() -> output.substring(before).contains(step[1])
          && output.toString().endsWith("> "));
    }
    String out = output.toString();
    for (String id : List.of("peer-2", "peer-3", "peer-4")) {
      assertTrue(out.contains(id + " ready at http://127.0.0.1:"), id + ": " + out);
    }
    assertFalse(out.contains("peer-5"), "add 2 started two: " + out);
    assertEquals(2, launcher.children().count(), out);
    launcher.descendants().forEach(children::add);
    stdin.close();
    assertTrue(launcher.waitFor(120, TimeUnit.SECONDS), "the launcher exits at the end of its input: " + output);
    assertEquals(0, launcher.exitValue(), output.toString());
  }

  /**
   * A launcher that cannot make its temporary log directory (here under a {@code java.io.tmpdir}
   * that does not exist) says so and exits 1, the system's fault rather than the command line's (2),
   * before it starts any peer.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void aTemporaryLogDirThatCannotBeMade_isTheSystemsFault_exit1(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("absent").toAbsolutePath();
    launcher = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Djava.io.tmpdir=" + missing, "-cp", System.getProperty("java.class.path"), Main.class.getName(),
        "cluster", "--peers", "1", "--base-port", "26200").redirectErrorStream(true).start();
    launcher.getOutputStream().close();
    String printed = new String(launcher.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(launcher.waitFor(30, TimeUnit.SECONDS), printed);
    assertEquals(1, launcher.exitValue(), printed);
    // Java 25's JVM warns of the missing directory itself, before the launcher runs: not the launcher's line.
    String launchers = printed.replaceFirst("^WARNING: java.io.tmpdir directory does not exist\\R", "");
    assertTrue(launchers.startsWith("error: cannot create a temporary log directory: java.nio.file.NoSuchFileException: "
        + missing + "/ringmaster-demo-logs-"), printed);
    assertFalse(Files.exists(missing), "nothing made");
  }

  /** The ids in a peer's ring. */
  private Set<String> ringMembers(String peer) {
    Set<String> members = new TreeSet<>();
    cluster.json(peer, "/ring?ranges=false").path("members").forEach(m -> members.add(m.path("id").asText()));
    return members;
  }

  /**
   * Starts the launcher with {@code --replicas 2} and {@code options}, its peers finding the cluster
   * on {@link PeerCluster}'s ports with a patient failure detector, and a daemon thread that copies
   * all it prints (stdout and stderr) into {@link #output}.
   *
   * @return that thread, which ends when the launcher's output does
   */
  private Thread startLauncher(String... options) throws IOException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Djava.net.preferIPv4Stack=true", "-Xmx128m",
        "-Dringmaster.bind_port=" + PeerCluster.JGROUPS_PORT,
        "-Dringmaster.initial_hosts=127.0.0.1[" + PeerCluster.JGROUPS_PORT + "]",
        PATIENT_FD, PATIENT_VERIFY,
        "-cp", System.getProperty("java.class.path"), Main.class.getName(), "cluster", "--replicas", "2"));
    command.addAll(List.of(options));
    launcher = new ProcessBuilder(command).redirectErrorStream(true).start();
    Thread reader = new Thread(() -> copy(launcher.getInputStream()), "launcher-output");
    reader.setDaemon(true);
    reader.start();
    return reader;
  }

  private void copy(InputStream in) {
    char[] buffer = new char[4096];
    try (Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8)) {
      for (int n = reader.read(buffer); n >= 0; n = reader.read(buffer)) {
        output.append(buffer, 0, n);
      }
    } catch (IOException closed) {
      // the launcher is gone
    }
  }
}
