package io.ringmaster.testing;

import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterException;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.protocols.DISCARD;
import org.jgroups.protocols.TP;
import org.jgroups.stack.ProtocolStack;

/**
 * Ringmaster nodes in this JVM, for the tests of code that reacts to ownership changes: real
 * JGroups members on the in-memory transport ({@value #STACK}: no sockets; a silent member is
 * suspected after about 3 s, and sides merge 2-6 s after a partition heals), under a cluster name
 * of their own, so that tests running at once never meet. It crashes a node, partitions the
 * cluster and heals it, and closing it closes every node it started.
 *
 * <pre>{@code
 * try (LocalCluster cluster = new LocalCluster("orders")) {
 *   OwnershipFold fold = new OwnershipFold();
 *   Ringmaster a = cluster.start(cluster.builder("a"), n -> n.addOwnershipListener(fold));
 *   Ringmaster b = cluster.start("b");
 *   cluster.awaitAgreement(Duration.ofSeconds(20));
 *   a.awaitListeners(Duration.ofSeconds(20));
 *   assertEquals(Optional.empty(), fold.disagreement(a));
 *
 *   cluster.partition(List.of(a), List.of(b)); // each side goes on alone, then merges on heal()
 *   cluster.heal();
 *   cluster.awaitAgreement(Duration.ofSeconds(30));
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

  private final String name;
  private final List<Ringmaster> started = new CopyOnWriteArrayList<>();
  private final Set<Ringmaster> crashed = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final List<CompletableFuture<Void>> crashes = new CopyOnWriteArrayList<>();

  /**
   * A cluster named after {@code testName}, with this process's id and a counter added, so that
   * two LocalClusters (in one JVM or in two) never share a name.
   *
   * @throws IllegalArgumentException if {@code testName} is null or blank
   */
  public LocalCluster(String testName) {
    if (testName == null || testName.isBlank()) {
      throw new IllegalArgumentException("testName must not be null or blank: " + testName);
    }
    this.name = testName + "-" + ProcessHandle.current().pid() + "-" + CLUSTERS.incrementAndGet();
  }

  /** The JGroups cluster name its nodes join. */
  public String name() {
    return name;
  }

  /**
   * A builder for a node of this cluster: its cluster name, the node id, and {@value #STACK}. The
   * other settings are Ringmaster's defaults; set what the test needs (a weight, a zone, replicas,
   * a shorter {@code leaveTimeout}).
   */
  public Ringmaster.Builder builder(String nodeId) {
    return Ringmaster.builder().clusterName(name).nodeId(nodeId).jgroupsConfig(STACK);
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
   * starts it. The node is closed with this cluster, even if its start fails.
   *
   * @throws RingmasterException as {@link Ringmaster#start()} does
   */
  public Ringmaster start(Ringmaster.Builder builder, Consumer<Ringmaster> beforeStart) {
    Ringmaster node = builder.build();
    started.add(node);
    beforeStart.accept(node);
    return node.start();
  }

  /** The nodes started here and neither crashed nor closed, in the order they were started. */
  public List<Ringmaster> nodes() {
    List<Ringmaster> live = new ArrayList<>();
    for (Ringmaster n : started) {
      if (!crashed.contains(n) && isRunning(n)) {
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
   * @throws RingmasterException (reason {@code AWAIT_TIMEOUT}) if they do not agree within
   *                             {@code timeout}; the message gives each node's view, checksum and
   *                             members
   * @throws IllegalStateException if no node is running
   */
  public HashRing awaitAgreement(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      List<Ringmaster> live = nodes();
      if (live.isEmpty()) {
        throw new IllegalStateException("cluster " + name + " has no running node to agree");
      }
      HashRing agreed = agreed(live);
      if (agreed != null) {
        return agreed;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new RingmasterException(RingmasterException.Reason.AWAIT_TIMEOUT, "the nodes of cluster " + name
            + " did not agree on one ring of " + live.size() + " members within " + timeout + ":\n" + describe(live));
      }
      LockSupport.parkNanos(POLL_NANOS);
      if (Thread.currentThread().isInterrupted()) {
        throw new RingmasterException(RingmasterException.Reason.INTERRUPTED, "interrupted while waiting for cluster "
            + name + " to agree");
      }
    }
  }

  /** Their common ring, if they all have it and it holds exactly them; else null. */
  private static HashRing agreed(List<Ringmaster> nodes) {
    Set<String> ids = new HashSet<>();
    for (Ringmaster n : nodes) {
      ids.add(n.localMember().id());
    }
    HashRing first = nodes.get(0).ring();
    long view = nodes.get(0).viewId();
    for (Ringmaster n : nodes) {
      HashRing ring = n.ring();
      if (!n.isInRing() || n.viewId() != view || ring.checksum() != first.checksum()) {
        return null;
      }
    }
    Set<String> members = new HashSet<>();
    for (Member m : first.members()) {
      members.add(m.id());
    }
    return members.equals(ids) ? first : null;
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
   * (about 3 s with {@value #STACK}), and it is closed in the background. It leaves no word behind,
   * as a process that died; its own listeners still get its {@code LEAVING} change as the close
   * runs, and what they send is lost. {@link #close()} waits for that close.
   *
   * @throws IllegalArgumentException if the node was not started by this cluster
   */
  public void crash(Ringmaster node) {
    requireOwn(node);
    discard(node).discardAll(true);
    crashed.add(node);
    crashes.add(onOwnThread(node::close, "crash-" + node.localMember().id()));
  }

  /**
   * Splits the running nodes into sides that cannot hear each other: each node drops every message
   * from the nodes of the other sides (a node in no side keeps hearing everyone). Each side then
   * suspects the others and goes on as a cluster of its own; {@link #heal()} ends it, and the
   * sides merge.
   *
   * @throws IllegalArgumentException if a node was not started by this cluster, or is in two sides
   */
  @SafeVarargs
  public final void partition(Collection<Ringmaster>... sides) {
    Set<Ringmaster> seen = new HashSet<>();
    for (Collection<Ringmaster> side : sides) {
      for (Ringmaster n : side) {
        requireOwn(n);
        if (!seen.add(n)) {
          throw new IllegalArgumentException("node " + n.localMember().id() + " is in two sides of the partition");
        }
      }
    }
    for (int i = 0; i < sides.length; i++) {
      List<Address> others = new ArrayList<>();
      for (int j = 0; j < sides.length; j++) {
        if (j != i) {
          sides[j].forEach(n -> others.add(n.channel().getAddress()));
        }
      }
      Address[] ignored = others.toArray(Address[]::new);
      sides[i].forEach(n -> discard(n).addIgnoredMembers(ignored));
    }
  }

  /** Ends every partition: the nodes hear each other again, and MERGE3 merges the sides (2-6 s). */
  public void heal() {
    for (Ringmaster n : nodes()) {
      DISCARD d = n.channel().getProtocolStack().findProtocol(DISCARD.class);
      if (d != null) {
        d.resetIgnoredMembers();
      }
    }
  }

  private void requireOwn(Ringmaster node) {
    Objects.requireNonNull(node, "node");
    if (!started.contains(node)) {
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
   * Runs a close on a thread of its own: a close can wait up to a node's {@code leaveTimeout} for
   * its listeners, which a shared pool (the common pool, that listeners may use too) would make
   * the closes after it, and those listeners, wait for.
   */
  private CompletableFuture<Void> onOwnThread(Runnable close, String what) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        close.run();
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
   * Closes every node it started, all at once (each leaves gracefully, its listeners told), crashed
   * ones included, and waits for them; the first failure is thrown once all are closed, the others
   * added to it as suppressed.
   */
  @Override
  public void close() {
    List<Throwable> failures = new ArrayList<>();
    List<CompletableFuture<Void>> closing = new ArrayList<>(crashes);
    for (Ringmaster n : started) {
      if (!crashed.contains(n)) {
        closing.add(onOwnThread(n::close, "close-" + n.localMember().id())); // in parallel: each leave takes a moment
      }
    }
    for (CompletableFuture<Void> c : closing) {
      try {
        c.join();
      } catch (RuntimeException | Error e) {
        failures.add(e);
      }
    }
    if (!failures.isEmpty()) {
      RuntimeException first = new IllegalStateException("closing cluster " + name + " failed", failures.get(0));
      failures.stream().skip(1).forEach(first::addSuppressed);
      throw first;
    }
  }
}
