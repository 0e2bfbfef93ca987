package io.ringmaster.testing;

import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterException;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.protocols.DISCARD;
import org.jgroups.protocols.TP;
import org.jgroups.stack.ProtocolStack;

/**
 * Ringmaster nodes in this JVM, for the tests of code that reacts to ownership changes: real
 * JGroups members on the in-memory transport ({@value #STACK}: no sockets), under a cluster name
 * of their own, so that tests running at once never meet. It crashes a node, partitions the
 * cluster and heals it, waits until nodes agree, and closing it stops every node it started.
 *
 * <p>Timings of {@value #STACK}, for a test's timeouts: a crashed or cut-off node is removed
 * 3-5 s after it falls silent (failure detection after 3 s, checked every 750 ms, then a 500 ms
 * check), and sides merge within about 10 s of {@link #heal()} (merge detection every 1.5-4.5 s,
 * collected for 4.8 s); on a loaded two-core machine, allow 30 s. The system properties
 * {@code ringmaster.fd.timeout}, {@code ringmaster.fd.interval}, {@code ringmaster.merge.min} and
 * {@code ringmaster.merge.max} change them, for the whole JVM.
 *
 * <pre>{@code
 * try (LocalCluster cluster = new LocalCluster("orders")) {
 *   OwnershipFold fold = new OwnershipFold();
 *   Ringmaster a = cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(fold));
 *   Ringmaster b = cluster.start("b");
 *   cluster.awaitSettled(Duration.ofSeconds(30));
 *   assertEquals(Optional.empty(), fold.disagreement(a));
 *
 *   cluster.partition(List.of(a), List.of(b));
 *   cluster.awaitAgreement(List.of(a), Duration.ofSeconds(30)); // each side alone
 *   cluster.awaitAgreement(List.of(b), Duration.ofSeconds(30));
 *   cluster.heal();
 *   cluster.awaitSettled(Duration.ofSeconds(30)); // merged
 *   assertEquals(Optional.empty(), fold.disagreement(a));
 *   assertEquals(List.of(), fold.violations());
 * }
 * }</pre>
 *
 * <p>Thread-safe. Not for production: nothing leaves the JVM.
 */
public final class LocalCluster implements AutoCloseable {
  /** The in-memory stack every node of a LocalCluster uses, unless its builder names another. */
  public static final String STACK = "ringmaster/jgroups/in-jvm.xml";
  private static final AtomicInteger CLUSTERS = new AtomicInteger();
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  /** Room left for the suffix that makes the name unique, under the 200 characters a cluster name may have. */
  private static final int MAX_TEST_NAME = 150;

  private final String name;
  /** The test's settings for every node, applied by {@link #builder(String)} after the kit's. */
  private final UnaryOperator<Ringmaster.Builder> settings;
  /**
   * The nodes started here that may still run: a node that has stopped is let go at the next start
   * or {@link #nodes()} (which the waits call), so that a long test of churn holds only its running
   * nodes (and what their listeners keep), not every node it ever started.
   */
  private final List<Ringmaster> started = new CopyOnWriteArrayList<>();
  /** Every node started here that the test still holds: for {@link #requireOwn}'s check alone. */
  private final Set<Ringmaster> own = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
  /** The nodes whose {@code start()} has returned or thrown: one starting is never let go. */
  private final Set<Ringmaster> startEnded = ConcurrentHashMap.newKeySet();
  /**
   * The crashed nodes among {@link #started}, each with its listener failures when it crashed: what
   * its listeners throw after that (a callback interrupted as the node stops, a fetch that its
   * silence made fail) is the crash's doing, as nothing of a process that died counts.
   */
  private final Map<Ringmaster, Long> crashed = new ConcurrentHashMap<>();
  /**
   * The crashes' stops in the background, for {@link #close()} to wait for and report: those that
   * ended well are dropped at the next start, the others kept.
   */
  private final List<CompletableFuture<Void>> crashes = new CopyOnWriteArrayList<>();
  /** Per node, the addresses its DISCARD ignores because of {@link #partition}: {@link #heal()} takes back these only. */
  private final Map<Ringmaster, Set<Address>> cut = new ConcurrentHashMap<>();
  /**
   * The listener failures of nodes let go of ({@link #forgetStopped}), as "id (stopped): count" or
   * "id (crashed): count": a store's {@code LEAVING} hand-off that threw counts on the node that left.
   */
  private final List<String> stoppedNodesFailures = new CopyOnWriteArrayList<>();
  /** Held while nodes are let go, so that a node's failures are in one of the two lists at a time. */
  private final Object forgetting = new Object();
  /** Whether {@link #awaitSettled(Duration)} returns though listeners threw. */
  private volatile boolean toleratesListenerFailures;
  private volatile boolean closed;

