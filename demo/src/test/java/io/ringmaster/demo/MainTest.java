package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Proxy;
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
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's command line, run in this JVM: what it prints and the exit code it returns, for a
 * missing command, a request for the usage, the launcher, and a peer that starts or fails to.
 * Peers run on the in-JVM stack; the launcher is given a command line it refuses.
 */
class MainTest {

  /** What one run printed, and its exit code. */
  private record Ran(int code, List<String> out, List<String> err) {
  }

  /** Runs a command line that must not start a peer: one that starts anyway is closed at once. */
  private static Ran run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8), InputStream.nullInputStream(), Peer::close);
    return new Ran(code, out.toString(StandardCharsets.UTF_8).lines().toList(),
        err.toString(StandardCharsets.UTF_8).lines().toList());
  }

  private static final List<String> USAGE = Main.USAGE.lines().toList();

  @Test
  void run_noCommand_saysOneIsRequired_thenTheUsage_exits2() {
    Ran ran = run();
    assertEquals(2, ran.code());
    assertEquals("error: a command is required", ran.err().get(0));
    assertEquals(USAGE, ran.err().subList(1, ran.err().size()));
    assertEquals(List.of(), ran.out());
  }

  /** "help" in any of its spellings, and "-h" as the one flag of a command, print the usage on stdout. */
  @Test
  void run_help_printsTheUsageOnStdout_exits0() {
    for (String[] args : List.of(new String[] {"help"}, new String[] {"--help"}, new String[] {"-h"},
        new String[] {"peer", "-h"}, new String[] {"cluster", "-h"})) {
      Ran ran = run(args);
      assertEquals(0, ran.code(), String.join(" ", args));
      assertEquals(USAGE, ran.out(), String.join(" ", args));
      assertEquals(List.of(), ran.err(), String.join(" ", args));
    }
    // One flag that is not -h is a bad command line, not a request for the usage.
    Ran ran = run("peer", "--http-port");
    assertEquals(2, ran.code());
    assertTrue(ran.err().get(0).startsWith("error: --http-port"), ran.err().toString());
  }

  /** {@code cluster} returns the launcher's exit code: here 2, for a log directory that is a file. */
  @Test
  void run_cluster_exitsWithTheLaunchersCode(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
    Ran ran = run("cluster", "--log-dir", file.toString());
    assertEquals(2, ran.code(), ran.err().toString());
    assertTrue(ran.err().get(0).startsWith("error: --log-dir " + file + ": cannot create the directory"),
        ran.err().toString());
  }

  /**
   * A tombstone grace under 5 minutes is warned about before the start, 5 minutes is not. The
   * peers here fail to start (their HTTP port is taken), once the warning was said or not.
   */
  @Test
  void peer_tombstoneGraceUnderFiveMinutes_isWarnedAbout_fiveMinutesIsNot() throws Exception {
    try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      String port = Integer.toString(busy.getLocalPort());
      Ran under = run("peer", "--id", "p", "--http-port", port, "--tombstone-grace", "299");
      assertEquals(1, under.code(), under.err().toString());
      assertEquals("warning: --tombstone-grace 299 is under 5 minutes: a delete can come back if a copy of the key"
          + " that missed it (a partition, a peer that was down) turns up after its tombstone is dropped",
          under.err().get(0));
      assertTrue(under.err().get(1).startsWith("error: cannot start peer: --http-port " + port), under.err().toString());

      Ran five = run("peer", "--id", "p", "--http-port", port, "--tombstone-grace", "300");
      assertEquals(1, five.code(), five.err().toString());
      assertTrue(five.err().get(0).startsWith("error: cannot start peer: --http-port " + port), five.err().toString());
    }
  }

  /**
   * A start that fails says why in the failure's own words, without the name of its class: a
   * stack protocol that refuses a setting (an IllegalArgumentException from JGroups), and a
   * cluster that refuses the node (a RingmasterException: another member holds its id).
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void peer_aStartThatFails_isNamedByItsReason_exits1(@TempDir Path dir) throws Exception {
    String stack;
    try (InputStream in = getClass().getClassLoader().getResourceAsStream("ringmaster/jgroups/in-jvm.xml")) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Files.writeString(dir.resolve("bad.xml"), stack.replace("<pbcast.GMS", "<pbcast.GMS no_such_setting=\"1\""));
    Path bad = Files.writeString(dir.resolve("bad.json"), "{\"nodeId\": \"p\", \"jgroupsConfig\": \"bad.xml\"}");
    Ran refused = run("peer", "--http-port", Integer.toString(PeerCluster.freePort()), "--config", bad.toString());
    assertEquals(1, refused.code(), refused.err().toString());
    assertEquals(List.of("error: cannot start peer: JGRP000001: configuration error: the following properties in"
        + " pbcast.GMS are not recognized: {no_such_setting=1}"), refused.err());

    String cluster = "main-twin-" + ProcessHandle.current().pid();
    Path twin = Files.writeString(dir.resolve("twin.json"), "{\"nodeId\": \"twin\", \"clusterName\": \"" + cluster
        + "\", \"jgroupsConfig\": \"ringmaster/jgroups/in-jvm.xml\"}");
    try (Peer holder = Peer.start(PeerOptions.parse(new String[] {"--http-port", Integer.toString(PeerCluster.freePort()),
        "--config", twin.toString()}, 0))) {
      Ran held = run("peer", "--http-port", Integer.toString(PeerCluster.freePort()), "--config", twin.toString());
      assertEquals(1, held.code(), held.err().toString());
      assertEquals(1, held.err().size(), held.err().toString());
      assertTrue(held.err().get(0).startsWith("error: cannot start peer: node twin cannot join cluster \"" + cluster
          + "\": node id \"twin\" is already held by member twin"), held.err().toString());
    }
  }

  /**
   * A peer that starts prints what it serves, and has it flushed, before it is said to serve (the
   * launcher reads that line from the peer's output while it runs); the run returns, with 0, only
   * once the peer has stopped.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void peer_thatStarts_saysWhatItServes_andReturns0OnlyOnceStopped(@TempDir Path dir) throws Exception {
    String cluster = "main-started-" + ProcessHandle.current().pid();
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"solo\", \"clusterName\": \"" + cluster
        + "\", \"jgroupsConfig\": \"ringmaster/jgroups/in-jvm.xml\"}");
    int port = PeerCluster.freePort();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(new BufferedOutputStream(bytes, 1 << 16), false, StandardCharsets.UTF_8);
    AtomicReference<String> shownAtStart = new AtomicReference<>();
    CompletableFuture<Peer> started = new CompletableFuture<>();
    ExecutorService runner = Executors.newSingleThreadExecutor();
    try {
      Future<Integer> code = runner.submit(() -> Main.run(new String[] {"peer", "--http-port", Integer.toString(port),
          "--config", config.toString()}, out, System.err, InputStream.nullInputStream(), p -> {
            shownAtStart.set(bytes.toString(StandardCharsets.UTF_8));
            started.complete(p);
          }));
      await("the peer started, or the run ended").atMost(Duration.ofSeconds(30))
          .until(() -> started.isDone() || code.isDone());
      assertTrue(started.isDone(), "the run ended without a peer");
      assertTrue(shownAtStart.get().startsWith("solo serving http://127.0.0.1:" + port + " in cluster \"" + cluster
          + "\" (view "), "on the output when it serves: " + shownAtStart.get());

      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpResponse<String> stats = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/stats"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, stats.statusCode(), stats.body());
      assertFalse(code.isDone(), "the run returned while its peer serves");
      started.get().close();
      assertEquals(0, code.get(30, TimeUnit.SECONDS));
    } finally {
      started.thenAccept(Peer::close);
      runner.shutdownNow();
      assertTrue(runner.awaitTermination(30, TimeUnit.SECONDS), "the run ended");
    }
  }

  /**
   * The pid a peer is given may belong to a new process by the time it looks it up: only a
   * process that started no later than the peer passes for its launcher, unless the system gives
   * no start time (then any does).
   */
  @Test
  void launcher_isAProcessStartedNoLaterThanThePeer_orAnyWithoutStartTimes() throws Exception {
    ProcessHandle self = ProcessHandle.current();
    ProcessHandle parent = self.parent().orElseThrow(); // what started this JVM: Maven, or the IDE
    assertEquals(Optional.of(parent), Main.launcher(parent.pid(), self));
    Process later = new ProcessBuilder("sleep", "30").start(); // what could take a dead launcher's pid
    try {
      assertTrue(later.toHandle().info().startInstant().isPresent(), "this system gives start times");
      assertEquals(Optional.empty(), Main.launcher(later.pid(), self));
      ProcessHandle timeless = withoutStartTime();
      assertTrue(Main.startedNoLaterThan(timeless, self), "a candidate without a start time");
      assertTrue(Main.startedNoLaterThan(later.toHandle(), timeless), "a peer without a start time");
    } finally {
      later.destroyForcibly().waitFor();
    }
  }

  /** A process handle whose info gives no start time, as on a system that does not say. */
  private static ProcessHandle withoutStartTime() {
    ProcessHandle.Info info = (ProcessHandle.Info) Proxy.newProxyInstance(MainTest.class.getClassLoader(),
        new Class<?>[] {ProcessHandle.Info.class}, (proxy, method, args) -> Optional.empty());
    return (ProcessHandle) Proxy.newProxyInstance(MainTest.class.getClassLoader(), new Class<?>[] {ProcessHandle.class},
        (proxy, method, args) -> {
          if (method.getName().equals("info")) {
            return info;
          }
          throw new UnsupportedOperationException(method.getName());
        });
  }

  /**
   * A process that has exited and that its parent never collects (a zombie, as a launcher whose
   * own parent never waits for it is after a kill -9) is seen as exited; a running process, and a
   * pid that no process has, are not. The zombie here is a child of a {@code sleep} that the shell
   * that started it became: the child ends only once that {@code exec} is done (on a byte the test
   * sends it), since the shell may collect a child that ends before.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void exitedUnreaped_aZombieOnly() throws Exception {
    // An asynchronous command's input is /dev/null unless redirected: the child reads ours on fd 3.
    Process parent = new ProcessBuilder("sh", "-c",
        "exec 3<&0; head -c 1 <&3 >/dev/null & echo $!; exec sleep 30").start();
    try {
      long child = Long.parseLong(new BufferedReader(new InputStreamReader(parent.getInputStream(),
          StandardCharsets.US_ASCII)).readLine().trim());
      Path parentName = Path.of("/proc", Long.toString(parent.pid()), "comm");
      await("the shell became sleep").atMost(Duration.ofSeconds(20))
          .until(() -> Files.readString(parentName).trim().equals("sleep"));
      assertFalse(Main.exitedUnreaped(child), "running, waiting for its byte");
      parent.getOutputStream().write('x');
      parent.getOutputStream().flush();
      await("the child exited, uncollected").atMost(Duration.ofSeconds(20)).until(() -> Main.exitedUnreaped(child));
      assertFalse(Main.exitedUnreaped(parent.pid()), "running");
      assertFalse(Main.exitedUnreaped(ProcessHandle.current().pid()), "this JVM");
      assertFalse(Main.exitedUnreaped(Long.MAX_VALUE), "no such process");
    } finally {
      parent.destroyForcibly().waitFor(); // its zombie goes to init, which collects it
    }
  }
}
