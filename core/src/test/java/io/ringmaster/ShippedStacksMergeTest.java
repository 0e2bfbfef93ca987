package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jgroups.Address;
import org.jgroups.MergeView;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A partition and its merge on the shipped network stacks other than {@code secure-tcp.xml}
 * ({@link SecureMergeTest}): {@code localhost-tcp.xml} as shipped, its failure detector quickened
 * through the system properties it reads, and {@code lan-udp.xml}, which reads none for its
 * timings, as shipped but for its failure detector's and MERGE3's intervals (the same protocols,
 * multicast discovery included, on its own group on the loopback interface). Three real members on
 * 127.0.0.1, ports 7975-7977, the partition made by DISCARD just above the transport.
 */
class ShippedStacksMergeTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** lan-udp.xml's group for this test alone: not its default, 239.8.8.9:45599, which a node on this host may be in. */
  private static final Map<String, String> UDP_GROUP =
      Map.of("ringmaster.mcast_addr", "239.8.8.47", "ringmaster.mcast_port", "45747");
  /** localhost-tcp.xml's failure detector: a silent side suspected after 2 s, not 3 s. */
  private static final Map<String, String> QUICK_TCP_DETECTOR =
      Map.of("ringmaster.fd.timeout", "2s", "ringmaster.fd.interval", "500ms");

  /**
   * {a, b} | {c}: each side installs a view of its own, then, healed, every member installs one
   * merge view of the three, the same ring, with nobody refused and nobody rejoined (the members
   * keep their addresses: MERGE3 healed it, not a rejoin), and each member's listeners hear a
   * change whose fold is its ownership in that ring, c's as a merge.
   */
  @ParameterizedTest
  @ValueSource(strings = {"localhost-tcp.xml", "lan-udp.xml"})
  void aPartitionOfTwoAndOne_heals_intoOneMergeViewAndOneRing(String file, @TempDir Path dir) throws Exception {
    boolean udp = file.equals("lan-udp.xml");
    String stack = udp ? quickUdpStack(dir) : "ringmaster/jgroups/" + file;
    try (TestCluster cluster = new TestCluster("shipped-merge-" + file)) {
      Map<Ringmaster, OwnershipRecorder> recorders = new HashMap<>();
      List<Ringmaster> all = new ArrayList<>();
      SystemProperties.with(udp ? UDP_GROUP : QUICK_TCP_DETECTOR, List.of(), () -> {
        for (String id : List.of("a", "b", "c")) {
          Ringmaster.Builder builder = cluster.builder(id).jgroupsConfig(stack).bindAddress("127.0.0.1")
              .bindPort(7975 + all.size());
          if (!udp) {
            builder.initialHosts("127.0.0.1[7975]");
          }
          all.add(cluster.startRecorded(builder, recorders));
        }
        return null;
      });
      Ringmaster a = all.get(0);
      Ringmaster b = all.get(1);
      Ringmaster c = all.get(2);
      TestCluster.awaitAgreement(all, 3, WAIT);
      List<Address> addresses = all.stream().map(n -> n.channel().getAddress()).toList();

      TestCluster.partition(List.of(a, b), List.of(c));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      TestCluster.awaitAgreement(List.of(c), 1, WAIT);
      assertEquals(Set.of("a", "b"), ids(a));
      assertEquals(Set.of("c"), ids(c));

      TestCluster.heal(all);
      TestCluster.awaitAgreement(all, 3, WAIT);
      for (Ringmaster n : all) {
        String id = n.localMember().id();
        assertEquals(Set.of("a", "b", "c"), ids(n), id);
        assertInstanceOf(MergeView.class, n.channel().getView(), id + "'s view");
        assertEquals(3, n.channel().getView().size(), id + "'s view");
        assertEquals(0, n.stats().refusedMembers(), id + " refused a member");
        assertEquals(0, n.stats().rejoins(), id + " rejoined");
        assertEquals(addresses.get(all.indexOf(n)), n.channel().getAddress(), id + "'s address");
        await(id + "'s fold").atMost(WAIT)
            .until(() -> recorders.get(n).foldMatches(n.ring(), id, n.config().replicas()));
        assertEquals(List.of(), recorders.get(n).violations(), id);
      }
      // c went from owning everything to a third: the merge told its listeners so.
      List<OwnershipChange> ofC = recorders.get(c).changes();
      assertEquals(OwnershipChange.Reason.MERGE, ofC.get(ofC.size() - 1).reason(), ofC.toString());
      assertTrue(ofC.get(ofC.size() - 1).inRing());
    }
  }

  /**
   * lan-udp.xml written to {@code dir} with MERGE3's intervals those of in-jvm.xml and a silent
   * side suspected after 2 s, as on the TCP stack here: as shipped, a side is suspected after
   * 10-12 s and a heal is found only at MERGE3's next check, every 24 s (1.6 x its 15 s
   * maximum), too slow for a test. Everything else as shipped.
   */
  private static String quickUdpStack(Path dir) throws Exception {
    String stack;
    try (InputStream in = ShippedStacksMergeTest.class.getClassLoader()
        .getResourceAsStream("ringmaster/jgroups/lan-udp.xml")) {
      stack = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    stack = replace(stack, "<MERGE3 min_interval=\"5s\" max_interval=\"15s\"/>",
        "<MERGE3 min_interval=\"1s\" max_interval=\"3s\"/>");
    stack = replace(stack, "<FD_ALL3 timeout=\"10s\" interval=\"2s\"/>", "<FD_ALL3 timeout=\"2s\" interval=\"500ms\"/>");
    return Files.writeString(dir.resolve("lan-udp-quick.xml"), stack).toString();
  }

  private static String replace(String stack, String setting, String by) {
    assertTrue(stack.contains(setting), "lan-udp.xml has no " + setting);
    return stack.replace(setting, by);
  }

  private static Set<String> ids(Ringmaster node) {
    return node.members().stream().map(Member::id).collect(Collectors.toSet());
  }
}
