package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import io.ringmaster.testing.LocalCluster;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.blocks.MessageDispatcher;
import org.jgroups.blocks.RequestOptions;
import org.jgroups.fork.ForkChannel;
import org.jgroups.stack.ProtocolStack;
import org.junit.jupiter.api.Test;

/**
 * A sharded actor host built on the public API alone: 128 shards with one replica, each an actor
 * (a counter and the operations it applied) active on its primary owner only, moved with its state
 * when that owner changes, through a join, a graceful leave, a crash, a partition healed and two
 * joins at once, while clients send increments through any node.
 *
 * <p>How the host uses a change ({@link ActorHost}): a loser passivates the shards of its
 * {@code lost()} ranges and pushes their state to the new primary over a fork channel of the
 * node's channel, inside the callback, until the gainer takes it; on {@code LEAVING} it pushes
 * every shard it holds to its owner in the change's {@code ring()}. A gainer activates a shard
 * when its state arrives; a shard gained with no source left in the ring ({@code sourcesInRing}
 * empty, but {@code sources()} not: its only holder crashed, or is across a partition) starts
 * empty and is reported lost, as is one whose awaited source leaves the ring before its push came.
 * Two copies of a shard (one kept by its owner across a partition, one started empty on the other
 * side) are reconciled by union: an increment is an operation with a unique id, applied once.
 */
