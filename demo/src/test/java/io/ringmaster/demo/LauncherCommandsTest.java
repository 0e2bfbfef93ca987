package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's commands as a person typing them sees them, driven in this JVM: {@link Launcher#command}
 * on a launcher whose peers are stand-ins (a shell process for the peer's life, and where a command
 * talks to the peer, an HTTP server on this JVM for its port), {@link Launcher#freePort}, and
 * {@link Launcher#run} where no peer gets to serve (the base port refused, no port free, a peer that
 * exits at once, one not ready in time). Real peers are started here only where {@code run} judges
 * the first peer's start: one that exits at once, one still starting at a short ready limit, one
 * ready within it; and where {@code add} judges a peer started at the prompt, one still starting at
 * the limit. The rest of a start that succeeds is {@link LauncherProcessTest}'s.
 */
class LauncherCommandsTest {
  /** The port a stand-in peer that no command reaches gives: nothing listens there, so a request is refused at once. */
  private static final int NOBODY = 1;
  private static final String NL = System.lineSeparator();
  /** The cluster of the real peers started here: this JVM's own, so that no other test's peers join it. */
  private static final String OWN_CLUSTER = "launcher-commands-" + ProcessHandle.current().pid();

  private final ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
  private final ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
  private final PrintStream err = new PrintStream(errBytes, true, StandardCharsets.UTF_8);
  private final List<Process> processes = new ArrayList<>();
  private final List<HttpServer> servers = new ArrayList<>();
  private final List<ServerSocket> held = new ArrayList<>();
  /** Launchers whose real peers a test that failed midway may have left running. */
  private final List<Launcher> launchers = new ArrayList<>();
  /** Peers started by hand in this JVM, which a test that failed midway may have left running. */
  private final List<Peer> byHand = new ArrayList<>();

  @AfterEach
  void stopEverything() throws Exception {
    for (Launcher launcher : launchers) {
      for (PeerProcess p : List.copyOf(launcher.peers.values())) {
        p.process().destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
    }
    for (Process p : processes) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
    byHand.forEach(Peer::close); // a peer closed already returns at once
    servers.forEach(s -> s.stop(0));
    for (ServerSocket s : held) {
      s.close();
    }
  }

  // ---- parsing a command line ----

  /**
   * What each command line that is not run says: help prints the list, an unknown command is named,
   * a command given too many words names the words it did not take (all of them, as typed), put and
   * get without their key say their usage, an empty line says nothing; only quit and exit end the loop.
   */
  @Test
  void command_whenNotUnderstood_namesTheCommandOrTheWordsItDidNotTake() {
    Launcher launcher = launcher(2, 8081);

    assertTrue(launcher.command("help"));
    assertEquals(Launcher.HELP + NL, said(), "help");
    assertTrue(launcher.command("frobnicate now"));
    assertEquals("unknown command \"frobnicate\"; type help" + NL, said());
    assertTrue(launcher.command("status now please"));
    assertEquals("\"status\" takes no argument; not understood: \"now please\"; type help" + NL, said());
    assertTrue(launcher.command("get a b  c"));
    assertEquals("\"get\" takes one argument; not understood: \"b  c\"; type help" + NL, said(),
        "the rest of the line after the one argument, as typed");
    assertTrue(launcher.command("put k"));
    assertEquals("usage: put <key> <value>" + NL, said());
    assertTrue(launcher.command("get"));
    assertEquals("usage: get <key>" + NL, said());
    assertTrue(launcher.command(""));
    assertEquals("", said(), "an empty line");
    assertFalse(launcher.command("quit"), "quit ends the loop");
    assertFalse(launcher.command("exit"), "exit ends the loop");
    assertEquals("", said() + errBytes.toString(StandardCharsets.UTF_8), "quit and exit say nothing themselves");
  }

  /** With no live peer, status, put, get and load each say so rather than try one. */
  @Test
  void commandsThatNeedAPeer_withNoLivePeer_sayThereIsNone() {
    Launcher launcher = launcher(2, 8081);

    assertTrue(launcher.command("status"));
    assertEquals("no live peers" + NL, said(), "status");
    assertTrue(launcher.command("put k v"));
    assertEquals("no live peers; add one" + NL, said(), "put");
    assertTrue(launcher.command("get k"));
    assertEquals("no live peers; add one" + NL, said(), "get");
    // The edges of load's range are taken: then it finds no peer.
    for (String n : List.of("1", "1000000")) {
      assertTrue(launcher.command("load " + n));
      assertEquals("no live peers; add one" + NL, said(), "load " + n);
    }
  }

  /** load refuses a count outside 1..1000000, or one that is no whole number, naming it. */
  @Test
  void load_refusesACountOutsideItsRange_namingIt() {
    Launcher launcher = launcher(2, 8081);

    for (String n : List.of("0", "1000001", "-3", "x", "")) {
      assertTrue(launcher.command("load " + n));
      String shown = n.isEmpty() ? "\"\"" : n; // nothing, in quotes
      assertEquals("load takes a whole number of keys from 1 to 1000000: " + shown + NL, said(), "load " + n);
    }
  }

  // ---- add ----

  /**
   * add refuses a count outside what the room left allows (naming the room, the cap and the
   * argument), and the 21st peer; a count at each edge of the room is taken (here every start fails
   * on a busy port, each with its own error line).
   */
  @Test
  void add_refusesACountOutsideTheRoomLeft_namingTheRoomAndTheArgument() throws Exception {
    Launcher launcher = launcher(2, 65535);
    hold(65535); // every start fails at once: no free port

    for (String n : List.of("0", "21", "-1", "two")) {
      assertTrue(launcher.command("add " + n));
      assertEquals("add takes a whole number of peers from 1 to 20 (at most 20 run at once): " + n + NL, said(),
          "add " + n);
    }
    for (String n : List.of("1", "20")) { // no peer yet: the first is started alone, and fails
      assertTrue(launcher.command("add " + n));
      assertEquals("", said(), "add " + n + " is taken");
      assertEquals(List.of(noFreePort(65535)), errLines(), "add " + n + ": the first peer alone, which fails");
    }

    standIn(launcher, "peer-1", NOBODY);
    assertTrue(launcher.command("add 20"));
    assertEquals("add takes a whole number of peers from 1 to 19 (at most 20 run at once): 20" + NL, said(),
        "one peer runs: room for 19");
    assertTrue(launcher.command("add 19"));
    assertEquals("", said(), "add 19 is taken");
    assertEquals(Collections.nCopies(19, noFreePort(65535)), errLines(),
        "19 starts tried, each failing on its own (the ring unchanged, so no verdict on it)");

    for (int i = 2; i <= 20; i++) {
      standIn(launcher, "peer-" + i, NOBODY);
    }
    assertTrue(launcher.command("add"));
    assertEquals("at most 20 peers run at once; stop one first" + NL, said(), "20 run");
    assertEquals(List.of(), errLines());
  }

  /**
   * A base port this user may not listen on (here a privileged one that is busy) fails every start
   * alike: add tries once and names --base-port, not the exception's class.
   */
  @Test
  void add_whenTheBasePortIsRefused_triesOnce_namingTheBasePort() throws Exception {
    int privileged = privilegedPort();
    holdOrRefused(privileged);
    assertThrows(Launcher.PortNotAllowed.class, () -> launcher(2, privileged).freePort(),
        "the launcher refuses --base-port " + privileged + " (else add would start a peer past it)");
    Launcher launcher = launcher(2, privileged);
    standIn(launcher, "peer-1", NOBODY);

    assertTrue(launcher.command("add 3"));
    assertEquals("", said());
    List<String> errors = errLines();
    assertEquals(1, errors.size(), "one try: " + errors);
    String refused = "error: cannot start a peer: --base-port " + privileged + ": cannot listen on 127.0.0.1:"
        + privileged + " (ports below " + unprivilegedPortStart() + " may need privileges): ";
    assertTrue(errors.get(0).startsWith(refused), "names the base port and why: " + errors);
  }

  // ---- stop and kill ----

  /**
   * stop and kill name a peer that is not live along with those that are; stop tells a peer that
   * exited after SIGTERM having left (its log says so, and what it handed off) from one that did not
   * say so and one that exited with another code; kill says what the replicas do. Each says how long
   * it took, which is no longer than the command.
   */
  @Test
  void stopAndKill_sayWhatThePeerDid_andHowLongItTook(@TempDir Path logs) throws Exception {
    Launcher launcher = launcher(2, 8081);
    Path log1 = Files.writeString(logs.resolve("peer-1.log"), PeerProcess.RUN_MARK + "peer-1 started\n"
        + "peer-1 left the cluster in 5 ms; keys handed off in total: 3; all handed off\n");
    launcher.peers.put("peer-1", new PeerProcess("peer-1", NOBODY, started("exec sleep 60"), log1));
    Path log2 = Files.writeString(logs.resolve("peer-2.log"), PeerProcess.RUN_MARK + "peer-2 started\n");
    launcher.peers.put("peer-2", new PeerProcess("peer-2", NOBODY, started("trap 'kill $!; exit 0' TERM; echo up;"
        + " sleep 60 & wait"), log2));
    Path log3 = logs.resolve("peer-3.log");
    launcher.peers.put("peer-3", new PeerProcess("peer-3", NOBODY, started("trap 'kill $!; exit 3' TERM; echo up;"
        + " sleep 60 & wait"), log3));
    launcher.peers.put("peer-4", new PeerProcess("peer-4", NOBODY, started("exec sleep 60"), logs.resolve("peer-4.log")));

    assertTrue(launcher.command("stop"));
    assertEquals("which peer? live: [peer-1, peer-2, peer-3, peer-4]" + NL, said());
    assertTrue(launcher.command("kill peer-9"));
    assertEquals("no live peer \"peer-9\"; live: [peer-1, peer-2, peer-3, peer-4]" + NL, said());

    assertEquals(List.of("peer-1 left gracefully in ", " ms: keys handed off in total: 3; all handed off"),
        timed(launcher, "stop peer-1"), "exit 143 (SIGTERM), and its log says it left");
    assertEquals(List.of("peer-2 stopped after ", " ms without reporting a finished leave: its keys may not have"
        + " been handed off; see " + log2), timed(launcher, "stop peer-2"), "exit 0, but no word of its leave");
    assertEquals(List.of("peer-3 stopped with exit code 3 after ", " ms; see " + log3), timed(launcher, "stop peer-3"));
    assertEquals(List.of("peer-4 killed with SIGKILL (", " ms); the others restore its keys from the replicas"),
        timed(launcher, "kill peer-4"));

    assertTrue(launcher.command("stop peer-1"));
    assertEquals("no live peer \"peer-1\"; live: []" + NL, said(), "a peer stopped is not live");
    assertEquals("", errBytes.toString(StandardCharsets.UTF_8));
  }

  // ---- through a peer ----

  /**
   * put and get go through a live peer: the key encoded in the path (a space as %20), the value as
   * the body; the launcher prints the peer's status and body, or the failure, naming the peer.
   */
  @Test
  void putAndGet_goThroughALivePeer_andSayWhichAndWhatItAnswered() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    HttpServer server = server();
    server.createContext("/kv/", ex -> {
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      seen.add(ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath() + " " + body);
      byte[] reply = "{\"value\":\"v\"}".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, reply.length);
      ex.getResponseBody().write(reply);
      ex.close();
    });
    standIn(launcher, "peer-1", server.getAddress().getPort());

    assertTrue(launcher.command("put a%b one  two"));
    assertEquals("200 via peer-1: {\"value\":\"v\"}" + NL, said());
    assertTrue(launcher.command("get a%b"));
    assertEquals("200 via peer-1: {\"value\":\"v\"}" + NL, said());
    assertEquals(List.of("PUT /kv/a%25b one  two", "GET /kv/a%25b "), seen, "the value is the rest of the line");

    servers.remove(server);
    server.stop(0);
    assertTrue(launcher.command("get a"));
    String failed = said();
    assertTrue(failed.startsWith("request to peer-1 failed: java.net.ConnectException"), failed);
  }

  /**
   * split and heal refuse what they cannot do, saying why: no ids, an id that is no live peer,
   * a list of every live peer (the other side empty), a heal with no split in force.
   */
  @Test
  void splitAndHeal_whenTheyCannot_sayWhy() throws Exception {
    Launcher launcher = launcher(2, 8081);
    assertTrue(launcher.command("heal"));
    assertEquals("no split in force" + NL, said());
    assertTrue(launcher.command("split peer-1"));
    assertEquals("no live peer \"peer-1\"; live: []" + NL, said());
    assertTrue(launcher.command("heal now"));
    assertEquals("\"heal\" takes no argument; not understood: \"now\"; type help" + NL, said());

    List<String> posts = Collections.synchronizedList(new ArrayList<>());
    for (String id : List.of("peer-1", "peer-2")) {
      standIn(launcher, id, splittable(id, posts, 200, "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}"));
    }
    assertTrue(launcher.command("split"));
    assertEquals("usage: split <id> [<id> ...]: cuts the peers listed off from the others; live: [peer-1, peer-2]"
        + NL, said());
    assertTrue(launcher.command("split peer-2 peer-9"));
    assertEquals("no live peer \"peer-9\"; live: [peer-1, peer-2]" + NL, said());
    assertTrue(launcher.command("split peer-2  peer-1 peer-2"));
    assertEquals("split needs a live peer on each side: [peer-2, peer-1] is every live peer, which leaves the other"
        + " side empty" + NL, said());
    assertEquals(List.of(), posts, "nothing sent");
  }

  /**
   * split tells each side's peers to stop hearing the other side; while it is in force a second
   * split and add are refused and status shows the sides with each side's ring; heal tells every
   * peer, then waits for one ring as after an add, and says when a side has no live peer left.
   */
  @Test
  void split_tellsEachSideToDropTheOther_andHealTellsEveryPeer() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> posts = Collections.synchronizedList(new ArrayList<>());
    String all = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"},{\"id\":\"peer-3\"}]}";
    for (String id : List.of("peer-1", "peer-2", "peer-3")) {
      standIn(launcher, id, splittable(id, posts, 200, all));
    }

    assertTrue(launcher.command("split peer-3"));
    assertEquals("split: [peer-3] | [peer-1, peer-2]; within a few seconds each side drops the other from its ring"
        + " (failure detection) and takes writes on its own; type status to watch, heal to end it" + NL, said());
    assertEquals(List.of("peer-1 /admin/split {\"ids\":[\"peer-3\"]}", "peer-2 /admin/split {\"ids\":[\"peer-3\"]}",
        "peer-3 /admin/split {\"ids\":[\"peer-1\",\"peer-2\"]}"), posts);
    posts.clear();

    assertTrue(launcher.command("split peer-1"));
    assertEquals("a split is in force ([peer-3] | [peer-1, peer-2]); type heal first" + NL, said());
    assertTrue(launcher.command("add"));
    assertEquals("a split is in force: a new peer would hear both sides; type heal first" + NL, said());
    assertTrue(launcher.command("status"));
    String status = said();
    assertTrue(status.endsWith("split in force: [peer-3]: its ring [peer-1, peer-2, peer-3]; [peer-1, peer-2]: its"
        + " ring [peer-1, peer-2, peer-3]; type heal to end it" + NL), status);
    assertEquals(List.of(), posts, "refused: nothing sent");

    assertTrue(launcher.command("heal"));
    assertEquals("healed: the sides merge within seconds (a membership event with \"merge\": true in /events)" + NL
        + "ring: all 3 peers agree" + NL, said());
    assertEquals(List.of("peer-1 /admin/heal ", "peer-2 /admin/heal ", "peer-3 /admin/heal "), posts);
    assertTrue(launcher.command("status"));
    assertFalse(said().contains("split in force"), "healed");
    assertTrue(launcher.command("heal"));
    assertEquals("no split in force" + NL, said());

    // a side whose every peer exited during the split: nothing to merge with (the others' ring,
    // without it, agrees at once)
    Launcher second = launcher(2, 8081);
    String twoLeft = "{\"viewId\":5,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}";
    for (String id : List.of("peer-1", "peer-2", "peer-3")) {
      standIn(second, id, splittable(id, posts, 200, twoLeft));
    }
    assertTrue(second.command("split peer-3"));
    said();
    second.peers.get("peer-3").process().destroyForcibly().waitFor();
    posts.clear();
    assertTrue(second.command("heal"));
    String healed = said();
    assertTrue(healed.startsWith("healed: no peer of [peer-3] is live, so there is no other side to merge with" + NL),
        healed);
    assertEquals(List.of("peer-1 /admin/heal ", "peer-2 /admin/heal "), posts);
  }

  /**
   * A peer that refuses the split (started without --fault-injection, say) ends it: the launcher
   * names it and its reason and heals the peers it had already told. A ring member the launcher
   * did not start, or that exited here, would hear both sides: the split is refused, naming it.
   */
  @Test
  void split_refusedByAPeer_healsThoseAlreadyTold_andOneWithAStrangerInTheRingIsRefused() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> posts = Collections.synchronizedList(new ArrayList<>());
    String ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"},{\"id\":\"peer-3\"}]}";
    standIn(launcher, "peer-1", splittable("peer-1", posts, 200, ring));
    standIn(launcher, "peer-2", splittable("peer-2", posts, 403, ring));
    standIn(launcher, "peer-3", splittable("peer-3", posts, 200, ring));

    assertTrue(launcher.command("split peer-3"));
    assertEquals("split failed at peer-2: 403 refused by peer-2; healing [peer-1] again" + NL, said());
    assertEquals(List.of("peer-1 /admin/split {\"ids\":[\"peer-3\"]}", "peer-2 /admin/split {\"ids\":[\"peer-3\"]}",
        "peer-1 /admin/heal "), posts);
    assertTrue(launcher.command("heal"));
    assertEquals("no split in force" + NL, said());

    Launcher second = launcher(2, 8081);
    posts.clear();
    String withStranger = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"},{\"id\":\"manual\"}]}";
    standIn(second, "peer-1", splittable("peer-1", posts, 200, withStranger));
    standIn(second, "peer-2", splittable("peer-2", posts, 200, withStranger));
    assertTrue(second.command("split peer-2"));
    assertEquals("the ring also holds [manual], not started here: the launcher cannot cut it off from either side;"
        + " stop it first" + NL, said());
    assertEquals(List.of(), posts);

    // peer-3 exited here, and the ring holds its id still (not yet out, or started again by hand)
    Launcher third = launcher(2, 8081);
    standIn(third, "peer-1", splittable("peer-1", posts, 200, ring));
    standIn(third, "peer-2", splittable("peer-2", posts, 200, ring));
    Process exitedPeer = started("exit 0");
    assertEquals(0, exitedPeer.waitFor(), "the stand-in of the peer that exited");
    third.peers.put("peer-3", new PeerProcess("peer-3", splittable("peer-3", posts, 200, ring), exitedPeer,
        Path.of("logs", "peer-3.log")));
    assertTrue(third.command("split peer-2"));
    assertEquals("the ring still holds [peer-3], which exited here: not yet out of the ring, or started again by"
        + " hand under its id; the launcher cannot cut it off from either side: wait until it is out of the ring"
        + " (status), or stop it" + NL, said());
    assertEquals(List.of(), posts);
  }

  /**
   * A peer that does not heal (it answers 500 once here; a paused peer does not answer at all)
   * keeps the split in force: the launcher says so, status still shows the sides, add is still
   * refused, and heal can be typed again, which then tells every peer once more.
   */
  @Test
  void heal_failingAtAPeer_keepsTheSplitInForce_andHealCanBeTypedAgain() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> posts = Collections.synchronizedList(new ArrayList<>());
    String ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"},{\"id\":\"peer-3\"}]}";
    standIn(launcher, "peer-1", splittable("peer-1", posts, 200, ring));
    HttpServer flaky = server();
    AtomicInteger heals = new AtomicInteger();
    flaky.createContext("/admin/", ex -> {
      String path = ex.getRequestURI().getPath();
      posts.add("peer-2 " + path + " " + new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      boolean fail = path.equals("/admin/heal") && heals.getAndIncrement() == 0;
      byte[] body = (fail ? "{\"error\":\"internal error: IllegalStateException\"}" : "{}")
          .getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(fail ? 500 : 200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    reply(flaky, "/ring", ring);
    reply(flaky, "/stats", "{\"id\":\"peer-2\",\"viewId\":3,\"checksum\":\"c0ffee\",\"inRing\":true}");
    standIn(launcher, "peer-2", flaky.getAddress().getPort());
    standIn(launcher, "peer-3", splittable("peer-3", posts, 200, ring));
    assertTrue(launcher.command("split peer-3"));
    said();
    posts.clear();

    assertTrue(launcher.command("heal"));
    assertEquals("heal failed at peer-2: 500 internal error: IllegalStateException" + NL
        + "the split stays in force: [peer-2] may still be cut off; type heal again" + NL, said());
    assertTrue(launcher.command("status"));
    String status = said();
    assertTrue(status.contains("split in force: [peer-3]"), status);
    assertTrue(launcher.command("add"));
    assertEquals("a split is in force: a new peer would hear both sides; type heal first" + NL, said());

    posts.clear();
    assertTrue(launcher.command("heal"));
    assertEquals("healed: the sides merge within seconds (a membership event with \"merge\": true in /events)" + NL
        + "ring: all 3 peers agree" + NL, said());
    assertEquals(List.of("peer-1 /admin/heal ", "peer-2 /admin/heal ", "peer-3 /admin/heal "), posts);
  }

  /**
   * A split that fails at a peer that took the request and did not answer in time (5 s) may have
   * cut that peer off: it is healed with those told before it. One the request never reached (its
   * connection refused) cut nothing, and is not.
   */
  @Test
  void split_failingAtAPeerThatTookItWithoutAnswer_healsThatPeerToo() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> posts = Collections.synchronizedList(new ArrayList<>());
    String ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"},{\"id\":\"peer-3\"}]}";
    standIn(launcher, "peer-1", splittable("peer-1", posts, 200, ring));
    ExecutorService handlers = Executors.newCachedThreadPool();
    CountDownLatch answer = new CountDownLatch(1);
    try {
      HttpServer slow = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      servers.add(slow);
      slow.setExecutor(handlers); // a heal is answered while the split still waits
      slow.createContext("/admin/", ex -> {
        String path = ex.getRequestURI().getPath();
        posts.add("peer-2 " + path + " " + new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        if (path.equals("/admin/split")) {
          try {
            answer.await(1, TimeUnit.MINUTES); // past the launcher's 5 s
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        ex.sendResponseHeaders(200, 2);
        ex.getResponseBody().write("{}".getBytes(StandardCharsets.UTF_8));
        ex.close();
      });
      reply(slow, "/ring", ring);
      slow.start();
      standIn(launcher, "peer-2", slow.getAddress().getPort());
      standIn(launcher, "peer-3", splittable("peer-3", posts, 200, ring));

      assertTrue(launcher.command("split peer-3"));
      String failed = said();
      assertTrue(failed.startsWith("split failed at peer-2: java.net.http.HttpTimeoutException"), failed);
      assertTrue(failed.endsWith("; healing [peer-1, peer-2] again" + NL), failed);
      assertEquals(List.of("peer-1 /admin/split {\"ids\":[\"peer-3\"]}", "peer-2 /admin/split {\"ids\":[\"peer-3\"]}",
          "peer-1 /admin/heal ", "peer-2 /admin/heal "), posts);
      assertTrue(launcher.command("heal"));
      assertEquals("no split in force" + NL, said());
    } finally {
      answer.countDown();
      handlers.shutdown();
      assertTrue(handlers.awaitTermination(1, TimeUnit.MINUTES), "the stand-in's handlers ended");
    }

    Launcher second = launcher(2, 8081);
    posts.clear();
    String two = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}";
    standIn(second, "peer-1", splittable("peer-1", posts, 200, two));
    standIn(second, "peer-2", NOBODY);
    assertTrue(second.command("split peer-1"));
    String refused = said();
    assertTrue(refused.startsWith("split failed at peer-2: java.net.ConnectException"), refused);
    assertTrue(refused.endsWith("; healing [peer-1] again" + NL), refused);
    assertEquals(List.of("peer-1 /admin/split {\"ids\":[\"peer-2\"]}", "peer-1 /admin/heal "), posts);
  }

  /**
   * A stand-in peer {@code id} for split and heal: its POSTs to /admin are recorded in {@code posts}
   * as "id path body" and answered {@code status} (a refusal's reason naming it), its /ring is
   * {@code ring}, and its /stats says it is in the ring of view 3; its port.
   */
  private int splittable(String id, List<String> posts, int status, String ring) throws IOException {
    HttpServer server = server();
    server.createContext("/admin/", ex -> {
      posts.add(id + " " + ex.getRequestURI().getPath() + " "
          + new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      byte[] body = (status == 200 ? "{}" : "{\"error\":\"refused by " + id + "\"}").getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(status, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    reply(server, "/ring", ring);
    reply(server, "/stats", "{\"id\":\"" + id + "\",\"viewId\":3,\"checksum\":\"c0ffee\",\"inRing\":true}");
    return server.getAddress().getPort();
  }

  /** load writes its keys through the live peers and reports how many it wrote. */
  @Test
  void load_writesThroughTheLivePeers_andSaysHowManyKeys() throws Exception {
    Launcher launcher = launcher(2, 8081);
    List<String> paths = Collections.synchronizedList(new ArrayList<>());
    HttpServer server = server();
    server.createContext("/kv/", ex -> {
      ex.getRequestBody().readAllBytes();
      paths.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath());
      ex.sendResponseHeaders(200, -1);
      ex.close();
    });
    standIn(launcher, "peer-1", server.getAddress().getPort());

    assertTrue(launcher.command("load 3"));
    String printed = said();
    assertTrue(printed.contains(NL + "wrote 3 keys (load-") && printed.contains("; 0 failed" + NL), printed);
    assertEquals(3, paths.size(), "three writes: " + paths);
    assertTrue(paths.stream().allMatch(p -> p.startsWith("PUT /kv/load-")), paths::toString);
  }

  /**
   * status lists a peer the launcher started that exited but is still in the ring as such, not as
   * one "not started here".
   */
  @Test
  void status_tellsAnExitedPeerStillInTheRing_fromOneNotStartedHere(@TempDir Path logs) throws Exception {
    Launcher launcher = launcher(2, 8081);
    HttpServer server = server();
    String url = "http://127.0.0.1:" + server.getAddress().getPort();
    reply(server, "/stats", "{\"id\":\"peer-1\",\"viewId\":7,\"checksum\":\"c0ffee\",\"members\":3,\"inRing\":true,"
        + "\"primaryKeys\":4,\"backupKeys\":4}");
    reply(server, "/ring", "{\"viewId\":7,\"members\":[{\"id\":\"peer-1\",\"endpoint\":\"" + url + "\"},"
        + "{\"id\":\"peer-2\",\"endpoint\":\"\"},{\"id\":\"peer-3\",\"endpoint\":\"\"}]}");
    standIn(launcher, "peer-1", server.getAddress().getPort());
    Process exited = started("exit 0");
    exited.waitFor();
    launcher.peers.put("peer-2", new PeerProcess("peer-2", NOBODY, exited, logs.resolve("peer-2.log")));

    assertTrue(launcher.command("status"));
    String printed = said();
    assertTrue(printed.contains("ring: peer-1 is in the ring (view/checksum 7/c0ffee); also in it: peer-2 (exited, not yet"
        + " out of the ring), peer-3 (not started here, no answer)" + NL), printed);
  }

  /**
   * After a start or an add, the launcher waits for its peers to agree on one ring, asking each for
   * its /stats until it says it is in the ring, and only then says they agree.
   */
  @Test
  void awaitAgreement_waitsUntilEveryPeerIsInTheRing_thenSaysTheyAgree() throws Exception {
    Launcher launcher = launcher(2, 8081);
    HttpServer server = server();
    String url = "http://127.0.0.1:" + server.getAddress().getPort();
    AtomicInteger asked = new AtomicInteger();
    server.createContext("/stats", ex -> {
      boolean inRing = asked.incrementAndGet() > 2; // the peer is still joining for its first two answers
      byte[] body = ("{\"id\":\"peer-1\",\"viewId\":3,\"checksum\":\"c0ffee\",\"inRing\":" + inRing + "}")
          .getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    reply(server, "/ring", "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\",\"endpoint\":\"" + url + "\"}]}");
    standIn(launcher, "peer-1", server.getAddress().getPort());

    launcher.awaitAgreement(Duration.ofSeconds(30));
    assertEquals("ring: peer-1 is in the ring" + NL, said());
    assertEquals(3, asked.get(), "asked until the peer said it is in the ring, and no more");
  }

  /** Peers that are not in one ring by the time limit are said to be so, with what to type next. */
  @Test
  @Timeout(value = 15, unit = TimeUnit.SECONDS) // the limit given, not the 30 s of a start or an add
  void awaitAgreement_whenThePeersDoNotAgreeInTime_saysSo() throws Exception {
    Launcher launcher = launcher(2, 8081);
    HttpServer server = server();
    reply(server, "/stats", "{\"id\":\"peer-1\",\"viewId\":3,\"checksum\":\"c0ffee\",\"inRing\":false}");
    standIn(launcher, "peer-1", server.getAddress().getPort());

    launcher.awaitAgreement(Duration.ofMillis(600));
    assertEquals("ring: the peers are not in one ring yet; type status to check" + NL, said());
  }

  // ---- ports ----

  /**
   * The launcher reads the system's first unprivileged port whole: procfs says the file is empty,
   * and a read that takes its first byte alone gets "1" of "1024", after which no port is privileged.
   */
  @Test
  void theFirstUnprivilegedPort_isTheSystemsWholeSetting() {
    assertEquals(unprivilegedPortStart(), Launcher.UNPRIVILEGED_PORT_START);
  }

  /**
   * Ports are handed out from the last one given on, past busy ones and those of live peers, and
   * past 65535 from --base-port again.
   */
  @Test
  void freePort_goesOnFromTheLastGiven_pastBusyAndLivePeersPorts_thenFromTheBasePort() throws Exception {
    Launcher launcher = launcher(2, 65530);
    hold(65531);

    assertEquals(65530, launcher.freePort(), "the base port first");
    assertEquals(65532, launcher.freePort(), "65531 is busy");
    standIn(launcher, "peer-1", 65533);
    assertEquals(65534, launcher.freePort(), "65533 is a live peer's");
    assertEquals(65535, launcher.freePort());
    assertEquals(65530, launcher.freePort(), "past 65535: from the base port again");
  }

  /**
   * A busy port from the first one any user may listen on is passed over; a privileged one (here
   * busy, or refused to a user who is not root) is an error naming --base-port, not a reason to go on
   * to a port the user did not choose. (The launcher once read Linux's first unprivileged port as
   * 1, and went on from a refused --base-port 1023 to 1024.)
   */
  @Test
  void freePort_refusesAPrivilegedBasePort_namingIt_butPassesOverABusyUnprivilegedOne() throws Exception {
    int start = privilegedPort() + 1;
    hold(start);
    int port = launcher(2, start).freePort();
    assertTrue(port > start, "the first unprivileged port is busy: another one, " + port);

    holdOrRefused(start - 1);
    Launcher launcher = launcher(2, start - 1);
    IOException e = assertThrows(Launcher.PortNotAllowed.class, launcher::freePort,
        () -> "--base-port " + (start - 1) + " is refused (busy, or privileged); the launcher went on past it");
    assertTrue(e.getMessage().startsWith("--base-port " + (start - 1) + ": cannot listen on 127.0.0.1:" + (start - 1)
        + " (ports below " + start + " may need privileges): "), e.getMessage());
  }

  // ---- run, where no peer serves ----

  /**
   * A refused base port is the command line's fault: the launcher names it, prints the usage and
   * exits 2.
   */
  @Test
  void run_whenTheBasePortIsRefused_exits2_namingIt_withTheUsage(@TempDir Path logs) throws Exception {
    int privileged = privilegedPort();
    holdOrRefused(privileged);
    assertThrows(Launcher.PortNotAllowed.class, () -> launcher(2, privileged).freePort(),
        "the launcher refuses --base-port " + privileged + " (else run would start peers past it)");
    Launcher launcher = new Launcher(new ClusterOptions(3, 2, privileged, "launcher-commands", Optional.of(logs)),
        out, err);

    assertEquals(2, launcher.run(new ByteArrayInputStream(new byte[0])), () -> "exit code: " + outBytes + errBytes);
    assertEquals("cluster \"launcher-commands\", 3 peers, replicas 2; peer logs in " + logs + NL, said());
    List<String> errors = errLines();
    assertEquals(2, errors.size(), errors::toString);
    assertTrue(errors.get(0).startsWith("error: cannot start a peer: --base-port " + privileged + ": "), errors::toString);
    assertEquals("usage: " + ClusterOptions.USAGE, errors.get(1));
  }

  /**
   * No peer started for want of a port: the launcher says why and exits 1 (not the command line's
   * fault), without reading a command, and leaves the log directory it was given as it was: there,
   * and with nothing written in it.
   */
  @Test
  void run_whenNoPortIsFree_exits1_andLeavesTheGivenLogDirEmpty(@TempDir Path dir) throws Exception {
    hold(65535);
    Path logs = dir.resolve("logs");
    Launcher launcher = new Launcher(new ClusterOptions(3, 2, 65535, "launcher-commands", Optional.of(logs)),
        out, err);

    assertEquals(1, launcher.run(new ByteArrayInputStream("status\n".getBytes(StandardCharsets.UTF_8))),
        () -> "exit code: " + outBytes + errBytes);
    assertEquals("cluster \"launcher-commands\", 3 peers, replicas 2; peer logs in " + logs + NL, said(),
        "the start line only: no peer, no prompt, no command run");
    assertEquals(List.of(noFreePort(65535)), errLines(), "the first peer tried alone");
    assertTrue(Files.isDirectory(logs), "the directory given is kept");
    try (var files = Files.list(logs)) {
      assertEquals(List.of(), files.toList(), "nothing left in it (its write check removed)");
    }
  }

  /** The temporary log directory the launcher made is removed when no peer wrote a log in it. */
  @Test
  void run_whenNoPeerStarted_removesTheTemporaryLogDirItMade() throws Exception {
    hold(65535);
    Launcher launcher = new Launcher(new ClusterOptions(1, 1, 65535, "launcher-commands", Optional.empty()),
        out, err);

    assertEquals(1, launcher.run(new ByteArrayInputStream(new byte[0])), () -> "exit code: " + outBytes + errBytes);
    Matcher m = Pattern.compile("peer logs in (.+)" + NL).matcher(said());
    assertTrue(m.find(), "the start line names the log directory");
    assertFalse(Files.exists(Path.of(m.group(1))), "removed: " + m.group(1));
  }

  /**
   * A first peer that exits at once (here refusing the replicas it was given) is reported as soon
   * as it exits, with its exit code, its last error line and its log; no peer started is the
   * launcher's failure, not the command line's: exit 1.
   */
  @Test
  @Timeout(value = 45, unit = TimeUnit.SECONDS) // well under the 60 s the launcher gives a live peer to get ready
  void run_whenTheFirstPeerExitsAtOnce_saysWhyAtOnce_andExits1(@TempDir Path logs) throws Exception {
    Launcher launcher = new Launcher(new ClusterOptions(2, 0, 26300, "launcher-commands", Optional.of(logs)), out, err);

    assertEquals(1, launcher.run(new ByteArrayInputStream(new byte[0])), () -> "exit code: " + outBytes + errBytes);
    Path log = logs.resolve("peer-1.log");
    assertEquals(List.of("cluster \"launcher-commands\", 2 peers, replicas 0; peer logs in " + logs,
        "peer-1 did not start (exit code 2): error: --replicas must be a whole number in 1..255: 0; see " + log),
        List.of(said().split(NL)));
    assertEquals(List.of(), errLines());
    assertEquals(List.of("peer-1"), List.copyOf(launcher.peers.keySet()), "one peer tried");
  }

  /**
   * A first peer whose process still runs at the ready limit, not yet answering as itself (a real
   * peer alone waits out the 1 s join timeout after its JVM starts, so 1 s is too little), did not
   * start: the launcher says so, with its log, and stops it with SIGTERM rather than SIGKILL (it may
   * have joined and taken keys already), waiting until it has exited. No peer started: exit 1,
   * without trying the other peers or reading a command.
   */
  @Test
  @Timeout(value = 45, unit = TimeUnit.SECONDS) // under the STOP_TIMEOUT a peer sent no SIGTERM would be waited
  void run_whenTheFirstPeerRunsButIsNotReadyInTime_stopsIt_andExits1(@TempDir Path logs) throws Exception {
    Launcher launcher = realPeersLauncher(3, logs, Duration.ofSeconds(1));

    assertEquals(1, runOnTestPorts(launcher, "status" + NL), () -> "exit code: " + outBytes + errBytes);
    Path log = logs.resolve("peer-1.log");
    assertEquals(List.of("cluster \"" + OWN_CLUSTER + "\", 3 peers, replicas 2; peer logs in " + logs,
        "peer-1 did not start; stopping it; see " + log), List.of(said().split(NL)),
        "no ready line, no prompt, no command run");
    assertEquals(List.of(), errLines());
    assertEquals(List.of("peer-1"), List.copyOf(launcher.peers.keySet()), "the other two not tried");
    Process peer = launcher.peers.get("peer-1").process();
    assertFalse(peer.isAlive(), "stopped, and waited for, before run returned");
    assertEquals(143, peer.exitValue(), "SIGTERM (143), not SIGKILL (137)");
    // Started (serving), it then left the cluster. (On a machine loaded enough to hold its JVM's
    // start past the limit, the stop can come before the peer starts: then there is nothing to hand off.)
    boolean started = Launcher.lastLine(log, "peer-1 serving ").isPresent();
    assertTrue(!started || Launcher.lastLine(log, "peer-1 left the cluster in ").isPresent(),
        "a peer that started leaves the cluster before it exits: " + Files.readString(log));
  }

  /**
   * A first peer that answers as itself within the ready limit, after a while of not answering (its
   * JVM starting, then joining), started: the launcher says where it is, waits for the ring, shows
   * the prompt, and at the end of the input stops it.
   */
  @Test
  @Timeout(value = 90, unit = TimeUnit.SECONDS)
  void run_whenTheFirstPeerAnswersWithinTheReadyLimit_takesItAsStarted(@TempDir Path logs) throws Exception {
    Launcher launcher = realPeersLauncher(1, logs, Duration.ofSeconds(30));

    assertEquals(0, runOnTestPorts(launcher, ""), () -> "exit code: " + outBytes + errBytes);
    PeerProcess peer = launcher.peers.get("peer-1");
    assertEquals(List.of("cluster \"" + OWN_CLUSTER + "\", 1 peer, replicas 2; peer logs in " + logs,
        "peer-1 ready at " + peer.url() + "/  (log " + logs.resolve("peer-1.log") + ")",
        "ring: peer-1 is in the ring",
        "open " + peer.url() + "/ in a browser; type help for commands",
        "> stopping 1 peer (each hands its keys to the peers that stay, if any; up to "
            + Launcher.STOP_TIMEOUT.toSeconds() + " s)", "the peer stopped"), List.of(said().split(NL)));
    assertEquals(List.of(), errLines());
    assertFalse(peer.isAlive(), "stopped at the end of the input");
  }

  // ---- add, with real peers ----

  /**
   * A peer added at the prompt whose process still runs at the ready limit did not start, as a
   * first peer does at the launch: the launcher says so, with its log, stops it with SIGTERM and
   * waits until it has exited before the next command. With no peer live, {@code add 2} starts the
   * first alone, as the launch does; that one not started, the second is not tried and no ring is
   * waited for: the prompt comes back. The limit (12 s) is one a peer that joins a running cluster
   * meets, but a peer alone does not: the launcher's peers are given 15 s to hear from a cluster
   * before they start alone ({@code -Dringmaster.join_timeout}, handed on to them), so peer-1
   * starts while a peer started by hand runs, and peer-2 once that one has left and peer-1 is killed.
   */
  @Test
  @Timeout(value = 75, unit = TimeUnit.SECONDS) // under the STOP_TIMEOUT a peer sent no SIGTERM would be waited
  void add_whenTheAddedPeerRunsButIsNotReadyInTime_stopsIt_waitsForIt_andStartsNoOther(@TempDir Path logs)
      throws Exception {
    Launcher launcher = realPeersLauncher(1, logs, Duration.ofSeconds(12));
    String commands = "kill peer-1" + NL + "add 2" + NL + "stop peer-2" + NL;

    int exit = onTestPorts(() -> {
      Peer byHand = startedByHand("by-hand"); // alone, within the stack's 1 s; only the launcher's peers get 15 s
      System.setProperty("ringmaster.join_timeout", "15s");
      return launcher.run(closingAtFirstRead(byHand, commands));
    });

    assertEquals(0, exit, () -> "exit code: " + outBytes + errBytes);
    PeerProcess first = launcher.peers.get("peer-1");
    Path log = logs.resolve("peer-2.log");
    assertEquals(List.of("cluster \"" + OWN_CLUSTER + "\", 1 peer, replicas 2; peer logs in " + logs,
        "peer-1 ready at " + first.url() + "/  (log " + logs.resolve("peer-1.log") + ")",
        "ring: peer-1 is in the ring",
        "open " + first.url() + "/ in a browser; type help for commands",
        "> peer-1 killed with SIGKILL (n ms); the others restore its keys from the replicas",
        "> peer-2 did not start; stopping it; see " + log,
        "> no live peer \"peer-2\"; live: []",
        "> "), List.of(said().replaceFirst("\\(\\d+ ms\\)", "(n ms)").split(NL)),
        "no ready line and no ring line for the add; the next command found peer-2 gone; nothing left to stop");
    assertEquals(List.of(), errLines());
    assertEquals(List.of("peer-1", "peer-2"), List.copyOf(launcher.peers.keySet()), "the second of add 2 not tried");
    Process peer = launcher.peers.get("peer-2").process();
    assertEquals(143, peer.exitValue(), "SIGTERM (143), not SIGKILL (137)");
    assertTrue(Launcher.lastLine(log, "peer-2 serving ").orElse("").contains("(view 0, 1 members, "),
        "it waited out the 15 s alone, as the limit meant: " + Files.readString(log));
    assertTrue(Launcher.lastLine(log, "peer-2 left the cluster in ").isPresent(),
        "it finished its start, then left the cluster: " + Files.readString(log));
  }

  // ---- helpers ----

  private Launcher launcher(int replicas, int basePort) {
    return new Launcher(new ClusterOptions(1, replicas, basePort, "launcher-commands", Optional.empty()), out, err);
  }

  /**
   * A launcher that starts real peers, from base port 26300, in a cluster of this JVM's own, giving
   * each {@code ready} to answer as itself; its peers are killed after the test.
   */
  private Launcher realPeersLauncher(int peers, Path logs, Duration ready) {
    Launcher launcher = new Launcher(new ClusterOptions(peers, 2, 26300, OWN_CLUSTER, Optional.of(logs)), out, err,
        ready);
    launchers.add(launcher);
    return launcher;
  }

  /**
   * Runs {@code launcher} on {@code input}, its peers finding each other on {@link PeerCluster}'s
   * JGroups ports (the launcher hands its ringmaster properties on), not on a demo's.
   */
  private static int runOnTestPorts(Launcher launcher, String input) {
    return onTestPorts(() -> launcher.run(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8))));
  }

  /** A launch, run by a test: its exit code. */
  private interface Launch {
    int run() throws IOException;
  }

  /**
   * Runs {@code launch} with the ringmaster properties of {@link #runOnTestPorts(Launcher, String)}
   * set, and puts back those and {@code ringmaster.join_timeout}, which it may set, as they were.
   */
  private static int onTestPorts(Launch launch) {
    int[] exit = new int[1];
    KeptProperties.keeping(() -> {
      System.setProperty("ringmaster.bind_port", Integer.toString(PeerCluster.JGROUPS_PORT));
      System.setProperty("ringmaster.initial_hosts", "127.0.0.1[" + PeerCluster.JGROUPS_PORT + "]");
      try {
        exit[0] = launch.run();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }, "ringmaster.bind_port", "ringmaster.initial_hosts", "ringmaster.join_timeout");
    return exit[0];
  }

  /**
   * A peer started by hand, in this JVM, in the cluster of the real peers started here (on the JGroups
   * ports the system properties give); closed after the test if it is not before.
   */
  private Peer startedByHand(String id) throws IOException {
    Peer peer = Peer.start(PeerOptions.parse(new String[] {"--id", id, "--http-port",
        Integer.toString(PeerCluster.freePort()), "--cluster", OWN_CLUSTER}, 0));
    byHand.add(peer);
    return peer;
  }

  /**
   * {@code input} as a launcher's stdin, with {@code peer} closed (a graceful leave) when the
   * launcher first reads it: once its first peers have started and it shows its prompt, before it
   * runs a command.
   */
  private static InputStream closingAtFirstRead(Peer peer, String input) {
    return new FilterInputStream(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8))) {
      private boolean closed;

      @Override
      public int read() throws IOException {
        closeFirst();
        return super.read();
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        closeFirst();
        return super.read(b, off, len);
      }

      private void closeFirst() {
        if (!closed) {
          closed = true;
          peer.close();
        }
      }
    };
  }

  /** What the launcher printed on stdout since the last call. */
  private String said() {
    String s = outBytes.toString(StandardCharsets.UTF_8);
    outBytes.reset();
    return s;
  }

  /** The lines the launcher printed on stderr since the last call. */
  private List<String> errLines() {
    String s = errBytes.toString(StandardCharsets.UTF_8);
    errBytes.reset();
    return s.isEmpty() ? List.of() : List.of(s.split(NL));
  }

  private static String noFreePort(int base) {
    return "error: cannot start a peer: java.io.IOException: no free port on 127.0.0.1 from --base-port " + base
        + " to 65535";
  }

  /**
   * Runs {@code line} and returns what it printed with its one number (the milliseconds) taken out,
   * checked to be no more than the command took.
   */
  private List<String> timed(Launcher launcher, String line) {
    long before = System.nanoTime();
    assertTrue(launcher.command(line));
    long took = (System.nanoTime() - before) / 1_000_000;
    String printed = said();
    assertTrue(printed.endsWith(NL) && printed.indexOf(NL) == printed.length() - NL.length(), "one line: " + printed);
    Matcher m = Pattern.compile("(.*?)(-?\\d+)( ms.*)").matcher(printed.substring(0, printed.length() - NL.length()));
    assertTrue(m.matches(), "a line with the milliseconds: " + printed);
    long millis = Long.parseLong(m.group(2));
    assertTrue(millis >= 0 && millis <= took, line + ": " + millis + " ms, in a command that took " + took + " ms");
    return List.of(m.group(1), m.group(3));
  }

  /** A stand-in for a live peer: a process that sleeps, at {@code port}. */
  private void standIn(Launcher launcher, String id, int port) throws IOException {
    launcher.peers.put(id, new PeerProcess(id, port, started("exec sleep 60"), Path.of("logs", id + ".log")));
  }

  /** A shell running {@code script}; one that prints a line first (its traps set) is waited for until it has. */
  private Process started(String script) throws IOException {
    Process p = new ProcessBuilder("sh", "-c", script).redirectErrorStream(true).start();
    processes.add(p);
    if (script.contains("echo up")) {
      assertEquals("up", new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))
          .readLine(), "the stand-in's traps are set");
    }
    return p;
  }

  private HttpServer server() throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    servers.add(server);
    server.start();
    return server;
  }

  private static void reply(HttpServer server, String path, String json) {
    server.createContext(path, ex -> {
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "application/json");
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
  }

  /** Makes {@code port} on 127.0.0.1 busy for the rest of the test. */
  private void hold(int port) throws IOException {
    held.add(new ServerSocket(port, 1, InetAddress.getLoopbackAddress()));
  }

  /** Makes a privileged {@code port} busy if this user may listen on it (root); else the launcher may not either. */
  private void holdOrRefused(int port) {
    try {
      hold(port);
    } catch (IOException refused) {
      // not root: the port is refused to the launcher as to this test
    }
  }

  /**
   * The first port any user may listen on, read here in one read of the whole setting: Linux's if
   * there is one, else 1024.
   */
  private static int unprivilegedPortStart() {
    Path setting = Path.of("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    try (InputStream in = Files.newInputStream(setting)) {
      return Integer.parseInt(new String(in.readAllBytes(), StandardCharsets.US_ASCII).strip());
    } catch (IOException notLinux) {
      return 1024;
    }
  }

  /** The highest privileged port; a system where every port is unprivileged has none to test. */
  private static int privilegedPort() {
    int start = unprivilegedPortStart();
    assumeTrue(start > 1, "every port from 1 is unprivileged here: ip_unprivileged_port_start = " + start);
    return start - 1;
  }
}
