package io.ringmaster.bench;

import io.ringmaster.Ringmaster;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.jgroups.Message;
import org.jgroups.Receiver;
import org.jgroups.View;

/**
 * Many nodes in one JVM on {@code in-jvm.xml}: (1) how long 100 members take to converge on one
 * ring checksum when they all start at once; (2) for clusters of 16 and 100 members, the time from
 * a view reaching a node (its JGroups receiver) to the node's ownership listener being called with
 * the new ring, over several joins and the leaves that follow them. A node that rejoins (its new
 * channel has no timing receiver) drops out of the second figure. Each wait for agreement gives
 * up after {@link #WAIT_NANOS}; the nodes and threads started are closed whatever happens, and the
 * exit status is 1 on a failure.
 *
 * <pre>{@code java -Xmx2g -Djava.net.preferIPv4Stack=true -Dringmaster.fd.timeout=30s -Dringmaster.fd.interval=5s \
 *   -Dringmaster.merge.min=5s -Dringmaster.merge.max=15s \
 *   -cp bench/target/benchmarks.jar io.ringmaster.bench.InJvmClusterBench}</pre>
 */
public final class InJvmClusterBench {
  private InJvmClusterBench() {}

  /** Held so the levels set in {@link #main} stay set: java.util.logging drops unreferenced loggers. */
  private static final Logger JGROUPS = Logger.getLogger("org.jgroups");
  private static final Logger RINGMASTER = Logger.getLogger("io.ringmaster");

  /** How long one wait for agreement lasts at most: two minutes. */
  private static final long WAIT_NANOS = TimeUnit.MINUTES.toNanos(2);

  public static void main(String[] args) throws Exception {
    // A hundred nodes joining and leaving at once make JGroups and the nodes log one line each
    // (thread pools growing, "joined" lines, coordinators leaving): keep the report readable.
    JGROUPS.setLevel(Level.SEVERE);
    RINGMASTER.setLevel(Level.WARNING);
    int status = 0;
    try {
      convergence(100);
      viewLatency(16, 5);
      viewLatency(100, 5);
    } catch (Exception | Error e) {
      e.printStackTrace();
      status = 1;
    }
    System.exit(status); // the JGroups threads of the in-JVM transport would keep the JVM up
  }

