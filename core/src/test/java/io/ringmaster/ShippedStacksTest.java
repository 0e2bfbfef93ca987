package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jgroups.JChannel;
import org.jgroups.protocols.BaseBundler;
import org.jgroups.protocols.FD_ALL3;
import org.jgroups.protocols.FD_SOCK2;
import org.jgroups.protocols.PerDestinationBundler;
import org.jgroups.protocols.TCP;
import org.jgroups.protocols.TP;
import org.jgroups.protocols.UDP;
import org.jgroups.protocols.VERIFY_SUSPECT2;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.Protocol;
import org.jgroups.util.Util;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every stack file the project ships (config/jgroups, in the jar as ringmaster/jgroups) builds
 * with the JGroups the library is built with, as a node builds it: JGroups refuses an attribute it
 * does not know and a value it cannot read, so a shipped stack that no other test joins to a
 * cluster (lan-udp.xml, which needs multicast; StackSocketsTest starts one node of it alone) still
 * fails here if a JGroups upgrade or an edit breaks it.
 * Nothing is connected: no socket is bound.
 */
class ShippedStacksTest {
  private static final Path SHIPPED = Path.of("..", "config", "jgroups");

  static Stream<String> shippedStacks() throws IOException {
    try (Stream<Path> files = Files.list(SHIPPED)) {
      List<String> names = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".xml")).sorted().toList();
      assertTrue(names.containsAll(List.of("in-jvm.xml", "lan-udp.xml", "localhost-tcp.xml", "secure-tcp.xml")),
          names::toString);
      return names.stream();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedStacks")
  void everyShippedStack_buildsAsANodeBuildsIt(String file) throws Exception {
    String resource = "ringmaster/jgroups/" + file;
    assertEquals(Files.readString(SHIPPED.resolve(file)), new String(ShippedStacksTest.class.getClassLoader()
        .getResourceAsStream(resource).readAllBytes(), StandardCharsets.UTF_8),
        "the jar's copy is the file in config/jgroups");
    Ringmaster.Builder builder = Ringmaster.builder().nodeId("stack-check").jgroupsConfig(resource);
    if (file.startsWith("secure")) {
      builder.secret("s3cret-stack-check");
    }
    try (JChannel channel = Stacks.create(builder.buildConfig())) {
      List<String> built = channel.getProtocolStack().getProtocols().stream().map(Protocol::getName).toList();
      String xml = Files.readString(SHIPPED.resolve(file));
      for (String name : built) {
        assertTrue(xml.contains("<" + name) || xml.contains("." + name), file + " names " + name + ": " + built);
      }
      assertTrue(built.contains("GMS"), file + ": " + built);
      GMS gms = channel.getProtocolStack()
          .findProtocol(GMS.class);
      assertTrue(gms.getMembershipChangePolicy() instanceof RingmasterMembershipPolicy, file);
      // A TCP stack sends from a thread per destination: with one thread for all, a host that is
      // down (connects that time out) holds up every message, joins included.
      if (channel.getProtocolStack().getTransport() instanceof TCP tcp) {
        assertTrue(tcp.getBundler() instanceof PerDestinationBundler, file);
        assertFalse(((BaseBundler) tcp.getBundler()).useSingleSenderThread(),
            file + ": one sender thread for every destination");
      }
    }
  }

  /**
   * The localhost stack's failure detector takes the system properties that secure-tcp.xml's
   * does (its defaults 3 s, 1 s and 250 ms otherwise), and its join timeout one of its own (1 s):
   * demo peers on a machine too loaded to answer within 3 s, or to answer a joiner within 1 s, can
   * be given more time without a stack file of their own.
   */
  @Test
  void theLocalhostStack_readsItsTimings_fromSystemProperties() throws Exception {
    String stack = "ringmaster/jgroups/localhost-tcp.xml";
    List<String> names = List.of("ringmaster.fd.timeout", "ringmaster.fd.interval", "ringmaster.verify_suspect.timeout",
        "ringmaster.join_timeout");
    Map<String, String> outside = new HashMap<>(); // given to the test JVM, say: put back after
    names.forEach(n -> outside.put(n, System.clearProperty(n)));
    try {
      long[] shipped = timings(stack);
      assertEquals(List.of(3_000L, 1_000L, 250L, 1_000L), List.of(shipped[0], shipped[1], shipped[2], shipped[3]));
      System.setProperty(names.get(0), "10s");
      System.setProperty(names.get(1), "2s");
      System.setProperty(names.get(2), "1500ms");
      System.setProperty(names.get(3), "5s");
      long[] set = timings(stack);
      assertEquals(List.of(10_000L, 2_000L, 1_500L, 5_000L), List.of(set[0], set[1], set[2], set[3]));
    } finally {
      restore(outside);
    }
  }

