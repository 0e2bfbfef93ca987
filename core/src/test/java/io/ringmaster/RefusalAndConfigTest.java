package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.Collectors;
import org.jgroups.JChannel;
import org.jgroups.protocols.FD_SOCK2;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.IpAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

class RefusalAndConfigTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @Test
  void start_ringParametersDiffer_failsNamingEachParameter_andMembersNeverAdmitIt() {
    try (TestCluster cluster = new TestCluster("params")) {
      Ringmaster a = cluster.start(cluster.builder("a").virtualNodes(128).replicas(2));
      Ringmaster b = cluster.start(cluster.builder("b").virtualNodes(128).replicas(2));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      OwnershipRecorder recorder = new OwnershipRecorder(1);
      a.addMembershipListener(recorder);
      long checksum = a.ring().checksum();
      Instant changedBefore = a.stats().lastChange().orElseThrow();

      RingmasterException e = assertThrows(RingmasterException.class,
          () -> cluster.start(cluster.builder("c").virtualNodes(64).replicas(3)));
      assertEquals(RingmasterException.Reason.REFUSED, e.reason(), e.getMessage());
      assertTrue(e.getMessage().contains("virtualNodes: 64 on c, 128 on a"), e.getMessage());
      assertTrue(e.getMessage().contains("replicas: 3 on c, 2 on a"), e.getMessage());
      // c fails on its own first view; a refuses c on its copy of that view, maybe a moment
      // later, and tells its membership listeners: no member joined, c was refused, and why.
      // (Its first call, on registering, was the members then: a and b, joined from nothing.)
      await().atMost(WAIT).until(() -> recorder.memberships().size() == 2);
      assertEquals(-1, recorder.memberships().get(0).previousViewId());
      assertTrue(a.stats().refusedMembers() >= 1);
      assertEquals(checksum, a.ring().checksum());
      // c's view reached a and changed nothing of its ring: a view seen, no ring built.
      RingmasterStats stats = a.stats();
      assertEquals(2, stats.members(), stats::toString);
      assertTrue(stats.ringBuilds() >= 2 && stats.viewsSeen() > stats.ringBuilds(), stats::toString);
      assertTrue(stats.lastChange().orElseThrow().isAfter(changedBefore), "the refusal was a membership change: "
          + stats + ", the change before at " + changedBefore);
      assertTrue(stats.lastRingBuild().compareTo(Duration.ZERO) > 0 && stats.lastRingBuild().compareTo(WAIT) < 0,
          "a view's ring, of two members, in its unit: " + stats);
      MembershipChange change = recorder.memberships().get(1);
      assertEquals(List.of(), change.joined(), "the refused node never entered a's ring");
      assertEquals(1, change.refused().size(), change.toString());
      MembershipChange.Refusal refusal = change.refused().get(0);
      assertEquals("c", refusal.nodeId());
      assertFalse(refusal.local());
      assertTrue(refusal.reason().contains("virtualNodes: 64 on c, 128 on a"), refusal.reason());
    }
  }

  /**
   * A logger that throws when told of a refusal (a filter's bug, a backend's) stops nothing: the
   * refused node's start() fails with the refusal's reason, and the member that refused it tells
   * its listeners of the refusal and of every change after it.
   */
  @Test
  void aLoggerThatThrowsOnARefusal_failsTheRefusedStartWithTheReason_andSilencesNoListener() {
    try (TestCluster cluster = new TestCluster("throwing-logger")) {
      Ringmaster a = cluster.start("a");
      OwnershipRecorder recorder = new OwnershipRecorder(2);
      a.addMembershipListener(recorder);
      a.addOwnershipListener(recorder);
      try (ThrowingLog log = new ThrowingLog(record -> record.getParameters() != null
          && Arrays.stream(record.getParameters()).anyMatch(p -> String.valueOf(p).contains("on c-64")))) {
        RingmasterException e = assertThrows(RingmasterException.class, () -> cluster.start(
            cluster.builder("c-64").virtualNodes(64).startTimeout(Duration.ofSeconds(60))));
        assertTrue(e.getMessage().contains("virtualNodes: 64 on c-64, 128 on a"), e.getMessage());
        await().atMost(WAIT).until(() -> log.thrown() >= 2); // c-64 on its first view, and a on its copy
      }
      await().atMost(WAIT).until(() -> recorder.memberships().stream()
          .anyMatch(m -> m.refused().stream().anyMatch(r -> r.nodeId().equals("c-64"))));
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      await().atMost(WAIT).until(() -> recorder.memberships().stream()
          .anyMatch(m -> m.joined().stream().anyMatch(member -> member.id().equals("b"))));
      await().atMost(WAIT).until(() -> a.stats().pendingCallbacks() == 0);
      assertEquals(2, recorder.changes().size(), "a's own ring, then b's join: " + recorder.changes());
      assertEquals(List.of(), recorder.violations());
    }
  }

  /**
   * A start that fails once its first ring is installed (here its INFO line throws) leaves as
   * close() does: its listeners, told of the first ring's gains, are told the LEAVING change, and
   * the member already there sees it go. A listener that calls close() on that change is not held
   * up by the failing start (which waits for it).
   */
  @Test
  void startFailingAfterItsFirstRing_leavesGracefully_itsListenersHearTheLeave() {
    try (TestCluster cluster = new TestCluster("fails-after-ring")) {
      Ringmaster a = cluster.start("a");
      OwnershipRecorder recorder = new OwnershipRecorder(3);
      AtomicBoolean closedByListener = new AtomicBoolean();
      RingmasterException e;
      AtomicReference<Ringmaster> node = new AtomicReference<>();
      try (ThrowingLog joinedLine = new ThrowingLog(record -> String.valueOf(record.getMessage()).contains(" joined ")
          && record.getParameters() != null && "b".equals(record.getParameters()[0]));
           NodeLog warnings = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue()
          && r.getParameters() != null && "b".equals(r.getParameters()[0]))) {
        e = assertThrows(RingmasterException.class, () -> cluster.start(cluster.builder("b"), b -> {
          node.set(b);
          b.addOwnershipListener(recorder);
          b.addMembershipListener(recorder);
          b.addOwnershipListener(change -> {
            if (change.reason() == OwnershipChange.Reason.LEAVING) {
              b.close();
              closedByListener.set(true);
            }
          });
        }));
        assertEquals(List.of(), warnings.records().stream().map(LogRecord::getMessage).toList(),
            "the leave waited for no listener in vain");
        assertEquals(1, joinedLine.thrown());
      }
      assertTrue(e.getMessage().startsWith("node b joined cluster \"" + cluster.name
          + "\" but failed to finish its start, so it left again: java.lang.IllegalStateException: a logging"), e.getMessage());
      assertEquals(RingmasterException.Reason.LEFT_AFTER_JOIN, e.reason());
      List<OwnershipChange.Reason> reasons = recorder.changes().stream().map(OwnershipChange::reason).toList();
      assertEquals(List.of(OwnershipChange.Reason.VIEW, OwnershipChange.Reason.LEAVING), reasons);
      assertFalse(recorder.changes().get(0).gained().isEmpty(), "b owned part of the ring");
      assertTrue(recorder.ownsNothing(), "the fold ends owning nothing");
      assertEquals(List.of(), recorder.violations());
      assertTrue(closedByListener.get(), "the listener's close() returned");
      // The application's own close() afterwards (a try-with-resources around the failed start)
      // returns too: the failed start's leave counts as the first close. (A bound, not a measure:
      // it returns at once, or never.)
      assertTimeoutPreemptively(WAIT, node.get()::close);
      await().atMost(WAIT).until(() -> a.members().size() == 1);
    }
  }

  @Test
  void start_applicationVersionDiffers_failsNamingBothValues_andEqualVersionsJoin() {
    try (TestCluster cluster = new TestCluster("app-version")) {
      Ringmaster a = cluster.start(cluster.builder("a").applicationVersion("orders/2"));
      Ringmaster b = cluster.start(cluster.builder("b").applicationVersion("orders/2"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      assertEquals("orders/2", a.config().applicationVersion());
      OwnershipRecorder recorder = new OwnershipRecorder(1);
      a.addMembershipListener(recorder);
      long checksum = a.ring().checksum();

      for (String other : List.of("orders/3", "")) { // another version, and none at all
        RingmasterException e = assertThrows(RingmasterException.class,
            () -> cluster.start(cluster.builder("c-" + other.length()).applicationVersion(other)));
        assertTrue(e.getMessage().contains("applicationVersion: \"" + other + "\" on c-" + other.length()
            + ", \"orders/2\" on a"), e.getMessage());
      }
      // a refuses each on its copy of the view, maybe a moment after the newcomer failed.
      await().atMost(WAIT).until(() -> recorder.memberships().stream()
          .flatMap(m -> m.refused().stream()).map(MembershipChange.Refusal::nodeId).distinct().count() == 2);
      assertTrue(recorder.memberships().stream().allMatch(m -> m.joined().isEmpty() || m.previousViewId() < 0),
          "neither joined a's ring");
      assertEquals(checksum, a.ring().checksum());
    }
  }

  /**
   * A stack's own membership policy is replaced, and said at WARNING naming the stack and the class
   * (every member must choose coordinators alike); JGroups' default policy is replaced silently.
   */
  @Test
  void start_stackWithItsOwnMembershipPolicy_getsRingmastersPolicy_andFullViews() {
    try (TestCluster cluster = new TestCluster("own-policy");
         NodeLog log = new NodeLog(r -> r.getMessage().contains("membership_change_policy"))) {
      for (String stack : List.of(TestCluster.STACK, "own-policy.xml")) {
        Ringmaster node = cluster.start(cluster.builder("node-" + stack).clusterName(cluster.name + stack)
            .jgroupsConfig(stack));
        GMS gms = node.channel().getProtocolStack()
            .findProtocol(GMS.class);
        assertTrue(gms.getMembershipChangePolicy() instanceof RingmasterMembershipPolicy,
            stack + ": " + gms.getMembershipChangePolicy());
        assertFalse(gms.useDeltaViews(), stack + ": every view is sent in full");
      }
      assertEquals(List.of(Level.WARNING), log.levels(), "said for own-policy.xml alone");
      assertEquals(List.of("own-policy.xml", "io.ringmaster.OwnPolicy"),
          List.of(log.records().get(0).getParameters()));
    }
  }

  @Test
  void start_aStackWithAProtocolThatMakesTheAddress_failsBeforeJoiningNamingTheStack() {
    try (TestCluster cluster = new TestCluster("makes-addresses")) {
      Ringmaster b = cluster.start("b");
      // The channel's view, which JGroups installs at b, the coordinator, before it answers a
      // joiner: a join and leave of a that b's view thread has not caught up with shows there.
      long viewOfB = b.channel().getView().getViewId().getId();
      Ringmaster.Builder builder = cluster.builder("a").jgroupsConfig("makes-addresses.xml")
          .startTimeout(Duration.ofSeconds(20));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> cluster.start(builder));
      assertTrue(e.getMessage().startsWith("jgroupsConfig makes-addresses.xml: a protocol of the stack makes the"
          + " node's address"), e.getMessage());
      assertEquals(viewOfB, b.channel().getView().getViewId().getId(), "a never joined b's cluster");
    }
  }

  @Test
  void start_nodeIdAlreadyHeld_failsNamingTheIdAndHolder_andOneOwnerPerRange() {
    try (TestCluster cluster = new TestCluster("duplicate")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      List<Ringmaster> twin = new ArrayList<>();
      RingmasterException e = assertThrows(RingmasterException.class, () -> cluster.start(cluster.builder("a"), n -> {
        assertFalse(n.isInRing(), "not started");
        twin.add(n);
      }));
      assertTrue(e.getMessage().contains("node id \"a\" is already held by member"), e.getMessage());
      assertEquals(RingmasterException.Reason.ID_HELD, e.reason(), "a reason to try again once the holder is gone");
      // b builds its rings on its own thread: wait until it has handled the view with the twin.
      await("b refused the twin").atMost(WAIT).until(() -> b.stats().refusedMembers() >= 1);
      assertEquals(a.channel().getAddress(), b.addressOf("a").orElseThrow(), "the holder keeps the id");
      assertTrue(a.isInRing() && b.isInRing());
      assertFalse(twin.get(0).isInRing(), "refused");
      assertTrue(twin.get(0).channel().isClosed(), "the failed start closed the twin's channel");
      assertEquals(List.of("a", "b"), b.members().stream().map(Member::id).sorted().toList());
      assertEquals(a.ring().checksum(), b.ring().checksum(), "one ring, so one owner per range");
    }
  }

  /**
   * A first ring that takes longer than startTimeout (its build held here) fails the start with
   * START_TIMEOUT, a reason to try again later; the ring that comes after it is not published.
   */
  @Test
  void start_noRingWithinStartTimeout_failsWithStartTimeout_andPublishesNothing() throws Exception {
    try (TestCluster cluster = new TestCluster("start-timeout")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.builder("slow-b").startTimeout(Duration.ofMillis(500)).build();
      List<Object> heard = everythingHeardBy(b);
      CountDownLatch built = new CountDownLatch(1);
      b.beforeEachBuild(view -> {
        try {
          built.await(WAIT.toMillis(), TimeUnit.MILLISECONDS); // bounded: a failed test lets it go too
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      try {
        RingmasterException e = assertThrows(RingmasterException.class, b::start);
        assertEquals(RingmasterException.Reason.START_TIMEOUT, e.reason(), e.getMessage());
        assertEquals("node slow-b got no ring within startTimeout PT0.5S", e.getMessage());
        assertEquals(-1, b.viewId(), "a ring published after the start failed");
        assertTrue(b.ring().isEmpty(), "a ring published after the start failed");
        await("a's ring without b").atMost(WAIT).until(() -> a.members().stream().map(Member::id).toList()
            .equals(List.of("a")));
        assertEquals(List.of(), heard, "its listeners heard something");
        // Closed by the failed start itself, before anything here closes it.
        assertTrue(b.channel().isClosed(), "the failed start closed the channel");
        await("the failed start stopped the node's threads").atMost(WAIT)
            .until(() -> TestCluster.nodeThreads("slow-b").isEmpty());
      } finally {
        built.countDown();
        b.close();
      }
    }
  }

  @Test
  void start_onAnInterruptedThread_failsSayingSo_withoutJoining_andKeepsTheFlag() throws Exception {
    try (TestCluster cluster = new TestCluster("interrupted-start")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.builder("interrupted-b").build();
      List<Object> heard = everythingHeardBy(b);
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      AtomicBoolean flagAfter = new AtomicBoolean();
      Thread starter = new Thread(() -> {
        Thread.currentThread().interrupt();
        try {
          b.start();
        } catch (Throwable e) {
          thrown.set(e);
        }
        flagAfter.set(Thread.currentThread().isInterrupted());
      }, "interrupted-starter");
      try {
        starter.start();
        starter.join(WAIT.toMillis());
        assertFalse(starter.isAlive(), "start() returned");

        RingmasterException e = assertInstanceOf(RingmasterException.class, thrown.get());
        assertEquals("interrupted while starting node interrupted-b", e.getMessage());
        assertEquals(RingmasterException.Reason.INTERRUPTED, e.reason());
        assertTrue(flagAfter.get(), "the caller's interrupt is kept");
        IllegalStateException noChannel = assertThrows(IllegalStateException.class, b::channel);
        assertTrue(noChannel.getMessage().endsWith("is not started"), "it never connected: " + noChannel.getMessage());
        assertEquals(List.of(), heard, "its listeners heard something");
        IllegalStateException again = assertThrows(IllegalStateException.class, b::start);
        assertTrue(again.getMessage().startsWith("node interrupted-b is closed"), again.getMessage());
        assertEquals(List.of("a"), a.members().stream().map(Member::id).toList());
      } finally {
        b.close();
      }
    }
  }

  @Test
  void close_whileStartWaitsToJoin_startGivesUpOnceItsConnectReturns_andNoListenerHearsAnything() throws Exception {
    try (TestCluster cluster = new TestCluster("close-during-start")) {
      Ringmaster a = cluster.start("a");
      TestCluster.discard(a).discardAll(true); // b's join requests go unanswered until this is undone
      Ringmaster b = cluster.builder("closing-b").startTimeout(WAIT).build();
      List<Object> heard = everythingHeardBy(b);
      AtomicReference<Throwable> startFailure = new AtomicReference<>();
      Thread starter = new Thread(() -> {
        try {
          b.start();
        } catch (Throwable e) {
          startFailure.set(e);
        }
      }, "starter");
      try {
        starter.start();
        await("b trying to join").atMost(WAIT).until(() -> {
          try {
            return b.channel().isConnecting();
          } catch (IllegalStateException notYet) {
            return false;
          }
        });
        Thread closer = new Thread(b::close, "closer");
        closer.start();
        // close() has marked the start as failed and waits for start() to let go of the node.
        await("close() waiting for start()").atMost(WAIT).until(() -> TestCluster.blockedIn(closer, "close"));
        TestCluster.discard(a).discardAll(false); // b's next join request is answered: its connect returns

        starter.join(WAIT.toMillis());
        closer.join(WAIT.toMillis());
        assertFalse(starter.isAlive() || closer.isAlive(), "start() and close() returned");
        RingmasterException e = assertInstanceOf(RingmasterException.class, startFailure.get());
        assertTrue(e.getMessage().endsWith(": node closing-b was closed while it started"), e.getMessage());
        assertEquals(RingmasterException.Reason.CLOSED, e.reason());
        assertFalse(b.isInRing());
        assertTrue(b.channel().isClosed());
        assertEquals(List.of(), heard, "b's listeners heard something");
        await("a's ring without b").atMost(WAIT)
            .until(() -> a.members().stream().map(Member::id).toList().equals(List.of("a")));
      } finally {
        TestCluster.discard(a).discardAll(false);
        b.close(); // returns once the close() above has, if it ran
      }
    }
  }

  /**
   * The right secret joins; a wrong one fails the start as REFUSED, "authentication failed". Also
   * for a joiner whose GMS waits only a second for each of its join attempts, and makes only one:
   * the refusal, held in clear for a while (a forged one must not beat a sealed answer), is held for
   * less than that wait, or it would come after the attempt gave up and the joiner would start a
   * cluster of its own.
   */
  @Test
  void secureStack_rightSecretJoins_wrongSecretIsRefused(@TempDir Path dir) throws IOException {
    try (TestCluster cluster = new TestCluster("secure")) {
      String stack = "ringmaster/jgroups/secure-tcp.xml";
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(stack).bindPort(7950).initialHosts("127.0.0.1[7950]")
          .secret("s3cret-one"));
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(stack).bindPort(7951).initialHosts("127.0.0.1[7950]")
          .secret("s3cret-one"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);

      RingmasterException wrong = assertThrows(RingmasterException.class, () -> cluster.start(
          cluster.builder("c").jgroupsConfig(stack).bindPort(7952).initialHosts("127.0.0.1[7950]").secret("guess")));
      assertTrue(wrong.getMessage().toLowerCase().contains("authentication failed"), wrong.getMessage());
      assertTrue(wrong.getMessage().startsWith("node c cannot join cluster"), wrong.getMessage());
      assertEquals(RingmasterException.Reason.REFUSED, wrong.reason(), "the same secret would be refused again");
      assertEquals(2, a.members().size());

      String secure = new String(getClass().getClassLoader().getResourceAsStream(stack).readAllBytes(),
          StandardCharsets.UTF_8);
      assertTrue(secure.contains("join_timeout=\"2s\""), secure);
      Path oneShort = Files.writeString(dir.resolve("one-short-join.xml"),
          secure.replace("join_timeout=\"2s\"", "join_timeout=\"1s\" max_join_attempts=\"1\""));
      RingmasterException shortWait = assertThrows(RingmasterException.class, () -> cluster.start(
          cluster.builder("d").jgroupsConfig(oneShort.toString()).bindPort(7953).initialHosts("127.0.0.1[7950]")
              .secret("guess")));
      assertEquals(RingmasterException.Reason.REFUSED, shortWait.reason(), shortWait.getMessage());
      assertEquals(2, a.members().size());
    }
  }

  /**
   * The bindAddress setting replaces the stack's address for the failure detector's socket too,
   * before JGroups checks it: a ringmaster.bind_addr set elsewhere to an address no interface has
   * does not fail a node whose setting is good.
   */
  @Test
  void bindAddress_replacesTheStacksAddress_forTheFailureDetectorToo() {
    withProperty("ringmaster.bind_addr", "192.0.2.1", () -> {
      try (TestCluster cluster = new TestCluster("bind-address-fd")) {
        Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml")
            .bindAddress("127.0.0.1").bindPort(7867).initialHosts("127.0.0.1[7867]"));
        FD_SOCK2 fd = a.channel().getProtocolStack()
            .findProtocol(FD_SOCK2.class);
        assertEquals("127.0.0.1", fd.getBindAddress().getHostAddress());
      }
    });
  }

  /**
   * The initialHosts setting probes the port range after each port, as the same string in the
   * stack file does: b lists only 7860, where nobody is, and joins a at 7861 at once, instead of
   * starting alone and merging seconds later.
   */
  @Test
  void initialHosts_probesThePortRangeAfterEachPort_asInTheStackFile(@TempDir Path dir) throws IOException {
    try (TestCluster cluster = new TestCluster("initial-hosts-range")) {
      String stack = "ringmaster/jgroups/localhost-tcp.xml";
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(stack).bindPort(7861)
          .initialHosts("127.0.0.1[7861]"));
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(patientJoiner(dir)).bindPort(7862)
          .initialHosts("127.0.0.1[7860]"));
      assertEquals(List.of("a", "b"), b.members().stream().map(Member::id).sorted().toList(),
          "b's first ring, from its join");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  /**
   * The shipped localhost stack, its discovery waiting 5 s instead of 1 s for an answer: a joiner
   * that hears nobody in time (a loaded machine) starts alone and merges seconds later, which the
   * tests that check a first ring from a join must not mistake for a failure of what they test.
   * The first member still starts with the shipped stack, and a joiner that finds it stops
   * waiting at its answer.
   */
  private String patientJoiner(Path dir) throws IOException {
    String shipped;
    try (var in = getClass().getClassLoader().getResourceAsStream("ringmaster/jgroups/localhost-tcp.xml")) {
      shipped = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String setting = "join_timeout=\"${ringmaster.join_timeout:1s}\"";
    assertTrue(shipped.contains(setting), shipped);
    return Files.writeString(dir.resolve("patient-joiner.xml"), shipped.replace(setting, "join_timeout=\"5s\"")).toString();
  }

  /**
   * A host name in initialHosts that does not resolve yet (a peer not yet in DNS) neither fails
   * the build nor drops the name: b starts and joins a through the host that does resolve, and its
   * TCPPING, which got the list as if from the stack file, keeps the name to resolve again at each
   * discovery. Entries of the wrong form still fail at once, naming the entry.
   */
  @Test
  void initialHosts_aHostNotResolvableYet_isKeptForLaterDiscoveries_andTheNodeStarts(@TempDir Path dir)
      throws IOException {
    String notYet = "peer-not-in-dns-yet.invalid";
    try (TestCluster cluster = new TestCluster("initial-hosts-dns")) {
      String stack = "ringmaster/jgroups/localhost-tcp.xml";
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(stack).bindPort(7864)
          .initialHosts("127.0.0.1[7864]"));
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(patientJoiner(dir)).bindPort(7865)
          .initialHosts(notYet + "[7864],127.0.0.1[7864]"));
      assertEquals(List.of("a", "b"), b.members().stream().map(Member::id).sorted().toList(),
          "b's first ring, from its join");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      TCPPING ping = b.channel().getProtocolStack().findProtocol(TCPPING.class);
      // TCPPING empties and refills the set at each discovery: read it between two.
      await("the name TCPPING resolves again at each discovery").atMost(WAIT).ignoreExceptions()
          .until(() -> Set.of(notYet).equals(Set.copyOf((Collection<?>) ping.getValue("unresolved_hosts"))));
      assertEquals(false, ping.getValue("initial_hosts_set_programmatically"),
          "a list set programmatically is never resolved again");
    }
    for (String bad : List.of("a[7800] [7801]", "a[7800]x", "a[]", "a[0]", "a[65536]", "a[78x0]", "a[7800],", "[7800]",
        "${HOST}[7800]")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().initialHosts(bad), bad);
      assertTrue(e.getMessage().startsWith("initialHosts entry "), e.getMessage());
    }
    Ringmaster.builder().initialHosts("a[1],b[65535]"); // the lowest and the highest port
  }

  /**
   * An empty entry is named as such, with the whole list it is in (an empty entry alone says
   * nothing of where it is); a list of spaces alone has no comma, and is not said to have one.
   */
  @Test
  void initialHosts_anEmptyEntry_isShownWithItsList_andABlankListIsSaidBlank() {
    for (String list : List.of("a[1],", ",a[1]", "a[1],,b[2]", "a[1], ,b[2]", "a[1], ")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().initialHosts(list), list);
      assertEquals("initialHosts entry \"\" is empty (a comma at an end, or two in a row): \"" + list + "\"",
          e.getMessage());
    }
    IllegalArgumentException blank = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().initialHosts(" "));
    assertEquals("initialHosts is blank: \" \"", blank.getMessage());
  }

  /**
   * A stack whose TCPPING reads its hosts from a file: the node's initialHosts replace the file's,
   * as they replace a list in the stack file (TCPPING would read the file and ignore the list).
   */
  @Test
  void initialHosts_replaceAStacksHostsFile(@TempDir Path dir) throws Exception {
    String shipped;
    try (var in = getClass().getClassLoader().getResourceAsStream("ringmaster/jgroups/localhost-tcp.xml")) {
      shipped = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String list = "initial_hosts=\"${ringmaster.initial_hosts:127.0.0.1[7800]}\"";
    assertTrue(shipped.contains(list), shipped);
    Path hosts = Files.writeString(dir.resolve("hosts.txt"), "127.0.0.1[7999]\n");
    Path stack = Files.writeString(dir.resolve("hosts-file.xml"),
        shipped.replace(list, "initial_hosts_file=\"" + hosts.toAbsolutePath() + "\""));
    RingmasterConfig config = Ringmaster.builder().nodeId("a").jgroupsConfig(stack.toString())
        .initialHosts("127.0.0.1[9000]").buildConfig();
    try (JChannel channel = Stacks.create(config)) {
      TCPPING ping = channel.getProtocolStack().findProtocol(TCPPING.class);
      Set<Integer> ports = ping.getInitialHosts().stream().map(a -> ((IpAddress) a).getPort())
          .collect(Collectors.toSet());
      assertTrue(ports.contains(9000) && !ports.contains(7999), "TCPPING probes " + ping.getInitialHosts());
    }
  }

  /**
   * An executor that refuses the first callback of a listener added to a running node (the current
   * ownership, the current members): adding fails saying so, and the listener is not kept, instead
   * of returning a registration that will never be called.
   */
  @Test
  void addingAListener_whoseExecutorRefusesItsFirstCallback_failsAndKeepsNothing() {
    try (TestCluster cluster = new TestCluster("refused-first-callback");
         NodeLog log = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue())) {
      Ringmaster a = cluster.start(cluster.builder("a"));
      Executor full = task -> {
        throw new RejectedExecutionException("queue full");
      };
      List<Object> seen = new CopyOnWriteArrayList<>();
      RejectedExecutionException e = assertThrows(RejectedExecutionException.class,
          () -> a.addOwnershipListener(seen::add, full));
      assertTrue(e.getMessage().startsWith("ownership listener ") && e.getMessage().contains("queue full"),
          e.getMessage());
      assertEquals(0, a.ownershipListenerCount());
      e = assertThrows(RejectedExecutionException.class, () -> a.addMembershipListener(seen::add, full));
      assertTrue(e.getMessage().startsWith("membership listener ") && e.getMessage().contains("queue full"),
          e.getMessage());
      assertEquals(0, a.membershipListenerCount());
      assertEquals(List.of(), seen);
      // The caller has the refusal: no line says a listener was removed, which was never added.
      assertEquals(List.of(), log.records().stream().map(LogRecord::getMessage).toList());
      // An executor that takes them is fine.
      a.addOwnershipListener(change -> { }, Runnable::run);
      assertEquals(1, a.ownershipListenerCount());
    }
  }

  /**
   * A close() that comes while a listener is being added, after the node took it and before its
   * executor was handed the first callback: an executor the application shuts down with the node
   * refuses that callback. Adding fails as for a node closed before the call, not as an executor's
   * refusal, and the listener is not kept. Here the close runs inside the executor's execute(), the
   * point where another thread's close() lands when it wins this race.
   */
  @Test
  void addingAListener_whenTheNodeClosesBeforeItsExecutorTakesTheFirstCallback_failsAsForAClosedNode() {
    ExecutorService applicationPool = Executors.newSingleThreadExecutor();
    try (TestCluster cluster = new TestCluster("closed-while-added")) {
      // leaveTimeout 0: the close would otherwise wait that long for the listener's first callback,
      // which waits for the executor that runs the close.
      Ringmaster a = cluster.start(cluster.builder("a").leaveTimeout(Duration.ZERO));
      Executor closedWithTheNode = task -> {
        a.close();
        applicationPool.shutdown();
        applicationPool.execute(task); // refused: the pool is shut down
      };
      List<Object> seen = new CopyOnWriteArrayList<>();
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> a.addOwnershipListener(seen::add, closedWithTheNode));
      assertTrue(e.getMessage().startsWith("node a is closed (close() was called, or start() failed)"), e.getMessage());
      assertEquals(0, a.ownershipListenerCount());
      assertEquals(List.of(), seen);
    } finally {
      applicationPool.shutdownNow();
    }
  }

  /**
   * The same race won the other way: the executor runs the listener's first callback, and the close
   * comes as it returns, before the add has checked for a refusal. The listener was added and heard
   * the current ownership, so adding returns its registration rather than failing as for a node
   * closed before the call.
   */
  @Test
  void addingAListener_whenTheNodeClosesJustAfterItsExecutorRanTheFirstCallback_returnsItsRegistration() {
    try (TestCluster cluster = new TestCluster("closed-after-added")) {
      Ringmaster a = cluster.start(cluster.builder("a").leaveTimeout(Duration.ZERO));
      AtomicBoolean closed = new AtomicBoolean();
      Executor closesAfterTheFirst = task -> {
        task.run();
        if (closed.compareAndSet(false, true)) {
          a.close();
        }
      };
      List<OwnershipChange.Reason> seen = new CopyOnWriteArrayList<>();
      Registration registration = assertDoesNotThrow(
          () -> a.addOwnershipListener(change -> seen.add(change.reason()), closesAfterTheFirst));
      assertTrue(closed.get(), "the node closed while the listener was added");
      assertEquals(OwnershipChange.Reason.INITIAL, seen.get(0), seen.toString());
      assertTrue(registration.isActive(), "a node's close() leaves its listeners registered");
    }
  }

  /**
   * A start that fails (the cluster refuses the node's ring parameters) on a stack whose close
   * fails too: start() throws the refusal, which says why the node is not in the cluster, and
   * carries the close's failure as a suppressed exception, so that neither is lost.
   */
  @Test
  void start_refused_whenTheChannelsCloseThrows_throwsTheRefusal_withTheCloseFailureSuppressed(@TempDir Path dir)
      throws IOException {
    String shipped;
    try (var in = getClass().getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      shipped = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(shipped.contains("</config>"), shipped);
    Path stack = Files.writeString(dir.resolve("fails-on-destroy.xml"),
        shipped.replace("</config>", "    <io.ringmaster.FailsOnDestroy/>\n</config>"));
    try (TestCluster cluster = new TestCluster("refused-close-fails")) {
      cluster.start(cluster.builder("a").virtualNodes(128));

      RingmasterException e = assertThrows(RingmasterException.class,
          () -> cluster.start(cluster.builder("b").virtualNodes(64).jgroupsConfig(stack.toString())));

      assertEquals(RingmasterException.Reason.REFUSED, e.reason(), e.getMessage());
      assertEquals(1, e.getSuppressed().length, Arrays.toString(e.getSuppressed()));
      assertInstanceOf(AssertionError.class, e.getSuppressed()[0]);
      assertEquals("destroy failed", e.getSuppressed()[0].getMessage());
    }
  }

  @Test
  void secureStack_noSecretAnywhere_failsFastSayingSo() {
    assertNull(System.getenv(SharedSecret.ENVIRONMENT), "the build removes " + SharedSecret.ENVIRONMENT
        + " from the tests' environment (surefire's excludedEnvironmentVariables)");
    assertNull(System.getProperty(SharedSecret.PROPERTY), "no test sets " + SharedSecret.PROPERTY);
    // At build, naming the setting: not at start().
    IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder()
        .nodeId("d").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").bindPort(7953).buildConfig());
    assertTrue(none.getMessage().startsWith("jgroupsConfig ringmaster/jgroups/secure-tcp.xml needs a shared secret:"
        + " set the \"secret\" setting, the system property ringmaster.secret or the environment variable"
        + " RINGMASTER_SECRET"), none.getMessage());
    IllegalArgumentException blank = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().secret("   "));
    assertTrue(blank.getMessage().startsWith("secret is blank"), blank.getMessage());
    // A newline read from a file with the secret, on some members and not others: refused, never shown.
    IllegalArgumentException newline = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().secret("s3cret-from-a-file\n"));
    assertEquals("secret: the secret starts or ends with whitespace (a newline read from a file, say); remove it,"
        + " since every member must use the same secret, byte for byte", newline.getMessage());
    withProperty(SharedSecret.PROPERTY, " s3cret", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder()
          .nodeId("d").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").bindPort(7953).buildConfig());
      assertTrue(e.getMessage().startsWith("system property ringmaster.secret: the secret starts or ends with"),
          e.getMessage());
      assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    });
    // Set but blank (an empty shell variable, say): no secret, never the cluster's keys from spaces.
    for (String blankValue : List.of("", "   ")) {
      withProperty(SharedSecret.PROPERTY, blankValue, () -> {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder()
            .nodeId("d").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").bindPort(7953).buildConfig());
        assertTrue(e.getMessage().contains("needs a shared secret"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> SharedSecret.require("a stack"));
      });
    }
  }

  /**
   * A secret pasted with a no-break space, or read from a file that starts with a byte order mark,
   * is refused as one with a newline is (String.strip() keeps both): a member that kept it would
   * derive other keys than the others, and fail only with "authentication failed".
   */
  @Test
  void secret_aNoBreakSpaceOrByteOrderMarkAtEitherEnd_isRefused() {
    for (String secret : List.of("s3cret\u00a0", "\u00a0s3cret", "\uFEFFs3cret", "s3cret\uFEFF", "s3cret\u2007")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().secret(secret), SettingChecks.shown(secret));
      assertTrue(e.getMessage().startsWith("secret: the secret starts or ends with whitespace"), e.getMessage());
      assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    }
    Ringmaster.builder().secret("s3\u00a0cr\uFEFFet"); // inside, they are the secret's own characters
  }

  /**
   * A config's toString, which an application may log, names the settings but never shows the
   * secret: only whether one is set.
   */
  @Test
  void configToString_namesTheSettings_butNeverTheSecret() {
    String shown = Ringmaster.builder().nodeId("d").clusterName("orders")
        .jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").bindPort(7953).secret("s3cret-one").buildConfig()
        .toString();
    assertTrue(shown.startsWith("RingmasterConfig[clusterName=orders, nodeId=d, "), shown);
    assertTrue(shown.contains(", bindPort=Optional[7953], "), shown);
    assertTrue(shown.contains(", secret=Optional[***], "), shown);
    assertFalse(shown.contains("s3cret"), shown);
    String none = Ringmaster.builder().nodeId("e").buildConfig().toString();
    assertTrue(none.contains(", secret=Optional.empty, "), none);
  }

  /**
   * The secret a node's stack is built with stays with that stack: the next stack built on the
   * same thread, whose node sets none, finds none (and its build fails, naming where a secret may
   * come from), rather than the last node's.
   */
  @Test
  void aNodesSecret_isNotLeftForTheNextStackBuiltOnItsThread() throws Exception {
    try (JChannel first = Stacks.create(Ringmaster.builder().nodeId("one")
        .jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").secret("s3cret-of-node-one").buildConfig())) {
      assertTrue(first.getProtocolStack().findProtocol(SharedSecretEncrypt.class) != null);
    }
    IllegalStateException none = assertThrows(IllegalStateException.class, () -> SharedSecret.require("the next"));
    assertTrue(none.getMessage().startsWith("the next needs a shared secret"), none.getMessage());
  }

  /**
   * A node id or zone with a space at either end, or a control character (a line break read from a
   * file), would be another member than the one it reads as, owning other keys: refused, naming
   * the setting and showing the value.
   */
  @Test
  void builder_idOrZoneWithASpaceAtAnEndOrAControlCharacter_failsNamingIt() {
    for (String bad : List.of("orders-1 ", " orders-1", "orders-1\n", "ord\u0000ers", "orders-1\u00a0", "\torders",
        "\ufefforders-1")) { // the last: a byte order mark, as a value read from a file may start with
      IllegalArgumentException id = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().nodeId(bad));
      assertTrue(id.getMessage().startsWith("nodeId has a "), id.getMessage());
      IllegalArgumentException zone = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().zone(bad));
      assertTrue(zone.getMessage().startsWith("zone has a "), zone.getMessage());
    }
    assertEquals("nodeId has a space at either end: \"orders-1 \"",
        assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().nodeId("orders-1 ")).getMessage());
    assertEquals("nodeId has a control character: \"orders-1\\u000a\"",
        assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().nodeId("orders-1\n")).getMessage());
    assertEquals("rack 1", Ringmaster.builder().zone("rack 1").nodeId("orders 1").jgroupsConfig(TestCluster.STACK)
        .buildConfig().zone(), "a space inside is fine");
    // A value too long for the address is shown cut at a whole character, not inside a surrogate pair.
    String tooLong = "a".repeat(39) + "\ud83d\ude00".repeat(70);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().nodeId(tooLong));
    assertTrue(e.getMessage().endsWith(": \"" + "a".repeat(39) + "\ud83d\ude00...\""), e.getMessage());
  }

  /** A secret given as another JSON type, or a file that fails to parse while it sets one, is not repeated. */
  @Test
  void fromConfig_aMistypedSecret_isNotRepeatedInTheError(@TempDir Path dir) throws IOException {
    assertConfigError(dir, "{\"nodeId\": \"a\", \"secret\": 73921856}", "setting \"secret\"",
        "must be a string, not a JSON number (its value is not shown here)");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"secret\": hunter2}", "not valid JSON (line 1, column",
        "the parser's message is left out, since the file sets a secret");
    for (String text : List.of("{\"nodeId\": \"a\", \"secret\": 73921856}", "{\"nodeId\": \"a\", \"secret\": hunter2}")) {
      Path file = Files.writeString(dir.resolve("secret.json"), text);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.fromConfig(file));
      assertFalse(e.getMessage().contains("73921856") || e.getMessage().contains("hunter2"), e.getMessage());
    }
    // A file without a secret still gets the parser's reason, but not a bare token it quotes back:
    // it may be the secret of a misspelled key.
    assertConfigError(dir, "{\"nodeId\": \"a\", \"sercet\": hunter2}", "not valid JSON (line 1, column",
        "Unrecognized token: was expecting");
    Path misspelled = Files.writeString(dir.resolve("misspelled.json"), "{\"nodeId\": \"a\", \"sercet\": hunter2}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.fromConfig(misspelled));
    assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
  }

  /**
   * A node built but not started has stats of nothing yet: no view (-1), no member, no counts, no
   * change; once started, its first view counts, and changed its ownership.
   */
  @Test
  void stats_beforeStart_countNothing_thenTheFirstView() {
    try (TestCluster cluster = new TestCluster("stats-unstarted")) {
      Ringmaster a = cluster.builder("a").build();
      try {
        assertEquals(new RingmasterStats(-1, 0, 0, 0, Duration.ZERO, 0, 0, 0, 0, 0, 0, 0, 0, Optional.empty(),
            OptionalLong.empty()), a.stats());
      } finally {
        a.close();
      }
      Ringmaster b = cluster.start("b");
      RingmasterStats started = b.stats();
      assertEquals(b.viewId(), started.viewId());
      assertEquals(1, started.members());
      assertEquals(1, started.ringBuilds());
      assertTrue(started.lastChange().isPresent(), started::toString);
    }
  }

  @Test
  void fromConfig_exampleFile_readsEverySetting_whereverItIsCopied(@TempDir Path dir) throws IOException {
    Path example = Path.of(System.getProperty("basedir", "."), "..", "config", "node.example.json");
    RingmasterConfig c = Ringmaster.builder().config(example).buildConfig();
    assertEquals("orders", c.clusterName());
    assertEquals("orders-1", c.nodeId());
    assertEquals("rack-1", c.zone());
    assertEquals(2, c.replicas());
    assertEquals(1024, c.virtualNodes());
    assertEquals("orders/1", c.applicationVersion());
    assertEquals(Duration.ofSeconds(10), c.leaveTimeout());
    assertEquals(RingmasterConfig.DEFAULT_JGROUPS_CONFIG, c.jgroupsConfig(), "the stack in the jar");
    Path copy = Files.copy(example, dir.resolve("node.json"));
    assertEquals(c, Ringmaster.builder().config(copy).buildConfig(), "a copy outside the repository reads the same");
    try (Ringmaster node = Ringmaster.fromConfig(copy)) { // built, not started
      assertEquals(c, node.config());
      assertFalse(node.isInRing());
    }
  }

  /**
   * Every key a config file may set reaches its setting, each at a value that is not its default
   * (a key read into the wrong setting, or not at all, fails here), and the file names every key
   * there is.
   */
  @Test
  void fromConfig_everyKey_reachesItsSetting(@TempDir Path dir) throws IOException {
    Path stack = Files.copy(Path.of(System.getProperty("basedir", "."), "..", "config", "jgroups", "secure-tcp.xml"),
        dir.resolve("mine.xml"));
    String json = "{\"clusterName\": \"c1\", \"nodeId\": \"n1\", \"weight\": 2.5, \"zone\": \"z1\","
        + " \"virtualNodes\": 77, \"replicas\": 3, \"applicationVersion\": \"v9\", \"jgroupsConfig\": \"mine.xml\","
        + " \"endpoint\": \"http://127.0.0.1:9999\", \"bindAddress\": \"127.0.0.1\", \"bindPort\": 7951,"
        + " \"initialHosts\": \"127.0.0.1[7951]\", \"secret\": \"s3cret-every-key\", \"leaveTimeoutMillis\": 1234,"
        + " \"gossipIntervalMillis\": 567, \"startTimeoutMillis\": 8910}";
    Set<String> keys = new TreeSet<>();
    new ObjectMapper().readTree(json).fieldNames().forEachRemaining(keys::add);
    assertEquals(new TreeSet<>(Json.KNOWN), keys, "this test sets every key there is");
    RingmasterConfig c = Ringmaster.builder().config(Files.writeString(dir.resolve("node.json"), json)).buildConfig();
    assertEquals(List.of("c1", "n1", 2.5, "z1", 77, 3, "v9", stack.toString(), "http://127.0.0.1:9999"),
        List.of(c.clusterName(), c.nodeId(), c.weight(), c.zone(), c.virtualNodes(), c.replicas(),
            c.applicationVersion(), c.jgroupsConfig(), c.endpoint()));
    assertEquals(List.of(Optional.of("127.0.0.1"), Optional.of(7951), Optional.of("127.0.0.1[7951]"),
        Optional.of("s3cret-every-key")), List.of(c.bindAddress(), c.bindPort(), c.initialHosts(), c.secret()));
    assertEquals(List.of(Duration.ofMillis(1234), Duration.ofMillis(567), Duration.ofMillis(8910)),
        List.of(c.leaveTimeout(), c.gossipInterval(), c.startTimeout()));
  }

  /** The values that travel in the address fit in 255 UTF-8 bytes: 255 is taken, 256 refused by name. */
  @Test
  void builder_valuesOf255BytesFitTheAddress_256AreRefusedNamingTheSetting() {
    assertEquals(255, Ringmaster.builder().nodeId("x".repeat(255)).zone("z".repeat(255)).jgroupsConfig(TestCluster.STACK)
        .buildConfig().nodeId().length());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("x".repeat(256)));
    assertTrue(e.getMessage().startsWith("nodeId is 256 bytes in UTF-8; at most 255 fit"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().endpoint("\u00e9".repeat(128)));
    assertTrue(e.getMessage().startsWith("endpoint is 256 bytes in UTF-8"), e.getMessage());
  }

  /**
   * A stack variable that is no duration may be a small bare number: {@code ringmaster.ip_ttl=2},
   * as docs/operations.md says, lets multicast cross a router; only a bare number for a duration
   * (read as milliseconds) is taken for a missing unit.
   */
  @Test
  void builder_aSmallBareNumberForAVariableThatIsNoDuration_isTaken() {
    withProperty("ringmaster.ip_ttl", "2", () -> assertEquals("a", Ringmaster.builder().nodeId("a")
        .jgroupsConfig("ringmaster/jgroups/lan-udp.xml").buildConfig().nodeId()));
  }

  @Test
  void fromConfig_badFiles_failNamingTheKeyOrPath(@TempDir Path dir) throws IOException {
    assertConfigError(dir, "{\"nodeId\": \"a\", \"wieght\": 2}", "unknown setting \"wieght\"");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": -1}", "setting \"weight\"", "-1.0");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": \"heavy\"}", "setting \"weight\"", "must be a number");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"virtualNodes\": 0}", "setting \"virtualNodes\"", ": 0");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"replicas\": 1.5}", "setting \"replicas\"", "whole number");
    // Numbers quoted as written.
    assertConfigError(dir, "{\"nodeId\": \"a\", \"replicas\": 2.0}", "setting \"replicas\"", "whole number, not 2.0");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"bindPort\": 7800.0}", "setting \"bindPort\"", "not 7800.0");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": 1e309}", "setting \"weight\"",
        "too large for a double: 1E+309");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"applicationVersion\": 3}", "setting \"applicationVersion\"",
        "must be a string");
    assertConfigError(dir, "{\"nodeId\": \"\"}", "setting \"nodeId\"", "non-empty");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"jgroupsConfig\": \"nowhere/stack.xml\"}",
        "setting \"jgroupsConfig\" in " + dir.resolve("node"), "nowhere/stack.xml");
    assertConfigError(dir, "{\"weight\": 1}", "nodeId is required", ".json does not set \"nodeId\"");
    assertConfigError(dir, "{\"nodeId\": \"a\"} {\"nodeId\": \"b\"}", "not valid JSON", "Trailing token");
    // A file that is empty, or holds anything but one object, would otherwise apply nothing: a node
    // on every default, under the id its caller set, joining another cluster than the file names.
    for (String notAnObject : List.of("", "null", "[{\"nodeId\": \"a\"}]", "\"a\"")) {
      assertConfigError(dir, notAnObject, "must hold a JSON object");
    }
    assertConfigError(dir, "{\"nodeId\": \"a\", \"leaveTimeoutMillis\": 18446744073709552616}",
        "setting \"leaveTimeoutMillis\"", "too large");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"nodeId\": \"b\"}", "not valid JSON", "(line 1, column ",
        "setting \"nodeId\" is given twice (Duplicate field 'nodeId')");
    // Named in a file that sets a secret too, whose other parser messages are left out.
    assertConfigError(dir, "{\"secret\": \"s3cret\", \"nodeId\": \"a\", \"nodeId\": \"b\"}", "not valid JSON",
        "setting \"nodeId\" is given twice");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"leaveTimeoutMillis\": 99999999999}", "leaveTimeout", "24 hours",
        "99999999999 ms");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"bindPort\": 99999999999}", "setting \"bindPort\"",
        "must be in 0..65535: 99999999999");
    assertConfigError(dir, "{\"nodeId\": \"x\\ud800\"}", "setting \"nodeId\"", "unpaired surrogate", "\"x\\ud800\"");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"clusterName\": \" orders\"}", "setting \"clusterName\"",
        "printable ASCII", "\" orders\"");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"initialHosts\": \"127.0.0.1:7800\"}", "initialHosts", "127.0.0.1:7800");
    assertConfigError(dir, "{\"nodeId\": ", "not valid JSON");
    // Jackson's stream limits fail without a location (no NullPointerException for the line number).
    assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": " + "1".repeat(1001) + "}",
        "exceeds a limit of the JSON parser", "Number value length (1001)");
    assertConfigError(dir, "[".repeat(1001) + "]".repeat(1001), "exceeds a limit of the JSON parser", "nesting depth");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"gossipIntervalMillis\": 0}", "gossipInterval", "between 1 ms", ": 0 ms");
    assertConfigError(dir, "{\"nodeId\": \"a\", \"leaveTimeoutMillis\": 86400001}", "leaveTimeout",
        "24 hours", "86400001 ms");
    for (String tiny : List.of("1e-400", "-1e-400")) {
      assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": " + tiny + "}", "setting \"weight\"",
          "too small to tell from 0 as a double", tiny.toUpperCase(Locale.ROOT));
    }
    assertConfigError(dir, "{\"nodeId\": \"a\", \"weight\": 0.0001}", "weight 1.0E-4 with virtualNodes 1024 gives 0 tokens",
        "(settings from config file " + dir);
    Path latin = Files.write(dir.resolve("latin.json"), new byte[] {'{', (byte) 0xff, '}'});
    IllegalArgumentException notUtf8 = assertThrows(IllegalArgumentException.class, () -> Ringmaster.fromConfig(latin));
    assertTrue(notUtf8.getMessage().contains("latin.json is not UTF-8 text"), notUtf8.getMessage());
    assertEquals("config file must not be null",
        assertThrows(IllegalArgumentException.class, () -> Ringmaster.fromConfig(null)).getMessage());
    // A file refused part-way leaves the builder as it was, not with the settings before the bad one.
    Path half = Files.writeString(dir.resolve("half.json"), "{\"nodeId\": \"from-file\", \"weight\": -1}");
    Ringmaster.Builder kept = Ringmaster.builder().nodeId("mine");
    assertThrows(IllegalArgumentException.class, () -> kept.config(half));
    assertEquals("mine", kept.buildConfig().nodeId());
    Path bom = Files.writeString(dir.resolve("bom.json"), "\uFEFF{\"nodeId\": \"a\", \"weight\": 2}");
    assertEquals(2.0, Ringmaster.builder().config(bom).buildConfig().weight(), "a UTF-8 byte order mark is skipped");
    Path missing = dir.resolve("absent.json");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.fromConfig(missing));
    assertTrue(e.getMessage().contains("config file not found") && e.getMessage().contains("absent.json"), e.getMessage());
  }

  @Test
  void builder_clusterNameJGroupsWouldMangle_failsNamingTheSettingAndValue() {
    // JGroups sends the name one byte per char: "\u0141\u00f3d\u017a" and "A\u00f3dz" would be one cluster.
    for (String bad : List.of("\u0141\u00f3d\u017a", "  ", "orders ", "a\tb", "a\u007fb", "a\u001fb", "x".repeat(201))) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().clusterName(bad));
      assertTrue(e.getMessage().startsWith("clusterName must be 1 to 200 printable ASCII"), e.getMessage());
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().clusterName("\u0141\u00f3d\u017a"));
    assertTrue(e.getMessage().endsWith(": \"\\u0141\\u00f3d\\u017a\""), e.getMessage());
    assertEquals("x".repeat(200), Ringmaster.builder().clusterName("x".repeat(200)).nodeId("a")
        .jgroupsConfig(TestCluster.STACK).buildConfig().clusterName());
    // The printable range's two ends, and a space inside the name, are kept.
    for (String good : List.of("orders east", "~ !")) {
      assertEquals(good, Ringmaster.builder().clusterName(good).nodeId("a").jgroupsConfig(TestCluster.STACK)
          .buildConfig().clusterName(), good);
    }
  }

  @Test
  void builder_zoneWithUnpairedSurrogate_failsInTheSetterNamingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().zone("rack\udc00"));
    assertEquals("zone has an unpaired surrogate, which has no UTF-8 form: \"rack\\udc00\"", e.getMessage());
    assertEquals("rack-\ud83d\ude00", Ringmaster.builder().zone("rack-\ud83d\ude00").nodeId("a")
        .jgroupsConfig(TestCluster.STACK).buildConfig().zone(), "a surrogate pair is fine");
  }

  @Test
  void start_afterClose_failsSayingTheNodeIsClosed() {
    Ringmaster node = Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).build();
    IllegalStateException early = assertThrows(IllegalStateException.class, () -> node.ownerOf("k"));
    assertEquals("node a has no ring: it was not started, or its start failed before its first ring", early.getMessage());
    assertFalse(node.isLocal("k"));
    node.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, node::start);
    assertTrue(e.getMessage().startsWith("node a is closed"), e.getMessage());
  }

  /**
   * Until its first ring, a node answers as its class javadoc says: every lookup that names an
   * owner fails saying there is no ring, those that ask "is it mine?" say no, the view is -1, the
   * ring empty and {@code ringJson()} describes that empty ring; its {@code localMember()} is known
   * already; there is no channel yet; and closing it, never started, ends no graceful leave, idle
   * or not.
   */
  @Test
  void aNodeNotStarted_hasAnEmptyRing_itsLookupsFailOrSayNo_andItHasNoChannel() throws IOException {
    Ringmaster node = Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).virtualNodes(64).build();
    byte[] key = "k".getBytes(StandardCharsets.UTF_8);
    try {
      List<Executable> lookups = List.of(() -> node.ownerOf(key), () -> node.owners("k"), () -> node.owners(key));
      for (Executable lookup : lookups) {
        assertEquals("node a has no ring: it was not started, or its start failed before its first ring",
            assertThrows(IllegalStateException.class, lookup).getMessage());
      }
      assertFalse(node.isPrimary("k") || node.isPrimary(key) || node.isLocal(key) || node.isInRing());
      assertEquals(new Member("a", 1.0, ""), node.localMember(), "known from the build, before the start");
      assertEquals(-1, node.viewId());
      assertTrue(node.ring().isEmpty() && node.members().isEmpty(), node.ring()::toString);
      assertEquals(new Ringmaster.RingState(-1, node.ring(), false), node.ringState());
      var json = new ObjectMapper().readTree(node.ringJson());
      assertEquals(-1, json.get("viewId").asLong());
      assertEquals("a", json.get("local").asText());
      assertEquals(64, json.get("virtualNodes").asInt());
      assertEquals(0, json.get("tokens").asInt());
      assertEquals(0, json.get("members").size());
      assertEquals("node a is not started", assertThrows(IllegalStateException.class, node::channel).getMessage());
      assertFalse(node.leftIdle());
    } finally {
      node.close();
    }
    assertFalse(node.leftIdle(), "closed without a start: no leave waited for the listeners");
    assertThrows(IllegalStateException.class, node::channel);
    assertEquals(-1, node.viewId());
  }

  /**
   * A builder given a node id alone builds the defaults that the README's settings table and the
   * setters' javadoc give: an application that sets nothing else gets what they say.
   */
  @Test
  void builder_givenANodeIdAlone_buildsTheDefaultsTheSettingsTableLists() {
    assertEquals(new RingmasterConfig("ringmaster", "a", 1.0, "", 1024, 1, "", "ringmaster/jgroups/localhost-tcp.xml",
        "", Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), Duration.ofSeconds(10),
        Duration.ofSeconds(2), Duration.ofSeconds(30)), Ringmaster.builder().nodeId("a").buildConfig());
  }

  /**
   * A second start() of a running node fails, and changes nothing: it must not connect a second
   * channel that joins under the same id. After a crash ({@code closeAbruptly}), a close()
   * returns at once rather than wait for a close that never comes.
   */
  @Test
  void start_calledTwice_failsAndChangesNothing_andCloseAfterACrash_returns() {
    try (TestCluster cluster = new TestCluster("start-twice")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, Duration.ofSeconds(20));
      JChannel channel = a.channel();
      IllegalStateException e = assertThrows(IllegalStateException.class, a::start);
      assertEquals("start() was already called on node a", e.getMessage());
      assertSame(channel, a.channel());
      assertTrue(a.isInRing());
      b.closeAbruptly();
      assertTimeoutPreemptively(Duration.ofSeconds(10), b::close, "a close() after a crash");
    }
  }

  /**
   * A null listener or executor fails at once, naming which, and registers nothing: a null
   * divergence listener would otherwise fail only when the gossip first finds a divergence.
   */
  @Test
  void addListener_nullListenerOrExecutor_failsNamingIt_andRegistersNothing() {
    try (TestCluster cluster = new TestCluster("listener-null")) {
      Ringmaster a = cluster.start("a");
      Executor none = null;
      List<Map.Entry<String, Runnable>> adds = List.of(
          Map.entry("listener", () -> a.addOwnershipListener(null)),
          Map.entry("listener", () -> a.addOwnershipListener(null, Runnable::run)),
          Map.entry("listener", () -> a.addMembershipListener(null)),
          Map.entry("listener", () -> a.addMembershipListener(null, Runnable::run)),
          Map.entry("listener", () -> a.addDivergenceListener(null)),
          Map.entry("listener", () -> a.addDivergenceListener(null, Runnable::run)),
          Map.entry("executor", () -> a.addOwnershipListener(change -> { }, none)),
          Map.entry("executor", () -> a.addMembershipListener(change -> { }, none)),
          Map.entry("executor", () -> a.addDivergenceListener(report -> { }, none)));
      for (Map.Entry<String, Runnable> add : adds) {
        NullPointerException e = assertThrows(NullPointerException.class, add.getValue()::run);
        assertEquals(add.getKey(), e.getMessage());
      }
      assertEquals(0, a.ownershipListenerCount());
      assertEquals(0, a.membershipListenerCount());
      assertEquals(0, a.divergenceListenerCount());
    }
  }

  @Test
  void addListener_afterClose_failsSayingTheNodeIsClosed_andRegistersNothing() {
    try (TestCluster cluster = new TestCluster("listener-after-close")) {
      Ringmaster a = cluster.start("a");
      Ringmaster b = cluster.start("b");
      a.close();
      b.closeAbruptly(); // what a crash looks like to b's listeners
      List<Runnable> adds = List.of(
          () -> a.addOwnershipListener(change -> { }),
          () -> a.addOwnershipListener(change -> { }, Runnable::run),
          () -> a.addMembershipListener(change -> { }),
          () -> a.addMembershipListener(change -> { }, Runnable::run),
          () -> a.addDivergenceListener(report -> { }),
          () -> a.addDivergenceListener(report -> { }, Runnable::run));
      for (Runnable add : adds) {
        IllegalStateException e = assertThrows(IllegalStateException.class, add::run);
        assertTrue(e.getMessage().startsWith("node a is closed (close() was called, or start() failed): a listener"
            + " added now would never be called"), e.getMessage());
      }
      assertEquals(0, a.ownershipListenerCount());
      assertEquals(0, a.membershipListenerCount());
      assertEquals(0, a.divergenceListenerCount());
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.addOwnershipListener(c -> { }));
      assertTrue(e.getMessage().startsWith("node b is closed"), e.getMessage());
      assertEquals(0, b.ownershipListenerCount());
    }
  }

  @Test
  void builder_secretForAStackThatIgnoresIt_failsAtBuildNamingBoth(@TempDir Path dir) throws IOException {
    for (String stack : List.of(TestCluster.STACK, "ringmaster/jgroups/localhost-tcp.xml")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).secret("s3cret").build());
      assertTrue(e.getMessage().startsWith("secret is set, but jgroupsConfig " + stack + " has no protocol that"
          + " uses it (io.ringmaster.SharedSecretEncrypt, or AUTH with auth_class=io.ringmaster.SharedSecretAuthToken;"
          + " a SharedSecretEncrypt with keystore_name takes its key from the keystore), so the secret would secure"
          + " nothing"), e.getMessage());
      assertTrue(e.getMessage().contains("pbcast.GMS"), "lists the stack's protocols: " + e.getMessage());
    }
    assertConfigError(dir, "{\"nodeId\": \"a\", \"secret\": \"s3cret\"}", "secret is set", "localhost-tcp.xml");
    assertEquals(Optional.of("s3cret"), Ringmaster.builder().nodeId("a").secret("s3cret")
        .jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").buildConfig().secret());
    // AUTH with the secret's token (named through a variable) and no encryption uses the secret too.
    String inJvm;
    try (var in = getClass().getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      inJvm = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(inJvm.contains("<pbcast.GMS"), inJvm);
    Path authOnly = Files.writeString(dir.resolve("auth-only.xml"),
        inJvm.replace("<pbcast.GMS",
            "<AUTH auth_class=\"${ringmaster.test.auth:io.ringmaster.SharedSecretAuthToken}\"/>\n    <pbcast.GMS"));
    assertEquals(Optional.of("s3cret"), Ringmaster.builder().nodeId("a").secret("s3cret")
        .jgroupsConfig(authOnly.toString()).buildConfig().secret());
    // AUTH with another token class does not read the secret: set, it is refused; unset, none is needed.
    withProperty("ringmaster.test.auth", "org.jgroups.auth.FixedMembershipToken", () -> {
      IllegalArgumentException other = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").secret("s3cret").jgroupsConfig(authOnly.toString()).buildConfig());
      assertTrue(other.getMessage().startsWith("secret is set, but jgroupsConfig " + authOnly), other.getMessage());
      assertEquals(Optional.empty(), Ringmaster.builder().nodeId("a").jgroupsConfig(authOnly.toString()).buildConfig()
          .secret());
    });
    // Encryption keyed from a keystore (named through a variable), and no AUTH: the secret is used by nothing.
    String secure;
    try (var in = getClass().getClassLoader().getResourceAsStream("ringmaster/jgroups/secure-tcp.xml")) {
      secure = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(secure.contains("<io.ringmaster.SharedSecretEncrypt/>") && secure.contains("<AUTH "), secure);
    Path keystore = Files.writeString(dir.resolve("keystore.xml"), secure
        .replace("<io.ringmaster.SharedSecretEncrypt/>",
            "<io.ringmaster.SharedSecretEncrypt keystore_name=\"${ringmaster.test.keystore:keys.jks}\"/>")
        .replaceAll("<AUTH [^>]*/>", ""));
    IllegalArgumentException keyed = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder()
        .nodeId("a").jgroupsConfig(keystore.toString()).secret("s3cret").buildConfig());
    assertTrue(keyed.getMessage().startsWith("secret is set, but jgroupsConfig " + keystore), keyed.getMessage());
    // Without the secret, that stack needs none.
    assertEquals(Optional.empty(), Ringmaster.builder().nodeId("a").jgroupsConfig(keystore.toString()).buildConfig()
        .secret());
    // AUTH whose token class comes from a variable that is not set names no class, so no secret is
    // needed at build: JGroups refuses the stack when the node starts.
    Path unsetToken = Files.writeString(dir.resolve("auth-unset.xml"), inJvm.replace("<pbcast.GMS",
        "<AUTH auth_class=\"${ringmaster.test.auth.unset}\"/>\n    <pbcast.GMS"));
    assertEquals(Optional.empty(), Ringmaster.builder().nodeId("a").jgroupsConfig(unsetToken.toString()).buildConfig()
        .secret());
  }

  /**
   * A stack variable set to an empty value: JGroups would take it as set, drop the attribute, and
   * the transport would bind its own default (a non-loopback address) instead of the stack's
   * 127.0.0.1. Refused at build, naming the variable. A variable that a setting replaces is not
   * checked, and values JGroups reads as meant (hosts without ports) are not refused.
   */
  @Test
  void builder_aStackVariableSetEmpty_failsAtBuildNamingIt() {
    String stack = "ringmaster/jgroups/localhost-tcp.xml";
    withProperty("ringmaster.bind_addr", "", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
      assertEquals("system property ringmaster.bind_addr is set but empty (TCP.bind_addr in jgroupsConfig " + stack
          + "): JGroups would drop the attribute and use its own default, not the stack's; unset it, or give it a"
          + " value", e.getMessage());
      Ringmaster.builder().nodeId("a").jgroupsConfig(stack).bindAddress("127.0.0.1").buildConfig();
    });
    withProperty("ringmaster.initial_hosts", "", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
      assertTrue(e.getMessage().startsWith("system property ringmaster.initial_hosts is set but empty"
          + " (TCPPING.initial_hosts in jgroupsConfig " + stack + ")"), e.getMessage());
      Ringmaster.builder().nodeId("a").jgroupsConfig(stack).initialHosts("127.0.0.1[7800]").buildConfig();
    });
    withProperty("ringmaster.bind_port", "", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
      assertTrue(e.getMessage().startsWith("system property ringmaster.bind_port is set but empty"), e.getMessage());
      Ringmaster.builder().nodeId("a").jgroupsConfig(stack).bindPort(7870).buildConfig(); // the setting replaces it
    });
    withProperty("ringmaster.initial_hosts", "db-1,db-2", // JGroups probes the transport's port
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
  }

  /**
   * TCPPING's hosts from a variable, in a form JGroups misreads, fail at build naming the variable
   * and the entry: {@code host:port} (JGroups would take it all for a host name that never
   * resolves, and the node would start a cluster of its own), a bracket left open, a bad port.
   * Hosts with or without a port, several, and an IPv6 literal build.
   */
  @Test
  void builder_initialHostsFromAVariable_inAFormJGroupsMisreads_failsAtBuildNamingIt() {
    String stack = "ringmaster/jgroups/localhost-tcp.xml";
    String prefix = "system property ringmaster.initial_hosts (TCPPING.initial_hosts in jgroupsConfig " + stack
        + "): entry ";
    Map<String, String> refused = new LinkedHashMap<>();
    refused.put("127.0.0.1:7800", prefix + "\"127.0.0.1:7800\" gives its port after a colon, which JGroups reads as"
        + " part of the host name; write 127.0.0.1[7800]");
    refused.put("db-1[7950],db-2:7950", prefix + "\"db-2:7950\" gives its port after a colon, which JGroups reads"
        + " as part of the host name; write db-2[7950]");
    // No host before the colon: the hint asks for one ("[7950]" alone is refused, below).
    refused.put(":7800", prefix + "\":7800\" gives its port after a colon, which JGroups reads as part of the host"
        + " name; write host[7800]");
    refused.put("db-1:x", prefix + "\"db-1:x\" must look like host[port] or host"); // no port to suggest
    refused.put("db-1[7950", prefix + "\"db-1[7950\" must look like host[port] or host");
    refused.put("[7950]", prefix + "\"[7950]\" must look like host[port] or host");
    refused.put("db-1]", prefix + "\"db-1]\" must look like host[port] or host");
    refused.put("]db-1", prefix + "\"]db-1\" must look like host[port] or host");
    refused.put("db-1[x]", prefix + "\"db-1[x]\" has a port that is not a number in 1..65535");
    refused.put("db-1[70000]", prefix + "\"db-1[70000]\" has a port that is not a number in 1..65535");
    refused.forEach((hosts, message) -> withProperty("ringmaster.initial_hosts", hosts, () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig(), hosts);
      assertEquals(message, e.getMessage());
    }));
    for (String hosts : List.of("db-1[7950], db-2[7950]", "db-1 db-2", "::1[7800]", "127.0.0.1[7800]",
        "db-1[1],db-2[65535]")) { // the last: the lowest and the highest port
      withProperty("ringmaster.initial_hosts", hosts,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
    }
  }

  /**
   * A duration given by a stack variable as a bare number under 100: JGroups would read 15 as
   * 15 ms, and the node would fail at start with "interval needs to be smaller than timeout",
   * naming neither the variable nor its value (or, for the interval, send heartbeats every few
   * milliseconds). Refused at build, naming both; with a unit it builds, so do bare milliseconds
   * that could be meant, and a bare number for an attribute that is not a time (a port) is left
   * alone. Values JGroups refuses only at start: the failure names the variables set, with the
   * values of durations only (another variable may fill a password).
   */
  @Test
  void builder_aDurationVariableWithoutAUnit_failsAtBuildNamingItAndTheValue() {
    String stack = TestCluster.STACK;
    withProperty("ringmaster.fd.timeout", "15", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
      assertEquals("system property ringmaster.fd.timeout is \"15\" (FD_ALL3.timeout in jgroupsConfig " + stack
          + "), a duration without a unit, which JGroups would read as 15 ms: give the unit, as 15s or 15ms",
          e.getMessage());
    });
    withProperty("ringmaster.merge.max", " 99", () -> {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack).buildConfig());
      assertTrue(e.getMessage().startsWith("system property ringmaster.merge.max is \" 99\" (MERGE3.max_interval"),
          e.getMessage());
    });
    // With a unit; and bare milliseconds that could be meant (0, which disables some timers, and 100 up).
    for (String meant : List.of("15s", "40000", "100", "0")) {
      withProperty("ringmaster.fd.timeout", meant, () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack)
          .buildConfig());
    }
    // Values with their units that JGroups refuses only when it starts the stack (the shortest
    // merge interval above the stack's longest; a heartbeat interval above the timeout): the
    // failure names the variables set.
    withProperty("ringmaster.merge.min", "5s", () -> {
      try (Ringmaster node = Ringmaster.builder().nodeId("a").clusterName("merge-min-" + System.nanoTime())
          .jgroupsConfig(stack).build()) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, node::start);
        assertEquals("jgroupsConfig " + stack + ": min_interval (5000) has to be < max_interval (3000) (the stack's"
            + " variables set here: system property ringmaster.merge.min=5s)", e.getMessage());
      }
    });
    withProperty("ringmaster.fd.interval", "4s", () -> {
      try (Ringmaster node = Ringmaster.builder().nodeId("a").clusterName("fd-interval-" + System.nanoTime())
          .jgroupsConfig(stack).build()) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, node::start);
        assertTrue(e.getMessage().startsWith("jgroupsConfig " + stack + ": java.lang.IllegalStateException: "),
            e.getMessage());
        assertTrue(e.getMessage().endsWith(" (the stack's variables set here: system property ringmaster.fd.interval=4s)"),
            e.getMessage());
      }
    });
    withProperty("ringmaster.bind_port", "7850", () -> Ringmaster.builder().nodeId("a")
        .jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml").buildConfig());
    assertTrue(Stacks.isTime("FD_ALL3", "interval") && Stacks.isTime("org.jgroups.protocols.VERIFY_SUSPECT2", "timeout")
        && Stacks.isTime("pbcast.GMS", "join_timeout"), "times declared on fields, superclasses included");
    assertTrue(Stacks.isTime("UNICAST3", "max_retransmit_time"), "a time declared on a setter");
    assertFalse(Stacks.isTime("TCP", "bind_port") || Stacks.isTime("MERGE3", "max_participants_in_merge")
        || Stacks.isTime("NO_SUCH_PROTOCOL", "timeout"), "not times");
  }

  /** The variables a failed start names show the values of durations and addresses only: another may fill a password. */
  @Test
  void variablesSet_showsTheValuesOfDurationsAndAddressesOnly(@TempDir Path dir) throws IOException {
    String inJvm;
    try (var in = getClass().getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      inJvm = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(inJvm.contains("<SHARED_LOOPBACK "), inJvm);
    Path stack = Files.writeString(dir.resolve("with-passcode.xml"),
        inJvm.replace("<SHARED_LOOPBACK ", "<SHARED_LOOPBACK diag.passcode=\"${ringmaster.test.code:none}\" "));
    withProperty("ringmaster.test.code", "hunter2", () -> withProperty("ringmaster.merge.min", "5s", () ->
        assertEquals(" (the stack's variables set here: system property ringmaster.test.code, system property"
            + " ringmaster.merge.min=5s)", Stacks.variablesSet(stack.toString()))));
    // A ${:default} names no variable: JGroups reads the default, whatever is set under the name ":default".
    Path noName = Files.writeString(dir.resolve("no-name.xml"),
        inJvm.replace("<SHARED_LOOPBACK ", "<SHARED_LOOPBACK diag.passcode=\"${:none}\" "));
    withProperty(":none", "hunter2", () -> assertEquals("", Stacks.variablesSet(noName.toString())));
  }

  /**
   * A secret in the system property (or the environment variable) with a stack that uses none:
   * the node would join unauthenticated and send in the clear, so the build warns, naming where
   * the secret came from (never the secret) and the stack. A stack that uses it is not warned
   * about.
   */
  @Test
  void builder_aSecretPropertyForAStackThatUsesNone_warnsNamingTheProperty() {
    try (NodeLog log = new NodeLog(r -> r.getLevel() == Level.WARNING
        && r.getMessage().startsWith("{0} is set, but jgroupsConfig"))) {
      withProperty(SharedSecret.PROPERTY, "s3cret-from-the-host", () -> {
        Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").buildConfig();
        assertEquals(List.of(), log.records(), "a stack that uses the secret");
        Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml").buildConfig();
      });
      assertEquals(1, log.records().size(), () -> log.records().toString());
      LogRecord warning = log.records().get(0);
      assertTrue(warning.getMessage().startsWith("{0} is set, but jgroupsConfig {1} does not use the shared secret, so"
          + " it neither checks joins with it nor encrypts with it"), warning.getMessage());
      assertEquals(List.of("system property ringmaster.secret", "ringmaster/jgroups/localhost-tcp.xml"),
          List.of(warning.getParameters()).subList(0, 2));
      assertFalse(List.of(warning.getParameters()).toString().contains("s3cret"), "never the secret");
    }
  }

  /**
   * A node bound to an address other hosts reach, whose TCPPING hosts are all loopback addresses
   * (secure-tcp.xml's 127.0.0.1[7950] left as it is): it would find only the members on its own
   * host, so each host would form a cluster of its own. A node that lists any other host, or only
   * itself, or is bound to loopback or to every address, is not warned about.
   */
  @Test
  void onlyLoopbackHosts_isABoundNodeWhoseHostsAreAllLoopback() throws Exception {
    InetAddress lan = InetAddress.getByName("10.0.0.5");
    assertTrue(Stacks.onlyLoopbackHosts(lan, "127.0.0.1[7950]"));
    assertTrue(Stacks.onlyLoopbackHosts(lan, "127.0.0.1[7950],localhost[7951] ::1[7952]"));
    assertFalse(Stacks.onlyLoopbackHosts(lan, "127.0.0.1[7950],10.0.0.6[7950]"));
    assertFalse(Stacks.onlyLoopbackHosts(lan, "10.0.0.5[7950]"), "the first node, which the others list");
    assertFalse(Stacks.onlyLoopbackHosts(lan, "db-1[7950]"), "a name is not looked up");
    assertTrue(Stacks.onlyLoopbackHosts(lan, "127.0.0.1[7950],[7951]"),
        "a host left out, which JGroups reads as the loopback address");
    assertFalse(Stacks.onlyLoopbackHosts(lan, "127.0.0.1[7950],1:2:3:4:5:6:7:8:9[7950]"),
        "a literal that is no address is no loopback address");
    assertFalse(Stacks.onlyLoopbackHosts(InetAddress.getByName("127.0.0.1"), "127.0.0.1[7950]"));
    assertFalse(Stacks.onlyLoopbackHosts(InetAddress.getByName("0.0.0.0"), "127.0.0.1[7950]"));
    assertFalse(Stacks.onlyLoopbackHosts(lan, null), "no TCPPING");
    assertFalse(Stacks.onlyLoopbackHosts(null, "127.0.0.1[7950]"));
  }

  /**
   * A host of initial_hosts is loopback if it is localhost or a loopback literal, in every IPv4 form
   * the JDK (and so JGroups) reads without a lookup: 127.1 is 127.0.0.1, 127.1.2 is 127.1.0.2, and
   * 2130706433 is 127.0.0.1. Digits and dots that make no address are not (InetAddress would send
   * them to the resolver, and the node's start would wait on DNS for a typo), nor is a name (never
   * looked up).
   */
  @Test
  void isLoopback_readsLiteralsOnly() {
    for (String loopback : List.of("localhost", "LOCALHOST", "127.0.0.1", "127.255.3.4", "127.1", "127.1.2",
        "127.16777215", "2130706433", "127.000.000.001", "::1", "0:0:0:0:0:0:0:1")) {
      assertTrue(Stacks.isLoopback(loopback), loopback);
    }
    for (String other : List.of("10.0.0.1", "128.0.0.1", "126.0.0.1", "127.0.0.256", "999.1.1.1", "1.2.3.4.5", "127",
        "127.16777216", "127.65536.1", "2147483648", "4294967296", "::2", "1:2:3:4:5:6:7:8:9", "db-1",
        "127.0.0.1.example.com", "")) {
      assertFalse(Stacks.isLoopback(other), other);
    }
  }

  /**
   * TCPPING probes a host given without a port at the transport's port, which it reads while the
   * stack is initialized: the bindPort setting must be the transport's port by then, not only
   * once the channel is built, or the host is probed at the stack file's port.
   */
  @Test
  void bindPort_isThePortTcppingProbesAHostWithoutOne() {
    withProperty("ringmaster.initial_hosts", "127.0.0.1", () -> {
      RingmasterConfig config = Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml")
          .bindPort(9000).buildConfig();
      try (JChannel channel = Stacks.create(config)) {
        TCPPING ping = channel.getProtocolStack().findProtocol(TCPPING.class);
        assertTrue(ping.getInitialHosts().stream().map(Object::toString).anyMatch(h -> h.endsWith(":9000")),
            () -> ping.getInitialHosts().toString());
        assertFalse(ping.getInitialHosts().stream().map(Object::toString).anyMatch(h -> h.endsWith(":7800")),
            () -> ping.getInitialHosts().toString());
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  /**
   * Stacks a node can run on, but badly: without MERGE3 partitions never heal, without a failure
   * detector a crashed member keeps its keys, and the secret's AUTH without encryption sends
   * everything in clear. Each gets a WARNING when the node is built; the shipped stacks get none.
   */
  @Test
  void builder_aStackWithoutMergeFailureDetectionOrEncryption_warnsAtBuild(@TempDir Path dir) throws IOException {
    String inJvm;
    try (var in = getClass().getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      inJvm = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertTrue(inJvm.contains("<MERGE3 ") && inJvm.contains("<FD_ALL3 ") && inJvm.contains("<pbcast.GMS"), inJvm);
    Path noMerge = Files.writeString(dir.resolve("no-merge.xml"), inJvm.replaceAll("<MERGE3 [^>]*/>", ""));
    Path noFd = Files.writeString(dir.resolve("no-fd.xml"), inJvm.replaceAll("<FD_ALL3 [^>]*/>", ""));
    Path authOnly = Files.writeString(dir.resolve("auth-only.xml"), inJvm.replace("<pbcast.GMS",
        "<AUTH auth_class=\"io.ringmaster.SharedSecretAuthToken\"/>\n    <pbcast.GMS"));
    try (NodeLog log = new NodeLog(r -> r.getLevel() == Level.WARNING)) {
      Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).buildConfig();
      for (String shipped : List.of("localhost-tcp.xml", "lan-udp.xml")) {
        Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/" + shipped).buildConfig();
      }
      Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").secret("s3cret")
          .buildConfig();
      assertEquals(List.of(), log.records().stream().map(LogRecord::getMessage).toList(),
          "the shipped stacks");
      Ringmaster.builder().nodeId("a").jgroupsConfig(noMerge.toString()).buildConfig();
      Ringmaster.builder().nodeId("a").jgroupsConfig(noFd.toString()).buildConfig();
      Ringmaster.builder().nodeId("a").jgroupsConfig(authOnly.toString()).secret("s3cret").buildConfig();
      List<String> warned = log.records().stream()
          .map(r -> r.getMessage().substring(0, r.getMessage().indexOf(':')) + " " + r.getParameters()[0]).toList();
      assertEquals(List.of("jgroupsConfig {0} has no MERGE3 " + noMerge, "jgroupsConfig {0} has no failure detector"
          + " (FD_ALL3, FD_SOCK2, ...) " + noFd, "jgroupsConfig {0} checks joins with the shared secret (AUTH) but does"
          + " not encrypt (no {1}) " + authOnly), warned);
    }
  }

  /** Runs {@code body} with the system property {@code name} set to {@code value}, then puts back what it was. */
  static void withProperty(String name, String value, Runnable body) {
    String before = System.getProperty(name);
    System.setProperty(name, value);
    try {
      body.run();
    } finally {
      if (before == null) {
        System.clearProperty(name);
      } else {
        System.setProperty(name, before);
      }
    }
  }

  @Test
  void builder_aStackThatIsADirectoryOrNoPath_failsAtBuildNamingTheSetting(@TempDir Path dir) {
    IllegalArgumentException directory = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(dir.toString()).buildConfig());
    // Shown as a setting's value: escaped, and cut, where the temporary directory's path is not short ASCII.
    assertEquals("jgroupsConfig " + SettingChecks.shown(dir.toString()) + " is a directory, not a stack file",
        directory.getMessage());
    IllegalArgumentException nul = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig("stack\u0000.xml").buildConfig());
    assertTrue(nul.getMessage().startsWith("jgroupsConfig is not a path: "), nul.getMessage());
  }

  /**
   * A stack not found whose file name is that of a stack the jar ships (its bare name, or its path in
   * the repository run from elsewhere) names the resource that finds it; any other name gets no such
   * hint.
   */
  @Test
  void build_aShippedStacksBareName_namesTheResourceThatFindsIt() {
    for (String given : List.of("localhost-tcp.xml", "config/jgroups/secure-tcp.xml")) {
      String shipped = "ringmaster/jgroups/" + Path.of(given).getFileName();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(given).buildConfig());
      assertTrue(e.getMessage().startsWith("jgroupsConfig: no file or classpath resource \"" + given + "\" "),
          e.getMessage());
      assertTrue(e.getMessage().endsWith("; the jar ships a stack of that name as \"" + shipped + "\""),
          e.getMessage());
    }
    IllegalArgumentException other = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig("stacks/localhost-udp.xml").buildConfig());
    assertFalse(other.getMessage().contains("ships"), other.getMessage());
    // Its file name ".": the shipped stacks' directory, a resource when the classes are a directory.
    IllegalArgumentException dot = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig("no-such-directory/.").buildConfig());
    assertFalse(dot.getMessage().contains("ships"), dot.getMessage());
  }

  /**
   * A stack file gone between the build and the start (replaced by a deployment, say) fails the
   * start as the build would have, naming the setting and the file, not with JGroups' parser error.
   */
  @Test
  void create_aStackFileGoneSinceTheBuild_failsNamingTheSetting(@TempDir Path dir) throws IOException {
    Path stack = dir.resolve("gone.xml");
    try (var in = getClass().getClassLoader().getResourceAsStream(TestCluster.STACK)) {
      Files.copy(in, stack);
    }
    RingmasterConfig config = Ringmaster.builder().nodeId("a").jgroupsConfig(stack.toString()).buildConfig();
    Files.delete(stack);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Stacks.create(config));
    assertTrue(e.getMessage().startsWith("jgroupsConfig: no file or classpath resource "
        + SettingChecks.shown(stack.toString()) + " "), e.getMessage());
  }

  /**
   * A stack refused once JGroups has built it (here, a protocol that makes the node's address) is
   * closed before the refusal is thrown: its caller never gets the channel, so nothing else would
   * close it.
   */
  @Test
  void create_aStackRefusedOnceBuilt_closesTheChannelItBuilt() {
    RingmasterConfig config = Ringmaster.builder().nodeId("a").jgroupsConfig("makes-addresses.xml").buildConfig();
    JChannel before = MakesAddresses.lastBuilt();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Stacks.create(config));
    assertTrue(e.getMessage().startsWith("jgroupsConfig makes-addresses.xml: a protocol of the stack makes the"
        + " node's address"), e.getMessage());
    JChannel built = MakesAddresses.lastBuilt();
    assertTrue(built != null && built != before, "the stack was built");
    assertTrue(built.isClosed(), "the refused stack's channel was left open");
  }

  @Test
  void builder_aStackFileThatIsNotAJGroupsStack_failsAtBuildNamingTheSetting(@TempDir Path dir) throws IOException {
    Path notXml = Files.writeString(dir.resolve("broken.xml"), "<config><TCP bind_port=\"7800\"></config>");
    Path noConfig = Files.writeString(dir.resolve("other.xml"), "<stack><TCP/></stack>");
    Path empty = Files.writeString(dir.resolve("empty.xml"), "<config></config>");
    for (Path stack : List.of(notXml, noConfig, empty)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(stack.toString()).buildConfig());
      assertTrue(e.getMessage().startsWith("jgroupsConfig " + stack + " "), e.getMessage());
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(noConfig.toString()).buildConfig());
    assertTrue(e.getMessage().contains("<config>"), "says what is wrong: " + e.getMessage());
    assertConfigError(dir, "{\"nodeId\": \"a\", \"jgroupsConfig\": \"broken.xml\"}",
        "cannot be read as a JGroups stack", "broken.xml");
    // A failure to read is named with its type, not by its message alone (an AccessDeniedException's
    // message is the path alone); JGroups' parser reports a broken file as an IOException.
    IllegalArgumentException broken = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(notXml.toString()).buildConfig());
    assertTrue(broken.getMessage().startsWith("jgroupsConfig " + notXml + " cannot be read as a JGroups stack:"
        + " java.io.IOException: "), broken.getMessage());
    // A stack without GMS would never install a view: start() would only time out.
    Path noGms = Files.writeString(dir.resolve("no-gms.xml"),
        "<config><SHARED_LOOPBACK/><SHARED_LOOPBACK_PING/><pbcast.NAKACK2/><UNICAST3/></config>");
    IllegalArgumentException gms = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(noGms.toString()).buildConfig());
    assertEquals("jgroupsConfig " + noGms + " has no pbcast.GMS: without it a node never gets a view, so it would"
        + " never have a ring; its protocols: SHARED_LOOPBACK, SHARED_LOOPBACK_PING, pbcast.NAKACK2, UNICAST3",
        gms.getMessage());
    // A protocol JGroups does not know (GMS misspelled) is not taken for GMS.
    Path misspelled = Files.writeString(dir.resolve("gsm.xml"),
        "<config><SHARED_LOOPBACK/><SHARED_LOOPBACK_PING/><pbcast.NAKACK2/><UNICAST3/><pbcast.GSM/></config>");
    IllegalArgumentException gsm = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(misspelled.toString()).buildConfig());
    assertTrue(gsm.getMessage().startsWith("jgroupsConfig " + misspelled + " has no pbcast.GMS"), gsm.getMessage());
  }

  @Test
  void builder_initialHostsForAStackWithoutTcpping_failsAtBuildNamingBoth() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").initialHosts("127.0.0.1[7800]").jgroupsConfig(TestCluster.STACK)
            .build());
    assertTrue(e.getMessage().startsWith("initialHosts is set (\"127.0.0.1[7800]\"), but jgroupsConfig "
        + TestCluster.STACK + " has no TCPPING"), e.getMessage());
    assertTrue(e.getMessage().contains("SHARED_LOOPBACK_PING"), e.getMessage());
    assertEquals(Optional.of("127.0.0.1[7800]"), Ringmaster.builder().nodeId("a").initialHosts("127.0.0.1[7800]")
        .jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml").buildConfig().initialHosts());
  }

  @Test
  void builder_bindPortOrAddressForTheInJvmTransport_failsAtBuildNamingTheSettingAndTheStack(@TempDir Path dir)
      throws IOException {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).bindPort(7800).build());
    assertTrue(e.getMessage().startsWith("bindPort 7800 is set, but jgroupsConfig " + TestCluster.STACK
        + " has the in-JVM transport SHARED_LOOPBACK, which binds no socket"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).bindAddress("127.0.0.1").build());
    assertTrue(e.getMessage().startsWith("bindAddress \"127.0.0.1\" is set, but jgroupsConfig " + TestCluster.STACK),
        e.getMessage());
    assertConfigError(dir, "{\"nodeId\": \"a\", \"jgroupsConfig\": \"" + TestCluster.STACK
        + "\", \"bindPort\": 7800}", "bindPort 7800 is set", "SHARED_LOOPBACK");
    // A network stack takes both.
    RingmasterConfig tcp = Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml")
        .bindPort(7800).bindAddress("127.0.0.1").buildConfig();
    assertEquals(List.of(Optional.of(7800), Optional.of("127.0.0.1")), List.of(tcp.bindPort(), tcp.bindAddress()));
  }

  @Test
  void builder_weightGivingTooManyTokens_failsNamingTheCount_evenPastWhatALongHolds() {
    for (Object[] c : List.of(new Object[] {1.0e5, "weight 100000.0 with virtualNodes 1024 gives 102400000 tokens"},
        new Object[] {1.0e300, "weight 1.0E300 with virtualNodes 1024 gives about 1.024E303 tokens"},
        new Object[] {Double.MAX_VALUE, "weight 1.7976931348623157E308 with virtualNodes 1024 gives more than 2^1023"
            + " tokens"})) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).weight((double) c[0]).buildConfig());
      assertEquals(c[1] + ", more than 16777216: lower weight or virtualNodes", e.getMessage());
    }
  }

  @Test
  void builder_weightGivingNoToken_failsNamingWeightVirtualNodesAndTheSmallestWeight() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).virtualNodes(100).weight(0.004)
            .buildConfig());
    assertTrue(e.getMessage().startsWith("weight 0.004 with virtualNodes 100 gives 0 tokens"), e.getMessage());
    assertTrue(e.getMessage().contains("use weight 0 for a member that owns nothing, or at least 0.005"),
        e.getMessage());
    // Half a token rounds up to one (round half up), and weight 0 stays a member that owns nothing.
    assertEquals(0.005, Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).virtualNodes(100)
        .weight(0.005).buildConfig().weight());
    assertEquals(0.0, Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).weight(0).buildConfig()
        .weight());
  }

  @Test
  void builder_theSmallestWeightItSuggests_isAccepted_forEveryVirtualNodesCount() {
    // 0.5 / 49, rounded to a double, times 49 is just under 0.5, which rounds to no token.
    assertEquals(0, Math.round(49 * (0.5 / 49)), "the case the suggestion must get right");
    int checked = 0;
    for (int virtualNodes = 1; virtualNodes <= 5_000; virtualNodes++) {
      double suggested = SettingChecks.smallestWeight(virtualNodes);
      assertEquals(1, tokens(virtualNodes, suggested), "virtualNodes " + virtualNodes);
      assertEquals(0, tokens(virtualNodes, Math.nextDown(suggested)), "the smallest: virtualNodes " + virtualNodes);
      checked++;
    }
    assertEquals(5_000, checked);
    int virtualNodes = 49;
    double suggested = SettingChecks.smallestWeight(virtualNodes);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).virtualNodes(virtualNodes)
            .weight(Math.nextDown(suggested)).buildConfig());
    assertTrue(e.getMessage().endsWith("or at least " + suggested + " (half a token)"), e.getMessage());
    assertEquals(suggested, Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK)
        .virtualNodes(virtualNodes).weight(suggested).buildConfig().weight());
  }

  /** The tokens the ring gives a member of this weight. */
  private static int tokens(int virtualNodes, double weight) {
    return HashRing.builder().virtualNodes(virtualNodes).add(new Member("a", weight, "")).build().tokenCount();
  }

  @Test
  void builder_weightGivingTooManyTokens_failsNamingWeightAndVirtualNodes() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).weight(20_000).buildConfig());
    assertTrue(e.getMessage().contains("weight 20000.0 with virtualNodes 1024"), e.getMessage());
  }

  @Test
  void listener_executorRejects_listenerIsRemovedRatherThanSkipped() {
    List<String> seen = new CopyOnWriteArrayList<>();
    boolean[] removed = {false};
    AtomicInteger calls = new AtomicInteger();
    Executor flaky = task -> {
      if (calls.incrementAndGet() == 2) {
        throw new RejectedExecutionException("full");
      }
      task.run();
    };
    SerialDelivery<String> delivery = new SerialDelivery<>("test listener", seen::add, flaky, this,
        () -> removed[0] = true);
    delivery.submit("first");
    assertTrue(delivery.isActive());
    delivery.submit("second"); // rejected
    delivery.submit("third");
    assertEquals(List.of("first"), seen, "no callback after a gap");
    assertTrue(removed[0], "the listener was removed");
    assertFalse(delivery.isActive(), "its registration says so");
  }

  /**
   * An executor that refuses a callback, the LEAVING change included, is an ERROR (the listener
   * misses a change and is removed); once the node's pools stop (a stopped node), it is only DEBUG:
   * there is nothing left to deliver.
   */
  @Test
  void listener_executorRefuses_isAnErrorWhileTheNodeRuns_andDebugOnceItStopped() {
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("refused") || r.getMessage().contains("not run"));
         TestCluster cluster = new TestCluster("refusing-executor")) {
      AtomicInteger tasks = new AtomicInteger();
      Executor firstOnly = task -> {
        if (tasks.incrementAndGet() > 1) {
          throw new RejectedExecutionException("shut down by the application");
        }
        task.run();
      };
      Ringmaster a = cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(change -> { }, firstOnly));
      await().atMost(WAIT).until(() -> tasks.get() == 1); // the initial change
      a.close(); // its LEAVING change is refused
      assertEquals(List.of(Level.SEVERE), log.levels(), "the LEAVING change was refused");

      Ringmaster stopped = Ringmaster.builder().nodeId("stopped").jgroupsConfig(TestCluster.STACK).build();
      stopped.close();
      boolean[] removed = {false};
      new SerialDelivery<String>("test listener", x -> { }, firstOnly, stopped, () -> removed[0] = true).submit("x");
      assertEquals(List.of(Level.SEVERE, Level.FINE), log.levels());
      assertTrue(removed[0]);
    }
  }

  @Test
  void builder_durationsOutOfRange_failNamingTheSettingAndValue() {
    Ringmaster.Builder b = Ringmaster.builder();
    // Sub-millisecond: would schedule gossip every 0 ms. Beyond a day: close() and start() would
    // overflow converting to nanoseconds, after the channel connected.
    assertDuration("gossipInterval", "0 ms (PT0.0005S)", () -> b.gossipInterval(Duration.ofNanos(500_000)));
    assertDuration("startTimeout", "0 ms (PT0S)", () -> b.startTimeout(Duration.ZERO));
    assertDuration("leaveTimeout", "-1 ms", () -> b.leaveTimeout(Duration.ofMillis(-1)));
    assertDuration("leaveTimeout", "9223372036854775807 ms", () -> b.leaveTimeout(Duration.ofMillis(Long.MAX_VALUE)));
    assertDuration("gossipInterval", "86400001 ms", () -> b.gossipInterval(Duration.ofMillis(86_400_001)));
    // Beyond a long of milliseconds: named as a Duration (Duration.toMillis() would overflow).
    assertDuration("startTimeout", "PT2562047788015215H", () -> b.startTimeout(ChronoUnit.FOREVER.getDuration()));
    assertDuration("leaveTimeout", "PT-2562047788015215H", () -> b.leaveTimeout(Duration.ofSeconds(Long.MIN_VALUE)));
    b.leaveTimeout(Duration.ZERO).gossipInterval(Duration.ofMillis(1)).startTimeout(Duration.ofHours(24)); // the bounds
  }

  /**
   * A newcomer waits for the ring before its first view 5 s, or half its startTimeout if that is
   * less (docs/api.md, operations.md): a flat 5 s would fail a start with a 2 s startTimeout whose
   * peers answer slowly, rather than let it use a stand-in.
   */
  @Test
  void ringsBeforeTimeout_isFiveSeconds_orHalfTheStartTimeout() {
    assertEquals(Duration.ofSeconds(1), RingsBefore.timeout(Duration.ofSeconds(2)));
    assertEquals(Duration.ofMillis(4_999), RingsBefore.timeout(Duration.ofMillis(9_998)));
    assertEquals(Duration.ofSeconds(5), RingsBefore.timeout(Duration.ofSeconds(10)));
    assertEquals(Duration.ofSeconds(5), RingsBefore.timeout(Duration.ofSeconds(30)));
  }

  /** The numbers' ranges, at both bounds: the message names the setting, its range and the value. */
  @Test
  void builder_numbersOutOfRange_failNamingTheSettingTheRangeAndTheValue() {
    Ringmaster.Builder b = Ringmaster.builder();
    for (var bad : List.<Map.Entry<String, Executable>>of(
        Map.entry("replicas must be in 1..255: 0", () -> b.replicas(0)),
        Map.entry("replicas must be in 1..255: 256", () -> b.replicas(256)),
        Map.entry("virtualNodes must be in 1..16777216: 0", () -> b.virtualNodes(0)),
        Map.entry("virtualNodes must be in 1..16777216: 16777217", () -> b.virtualNodes(16_777_217)),
        Map.entry("weight must be finite and >= 0: NaN", () -> b.weight(Double.NaN)),
        Map.entry("weight must be finite and >= 0: Infinity", () -> b.weight(Double.POSITIVE_INFINITY)),
        Map.entry("weight must be finite and >= 0: -Infinity", () -> b.weight(Double.NEGATIVE_INFINITY)),
        Map.entry("weight must be finite and >= 0: -0.5", () -> b.weight(-0.5)),
        Map.entry("bindPort must be in 0..65535: -1", () -> b.bindPort(-1)),
        Map.entry("bindPort must be in 0..65535: 65536", () -> b.bindPort(65_536)))) {
      String message = assertThrows(IllegalArgumentException.class, bad.getValue()).getMessage();
      assertTrue(message.startsWith(bad.getKey()), bad.getKey() + " expected, got: " + message);
    }
    b.replicas(1).replicas(255).virtualNodes(1).virtualNodes(16_777_216).weight(0).bindPort(0).bindPort(65_535);
  }

  @Test
  void builder_nullValues_failAsBadSettingsNamingThem() {
    Ringmaster.Builder b = Ringmaster.builder();
    for (var setter : List.<Map.Entry<String, Executable>>of(
        Map.entry("zone must not be null; use \"\" for no zone", () -> b.zone(null)),
        Map.entry("endpoint must not be null; use \"\" for none", () -> b.endpoint(null)),
        Map.entry("applicationVersion must not be null; use \"\" for none", () -> b.applicationVersion(null)),
        Map.entry("leaveTimeout must not be null", () -> b.leaveTimeout(null)),
        Map.entry("gossipInterval must not be null", () -> b.gossipInterval(null)),
        Map.entry("startTimeout must not be null", () -> b.startTimeout(null)),
        Map.entry("nodeId must be non-empty: null", () -> b.nodeId(null)))) {
      assertEquals(setter.getKey(), assertThrows(IllegalArgumentException.class, setter.getValue()).getMessage());
    }
  }

  private static void assertDuration(String setting, String value, Executable set) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, set);
    assertTrue(e.getMessage().startsWith(setting + " must be between"), e.getMessage());
    assertTrue(e.getMessage().contains(value), e.getMessage());
  }

  @Test
  void listener_executorThrowsSomethingElse_listenerIsRemoved_andTheOthersGetEveryChange() {
    try (TestCluster cluster = new TestCluster("throwing-executor")) {
      AtomicInteger calls = new AtomicInteger();
      OwnershipRecorder good = new OwnershipRecorder(1);
      int[] listenersBefore = new int[1];
      Ringmaster a = cluster.start(cluster.builder("a"), n -> {
        listenersBefore[0] = n.ownershipListenerCount();
        n.addOwnershipListener(change -> { }, task -> {
          if (calls.incrementAndGet() > 1) {
            throw new IllegalStateException("executor shut down"); // not a RejectedExecutionException
          }
          task.run();
        });
        // After the throwing one, on an executor that is not the node's pool (whose deliveries are
        // launched first): launched second, after the executor that throws.
        n.addOwnershipListener(good, Runnable::run);
      });
      Ringmaster b = cluster.start("b");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      await().atMost(WAIT).until(() -> good.foldMatches(a.ring(), "a", 1));
      assertTrue(calls.get() > 1, "the executor was asked for the join's change");
      assertEquals(listenersBefore[0] + 1, a.ownershipListenerCount(), "the throwing listener was removed");
    }
  }

  @Test
  void builder_oversizeMetadata_failsNamingTheSetting() {
    String big = "x".repeat(300);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().nodeId(big));
    assertTrue(e.getMessage().startsWith("nodeId is 300 bytes"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().endpoint(big));
    assertTrue(e.getMessage().startsWith("endpoint is 300 bytes"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().applicationVersion(big));
    assertTrue(e.getMessage().startsWith("applicationVersion is 300 bytes"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Ringmaster.builder().applicationVersion("v\ud800"));
    assertEquals("applicationVersion has an unpaired surrogate, which has no UTF-8 form: \"v\\ud800\"", e.getMessage());
  }

  /**
   * A bindAddress refused shows its value as every other setting's error does: on one line, with
   * what does not print escaped, and cut after 120 characters with the length (literals only, so
   * that nothing is looked up in DNS).
   */
  @Test
  void builder_aBindAddressRefused_showsTheValueEscapedAndCut_asOtherSettingsDo() {
    String line = "[::1\nx]";
    IllegalArgumentException broken = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().bindAddress(line));
    assertEquals("bindAddress: cannot resolve \"[::1\\u000ax]\"", broken.getMessage());
    String huge = "[" + "1:".repeat(200) + "]";
    IllegalArgumentException cut = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().bindAddress(huge));
    assertEquals("bindAddress: cannot resolve \"" + huge.substring(0, 120) + "\"... (402 chars)", cut.getMessage());
  }

  @Test
  void builder_aRefusedValue_isNotKept_theBuilderStaysAsItWas() {
    String big = "x".repeat(300);
    Ringmaster.Builder builder = Ringmaster.builder().jgroupsConfig(TestCluster.STACK).nodeId("a").zone("z")
        .endpoint("http://a").bindAddress("127.0.0.1").initialHosts("127.0.0.1[7800]").applicationVersion("v1");
    assertThrows(IllegalArgumentException.class, () -> builder.nodeId(big));
    assertThrows(IllegalArgumentException.class, () -> builder.applicationVersion(big));
    assertThrows(IllegalArgumentException.class, () -> builder.zone(big));
    assertThrows(IllegalArgumentException.class, () -> builder.endpoint(big));
    assertThrows(IllegalArgumentException.class, () -> builder.bindAddress("[::zz]"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> builder.bindAddress("0.0.0.0"));
    assertTrue(e.getMessage().startsWith("bindAddress \"0.0.0.0\" is the wildcard address"), e.getMessage());
    builder.bindAddress("localhost"); // a name is fine, if it is this host's
    builder.bindAddress("127.0.0.1");
    assertThrows(IllegalArgumentException.class, () -> builder.initialHosts("127.0.0.1:7800"));
    builder.jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml");
    RingmasterConfig config = builder.buildConfig();
    assertEquals(List.of("a", "z", "http://a", Optional.of("127.0.0.1"), Optional.of("127.0.0.1[7800]"), "v1"),
        List.of(config.nodeId(), config.zone(), config.endpoint(), config.bindAddress(), config.initialHosts(),
            config.applicationVersion()));
  }

  /** Every ownership and membership change the node's listeners hear, in order. */
  private static List<Object> everythingHeardBy(Ringmaster node) {
    List<Object> heard = new CopyOnWriteArrayList<>();
    node.addOwnershipListener(heard::add);
    node.addMembershipListener(heard::add);
    return heard;
  }

  private static void assertConfigError(Path dir, String json, String... expected) throws IOException {
    Path file = Files.writeString(Files.createTempFile(dir, "node", ".json"), json);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Ringmaster.builder().config(file).buildConfig(), json);
    for (String s : expected) {
      assertTrue(e.getMessage().contains(s), () -> "\"" + e.getMessage() + "\" lacks " + s);
    }
  }
}
