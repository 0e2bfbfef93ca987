package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.management.ThreadMXBean;
import io.ringmaster.ring.Member;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.protocols.FRAG2;
import org.jgroups.stack.Protocol;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class ClusterAgreementTest {

  @Test
  void sixteenNodes_join_allComputeTheSameOwnersForEveryKey() {
    try (TestCluster cluster = new TestCluster("agreement")) {
      List<Ringmaster> nodes = new ArrayList<>();
      nodes.add(cluster.start(cluster.builder("node-0").virtualNodes(1024).replicas(2)));
      List<CompletableFuture<Ringmaster>> joining = new ArrayList<>();
      for (int i = 1; i < 16; i++) {
        String id = "node-" + i;
        joining.add(CompletableFuture.supplyAsync(
            () -> cluster.start(cluster.builder(id).virtualNodes(1024).replicas(2).zone("z" + (id.hashCode() & 1))),
            TestThreads.ON_OWN_THREAD)); // a thread each: the joins overlap
      }
      nodes.addAll(TestCluster.joinAll(joining));
      TestCluster.awaitAgreement(nodes, 16, Duration.ofSeconds(30));

      long checksum = nodes.get(0).ring().checksum();
      for (Ringmaster n : nodes) {
        assertEquals(checksum, n.ring().checksum());
        assertEquals(nodes.get(0).members(), n.members());
      }
      for (int k = 0; k < 10_000; k++) {
        String key = "user:" + k;
        List<Member> expected = nodes.get(0).owners(key);
        for (Ringmaster n : nodes) {
          assertEquals(expected, n.owners(key), key);
        }
        assertEquals(1, nodes.stream().filter(n -> n.isPrimary(key)).count(), "exactly one primary for " + key);
        assertEquals(2, nodes.stream().filter(n -> n.isLocal(key)).count(), "exactly two owners for " + key);
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8); // the same key as UTF-8 bytes
        for (Ringmaster n : nodes) {
          assertEquals(expected, n.owners(bytes), key);
          assertEquals(expected.get(0), n.ownerOf(bytes), key);
          assertEquals(n.isPrimary(key), n.isPrimary(bytes), key);
          assertEquals(n.isLocal(key), n.isLocal(bytes), key);
        }
      }
    }
  }

  /** A node's lookups allocate nothing once warm, as the ring's do: they read the current ring, and hash. */
  @Test
  void nodeLookups_afterWarmUp_allocateNothing() {
    try (TestCluster cluster = new TestCluster("lookups-allocate-nothing")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      ThreadMXBean threads =
          (ThreadMXBean) ManagementFactory.getThreadMXBean();
      assertTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
          "this JVM measures no thread's allocation");
      String[] strings = new String[1024];
      byte[][] bytes = new byte[strings.length][];
      for (int i = 0; i < strings.length; i++) {
        strings[i] = "user:" + i + (i % 3 == 0 ? "\u00e9\u4e2d" : "");
        bytes[i] = strings[i].getBytes(StandardCharsets.UTF_8);
      }
      int calls = 100_000;
      int local = 0;
      int primary = 0;
      int agree = 0;
      for (int round = 0; round < 2; round++) { // the first round warms the classes and the thread's array
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int k = 0; k < calls; k++) {
          String s = strings[k & (strings.length - 1)];
          byte[] x = bytes[k & (bytes.length - 1)];
          local += (a.isLocal(s) ? 1 : 0) + (a.isLocal(x) ? 1 : 0);
          primary += (a.isPrimary(s) ? 1 : 0) + (a.isPrimary(x) ? 1 : 0);
          agree += a.ownerOf(s) == a.ownerOf(x) ? 1 : 0;
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        if (round == 1) {
          // A list of owners, or a key's encoded copy, would be tens of bytes a call: megabytes in all.
          assertTrue(allocated < calls / 10, allocated + " bytes for " + calls + " rounds of six lookups");
        }
      }
      assertEquals(2 * calls, agree, "a key and its bytes have one owner");
      // One replica (the kit's builder): a key is local where a is its primary. a owns some keys, not all.
      assertEquals(primary, local);
      assertTrue(local > 0 && local < 4 * calls, "local " + local);
    }
  }

  @Test
  void weightZeroMembersOnly_isLocalAndIsPrimaryAnswerFalse_ownerOfFailsSayingSo() {
    try (TestCluster cluster = new TestCluster("routers-only")) {
      Ringmaster router = cluster.start(cluster.builder("router").weight(0));
      assertTrue(router.isInRing());
      byte[] bytes = "user:1".getBytes(StandardCharsets.UTF_8);
      assertFalse(router.isLocal("user:1"));
      assertFalse(router.isPrimary("user:1"));
      assertFalse(router.isLocal(bytes));
      assertFalse(router.isPrimary(bytes));
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> router.ownerOf("user:1"));
      assertTrue(e.getMessage().contains("no tokens"), e.getMessage());

      Ringmaster store = cluster.start("store"); // now the keys have an owner, and it is not the router
      TestCluster.awaitAgreement(List.of(router, store), 2, Duration.ofSeconds(30));
      for (int k = 0; k < 1_000; k++) {
        String key = "user:" + k;
        assertEquals("store", router.ownerOf(key).id());
        assertTrue(store.isPrimary(key) && store.isLocal(key), key);
        assertFalse(router.isPrimary(key) || router.isLocal(key), key);
      }
    }
  }

  @Test
  void gossip_agreeingMembers_reportNoDivergence() {
    try (TestCluster cluster = new TestCluster("gossip")) {
      List<Ringmaster> nodes = List.of(cluster.start("a"), cluster.start("b"), cluster.start("c"));
      TestCluster.awaitAgreement(nodes, 3, Duration.ofSeconds(30));
      // Counted from here, when all are on the final view: checksums of that view, which are compared
      // (one sent before it, of an earlier view, is counted but not compared), three each at least.
      Map<Ringmaster, Long> before = new HashMap<>();
      nodes.forEach(n -> before.put(n, n.stats().gossipReceived()));
      await().atMost(Duration.ofSeconds(30))
          .until(() -> nodes.stream().allMatch(n -> n.stats().gossipReceived() >= before.get(n) + 3));
      nodes.forEach(n -> assertEquals(0, n.stats().divergences()));
    }
  }

  /**
   * Divergence listeners on a same-thread executor run one after another on the gossip thread.
   * close() stops that thread, interrupting the first one's callback; the second starts without
   * that interrupt, which was meant for the first (docs/operations.md), though the first kept it.
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_whileASameThreadDivergenceListenerRuns_theNextStartsWithoutItsInterrupt() throws Exception {
    try (TestCluster cluster = new TestCluster("divergence-interrupt")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      CountDownLatch inFirst = new CountDownLatch(1);
      CountDownLatch never = new CountDownLatch(1);
      List<Boolean> firstInterrupted = new CopyOnWriteArrayList<>();
      List<Boolean> secondInterrupted = new CopyOnWriteArrayList<>();
      a.addDivergenceListener(d -> {
        inFirst.countDown();
        try {
          never.await(); // a report that takes long to send: cut short by close()
        } catch (InterruptedException e) {
          firstInterrupted.add(true);
          Thread.currentThread().interrupt(); // kept, as it should be
        }
      }, Runnable::run);
      a.addDivergenceListener(d -> secondInterrupted.add(Thread.currentThread().isInterrupted()), Runnable::run);
      b.channel().send(new BytesMessage(a.channel().getAddress(),
          Gossip.encode(a.viewId(), a.channel().getView().getCreator(), a.ring().checksum() ^ 1, "b")));
      assertTrue(inFirst.await(30, TimeUnit.SECONDS), "the divergence reached the first");
      a.close();
      await("the second listener's callback").atMost(Duration.ofSeconds(30))
          .until(() -> !secondInterrupted.isEmpty());
      assertEquals(List.of(true), firstInterrupted, "close() interrupted the first callback");
      assertEquals(List.of(false), secondInterrupted, "the second started with the first one's interrupt");
    }
  }

  /**
   * A divergence listener on a same-thread executor that ignores close()'s interrupt does not hold
   * close() up, and is not left running unseen: close() waits a second for the gossip thread, then
   * a WARNING names it. Without that wait there would be no WARNING.
   */
  @Test
  @Timeout(value = 90, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void close_aSameThreadDivergenceListenerThatIgnoresTheInterrupt_isReportedInAWarning_andCloseReturns()
      throws Exception {
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("still runs a task"));
         TestCluster cluster = new TestCluster("divergence-deaf")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger interrupts = new AtomicInteger();
      a.addDivergenceListener(d -> {
        entered.countDown();
        TestCluster.awaitIgnoringInterrupts(release, interrupts, Duration.ofSeconds(30));
      }, Runnable::run);
      try {
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), a.channel().getView().getCreator(), a.ring().checksum() ^ 1, "b")));
        assertTrue(entered.await(30, TimeUnit.SECONDS), "the divergence reached the listener");
        a.close();
        await("close() interrupted the callback, which went on")
            .atMost(Duration.ofSeconds(30)).until(() -> interrupts.get() == 1);
        assertEquals(List.of("a: the gossip thread still runs a task a second after close() interrupted it;"
            + " close() returns without waiting for it"), log.messages());
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * A divergence listener on a same-thread executor (the gossip thread) that closes the node: close()
   * does not wait for the gossip thread it runs on, nor warns that it still runs, and the node leaves.
   */
  @Test
  void close_fromASameThreadDivergenceListener_doesNotWaitForTheGossipThreadItRunsOn() throws Exception {
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("still runs a task"));
         TestCluster cluster = new TestCluster("divergence-closes")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      CompletableFuture<String> closedOn = new CompletableFuture<>();
      a.addDivergenceListener(d -> {
        a.close();
        closedOn.complete(Thread.currentThread().getName());
      }, Runnable::run);
      b.channel().send(new BytesMessage(a.channel().getAddress(),
          Gossip.encode(a.viewId(), a.channel().getView().getCreator(), a.ring().checksum() ^ 1, "b")));
      assertTrue(closedOn.get(30, TimeUnit.SECONDS).startsWith("ringmaster-gossip-a"), closedOn::toString);
      assertTrue(a.channel().isClosed());
      TestCluster.awaitAgreement(List.of(b), 1, Duration.ofSeconds(30));
      assertEquals(List.of(), log.messages());
    }
  }

  /**
   * A logger that throws at the divergence's ERROR line does not keep the listeners from hearing
   * of it: each divergence is handed on once per view and sender, so a report lost there would
   * be lost for good.
   */
  @Test
  void aDivergence_reachesTheListeners_evenWhenTheLoggerThrowsAtItsLine() throws Exception {
    try (TestCluster cluster = new TestCluster("divergence-logger");
         ThrowingLog log = new ThrowingLog(ThrowingLog.messageContains("ring divergence in view"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      List<RingDivergence> seen = new CopyOnWriteArrayList<>();
      a.addDivergenceListener(seen::add);
      b.channel().send(new BytesMessage(a.channel().getAddress(),
          Gossip.encode(a.viewId(), a.channel().getView().getCreator(), a.ring().checksum() ^ 1, "b")));
      await("the divergence reported").atMost(Duration.ofSeconds(30))
          .until(() -> !seen.isEmpty());
      assertEquals(RingDivergence.Kind.CHECKSUM, seen.get(0).kind());
      // The line comes after the report is handed on, from the thread that received the message.
      await("the logger threw at the divergence's line").atMost(Duration.ofSeconds(30))
          .until(() -> log.thrown() == 1);
    }
  }

  @Test
  void gossip_sameViewOtherChecksum_reportsDivergence() throws Exception {
    try (TestCluster cluster = new TestCluster("divergence")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      List<RingDivergence> seen = new CopyOnWriteArrayList<>();
      a.addDivergenceListener(seen::add);
      List<String> threads = new CopyOnWriteArrayList<>();
      ExecutorService mine =
          Executors.newSingleThreadExecutor(r -> new Thread(r, "app-divergence"));
      try {
        Registration onMine = a.addDivergenceListener(x -> threads.add(Thread.currentThread().getName()), mine);
        // A listener whose executor never runs its callbacks: what queues up for it while it is stuck.
        List<Runnable> neverRun = new CopyOnWriteArrayList<>();
        SerialDelivery<?> stuck = (SerialDelivery<?>) a.addDivergenceListener(x -> { }, neverRun::add);
        // A same-thread executor: the report still must not run on the JGroups thread that got it.
        List<String> direct = new CopyOnWriteArrayList<>();
        a.addDivergenceListener(x -> direct.add(Thread.currentThread().getName()), Runnable::run);
        // First a checksum for a view with a's number but another coordinator (a partition that
        // reached the same number): another view, so no divergence. Then b claims, for the view
        // both have, a ring checksum that differs from a's. b's messages to a arrive in order.
        long forged = a.ring().checksum() ^ 1;
        Address creator = a.channel().getView().getCreator();
        Address otherCreator = UUID.randomUUID();
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), otherCreator, forged ^ 2, "b")));
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), creator, forged, "b")));
        b.channel().send(new BytesMessage(a.channel().getAddress(), // the same, a round later
            Gossip.encode(a.viewId(), creator, forged, "b")));
        // Then b gossips a's own checksum as "z", an id a's ring does not give to b: the two
        // disagree on who is in the ring, though the checksums match.
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), creator, a.ring().checksum(), "z")));
        await().atMost(Duration.ofSeconds(20)).until(() -> seen.size() >= 2);
        assertEquals(2, seen.size(), "only the same view (number and coordinator) is compared, and a divergence"
            + " sent again is not reported again: " + seen);
        RingDivergence d = seen.get(0);
        assertEquals("b", d.peerId());
        assertEquals(forged, d.peerChecksum());
        assertEquals(a.ring().checksum(), d.localChecksum());
        assertEquals(RingDivergence.Kind.CHECKSUM, d.kind());
        assertEquals(new RingDivergence(a.viewId(), "z", a.ring().checksum(), a.ring().checksum(),
            RingDivergence.Kind.HOLDER), seen.get(1));
        assertEquals(3, a.stats().divergences(), "every disagreeing message counts");
        assertEquals(0, a.stats().splitViewDivergences(), "none of a split view");
        await().atMost(Duration.ofSeconds(20)).until(() -> threads.size() >= 2);
        assertEquals(List.of("app-divergence", "app-divergence"), threads, "the listener given an executor runs on it");
        await().atMost(Duration.ofSeconds(20)).until(() -> !direct.isEmpty());
        assertTrue(direct.get(0).startsWith("ringmaster-gossip-a"), "run on the node's gossip thread: " + direct);
        // A listener added now hears the divergence when gossip finds it again; those that heard it
        // in this view do not hear it twice (the same-thread one has run by the time the late one
        // is handed the report: it comes first in the list).
        List<RingDivergence> late = new CopyOnWriteArrayList<>();
        a.addDivergenceListener(late::add);
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), creator, forged, "b")));
        await().atMost(Duration.ofSeconds(20)).until(() -> !late.isEmpty());
        assertEquals(List.of(d), late);
        assertEquals(2, direct.size(), "heard twice by a listener that had heard it: " + direct);
        assertEquals(2, stuck.pending(), "a stuck listener's queue holds each divergence once, not each message");
        onMine.close();
      } finally {
        mine.shutdownNow();
      }
    }
  }

  /**
   * A sender that names a new id in each checksum message (a forger, or a plain JGroups member):
   * every message counts, but at most ten ERROR lines come in 10 s, not one per message.
   */
  @Test
  void gossip_aFloodOfNewDivergences_logsTenErrorLinesAtMost() throws Exception {
    try (TestCluster cluster = new TestCluster("divergence-flood");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("ring divergence"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      Address creator = a.channel().getView().getCreator();
      long before = a.stats().divergences();
      for (int i = 0; i < 200; i++) {
        b.channel().send(new BytesMessage(a.channel().getAddress(),
            Gossip.encode(a.viewId(), creator, a.ring().checksum(), "z" + i)));
      }
      await().atMost(Duration.ofSeconds(20))
          .until(() -> a.stats().divergences() >= before + 200);
      long errors = log.records().stream().filter(r -> r.getLevel() == Level.SEVERE).count();
      assertTrue(errors >= 1 && errors <= DropLog.MAX_LINES, errors + " ERROR lines");
    }
  }

  /**
   * While the gossip thread is held (a divergence listener on a same-thread executor, say), at most
   * {@value DivergenceReports#MAX_QUEUED} reports wait for it and the rest are dropped; once it
   * is free, each report it passed on frees its place, so reports after that reach the listeners.
   */
  @Test
  void gossip_reportsWaitingForTheGossipThread_areBounded_andThePlacesFreeAgain() throws Exception {
    try (TestCluster cluster = new TestCluster("divergence-queue")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      Address creator = a.channel().getView().getCreator();
      CountDownLatch held = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      List<String> heard = new CopyOnWriteArrayList<>();
      a.addDivergenceListener(d -> {
        heard.add(d.peerId());
        if (d.peerId().equals("first")) {
          held.countDown();
          try {
            release.await(30, TimeUnit.SECONDS); // bounded: a failed test lets it go too
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }, Runnable::run); // on the gossip thread, which it holds
      Consumer<String> forge = id -> {
        try {
          b.channel().send(new BytesMessage(a.channel().getAddress(),
              Gossip.encode(a.viewId(), creator, a.ring().checksum(), id)));
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      };
      long before = a.stats().divergences();
      forge.accept("first");
      assertTrue(held.await(30, TimeUnit.SECONDS), "the gossip thread held");
      for (int i = 0; i < 200; i++) {
        forge.accept("z" + i);
      }
      await().atMost(Duration.ofSeconds(20))
          .until(() -> a.stats().divergences() >= before + 201);
      release.countDown();
      await("the reports that waited").atMost(Duration.ofSeconds(20))
          .until(() -> heard.size() >= 1 + DivergenceReports.MAX_QUEUED);
      forge.accept("later");
      await("a report after the queue emptied").atMost(Duration.ofSeconds(20))
          .until(() -> heard.contains("later"));
      assertEquals(1 + DivergenceReports.MAX_QUEUED + 1, heard.size(), heard::toString);
      assertEquals(List.of("first", "z0", "z" + (DivergenceReports.MAX_QUEUED - 1)), List.of(heard.get(0),
          heard.get(1), heard.get(DivergenceReports.MAX_QUEUED)), "the first ones waited; the rest were dropped");
    }
  }

  /**
   * A gossip round that fails (here an Error from the stack below, once) is logged, and the rounds
   * after it go on: thrown out of the scheduled task, it would cancel gossip for good, and with it
   * the divergence checks, the split-view rejoins and the retries of a view that failed.
   */
  @Test
  void gossip_aRoundThatFails_isLogged_andTheRoundsGoOn() throws Exception {
    try (TestCluster cluster = new TestCluster("gossip-fails");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("gossip round failed"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      FailsFirst failing = new FailsFirst("ringmaster-gossip-a");
      a.channel().getProtocolStack().insertProtocol(failing, ProtocolStack.Position.ABOVE,
          FRAG2.class); // the top one
      await("a gossip round failed").atMost(Duration.ofSeconds(20))
          .until(() -> failing.thrown.get() == 1 && !log.records().isEmpty());
      assertEquals(Level.SEVERE, log.records().get(0).getLevel(), "an Error is logged as ERROR");
      long sent = a.stats().gossipSent();
      await("the rounds after it").atMost(Duration.ofSeconds(20))
          .until(() -> a.stats().gossipSent() >= sent + 2);
    }
  }

  /**
   * A view thread held by a same-thread listener, the channel's view ahead of the ring for 10 s, is
   * said once at WARNING, naming both views, and its end at INFO: the node routed by an older ring
   * than its peers' and logged nothing (gossip compares equal view ids only).
   */
  @Test
  void aHeldViewThread_isSaidOnceAtWarning_andItsEndAtInfo() throws Exception {
    try (TestCluster cluster = new TestCluster("held-view-thread");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("view thread is held")
             || r.getMessage().contains("has caught up"))) {
      Ringmaster a = cluster.start("a");
      CountDownLatch release = new CountDownLatch(1);
      a.addOwnershipListener(change -> {
        if (change.reason() == OwnershipChange.Reason.VIEW) {
          try {
            release.await(60, TimeUnit.SECONDS); // a long hand-off, on the view thread
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }, Runnable::run);
      try {
        Ringmaster b = cluster.start("b"); // a publishes its ring, then its view thread runs the listener
        Ringmaster c = cluster.start("c"); // this view waits behind it
        await("the WARNING").atMost(Duration.ofSeconds(40))
            .until(() -> !log.records().isEmpty());
        LogRecord held = log.records().get(0);
        assertEquals(Level.WARNING, held.getLevel());
        assertEquals(c.channel().getView().getViewId(), held.getParameters()[1], "the view JGroups installed");
        assertEquals(Long.toString(a.viewId()), held.getParameters()[3], "the view of the ring a routes by: " + a.stats()
            + ", b " + b.stats() + ", c " + c.stats());
        long rounds = a.stats().gossipSent();
        await("three more rounds, the view thread still held").atMost(Duration.ofSeconds(30))
            .until(() -> a.stats().gossipSent() >= rounds + 3);
        assertEquals(1, log.records().size(), "said once, not at every round");
        release.countDown();
        TestCluster.awaitAgreement(List.of(a, b, c), 3, Duration.ofSeconds(30));
        await("the INFO").atMost(Duration.ofSeconds(30)).until(() -> log.records().size() == 2);
        assertEquals(Level.INFO, log.records().get(1).getLevel());
      } finally {
        release.countDown();
      }
    }
  }

  /**
   * View ids in log lines read as JGroups prints them and as stats() gives them, whatever the
   * locale: passed as numbers, the formatter grouped their digits ("view 1,235"), and an operator
   * searching the log for the view id of an alert found nothing.
   */
  @Test
  void logLines_nameViewIdsAsTheyAre_notGroupedForTheLocale() throws Exception {
    try (TestCluster cluster = new TestCluster("view-id-lines");
         NodeLog log = new NodeLog(r -> r.getMessage().contains(" joined "))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      View agreed = a.channel().getView();
      View far = new View(new ViewId(agreed.getCreator(), 1234), agreed.getMembers());
      TestCluster.gms(a).installView(far);
      TestCluster.gms(b).installView(far);
      Ringmaster c = cluster.start("c");
      TestCluster.awaitAgreement(List.of(a, b, c), 3, Duration.ofSeconds(30));
      assertTrue(c.viewId() > 1234, "view " + c.viewId());
      LogRecord joined = log.records().stream()
          .filter(r -> "c".equals(r.getParameters()[0])).findFirst().orElseThrow();
      String line = new MessageFormat(joined.getMessage(), Locale.US).format(joined.getParameters());
      assertTrue(line.contains("view " + c.viewId() + ","), line);
    }
  }

  /**
   * A view whose ring could not be built on a running node (an Error here, as when the heap has no
   * room for it) is shown in stats().failedViewId() and tried again by the gossip rounds, first at
   * once, then after 1 s: the node reaches its peers' ring with no later view to help it.
   */
  @Test
  void aViewThatFailedToBuild_isShownInTheStats_andTriedAgainByTheGossip() throws Exception {
    try (TestCluster cluster = new TestCluster("failed-view")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      AtomicInteger builds = new AtomicInteger();
      AtomicReference<RingmasterStats> duringRetry = new AtomicReference<>();
      a.beforeEachBuild(view -> {
        if (view.size() == 3) {
          int build = builds.incrementAndGet();
          if (build == 2) {
            duringRetry.set(a.stats()); // read while the failure is recorded, whatever the machine's pace
          }
          if (build <= 2) { // the view, then its first retry
            throw new OutOfMemoryError("no room for the ring (a test)");
          }
        }
      });
      Ringmaster c = cluster.start("c");
      await("the first retry").atMost(Duration.ofSeconds(30)).until(() -> duringRetry.get() != null);
      assertEquals(c.viewId(), duringRetry.get().failedViewId().orElse(-1), "the view a could not install, in its stats");
      TestCluster.awaitAgreement(List.of(a, b, c), 3, Duration.ofSeconds(30));
      await("the failed view cleared").atMost(Duration.ofSeconds(30))
          .until(() -> a.stats().failedViewId().isEmpty());
      assertEquals(3, builds.get(), "the view, its retry at the next round, then one after 1 s");
    }
  }

  /**
   * Sends that throw, as a stack that refuses them would (an exception, not an Error), are logged at
   * WARNING when the rounds start failing, then at DEBUG until a round succeeds, and the rounds go
   * on. A send's failure was once caught inside the round and logged at DEBUG alone: a gossip that
   * never reached a peer went unseen by operators told to alert on that WARNING.
   */
  @Test
  void gossip_sendsThatThrow_areLoggedAtWarningOnce_thenAtDebug_andTheRoundsGoOn() throws Exception {
    try (TestCluster cluster = new TestCluster("gossip-send-fails");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("gossip round failed"))) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      FailsFirst failing = new FailsFirst("ringmaster-gossip-a", 3,
          () -> new IllegalStateException("a transport that refuses to send (a test)"));
      a.channel().getProtocolStack().insertProtocol(failing, ProtocolStack.Position.ABOVE,
          FRAG2.class); // the top one
      long sent = a.stats().gossipSent();
      await("three failed rounds, then two that send").atMost(Duration.ofSeconds(30))
          .until(() -> failing.thrown.get() == 3 && a.stats().gossipSent() >= sent + 2);
      assertEquals(List.of(Level.WARNING, Level.FINE,
          Level.FINE), log.levels(), "the first failure at WARNING, the next two at DEBUG");
      assertTrue(log.records().get(0).getThrown().getMessage().contains("a transport that refuses to send"),
          "the WARNING carries the send's failure: " + log.records().get(0).getThrown());
    }
  }

  /**
   * Throws on the first {@code times} messages sent down by a thread whose name starts with the
   * given prefix: an Error, unless given what to throw.
   */
  static final class FailsFirst extends Protocol {
    private final String threadPrefix;
    private final int times;
    private final Supplier<RuntimeException> failure;
    final AtomicInteger thrown = new AtomicInteger();

    FailsFirst(String threadPrefix) {
      this(threadPrefix, 1, null);
    }

    FailsFirst(String threadPrefix, int times, Supplier<RuntimeException> failure) {
      this.threadPrefix = threadPrefix;
      this.times = times;
      this.failure = failure;
    }

    @Override
    public Object down(Message msg) {
      if (Thread.currentThread().getName().startsWith(threadPrefix)
          && thrown.getAndUpdate(n -> n < times ? n + 1 : n) < times) {
        if (failure != null) {
          throw failure.get();
        }
        throw new AssertionError("a stack that fails (a test)");
      }
      return down_prot.down(msg);
    }
  }

  @Test
  void ringJson_listsMembersWithSharesAndTheChecksum() throws Exception {
    try (TestCluster cluster = new TestCluster("json")) {
      Ringmaster a = cluster.start(cluster.builder("a").endpoint("http://127.0.0.1:9001").weight(2).zone("rack-1"));
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(30));
      var json = new ObjectMapper().readTree(b.ringJson());
      assertEquals(Long.toHexString(b.ring().checksum()), json.get("checksum").asText());
      assertEquals(b.viewId(), json.get("viewId").asLong());
      assertEquals("b", json.get("local").asText());
      assertEquals(b.ring().virtualNodes(), json.get("virtualNodes").asInt());
      assertEquals(b.ring().tokenCount(), json.get("tokens").asInt());
      assertEquals(2, json.get("members").size());
      // By id, each with its weight and zone ("" for none), as the javadoc lists them.
      assertEquals(List.of("a", "b"), List.of(json.get("members").get(0).get("id").asText(),
          json.get("members").get(1).get("id").asText()));
      assertEquals(2.0, json.get("members").get(0).get("weight").asDouble());
      assertEquals(1.0, json.get("members").get(1).get("weight").asDouble());
      assertEquals("rack-1", json.get("members").get(0).get("zone").asText());
      assertEquals("", json.get("members").get(1).get("zone").asText());
      assertEquals(b.ring().share("a"), json.get("members").get(0).get("share").asDouble(), 1e-12);
      assertEquals("http://127.0.0.1:9001", json.get("members").get(0).get("endpoint").asText());
      double shares = json.get("members").get(0).get("share").asDouble() + json.get("members").get(1).get("share").asDouble();
      assertEquals(1.0, shares, 1e-9);
      assertEquals("http://127.0.0.1:9001", b.endpointOf("a").orElseThrow());
      assertEquals(Optional.empty(), a.endpointOf("b"), "b announced no endpoint");
      assertEquals(Optional.empty(), a.endpointOf("nobody"), "not a member");
      assertEquals("Ringmaster[a in " + cluster.name + ", view " + a.viewId() + ", " + a.ring() + "]", a.toString());
    }
  }

  /**
   * The node's threads are daemon threads (docs/operations.md): a JVM whose application forgot
   * close() still exits, without the graceful leave.
   */
  @Test
  void theNodesThreads_areDaemonThreads() {
    try (TestCluster cluster = new TestCluster("daemons")) {
      Ringmaster a = cluster.start("a");
      a.addOwnershipListener(change -> { }); // a listener-pool thread runs its first callback
      await().atMost(Duration.ofSeconds(20)).until(() -> TestCluster.nodeThreads("a").stream()
          .anyMatch(name -> name.startsWith("ringmaster-listener-")));
      List<Thread> threads = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> TestCluster.nodeThreads("a").contains(t.getName())).toList();
      assertTrue(threads.size() >= 3, threads::toString); // view, gossip and listener threads at least
      assertEquals(List.of(), threads.stream().filter(t -> !t.isDaemon()).map(Thread::getName).toList());
    }
  }
}