  /**
   * secure-tcp.xml's failure detection reads the same properties, with its own defaults (5 s, 1 s
   * and 500 ms: the window docs/operations.md gives before a restarted node can take its id back),
   * and keeps its join timeout (2 s).
   */
  @Test
  void theSecureStack_readsItsTimings_fromSystemProperties() throws Exception {
    String stack = Path.of("..", "config", "jgroups", "secure-tcp.xml").toString();
    List<String> names = List.of("ringmaster.fd.timeout", "ringmaster.fd.interval", "ringmaster.verify_suspect.timeout");
    Map<String, String> outside = new HashMap<>();
    names.forEach(n -> outside.put(n, System.clearProperty(n)));
    try {
      long[] shipped = timings(stack, "a secret of the test's");
      assertEquals(List.of(5_000L, 1_000L, 500L, 2_000L), List.of(shipped[0], shipped[1], shipped[2], shipped[3]));
      System.setProperty(names.get(0), "10s");
      System.setProperty(names.get(1), "2s");
      System.setProperty(names.get(2), "1500ms");
      long[] set = timings(stack, "a secret of the test's");
      assertEquals(List.of(10_000L, 2_000L, 1_500L, 2_000L), List.of(set[0], set[1], set[2], set[3]));
    } finally {
      restore(outside);
    }
  }

  /** Puts back the system properties a test cleared: each value it had, or none. */
  private static void restore(Map<String, String> outside) {
    outside.forEach((n, v) -> {
      if (v == null) {
        System.clearProperty(n);
      } else {
        System.setProperty(n, v);
      }
    });
  }

  /** FD_ALL3's timeout and interval, VERIFY_SUSPECT2's timeout and GMS's join timeout, in ms. */
  private static long[] timings(String stack) throws Exception {
    return timings(stack, null);
  }

  private static long[] timings(String stack, String secret) throws Exception {
    Ringmaster.Builder builder = Ringmaster.builder().nodeId("fd-check").jgroupsConfig(stack);
    if (secret != null) {
      builder.secret(secret);
    }
    try (JChannel channel = Stacks.create(builder.buildConfig())) {
      FD_ALL3 fd = channel.getProtocolStack().findProtocol(FD_ALL3.class);
      VERIFY_SUSPECT2 verify = channel.getProtocolStack()
          .findProtocol(VERIFY_SUSPECT2.class);
      GMS gms = channel.getProtocolStack().findProtocol(GMS.class);
      return new long[] {fd.getTimeout(), fd.getInterval(), verify.getTimeout(), gms.getJoinTimeout()};
    }
  }

