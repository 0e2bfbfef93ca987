package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.LocalCluster;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.awaitility.core.ConditionTimeoutException;
import org.jgroups.Address;
import org.jgroups.protocols.DISCARD;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.ViewHandler;

/**
 * Real JGroups nodes in this JVM on the in-memory stack, each test with its own cluster name.
 * Closing it closes every node it started, crashed ones included.
 */
final class TestCluster implements AutoCloseable {
  static final String STACK = "ringmaster/jgroups/in-jvm.xml";
  private static final AtomicInteger CLUSTERS = new AtomicInteger();

  final String name;
  private final List<Ringmaster> started = new CopyOnWriteArrayList<>();
  private final List<CompletableFuture<Void>> crashes = new CopyOnWriteArrayList<>();

  TestCluster(String testName) {
    this.name = testName + "-" + ProcessHandle.current().pid() + "-" + CLUSTERS.incrementAndGet();
  }

  Ringmaster.Builder builder(String id) {
    return Ringmaster.builder().clusterName(name).nodeId(id).jgroupsConfig(STACK).virtualNodes(128)
        .gossipInterval(Duration.ofMillis(300)).leaveTimeout(Duration.ofSeconds(5));
  }

  Ringmaster start(String id) {
    return start(builder(id));
  }

  Ringmaster start(Ringmaster.Builder builder) {
    return start(builder, node -> {});
  }

  /** Starts a node, running {@code beforeStart} (to add listeners) before it joins. */
  Ringmaster start(Ringmaster.Builder builder, Consumer<Ringmaster> beforeStart) {
    Ringmaster node = builder.build();
    started.add(node);
    beforeStart.accept(node);
    return node.start();
  }

  /** Starts a node with an {@link OwnershipRecorder} listening from before it joins. */
  Ringmaster startRecorded(Ringmaster.Builder builder, Map<Ringmaster, OwnershipRecorder> recorders) {
    OwnershipRecorder recorder = new OwnershipRecorder(recorders.size());
    Ringmaster node = start(builder, n -> {
      n.addOwnershipListener(recorder);
      n.addMembershipListener(recorder);
    });
    synchronized (recorders) {
      recorders.put(node, recorder);
    }
    return node;
  }

  /** Cuts the node off (it hears and says nothing), then closes it without a graceful leave. */
  void crash(Ringmaster node) {
    discard(node).discardAll(true);
    crashes.add(CompletableFuture.runAsync(node::closeAbruptly, TestThreads.ON_OWN_THREAD));
  }

  /** The node's DISCARD protocol, inserted above the transport on first use. */
  static DISCARD discard(Ringmaster node) {
    return LocalCluster.discard(node);
  }

  /**
   * Starts a thread, "closer", that closes {@code node}; {@code flagAfterClose} gets whether that
   * thread's interrupt flag was set when close() returned.
   */
  static Thread closeOnAThreadOfItsOwn(Ringmaster node, CompletableFuture<Boolean> flagAfterClose) {
    Thread closer = new Thread(() -> {
      node.close();
      flagAfterClose.complete(Thread.currentThread().isInterrupted());
    }, "closer");
    closer.start();
    return closer;
  }

  /** The live threads of the node with this id. */
  static List<String> nodeThreads(String id) {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
        .filter(name -> name.startsWith("ringmaster-") && name.contains("-" + id + "-")).toList();
  }

  /** The node's group membership protocol: tests install views through it, as JGroups does. */
  static GMS gms(Ringmaster node) {
    return node.channel().getProtocolStack().findProtocol(GMS.class);
  }

  /**
   * Makes the coordinator {@code node} hold the join and leave requests that reach it, until the
   * returned handler's {@code processing(false)}: for tests that put several requests into one
   * view. First waits until the handler has ended the run it may still be in (the view of a join
   * just made, say): a run under way would take the requests that come meanwhile, hold or not.
   */
  static ViewHandler<?> holdRequests(Ringmaster node) {
    ViewHandler<?> requests = gms(node).getViewHandler();
    requests.waitUntilComplete(30_000);
    requests.processing(true);
    return requests;
  }

  /**
   * The in-JVM stack written to {@code dir}, with joiners that never give up asking to join
   * (JGroups' default is ten requests): for tests that hold the coordinator's requests.
   */
  static String patientJoiners(Path dir) throws IOException {
    return patientJoiners(dir, STACK);
  }

  /** As {@link #patientJoiners(Path)}, for the stack at {@code stack} on the class path. */
  static String patientJoiners(Path dir, String stack) throws IOException {
    try (InputStream in = TestCluster.class.getClassLoader().getResourceAsStream(stack)) {
      String xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(xml.contains("<pbcast.GMS "), stack + " has GMS");
      return Files.writeString(dir.resolve("patient-joiners.xml"),
          xml.replace("<pbcast.GMS ", "<pbcast.GMS max_join_attempts=\"0\" ")).toString();
    }
  }

  /** Splits the nodes into two sides that cannot hear each other. */
  static void partition(List<Ringmaster> sideA, List<Ringmaster> sideB) {
    Address[] a = addresses(sideA);
    Address[] b = addresses(sideB);
    sideA.forEach(n -> discard(n).addIgnoredMembers(b));
    sideB.forEach(n -> discard(n).addIgnoredMembers(a));
  }

