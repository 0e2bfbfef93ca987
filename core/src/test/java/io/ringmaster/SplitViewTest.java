package io.ringmaster;

import static io.ringmaster.TestCluster.gms;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.ChannelListener;
import org.jgroups.JChannel;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.protocols.TP;
import org.jgroups.stack.Protocol;
import org.jgroups.stack.ProtocolStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * One view id with two member lists: what JGroups 5.5 leaves behind when a merge view's creator
 * installs a view of its own while the merge runs (docs/operations.md). The nodes are real
 * stacks (in memory, or TCP on 127.0.0.1); the split is put in place through each node's own
 * {@link org.jgroups.protocols.pbcast.GMS#installView}, exactly as the race leaves it: the main
 * side's members install view {@code k} without {@code x}, and {@code x} installs a view {@code k}
 * with the same creator that lists them all. MERGE3 compares view ids only, so JGroups never sees
 * the split. A refused member on the wrong side is in {@code MisconfiguredMergeTest}.
 */
class SplitViewTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int TCP_PORT = 7880;

  /**
   * On the in-memory stack, where every member hears every multicast, and on the shipped TCP
   * stack on 127.0.0.1, where x hears no multicast from the side that does not list it (its
   * failure detector then suspects that side, and VERIFY_SUSPECT2 finds it alive). Without the
   * rejoin, both stay split (checked by disabling it: no agreement within 30 s on either).
   */
  @ParameterizedTest
  @ValueSource(strings = {"in-jvm", "tcp"})
  void memberItsPeersDoNotList_rejoins_thenAllAgree_andItsListenersHearNothing(String stack) throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-" + stack)) {
      Map<Ringmaster, OwnershipRecorder> recorders = new HashMap<>();
      List<Ringmaster> nodes = new ArrayList<>();
      for (String id : List.of("a", "b", "c", "x")) {
        Ringmaster.Builder builder = cluster.builder(id);
        if (stack.equals("tcp")) { // ports 7880-7899 (failure detector 7980-8002): no other test, nor a demo on 7800-7922, uses them
          builder.jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml").bindPort(TCP_PORT)
              .initialHosts("127.0.0.1[" + TCP_PORT + "]");
        }
        nodes.add(cluster.startRecorded(builder, recorders));
      }
      TestCluster.awaitAgreement(nodes, 4, WAIT);
      Ringmaster x = nodes.get(3);
      List<Ringmaster> main = nodes.subList(0, 3);
      View agreed = x.channel().getView();
      Address before = x.channel().getAddress();
      int xChanges = recorders.get(x).changes().size();
      List<RingDivergence> reports = new CopyOnWriteArrayList<>();
      main.forEach(n -> n.addDivergenceListener(reports::add));

      ViewId split = new ViewId(agreed.getCreator(), agreed.getViewId().getId() + 1);
      gms(x).installView(new View(split, agreed.getMembers()));
      // x is last in the view unless its join was slow and it merged in instead: leave it out by address.
      List<Address> withoutX = agreed.getMembers().stream().filter(m -> !m.equals(before)).toList();
      for (Ringmaster n : main) {
        gms(n).installView(new View(split, withoutX));
      }

      // x gossips its view to a member that does not list it; that member says so; x rejoins.
      // At least one, then exactly one: a second rejoin between two polls fails here, not as a timeout.
      try (NodeLog rejoined = new NodeLog(r -> r.getMessage().startsWith("{0} rejoined {1}"))) {
        await().atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
        TestCluster.awaitAgreement(nodes, 4, WAIT);
        assertEquals(1, x.stats().rejoins());
        // Its peers answered its join: the INFO line, naming the view it joined, not the one of a rejoin alone.
        ViewId joined = x.channel().getView().getViewId();
        assertEquals(List.of(Level.INFO), rejoined.levels());
        assertEquals(List.of("x rejoined " + x.config().clusterName() + ": view " + joined), rejoined.messages());
      }
      assertNotEquals(before, x.channel().getAddress(), "a rejoin is a new JGroups member");
      assertTrue(x.isInRing());
      for (Ringmaster n : nodes) {
        assertEquals(x.channel().getView(), n.channel().getView(), n.localMember().id());
        // Rings are published before their callbacks run: the fold catches up.
        await(n.localMember().id() + "'s fold").atMost(WAIT)
            .until(() -> recorders.get(n).foldMatches(n.ring(), n.localMember().id(), n.config().replicas()));
        assertEquals(List.of(), recorders.get(n).violations(), n.localMember().id());
      }
      assertTrue(main.stream().mapToLong(n -> n.stats().divergences()).sum() >= 1,
          "the main side reported the divergence it found");
      for (Ringmaster n : main) {
        RingmasterStats stats = n.stats();
        assertEquals(stats.divergences(), stats.splitViewDivergences(), "every one of a split view");
      }
      await("the report, as a split view").atMost(WAIT).until(() -> reports.stream()
          .anyMatch(r -> r.kind() == RingDivergence.Kind.SPLIT_VIEW && r.peerId().equals("x")));
      main.forEach(n -> assertEquals(0, n.stats().rejoins(), n.localMember().id()));
      // x's ring had the same four members before, during and after: nothing to tell its listeners.
      // Counted once every callback queued so far has run: a wrong change must have arrived by then.
      assertTrue(x.awaitListeners(WAIT));
      assertEquals(xChanges, recorders.get(x).changes().size(), () -> recorders.get(x).changes().toString());
    }
  }

  /**
   * close() while a rejoin connects: it waits for the rejoin, then leaves from the view it joined,
   * so that its listeners hand off over a connected channel. Before, they were told LEAVING from
   * the ring before the rejoin while the channel was still reconnecting, and the node joined
   * again, only to leave at once.
   */
  @Test
  void close_whileARejoinConnects_waitsForIt_thenLeavesFromTheViewItJoined() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-close")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      List<String> leaving = new CopyOnWriteArrayList<>();
      Ringmaster x = startRecordingLeaving(cluster, leaving, (self, change) -> {
        JChannel channel = self.channel();
        View now = channel.getView();
        return "connected " + channel.isConnected() + ", from the view it is in "
            + (now != null && now.getViewId().getId() == change.viewId());
      });
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      CountDownLatch connecting = new CountDownLatch(1);
      x.rejoin.beforeConnect = () -> {
        connecting.countDown();
        // Until close() waits for this rejoin, or (had it not waited) x's listeners heard LEAVING.
        await().atMost(WAIT).until(() -> x.rejoin.lock.hasQueuedThreads() || !leaving.isEmpty());
      };
      splitOff(x, a, b);
      assertTrue(connecting.await(WAIT.toSeconds(), TimeUnit.SECONDS), "x rejoins");

      x.close();
      assertEquals(List.of("connected true, from the view it is in true"), leaving);
      assertEquals(1, x.stats().rejoins());
      assertFalse(x.rejoin.lock.isLocked(), "close() let go of the lock it took once the rejoin ended");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  /**
   * close() while a rejoin disconnects: the rejoin sees the close once it has left, and does not
   * join again (the node would come back only to leave at once); close() waits for it, and the
   * listeners hear LEAVING from the ring before the rejoin, over the channel now disconnected. The
   * others go on without the node.
   */
  @Test
  void close_whileARejoinDisconnects_theNodeDoesNotJoinAgain_andHearsLeavingFromTheRingBefore() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-close-leaving")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      List<String> leaving = new CopyOnWriteArrayList<>();
      Ringmaster x = startRecordingLeaving(cluster, leaving,
          (self, change) -> "connected " + self.channel().isConnected() + ", view " + change.viewId());
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      CountDownLatch disconnecting = new CountDownLatch(1);
      AtomicInteger connects = new AtomicInteger();
      x.rejoin.beforeConnect = connects::incrementAndGet;
      x.channel().addChannelListener(new ChannelListener() {
        @Override
        public void channelDisconnected(JChannel channel) { // on the rejoin thread, in its disconnect
          disconnecting.countDown();
          // Until close() waits for this rejoin, or (had it not waited) x's listeners heard LEAVING.
          await().atMost(WAIT).until(() -> x.rejoin.lock.hasQueuedThreads() || !leaving.isEmpty());
        }
      });
      splitOff(x, a, b);
      assertTrue(disconnecting.await(WAIT.toSeconds(), TimeUnit.SECONDS), "x rejoins");
      long splitView = x.viewId(); // the ring before the rejoin: that of the view its peers did not install

      x.close();
      assertEquals(List.of("connected false, view " + splitView), leaving);
      assertEquals(0, x.stats().rejoins(), "x did not connect again");
      assertEquals(0, connects.get(), "x did not try to connect again");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  /**
   * close() while a rejoin is stuck in its connect, deaf to interrupts: it waits for it at most the
   * longer of leaveTimeout and 5 s, says so at WARNING with that wait, and its listeners still hear
   * LEAVING (from the ring before the rejoin); once it has stopped the channel, it waits a second
   * more for the rejoin thread, and a second WARNING names that thread as still running. The node
   * leaves, and the others go on without it.
   */
  @Test
  void close_whileARejoinIsStuck_waitsAtMostItsBound_warns_andStillTellsLeaving() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-stuck");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("a rejoin under way has not ended")
             || r.getMessage().contains("still runs a task"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      List<OwnershipChange.Reason> heard = new CopyOnWriteArrayList<>();
      Ringmaster x = cluster.start(cluster.builder("x").leaveTimeout(Duration.ofSeconds(1)),
          n -> n.addOwnershipListener(change -> heard.add(change.reason())));
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      CountDownLatch connecting = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger interrupts = new AtomicInteger();
      x.rejoin.beforeConnect = () -> {
        connecting.countDown();
        TestCluster.awaitIgnoringInterrupts(release, interrupts, WAIT); // a connect that does not return
      };
      try {
        splitOff(x, a, b);
        assertTrue(connecting.await(WAIT.toSeconds(), TimeUnit.SECONDS), "x rejoins");
        long started = System.nanoTime();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(x::close, TestThreads.ON_OWN_THREAD);
        await("the WARNING").atMost(WAIT).until(() -> !log.records().isEmpty());
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(waitedMillis >= 4_900, "waited the 5 s bound before giving up: " + waitedMillis + " ms");
        assertEquals("5000", log.records().get(0).getParameters()[1], "the wait it names");
        await("LEAVING heard").atMost(WAIT).until(() -> heard.contains(OwnershipChange.Reason.LEAVING));
        closing.get(WAIT.toSeconds(), TimeUnit.SECONDS); // the rejoin still stuck
        await("close() interrupted the rejoin, which went on").atMost(WAIT).until(() -> interrupts.get() == 1);
        assertEquals("x: the rejoin thread still runs a task a second after close() interrupted it; close()"
            + " returns without waiting for it", log.messages().get(1));
        release.countDown();
        TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * A rejoin that no member answers (the others left while it was leaving) leaves the node alone, in
   * a view of its own: said at WARNING, naming that view, for MERGE3 to merge it back once the
   * others are found; not at INFO, as a rejoin its peers answered.
   */
  @Test
  void aRejoinNoMemberAnswers_isSaidAtWarning_andLeavesTheNodeAlone() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-alone");
         NodeLog rejoined = new NodeLog(r -> r.getMessage().startsWith("{0} rejoined {1}"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      x.rejoin.beforeConnect = () -> { // x has left: the others go too, before it joins again
        a.close();
        b.close();
      };
      splitOff(x, a, b);

      await("x rejoined").atMost(WAIT).until(() -> !rejoined.records().isEmpty());
      View alone = x.channel().getView();
      assertEquals(List.of(x.channel().getAddress()), alone.getMembers());
      assertEquals(1, x.stats().rejoins());
      assertEquals(List.of(Level.WARNING), rejoined.levels());
      assertEquals(List.of("x rejoined " + x.config().clusterName() + " alone (view " + alone.getViewId()
          + "): no member answered its join; it merges back when MERGE3 finds the others"), rejoined.messages());
    }
  }

  /**
   * close() interrupted while it waits for a stuck rejoin stops waiting at once, not at its bound
   * (here the leaveTimeout, a minute, longer than this test waits for anything): it says so at
   * WARNING, its listeners still hear LEAVING, and it returns with the thread's interrupt flag set,
   * for the caller to see.
   */
  @Test
  void close_interruptedWhileItWaitsForAStuckRejoin_stopsWaiting_andKeepsTheFlag() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-interrupted-close");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("a rejoin under way has not ended"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      List<OwnershipChange.Reason> heard = new CopyOnWriteArrayList<>();
      Ringmaster x = cluster.start(cluster.builder("x").leaveTimeout(Duration.ofMinutes(1)),
          n -> n.addOwnershipListener(change -> heard.add(change.reason())));
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      CountDownLatch connecting = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      x.rejoin.beforeConnect = () -> {
        connecting.countDown();
        TestCluster.awaitIgnoringInterrupts(release, new AtomicInteger(), WAIT); // a connect that does not return
      };
      try {
        splitOff(x, a, b);
        assertTrue(connecting.await(WAIT.toSeconds(), TimeUnit.SECONDS), "x rejoins");
        CompletableFuture<Boolean> flagAfterClose = new CompletableFuture<>();
        Thread closer = TestCluster.closeOnAThreadOfItsOwn(x, flagAfterClose);
        await("close() waits for the rejoin").atMost(WAIT).until(() -> x.rejoin.lock.hasQueuedThread(closer));
        closer.interrupt();

        await("the WARNING").atMost(WAIT).until(() -> !log.records().isEmpty());
        await("LEAVING heard").atMost(WAIT).until(() -> heard.contains(OwnershipChange.Reason.LEAVING));
        assertTrue(flagAfterClose.get(WAIT.toSeconds(), TimeUnit.SECONDS), "close() kept the interrupt");
        assertEquals("60000", log.records().get(0).getParameters()[1], "the wait it cut short");
      } finally {
        release.countDown();
      }
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  /**
   * The members that find a node on the wrong side of a split view say so at WARNING, once per view
   * and node however many of its checksums or questions come before it rejoins (later at DEBUG),
   * naming it and the view: the line operators are told to look for.
   */
  @Test
  void aSplitView_isSaidAtWarningOncePerViewAndNode_byTheMembersThatFindIt() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-said");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("which does not list it"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      View split;
      x.rejoin.lock.lock(); // x's rejoin waits for it before it leaves: x gossips from the split view meanwhile
      try {
        splitOff(x, a, b);
        split = a.channel().getView();
        await("told more than once").atMost(WAIT).until(() -> log.records().size() >= 4);
      } finally {
        x.rejoin.lock.unlock();
      }
      await("x rejoins").atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
      Map<Object, Integer> warningsPerNode = new HashMap<>();
      for (LogRecord r : log.records()) {
        if (r.getLevel() == Level.WARNING) {
          assertEquals(split.getViewId(), r.getParameters()[2], "the view that does not list x");
          assertTrue(String.valueOf(r.getParameters()[1]).startsWith("x"), "names x: " + r.getParameters()[1]);
          warningsPerNode.merge(r.getParameters()[0], 1, Integer::sum);
        }
      }
      assertTrue(!warningsPerNode.isEmpty() && warningsPerNode.values().stream().allMatch(n -> n == 1),
          "one WARNING per member that found it: " + warningsPerNode + " of " + log.levels());
    }
  }

  /**
   * Rejoin attempts that keep failing are said at ERROR once, with the failure's stack trace, then
   * at DEBUG (an ERROR again only a minute later): each was an ERROR without its stack trace, one
   * every gossipInterval for as long as the failures lasted.
   */
  @Test
  void rejoinsThatKeepFailing_areSaidAtErrorOnce_withTheStackTrace() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-failing");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("rejoining the cluster failed"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      AtomicInteger connects = new AtomicInteger();
      x.rejoin.beforeConnect = () -> {
        if (connects.incrementAndGet() <= 4) {
          throw new IllegalStateException("injected by the test: connect attempt " + connects.get() + " fails");
        }
      };
      splitOff(x, a, b);

      await("x rejoins after four failures").atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
      assertEquals(List.of(Level.SEVERE, Level.FINE, Level.FINE,
          Level.FINE), log.levels());
      assertEquals("injected by the test: connect attempt 1 fails", log.records().get(0).getThrown().getMessage());
      assertTrue(log.records().get(3).getMessage().contains("(4 attempts in a row"), log.records().get(3).getMessage());
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
    }
  }

  /**
   * A rejoin runs on the node's own thread, whose task nobody reads: an Error thrown there (out of
   * memory while JGroups restarts the stack's threads, say) must be logged and tried again like
   * an exception, or the node stays disconnected for good while its ring still claims its ranges.
   */
  @Test
  void aRejoinThatThrowsAnError_isTriedAgain_andTheNodeComesBack() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-error")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      AtomicInteger connects = new AtomicInteger();
      x.rejoin.beforeConnect = () -> {
        if (connects.incrementAndGet() == 1) {
          throw new InternalError("injected by the test: the first connect of the rejoin fails");
        }
      };
      splitOff(x, a, b);

      await("x rejoins after the Error").atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
      assertEquals(2, connects.get(), "the connect that threw, then the one tried again");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      assertEquals(1, x.stats().rejoins(), "one rejoin, its connect tried twice");
      x.close();
      await("every thread of x ends, the rejoin thread's too").atMost(WAIT)
          .until(() -> TestCluster.nodeThreads("x").isEmpty());
    }
  }

  /**
   * JGroups marks a stack started before it starts its protocols, and only a stop clears the mark:
   * when one protocol's start fails in a rejoin's connect (a port taken meanwhile, say), the ones
   * above it never started, and the next connect would find the stack "started" and skip them,
   * leaving the node without a membership protocol. The failed connect must stop the stack. Also
   * with a logger that throws at the rejoin's lines (its first, before it disconnects, and the
   * failure's): the rejoin must still go on, and the next attempt be scheduled, or the node stays
   * out of the cluster for good while its ring still claims its ranges.
   */
  @ParameterizedTest(name = "logger throws at: \"{0}\"")
  @ValueSource(strings = {"", "does not list this node in it", "rejoining the cluster failed"})
  void aRejoinWhoseStackFailsToStart_startsTheWholeStackNextTime_andTheNodeComesBack(String loggerThrowsAt)
      throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-start");
         ThrowingLog log = new ThrowingLog(r -> !loggerThrowsAt.isEmpty()
             && ThrowingLog.messageContains(loggerThrowsAt).test(r))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
      FailsToStartOnce fault = new FailsToStartOnce();
      x.rejoin.beforeConnect = () -> {
        if (x.channel().getProtocolStack().findProtocol(FailsToStartOnce.class) == null) {
          try { // just above the transport: everything above it is left unstarted by the failure
            x.channel().getProtocolStack().insertProtocol(fault, ProtocolStack.Position.ABOVE, TP.class);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }
      };
      splitOff(x, a, b);

      await("x rejoins after its stack failed to start").atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
      assertEquals(2, fault.starts.get(), "the start that failed, then the one tried again");
      assertEquals(loggerThrowsAt.isEmpty() ? 0 : 1, log.thrown(), "the logger threw at that line");
      TestCluster.awaitAgreement(List.of(a, b, x), 3, WAIT);
    }
  }

  /** A protocol whose first start fails, as a transport's does when its port was taken meanwhile. */
  static final class FailsToStartOnce extends Protocol {
    final AtomicInteger starts = new AtomicInteger();

    @Override
    public void start() throws Exception {
      super.start();
      if (starts.incrementAndGet() == 1) {
        throw new IllegalStateException("injected by the test: the first start of this protocol fails");
      }
    }
  }

  @Test
  void twoMembersTheirPeersDoNotList_bothComeBack_thenAllAgree() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-two")) {
      Map<Ringmaster, OwnershipRecorder> recorders = new HashMap<>();
      List<Ringmaster> nodes = new ArrayList<>();
      for (String id : List.of("a", "b", "c", "x", "y")) {
        nodes.add(cluster.startRecorded(cluster.builder(id), recorders));
      }
      TestCluster.awaitAgreement(nodes, 5, WAIT);
      View agreed = nodes.get(0).channel().getView();
      ViewId split = new ViewId(agreed.getCreator(), agreed.getViewId().getId() + 1);
      for (Ringmaster n : nodes.subList(3, 5)) {
        gms(n).installView(new View(split, agreed.getMembers()));
      }
      List<Address> xy = nodes.subList(3, 5).stream().map(n -> n.channel().getAddress()).toList();
      List<Address> withoutXY = agreed.getMembers().stream().filter(m -> !xy.contains(m)).toList();
      for (Ringmaster n : nodes.subList(0, 3)) {
        gms(n).installView(new View(split, withoutXY));
      }

      // Agreement alone would hold at once, on the rings from before the split: wait for the rejoin.
      await("x or y rejoins").atMost(WAIT).until(() -> nodes.get(3).stats().rejoins() + nodes.get(4).stats().rejoins() >= 1);
      TestCluster.awaitAgreement(nodes, 5, WAIT);
      for (Ringmaster n : nodes) {
        assertEquals(nodes.get(0).channel().getView(), n.channel().getView(), n.localMember().id());
        // Rings are published before their callbacks run: the fold catches up.
        await(n.localMember().id() + "'s fold").atMost(WAIT)
            .until(() -> recorders.get(n).foldMatches(n.ring(), n.localMember().id(), n.config().replicas()));
        assertEquals(List.of(), recorders.get(n).violations(), n.localMember().id());
      }
      assertTrue(nodes.get(3).stats().rejoins() + nodes.get(4).stats().rejoins() >= 1);
    }
  }

  @Test
  void notListedMessage_forAViewTheNodeIsNotIn_isIgnored() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-stale")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      List<Ringmaster> nodes = List.of(a, b);
      TestCluster.awaitAgreement(nodes, 2, WAIT);
      View view = b.channel().getView();
      Address address = b.channel().getAddress();
      long received = b.stats().gossipReceived();
      // An older view, and one of the same number under another creator: neither is b's view.
      a.channel().send(new BytesMessage(address,
          Gossip.encodeNotListed(view.getViewId().getId() - 1, view.getCreator())));
      a.channel().send(new BytesMessage(address,
          Gossip.encodeNotListed(view.getViewId().getId(), address.equals(view.getCreator())
              ? a.channel().getAddress() : address)));
      await().atMost(WAIT).until(() -> b.notListedIgnored() == 2);
      // Messages from one sender arrive in order: once a later checksum from a is counted, a
      // rejoin would have been queued already; none was.
      await().atMost(WAIT).until(() -> b.stats().gossipReceived() > received + 1);
      assertEquals(0, b.stats().rejoins());
      assertEquals(address, b.channel().getAddress());
      assertEquals(view, b.channel().getView());
    }
  }

  /**
   * Gossip messages go to one member each: one sent to the whole cluster, as a forger on a stack
   * without authentication could send in a member's name, is dropped unread. Here a "not in view"
   * for the very view b and c have, from a, which their view lists (so sent to b alone it would
   * make b rejoin), and a checksum that disagrees with theirs: neither a rejoin nor a divergence.
   */
  @Test
  void gossipSentToEveryMember_isDroppedUnread_noRejoinNoDivergence() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-multicast")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      Ringmaster c = cluster.start("c");
      List<Ringmaster> nodes = List.of(a, b, c);
      TestCluster.awaitAgreement(nodes, 3, WAIT);
      View view = b.channel().getView();
      a.channel().send(new BytesMessage(null, Gossip.encodeNotListed(view.getViewId().getId(), view.getCreator())));
      a.channel().send(new BytesMessage(null, Gossip.encode(view.getViewId().getId(), view.getCreator(),
          b.ring().checksum() + 1, "a")));
      for (Ringmaster n : List.of(b, c)) {
        await(n.localMember().id() + " drops both").atMost(WAIT).until(() -> n.gossipMulticastsDropped() == 2);
        assertEquals(0, n.stats().rejoins(), n.localMember().id());
        assertEquals(0, n.stats().divergences(), n.localMember().id());
        assertEquals(0, n.notListedIgnored(), "dropped before it is read");
        assertEquals(view, n.channel().getView());
      }
    }
  }

  /**
   * A member that the view does not list, heard while this node's channel has moved on to the next
   * view and its ring is still being built (a split healing), is reported as the split view it is,
   * and told so: not as a member claiming another's place in the ring (HOLDER, an ERROR line),
   * which is what the channel's newer view made of it, since that view could not say whether the
   * older one listed the sender.
   */
  @Test
  void aSplitHeardWhileTheNextRingIsBuilt_isReportedAsASplitView_notAsAHolder() throws Exception {
    try (TestCluster cluster = new TestCluster("split-view-building")) {
      Ringmaster m = cluster.start("m");
      Ringmaster x = cluster.start("x");
      TestCluster.awaitAgreement(List.of(m, x), 2, WAIT);
      List<RingDivergence> reports = new CopyOnWriteArrayList<>();
      m.addDivergenceListener(reports::add);
      View agreed = m.channel().getView();
      long split = agreed.getViewId().getId() + 1;
      CountDownLatch building = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      m.beforeEachBuild(v -> {
        if (v.getViewId().getId() == split + 1) {
          building.countDown();
          try {
            release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      });
      // m hears nothing from x until its channel has moved on: x's first gossip of the split view
      // then reaches m while m builds the next ring, the case this test is about.
      TestCluster.discard(m).addIgnoreMember(x.channel().getAddress());
      try {
        splitOff(x, m);
        await("m's ring of the split view").atMost(WAIT).until(() -> m.viewId() == split);
        // m's channel moves on to the next view; its ring stays the split view's while it is built.
        gms(m).installView(new View(new ViewId(agreed.getCreator(), split + 1), List.of(m.channel().getAddress())));
        assertTrue(building.await(WAIT.toMillis(), TimeUnit.MILLISECONDS));
        assertEquals(split, m.viewId());
        assertTrue(reports.isEmpty(), reports::toString);
        TestCluster.discard(m).removeIgnoredMember(x.channel().getAddress());
        // x gossips the split view's checksum to m, which it lists and which does not list it.
        await("x heard by m while m builds the next ring").atMost(WAIT).until(() -> !reports.isEmpty());
        assertEquals(split, m.viewId(), "still building");
      } finally {
        release.countDown();
      }
      assertTrue(reports.stream().allMatch(r -> r.kind() == RingDivergence.Kind.SPLIT_VIEW
          && r.peerId().equals("x")), reports::toString);
      RingmasterStats mStats = m.stats();
      assertEquals(mStats.divergences(), mStats.splitViewDivergences(), "counted as a split view");
      await("x told, and rejoined").atMost(WAIT).until(() -> x.stats().rejoins() >= 1);
      TestCluster.awaitAgreement(List.of(m, x), 2, WAIT);
    }
  }

  /**
   * Installs one view id with two member lists, as the JGroups merge race does: {@code x} keeps
   * every member of its view, while {@code others} leave {@code x} out.
   */
  /** Starts node x, which adds to {@code leaving} what {@code describe} says of each LEAVING change it hears. */
  private static Ringmaster startRecordingLeaving(TestCluster cluster, List<String> leaving,
                                                 BiFunction<Ringmaster, OwnershipChange, String> describe) {
    AtomicReference<Ringmaster> self = new AtomicReference<>();
    return cluster.start(cluster.builder("x"), n -> {
      self.set(n);
      n.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.LEAVING) {
          leaving.add(describe.apply(self.get(), change));
        }
      });
    });
  }

  static void splitOff(Ringmaster x, Ringmaster... others) throws Exception {
    View agreed = x.channel().getView();
    ViewId split = new ViewId(agreed.getCreator(), agreed.getViewId().getId() + 1);
    gms(x).installView(new View(split, agreed.getMembers()));
    List<Address> withoutX = agreed.getMembers().stream().filter(m -> !m.equals(x.channel().getAddress())).toList();
    for (Ringmaster other : others) {
      gms(other).installView(new View(split, withoutX));
    }
  }
}
