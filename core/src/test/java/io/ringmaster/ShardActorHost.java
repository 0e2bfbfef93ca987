package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
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
import org.jgroups.blocks.RequestHandler;
import org.jgroups.blocks.RequestOptions;
import org.jgroups.fork.ForkChannel;
import org.jgroups.stack.ProtocolStack;

/**
 * One node's sharded actors, built on the public API alone (docs/recipes.md, "Sharded actors"):
 * the shards it is primary owner of, active, each with its state, the ids of the increments it
 * applied (its counter is their number).
 *
 * <p>How it uses a change: a loser passivates the shards of its {@code lost()} ranges and pushes
 * their state to the new primary, inside the callback, until the gainer takes it; on
 * {@code LEAVING} it pushes every shard it holds to its owner in the change's {@code ring()}. A
 * gainer activates a shard when its state arrives; a shard gained with no source left in the ring
 * ({@code sourcesInRing} empty, but {@code sources()} not: its only holder crashed, or is across a
 * partition) starts empty and is reported lost, as is one whose awaited source leaves the ring
 * before its push came. Two copies of a shard (one kept by its owner across a partition, one
 * started empty on the other side) are merged by union of their increments' ids.
 *
 * <p>Messages go over a fork channel of the node's channel (docs/api.md, "The channel"): a
 * request's first byte is {@code 'I'} (an increment) or {@code 'H'} (a hand-off), never 1 to 31.
 */
final class ShardActorHost implements OwnershipListener, MembershipListener, RequestHandler {
  static final int SHARDS = 128;
  static final List<String> SHARD_KEYS =
      IntStream.range(0, SHARDS).mapToObj(i -> "shard-" + i).toList();

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

  ShardActorHost(Ringmaster node, Audit audit) {
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