  /**
   * A cluster named after {@code testName} (characters other than letters, digits, '.', '_' and
   * '-' replaced by '_', at most 150 kept), with this process's id and a counter added, so that
   * two LocalClusters, in one JVM or in two, never share a name.
   *
   * @throws IllegalArgumentException if {@code testName} is null or blank
   */
  public LocalCluster(String testName) {
    this(testName, UnaryOperator.identity());
  }

  /**
   * As {@link #LocalCluster(String)}, with settings of the test's own for every node this cluster
   * builds: {@link #builder(String)} applies {@code settings} after the kit's, so that {@code
   * start(id)} and {@code startAll(ids...)} start nodes with them too ({@code b ->
   * b.replicas(2).virtualNodes(128)}, say). Leave the cluster name as it is: a node of another
   * cluster is none of this one's.
   *
   * @throws IllegalArgumentException if {@code testName} is null or blank
   * @throws NullPointerException     if {@code settings} is null
   */
  public LocalCluster(String testName, UnaryOperator<Ringmaster.Builder> settings) {
    if (testName == null || testName.isBlank()) {
      throw new IllegalArgumentException("testName must not be null or blank: " + testName);
    }
    this.settings = Objects.requireNonNull(settings, "settings");
    String safe = testName.strip().replaceAll("[^A-Za-z0-9._-]", "_");
    this.name = safe.substring(0, Math.min(safe.length(), MAX_TEST_NAME)) + "-" + ProcessHandle.current().pid()
        + "-" + CLUSTERS.incrementAndGet();
  }

  /** The JGroups cluster name its nodes join. */
  public String name() {
    return name;
  }

  /**
   * A builder for a node of this cluster: its cluster name, the node id, {@value #STACK}, gossip
   * every 300 ms (a split view after a heal ends sooner) and a 5 s {@code leaveTimeout}, then the
   * settings given to the constructor, if any; the others are Ringmaster's defaults (1,024 virtual
   * nodes, 1 replica). Set what the test needs.
   *
   * @throws NullPointerException if the constructor's settings return null
   */
  public Ringmaster.Builder builder(String nodeId) {
    Ringmaster.Builder kits = Ringmaster.builder().clusterName(name).nodeId(nodeId).jgroupsConfig(STACK)
        .gossipInterval(Duration.ofMillis(300)).leaveTimeout(Duration.ofSeconds(5));
    return Objects.requireNonNull(settings.apply(kits), "the cluster's settings returned no builder");
  }

  /** Builds and starts a node with {@link #builder(String)}'s settings. */
  public Ringmaster start(String nodeId) {
    return start(builder(nodeId));
  }

  /** Builds and starts a node; the builder should come from {@link #builder(String)}. */
  public Ringmaster start(Ringmaster.Builder builder) {
    return start(builder, node -> { });
  }

  /**
   * Builds a node, runs {@code beforeStart} on it (to add listeners that hear its first ring), and
   * starts it. The node is stopped with this cluster, even if its start fails.
   *
   * @throws RingmasterException as {@link Ringmaster#start()} does
   * @throws IllegalStateException if this cluster is closed
   */
  public Ringmaster start(Ringmaster.Builder builder, Consumer<Ringmaster> beforeStart) {
    Ringmaster node = builder.build();
    forgetStopped();
    own.add(node);
    started.add(node);
    if (closed) { // after close() took its list: it would leave this node running
      started.remove(node);
      throw new IllegalStateException("cluster " + name + " is closed");
    }
    try {
      beforeStart.accept(node);
      return node.start();
    } finally {
      startEnded.add(node);
    }
  }

