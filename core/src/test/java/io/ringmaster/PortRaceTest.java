package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jgroups.Event;
import org.jgroups.JChannel;
import org.jgroups.stack.IpAddress;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Several processes starting at once on one host can make JGroups' TCP transport lose a race for
 * a port and fail to start although the port range is mostly free ({@link LosesPortRace} stages
 * it). {@code start()} then builds a new stack, which binds the next free port. Real TCP stacks
 * on 127.0.0.1, ports 7600-7619 (and 7700-7704 for FD_SOCK2), and 7640-7659 for the stack that
 * fails to start for another reason, which no other test uses.
 */
class PortRaceTest {
  private static final int PORT = 7600;
  private static final String HOSTS = "127.0.0.1[" + PORT + "]";
  /**
   * A stack that fails to start after its transport bound a port keeps that port until the JVM
   * collects its server socket: JGroups' TCP closes the socket only once its server was started,
   * which happens as the channel connects (TcpServer.stop() in JGroups 5.5). So the test of such a
   * stack takes ports of its own, which the next test cannot meet.
   */
  private static final int PORT_OF_A_FAILED_START = 7640;

  @AfterEach
  void noMoreLosses() {
    LosesPortRace.loseNext(0);
  }

  private static Ringmaster.Builder tcp(TestCluster cluster, String id, String stack) {
    return cluster.builder(id).jgroupsConfig(stack).bindPort(PORT).initialHosts(HOSTS);
  }

  @Test
  void aStackThatLostTheRaceForItsPort_isClosed_andANewOneJoinsOnAFreePort() {
    try (TestCluster cluster = new TestCluster("port-race")) {
      Ringmaster a = cluster.start(tcp(cluster, "a", "ringmaster/jgroups/localhost-tcp.xml"));
      LosesPortRace.loseNext(1);
      Ringmaster b = cluster.start(tcp(cluster, "b", "port-race-tcp.xml"));
      List<JChannel> losers = LosesPortRace.losers();
      assertEquals(1, losers.size(), "b's first stack lost the race");
      assertEquals(2, LosesPortRace.stacksBuilt(), "b built a second stack");
      assertTrue(losers.get(0).isClosed(), "the stack that lost is closed");
      assertNotEquals(losers.get(0), b.channel(), "b runs on a new stack");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      assertTrue(b.isInRing());
      int port = port(b);
      assertTrue(port > PORT && port <= PORT + 19, "b binds a port of the range that a does not hold: " + port);
    }
  }

  @Test
  void aRangeThatStaysUnbindable_failsAfterTheLastAttempt_namingTheRange() {
    try (TestCluster cluster = new TestCluster("port-race-full")) {
      LosesPortRace.loseNext(Ringmaster.BIND_ATTEMPTS);
      RingmasterException e = assertThrows(RingmasterException.class,
          () -> cluster.start(tcp(cluster, "b", "port-race-tcp.xml")));
      assertEquals(RingmasterException.Reason.STACK, e.reason(), e.getMessage());
      assertEquals(Ringmaster.BIND_ATTEMPTS, LosesPortRace.losers().size(), "one race lost per attempt");
      assertEquals(Ringmaster.BIND_ATTEMPTS, LosesPortRace.stacksBuilt(), "one stack per attempt, and no more");
      assertTrue(LosesPortRace.losers().stream().allMatch(JChannel::isClosed), "every stack that lost is closed");
      assertTrue(e.getMessage().contains("No available port to bind to in range [" + PORT + " .. " + (PORT + 19)
          + "]"), e.getMessage());
      assertTrue(e.getMessage().contains(" from bindPort " + PORT + " (and the ports of the stack's port_range after"
          + " it): "), "names the setting: " + e.getMessage());
    }
  }

  @Test
  void aStartInterruptedAsItsStackLosesTheRace_buildsNoNewStack_andFailsAsInterrupted_keepingTheFlag() {
    try (TestCluster cluster = new TestCluster("port-race-interrupted")) {
      LosesPortRace.loseNext(1, true);
      RingmasterException e;
      boolean interrupted;
      try {
        e = assertThrows(RingmasterException.class, () -> cluster.start(tcp(cluster, "b", "port-race-tcp.xml")));
      } finally {
        interrupted = Thread.interrupted(); // read, and cleared before the cluster closes, whatever happened
      }
      assertTrue(interrupted, "start() gives the caller its interrupt back");
      assertEquals(RingmasterException.Reason.INTERRUPTED, e.reason(), e.getMessage());
      assertEquals(1, LosesPortRace.stacksBuilt(), "no new stack once the start is interrupted");
      assertTrue(LosesPortRace.losers().get(0).isClosed(), "the stack that lost is closed");
      Throwable stop = e.getCause();
      assertTrue(stop instanceof InterruptedException, "the cause is the interrupt: " + stop);
      assertEquals(1, stop.getSuppressed().length, "and the lost race rides along with it");
      assertTrue(stop.getSuppressed()[0].getMessage().contains("No available port to bind to in range"),
          stop.getSuppressed()[0].getMessage());
    }
  }