  /**
   * Every variable a shipped stack reads (each name in its {@code ${...}}) is documented in README.md
   * or docs/operations.md, so that an operator can find every knob without reading the XML.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("shippedStacks")
  void everyVariableOfAShippedStack_isDocumented(String file) throws IOException {
    String docs = Files.readString(Path.of("..", "README.md")) + Files.readString(Path.of("..", "docs", "operations.md"));
    Matcher m = Pattern.compile("\\$\\{([^}:]*)").matcher(Files.readString(SHIPPED.resolve(file)));
    List<String> undocumented = new ArrayList<>();
    while (m.find()) {
      for (String name : m.group(1).split(",")) {
        // The whole name (as itself, or after -D), not a part of a longer one.
        if (!Pattern.compile("(?:(?<![\\w.])|(?<=-D))" + Pattern.quote(name.trim())
            + "(?![\\w.])").matcher(docs).find()) {
          undocumented.add(name.trim());
        }
      }
    }
    assertEquals(List.of(), undocumented, file);
  }

  /**
   * The multicast stack says where it multicasts: bound to 127.0.0.1 (set so, or its default's
   * fallback where the host has no site-local address) a WARNING that only this host's members can
   * join, naming the setting that opens it; bound elsewhere an INFO line naming the interface.
   * Members on other hosts would otherwise each start a cluster of their own, with nothing saying why.
   */
  @Test
  void theMulticastStack_saysWhichInterfaceItUses_warningWhenOnlyThisHostCanJoin() throws Exception {
    String resource = "ringmaster/jgroups/lan-udp.xml";
    String loopback = "multicasts on the loopback interface (127.0.0.1), so only members on this host can join;"
        + " for a cluster across hosts set bindAddress (or ringmaster.bind_addr) to this host's address on the LAN";
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("multicasts on"));
         JChannel channel = Stacks.create(Ringmaster.builder().nodeId("udp-set").jgroupsConfig(resource)
             .bindAddress("127.0.0.1").buildConfig())) {
      assertEquals(List.of("WARNING udp-set: stack " + resource + " " + loopback), lines(log));
    }
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("multicasts on"));
         JChannel channel = Stacks.create(Ringmaster.builder().nodeId("udp-default").jgroupsConfig(resource)
             .buildConfig())) {
      InetAddress bound = channel.getProtocolStack().getTransport().getBindAddress();
      String expected = bound.isLoopbackAddress() ? "WARNING udp-default: stack " + resource + " " + loopback
          : "INFO udp-default: stack " + resource + " multicasts on " + bound.getHostAddress() + " (interface "
              + NetworkInterface.getByInetAddress(bound).getName() + "); set bindAddress (or"
              + " ringmaster.bind_addr) to choose another";
      assertEquals(List.of(expected), lines(log), bound::toString);
    }
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("multicasts on"));
         JChannel channel = Stacks.create(Ringmaster.builder().nodeId("tcp").jgroupsConfig(
             "ringmaster/jgroups/localhost-tcp.xml").buildConfig())) {
      assertEquals(List.of(), lines(log), "a TCP stack multicasts nowhere");
    }
  }

  /**
   * The multicast stack bound to an address other hosts reach says so at INFO, naming the address
   * and its interface (so that a bridge picked instead of the LAN shows in the log), and gives no
   * WARNING. Needs such an address on this host: without one there is nothing to bind to.
   */
  @Test
  void theMulticastStack_boundToAnAddressOtherHostsReach_namesItsInterfaceAtInfo() throws Exception {
    InetAddress lan = addressOtherHostsReach();
    String resource = "ringmaster/jgroups/lan-udp.xml";
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("multicasts on"));
         JChannel channel = Stacks.create(Ringmaster.builder().nodeId("udp-lan").jgroupsConfig(resource)
             .bindAddress(lan.getHostAddress()).buildConfig())) {
      assertEquals(lan, channel.getProtocolStack().getTransport().getBindAddress());
      assertEquals(List.of("INFO udp-lan: stack " + resource + " multicasts on " + lan.getHostAddress() + " (interface "
          + NetworkInterface.getByInetAddress(lan).getName() + "); set bindAddress (or ringmaster.bind_addr)"
          + " to choose another"), lines(log));
    }
  }

  /**
   * A TCP stack whose TCPPING hosts are left at the stack's 127.0.0.1[7800] while bindAddress is
   * an address other hosts reach: a WARNING naming the node, the stack, the address and the hosts,
   * since the node would find only the members on its own host and each host would form a cluster
   * of its own. Given hosts (initialHosts) that are not all loopback, it says nothing.
   */
  @Test
  void aTcpStack_boundToAnAddressOtherHostsReach_withOnlyLoopbackHosts_warns() throws Exception {
    InetAddress lan = addressOtherHostsReach();
    String resource = "ringmaster/jgroups/localhost-tcp.xml";
    Map<String, String> outside = new HashMap<>(); // given to the test JVM, say: put back after
    outside.put("ringmaster.initial_hosts", System.clearProperty("ringmaster.initial_hosts"));
    try {
      try (NodeLog log = new NodeLog(r -> r.getMessage().contains("initial_hosts"));
           JChannel channel = Stacks.create(Ringmaster.builder().nodeId("tcp-lan").jgroupsConfig(resource)
               .bindAddress(lan.getHostAddress()).buildConfig())) {
        assertEquals(List.of("WARNING tcp-lan: stack " + resource + " is bound to " + lan.getHostAddress() + ", but"
            + " TCPPING's initial_hosts (127.0.0.1[7800]) are all on the loopback interface, so this node finds only"
            + " the members on this host and each host forms a cluster of its own; set initialHosts (or"
            + " ringmaster.initial_hosts, or RINGMASTER_INITIAL_HOSTS with secure-tcp.xml) to the members' addresses"),
            lines(log));
      }
      try (NodeLog log = new NodeLog(r -> r.getMessage().contains("initial_hosts"));
           JChannel channel = Stacks.create(Ringmaster.builder().nodeId("tcp-lan-hosts").jgroupsConfig(resource)
               .bindAddress(lan.getHostAddress()).initialHosts("127.0.0.1[7800]," + lan.getHostAddress() + "[7800]")
               .buildConfig())) {
        assertEquals(List.of(), lines(log), "hosts that are not all loopback");
      }
    } finally {
      restore(outside);
    }
  }

  /**
   * A JVM that prefers IPv6 addresses makes JGroups drop, without a word, every IPv4 address a
   * stack names: the node would bind elsewhere (another interface's IPv6 address, reachable from
   * the network), or multicast to JGroups' IPv6 default group, and start a cluster of its own.
   * Such a stack is refused as the node builds it, naming the attribute, both addresses, where the
   * address came from and the fix; with {@code -Djava.net.preferIPv4Stack=true} as well, the stacks
   * build with their own addresses. The in-JVM stack, which opens no socket, builds either way.
   * JGroups heeds the preference only on a host with both IPv4 and IPv6 addresses: on one without
   * IPv6 (disabled in the kernel, say) it keeps the IPv4 addresses, and the stacks build with them.
   * Each case runs in a JVM of its own, since JGroups reads the two properties once per JVM.
   */
  @Test
  void aJvmPreferringIPv6Addresses_isRefused_namingTheAddressJGroupsDropped_unlessIPv4IsPreferredToo()
      throws Exception {
    String v6 = "-Djava.net.preferIPv6Addresses=true";
    String v4 = "-Djava.net.preferIPv4Stack=true";
    String why = ": this JVM prefers IPv6 addresses (java.net.preferIPv6Addresses=true), and JGroups then drops the IPv4"
        + " addresses it is given, so the node would never find its members; run it with"
        + " -Djava.net.preferIPv4Stack=true (JGroups prefers IPv4 when both are set), or name IPv6 addresses";
    String variables = "( \\(the stack's variables set here: .*\\))?";
    String ipv6 = "[0-9a-f:]+(%[^:\\s]+)?"; // the scope is an interface's name: eth0, br-4f2a, docker_gwbridge
    List<String> printed = probe(v6, "localhost-tcp.xml");
    if (printed.contains("JGroups' IP stack: IPv4")) { // no IPv6 address on this host: nothing is dropped
      assertEquals("built: bind_addr 127.0.0.1, fd_sock2 127.0.0.1", outcome(printed));
      assertMatches("built: bind_addr ([0-9.]+), mcast_addr 239\\.8\\.8\\.9, fd_sock2 \\1",
          probeAddresses(v6, "lan-udp.xml"));
    } else {
      assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/localhost-tcp.xml: TCP's bind_addr is"
          + " 127.0.0.1, but JGroups set it to ") + ipv6 + Pattern.quote(why) + variables, outcome(printed));
      assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/localhost-tcp.xml: TCP's bind_addr is"
          + " 127.0.0.1 (from bindAddress 127.0.0.1), but JGroups set it to ") + ipv6
          + Pattern.quote(why) + variables, probeAddresses(v6, "localhost-tcp.xml", "127.0.0.1"));
      assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/localhost-tcp.xml: TCP's bind_addr is"
          + " 127.0.0.1 (from the system property jgroups.bind_addr), but JGroups set it to ") + ipv6
          + Pattern.quote(why) + variables, probeAddresses(v6 + " -Djgroups.bind_addr=127.0.0.1", "localhost-tcp.xml"));
      assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/lan-udp.xml: UDP's mcast_addr is"
          + " 239.8.8.9, but JGroups set it to ff0e:0:0:0:0:8:8:8" + why) + variables, probeAddresses(v6, "lan-udp.xml"));
      // Without the preference, an IPv6 bindAddress puts the stack on IPv6, and drops its IPv4 group
      // the same way: a message of its own, naming the variable that gives an IPv6 group.
      assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/lan-udp.xml: UDP's mcast_addr is"
          + " 239.8.8.9, but JGroups set it to ff0e:0:0:0:0:8:8:8: JGroups runs this stack on IPv6 (its transport's"
          + " address is 0:0:0:0:0:0:0:1), and drops the IPv4 addresses it is given; name an IPv6 address here (for"
          + " lan-udp.xml's group, ringmaster.mcast_addr: ff0e::8:8:9, say)") + variables,
          probeAddresses("", "lan-udp.xml", "::1"));
      assertEquals("built: bind_addr 0:0:0:0:0:0:0:1, mcast_addr ff0e:0:0:0:0:8:8:9, fd_sock2 0:0:0:0:0:0:0:1",
          probeAddresses("-Dringmaster.mcast_addr=ff0e::8:8:9", "lan-udp.xml", "::1"));
    }

    assertEquals("built: bind_addr 127.0.0.1, fd_sock2 127.0.0.1", probeAddresses(v6 + " " + v4, "localhost-tcp.xml"));
    assertMatches("built: bind_addr ([0-9.]+), mcast_addr 239\\.8\\.8\\.9, fd_sock2 \\1",
        probeAddresses(v6 + " " + v4, "lan-udp.xml"));
    assertMatches("built: bind_addr .+", probeAddresses(v6, "in-jvm.xml"));
  }

  /**
   * JGroups' own override of the transport's address, {@code -Djgroups.bind_addr}, moves the
   * failure detector too, which the shipped stacks' own address would otherwise keep on 127.0.0.1,
   * out of the other members' reach; a {@code bindAddress} it would displace is refused, naming
   * both, since JGroups would ignore the setting. Each case runs in a JVM of its own.
   */
  @Test
  void jgroupsOwnBindAddressProperty_movesTheFailureDetectorToo_butIsRefusedWhereItWouldDisplaceBindAddress() throws Exception {
    String v4 = "-Djava.net.preferIPv4Stack=true";
    assertEquals("built: bind_addr 127.0.0.2, fd_sock2 127.0.0.2",
        probeAddresses(v4 + " -Djgroups.bind_addr=127.0.0.2", "localhost-tcp.xml"), "the failure detector moved too");
    assertEquals("refused: bindAddress 127.0.0.1 is not the address JGroups binds: the system property"
        + " jgroups.bind_addr is 127.0.0.2, which JGroups takes instead; unset it, or make the two agree",
        probeAddresses(v4 + " -Djgroups.bind_addr=127.0.0.2", "localhost-tcp.xml", "127.0.0.1"));
    assertEquals("built: bind_addr 127.0.0.1, fd_sock2 127.0.0.1",
        probeAddresses(v4 + " -Djgroups.bind_addr=127.0.0.1", "localhost-tcp.xml", "127.0.0.1"), "the two agree");
    assertEquals("built: bind_addr 127.0.0.1, fd_sock2 127.0.0.1",
        probeAddresses(v4 + " -Djgroups.bind_addr=localhost", "localhost-tcp.xml", "127.0.0.1"), "one address, named");
    // JGroups resolves the property in the family of the stack's own address (127.0.0.1): an IPv6
    // address names none there, and JGroups would keep 127.0.0.1 without a word.
    assertMatches(Pattern.quote("refused: jgroupsConfig ringmaster/jgroups/localhost-tcp.xml: TCP's bind_addr is ::1"
        + " (from the system property jgroups.bind_addr), but JGroups set it to 127.0.0.1: JGroups resolves the"
        + " system property jgroups.bind_addr in the family of the address the stack gives its transport (127.0.0.1),"
        + " where it names none, and keeps the stack's; set bindAddress to ::1 instead")
        + "( \\(the stack's variables set here: .*\\))?", probeAddresses(v4 + " -Djgroups.bind_addr=::1", "localhost-tcp.xml"));
  }

  /**
   * A failure detector (FD_SOCK2) listening on another address than the transport's is refused,
   * naming both: the other members connect to it at the transport's address, so they could never
   * watch the node, and a crash would go unnoticed until the heartbeats time out. bindAddress,
   * which sets both, builds the same stack.
   */
  @Test
  void aFailureDetectorOnAnotherAddressThanTheTransport_isRefused_namingBoth(@TempDir Path dir) throws Exception {
    Path apart = localhostStackWith(dir, "apart.xml", stack -> stack.replaceFirst(FD_SOCK2_ADDRESS,
        "<FD_SOCK2 bind_addr=\"127.0.0.3\""));
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> Stacks.create(Ringmaster.builder().nodeId("apart").jgroupsConfig(apart.toString()).buildConfig()).close());
    assertMatches(Pattern.quote("jgroupsConfig " + apart + ": FD_SOCK2's bind_addr is 127.0.0.3, but the transport is"
        + " bound to 127.0.0.1, where the other members look for it: they could not watch this node, and its crash"
        + " would go unnoticed until FD_ALL3's timeout; give both one address (bindAddress sets both)")
        + "( \\(the stack's variables set here: .*\\))?", refused.getMessage());
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("together").jgroupsConfig(apart.toString())
        .bindAddress("127.0.0.1").buildConfig())) {
      FD_SOCK2 detector = channel.getProtocolStack().findProtocol(FD_SOCK2.class);
      assertEquals(channel.getProtocolStack().getTransport().getBindAddress(), detector.getBindAddress());
    }
  }

  /**
   * A failure detector given no address of its own listens on every address (JGroups takes no
   * 0.0.0.0 for it: "not a valid address on any local network interface"), so the other members
   * reach it at the transport's: it is not refused.
   */
  @Test
  void aFailureDetectorWithNoAddressOfItsOwn_listensOnEveryAddress_andBuilds(@TempDir Path dir) throws Exception {
    Path everywhere = localhostStackWith(dir, "everywhere.xml", stack -> stack.replaceFirst(FD_SOCK2_ADDRESS, "<FD_SOCK2"));
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("everywhere")
        .jgroupsConfig(everywhere.toString()).buildConfig())) {
      FD_SOCK2 detector = channel.getProtocolStack().findProtocol(FD_SOCK2.class);
      assertNull(detector.getBindAddress(), "no address: every address");
    }
  }

  /**
   * A failure detector on another address than the transport's is not refused when the transport
   * advertises an external_addr: the other members reach it through whatever that address
   * forwards, which the node cannot see.
   */
  @Test
  void aFailureDetectorBehindATransportsExternalAddress_builds(@TempDir Path dir) throws Exception {
    Path external = localhostStackWith(dir, "external.xml", stack -> stack
        .replaceFirst(FD_SOCK2_ADDRESS, "<FD_SOCK2 bind_addr=\"127.0.0.3\"")
        .replaceFirst("<TCP ", "<TCP external_addr=\"192.0.2.1\" "));
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("external")
        .jgroupsConfig(external.toString()).buildConfig())) {
      FD_SOCK2 detector = channel.getProtocolStack().findProtocol(FD_SOCK2.class);
      assertEquals("127.0.0.3", detector.getBindAddress().getHostAddress());
      assertEquals("192.0.2.1", channel.getProtocolStack().getTransport().getExternalAddr().getHostAddress());
    }
  }

  /**
   * An address given by a variable that is not set and has no default is JGroups' to handle, as it
   * was before the address checks: a failure detector with none listens on every address.
   */
  @Test
  void aFailureDetectorAddressFromAnUnsetVariable_isJGroupsToHandle_notAnNpe(@TempDir Path dir) throws Exception {
    Path unset = localhostStackWith(dir, "unset.xml", stack -> stack.replaceFirst(FD_SOCK2_ADDRESS,
        "<FD_SOCK2 bind_addr=\"\\${ringmaster.test.unset}\""));
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("unset").jgroupsConfig(unset.toString())
        .buildConfig())) {
      assertNull(channel.getProtocolStack().<FD_SOCK2>findProtocol(FD_SOCK2.class).getBindAddress());
    }
  }

  /** The failure detector's element with its address, in the shipped localhost-tcp.xml: a regex. */
  private static final String FD_SOCK2_ADDRESS = "<FD_SOCK2 bind_addr=\"[^\"]*\"";

  /**
   * The shipped localhost-tcp.xml with {@code edit} applied, as a file {@code name} in {@code dir};
   * fails if the edit changed nothing (the shipped stack changed under it).
   */
  private static Path localhostStackWith(Path dir, String name, UnaryOperator<String> edit) throws IOException {
    String shipped = Files.readString(SHIPPED.resolve("localhost-tcp.xml"));
    String edited = edit.apply(shipped);
    assertNotEquals(shipped, edited, "the stack file was edited");
    Path file = dir.resolve(name);
    Files.writeString(file, edited);
    return file;
  }

  private static void assertMatches(String regex, String actual) {
    assertTrue(actual.matches(regex), () -> "expected to match " + regex + "\n but was " + actual);
  }

  /** The outcome {@link AddressProbe} prints for a shipped stack, as {@link #probe} runs it. */
  private static String probeAddresses(String jvmOptions, String... args) throws Exception {
    return outcome(probe(jvmOptions, args));
  }

  /** The probe's line that says whether the stack was built or refused; else all it printed. */
  private static String outcome(List<String> printed) {
    return printed.stream().filter(line -> line.startsWith("built: ") || line.startsWith("refused: ")).findFirst()
        .orElse(String.join("\n", printed));
  }

  /**
   * The lines {@link AddressProbe} prints for a shipped stack (and a bindAddress, if given) in a
   * JVM started with {@code jvmOptions} (split at spaces), and nothing else of the test JVM's options.
   */
  private static List<String> probe(String jvmOptions, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path")));
    command.addAll(Stream.of(jvmOptions.split(" ")).filter(option -> !option.isEmpty()).toList());
    command.add(AddressProbe.class.getName());
    command.addAll(List.of(args));
    Path printed = Files.createTempFile("ringmaster-address-probe", ".out");
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(printed.toFile()).start();
    try {
      boolean ended = process.waitFor(60, TimeUnit.SECONDS); // a file, not a pipe: a probe that hangs is bounded
      String out = Files.readString(printed, StandardCharsets.UTF_8).strip();
      assertTrue(ended, "the probe did not end: " + out);
      assertEquals(0, process.exitValue(), out);
      return out.lines().toList();
    } finally {
      process.destroyForcibly();
      Files.deleteIfExists(printed);
    }
  }

  /**
   * Builds a shipped stack (the first argument, a file name) as a node builds it, with the
   * bindAddress given as a second argument, if any, and prints the IP stack JGroups chose, then
   * the transport's addresses, or why the stack was refused. Nothing is connected.
   */
  static final class AddressProbe {
    public static void main(String[] args) {
      System.out.println("JGroups' IP stack: " + Util.getIpStackType());
      Ringmaster.Builder builder = Ringmaster.builder().nodeId("address-probe").jgroupsConfig("ringmaster/jgroups/" + args[0]);
      if (args.length > 1) {
        builder.bindAddress(args[1]);
      }
      try (JChannel channel = Stacks.create(builder.buildConfig())) {
        TP transport = channel.getProtocolStack().getTransport();
        FD_SOCK2 detector = channel.getProtocolStack().findProtocol(FD_SOCK2.class);
        System.out.println("built: bind_addr " + transport.getBindAddress().getHostAddress()
            + (transport instanceof UDP udp ? ", mcast_addr " + udp.getMulticastAddress().getHostAddress() : "")
            + (detector == null ? "" : ", fd_sock2 " + (detector.getBindAddress() == null ? "*" // every address
                : detector.getBindAddress().getHostAddress())));
      } catch (Exception e) {
        System.out.println("refused: " + e.getMessage());
      }
    }
  }

  /**
   * An IPv4 address of this host on an interface that is up and not the loopback one; the test
   * that needs it is skipped on a host that has none (nothing else there reaches it either).
   */
  private static InetAddress addressOtherHostsReach() throws SocketException {
    Optional<InetAddress> lan = NetworkInterface.networkInterfaces().filter(nic -> {
      try {
        return nic.isUp() && !nic.isLoopback();
      } catch (SocketException unreadable) {
        return false;
      }
    }).flatMap(NetworkInterface::inetAddresses).filter(a -> a instanceof Inet4Address
        && !a.isLoopbackAddress() && !a.isLinkLocalAddress()).findFirst();
    Assumptions.assumeTrue(lan.isPresent(), "this host has no address other hosts reach");
    return lan.get();
  }

  private static List<String> lines(NodeLog log) {
    return log.records().stream().map(r -> r.getLevel() + " "
        + MessageFormat.format(r.getMessage(), r.getParameters())).toList();
  }
}
