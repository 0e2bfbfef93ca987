package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jgroups.Event;
import org.jgroups.stack.IpAddress;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Several processes starting at once on one host can make JGroups' TCP transport lose a race for
 * a port and fail to start although the port range is mostly free ({@link LosesPortRace} stages
 * it). {@code start()} then builds a new stack, which binds the next free port. Real TCP stacks
 * on 127.0.0.1, ports 7940-7960, which no other test uses.
 */
class PortRaceTest {
  private static final int PORT = 7940;
  private static final String HOSTS = "127.0.0.1[" + PORT + "]";

  @AfterEach
  void noMoreLosses() {
    LosesPortRace.loseNext(0);
  }

  private static Ringmaster.Builder tcp(TestCluster cluster, String id, String stack) {
    return cluster.builder(id).jgroupsConfig(stack).bindPort(PORT).initialHosts(HOSTS);
  }

  @Test
  void aStackThatLostTheRaceForItsPort_isBuiltAgain_andJoinsOnTheNextFreePort() {
    try (TestCluster cluster = new TestCluster("port-race")) {
      Ringmaster a = cluster.start(tcp(cluster, "a", "ringmaster/jgroups/localhost-tcp.xml"));
      LosesPortRace.loseNext(1);
      Ringmaster b = cluster.start(tcp(cluster, "b", "port-race-tcp.xml"));
      assertEquals(1, LosesPortRace.lost(), "the first stack of b lost the race");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      // a holds 7940; b's first stack lost 7941 and could bind nothing after it; its second has 7941.
      assertEquals(PORT + 1, port(b));
      assertTrue(b.isInRing());
    }
  }

  @Test
  void aRangeThatStaysUnbindable_failsAfterTheLastAttempt_namingTheRange() {
    try (TestCluster cluster = new TestCluster("port-race-full")) {
      LosesPortRace.loseNext(Ringmaster.BIND_ATTEMPTS);
      Ringmaster b = cluster.builder("b").jgroupsConfig("port-race-tcp.xml").bindPort(PORT).initialHosts(HOSTS)
          .build();
      RingmasterException e = assertThrows(RingmasterException.class, b::start);
      assertEquals(Ringmaster.BIND_ATTEMPTS, LosesPortRace.lost(), "one stack per attempt, and no more");
      assertTrue(e.getMessage().contains("No available port to bind to in range [" + PORT + " .. " + (PORT + 20)
          + "]"), e.getMessage());
      assertFalse(b.isInRing());
      b.close();
    }
  }

  private static int port(Ringmaster node) {
    IpAddress physical = (IpAddress) node.channel().down(new Event(Event.GET_PHYSICAL_ADDRESS,
        node.channel().getAddress()));
    return physical.getPort();
  }
}
