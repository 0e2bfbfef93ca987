package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.jgroups.Address;
import org.jgroups.protocols.FD_SOCK2;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The life of a member on each shipped network stack, as shipped: a third member joins two, one
 * leaves, one crashes and is found out by the stack's own failure detection, and comes back under
 * its id. The partition and its heal are in {@link ShippedStacksMergeTest} and {@link
 * SecureMergeTest}, a wrong secret in {@link RefusalAndConfigTest}. Real members on 127.0.0.1,
 * ports 7975-7977 (their failure detectors 100 above); {@code lan-udp.xml} on a group of this
 * test's own, as in ShippedStacksMergeTest.
 */
class ShippedStacksLifecycleTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** lan-udp.xml's group for this test alone: not its default, 239.8.8.9:45599, which a node on this host may be in. */
  private static final Map<String, String> UDP_GROUP =
      Map.of("ringmaster.mcast_addr", "239.8.8.47", "ringmaster.mcast_port", "45747");
  /**
   * a and b start, c joins them; b leaves with close(): its listeners hear a LEAVING change out of
   * the ring, a's and c's a VIEW change to a ring of the two of them; c crashes (silent, then
   * stopped without a leave): a's FD_SOCK2 suspects it and a's view drops it; c started
   * again under its id joins a, as a new JGroups member, in one ring.
   */
  @ParameterizedTest
  @ValueSource(strings = {"localhost-tcp.xml", "lan-udp.xml", "secure-tcp.xml"})
  void aMemberJoinsLeavesCrashesAndComesBack_onAShippedStackAsShipped(String file) throws Exception {
    try (TestCluster cluster = new TestCluster("shipped-lifecycle-" + file)) {
      Map<Ringmaster, OwnershipRecorder> recorders = new HashMap<>();
      List<Ringmaster> all = new ArrayList<>();
      for (String id : List.of("a", "b", "c")) {
        all.add(start(cluster, file, id, 7975 + all.size(), recorders));
      }
      Ringmaster a = all.get(0);
      Ringmaster b = all.get(1);
      Ringmaster c = all.get(2);
      TestCluster.awaitAgreement(all, 3, WAIT);
      for (Ringmaster n : all) {
        assertEquals(Set.of("a", "b", "c"), ids(n), n.localMember().id());
        assertEquals(3, n.channel().getView().size(), n.localMember().id() + "'s view");
      }
      // c's membership listener runs on its listener pool after the view is installed: wait for it.
      MembershipChange cJoined = await("c heard its view of three").atMost(WAIT)
          .until(() -> last(recorders.get(c).memberships()), v -> v != null && v.members().size() == 3);
      assertEquals(List.of(), cJoined.refused(), "c's view of three refused a member");

      // Graceful leave.
      b.close();
      assertTrue(b.leftIdle(), "b's listeners handled everything, its leave included");
      List<OwnershipChange> ofB = recorders.get(b).changes();
      OwnershipChange leaving = ofB.get(ofB.size() - 1);
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason(), ofB.toString());
      assertFalse(leaving.inRing());
      assertFalse(leaving.lost().isEmpty(), "b handed on what it owned");
      assertTrue(recorders.get(b).ownsNothing(), "b's fold after its leave");
      TestCluster.awaitAgreement(List.of(a, c), 2, WAIT);
      for (Ringmaster n : List.of(a, c)) {
        String id = n.localMember().id();
        assertEquals(Set.of("a", "c"), ids(n), id);
        await(id + "'s fold").atMost(WAIT)
            .until(() -> recorders.get(n).foldMatches(n.ring(), id, n.config().replicas()));
        List<OwnershipChange> changes = recorders.get(n).changes();
        assertEquals(OwnershipChange.Reason.VIEW, changes.get(changes.size() - 1).reason(), id + ": " + changes);
        awaitLastLeft(recorders.get(n), id, List.of("b"));
      }

      // Crash: c falls silent and its sockets close, as a killed process's do at once: it stops
      // without a leave, and without waiting for the answer to its leave request, which goes nowhere
      // (else a's FD_ALL3 could find the silence before FD_SOCK2 the closed sockets).
      Address crashed = c.channel().getAddress();
      TestCluster.discard(c).discardAll(true);
      TestCluster.gms(c).setLeaveTimeout(1);
      c.closeAbruptly();
      TestCluster.awaitAgreement(List.of(a), 1, WAIT);
      assertFalse(a.channel().getView().containsMember(crashed), "c's address in a's view");
      assertEquals(Set.of("a"), ids(a));
      awaitLastLeft(recorders.get(a), "a", List.of("c"));
      // Found by FD_SOCK2, as the stack files promise, not only once FD_ALL3's heartbeats ran out:
      // its history has a line "<date>: <address>" for each member it suspected.
      String suspectedBySockets = Optional.ofNullable(a.channel().getProtocolStack().<FD_SOCK2>findProtocol(FD_SOCK2.class))
          .map(FD_SOCK2::printSuspectHistory).orElse("no FD_SOCK2 in a's stack");
      assertTrue(suspectedBySockets.lines().anyMatch(l -> l.endsWith(": " + crashed)),
          "a's FD_SOCK2 never suspected c, " + crashed + ": " + suspectedBySockets);

      // Restart under the crashed id.
      Ringmaster again = start(cluster, file, "c", 7977, recorders);
      TestCluster.awaitAgreement(List.of(a, again), 2, WAIT);
      assertNotEquals(crashed, again.channel().getAddress(), "c came back as a new JGroups member");
      for (Ringmaster n : List.of(a, again)) {
        String id = n.localMember().id();
        assertEquals(Set.of("a", "c"), ids(n), id);
        assertEquals(0, n.stats().refusedMembers(), id + " refused a member");
        await(id + "'s fold").atMost(WAIT)
            .until(() -> recorders.get(n).foldMatches(n.ring(), id, n.config().replicas()));
      }
      assertTrue(again.isInRing());
      for (Ringmaster n : List.of(a, again)) {
        assertEquals(List.of(), recorders.get(n).violations(), n.localMember().id());
      }
    }
  }

  /**
   * Waits until the node's membership listener has heard a view in which exactly {@code left} left,
   * as its last: the listener runs on the node's listener pool, after the view is installed, so
   * agreement on the view does not mean it has run yet.
   */
  private static void awaitLastLeft(OwnershipRecorder recorder, String node, List<String> left) {
    await(node + " heard " + left + " leave").atMost(WAIT).until(() -> last(recorder.memberships()),
        v -> v != null && v.left().stream().map(Member::id).toList().equals(left));
  }

  /** The last view a membership listener heard, or null before its first. */
  private static MembershipChange last(List<MembershipChange> views) {
    return views.isEmpty() ? null : views.get(views.size() - 1);
  }

  /** Starts {@code id} on the stack as shipped, on 127.0.0.1 at {@code port}, a's port its only host. */
  private static Ringmaster start(TestCluster cluster, String file, String id, int port,
      Map<Ringmaster, OwnershipRecorder> recorders) throws Exception {
    Ringmaster.Builder builder = cluster.builder(id).jgroupsConfig("ringmaster/jgroups/" + file)
        .bindAddress("127.0.0.1").bindPort(port);
    if (file.equals("lan-udp.xml")) {
      return SystemProperties.with(UDP_GROUP, List.of(), () -> cluster.startRecorded(builder, recorders));
    }
    builder.initialHosts("127.0.0.1[7975]");
    if (file.equals("secure-tcp.xml")) {
      builder.secret("s3cret-lifecycle");
    }
    return cluster.startRecorded(builder, recorders);
  }

  private static Set<String> ids(Ringmaster node) {
    return node.members().stream().map(Member::id).collect(Collectors.toSet());
  }
}
