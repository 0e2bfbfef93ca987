package io.ringmaster;

import static io.ringmaster.ShardActorHost.SEQ;
import static io.ringmaster.ShardActorHost.SHARDS;
import static io.ringmaster.ShardActorHost.SHARD_KEYS;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ShardActorHost.Audit;
import io.ringmaster.ShardActorHost.Loss;
import io.ringmaster.ring.HashRing;
import io.ringmaster.testing.LocalCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A sharded actor host built on the public API alone ({@link ShardActorHost}): 128 shards with one
 * replica, each an actor (a counter and the operations it applied) active on its primary owner
 * only, moved with its state when that owner changes, through a join, a graceful leave, a crash
 * during a hand-off, a partition healed and two nodes started at once, while clients send
 * increments through any node. After each change has settled, every shard is active on exactly
 * its primary owner, no acknowledged increment is lost (but those of the shards a crash took,
 * which the survivors report), and, outside a partition, no shard was ever active on two nodes at
 * once.
 */
final class ShardedActorsTrialTest {
  static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  void join_fourthNode_shardsMoveWithTheirState() throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors join", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      hosts.startAll(cluster, "a", "b", "c");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      try (Clients clients = new Clients(hosts, hosts.running(), 2)) {
        clients.awaitAcked(50);
        hosts.start(cluster, "d");
        cluster.awaitSettled(WAIT);
        clients.awaitAcked(clients.acked() + 50);
      }
      HashRing ring = hosts.awaitPlaced(cluster);
      assertEquals(List.of(), audit.doubles(), "shards active on two nodes at once");
      assertTrue(ring.contains("d"));
      assertFalse(hosts.host("d").activeShards().isEmpty(), "d took over no shard");
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "a join loses nothing");
    }
  }

  @Test
  void leave_fourToThree_leaversShardsMoveWithTheirState() throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors leave", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      hosts.startAll(cluster, "a", "b", "c", "d");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      ShardActorHost d = hosts.host("d");
      Set<String> held = d.activeShards();
      assertFalse(held.isEmpty());
      try (Clients clients = new Clients(hosts, hosts.running(), 2)) {
        clients.awaitAcked(50);
        clients.through(List.of(hosts.host("a"), hosts.host("b"), hosts.host("c")));
        hosts.close(d);
        cluster.awaitSettled(WAIT);
        clients.awaitAcked(clients.acked() + 50);
      }
      assertTrue(d.node.leftIdle(), "d's hand-off did not end within leaveTimeout");
      HashRing ring = hosts.awaitPlaced(cluster);
      assertEquals(List.of(), audit.doubles(), "shards active on two nodes at once");
      assertFalse(ring.contains("d"));
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "a graceful leave loses nothing");
    }
  }

  /**
   * c crashes while it owes d the shards d gained from it: d reports those lost when c leaves the
   * ring (no ownership change tells d, which owns them already), a and b the rest of c's.
   */
  @Test
  void crash_ofAnOwnerDuringAHandOff_itsShardsAreReportedLostAndRestartEmpty()
      throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors crash", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      hosts.startAll(cluster, "a", "b", "c");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      ShardActorHost c = hosts.host("c");
      Set<String> heldByC;
      Set<String> owedToD;
      try (Clients clients = new Clients(hosts, hosts.running(), 2)) {
        clients.awaitAcked(50);
        clients.pause();
        heldByC = c.activeShards();
        long beforeCrash = clients.acked();
        assertTrue(hosts.appliedCount(heldByC) > 0, "nothing to lose: the test proves nothing");
        c.holdHandOffs();
        ShardActorHost d = hosts.start(cluster, "d");
        await().atMost(WAIT).until(() -> {
          Set<String> awaited = d.inFlight();
          return !awaited.isEmpty() && heldByC.containsAll(awaited) && awaited.equals(d.inFlight());
        });
        owedToD = d.inFlight();
        hosts.crash(cluster, c);
        clients.resume(hosts.running());
        cluster.awaitSettled(WAIT);
        clients.awaitAcked(beforeCrash + 50);
      }
      hosts.awaitPlaced(cluster);
      assertEquals(List.of(), audit.doubles(), "shards active on two nodes at once");
      List<Loss> losses = hosts.losses();
      assertEquals(heldByC, losses.stream().map(Loss::shard).collect(Collectors.toCollection(TreeSet::new)),
          "the shards reported lost are those c held: " + losses);
      assertEquals(heldByC.size(), losses.size(), "each lost shard reported once: " + losses);
      for (Loss loss : losses) {
        assertEquals(List.of("c"), loss.formerOwners(), loss.toString());
        assertEquals(owedToD.contains(loss.shard()) ? Loss.Cause.SOURCE_LEFT : Loss.Cause.NO_SOURCE_LEFT,
            loss.cause(), loss.toString());
      }
      assertTrue(losses.stream().anyMatch(loss -> loss.cause() == Loss.Cause.NO_SOURCE_LEFT),
          "c kept no shard for a and b to find lost: " + losses);
      hosts.assertNoAckedLost(heldByC, losses.stream().mapToLong(Loss::seq).max().orElseThrow());
    }
  }

  @Test
  void partition_healed_divergentCopiesAreMergedByUnion() throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors partition", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      List<ShardActorHost> started = hosts.startAll(cluster, "a", "b", "c");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      ShardActorHost a = started.get(0);
      ShardActorHost b = started.get(1);
      ShardActorHost c = started.get(2);
      Set<String> heldByC = c.activeShards();
      try (Clients left = new Clients(hosts, List.of(a, b), 1);
          Clients right = new Clients(hosts, List.of(c), 1)) {
        left.awaitAcked(30);
        right.awaitAcked(30);
        audit.allowDoubles(true);
        cluster.partition(List.of(a.node, b.node), List.of(c.node));
        cluster.awaitSettled(List.of(a.node, b.node), WAIT);
        cluster.awaitSettled(List.of(c.node), WAIT);
        left.awaitAcked(left.acked() + 30);
        right.awaitAcked(right.acked() + 30);
        // each side runs every shard: a and b started c's shards empty, c started theirs empty
        assertEquals(heldByC, lostShards(a, b), "a and b see c's shards as lost during the split");
        assertEquals(SHARDS - heldByC.size(), lostShards(c).size());
        cluster.heal();
        cluster.awaitSettled(WAIT);
        left.awaitAcked(left.acked() + 30);
        right.awaitAcked(right.acked() + 30);
      }
      hosts.awaitPlaced(cluster);
      audit.allowDoubles(false);
      assertEquals(List.of(), audit.doubles(), "shards active on two nodes at once outside the split");
      assertTrue(a.unions() + b.unions() + c.unions() > 0, "no two copies were reconciled");
      hosts.assertNoAckedLost(Set.of(), 0);
    }
  }

  /**
   * c and d start at once; JGroups admits them in one view or in two, as their join requests reach
   * its coordinator, and the shards move either way.
   */
  @Test
  void join_twoNodesAtOnce_shardsMoveWithTheirState() throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors two joins", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      hosts.startAll(cluster, "a", "b");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      try (Clients clients = new Clients(hosts, hosts.running(), 2)) {
        clients.awaitAcked(50);
        hosts.startAll(cluster, "c", "d");
        cluster.awaitSettled(WAIT);
        clients.awaitAcked(clients.acked() + 50);
      }
      HashRing ring = hosts.awaitPlaced(cluster);
      assertEquals(List.of(), audit.doubles(), "shards active on two nodes at once");
      assertEquals(4, ring.members().size());
      assertFalse(hosts.host("c").activeShards().isEmpty(), "c took over no shard");
      assertFalse(hosts.host("d").activeShards().isEmpty(), "d took over no shard");
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "joins lose nothing");
    }
  }

  private static Set<String> lostShards(ShardActorHost... hosts) {
    Set<String> shards = new TreeSet<>();
    for (ShardActorHost host : hosts) {
      host.losses().forEach(loss -> shards.add(loss.shard()));
    }
    return shards;
  }

  /** The test's actor hosts, one per node, closed with it. */
  static final class Hosts implements AutoCloseable {
    final Audit audit;
    final Map<String, ShardActorHost> all = new ConcurrentHashMap<>();
    final List<Clients.Ack> acks = new CopyOnWriteArrayList<>();

    Hosts(Audit audit) {
      this.audit = audit;
    }

    ShardActorHost start(LocalCluster cluster, String id) {
      return startAll(cluster, id).get(0);
    }

    List<ShardActorHost> startAll(LocalCluster cluster, String... ids) {
      List<Ringmaster> nodes = cluster.startAll(node -> {
        ShardActorHost host = new ShardActorHost(node, audit);
        all.put(node.localMember().id(), host);
        node.addOwnershipListener(host);
        node.addMembershipListener(host);
      }, ids);
      List<ShardActorHost> started = new ArrayList<>();
      for (Ringmaster node : nodes) {
        ShardActorHost host = all.get(node.localMember().id());
        host.openChannel();
        started.add(host);
      }
      return started;
    }

    ShardActorHost host(String id) {
      return all.get(id);
    }

    List<ShardActorHost> running() {
      return all.values().stream().filter(h -> !h.crashed && !h.node.isLeaving()).toList();
    }

    void close(ShardActorHost host) {
      host.node.close();
    }

    void crash(LocalCluster cluster, ShardActorHost host) {
      host.crash();
      cluster.crash(host.node);
    }

    /** Waits until every shard is active on exactly its primary owner, and nothing is in flight. */
    HashRing awaitPlaced(LocalCluster cluster) throws InterruptedException {
      HashRing ring = cluster.awaitAgreement(WAIT);
      await().atMost(WAIT).untilAsserted(() -> {
        for (ShardActorHost host : running()) {
          assertEquals(Set.of(), host.inFlight(), host.id + " still moves shards");
        }
        for (String shard : SHARD_KEYS) {
          Set<String> holders = new TreeSet<>();
          for (ShardActorHost host : running()) {
            if (host.activeShards().contains(shard)) {
              holders.add(host.id);
            }
          }
          assertEquals(Set.of(ring.ownerOf(shard).id()), holders, shard + " is active on");
        }
      });
      return ring;
    }

    /** Every op applied now, by shard, from the one node where each shard is active. */
    Map<String, Set<String>> applied() {
      Map<String, Set<String>> applied = new TreeMap<>();
      for (ShardActorHost host : running()) {
        applied.putAll(host.snapshot());
      }
      return applied;
    }

    int appliedCount(Set<String> shards) {
      Map<String, Set<String>> applied = applied();
      return shards.stream().mapToInt(s -> applied.getOrDefault(s, Set.of()).size()).sum();
    }

    /**
     * Every increment acknowledged is applied, but for the shards of {@code lost} acknowledged
     * before {@code lostAt}, which went with the node that crashed.
     */
    void assertNoAckedLost(Set<String> lost, long lostAt) {
      Map<String, Set<String>> applied = applied();
      List<String> missing = new ArrayList<>();
      int checked = 0;
      for (Clients.Ack ack : acks) {
        if (lost.contains(ack.shard()) && ack.seq() < lostAt) {
          continue;
        }
        checked++;
        if (!applied.getOrDefault(ack.shard(), Set.of()).contains(ack.op())) {
          missing.add(ack.toString());
        }
      }
      assertEquals(List.of(), missing, "acknowledged increments lost");
      assertTrue(checked > 0, "no acknowledgement checked");
    }

    List<Loss> losses() {
      List<Loss> losses = new ArrayList<>();
      all.values().forEach(h -> losses.addAll(h.losses()));
      return losses;
    }

    @Override
    public void close() {
      all.values().forEach(ShardActorHost::close);
    }
  }

  /**
   * Client threads sending increments to random shards through random nodes of their own. They
   * send as many as the test waits for ({@link #awaitAcked}) and {@link #AHEAD} more, then wait
   * for the test to ask for more: a client whose every shard is local (one side of a partition)
   * would otherwise send tens of thousands a second, and the test runs beside others on a
   * machine of two cores.
   */
  static final class Clients implements AutoCloseable {
    record Ack(String node, String shard, String op, long seq) {}

    private static final AtomicLong OPS = new AtomicLong();
    /** How many increments the clients may have acknowledged beyond the count the test last waited for. */
    private static final long AHEAD = 2_000;

    private final List<Ack> acks = new CopyOnWriteArrayList<>();
    private final List<Ack> sink;
    private final List<Thread> threads = new ArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition resumed = lock.newCondition();
    private volatile List<ShardActorHost> through;
    private int idle;  // guarded by lock: threads waiting while paused, or for the test to ask for more
    private boolean paused;
    private long allowed = AHEAD; // guarded by lock: the acknowledgements the threads send until
    private volatile boolean stopped;

    Clients(Hosts hosts, List<ShardActorHost> through, int threadCount) {
      this.sink = hosts.acks;
      this.through = List.copyOf(through);
      for (int t = 0; t < threadCount; t++) {
        Random random = new Random(t);
        Thread thread = new Thread(() -> run(random), "client-" + t);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }
    }

    private void run(Random random) {
      try {
        while (!stopped) {
          lock.lock();
          try {
            while ((paused || acks.size() >= allowed) && !stopped) {
              idle++;
              try {
                resumed.await();
              } finally {
                idle--;
              }
            }
          } finally {
            lock.unlock();
          }
          List<ShardActorHost> now = through;
          ShardActorHost via = now.get(random.nextInt(now.size()));
          String shard = SHARD_KEYS.get(random.nextInt(SHARDS));
          String op = "op-" + OPS.incrementAndGet();
          if (via.increment(shard, op, Duration.ofSeconds(20))) {
            Ack ack = new Ack(via.id, shard, op, SEQ.incrementAndGet());
            acks.add(ack);
            sink.add(ack);
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    long acked() {
      return acks.size();
    }

    void awaitAcked(long count) {
      lock.lock();
      try {
        allowed = Math.max(allowed, count + AHEAD);
        resumed.signalAll();
      } finally {
        lock.unlock();
      }
      await().atMost(WAIT).until(() -> acks.size() >= count);
    }

    /** Stops sending once each thread's increment under way ends (acknowledged or given up). */
    void pause() {
      lock.lock();
      try {
        paused = true;
      } finally {
        lock.unlock();
      }
      await().atMost(WAIT).until(() -> {
        lock.lock();
        try {
          return idle == threads.size();
        } finally {
          lock.unlock();
        }
      });
    }

    /** Sends through these nodes from now on. */
    void through(List<ShardActorHost> hosts) {
      through = List.copyOf(hosts);
    }

    void resume(List<ShardActorHost> hosts) {
      lock.lock();
      try {
        through = List.copyOf(hosts);
        paused = false;
        resumed.signalAll();
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void close() throws InterruptedException {
      stopped = true;
      lock.lock();
      try {
        resumed.signalAll();
      } finally {
        lock.unlock();
      }
      for (Thread thread : threads) {
        thread.join(TimeUnit.SECONDS.toMillis(30));
        if (thread.isAlive()) {
          thread.interrupt();
          thread.join();
        }
      }
    }
  }

}