  /**
   * Lets go of the nodes that have stopped (closed, or crashed, and their shutdown over: the channel
   * closed and the node's threads stopped), and of the crashes' stops that ended well (one that
   * failed is kept, for {@link #close()} to report).
   */
  private void forgetStopped() {
    crashes.removeIf(c -> c.isDone() && !c.isCompletedExceptionally());
    synchronized (forgetting) {
      for (Ringmaster n : started) {
        if (startEnded.contains(n) && shutDown(n)) {
          String failures = failuresOf(n, true);
          if (failures != null) {
            stoppedNodesFailures.add(failures);
          }
          started.remove(n);
          startEnded.remove(n);
          crashed.remove(n);
          cut.remove(n);
        }
      }
    }
  }

  /**
   * Whether the node's shutdown has ended. Package-private in {@code Ringmaster}, as closeAbruptly is,
   * and reached the same way.
   */
  private static boolean shutDown(Ringmaster node) {
    try {
      return (Boolean) ShutDown.METHOD.invoke(node);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Ringmaster.shutDown() failed: test kit and core differ", e);
    }
  }

  /** {@code Ringmaster.shutDown()}, looked up once: the waits ask for it every 20 ms. */
  private static final class ShutDown {
    static final Method METHOD;

    static {
      try {
        METHOD = Ringmaster.class.getDeclaredMethod("shutDown");
        METHOD.setAccessible(true);
      } catch (NoSuchMethodException e) {
        throw new IllegalStateException("this Ringmaster has no shutDown(): test kit and core differ", e);
      }
    }
  }

  /**
   * Builds and starts a node for each id with {@link #builder(String)}'s settings, at once: each
   * start waits for its first ring, so several nodes start in about the time of one. When no node
   * of this cluster runs yet, the first id starts alone first, so that the others join its cluster
   * rather than each found one of its own and merge later (if that start fails, the others still
   * start, together). Started together, they join in one view or in several, as their join
   * requests reach JGroups' coordinator. Returns the nodes in the order of the ids, once every
   * start has ended.
   * Nodes whose listeners must hear their first ring (to gain their ranges from their sources) are
   * started with {@link #startAll(Consumer, String...)}.
   *
   * @throws RingmasterException   the first start that failed (the others' failures suppressed),
   *                               once every start has ended; the nodes that started are still
   *                               this cluster's, and stopped with it
   * @throws IllegalStateException if this cluster is closed
   */
  public List<Ringmaster> startAll(String... nodeIds) {
    return startAll(node -> { }, nodeIds);
  }