final class ShardedActorsTrialTest {
  static final int SHARDS = 128;
  static final List<String> SHARD_KEYS =
      IntStream.range(0, SHARDS).mapToObj(i -> "shard-" + i).toList();
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
      assertTrue(ring.contains("d"));
      assertFalse(hosts.host("d").activeShards().isEmpty(), "d took over no shard");
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "a join loses nothing");
      assertEquals(List.of(), audit.doubles());
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
      ActorHost d = hosts.host("d");
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
      assertFalse(ring.contains("d"));
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "a graceful leave loses nothing");
      assertEquals(List.of(), audit.doubles());
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
      ActorHost c = hosts.host("c");
      Set<String> heldByC;
      Set<String> owedToD;
      try (Clients clients = new Clients(hosts, hosts.running(), 2)) {
        clients.awaitAcked(50);
        clients.pause();
        heldByC = c.activeShards();
        long beforeCrash = clients.acked();
        assertTrue(hosts.appliedCount(heldByC) > 0, "nothing to lose: the test proves nothing");
        c.holdHandOffs();
        ActorHost d = hosts.start(cluster, "d");
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
      assertEquals(List.of(), audit.doubles());
    }
  }

  @Test
  void partition_healed_divergentCopiesAreMergedByUnion() throws InterruptedException {
    Audit audit = new Audit();
    try (LocalCluster cluster = new LocalCluster("actors partition", b -> b.replicas(1));
        Hosts hosts = new Hosts(audit)) {
      List<ActorHost> started = hosts.startAll(cluster, "a", "b", "c");
      cluster.awaitSettled(WAIT);
      hosts.awaitPlaced(cluster);
      ActorHost a = started.get(0);
      ActorHost b = started.get(1);
      ActorHost c = started.get(2);
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
      assertTrue(a.unions() + b.unions() + c.unions() > 0, "no two copies were reconciled");
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), audit.doubles());
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
      assertEquals(4, ring.members().size());
      assertFalse(hosts.host("c").activeShards().isEmpty(), "c took over no shard");
      assertFalse(hosts.host("d").activeShards().isEmpty(), "d took over no shard");
      hosts.assertNoAckedLost(Set.of(), 0);
      assertEquals(List.of(), hosts.losses(), "joins lose nothing");
      assertEquals(List.of(), audit.doubles());
    }
  }

  private static Set<String> lostShards(ActorHost... hosts) {
    Set<String> shards = new TreeSet<>();
    for (ActorHost host : hosts) {
      host.losses().forEach(loss -> shards.add(loss.shard()));
    }
    return shards;
  }

  /**
   * A shard found lost, and how: {@code NO_SOURCE_LEFT}, gained in a change whose
   * {@code sourcesInRing} is empty though its {@code sources()} are not; {@code SOURCE_LEFT}, its
   * awaited source left the ring before its push came (no ownership change says so: the gainer
   * owns the range already, so a membership listener finds it).
   */
  record Loss(String shard, long viewId, List<String> formerOwners, Cause cause, long seq) {
    enum Cause { NO_SOURCE_LEFT, SOURCE_LEFT }
  }

  /** A shard's state on its way: from the node at view {@code viewId}, through the leavers of {@code path}. */
  record Parcel(String shard, List<String> ops, long viewId, List<String> path) {}

  /** Orders acknowledgements and loss reports, across nodes. */
  static final AtomicLong SEQ = new AtomicLong();

  /** Which node holds each shard active, across the test's nodes, and every moment two did. */
  static final class Audit {
    private final Map<String, Set<String>> holders = new HashMap<>();
    private final List<String> doubles = new ArrayList<>();
    private boolean doublesAllowed;

    synchronized void activated(String shard, String node) {
      Set<String> now = holders.computeIfAbsent(shard, s -> new TreeSet<>());
      if (!now.isEmpty() && !doublesAllowed) {
        doubles.add(shard + " activated on " + node + " while active on " + now);
      }
      now.add(node);
    }

    synchronized void passivated(String shard, String node) {
      holders.getOrDefault(shard, new HashSet<>()).remove(node);
    }

    synchronized void forget(String node) {
      holders.values().forEach(set -> set.remove(node));
    }

    synchronized void allowDoubles(boolean allowed) {
      doublesAllowed = allowed;
    }

    synchronized List<String> doubles() {
      return List.copyOf(doubles);
    }
  }

  /** The test's actor hosts, one per node, closed with it. */
  static final class Hosts implements AutoCloseable {
    final Audit audit;
    final Map<String, ActorHost> all = new ConcurrentHashMap<>();
    final List<Clients.Ack> acks = new CopyOnWriteArrayList<>();

    Hosts(Audit audit) {
      this.audit = audit;
    }

    ActorHost start(LocalCluster cluster, String id) {
      return startAll(cluster, id).get(0);
    }

    List<ActorHost> startAll(LocalCluster cluster, String... ids) {
      List<Ringmaster> nodes = cluster.startAll(node -> {
        ActorHost host = new ActorHost(node, audit);
        all.put(node.localMember().id(), host);
        node.addOwnershipListener(host);
        node.addMembershipListener(host);
      }, ids);
      List<ActorHost> started = new ArrayList<>();
      for (Ringmaster node : nodes) {
        ActorHost host = all.get(node.localMember().id());
        host.openChannel();
        started.add(host);
      }
      return started;
    }

    ActorHost host(String id) {
      return all.get(id);
    }

    List<ActorHost> running() {
      return all.values().stream().filter(h -> !h.crashed && !h.node.isLeaving()).toList();
    }

    void close(ActorHost host) {
      host.node.close();
    }

    void crash(LocalCluster cluster, ActorHost host) {
      host.crash();
      cluster.crash(host.node);
    }

    /** Waits until every shard is active on exactly its primary owner, and nothing is in flight. */
    HashRing awaitPlaced(LocalCluster cluster) throws InterruptedException {
      HashRing ring = cluster.awaitAgreement(WAIT);
      await().atMost(WAIT).untilAsserted(() -> {
        for (ActorHost host : running()) {
          assertEquals(Set.of(), host.inFlight(), host.id + " still moves shards");
        }
        for (String shard : SHARD_KEYS) {
          Set<String> holders = new TreeSet<>();
          for (ActorHost host : running()) {
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
      for (ActorHost host : running()) {
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
      all.values().forEach(ActorHost::close);
    }
  }

  /** Client threads sending increments to random shards through random nodes of their own. */
  static final class Clients implements AutoCloseable {
    record Ack(String node, String shard, String op, long seq) {}

    private static final AtomicLong OPS = new AtomicLong();

    private final List<Ack> acks = new CopyOnWriteArrayList<>();
    private final List<Ack> sink;
    private final List<Thread> threads = new ArrayList<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition resumed = lock.newCondition();
    private volatile List<ActorHost> through;
    private int idle;  // guarded by lock: threads waiting while paused
    private boolean paused;
    private volatile boolean stopped;

    Clients(Hosts hosts, List<ActorHost> through, int threadCount) {
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
            while (paused && !stopped) {
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
          List<ActorHost> now = through;
          ActorHost via = now.get(random.nextInt(now.size()));
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
    void through(List<ActorHost> hosts) {
      through = List.copyOf(hosts);
    }

    void resume(List<ActorHost> hosts) {
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

  /**
   * One node's actors: the shards it is primary owner of, active, with their state. Messages go
   * over a fork channel of the node's channel, as docs/api.md, "The channel", says: a request's
   * first byte is {@code 'I'} (an increment) or {@code 'H'} (a hand-off), never 1 to 31.
   */
  static final class ActorHost
      implements OwnershipListener, MembershipListener, org.jgroups.blocks.RequestHandler {
    static final byte INCREMENT = 'I';
    static final byte HAND_OFF = 'H';
    static final int APPLIED = 1;
    static final int NOT_HERE = 0;
    static final int TAKEN = 2;

    final Ringmaster node;
    final String id;
    final Audit audit;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, LinkedHashSet<String>> actors = new HashMap<>();  // guarded by lock
    private final Map<String, Set<String>> awaited = new HashMap<>();            // shard -> its sources
    private final Map<String, Parcel> parked = new HashMap<>();                  // held, not owned
    private final List<Loss> losses = new CopyOnWriteArrayList<>();
    private final ExecutorService mover = Executors.newSingleThreadExecutor();
    private final CountDownLatch handOffHold = new CountDownLatch(1);
    private volatile boolean holdHandOffs;
    private ForkChannel fork;          // guarded by this
    private MessageDispatcher dispatcher;
    volatile boolean crashed;
    private final AtomicLong unions = new AtomicLong();

    ActorHost(Ringmaster node, Audit audit) {
      this.node = node;
      this.id = node.localMember().id();
      this.audit = audit;
    }

    /**
     * Opens the fork channel once the node's channel exists: from the first callback, or after
     * start(), whichever comes first. The shipped stacks have no FORK protocol: it is added
     * on top of the stack.
     */
    synchronized MessageDispatcher openChannel() {
      if (dispatcher == null) {
        try {
          ProtocolStack stack = node.channel().getProtocolStack();
          fork = new ForkChannel(node.channel(), "actors", "shards", true,
              ProtocolStack.Position.ABOVE, stack.getTopProtocol().getClass());
          dispatcher = new MessageDispatcher(fork, this);
          fork.connect("actors");
        } catch (Exception e) {
          throw new IllegalStateException("cannot open the actors' fork channel on " + id, e);
        }
      }
      return dispatcher;
    }

    // ---- the client's side

    /** Applies an increment to the shard's actor, wherever it is active; true once applied. */
    boolean increment(String shard, String op, Duration patience) throws InterruptedException {
      long deadline = System.nanoTime() + patience.toNanos();
      while (System.nanoTime() < deadline && !crashed) {
        if (applyHere(shard, op, Duration.ofMillis(200)) == APPLIED) {
          return true;
        }
        Member owner;
        try {
          owner = node.ownerOf(shard);
        } catch (IllegalStateException e) {
          return false; // closed
        }
        Optional<Address> to = node.addressOf(owner.id());
        if (!owner.id().equals(id) && to.isPresent()) {
          Integer reply = send(to.get(), encode(INCREMENT, shard, op, 0, List.of(), List.of()), 2000);
          if (reply != null && reply == APPLIED) {
            return true;
          }
        }
        pause(Duration.ofMillis(50));
      }
      return false;
    }

    /** Applies here if the shard is active here; waits for it if this node owns it and its state is on its way. */
    private int applyHere(String shard, String op, Duration wait) throws InterruptedException {
      long left = wait.toNanos();
      lock.lock();
      try {
        while (!crashed) {
          LinkedHashSet<String> actor = actors.get(shard);
          if (actor != null) {
            actor.add(op);
            return APPLIED;
          }
          if (left <= 0 || node.isLeaving() || !node.isPrimary(shard)) {
            return NOT_HERE;
          }
          left = changed.awaitNanos(left);
        }
        return NOT_HERE;
      } finally {
        lock.unlock();
      }
    }

    // ---- ownership changes

    @Override
    public void onOwnershipChange(OwnershipChange change) {
      openChannel();
      if (change.reason() == OwnershipChange.Reason.LEAVING) {
        handOffEverything(change);
        return;
      }
      List<Parcel> out = new ArrayList<>();
      lock.lock();
      try {
        change.lostKeys(SHARD_KEYS).forEach((lost, shards) -> {
          for (String shard : shards) {
            awaited.remove(shard);
            LinkedHashSet<String> actor = passivate(shard);
            if (actor != null) {
              out.add(new Parcel(shard, List.copyOf(actor), change.viewId(), List.of()));
            }
          }
        });
      } finally {
        lock.unlock();
      }
      if (holdHandOffs && !out.isEmpty()) {
        try {
          handOffHold.await(); // until this node crashes (the test's hook)
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      for (Parcel parcel : out) {
        Member to = change.ring().ownerOf(parcel.shard());
        if (!deliver(parcel, to, Duration.ofSeconds(10))) {
          park(parcel); // kept, not dropped: the mover tries again at the next view
        }
      }
      lock.lock();
      try {
        change.gainedKeys(SHARD_KEYS).forEach((gained, shards) -> gain(change, gained, shards));
        changed.signalAll();
      } finally {
        lock.unlock();
      }
      kickMover();
    }

    private void gain(OwnershipChange change, RingDiff.Gained gained, List<String> shards) {
      List<Member> live = change.sourcesInRing(gained);
      for (String shard : shards) {
        if (actors.containsKey(shard)) {
          continue; // its state came before the change did
        }
        Parcel held = parked.remove(shard);
        if (held != null) {
          activate(shard, held.ops());
        } else if (gained.sources().isEmpty()) {
          activate(shard, List.of()); // a new shard: the cluster's first ring
        } else if (live.isEmpty()) {
          lose(shard, change.viewId(), gained.sources(), Loss.Cause.NO_SOURCE_LEFT);
        } else if (live.stream().noneMatch(source -> node.ring().contains(source.id()))) {
          // gone since: the membership listener, a registration of its own, may have run that
          // view's change before this one, so it would not find the shard awaited
          lose(shard, node.viewId(), live, Loss.Cause.SOURCE_LEFT);
        } else {
          awaited.put(shard, live.stream().map(Member::id).collect(Collectors.toSet()));
        }
      }
    }

    @Override
    public void onMembershipChange(MembershipChange change) {
      Set<String> members = change.members().stream().map(Member::id).collect(Collectors.toSet());
      lock.lock();
      try {
        // a source that leaves before its push came took the state with it
        for (var it = awaited.entrySet().iterator(); it.hasNext(); ) {
          Map.Entry<String, Set<String>> e = it.next();
          if (e.getValue().stream().noneMatch(members::contains)) {
            it.remove();
            List<Member> former = e.getValue().stream().sorted().map(Member::of).toList();
            lose(e.getKey(), change.viewId(), former, Loss.Cause.SOURCE_LEFT);
          }
        }
        changed.signalAll();
      } finally {
        lock.unlock();
      }
      kickMover();
    }

    /** On LEAVING: everything held goes to its owner in the change's ring, inside the callback. */
    private void handOffEverything(OwnershipChange change) {
      List<Parcel> out = new ArrayList<>();
      lock.lock();
      try {
        for (String shard : List.copyOf(actors.keySet())) {
          out.add(new Parcel(shard, List.copyOf(passivate(shard)), change.viewId(), List.of(id)));
        }
        for (Parcel p : parked.values()) {
          out.add(withLeaver(p));
        }
        parked.clear();
        awaited.clear();
      } finally {
        lock.unlock();
      }
      List<String> failed = new ArrayList<>();
      for (Parcel parcel : out) {
        Member to = ringWithout(parcel.path(), change.ring()).ownerOf(parcel.shard());
        if (!deliver(parcel, to, Duration.ofSeconds(4))) {
          failed.add(parcel.shard());
        }
      }
      if (!failed.isEmpty()) {
        // so that the node does not say its hand-off is done (docs/api.md, "Moving the data")
        throw new IllegalStateException(id + " could not hand off " + failed);
      }
    }

    // ---- moving state

    /** Pushes a parcel to {@code to} until it takes it; re-routes by this node's ring if {@code to} leaves it. */
    private boolean deliver(Parcel parcel, Member to, Duration patience) {
      long deadline = System.nanoTime() + patience.toNanos();
      Member target = to;
      while (System.nanoTime() < deadline && !crashed) {
        if (target.id().equals(id) && !node.isLeaving() && node.isInRing()) {
          lock.lock();
          try {
            activate(parcel.shard(), parcel.ops());
          } finally {
            lock.unlock();
          }
          return true;
        }
        Optional<Address> address = node.addressOf(target.id());
        if (address.isPresent()) {
          Integer reply = send(address.get(), encodeParcel(parcel), 1000);
          if (reply != null && reply == TAKEN) {
            return true;
          }
        }
        try {
          pause(Duration.ofMillis(100)); // a newcomer's fork channel may not be open yet
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
        HashRing now = ringWithout(parcel.path(), node.ring());
        if (!now.contains(target.id()) && !now.isEmpty()) {
          target = now.ownerOf(parcel.shard());
        }
      }
      return false;
    }

    /** Takes a parcel: into the actor if this node owns the shard, else held until the mover passes it on. */
    private int take(Parcel parcel) {
      lock.lock();
      try {
        if (crashed) {
          throw new IllegalStateException(id + " crashed");
        }
        HashRing ring = ringWithout(parcel.path(), node.ring());
        if (!node.isLeaving() && node.isInRing() && ring.ownerOf(parcel.shard()).id().equals(id)) {
          activate(parcel.shard(), parcel.ops());
        } else {
          park(parcel);
          kickMover();
        }
        return TAKEN;
      } finally {
        lock.unlock();
      }
    }

    /** Passes on what this node holds but does not own, once its ring is at least as recent as the sender's. */
    private void moveParked() {
      List<Parcel> out = new ArrayList<>();
      lock.lock();
      try {
        for (Parcel p : List.copyOf(parked.values())) {
          HashRing ring = ringWithout(p.path(), node.ring());
          if (ring.isEmpty()) {
            continue;
          }
          if (!node.isLeaving() && node.isInRing() && ring.ownerOf(p.shard()).id().equals(id)) {
            parked.remove(p.shard());
            activate(p.shard(), p.ops());
          } else if (node.isLeaving() || node.viewId() >= p.viewId()) {
            parked.remove(p.shard());
            out.add(node.isLeaving() ? withLeaver(p) : p);
          }
        }
        changed.signalAll();
      } finally {
        lock.unlock();
      }
      for (Parcel parcel : out) {
        HashRing ring = ringWithout(parcel.path(), node.ring());
        if (!deliver(parcel, ring.ownerOf(parcel.shard()), Duration.ofSeconds(5))) {
          park(parcel);
        }
      }
    }

    private void kickMover() {
      try {
        mover.execute(this::moveParked);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // the host is closed: the test is over
      }
    }

    private Parcel withLeaver(Parcel p) {
      List<String> path = new ArrayList<>(p.path());
      if (!path.contains(id)) {
        path.add(id);
      }
      return new Parcel(p.shard(), p.ops(), p.viewId(), path);
    }

    private static HashRing ringWithout(List<String> leavers, HashRing ring) {
      HashRing r = ring;
      for (String leaver : leavers) {
        r = r.without(leaver);
      }
      return r;
    }

    /** Under lock: the shard becomes active here, its state merged by union with a copy already here. */
    private void activate(String shard, List<String> ops) {
      LinkedHashSet<String> actor = actors.get(shard);
      if (actor == null) {
        actors.put(shard, new LinkedHashSet<>(ops));
        audit.activated(shard, id);
      } else {
        if (!actor.containsAll(ops)) {
          unions.incrementAndGet();
        }
        actor.addAll(ops); // two copies of one shard: their ops, each applied once
      }
      awaited.remove(shard);
      Parcel held = parked.remove(shard);
      if (held != null) {
        actors.get(shard).addAll(held.ops());
      }
      changed.signalAll();
    }

    private LinkedHashSet<String> passivate(String shard) {
      LinkedHashSet<String> actor = actors.remove(shard);
      if (actor != null) {
        audit.passivated(shard, id);
      }
      return actor;
    }

    private void park(Parcel parcel) {
      lock.lock();
      try {
        parked.merge(parcel.shard(), parcel, (old, p) -> {
          LinkedHashSet<String> ops = new LinkedHashSet<>(old.ops());
          ops.addAll(p.ops());
          return new Parcel(p.shard(), List.copyOf(ops), Math.max(old.viewId(), p.viewId()), p.path());
        });
      } finally {
        lock.unlock();
      }
    }

    /** Under lock: the shard's state is gone with its only holder; it starts empty here. */
    private void lose(String shard, long viewId, List<Member> formerOwners, Loss.Cause cause) {
      losses.add(new Loss(shard, viewId, formerOwners.stream().map(Member::id).toList(), cause,
          SEQ.incrementAndGet()));
      activate(shard, List.of());
    }

    // ---- messages

    @Override
    public Object handle(Message msg) throws Exception {
      byte[] bytes = msg.getArray();
      try (DataInputStream in = new DataInputStream(
          new java.io.ByteArrayInputStream(bytes, msg.getOffset(), msg.getLength()))) {
        byte type = in.readByte();
        String shard = in.readUTF();
        String op = in.readUTF();
        long viewId = in.readLong();
        List<String> path = readList(in);
        List<String> ops = readList(in);
        if (type == INCREMENT) {
          return applyHere(shard, op, Duration.ofSeconds(2));
        }
        return take(new Parcel(shard, ops, viewId, path));
      }
    }

    private Integer send(Address to, byte[] request, long timeoutMillis) {
      try {
        return openChannel().sendMessage(new BytesMessage(to, request),
            RequestOptions.SYNC().timeout(timeoutMillis).flags(Message.Flag.OOB));
      } catch (Exception e) {
        return null; // unreachable, suspected, timed out, or its fork channel not open yet
      }
    }

    private static byte[] encodeParcel(Parcel p) {
      return encode(HAND_OFF, p.shard(), "", p.viewId(), p.path(), p.ops());
    }

    private static byte[] encode(byte type, String shard, String op, long viewId, List<String> path,
        List<String> ops) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeByte(type);
        out.writeUTF(shard);
        out.writeUTF(op);
        out.writeLong(viewId);
        writeList(out, path);
        writeList(out, ops);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return bytes.toByteArray();
    }

    private static void writeList(DataOutputStream out, List<String> list) throws IOException {
      out.writeInt(list.size());
      for (String s : list) {
        out.writeUTF(s);
      }
    }

    private static List<String> readList(DataInputStream in) throws IOException {
      int n = in.readInt();
      List<String> list = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        list.add(in.readUTF());
      }
      return list;
    }

    // ---- for the test

    private void pause(Duration d) throws InterruptedException {
      lock.lock();
      try {
        changed.awaitNanos(d.toNanos()); // woken early by any local change
      } finally {
        lock.unlock();
      }
    }

    Set<String> activeShards() {
      lock.lock();
      try {
        return new TreeSet<>(actors.keySet());
      } finally {
        lock.unlock();
      }
    }

    Set<String> inFlight() {
      lock.lock();
      try {
        Set<String> s = new TreeSet<>(awaited.keySet());
        s.addAll(parked.keySet());
        return s;
      } finally {
        lock.unlock();
      }
    }

    Map<String, Set<String>> snapshot() {
      lock.lock();
      try {
        Map<String, Set<String>> copy = new HashMap<>();
        actors.forEach((shard, ops) -> copy.put(shard, new HashSet<>(ops)));
        return copy;
      } finally {
        lock.unlock();
      }
    }

    List<Loss> losses() {
      return List.copyOf(losses);
    }

    /** How often a copy of a shard arrived with ops the active copy lacked. */
    long unions() {
      return unions.get();
    }

    /** From now on the shards this node loses wait, passivated, and are not pushed. */
    void holdHandOffs() {
      holdHandOffs = true;
    }

    /** Its memory is gone, as a process that died. */
    void crash() {
      crashed = true;
      lock.lock();
      try {
        actors.clear();
        parked.clear();
        awaited.clear();
        audit.forget(id);
      } finally {
        lock.unlock();
      }
    }

    void close() {
      handOffHold.countDown();
      mover.shutdownNow();
      try {
        mover.awaitTermination(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      synchronized (this) {
        if (dispatcher != null) {
          dispatcher.stop();
          fork.close();
        }
      }
    }
  }
}
