package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterConfig;
import io.ringmaster.RingmasterException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class OptionsTest {

  /**
   * {@link Main#run}, for a command line that must not start a peer: one that starts anyway is
   * closed at once (a launcher reads no commands), so the test fails on its exit code rather than
   * waiting for a peer that never stops.
   */
  private static int runExpectingNoPeer(String[] args, PrintStream out, PrintStream err) {
    return Main.run(args, out, err, InputStream.nullInputStream(), Peer::close);
  }

  private static String refusal(String... args) {
    return assertThrows(UsageException.class, () -> PeerOptions.parse(args, 0)).getMessage();
  }

  @Test
  void parse_fullCommandLine_readsEveryFlag() {
    PeerOptions o = PeerOptions.parse(new String[] {"--id", "p1", "--http-port", "8081", "--replicas", "3",
        "--zone", "z1", "--weight", "2.5", "--cluster", "c", "--parent-pid", "42", "--tombstone-grace", "90",
        "--fault-injection"}, 0);
    assertEquals(new PeerOptions(Optional.of("p1"), 8081, Optional.of(3), Optional.of("z1"), Optional.of(2.5),
        Optional.empty(), Optional.of("c"), Optional.of(42L), Optional.of(90), true), o);
    assertEquals(Duration.ofSeconds(90), o.tombstoneGrace());
    assertEquals("http://127.0.0.1:8081", o.endpoint());
  }

  @Test
  void builder_announcesThisBuildsMessages_overAConfigFile(@TempDir Path dir) throws Exception {
    Path config = Files.writeString(dir.resolve("node.json"),
        "{\"nodeId\": \"p\", \"applicationVersion\": \"mine\", \"endpoint\": \"http://elsewhere\"}");
    PeerOptions o = PeerOptions.parse(new String[] {"--http-port", "8081", "--config", config.toString()}, 0);
    RingmasterConfig c = o.builder().buildConfig();
    assertEquals(Wire.APPLICATION_VERSION, c.applicationVersion());
    assertEquals("http://127.0.0.1:8081", c.endpoint());
  }

  @Test
  void parse_badValues_nameTheFlagAndTheValue() {
    assertEquals("--http-port must be a whole number in 1..65535: abc", refusal("--id", "p", "--http-port", "abc"));
    assertEquals("--http-port must be a whole number in 1..65535: 70000", refusal("--id", "p", "--http-port", "70000"));
    assertEquals("--http-port is required", refusal("--id", "p"));
    assertEquals("--replicas must be a whole number in 1..255: 0", refusal("--id", "p", "--http-port", "1", "--replicas", "0"));
    assertEquals("--weight must be a finite number >= 0: -1", refusal("--id", "p", "--http-port", "1", "--weight", "-1"));
    assertEquals("--weight must be a finite number >= 0: NaN", refusal("--id", "p", "--http-port", "1", "--weight", "NaN"));
    assertEquals("--weight is too small to tell from 0 as a double: 1e-400",
        refusal("--id", "p", "--http-port", "1", "--weight", "1e-400"));
    assertEquals("--weight must be a finite number >= 0: -1e-400",
        refusal("--id", "p", "--http-port", "1", "--weight", "-1e-400"));
    // The other forms Java reads, a suffix or hex, are no way past it.
    for (String tiny : List.of("1e-400d", "0x1p-2000")) {
      assertEquals("--weight is too small to tell from 0 as a double: " + tiny,
          refusal("--id", "p", "--http-port", "1", "--weight", tiny));
      assertEquals("--weight must be a finite number >= 0: -" + tiny,
          refusal("--id", "p", "--http-port", "1", "--weight", "-" + tiny));
    }
    // A zero with an exponent is 0: the exponent's digits are not the significand's (a decimal cut
    // at a "p" rather than its "e", or a hex number cut at an "e" rather than its "p", would count them).
    for (String zero : List.of("0", "0d", "0x0p0", "0e5", "0x0p1")) {
      assertEquals(Optional.of(0.0),
          PeerOptions.parse(new String[] {"--id", "p", "--http-port", "1", "--weight", zero}, 0).weight(), zero);
    }
    assertEquals("unknown flag --port", refusal("--id", "p", "--port", "1"));
    assertEquals("--id needs a value", refusal("--id", "--http-port", "1"));
    assertEquals("--http-port needs a value", refusal("--id", "p", "--http-port"), "the last flag, with no value");
    assertEquals("--id is given twice", refusal("--id", "a", "--id", "b", "--http-port", "1"));
    assertEquals("unexpected argument \"extra\": flags look like --name value", refusal("extra"));
    assertEquals("--id is required (or a --config that sets nodeId)", refusal("--http-port", "1"));
    assertEquals("--zone must not be empty: \" \"", refusal("--id", "p", "--http-port", "1", "--zone", " "));
    assertEquals("--tombstone-grace must be a whole number in 1..315360000: 0",
        refusal("--id", "p", "--http-port", "1", "--tombstone-grace", "0"));
    // Values only the node's builder checks: reported under the flag that gave them.
    String id = "i".repeat(300);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PeerOptions.parse(new String[] {"--id", id, "--http-port", "1"}, 0).builder());
    assertTrue(e.getMessage().startsWith("--id: nodeId is 300 bytes in UTF-8"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(
        new String[] {"--id", "p", "--http-port", "1", "--zone", "z".repeat(256)}, 0).builder());
    assertTrue(e.getMessage().startsWith("--zone: zone is 256 bytes in UTF-8"), e.getMessage());
  }

  /** A config file that keeps the localhost stack (and its ports) gets the same check at build. */
  @Test
  void builder_httpPortAmongTheClusterPorts_withAConfigFileKeepingTheLocalhostStack_isRefused(@TempDir Path dir)
      throws IOException {
    Path keeps = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\"}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(
        new String[] {"--http-port", "7801", "--config", keeps.toString()}, 0).builder());
    assertEquals("--http-port 7801 is in the range the peers' cluster ports use (7800-7922); choose another ("
        + keeps + " keeps the stack ringmaster/jgroups/localhost-tcp.xml)", e.getMessage());
    Path moves = Files.writeString(dir.resolve("moved.json"), "{\"nodeId\": \"p\", \"bindPort\": 9800}");
    assertEquals(Optional.of(9800), PeerOptions.parse(new String[] {"--http-port", "7801", "--config",
        moves.toString()}, 0).builder().buildConfig().bindPort(), "a file that moves the bind port leaves it free");
  }

  /**
   * --parent-pid takes any process id from 1: a launcher run as a container's first process is
   * pid 1. 0 is refused naming the flag and the value.
   */
  @Test
  void parse_parentPid1_isTaken_0_isRefusedNamingTheFlag() {
    assertEquals(Optional.of(1L), PeerOptions.parse(new String[] {"--id", "p", "--http-port", "1", "--parent-pid", "1"}, 0)
        .parentPid(), "pid 1");
    assertEquals("--parent-pid must be a whole number >= 1: 0",
        refusal("--id", "p", "--http-port", "1", "--parent-pid", "0"));
  }

  /** --cluster and --replicas reach the node's settings, over the config file's (precedence: flags last). */
  @Test
  void builder_clusterAndReplicasFlags_overTheConfigFile(@TempDir Path dir) throws IOException {
    Path config = Files.writeString(dir.resolve("node.json"),
        "{\"nodeId\": \"p\", \"clusterName\": \"from-file\", \"replicas\": 3}");
    RingmasterConfig fromFile = PeerOptions.parse(new String[] {"--http-port", "8081", "--config", config.toString()}, 0)
        .builder().buildConfig();
    assertEquals("from-file", fromFile.clusterName(), "no flag: the file's");
    assertEquals(3, fromFile.replicas(), "no flag: the file's");
    RingmasterConfig flags = PeerOptions.parse(new String[] {"--http-port", "8081", "--config", config.toString(),
        "--cluster", "from-flag", "--replicas", "1"}, 0).builder().buildConfig();
    assertEquals("from-flag", flags.clusterName(), "--cluster");
    assertEquals(1, flags.replicas(), "--replicas");
  }

  /**
   * With --weight the settings are checked early (for a weight too small for the virtual nodes);
   * any other refusal, a config file's stack that is no JGroups stack here, is left to where the
   * node is built, which names it: the builder is still handed back.
   */
  @Test
  void builder_weightWithAConfigNamingABadStack_leavesTheStackErrorToTheBuild(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("bad-stack.xml"), "<not-a-stack/>");
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\", \"jgroupsConfig\": \"bad-stack.xml\"}");
    Ringmaster.Builder b = PeerOptions.parse(new String[] {"--http-port", "8081", "--config", config.toString(),
        "--weight", "2"}, 0).builder();
    assertTrue(b != null, "a builder, for the node's build to report the stack");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::buildConfig);
    assertTrue(e.getMessage().contains("bad-stack.xml") && !e.getMessage().startsWith("--weight"), e.getMessage());
  }

  /**
   * The launcher's own command line refuses a -Dringmaster.bind_port without -Dringmaster.initial_hosts
   * (handed on to every peer, each would be left in a cluster of its own), naming both.
   */
  @Test
  void clusterParse_bindPortWithoutInitialHosts_isRefused() {
    KeptProperties.keeping(() -> {
      System.setProperty("ringmaster.bind_port", "9000");
      System.clearProperty("ringmaster.initial_hosts");
      String message = assertThrows(UsageException.class, () -> ClusterOptions.parse(new String[0], 0)).getMessage();
      assertTrue(message.startsWith("-Dringmaster.bind_port=9000 moves the peers' cluster ports")
          && message.contains("-Dringmaster.initial_hosts=127.0.0.1[9000]"), message);
    }, "ringmaster.bind_port", "ringmaster.initial_hosts");
  }

  /** A launcher given the peers' cluster port without where they find each other: an error naming both. */
  @Test
  void launcher_bindPortWithoutInitialHosts_isRefused() {
    Properties properties = new Properties();
    properties.setProperty("ringmaster.bind_port", "9000");
    UsageException e = assertThrows(UsageException.class, () -> ClusterOptions.checkForwarded(properties));
    assertEquals("-Dringmaster.bind_port=9000 moves the peers' cluster ports, but they look for each other at"
        + " 127.0.0.1[7800] unless -Dringmaster.initial_hosts says otherwise: set it too (for example"
        + " -Dringmaster.initial_hosts=127.0.0.1[9000])", e.getMessage());
    properties.setProperty("ringmaster.initial_hosts", "127.0.0.1[9000]");
    ClusterOptions.checkForwarded(properties);
    ClusterOptions.checkForwarded(new Properties());
    Properties address = new Properties();
    address.setProperty("ringmaster.bind_addr", "127.0.0.2");
    e = assertThrows(UsageException.class, () -> ClusterOptions.checkForwarded(address));
    assertEquals("-Dringmaster.bind_addr=127.0.0.2 moves the peers' cluster address, but they look for each other at"
        + " 127.0.0.1[7800] unless -Dringmaster.initial_hosts says otherwise: set it too (for example"
        + " -Dringmaster.initial_hosts=127.0.0.2[7800])", e.getMessage());
    // The stack's own address and port move nothing.
    Properties unmoved = new Properties();
    unmoved.setProperty("ringmaster.bind_addr", "127.0.0.1");
    unmoved.setProperty("ringmaster.bind_port", "7800");
    ClusterOptions.checkForwarded(unmoved);
    // An empty one, which every peer would refuse, is refused here, not taken for a moved value.
    for (String name : List.of("ringmaster.initial_hosts", "ringmaster.bind_port", "ringmaster.bind_addr")) {
      Properties empty = new Properties();
      empty.setProperty(name, "");
      e = assertThrows(UsageException.class, () -> ClusterOptions.checkForwarded(empty), name);
      assertEquals("-D" + name + " is set but empty: every peer would refuse it; unset it, or give it a value",
          e.getMessage());
    }
  }

  /**
   * A peer whose node fails its start after the first ring (here its INFO line throws) leaves at
   * once: the rebalancer's listener, waiting for the rebalancer in its first callback, does not
   * hold the leave up for the whole leaveTimeout.
   */
  @Test
  void peer_whoseStartFailsAfterTheFirstRing_isNotHeldUpByItsRebalancer(@TempDir Path dir) throws Exception {
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"late\", \"clusterName\": \"late-"
        + ProcessHandle.current().pid() + "\", \"jgroupsConfig\": \"ringmaster/jgroups/in-jvm.xml\"}");
    Logger log = Logger.getLogger(Ringmaster.class.getName());
    Filter before = log.getFilter();
    List<String> warnings = new CopyOnWriteArrayList<>();
    log.setFilter(record -> {
      Object[] params = record.getParameters();
      if (params != null && params.length > 0 && "late".equals(params[0])) {
        if (String.valueOf(record.getMessage()).contains(" joined ")) {
          throw new IllegalStateException("a logging filter's bug");
        }
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
          warnings.add(record.getMessage());
        }
      }
      return before == null || before.isLoggable(record);
    });
    try {
      PeerOptions options = PeerOptions.parse(new String[] {"--http-port", Integer.toString(PeerCluster.freePort()),
          "--config", config.toString()}, 0);
      RingmasterException e = assertThrows(RingmasterException.class,
          () -> Peer.start(options).close()); // closed if it starts after all
      assertTrue(e.getMessage().contains("failed to finish its start, so it left again"), e.getMessage());
    } finally {
      log.setFilter(before);
    }
    assertEquals(List.of(), warnings, "the leave waited for no listener in vain");
  }

  /** The example config names the localhost stack in the jar; a file with its bytes is the same stack, checked alike. */
  @Test
  void builder_httpPortAmongTheClusterPorts_withTheExampleConfig_isRefused(@TempDir Path dir) throws IOException {
    Path repo = Path.of("..").toAbsolutePath().normalize();
    Path example = repo.resolve("config/node.example.json");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(
        new String[] {"--http-port", "7800", "--config", example.toString()}, 0).builder());
    assertEquals("--http-port 7800 is in the range the peers' cluster ports use (7800-7922); choose another ("
        + example + " keeps the stack ringmaster/jgroups/localhost-tcp.xml)", e.getMessage());
    Path copy = Files.writeString(dir.resolve("copy.json"), "{\"nodeId\": \"p\", \"jgroupsConfig\": \""
        + repo.resolve("config/jgroups/localhost-tcp.xml").toString().replace("\\", "\\\\") + "\"}");
    assertThrows(IllegalArgumentException.class, () -> PeerOptions.parse(
        new String[] {"--http-port", "7800", "--config", copy.toString()}, 0).builder(), "the stack's copy in a file");

    Path changed = Files.writeString(dir.resolve("stack.xml"), Files.readString(
        repo.resolve("config/jgroups/localhost-tcp.xml")).replace("7800", "9800"));
    Path other = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\", \"jgroupsConfig\": \"stack.xml\"}");
    assertEquals(changed.toString(), PeerOptions.parse(new String[] {"--http-port", "7800", "--config",
        other.toString()}, 0).builder().buildConfig().jgroupsConfig(), "a stack of other ports is left to JGroups");
  }

  @Test
  void parse_httpPortAmongTheClusterPorts_isRefusedWithTheLocalhostStack_only() {
    for (String bad : List.of("7800", "7819", "7850", "7900", "7922")) {
      assertEquals("--http-port " + bad + " is in the range the peers' cluster ports use (7800-7922); choose another",
          refusal("--id", "p", "--http-port", bad));
    }
    assertEquals(7799, PeerOptions.parse(new String[] {"--id", "p", "--http-port", "7799"}, 0).httpPort());
    assertEquals(7923, PeerOptions.parse(new String[] {"--id", "p", "--http-port", "7923"}, 0).httpPort());
    // A config file may name another stack or bind port: the range is the localhost stack's.
    assertEquals(7800, PeerOptions.parse(new String[] {"--http-port", "7800", "--config", "node.json"}, 0).httpPort());
  }

  @Test
  void quoted_putsABackslashBeforeQuotesAndBackslashes_andShowsInvisibleCharactersAsJavaEscapes() {
    assertEquals("\"{\\\"ids\\\": [\\\"p\\\\1\\\"]}\"", Flags.quoted("{\"ids\": [\"p\\1\"]}"));
    assertEquals("\"a\\u000ab\u00e9\"", Flags.quoted("a\nb\u00e9"));
  }

  @Test
  void clusterParse_badPeers_namesTheFlag() {
    assertEquals("--peers must be a whole number in 1..20: 50",
        assertThrows(UsageException.class, () -> ClusterOptions.parse(new String[] {"--peers", "50"}, 0)).getMessage());
    assertEquals(3, ClusterOptions.parse(new String[0], 0).peers());
    assertEquals("--cluster: clusterName must be 1 to 200 printable ASCII characters without a space at either end:"
        + " \"caf\\u00e9\"",
        assertThrows(UsageException.class, () -> ClusterOptions.parse(new String[] {"--cluster", "caf\u00e9"}, 0))
            .getMessage());
    assertTrue(refusal("--id", "p", "--http-port", "1", "--cluster", "a b ").startsWith("--cluster: clusterName must"));
  }

  @Test
  void clusterParse_basePortOverlappingTheClusterPorts_namesTheFlagAndBothRanges() {
    for (String bad : List.of("7781", "7800", "7900", "7922")) {
      String message = assertThrows(UsageException.class,
          () -> ClusterOptions.parse(new String[] {"--base-port", bad}, 0)).getMessage();
      assertTrue(message.startsWith("--base-port " + bad + ": the peers' HTTP ports (" + bad + "-"
          + (Integer.parseInt(bad) + ClusterOptions.MAX_PEERS - 1) + ") would overlap"), message);
      assertTrue(message.endsWith("would overlap their cluster ports (7800-7922); choose one below 7781 or above 7922"),
          message);
    }
    assertEquals(7780, ClusterOptions.parse(new String[] {"--base-port", "7780"}, 0).basePort());
    assertEquals(7923, ClusterOptions.parse(new String[] {"--base-port", "7923"}, 0).basePort());
  }

  /**
   * Peers whose cluster ports the launcher's -Dringmaster.bind_port moves (handed on to them): the
   * ports the base port and a peer's HTTP port must leave clear move with them, and the stack's
   * own range is free for HTTP.
   */
  @Test
  void movedClusterPorts_areTheOnesTheBaseAndHttpPortsMustLeaveClear() {
    KeptProperties.keeping(() -> {
      System.setProperty("ringmaster.bind_port", "9000");
      System.setProperty("ringmaster.initial_hosts", "127.0.0.1[9000]");
      String message = assertThrows(UsageException.class,
          () -> ClusterOptions.parse(new String[] {"--base-port", "9010"}, 0)).getMessage();
      assertTrue(message.endsWith("would overlap their cluster ports (9000-9122); choose one below 8981 or above 9122"),
          message);
      assertEquals(7800, ClusterOptions.parse(new String[] {"--base-port", "7800"}, 0).basePort());
      assertEquals(7850, PeerOptions.parse(new String[] {"--id", "p", "--http-port", "7850"}, 0).httpPort());
      assertEquals("--http-port 9100 is in the range the peers' cluster ports use (9000-9122); choose another",
          refusal("--id", "p", "--http-port", "9100"));
    }, "ringmaster.bind_port", "ringmaster.initial_hosts");
    assertEquals("7800-7922", ClusterOptions.clusterPorts(new Properties()).toString());
    Properties lowest = new Properties();
    lowest.setProperty("ringmaster.bind_port", "1");
    assertEquals("1-123", ClusterOptions.clusterPorts(lowest).toString(), "port 1 is a port: it moves them");
    // A bind port whose range would run past 65535 is refused, not quietly taken for 7800.
    Properties high = new Properties();
    high.setProperty("ringmaster.bind_port", "65500");
    high.setProperty("ringmaster.initial_hosts", "127.0.0.1[65500]");
    assertEquals("-Dringmaster.bind_port=65500: the peers' cluster ports (that port, the 19 after it and their"
        + " failure detection's, 100 above) would run past 65535; choose one up to 65413",
        assertThrows(UsageException.class, () -> ClusterOptions.checkForwarded(high)).getMessage());
    high.setProperty("ringmaster.bind_port", "65413");
    high.setProperty("ringmaster.initial_hosts", "127.0.0.1[65413]");
    ClusterOptions.checkForwarded(high);
    assertEquals("65413-65535", ClusterOptions.clusterPorts(high).toString());
    KeptProperties.keeping(() -> { // a peer started by hand refuses it too
      System.setProperty("ringmaster.bind_port", "65500");
      System.setProperty("ringmaster.initial_hosts", "127.0.0.1[65500]");
      assertTrue(assertThrows(UsageException.class, () -> PeerOptions.parse(new String[] {"--id", "p", "--http-port",
          "7850"}, 0)).getMessage().startsWith("-Dringmaster.bind_port=65500: the peers' cluster ports"));
    }, "ringmaster.bind_port", "ringmaster.initial_hosts");
  }

  @Test
  void launcher_commandWithWordsItDoesNotTake_saysSo_andDoesNothing() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Launcher launcher = new Launcher(ClusterOptions.parse(new String[0], 0),
        new PrintStream(bytes, true, StandardCharsets.UTF_8), System.err);
    assertTrue(launcher.command("add 5 6"));
    assertTrue(launcher.command("add 0"));
    assertTrue(launcher.command("add 21"));
    assertTrue(launcher.command("add two"));
    assertTrue(launcher.command("stop peer-1 peer-2"));
    assertTrue(launcher.command("quit now"), "not taken as quit");
    assertTrue(launcher.command("get my key"));
    // With no peer running: what needs one says so; what is malformed is refused first.
    assertTrue(launcher.command("put k"));
    assertTrue(launcher.command("get k"));
    assertTrue(launcher.command("load 5"));
    assertTrue(launcher.command("load 0"));
    assertTrue(launcher.command("load " + (Launcher.MAX_LOAD + 1)));
    assertEquals(List.of("\"add\" takes one argument; not understood: \"6\"; type help",
        "add takes a whole number of peers from 1 to 20 (at most 20 run at once): 0",
        "add takes a whole number of peers from 1 to 20 (at most 20 run at once): 21",
        "add takes a whole number of peers from 1 to 20 (at most 20 run at once): two",
        "\"stop\" takes one argument; not understood: \"peer-2\"; type help",
        "\"quit\" takes no argument; not understood: \"now\"; type help",
        "\"get\" takes one argument; not understood: \"key\"; type help",
        "usage: put <key> <value>",
        "no live peers; add one",
        "no live peers; add one",
        "load takes a whole number of keys from 1 to " + Launcher.MAX_LOAD + ": 0",
        "load takes a whole number of keys from 1 to " + Launcher.MAX_LOAD + ": " + (Launcher.MAX_LOAD + 1)),
        List.of(bytes.toString(StandardCharsets.UTF_8).split("\n")));
    assertFalse(launcher.command("quit"));
  }

  /**
   * Past port 65535 the launcher's search for a peer's HTTP port starts over from --base-port: it
   * went on upward only, so that after 21 peers started (and stopped) from the highest base port it
   * takes, every start failed with "no free port", one peer running or none.
   */
  @Test
  void launcher_freePort_startsOverFromTheBasePort_pastTheLastPort() throws IOException {
    Launcher launcher = new Launcher(ClusterOptions.parse(new String[] {"--base-port", "65515"}, 0), System.out,
        System.err);
    List<Integer> ports = new ArrayList<>();
    for (int i = 0; i < 22; i++) { // one more than the 21 ports from 65515: nothing listens on them meanwhile
      ports.add(launcher.freePort());
    }
    assertTrue(ports.stream().allMatch(p -> p >= 65515 && p <= 65535), ports.toString());
    assertTrue(IntStream.range(1, ports.size()).anyMatch(i -> ports.get(i) < ports.get(i - 1)),
        "started over from the base port: " + ports);
  }

  /**
   * Starting over never hands out the port of a peer still running: one just started may not listen
   * on it yet, so the probe alone would find it free and give it to a second peer.
   */
  @Test
  void launcher_freePort_neverGivesThePortOfARunningPeer(@TempDir Path dir) throws Exception {
    Launcher launcher = new Launcher(ClusterOptions.parse(new String[] {"--base-port", "65515"}, 0), System.out,
        System.err);
    Process running = new ProcessBuilder("sleep", "60").start(); // stands for a peer not listening yet
    try {
      synchronized (launcher.peers) {
        launcher.peers.put("peer-1", new PeerProcess("peer-1", 65517, running, dir.resolve("peer-1.log")));
      }
      List<Integer> ports = new ArrayList<>();
      for (int i = 0; i < 25; i++) {
        ports.add(launcher.freePort());
      }
      assertFalse(ports.contains(65517), ports.toString());
    } finally {
      running.destroyForcibly().waitFor();
    }
  }

  /**
   * {@code stop} ends a peer with SIGTERM, which lets its shutdown hook hand its keys off (a JVM
   * ends with 143 then), and {@code kill} with SIGKILL (137), saying which it did: swapped, a
   * {@code stop} would lose the keys only that peer held. Two processes stand for the peers.
   */
  @Test
  void launcher_stopSendsSigterm_andKillSigkill_eachSayingWhatItDid(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Launcher launcher = new Launcher(ClusterOptions.parse(new String[] {"--replicas", "1"}, 0),
        new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
    Process one = new ProcessBuilder("sleep", "60").start();
    Process two = new ProcessBuilder("sleep", "60").start();
    try {
      synchronized (launcher.peers) {
        launcher.peers.put("peer-1", new PeerProcess("peer-1", 65001, one, dir.resolve("peer-1.log")));
        launcher.peers.put("peer-2", new PeerProcess("peer-2", 65002, two, dir.resolve("peer-2.log")));
      }
      assertTrue(launcher.command("stop peer-1"));
      assertEquals(143, one.exitValue(), "SIGTERM");
      assertTrue(out.toString(StandardCharsets.UTF_8).contains("peer-1 stopped after "), out::toString);
      assertTrue(two.isAlive(), "only the peer named");
      assertTrue(launcher.command("kill peer-2"));
      assertEquals(137, two.exitValue(), "SIGKILL");
      assertTrue(out.toString(StandardCharsets.UTF_8).contains("peer-2 killed with SIGKILL ("), out::toString);
      assertTrue(out.toString(StandardCharsets.UTF_8).contains("with --replicas 1 the keys only it held are gone"),
          out::toString);
    } finally {
      one.destroyForcibly().waitFor();
      two.destroyForcibly().waitFor();
    }
  }

  /**
   * {@code --fault-injection} takes no value and is off unless given: a peer started by hand keeps
   * {@code /admin/split} closed; given twice, or followed by a value, it is refused, naming it.
   */
  @Test
  void parse_faultInjection_isASwitch_offUnlessGiven() {
    assertFalse(PeerOptions.parse(new String[] {"--id", "p", "--http-port", "1"}, 0).faultInjection());
    assertTrue(PeerOptions.parse(new String[] {"--fault-injection", "--id", "p", "--http-port", "1"}, 0).faultInjection(),
        "first");
    assertTrue(PeerOptions.parse(new String[] {"--id", "p", "--http-port", "1", "--fault-injection"}, 0).faultInjection(),
        "last");
    assertEquals("--fault-injection is given twice",
        refusal("--id", "p", "--http-port", "1", "--fault-injection", "--fault-injection"));
    assertEquals("unexpected argument \"true\": flags look like --name value (--fault-injection takes no value)",
        refusal("--id", "p", "--http-port", "1", "--fault-injection", "true"));
    assertTrue(PeerOptions.USAGE.contains("[--fault-injection]"), PeerOptions.USAGE);
  }

  /** Every peer the launcher starts may be split off and healed: its {@code split} needs that. */
  @Test
  void thePeersTheLauncherStarts_haveFaultInjectionOn() {
    List<String> command = PeerProcess.command("peer-1", 8087, ClusterOptions.parse(new String[0], 0));
    assertTrue(command.subList(command.indexOf("peer"), command.size()).contains("--fault-injection"),
        command::toString);
  }

  /** The launcher's {@code --replicas} reaches every peer it starts. */
  @Test
  void thePeersTheLauncherStarts_getItsReplicas() {
    for (String replicas : List.of("1", "3")) {
      List<String> command = PeerProcess.command("peer-1", 8087,
          ClusterOptions.parse(new String[] {"--replicas", replicas}, 0));
      int at = command.indexOf("--replicas");
      assertTrue(at > 0, command::toString);
      assertEquals(replicas, command.get(at + 1), command::toString);
    }
  }

  /**
   * The {@code -Dringmaster.*} and {@code -Djgroups.*} system properties the launcher was started
   * with reach every peer it starts, as JVM options, in the order of their names; others do not.
   */
  @Test
  void thePeersTheLauncherStarts_getItsRingmasterAndJgroupsProperties() {
    ClusterOptions options = ClusterOptions.parse(new String[0], 0);
    List<String> names = List.of("ringmaster.zz_passed_on", "jgroups.zz_passed_on", "zz.not_passed_on");
    names.forEach(name -> System.setProperty(name, "v-" + name));
    try {
      List<String> command = PeerProcess.command("peer-1", 8087, options);
      List<String> given = command.subList(0, command.indexOf("-cp")).stream()
          .filter(arg -> arg.contains("zz")).toList();
      assertEquals(List.of("-Djgroups.zz_passed_on=v-jgroups.zz_passed_on",
          "-Dringmaster.zz_passed_on=v-ringmaster.zz_passed_on"), given, command::toString);
      assertTrue(command.stream().noneMatch(arg -> arg.contains("zz.not_passed_on")), command::toString);
    } finally {
      names.forEach(System::clearProperty);
    }
  }

  /** A peer whose process has exited is not alive (the launcher lists it as gone), one running is. */
  @Test
  void peerProcess_isAlive_whileItsProcessRuns(@TempDir Path dir) throws Exception {
    Process exited = new ProcessBuilder("true").start();
    assertEquals(0, exited.waitFor());
    assertFalse(new PeerProcess("peer-1", 65001, exited, dir.resolve("peer-1.log")).isAlive());
    Process running = new ProcessBuilder("sleep", "60").start();
    try {
      assertTrue(new PeerProcess("peer-2", 65002, running, dir.resolve("peer-2.log")).isAlive());
    } finally {
      running.destroyForcibly().waitFor();
    }
  }

  /**
   * The launcher's {@code put} and {@code get} send the key as one path segment, escaped: a key
   * with "%", "/", "#" or a space is the key, not a path, a fragment or an escape. A stand-in peer
   * notes the raw paths it is sent.
   */
  @Test
  void launcher_putAndGet_sendTheKeyEscaped_asOnePathSegment(@TempDir Path dir) throws Exception {
    List<String> sent = new CopyOnWriteArrayList<>();
    HttpServer server = HttpServer.create(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      sent.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getRawPath() + " "
          + new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      byte[] reply = "{}".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, reply.length);
      exchange.getResponseBody().write(reply);
      exchange.close();
    });
    server.start();
    Process alive = new ProcessBuilder("sleep", "60").start(); // stands for the peer's process
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      Launcher launcher = new Launcher(ClusterOptions.parse(new String[0], 0),
          new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
      synchronized (launcher.peers) {
        launcher.peers.put("peer-1", new PeerProcess("peer-1", server.getAddress().getPort(), alive,
            dir.resolve("peer-1.log")));
      }
      assertTrue(launcher.command("put 50%/a#b v w"));
      assertTrue(launcher.command("get 50%/a#b"));
      assertEquals(List.of("PUT /kv/50%25%2Fa%23b v w", "GET /kv/50%25%2Fa%23b "), sent);
      assertTrue(out.toString(StandardCharsets.UTF_8).contains("200 via peer-1: {}"), out::toString);
    } finally {
      alive.destroyForcibly().waitFor();
      server.stop(0);
    }
  }

  @Test
  void launcher_logDirThatIsAFile_exits2NamingTheFlag(@TempDir Path dir) throws IOException {
    Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = new Launcher(ClusterOptions.parse(new String[] {"--log-dir", file.toString()}, 0), System.out,
        new PrintStream(err, true, StandardCharsets.UTF_8)).run(InputStream.nullInputStream());
    assertEquals(2, code);
    String[] lines = err.toString(StandardCharsets.UTF_8).split("\n");
    assertTrue(lines[0].startsWith("error: --log-dir " + file + ": cannot create the directory: "), lines[0]);
    assertTrue(lines[1].startsWith("usage: cluster"), lines[1]);
  }

  /**
   * A directory that exists but takes no files: /proc, where even root (as CI runs) cannot create
   * one. Before, each peer's start failed with a line naming only the log file's path.
   */
  @Test
  void launcher_logDirThatTakesNoFiles_exits2NamingTheFlag() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = new Launcher(ClusterOptions.parse(new String[] {"--log-dir", "/proc"}, 0), System.out,
        new PrintStream(err, true, StandardCharsets.UTF_8)).run(InputStream.nullInputStream());
    assertEquals(2, code);
    String[] lines = err.toString(StandardCharsets.UTF_8).split("\n");
    assertTrue(lines[0].startsWith("error: --log-dir /proc: cannot write a file in the directory: java.nio.file."),
        lines[0]);
    assertTrue(lines[1].startsWith("usage: cluster"), lines[1]);
  }

  @Test
  void main_badArguments_printsOneLineErrorAndUsage_exits2() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = runExpectingNoPeer(new String[] {"peer", "--id", "p", "--http-port", "x"}, System.out,
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    String[] lines = err.toString(StandardCharsets.UTF_8).split("\n");
    assertEquals("error: --http-port must be a whole number in 1..65535: x", lines[0]);
    assertTrue(lines[1].startsWith("usage: "), lines[1]);
    assertEquals(2, runExpectingNoPeer(new String[] {"nope"}, System.out, new PrintStream(new ByteArrayOutputStream())));
    assertEquals(2, runExpectingNoPeer(new String[0], System.out, new PrintStream(new ByteArrayOutputStream())));
    // An unknown command stays one, --help or not.
    assertEquals(2, runExpectingNoPeer(new String[] {"nope", "--help"}, System.out, new PrintStream(new ByteArrayOutputStream())));
  }

  /**
   * A bad -Dringmaster.demo.* property is a bad command line: exit 2 naming it, for a peer and for
   * the launcher; so is a misspelt one, which would otherwise leave its aid off without a word, and
   * a stack variable in a form JGroups misreads (each peer would start a cluster of its own).
   */
  @Test
  void main_badDemoOrStackProperty_exits2NamingIt_beforeAnythingStarts() throws IOException {
    assertBadProperty(TestingAids.REFUSE_PULLS, "lots",
        "error: system property " + TestingAids.REFUSE_PULLS + " must be a whole number from 0: \"lots\"");
    assertBadProperty("ringmaster.demo.noReadRepiar", "true", "error: unknown system property"
        + " ringmaster.demo.noReadRepiar; the demo reads ringmaster.demo.refuseFirstPulls,"
        + " ringmaster.demo.refuseFirstHandoffs, ringmaster.demo.refuseFirstRepairs,"
        + " ringmaster.demo.clockOffsetMillis, ringmaster.demo.noReadRepair,"
        + " ringmaster.demo.pushPageDelayMillis, ringmaster.demo.pushThreads");
    assertBadProperty("ringmaster.initial_hosts", "127.0.0.1:7800", "error: system property"
        + " ringmaster.initial_hosts (TCPPING.initial_hosts in jgroupsConfig ringmaster/jgroups/localhost-tcp.xml):"
        + " entry \"127.0.0.1:7800\" gives its port after a colon, which JGroups reads as part of the host name;"
        + " write 127.0.0.1[7800]");
  }

  private static void assertBadProperty(String property, String value, String expected) throws IOException {
    String before = System.getProperty(property);
    System.setProperty(property, value);
    try {
      for (String[] args : List.of(new String[] {"peer", "--id", "p", "--http-port", Integer.toString(PeerCluster.freePort())},
          new String[] {"cluster", "--peers", "1"})) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(2, runExpectingNoPeer(args, System.out, new PrintStream(err, true, StandardCharsets.UTF_8)), args[0]);
        String first = err.toString(StandardCharsets.UTF_8).split("\n")[0];
        assertEquals(expected, first, args[0]);
      }
    } finally {
      if (before == null) {
        System.clearProperty(property);
      } else {
        System.setProperty(property, before);
      }
    }
  }

  @Test
  void main_helpAfterACommand_printsUsage_exits0() {
    for (String command : new String[] {"peer", "cluster"}) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int code = runExpectingNoPeer(new String[] {command, "--id", "p", "--help"}, new PrintStream(out, true, StandardCharsets.UTF_8),
          new PrintStream(err, true, StandardCharsets.UTF_8));
      assertEquals(0, code, command);
      assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("usage: "), command);
      assertEquals("", err.toString(StandardCharsets.UTF_8), command);
    }
  }

  @Test
  void main_httpPortInUse_exits1NamingTheFlagAndThePort() throws Exception {
    try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int port = busy.getLocalPort();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int code = runExpectingNoPeer(new String[] {"peer", "--id", "p", "--http-port", Integer.toString(port)}, System.out,
          new PrintStream(err, true, StandardCharsets.UTF_8));
      assertEquals(1, code);
      assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("error: cannot start peer: --http-port " + port
          + ": cannot listen on 127.0.0.1:" + port + ": "), err::toString);
    }
  }

  /**
   * A peer that watches its launcher (--parent-pid) and fails to start stops watching: the watch
   * thread stayed, one more for each peer a JVM ran, each ready to exit the JVM when that launcher
   * went away.
   */
  @Test
  void main_aPeerThatFailsToStart_stopsWatchingItsLauncher() throws Exception {
    try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int code = runExpectingNoPeer(new String[] {"peer", "--id", "p", "--http-port", Integer.toString(busy.getLocalPort()),
          "--parent-pid", Long.toString(ProcessHandle.current().pid())}, System.out,
          new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
      assertEquals(1, code);
    }
    await("no thread watching the launcher").atMost(Duration.ofSeconds(10))
        .until(() -> Thread.getAllStackTraces().keySet().stream()
            .noneMatch(t -> t.getName().startsWith("parent-watch") && t.isAlive()));
  }

  /**
   * Settings that are fine (the command line and the config file) with a stack whose protocol
   * JGroups refuses when the node starts: the start failed, not the command line (exit 1, no usage).
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void main_aStackProtocolRefusedAtStart_exits1_notAsAUsageError(@TempDir Path dir) throws Exception {
    String stack;
    try (var in = getClass().getClassLoader().getResourceAsStream("ringmaster/jgroups/in-jvm.xml")) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(stack.contains("<pbcast.GMS"), stack);
    Path bad = Files.writeString(dir.resolve("bad.xml"), stack.replace("<pbcast.GMS", "<pbcast.GMS no_such_setting=\"1\""));
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\", \"jgroupsConfig\": \"bad.xml\"}");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = runExpectingNoPeer(new String[] {"peer", "--http-port", Integer.toString(PeerCluster.freePort()), "--config",
        config.toString()}, System.out, new PrintStream(err, true, StandardCharsets.UTF_8));
    String printed = err.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, printed);
    assertTrue(printed.startsWith("error: cannot start peer: ") && printed.contains("no_such_setting"), printed);
    assertFalse(printed.contains("usage:"), printed);
  }

  /** A --weight too small for the config file's virtual nodes is refused under the flag's name. */
  @Test
  void main_aWeightTooSmallForTheVirtualNodes_isRefusedNamingTheFlag(@TempDir Path dir) throws Exception {
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\"}");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = runExpectingNoPeer(new String[] {"peer", "--http-port", "1", "--config", config.toString(), "--weight", "0.0001"},
        System.out, new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    String[] lines = err.toString(StandardCharsets.UTF_8).split("\n");
    assertTrue(lines[0].startsWith("error: --weight: weight 1.0E-4 with virtualNodes 256 gives 0 tokens"), err::toString);
    assertTrue(lines[1].startsWith("usage: "), err::toString);
  }

  @Test
  void main_configFileWithUnknownKey_exits2NamingTheKey(@TempDir Path dir) throws Exception {
    Path config = Files.writeString(dir.resolve("node.json"), "{\"nodeId\": \"p\", \"colour\": \"red\"}");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = runExpectingNoPeer(new String[] {"peer", "--http-port", "1", "--config", config.toString()}, System.out,
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("error: unknown setting \"colour\""), err::toString);
  }
}
