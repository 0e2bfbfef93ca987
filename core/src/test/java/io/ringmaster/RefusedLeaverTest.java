package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node that the cluster refuses when its close() comes to the LEAVING change (two nodes started
 * with one id on the two sides of a partition ({@link Islands}), then healed: the other keeps the
 * id), and that a view lets in before it has left (the holder of the id leaves). It makes no
 * LEAVING change, so it hands nothing off and must not say its hand-off is done; and it says it is
 * leaving all the same, so that a member that closes meanwhile hands it nothing. Its close() is held
 * between the two by a membership listener whose first callback lasts until the test lets it go.
 */
class RefusedLeaverTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /**
   * The refused twin leaves and c joins in one view (b, the coordinator, holds the requests until
   * both are queued). The twin's listeners handled everything in time, but it made no hand-off, so
   * it never says it did: c's first change compares with the ring the twin was in, and names the
   * twin, gone, as the only source of what it held there.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void admittedAfterItsLeavingChange_neverSaysItsHandOffIsDone_andTheNewcomerNamesItAsTheSource(@TempDir Path dir)
      throws Exception {
    String patient = TestCluster.patientJoiners(dir, "islands.xml");
    List<OwnershipChange> ofB = new CopyOnWriteArrayList<>();
    List<OwnershipChange> ofC = new CopyOnWriteArrayList<>();
    List<Address> addresses = new ArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (TestCluster cluster = new TestCluster("refused-leaver-and-join");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      try {
        Ringmaster b = cluster.start(builder(cluster, "b"), n -> n.addOwnershipListener(ofB::add));
        Twin admitted = admitWhileClosing(cluster, List.of(b), release, threads, addresses);
        Ringmaster refused = admitted.refused();
        HashRing before = b.ring();
        assertEquals(List.of("a", "b"), ids(before), "the twin, let in, holds the id");

        ViewHandler<?> requests = TestCluster.holdRequests(b);
        CompletableFuture<Ringmaster> joining;
        try {
          release.countDown(); // the twin's close() goes on, and its leave request waits in b's queue
          await("the twin's leave queued").atMost(WAIT).until(() -> requests.size() >= 1);
          joining = threads.supply("start-c", () -> cluster.start(cluster.builder("c").jgroupsConfig(patient)
              .virtualNodes(64).replicas(1), n -> n.addOwnershipListener(ofC::add)));
          await("c's join queued").atMost(WAIT).until(() -> requests.size() >= 2);
        } finally {
          requests.processing(false); // in a finally: else c, which never gives up, would wait for good
        }
        admitted.closing().get(1, TimeUnit.MINUTES);
        Ringmaster c = joining.get(1, TimeUnit.MINUTES);
        addresses.add(c.channel().getAddress());
        assertTrue(refused.leftIdle(), "the twin's listeners handled everything in time: only the LEAVING change"
            + " it made while refused keeps it from saying its hand-off is done");

        TestCluster.awaitAgreement(List.of(b, c), 2, WAIT);
        await("c's first change").atMost(WAIT).until(() -> !ofC.isEmpty());
        OwnershipChange first = ofC.get(0);
        assertEquals(List.of("b", "c"), ids(first.ring()));
        assertTrue(ofB.stream().anyMatch(ch -> ch.viewId() == first.viewId()
            && ch.previousRing().checksum() == before.checksum()), "the twin left and c joined in one view");
        assertEquals(before.checksum(), first.previousRing().checksum(),
            "c compares with the ring the twin was in: the twin said nothing of a hand-off");
        List<RingDiff.Gained> fromTwin = first.gainedFrom(before.member("a").orElseThrow());
        assertFalse(fromTwin.isEmpty(), "c gained ranges the twin held");
        for (RingDiff.Gained g : fromTwin) {
          assertEquals(List.of(), first.sourcesInRing(g), "no source of " + g.range() + " in the ring");
        }
      } finally {
        release.countDown();
      }
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /**
   * The twin says it is leaving as its close() begins, though refused then: d, which closes once
   * the twin is let in and before it has left, hands it nothing, only to b.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void refusedWhenItsCloseBegan_saysItIsLeaving_soAMemberClosingOnceItIsAdmittedHandsItNothing() throws Exception {
    OwnershipChange leaving = leavingOfD("refused-leaver-and-leaver", true, (d, twin) -> {
      Address twinAt = twin.channel().getAddress();
      assertEquals(List.of("a", "b", "d"), ids(d.ring()), "the twin, let in, holds the id");
      await("d told that the twin is leaving").atMost(WAIT).until(() -> d.leavingPeers().contains(twinAt));
    });
    assertEquals(List.of("b"), ids(leaving.ring()), "d hands off to the ring without the twin");
    assertFalse(leaving.lost().isEmpty());
    for (RingDiff.Lost l : leaving.lost()) {
      assertEquals(List.of("b"), l.destinations().stream().map(Member::id).toList(), "d hands " + l.range() + " to b");
    }
  }

  /**
   * The refused twin's word that it is leaving names its address, not its id: the others keep
   * the holder of the id, in the ring, as a member that stays. d, which closes while the twin is
   * still refused, hands the holder its share.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void refusedTwinLeaving_whileTheHolderStays_aMemberClosingStillHandsTheHolderItsShare() throws Exception {
    OwnershipChange leaving = leavingOfD("refused-leaver-and-holder", false, (d, twin) -> {
      Address twinAt = twin.channel().getAddress();
      await("d told that the twin is leaving").atMost(WAIT).until(() -> d.leavingPeers().contains(twinAt));
      assertEquals(List.of("a", "b", "d"), ids(d.ring()), "the holder keeps the id");
    });
    assertEquals(List.of("a", "b"), ids(leaving.ring()), "d hands off to the holder and b");
    assertTrue(leaving.lost().stream().anyMatch(l -> l.destinations().stream().anyMatch(m -> m.id().equals("a"))),
        "the holder takes part of d's ranges: " + leaving.lost());
  }

  /**
   * Two ids with two members each: the twin of "a" the cluster refuses says it is leaving while
   * the twin of "e" is refused too, not in the ring. The holders of both ids leave, both twins are
   * let in, and the twin of "e" closes before the twin of "a" has left: it heard the word all the
   * same (a leaver tells every member of its view, not only those of its ring), and hands the twin
   * of "a" nothing, only to b.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void refusedWhenAnotherRefusedMemberSaidItWasLeaving_closingOnceBothAreLetIn_handsThatLeaverNothing()
      throws Exception {
    List<OwnershipChange> ofE = new CopyOnWriteArrayList<>();
    List<Address> addresses = new ArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (TestCluster cluster = new TestCluster("refused-leaver-and-refused-closer");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      try {
        Ringmaster b = cluster.start(builder(cluster, "b"));
        List<Pair> twins = twins(cluster, List.of(b), List.of("a", "e"), addresses);
        Ringmaster leaver = twins.get(0).refused();
        Ringmaster closer = twins.get(1).refused();
        closer.addOwnershipListener(ofE::add);
        CompletableFuture<Void> leaving = holdInClose(leaver, release, threads);
        Address leaverAt = leaver.channel().getAddress();
        await("e's refused twin told that a's is leaving").atMost(WAIT)
            .until(() -> closer.leavingPeers().contains(leaverAt));
        assertFalse(closer.isInRing(), "told while refused");

        twins.get(0).holder().close();
        twins.get(1).holder().close();
        await("both twins let in").atMost(WAIT).until(() -> leaver.isInRing() && closer.isInRing()
            && b.channel().getView().size() == 3 && closer.viewId() == b.viewId());
        assertEquals(List.of("a", "b", "e"), ids(closer.ring()));
        assertFalse(leaving.isDone(), "a's twin has not left");

        closer.close();
        OwnershipChange change = ofE.get(ofE.size() - 1);
        assertEquals(OwnershipChange.Reason.LEAVING, change.reason());
        assertEquals(List.of("b"), ids(change.ring()), "e's twin hands off to the ring without a's");
        assertFalse(change.lost().isEmpty());
        for (RingDiff.Lost l : change.lost()) {
          assertEquals(List.of("b"), l.destinations().stream().map(Member::id).toList(),
              "e's twin hands " + l.range() + " to b");
        }
        release.countDown();
        leaving.get(1, TimeUnit.MINUTES);
      } finally {
        release.countDown();
      }
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /** What a test checks of d and the refused twin before d closes. */
  private interface BeforeDCloses {
    void check(Ringmaster d, Ringmaster twin) throws Exception;
  }

  /**
   * Starts b and d, then the twins (see {@link #refuseWhileClosing}; if {@code letIn}, the holder
   * closes and the refused twin is let in), runs {@code beforeClose}, and closes d; then lets the
   * twin's close() go on and waits for it. Returns d's LEAVING change.
   */
  private static OwnershipChange leavingOfD(String clusterName, boolean letIn, BeforeDCloses beforeClose)
      throws Exception {
    List<OwnershipChange> ofD = new CopyOnWriteArrayList<>();
    List<Address> addresses = new ArrayList<>();
    CountDownLatch release = new CountDownLatch(1);
    try (TestCluster cluster = new TestCluster(clusterName);
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      try {
        Ringmaster b = cluster.start(builder(cluster, "b"));
        Ringmaster d = cluster.start(builder(cluster, "d"), n -> n.addOwnershipListener(ofD::add));
        Twin twin = letIn ? admitWhileClosing(cluster, List.of(b, d), release, threads, addresses)
            : refuseWhileClosing(cluster, List.of(b, d), release, threads, addresses).asTwin();
        beforeClose.check(d, twin.refused());
        d.close();
        OwnershipChange leaving = ofD.get(ofD.size() - 1);
        assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
        release.countDown();
        twin.closing().get(1, TimeUnit.MINUTES);
        return leaving;
      } finally {
        release.countDown();
      }
    } finally {
      addresses.forEach(Islands::forget);
    }
  }

  /** The twin refused when its close() began (let in since, or not), and that close(), under way. */
  private record Twin(Ringmaster refused, CompletableFuture<Void> closing) { }

  /**
   * Starts "a" after {@code others} (so that the first of them coordinates their side), then a
   * twin "a" alone on another island, and heals: one of the two keeps the id, the other is refused
   * (see {@link #twins}). The refused one gets a membership listener whose first callback lasts
   * until {@code release} opens, and closes on a thread of {@code threads}: its close() comes to the
   * LEAVING change while refused, and waits for that listener.
   */
  private static Refused refuseWhileClosing(TestCluster cluster, List<Ringmaster> others, CountDownLatch release,
                                           JoinedThreads threads, List<Address> addresses) throws Exception {
    Pair twins = twins(cluster, others, List.of("a"), addresses).get(0);
    return new Refused(twins.holder(), twins.refused(), holdInClose(twins.refused(), release, threads));
  }

  /**
   * Starts a member for each of {@code ids} after {@code others} (so that the first of them
   * coordinates their side), then a twin of each on another island, and heals: for each id one of
   * the two keeps it, the other is refused. Returns them in the order of {@code ids}.
   */
  private static List<Pair> twins(TestCluster cluster, List<Ringmaster> others, List<String> ids,
                                   List<Address> addresses) throws Exception {
    List<Ringmaster> side = new ArrayList<>(others);
    for (String id : ids) {
      side.add(cluster.start(builder(cluster, id)));
    }
    TestCluster.awaitAgreement(side, side.size(), WAIT);
    List<Ringmaster> twins = new ArrayList<>();
    try (AutoCloseable on = Islands.startOn(1)) {
      for (String id : ids) {
        twins.add(cluster.start(builder(cluster, id)));
      }
    }
    List<Ringmaster> all = new ArrayList<>(side);
    all.addAll(twins);
    all.forEach(n -> addresses.add(n.channel().getAddress()));
    addresses.forEach(x -> Islands.move(x, 0));
    Ringmaster first = others.get(0);
    List<List<Ringmaster>> byId = new ArrayList<>();
    for (int i = 0; i < ids.size(); i++) {
      byId.add(List.of(side.get(others.size() + i), twins.get(i)));
    }
    await("one view of all, one holder of each id").atMost(WAIT).until(() -> all.stream()
        .allMatch(n -> n.channel().getView().size() == all.size() && n.viewId() == first.viewId())
        && byId.stream().allMatch(two -> two.get(0).isInRing() != two.get(1).isInRing()));
    return byId.stream().map(two -> two.get(0).isInRing() ? new Pair(two.get(0), two.get(1))
        : new Pair(two.get(1), two.get(0))).toList();
  }

  /** Two members with one id: the one that holds it, and the one the cluster refuses. */
  private record Pair(Ringmaster holder, Ringmaster refused) { }

  /**
   * Gives {@code refused} a membership listener whose first callback lasts until {@code release}
   * opens, and closes it on a thread of {@code threads}; returns once its close() is past the
   * LEAVING change, made while it is still refused.
   */
  private static CompletableFuture<Void> holdInClose(Ringmaster refused, CountDownLatch release,
                                                     JoinedThreads threads) throws Exception {
    CountDownLatch holding = new CountDownLatch(1);
    refused.addMembershipListener(change -> {
      holding.countDown();
      GracefulLeaveTest.awaitBounded(release);
    });
    assertTrue(holding.await(1, TimeUnit.MINUTES), "the listener's first callback runs");
    CompletableFuture<Void> closing = threads.run("close-refused", refused::close);
    await("the refused twin's close() past its LEAVING change").atMost(WAIT).until(refused::pastLeavingChange);
    assertFalse(refused.isInRing(), "still refused");
    return closing;
  }

  /** The holder of the twins' id, and the refused twin, whose close() waits past its LEAVING change. */
  private record Refused(Ringmaster holder, Ringmaster refused, CompletableFuture<Void> closing) {
    /** The refused twin and its close(), the holder left out. */
    Twin asTwin() {
      return new Twin(refused, closing);
    }
  }

  /** As {@link #refuseWhileClosing}, then the holder closes, and the refused twin is let in. */
  private static Twin admitWhileClosing(TestCluster cluster, List<Ringmaster> others, CountDownLatch release,
                                            JoinedThreads threads, List<Address> addresses) throws Exception {
    Refused twins = refuseWhileClosing(cluster, others, release, threads, addresses);
    Ringmaster holder = twins.holder();
    Ringmaster refused = twins.refused();
    CompletableFuture<Void> closing = twins.closing();
    Ringmaster first = others.get(0);
    holder.close();
    await("the refused twin let in").atMost(WAIT).until(() -> refused.isInRing()
        && first.channel().getView().size() == others.size() + 1 && refused.viewId() == first.viewId());
    assertFalse(closing.isDone(), "its close() still waits for the listener");
    return new Twin(refused, closing);
  }

  /** On the islands' stack, one replica, and a leaveTimeout long enough for the held listener. */
  private static Ringmaster.Builder builder(TestCluster cluster, String id) {
    return cluster.builder(id).jgroupsConfig("islands.xml").virtualNodes(64).replicas(1)
        .leaveTimeout(Duration.ofMinutes(1));
  }

  private static List<String> ids(HashRing ring) {
    return ring.members().stream().map(Member::id).toList();
  }
}
