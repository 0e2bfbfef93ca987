package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.testing.LocalCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.stream.IntStream;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store with one replica that must lose nothing on a graceful leave, moving its entries by
 * ownership changes alone, as docs/api.md's "Moving the data" says: it pulls what it gains, pushes
 * what it loses; on its LEAVING change it pushes everything it holds, not only the keys of
 * {@code lost()}; it passes on what reaches it once that hand-off has begun, leaving out the members
 * its LEAVING change named as leaving too and the leavers the push came through; and its sweep of
 * what it does not own keeps a copy that came back to it meanwhile. Stores reach each other by
 * direct calls, while their node runs.
 */
class LosslessStoreExampleTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final int KEYS = 3_000;

  private final Map<String, Store> reachable = new ConcurrentHashMap<>();
  private final List<Store> stores = new CopyOnWriteArrayList<>();

  @AfterEach
  void stopSweeps() throws InterruptedException {
    for (Store store : stores) {
      store.sweeper.shutdownNow();
      assertTrue(store.sweeper.awaitTermination(1, TimeUnit.MINUTES));
    }
  }

  /**
   * b closes and d joins in one view (the coordinator's requests held until both are queued). What
   * b hands to a and c is not theirs until they install that view, so their sweeps push it back to
   * b, which passes it on to them again: they keep it, since it came back.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaveAndAJoinInOneView_noKeyIsLost(@TempDir Path dir) throws Exception {
    String stack = TestCluster.patientJoiners(dir);
    try (LocalCluster cluster = new LocalCluster("lossless-leave-and-join");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster a = start(cluster, cluster.builder("a").jgroupsConfig(stack));
      Ringmaster b = start(cluster, cluster.builder("b").jgroupsConfig(stack));
      start(cluster, cluster.builder("c").jgroupsConfig(stack));
      write(cluster.awaitSettled(WAIT));
      List<OwnershipChange> ofA = new CopyOnWriteArrayList<>();
      a.addOwnershipListener(ofA::add);

      ViewHandler<?> requests = TestCluster.holdRequests(a);
      CompletableFuture<Void> closing;
      CompletableFuture<Ringmaster> joining;
      try {
        closing = threads.run("close-b", () -> closeGracefully(b));
        joining = threads.supply("start-d", () -> start(cluster, cluster.builder("d").jgroupsConfig(stack)));
        await("b's leave and d's join queued").atMost(WAIT).until(() -> requests.size() >= 2);
      } finally {
        requests.processing(false); // in a finally: else d, which never gives up, would wait for good
      }
      closing.get(2, TimeUnit.MINUTES);
      joining.get(2, TimeUnit.MINUTES);
      assertEveryKeyOnItsOwner(cluster);
      assertTrue(ofA.stream().anyMatch(ch -> ch.previousRing().contains("b") && !ch.ring().contains("b")
          && ch.ring().contains("d")), () -> "b left and d joined in one view, as the test means; a's rings: "
          + ofA.stream().map(ch -> ch.viewId() + " " + ch.ring().members().stream().map(Member::id).toList()).toList());
    }
  }

  /**
   * b and c close at once. A LEAVING change made before the other's word arrived pushes to the
   * other, before or after the other's own close() began (both changes may be such: then each
   * pushes to the other): the other hands it on, with everything else it holds, to the members that
   * stay, never back to the leaver it came from. Repeated, since timing decides which happens.
   */
  @RepeatedTest(8)
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void twoNodesClosingAtOnce_noKeyIsLost() throws Exception {
    try (LocalCluster cluster = new LocalCluster("lossless-two-leavers");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      start(cluster, cluster.builder("a"));
      Ringmaster b = start(cluster, cluster.builder("b"));
      Ringmaster c = start(cluster, cluster.builder("c"));
      start(cluster, cluster.builder("d"));
      write(cluster.awaitSettled(WAIT));

      CountDownLatch go = new CountDownLatch(1); // both closes begin together
      CompletableFuture<Void> closingB;
      CompletableFuture<Void> closingC;
      try {
        closingB = threads.run("close-b", () -> closeWhen(go, b));
        closingC = threads.run("close-c", () -> closeWhen(go, c));
      } finally {
        go.countDown(); // in a finally: a close-b started alone must not wait for it in vain
      }
      closingB.get(2, TimeUnit.MINUTES);
      closingC.get(2, TimeUnit.MINUTES);
      assertEveryKeyOnItsOwner(cluster);
    }
  }

  /**
   * b closes while the coordinator holds its requests, so b's hand-off reaches c while c's ring
   * still holds b; then c closes, from that ring. Part of what c holds came from b, outside the
   * ranges c owned: its hand-off pushes everything it holds, or that part leaves with it. The order
   * is fixed here, not left to timing as in {@link #twoNodesClosingAtOnce_noKeyIsLost}.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaverHoldingWhatAnEarlierLeaverPushedToIt_noKeyIsLost() throws Exception {
    try (LocalCluster cluster = new LocalCluster("lossless-pushed-to-a-leaver")) {
      Ringmaster a = start(cluster, cluster.builder("a"));
      Ringmaster b = start(cluster, cluster.builder("b"));
      Ringmaster c = start(cluster, cluster.builder("c"));
      start(cluster, cluster.builder("d"));
      HashRing before = cluster.awaitSettled(WAIT);
      write(before);

      ViewHandler<?> requests = TestCluster.holdRequests(a);
      try {
        Store ofC = reach("c");
        closeGracefully(b); // its leave request waits in a's queue; close() goes on after leave_timeout
        assertTrue(c.ring().contains("b"), "c has yet to install the view without b");
        long fromB = ofC.data.keySet().stream().filter(key -> before.ownerOf(key).id().equals("b")).count();
        assertTrue(fromB > 0, "c holds keys b owned, pushed by b's hand-off");
        closeGracefully(c);
      } finally {
        requests.processing(false);
      }
      assertEveryKeyOnItsOwner(cluster);
    }
  }

  private Ringmaster start(LocalCluster cluster, Ringmaster.Builder builder) {
    Store store = new Store();
    stores.add(store);
    return cluster.start(builder, store::attach);
  }

  private void closeGracefully(Ringmaster node) {
    node.close();
    reachable.remove(node.localMember().id()); // gone: pushes to it fail from now on
  }

  private void closeWhen(CountDownLatch go, Ringmaster node) {
    try {
      assertTrue(go.await(1, TimeUnit.MINUTES));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    closeGracefully(node);
  }

  private void write(HashRing ring) {
    for (int i = 0; i < KEYS; i++) {
      String key = "k" + i;
      assertTrue(reach(ring.ownerOf(key).id()).put(key, 1), key);
    }
  }

  private void assertEveryKeyOnItsOwner(LocalCluster cluster) throws InterruptedException {
    HashRing ring = cluster.awaitSettled(WAIT); // and no listener threw: every hand-off ended
    await("every key on its owner in " + ring.members()).atMost(WAIT).untilAsserted(() -> {
      List<String> missing = IntStream.range(0, KEYS).mapToObj(i -> "k" + i)
          .filter(key -> !reachable.containsKey(ring.ownerOf(key).id())
              || !reachable.get(ring.ownerOf(key).id()).data.containsKey(key))
          .toList();
      assertTrue(missing.isEmpty(), missing.size() + " keys are not on their owner, among them "
          + missing.subList(0, Math.min(5, missing.size())));
    });
  }

  private Store reach(String id) {
    Store store = reachable.get(id);
    if (store == null) {
      throw new Unreachable(id);
    }
    return store;
  }

  private static final class Unreachable extends RuntimeException {
    Unreachable(String id) {
      super(id + " is not running");
    }
  }

  private final class Store implements OwnershipListener {
    final Map<String, Long> data = new ConcurrentHashMap<>(); // key -> version; copies merge by version
    final Set<String> received = ConcurrentHashMap.newKeySet(); // pushed here since a sweep began
    final ReentrantReadWriteLock writes = new ReentrantReadWriteLock();
    final ScheduledExecutorService sweeper = Executors.newSingleThreadScheduledExecutor();
    volatile Set<String> leavers = Set.of();
    volatile boolean handingOff;
    Ringmaster node;
    String id;

    void attach(Ringmaster node) {
      this.node = node;
      this.id = node.localMember().id();
      node.addOwnershipListener(this);
      reachable.put(id, this);
      sweeper.scheduleWithFixedDelay(this::sweep, 300, 300, TimeUnit.MILLISECONDS);
    }

    /** A client's write, taken only for a key this node owns, and not once it leaves. */
    boolean put(String key, long version) {
      writes.readLock().lock();
      try {
        if (node.isLeaving() || !node.isLocal(key)) {
          return false;
        }
        data.merge(key, version, Math::max);
        return true;
      } finally {
        writes.readLock().unlock();
      }
    }

    /**
     * A peer's push, naming the leavers it has been through. Once this node's hand-off has begun,
     * passed on to the members that stay, none of those leavers among them: two nodes closed at
     * once may each hand data to the other, and would otherwise bounce it back and forth.
     */
    void receive(Map<String, Long> entries, Set<String> via) {
      entries.forEach((key, version) -> data.merge(key, version, Math::max));
      received.addAll(entries.keySet());
      if (handingOff) { // before, the hand-off to come pushes them with the rest
        Set<String> through = new HashSet<>(via);
        through.add(id);
        push(entries, staying(node.ring(), through), through);
      }
    }

    @Override
    public void onOwnershipChange(OwnershipChange change) {
      if (change.reason() == OwnershipChange.Reason.LEAVING) {
        Set<String> leaving = new HashSet<>();
        change.previousRing().members().forEach(m -> leaving.add(m.id()));
        change.ring().members().forEach(m -> leaving.remove(m.id()));
        leaving.remove(id);
        leavers = leaving;
        writes.writeLock().lock(); // a write under way ends first; none is taken after
        try {
          handingOff = true;
          push(new HashMap<>(data), change.ring(), Set.of(id)); // everything, not only lostKeys: it may hold more
        } finally {
          writes.writeLock().unlock();
        }
        return;
      }
      for (Member source : change.sourcesInRing()) {
        Store peer = reachable.get(source.id());
        if (peer != null) {
          change.gainedKeys(source, peer.data.keySet()).values()
              .forEach(keys -> keys.forEach(key -> data.merge(key, peer.data.getOrDefault(key, 0L), Math::max)));
        }
      }
      change.lostKeys(data.keySet()).values().forEach(keys -> handOn(keys, change.ring()));
    }

    /** Now and then, what this node holds but does not own goes to its owners. */
    void sweep() {
      try {
        if (node.isInRing() && !node.isLeaving()) {
          handOn(data.keySet().stream().filter(key -> !node.isLocal(key)).toList(), node.ring());
        }
      } catch (RuntimeException e) {
        // an owner that stays unreachable: the keys are kept, and the next round tries again
      }
    }

    /** Pushes keys to their owners in {@code ring}; drops those it does not own there, unless one came back. */
    void handOn(List<String> keys, HashRing ring) {
      if (keys.isEmpty()) {
        return;
      }
      received.removeAll(keys);
      Map<String, Long> entries = new HashMap<>();
      keys.forEach(key -> entries.put(key, data.get(key)));
      entries.values().removeIf(Objects::isNull);
      push(entries, ring, Set.of());
      keys.forEach(key -> {
        // kept if it came back, or if it is this node's own by now (an owner gone meanwhile)
        if (!received.contains(key) && !ring.ownerOf(key).id().equals(id) && !node.isLocal(key)) {
          data.remove(key);
        }
      });
    }

    /** The ring without this node, the leavers its LEAVING change named and {@code via}, unless that leaves no one. */
    HashRing staying(HashRing ring, Set<String> via) {
      HashRing staying = ring.without(id);
      Set<String> gone = new HashSet<>(leavers);
      gone.addAll(via);
      for (String leaver : gone) {
        staying = staying.without(leaver);
      }
      return staying.members().isEmpty() ? ring.without(id) : staying;
    }

    /**
     * To an owner that is gone: once this node's ring no longer holds it, to the owner there; while
     * this node leaves (awaitRing fails once close() has begun), at once to the owner in the ring
     * without it.
     */
    void push(Map<String, Long> entries, HashRing ring, Set<String> via) {
      Map<String, Map<String, Long>> byOwner = new HashMap<>();
      entries.forEach((key, version) -> {
        String owner = ring.ownerOf(key).id();
        if (!owner.equals(id)) {
          byOwner.computeIfAbsent(owner, o -> new HashMap<>()).put(key, version);
        }
      });
      byOwner.forEach((owner, batch) -> {
        try {
          reach(owner).receive(batch, via);
        } catch (Unreachable e) {
          if (node.isLeaving()) {
            HashRing rest = ring.without(owner);
            if (rest.without(id).members().isEmpty()) {
              throw new IllegalStateException("no member left to hand " + batch.size() + " entries to");
            }
            push(batch, staying(rest, via), via);
            return;
          }
          try {
            HashRing now = node.awaitRing(r -> !r.contains(owner), WAIT);
            push(batch, node.isLeaving() ? staying(now, via) : now, via);
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted handing on " + batch.size() + " entries", ie);
          }
        }
      });
    }
  }
}