  /** A stack that fails to start for another reason than a lost race is not built again. */
  @Test
  void aStackThatFailsToStartForAnotherReason_failsWithoutANewStack() {
    try (TestCluster cluster = new TestCluster("port-race-other")) {
      LosesPortRace.failToStart();
      RingmasterException e = assertThrows(RingmasterException.class, () -> cluster.start(cluster.builder("b")
          .jgroupsConfig("port-race-tcp.xml").bindPort(PORT_OF_A_FAILED_START)
          .initialHosts("127.0.0.1[" + PORT_OF_A_FAILED_START + "]")));
      assertEquals(1, LosesPortRace.stacksBuilt(), "one stack, no retry: " + e.getMessage());
      assertEquals(RingmasterException.Reason.STACK, e.reason(), e.getMessage());
      assertTrue(e.getMessage().contains("a protocol that fails to start (a test)"), e.getMessage());
    }
  }

  @Test
  void aBindAddressOfNoInterface_failsWithoutARetry_andNamesTheSetting() {
    try (TestCluster cluster = new TestCluster("port-race-address")) {
      LosesPortRace.loseNext(0);
      // 192.0.2.1 (TEST-NET-1) is no interface of this host: JGroups refuses it as it builds the
      // stack, before any protocol's init, for a reason a new stack would not change, and the
      // failure names the setting that gave the address. The setting reaches the stack as the
      // stack file's own value would (TCPPING reads it as it initializes).
      RingmasterException e = assertThrows(RingmasterException.class,
          () -> cluster.start(tcp(cluster, "b", "port-race-tcp.xml").bindAddress("192.0.2.1")));
      assertEquals(0, LosesPortRace.stacksBuilt(), "no stack initialised: " + e.getMessage());
      assertEquals(RingmasterException.Reason.STACK, e.reason());
      assertTrue(e.getMessage().contains("on bindAddress \"192.0.2.1\""), e.getMessage());
      assertTrue(e.getMessage().contains("192.0.2.1 is not a valid address on any local network interface"),
          e.getMessage());

      // The same address in the stack file (its ${ringmaster.bind_addr}) fails alike.
      LosesPortRace.loseNext(0);
      String bindAddressBefore = System.setProperty("ringmaster.bind_addr", "192.0.2.1");
      try {
        e = assertThrows(RingmasterException.class, () -> cluster.start(tcp(cluster, "c", "port-race-tcp.xml")));
        assertEquals(0, LosesPortRace.stacksBuilt(), "no stack initialised: " + e.getMessage());
        assertTrue(e.getMessage().contains("192.0.2.1 is not a valid address on any local network interface"),
            e.getMessage());
      } finally {
        if (bindAddressBefore == null) {
          System.clearProperty("ringmaster.bind_addr");
        } else {
          System.setProperty("ringmaster.bind_addr", bindAddressBefore);
        }
      }
    }
  }

  /**
   * A stack file's address that does not resolve (a host name whose DNS record comes later, say)
   * fails as the stack (STACK, which may pass on a later try), not as a setting refused for good,
   * and names the name: JGroups wraps the lookup's IOException as it builds the stack.
   */
  @Test
  void aStackAddressThatDoesNotResolve_failsAsTheStack_notAsARefusedSetting() {
    try (TestCluster cluster = new TestCluster("port-race-unresolved")) {
      LosesPortRace.loseNext(0);
      String bindAddressBefore = System.setProperty("ringmaster.bind_addr", "no-such-host.invalid");
      try {
        RingmasterException e = assertThrows(RingmasterException.class,
            () -> cluster.start(tcp(cluster, "d", "port-race-tcp.xml")));
        assertEquals(RingmasterException.Reason.STACK, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains("no-such-host.invalid"), e.getMessage());
        assertEquals(0, LosesPortRace.stacksBuilt(), "no stack initialised: " + e.getMessage());
      } finally {
        if (bindAddressBefore == null) {
          System.clearProperty("ringmaster.bind_addr");
        } else {
          System.setProperty("ringmaster.bind_addr", bindAddressBefore);
        }
      }
    }
  }

  private static int port(Ringmaster node) {
    IpAddress physical = (IpAddress) node.channel().down(new Event(Event.GET_PHYSICAL_ADDRESS,
        node.channel().getAddress()));
    return physical.getPort();
  }
}
