package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OpenSockets.Socket;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the shipped stacks open, read from /proc/self/net with nodes started as an application
 * starts them (the stack's own addresses, {@code -Djava.net.preferIPv4Stack=true} as the build
 * runs the tests): every socket a node opens, listening or connected, TCP or UDP, is bound to
 * 127.0.0.1 and talks to 127.0.0.1 only, on the ports README.md's stack table gives, and joins no
 * multicast group; {@code lan-udp.xml} (with {@code -Dringmaster.bind_addr=127.0.0.1}) adds its
 * group, joined on the loopback interface alone, and {@code in-jvm.xml} opens none. A stack edited
 * to bind a wildcard address (a protocol left without {@code bind_addr}, the diagnostics socket
 * switched on) fails here. And what the TCP stacks do when their ports on 127.0.0.1 are taken.
 */
class StackSocketsTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** lan-udp.xml's multicast group, its default. */
  private static final InetSocketAddress GROUP = new InetSocketAddress("239.8.8.9", 45599);
  /** The stacks' variables for the network, which the test JVM may have been given: cleared while a node starts. */
  private static final List<String> NETWORK_PROPERTIES = List.of("ringmaster.bind_addr", "ringmaster.bind_port",
      "ringmaster.initial_hosts", "ringmaster.mcast_addr", "ringmaster.mcast_port");

  @Test
  void theLocalhostStack_bindsOnly127001_onItsDocumentedPorts() throws Exception {
    List<Socket> opened = twoNodes("localhost-tcp.xml", Map.of());
    assertLoopbackOnly(opened, false);
    assertListeningPorts(opened, 7800, 7819, 7900, 7922);
  }

  @Test
  void theSecureStack_leftAtItsDefaults_bindsOnly127001_onItsDocumentedPorts() throws Exception {
    List<Socket> opened = twoNodes("secure-tcp.xml", Map.of());
    assertLoopbackOnly(opened, false);
    assertListeningPorts(opened, 7950, 7969, 8050, 8072);
  }

  /**
   * One node (no test connects over multicast, which some machines do not route), its address set
   * as README.md says, with {@code ringmaster.bind_addr}: a unicast socket on that address at a
   * port the system picks, its multicast socket bound to the group, and its failure detector
   * listening 100 to 103 above the unicast port.
   */
  @Test
  void theMulticastStack_boundTo127001_bindsOnlyThatAddress_andItsGroup() throws Exception {
    List<Socket> opened;
    try (TestCluster cluster = new TestCluster("stack-sockets-udp")) {
      Set<Long> before = OpenSockets.inodes();
      Map<String, Integer> groupsBefore = OpenSockets.multicastGroups();
      withProperties(Map.of("ringmaster.bind_addr", "127.0.0.1"), () -> cluster.start(
          cluster.builder("a").jgroupsConfig("ringmaster/jgroups/lan-udp.xml")));
      opened = OpenSockets.openedSince(before);
      assertEquals(Set.of("lo 239.8.8.9"), OpenSockets.joinedSince(groupsBefore),
          "the group joined on the loopback interface alone");
    }
    assertLoopbackOnly(opened, true);
    List<Socket> udp = opened.stream().filter(s -> !s.tcp()).toList();
    assertEquals(2, udp.size(), "a unicast and a multicast socket: " + opened);
    assertTrue(udp.stream().anyMatch(s -> s.local().equals(GROUP)), "the group's socket: " + opened);
    int unicast = udp.stream().filter(s -> !s.local().equals(GROUP)).findFirst().orElseThrow().local().getPort();
    List<Socket> listening = opened.stream().filter(Socket::listening).toList();
    assertEquals(1, listening.size(), "FD_SOCK2 alone listens: " + opened);
    int fd = listening.get(0).local().getPort();
    assertTrue(fd >= unicast + 100 && fd <= unicast + 103, "FD_SOCK2 at 100-103 above " + unicast + ": " + opened);
  }

  @Test
  void theInJvmStack_opensNoSocket() throws Exception {
    assertEquals(List.of(), twoNodes("in-jvm.xml", Map.of()));
  }

  /**
   * A TCP stack whose every port of its range is taken on 127.0.0.1 (by another program, say)
   * fails to start, naming the range and the setting that moves it; one whose transport port is
   * free but whose failure detector's four ports (100 to 103 above it) are taken fails too, naming
   * them: it does not move to the next transport port.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"localhost-tcp.xml", "secure-tcp.xml"})
  void aTcpStack_whosePortsAreTaken_failsToStart_namingThem(String stack) throws Exception {
    try (TestCluster cluster = new TestCluster("stack-ports-taken")) {
      int base;
      try (Held held = Held.ports(0, 19)) {
        base = held.base;
        RingmasterException e = assertThrows(RingmasterException.class,
            () -> cluster.start(node(cluster, "a", stack).bindPort(base).initialHosts("127.0.0.1[" + base + "]")));
        assertEquals(RingmasterException.Reason.STACK, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains("No available port to bind to in range [" + base + " .. " + (base + 19) + "]")
            && e.getMessage().contains(" from bindPort " + base + " (and the ports of the stack's port_range after it)"),
            e.getMessage());
      }
      try (Held held = Held.ports(100, 103)) {
        int port = held.base;
        RingmasterException e = assertThrows(RingmasterException.class,
            () -> cluster.start(node(cluster, "b", stack).bindPort(port).initialHosts("127.0.0.1[" + port + "]")));
        assertEquals(RingmasterException.Reason.STACK, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains("(its failure detector, FD_SOCK2, found none of its ports free"),
            e.getMessage());
        assertTrue(e.getMessage().contains("failed to find an available port in ports [" + (port + 100) + ", "
            + (port + 101) + ", " + (port + 102) + ", " + (port + 103) + "]"), e.getMessage());
      }
    }
  }

  /** Ports of 127.0.0.1 held for a test: {@code base + from} to {@code base + to}, from a base whose port is free. */
  private record Held(int base, List<ServerSocket> sockets) implements AutoCloseable {
    static Held ports(int from, int to) throws IOException {
      for (int base = 30_000; base < 40_000; base += 200) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
          if (from > 0) {
            new ServerSocket(base, 1, InetAddress.getLoopbackAddress()).close(); // free, for the node
          }
          for (int p = base + from; p <= base + to; p++) {
            sockets.add(new ServerSocket(p, 1, InetAddress.getLoopbackAddress()));
          }
          return new Held(base, sockets);
        } catch (IOException taken) {
          for (ServerSocket s : sockets) {
            s.close();
          }
        }
      }
      throw new IOException("no free ports from 30000 to 40000");
    }

    @Override
    public void close() throws IOException {
      for (ServerSocket s : sockets) {
        s.close();
      }
    }
  }

  /**
   * Starts two nodes on {@code stack} in a cluster of their own, with the network variables
   * {@code properties} alone set, and returns the sockets this process opened for them, read while
   * both are in one ring: their listeners and the connections between them.
   */
  private static List<Socket> twoNodes(String stack, Map<String, String> properties) throws Exception {
    try (TestCluster cluster = new TestCluster("stack-sockets")) {
      Set<Long> before = OpenSockets.inodes();
      Map<String, Integer> groupsBefore = OpenSockets.multicastGroups();
      List<Ringmaster> nodes = withProperties(properties, () -> List.of(
          cluster.start(node(cluster, "a", stack)), cluster.start(node(cluster, "b", stack))));
      await().atMost(WAIT).until(() -> nodes.stream().allMatch(n -> n.ring().members().size() == 2));
      assertEquals(Set.of(), OpenSockets.joinedSince(groupsBefore), "multicast groups joined");
      return OpenSockets.openedSince(before);
    }
  }

  private static Ringmaster.Builder node(TestCluster cluster, String id, String stack) {
    Ringmaster.Builder b = cluster.builder(id).jgroupsConfig("ringmaster/jgroups/" + stack);
    return stack.startsWith("secure") ? b.secret("a secret of the socket test's") : b;
  }

  /**
   * Every socket opened is bound to a loopback address, and connected, if at all, to one; with
   * {@code group}, a UDP socket bound to lan-udp.xml's group is taken too.
   */
  private static void assertLoopbackOnly(List<Socket> opened, boolean group) {
    OpenSockets.assertEach(opened, s -> s.local().getAddress().isLoopbackAddress()
        && (s.remote().getAddress().isLoopbackAddress() || s.remote().getPort() == 0 && (s.listening() || !s.tcp()))
        || group && !s.tcp() && s.local().equals(GROUP), "sockets not on 127.0.0.1");
  }

  /** The two nodes listen each on a port of the transport's range and on one of the failure detector's, and on no other. */
  private static void assertListeningPorts(List<Socket> opened, int tcpFrom, int tcpTo, int fdFrom, int fdTo) {
    List<Integer> ports = opened.stream().filter(Socket::listening).map(s -> s.local().getPort()).sorted().toList();
    assertEquals(4, ports.size(), "two listeners a node: " + opened);
    assertTrue(IntStream.of(ports.get(0), ports.get(1)).allMatch(p -> p >= tcpFrom && p <= tcpTo)
        && IntStream.of(ports.get(2), ports.get(3)).allMatch(p -> p >= fdFrom && p <= fdTo),
        "TCP on " + tcpFrom + "-" + tcpTo + ", FD_SOCK2 on " + fdFrom + "-" + fdTo + ": " + opened);
    assertTrue(opened.stream().allMatch(Socket::tcp), "no UDP: " + opened);
  }

  /** Runs {@code start} with the network variables {@code properties} alone set, putting back what was there. */
  private static <T> T withProperties(Map<String, String> properties, SystemProperties.Call<T> start) throws Exception {
    return SystemProperties.with(properties, NETWORK_PROPERTIES, start);
  }
}