  /** Waits until the nodes agree on a ring of {@code size} members, or fails saying so after {@link #WAIT_NANOS}. */
  private static void awaitAgreement(List<Ringmaster> nodes, int size) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT_NANOS;
    while (!agree(nodes, size)) {
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the nodes did not agree on a ring of " + size + " members within "
            + TimeUnit.NANOSECONDS.toSeconds(WAIT_NANOS) + " s");
      }
      TimeUnit.MILLISECONDS.sleep(5);
    }
  }

  private static Ringmaster.Builder node(String cluster, String id) {
    return Ringmaster.builder().clusterName(cluster).nodeId(id).virtualNodes(256)
        .jgroupsConfig("ringmaster/jgroups/in-jvm.xml");
  }

  private static void convergence(int size) throws Exception {
    String cluster = "converge-" + ProcessHandle.current().pid();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Ringmaster> nodes = Collections.synchronizedList(new ArrayList<>());
    long start = System.nanoTime();
    try {
      startAll(pool, nodes, cluster, size);
      awaitAgreement(nodes, size);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      System.out.printf("%d members started at once converged on one checksum in %d ms%n", size, ms);
    } finally {
      closeAll(nodes, pool);
    }
  }

  /** Starts nodes n0 ... n(count - 1) on the pool, all at once; each node started is in {@code nodes}. */
  private static void startAll(ExecutorService pool, List<Ringmaster> nodes, String cluster, int count)
      throws Exception {
    List<Future<?>> starting = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String id = "n" + i;
      starting.add(pool.submit(() -> {
        Ringmaster node = node(cluster, id).build();
        nodes.add(node); // closed with the others, should its start fail
        return node.start();
      }));
    }
    for (Future<?> f : starting) {
      f.get();
    }
  }

  private static boolean agree(List<Ringmaster> nodes, int size) {
    Set<Long> sums = new HashSet<>();
    synchronized (nodes) {
      for (Ringmaster n : nodes) {
        if (n.members().size() != size) {
          return false;
        }
        sums.add(n.ring().checksum());
      }
    }
    return sums.size() == 1;
  }

  /** Joins {@code joins} extra nodes to a cluster of {@code size - 1} and times view -> listener on every node. */
  private static void viewLatency(int size, int joins) throws Exception {
    String cluster = "latency-" + size + "-" + ProcessHandle.current().pid();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Ringmaster> nodes = Collections.synchronizedList(new ArrayList<>());
    Map<String, Long> arrived = new ConcurrentHashMap<>(); // node + viewId -> nanoTime at the receiver
    List<Long> latencies = Collections.synchronizedList(new ArrayList<>());
    try {
      startAll(pool, nodes, cluster, size - 1);
      awaitAgreement(nodes, size - 1);
      timeJoins(nodes, cluster, size, joins, arrived, latencies);
    } finally {
      closeAll(nodes, pool);
    }
  }

  private static void timeJoins(List<Ringmaster> nodes, String cluster, int size, int joins, Map<String, Long> arrived,
                                List<Long> latencies) throws Exception {
    for (Ringmaster n : nodes) {
      String id = n.localMember().id();
      Receiver inner = n.channel().getReceiver();
      n.channel().setReceiver(new Receiver() {
        @Override
        public void viewAccepted(View view) {
          arrived.put(id + "/" + view.getViewId().getId(), System.nanoTime());
          inner.viewAccepted(view);
        }

        @Override
        public void receive(Message msg) {
          inner.receive(msg);
        }
      });
      n.addOwnershipListener(change -> {
        Long t = arrived.get(id + "/" + change.viewId());
        if (t != null) {
          latencies.add(System.nanoTime() - t);
        }
      });
    }
    int members = size - 1;
    for (int j = 0; j < joins; j++) {
      Ringmaster joiner = node(cluster, "joiner-" + j).build();
      nodes.add(joiner); // closed with the others, should its start fail
      joiner.start();
      members++;
      awaitAgreement(nodes, members);
      Ringmaster leaver = nodes.remove(nodes.size() - 1);
      leaver.close();
      members--;
      awaitAgreement(nodes, members);
    }
    TimeUnit.MILLISECONDS.sleep(200);
    List<Long> v = new ArrayList<>(latencies);
    Collections.sort(v);
    if (v.isEmpty()) {
      throw new IllegalStateException(size + " members: no ownership callback was timed");
    }
    System.out.printf("%d members: view at receiver -> ownership listener called: min %.2f / median %.2f / p99 %.2f / max %.2f ms over %d callbacks%n",
        size, v.get(0) / 1e6, v.get(v.size() / 2) / 1e6, v.get((int) (v.size() * 0.99)) / 1e6, v.get(v.size() - 1) / 1e6,
        v.size());
  }

  /**
   * Stops the starts still queued on {@code pool} and waits for those running, then closes every
   * node built (a node that fails to close does not keep the others open).
   */
  private static void closeAll(List<Ringmaster> nodes, ExecutorService pool) throws InterruptedException {
    pool.shutdownNow(); // a start under way is interrupted, and fails: its node is in "nodes"
    if (!pool.awaitTermination(2, TimeUnit.MINUTES)) {
      System.err.println("starts still running after 2 minutes: their nodes may stay open");
    }
    ExecutorService closer = Executors.newFixedThreadPool(8);
    List<Future<?>> closing = new ArrayList<>();
    synchronized (nodes) {
      for (Ringmaster n : nodes) {
        closing.add(closer.submit(n::close));
      }
    }
    for (Future<?> f : closing) {
      try {
        f.get();
      } catch (ExecutionException e) {
        e.getCause().printStackTrace();
      }
    }
    closer.shutdown();
  }
}