  /**
   * As {@link #startAll(String...)}, running {@code beforeStart} on each node before its start (to
   * add the listeners that hear its first ring, as {@link #start(Ringmaster.Builder, Consumer)}
   * does), on the thread that starts it: the caller's for the first node when none runs yet, one of
   * its own for each of the others, so it may run for several nodes at once.
   *
   * @throws RingmasterException   as {@link #startAll(String...)} does; what {@code beforeStart}
   *                               throws is thrown the same way (that node not started), once
   *                               every start has ended
   * @throws IllegalStateException if this cluster is closed
   */
  public List<Ringmaster> startAll(Consumer<Ringmaster> beforeStart, String... nodeIds) {
    Objects.requireNonNull(beforeStart, "beforeStart");
    List<String> ids = List.of(nodeIds);
    List<Ringmaster> out = new ArrayList<>();
    int first = 0;
    RuntimeException failed = null;
    if (nodes().isEmpty() && !ids.isEmpty()) {
      try {
        out.add(start(builder(ids.get(0)), beforeStart));
      } catch (RuntimeException e) { // thrown once the others have started too, as their failures are
        failed = e;
      }
      first = 1;
    }
    List<CompletableFuture<Ringmaster>> starts = new ArrayList<>();
    for (String id : ids.subList(first, ids.size())) {
      CompletableFuture<Ringmaster> f = new CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          f.complete(start(builder(id), beforeStart));
        } catch (Throwable e) {
          f.completeExceptionally(e);
        }
      }, "start-" + id);
      t.setDaemon(true);
      t.start();
      starts.add(f);
    }
    for (CompletableFuture<Ringmaster> f : starts) {
      try {
        out.add(f.join());
      } catch (CompletionException e) {
        RuntimeException cause = e.getCause() instanceof RuntimeException r ? r : e;
        if (failed == null) {
          failed = cause;
        } else {
          failed.addSuppressed(cause);
        }
      }
    }
    if (failed != null) {
      throw failed;
    }
    return out;
  }

  /**
   * The nodes started here and neither crashed nor closed, in the order they were started. Nodes
   * that have stopped (closed, or crashed, their shutdown over) are let go here and at each start,
   * so that a long test holds only its running nodes and what their listeners keep.
   */
  public List<Ringmaster> nodes() {
    forgetStopped();
    List<Ringmaster> live = new ArrayList<>();
    for (Ringmaster n : started) {
      if (!crashed.containsKey(n) && isRunning(n)) {
        live.add(n);
      }
    }
    return live;
  }

  private static boolean isRunning(Ringmaster node) {
    try {
      return !node.channel().isClosed();
    } catch (IllegalStateException notStarted) {
      return false;
    }
  }

  /**
   * Waits until every node of {@link #nodes()} is in one ring: the same view id and checksum, and
   * exactly these nodes' ids as members (so after a crash or a partition's healing, until the
   * others have seen it). Returns that ring.
   *
   * @throws RingmasterException   (reason {@code AWAIT_TIMEOUT}) if they do not agree within
   *                               {@code timeout}; the message gives each node's ring and view
   * @throws IllegalStateException if no node is running
   * @throws IllegalArgumentException if {@code timeout} is negative
   * @throws InterruptedException  if the thread is interrupted while it waits
   */
  public HashRing awaitAgreement(Duration timeout) throws InterruptedException {
    return awaitAgreement(null, timeout);
  }

  /**
   * Waits until {@code side}, the nodes of one side of a partition (or any set of nodes), are in
   * one ring of exactly their ids, with one view id and checksum. Returns that ring.
   *
   * @throws RingmasterException   (reason {@code AWAIT_TIMEOUT}) if they do not within {@code timeout}
   * @throws IllegalArgumentException if {@code side} is empty, or holds a node this cluster did
   *                               not start, or one not running (crashed, closed), or if
   *                               {@code timeout} is negative
   * @throws InterruptedException  if the thread is interrupted while it waits
   */
  public HashRing awaitAgreement(Collection<Ringmaster> side, Duration timeout) throws InterruptedException {
    requireSide(side, "agree");
    return awaitAgreement(side, deadline(timeout), timeout);
  }

  /**
   * Refuses a side that cannot be waited for: empty, or with a node this cluster did not start or
   * that is not running. A null side (all running nodes) passes.
   */
  private void requireSide(Collection<Ringmaster> side, String toDo) {
    if (side != null) {
      if (side.isEmpty()) {
        throw new IllegalArgumentException("no node to " + toDo + ": the side is empty");
      }
      side.forEach(this::requireRunning);
    }
  }

  /** As {@link #awaitAgreement(Collection, Duration)}, until {@code deadline}; {@code timeout} is what a failure names. */
  private HashRing awaitAgreement(Collection<Ringmaster> side, long deadline, Duration timeout)
      throws InterruptedException {
    while (true) {
      List<Ringmaster> nodes = side == null ? nodes() : List.copyOf(side);
      if (nodes.isEmpty()) {
        throw new IllegalStateException("cluster " + name + " has no running node to agree");
      }
      HashRing agreed = agreed(nodes);
      if (agreed != null) {
        return agreed;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new RingmasterException(RingmasterException.Reason.AWAIT_TIMEOUT, "the nodes " + ids(nodes)
            + " of cluster " + name + " did not agree on one ring of exactly them within " + timeout + ":\n"
            + describe(nodes));
      }
      LockSupport.parkNanos(POLL_NANOS);
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while waiting for cluster " + name + " to agree");
      }
    }
  }

  /**
   * Waits until the running nodes agree ({@link #awaitAgreement(Duration)}) and every node's
   * listeners have handled that ring, with no view installed meanwhile: the moment to compare what
   * the listeners did with the ring ({@link OwnershipFold#disagreement(Ringmaster)}, say). Returns
   * that ring.
   *
   * <p>Fails if a listener of a node started here, running or stopped, has thrown (its
   * {@code stats().listenerFailures()}, each failure also logged at ERROR as "... threw; later
   * callbacks still run"; of a {@link #crash crashed} node, those thrown before its crash; of a
   * stopped node, those thrown before this cluster let it go, once its shutdown ended):
   * Ringmaster isolates a listener that throws, so a store whose listener throws may move none of
   * its data, and without this its test would fail later and further from the cause, or not at
   * all. {@link #tolerateListenerFailures()} turns that off, for a test that makes listeners throw
   * on purpose.
   *
   * @throws AssertionError       if a listener of a node started here has thrown, unless
   *                              {@link #tolerateListenerFailures()} was called; the message names
   *                              the nodes and their failures
   * @throws RingmasterException  (reason {@code AWAIT_TIMEOUT}) if that does not happen within
   *                              {@code timeout}
   * @throws IllegalStateException if no node is running
   * @throws IllegalArgumentException if {@code timeout} is negative
   * @throws InterruptedException if the thread is interrupted while it waits
   */
  public HashRing awaitSettled(Duration timeout) throws InterruptedException {
    return awaitSettled(null, timeout);
  }

  /**
   * As {@link #awaitSettled(Duration)}, for {@code side}, the nodes of one side of a partition
   * (or any set of nodes): they agree on one ring of exactly their ids
   * ({@link #awaitAgreement(Collection, Duration)}) and their listeners have handled it, with no
   * view installed meanwhile. Returns that ring. Fails, as it does, if a listener of a node
   * started here has thrown, on either side.
   *
   * @throws AssertionError        if a listener of a node started here has thrown, unless
   *                               {@link #tolerateListenerFailures()} was called
   * @throws RingmasterException   (reason {@code AWAIT_TIMEOUT}) if that does not happen within
   *                               {@code timeout}
   * @throws IllegalArgumentException if {@code side} is empty, or holds a node this cluster did
   *                               not start, or one not running (crashed, closed), or if
   *                               {@code timeout} is negative
   * @throws InterruptedException  if the thread is interrupted while it waits
   */
  public HashRing awaitSettled(Collection<Ringmaster> side, Duration timeout) throws InterruptedException {
    requireSide(side, "settle");
    long deadline = deadline(timeout);
    while (true) {
      HashRing ring = awaitAgreement(side, deadline, timeout);
      List<Ringmaster> nodes = side == null ? nodes() : List.copyOf(side);
      List<Long> views = nodes.stream().map(Ringmaster::viewId).toList();
      boolean idle = true;
      for (Ringmaster n : nodes) {
        idle &= n.awaitListeners(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      }
      // The same ring object and views: no view since (a view can leave the ring as it was, when it
      // only refuses a member or adds one that is no Ringmaster node, and still has callbacks).
      if (idle && agreed(nodes) == ring && nodes.stream().map(Ringmaster::viewId).toList().equals(views)) {
        requireNoListenerFailures();
        return ring;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new RingmasterException(RingmasterException.Reason.AWAIT_TIMEOUT, "the nodes " + ids(nodes)
            + " of cluster " + name + " did not settle within " + timeout
            + (idle ? ": their ring kept changing" : ": listeners still busy") + ":\n" + describe(nodes));
      }
    }
  }

  /**
   * Lets {@link #awaitSettled(Duration)} return though listeners have thrown: for a test that makes
   * a listener throw on purpose (to see that the others still run, say). For the whole life of this
   * cluster.
   */
  public void tolerateListenerFailures() {
    toleratesListenerFailures = true;
  }

  /** Throws if a listener of a node started here has thrown, unless failures are tolerated. */
  private void requireNoListenerFailures() {
    if (toleratesListenerFailures) {
      return;
    }
    List<String> failures;
    synchronized (forgetting) {
      failures = new ArrayList<>(stoppedNodesFailures);
      for (Ringmaster n : started) {
        String ofNode = failuresOf(n, false);
        if (ofNode != null) {
          failures.add(ofNode);
        }
      }
    }
    if (!failures.isEmpty()) {
      throw new AssertionError("listeners of nodes of cluster " + name + " threw (node: callbacks that threw) "
          + failures + "; each is logged at ERROR as \"... threw; later callbacks still run\". A listener"
          + " that throws is isolated, and may have moved none of its data: call tolerateListenerFailures()"
          + " if the test makes listeners throw on purpose");
    }
  }

  /**
   * The callbacks of the node's listeners that threw (for a crashed node, those before its crash),
   * as "id: count", "id (crashed): count" or, for a node being let go, "id (stopped): count"; null
   * if none threw.
   */
  private String failuresOf(Ringmaster node, boolean lettingGo) {
    Long beforeCrash = crashed.get(node);
    long count = beforeCrash != null ? beforeCrash : node.stats().listenerFailures();
    if (count == 0) {
      return null;
    }
    String state = beforeCrash != null ? " (crashed)" : lettingGo ? " (stopped)" : "";
    return node.localMember().id() + state + ": " + count;
  }

  /**
   * The {@link System#nanoTime()} at which a wait of {@code timeout} from now ends. Capped at about
   * 100 years, as {@code Ringmaster}'s waits are: {@code Duration.toNanos()} overflows past 292
   * years, and the longest timeout is a wait as long as it takes. Refuses a negative timeout, as
   * they do.
   */
  private static long deadline(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must not be negative: " + timeout);
    }
    return System.nanoTime() + Math.min(timeout.toSeconds(), 3_000_000_000L) * 1_000_000_000L
        + timeout.toNanosPart();
  }

  /**
   * Their common ring, if they all have it and it holds exactly them; else null. Each node's view
   * id, ring and place in it are read at once ({@link Ringmaster#ringState()}): read one by one, a
   * view between the reads could pair a node's new view with its old place in the ring.
   */
  private static HashRing agreed(List<Ringmaster> nodes) {
    Ringmaster.RingState first = nodes.get(0).ringState();
    for (Ringmaster n : nodes) {
      Ringmaster.RingState s = n == nodes.get(0) ? first : n.ringState();
      if (!s.inRing() || s.viewId() != first.viewId() || s.ring().checksum() != first.ring().checksum()) {
        return null;
      }
    }
    Set<String> members = new HashSet<>();
    for (Member m : first.ring().members()) {
      members.add(m.id());
    }
    return members.equals(new HashSet<>(ids(nodes))) ? first.ring() : null;
  }

  private static List<String> ids(Collection<Ringmaster> nodes) {
    return nodes.stream().map(n -> n.localMember().id()).toList();
  }

  /**
   * Each node's ring (view id, checksum, whether the node is in it, members) and its channel's
   * JGroups view, one line each: what a failed wait shows.
   */
  public static String describe(Collection<Ringmaster> nodes) {
    StringBuilder out = new StringBuilder();
    for (Ringmaster n : nodes) {
      HashRing ring = n.ring();
      String channelView;
      try {
        channelView = String.valueOf(n.channel().getView());
      } catch (IllegalStateException notStarted) {
        channelView = "none";
      }
      out.append("  ").append(n.localMember().id()).append(": ring view ").append(n.viewId())
          .append(", checksum ").append(Long.toHexString(ring.checksum()))
          .append(", in ring ").append(n.isInRing())
          .append(", members ").append(ring.members().stream().map(Member::id).toList())
          .append("; channel view ").append(channelView).append('\n');
    }
    return out.toString();
  }

  /**
   * Crashes a node: from now on it hears and says nothing, so the others suspect it and remove it
   * (3-5 s with {@value #STACK}), and it stops in the background without a graceful leave: its
   * listeners hear nothing more (no {@code LEAVING} change), as in a process that died, and what
   * they throw from now on (a callback under way, interrupted as the node stops) does not fail
   * {@link #awaitSettled(Duration)}. {@link #close()} waits for it to stop. A node crashed already,
   * or stopped and let go (see {@link #nodes()}): nothing more.
   *
   * @throws IllegalArgumentException if the node was not started by this cluster
   * @throws IllegalStateException    if its start failed before it built a stack (nothing to crash)
   */
  public synchronized void crash(Ringmaster node) {
    requireOwn(node);
    if (crashed.containsKey(node) || !started.contains(node)) {
      return; // crashed already, or stopped and let go
    }
    long failures = node.stats().listenerFailures(); // before it falls silent: a fetch failing after is the crash's
    discard(node).discardAll(true); // first: a node whose DISCARD could not be put in is not marked crashed
    crashed.put(node, failures);
    crashes.add(onOwnThread(() -> stopAbruptly(node), "crash-" + node.localMember().id()));
  }

  /**
   * Stops a node as {@code Ringmaster.closeAbruptly()} does: no LEAVING change, no wait for its
   * listeners. That method is package-private, since applications have no use for a crash; the
   * kit reaches it by reflection, which nothing stops within one library.
   */
  private static void stopAbruptly(Ringmaster node) {
    try {
      Method abrupt = Ringmaster.class.getDeclaredMethod("closeAbruptly");
      abrupt.setAccessible(true);
      abrupt.invoke(node);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("this Ringmaster has no closeAbruptly(): test kit and core differ", e);
    }
  }

  /**
   * Splits the running nodes into sides that cannot hear each other: each node drops every
   * message from the nodes of the other sides. Running nodes in no side listed form one more side
   * together. Each side then finds the others silent and goes on as a cluster of its own (await
   * it with {@link #awaitAgreement(Collection, Duration)}); {@link #heal()} ends it. The sides
   * are fixed by the nodes' addresses now: a node that rejoins meanwhile (a new address) is heard
   * again by all, and a node started meanwhile is in no side: it hears every node and every node
   * hears it, so it joins the side whose members answer it first (and is refused there if that side
   * holds its id), while the other sides still hear it.
   *
   * @throws IllegalArgumentException if a node was not started by this cluster, is not running
   *                                  (crashed, closed), or is in two sides; or there are fewer
   *                                  than two sides
   */
  @SafeVarargs
  public final void partition(Collection<Ringmaster>... sides) {
    Set<Ringmaster> listed = new HashSet<>();
    for (Collection<Ringmaster> side : sides) {
      for (Ringmaster n : side) {
        requireRunning(n);
        if (!listed.add(n)) {
          throw new IllegalArgumentException("node " + n.localMember().id() + " is in two sides of the partition");
        }
      }
    }
    List<Collection<Ringmaster>> all = new ArrayList<>(List.of(sides));
    List<Ringmaster> rest = nodes().stream().filter(n -> !listed.contains(n)).toList();
    if (!rest.isEmpty()) {
      all.add(rest);
    }
    long withNodes = all.stream().filter(side -> !side.isEmpty()).count();
    if (withNodes < 2) {
      throw new IllegalArgumentException("a partition needs two sides with nodes, here " + withNodes
          + " (running nodes in no side listed form one)");
    }
    for (int i = 0; i < all.size(); i++) {
      List<Address> others = new ArrayList<>();
      for (int j = 0; j < all.size(); j++) {
        if (j != i) {
          all.get(j).forEach(n -> others.add(n.channel().getAddress()));
        }
      }
      for (Ringmaster n : all.get(i)) {
        cut.computeIfAbsent(n, k -> ConcurrentHashMap.newKeySet()).addAll(others);
        discard(n).addIgnoredMembers(others.toArray(Address[]::new));
      }
    }
  }

  /**
   * Ends every partition: the nodes hear each other again, and the sides merge (within about
   * 10 s). It takes back the addresses {@link #partition} told each node's {@link #discard} to
   * ignore (one a test told it to ignore as well included); others a test added stay ignored.
   */
  public void heal() {
    for (Map.Entry<Ringmaster, Set<Address>> e : cut.entrySet()) {
      DISCARD d = isRunning(e.getKey()) ? e.getKey().channel().getProtocolStack().findProtocol(DISCARD.class) : null;
      if (d != null) {
        e.getValue().forEach(d::removeIgnoredMember);
      }
    }
    cut.clear();
  }

  private void requireRunning(Ringmaster node) {
    requireOwn(node);
    if (!nodes().contains(node)) {
      throw new IllegalArgumentException("node " + node.localMember().id() + " is not running (crashed, closed, or"
          + " not started)");
    }
  }

  private void requireOwn(Ringmaster node) {
    Objects.requireNonNull(node, "node");
    if (!own.contains(node)) {
      throw new IllegalArgumentException("node " + node.localMember().id() + " was not started by cluster " + name);
    }
  }

  /**
   * The node's JGroups DISCARD protocol, put above its transport on first use: for tests that drop
   * messages their own way (those of one member, a share of them, everything sent or received).
   * {@link #partition} and {@link #crash} use it.
   *
   * @throws IllegalStateException if the node is not started, or the protocol cannot be added
   */
  public static DISCARD discard(Ringmaster node) {
    JChannel ch = node.channel();
    ProtocolStack stack = ch.getProtocolStack();
    synchronized (stack) {
      DISCARD d = stack.findProtocol(DISCARD.class);
      if (d == null) {
        d = new DISCARD();
        d.setAddress(ch.getAddress());
        try {
          stack.insertProtocol(d, ProtocolStack.Position.ABOVE, TP.class);
          d.init();
          d.start();
        } catch (Exception e) {
          throw new IllegalStateException("cannot add DISCARD to node " + node.localMember().id() + "'s stack", e);
        }
      }
      return d;
    }
  }

  /**
   * Runs a stop on a thread of its own: a graceful close can wait up to a node's
   * {@code leaveTimeout} for its listeners, which a shared pool (the common pool, that listeners
   * may use too) would make the stops after it, and those listeners, wait for.
   */
  private CompletableFuture<Void> onOwnThread(Runnable stop, String what) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        stop.run();
        done.complete(null);
      } catch (RuntimeException | Error e) {
        done.completeExceptionally(e);
      }
    }, "local-cluster-" + name + "-" + what);
    t.setDaemon(true);
    t.start();
    return done;
  }

  /**
   * Stops every node it started that is still running, all at once and without a graceful leave
   * (no {@code LEAVING} change, no hand-off: a test that checks one closes the node itself first),
   * and waits for them and for the crashes under way. If a stop failed, it throws, once all have
   * stopped, an {@link IllegalStateException} naming the cluster, whose cause is the first failure
   * (what the node's stop threw) and in which the others are suppressed. A node started after this
   * is refused.
   */
  @Override
  public void close() {
    closed = true;
    List<Throwable> failures = new ArrayList<>();
    List<CompletableFuture<Void>> stopping = new ArrayList<>(crashes);
    for (Ringmaster n : started) {
      if (!crashed.containsKey(n)) {
        stopping.add(onOwnThread(() -> stopAbruptly(n), "stop-" + n.localMember().id()));
      }
    }
    for (CompletableFuture<Void> c : stopping) {
      try {
        c.join();
      } catch (CompletionException e) { // what the stop threw, not join()'s wrapper of it
        failures.add(e.getCause() == null ? e : e.getCause());
      } catch (RuntimeException | Error e) {
        failures.add(e);
      }
    }
    if (!failures.isEmpty()) {
      RuntimeException first = new IllegalStateException("stopping cluster " + name + " failed", failures.get(0));
      failures.stream().skip(1).forEach(first::addSuppressed);
      throw first;
    }
  }
}