  private static Address[] addresses(List<Ringmaster> nodes) {
    return nodes.stream().map(n -> n.channel().getAddress()).toArray(Address[]::new);
  }

  static void heal(List<Ringmaster> nodes) {
    nodes.forEach(n -> discard(n).resetIgnoredMembers());
  }

  /** Waits until every node has the same view of {@code size} members and the same ring. */
  static void awaitAgreement(List<Ringmaster> nodes, int size, Duration timeout) {
    try {
      await().atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> agree(nodes, size));
    } catch (ConditionTimeoutException e) {
      throw new AssertionError("no agreement on a ring of " + size + " within " + timeout + ":\n"
          + describe(nodes), e);
    }
  }

  /** Each node's view (JGroups' and the ring's), ring members and checksum: what a timeout shows. */
  static String describe(List<Ringmaster> nodes) {
    return LocalCluster.describe(nodes);
  }

  static boolean agree(List<Ringmaster> nodes, int size) {
    Set<Long> views = new HashSet<>();
    Set<Long> checksums = new HashSet<>();
    for (Ringmaster n : nodes) {
      HashRing ring = n.ring();
      if (ring.members().size() != size) {
        return false;
      }
      views.add(n.viewId());
      checksums.add(ring.checksum());
    }
    return views.size() == 1 && checksums.size() == 1;
  }

  /**
   * Asserts that {@code change} gains something, and that at 200 random positions of each gained
   * range its sources are the owners there in {@code before}: where the data is.
   */
  static void assertGainsFrom(HashRing before, int replicas, OwnershipChange change) {
    SplittableRandom random = new SplittableRandom(7);
    assertFalse(change.gained().isEmpty(), "gains something");
    for (RingDiff.Gained g : change.gained()) {
      long span = g.range().end() - g.range().start(); // modulo 2^64: the range is (start, end]
      for (int k = 0; k < 200; k++) {
        long p = span == 0 ? random.nextLong()
            : g.range().start() + 1 + Long.remainderUnsigned(random.nextLong(), span);
        assertTrue(g.range().contains(p));
        assertEquals(before.ownersOfPosition(p, replicas), g.sources(),
            () -> "the sources of " + g.range() + " at " + Long.toHexString(p));
      }
    }
  }

  /**
   * The results of futures that run in parallel, once every one has ended: the first failure (the
   * others suppressed) is thrown only then, so that none still starts a node while the cluster
   * closes.
   */
  static <T> List<T> joinAll(List<CompletableFuture<T>> futures) {
    List<Throwable> failures = new ArrayList<>();
    List<T> results = awaitEach(futures, failures);
    throwFirst(failures, "a parallel task failed");
    return results;
  }

  /** Waits for every future, whatever the others did: the results, and the failures added to {@code failures}. */
  private static <T> List<T> awaitEach(List<CompletableFuture<T>> futures, List<Throwable> failures) {
    List<T> results = new ArrayList<>();
    for (CompletableFuture<T> f : futures) {
      f.handle((result, failed) -> failed == null ? results.add(result) : failures.add(failed)).join();
    }
    return results;
  }

  /** Throws the first failure, if any, with the others suppressed. */
  private static void throwFirst(List<Throwable> failures, String what) {
    if (!failures.isEmpty()) {
      RuntimeException first = new IllegalStateException(what, failures.get(0));
      failures.subList(1, failures.size()).forEach(first::addSuppressed);
      throw first;
    }
  }

  /**
   * Waits for the crashes under way, then stops every node started, in parallel; a failure of any
   * of these (the first, with the others suppressed) is thrown only once every node is stopped.
   */
  @Override
  public void close() {
    List<Throwable> failures = new ArrayList<>();
    awaitEach(List.copyOf(crashes), failures);
    awaitEach(started.stream().map(n -> CompletableFuture.runAsync(n::closeAbruptly, TestThreads.ON_OWN_THREAD)).toList(),
        failures);
    throwFirst(failures, "stopping the test cluster failed");
  }

  /**
   * A callback deaf to close()'s interrupt: waits for {@code release}, but at most {@code atMost}
   * (so that a failed test lets it go too), counting the interrupts it ignores.
   */
  static void awaitIgnoringInterrupts(CountDownLatch release, AtomicInteger interrupts, Duration atMost) {
    long end = System.nanoTime() + atMost.toNanos();
    while (release.getCount() > 0 && System.nanoTime() < end) {
      try {
        release.await(end - System.nanoTime(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException ignored) {
        interrupts.incrementAndGet(); // and waits on
      }
    }
  }

  /**
   * Whether {@code t} waits for a monitor in a method named {@code method} of {@link Ringmaster}
   * itself, the top frame: not for another lock, say a class being loaded, on its way there.
   */
  static boolean blockedIn(Thread t, String method) {
    // Blocked before and after the stack is taken: the stack shows where it is blocked.
    boolean blocked = t.getState() == Thread.State.BLOCKED;
    StackTraceElement[] stack = t.getStackTrace();
    return blocked && stack.length > 0 && stack[0].getClassName().equals(Ringmaster.class.getName())
        && stack[0].getMethodName().equals(method) && t.getState() == Thread.State.BLOCKED;
  }
}
