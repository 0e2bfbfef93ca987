package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.jgroups.Address;
import org.jgroups.MergeView;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.util.UUID;

/**
 * Turns views into rings and rings into callbacks, on the node's own view thread.
 *
 * <p>{@link #onView(View)} is all a JGroups thread does here with a view: it notes it as the newest
 * one given, for the news of members leaving ({@link #leavingArrived}), and queues it (and
 * {@link #ringBeforeArrived}, from the gossip, only hands an account of the ring before a view to
 * {@link RingsBefore}, a bounded queue per view). The view thread reads every member's metadata
 * from the view, builds the ring incrementally from the previous one, publishes it with one
 * volatile write, and only then queues the callbacks. Lookups read the published {@link Snapshot}
 * and never wait.
 *
 * <p>Beside it: {@link Admission} decides who of a view is in the ring, {@link RingsBefore} what a
 * newcomer's first ring is compared with; each listener has its queue, a {@link SerialDelivery},
 * and {@link ListenerWaits} ends the circles of listeners waiting for each other.
 * {@link Ringmaster} owns the node's threads and channel, and {@link Gossip} compares the ring
 * with the peers'.
 */
final class ClusterNode {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /**
   * Everything a lookup needs, published at once. {@code viewCreator} with {@code viewId} names
   * the view: two partitions can reach the same number under different coordinators. {@code view}
   * is that view (null before the first): the gossip asks it which members it lists, since the
   * channel's own may have moved on while the next ring is built.
   */
  record Snapshot(long viewId, Address viewCreator, HashRing ring, Map<String, Address> addresses,
                  Map<String, NodeMetadata> metadata, boolean localInRing, List<MembershipChange.Refusal> refused,
                  View view) {}

  private final NodeMetadata local;
  /** The node's own listener pool, or null: see {@link #launchAll}. */
  private final Executor listenerPool;
  private final ExecutorService viewThread;
  /** What a first ring is compared with: the ring before the view that brought this node in. */
  private final RingsBefore ringsBefore;
  private final List<SerialDelivery<OwnershipChange>> ownershipListeners = new CopyOnWriteArrayList<>();
  private final List<SerialDelivery<MembershipChange>> membershipListeners = new CopyOnWriteArrayList<>();
  private final Object publishLock = new Object();
  /** The calls of {@link #awaitListeners} from listeners, which may wait for each other in a circle. */
  private final ListenerWaits listenerWaits = new ListenerWaits();
  private final CompletableFuture<Snapshot> firstRing = new CompletableFuture<>();
  /** Members whose refusal this node has reported, as of its last published ring: view thread only. */
  private final Set<Address> reportedRefusals = new HashSet<>();
  private volatile Snapshot state;
  /**
   * Completed, and replaced, each time a ring is published and when the node closes: what a
   * thread waiting for a ring ({@link #nextPublish}) waits on.
   */
  private final AtomicReference<CompletableFuture<Void>> published =
      new AtomicReference<>(new CompletableFuture<>());
  private volatile Address localAddress;
  /**
   * The last view this node handled, and its own address then: read and written on the view
   * thread only. A view not newer than it, at the same address, is skipped.
   */
  private ViewId lastViewId;
  private Address lastViewSelf;
  /**
   * The last view whose install failed before its ring was published (a ring too large for the
   * heap, say), to be tried again ({@link #retryFailedView}); null once it or a later view is published.
   */
  private volatile View failedView;
  /** The view whose ring {@link #install} published last; read and written on the view thread only. */
  private View publishedView;
  /** The failed view {@link #retryFailedView} tries, when it may next, and the wait after: gossip thread only. */
  private View retrying;
  private long retryAtNanos;
  private long retryDelayNanos;
  private static final long FIRST_RETRY_DELAY_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final long LAST_RETRY_DELAY_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** A test seam: run on the view thread as each view is installed, just before its ring is built. */
  volatile Consumer<View> beforeBuild = view -> { };
  /**
   * A test seam: run on the view thread once a view is handled, just before the news of members
   * gone from it is dropped.
   */
  volatile Consumer<View> beforeForgetting = view -> { };
  /**
   * The most tokens {@link Admission} lets a ring have: {@link HashRing#MAX_TOKENS}; a test seam, so
   * that a test can reach the limit with rings it can build.
   */
  volatile long maxRingTokens = HashRing.MAX_TOKENS;
  /**
   * The newest view handed to {@link #onView}, which the view thread may not have handled yet (null
   * before the first); written on JGroups threads. News of a leave from one of its members is kept
   * ({@link #leavingArrived}): the view thread can be a view or more behind the channel (a newcomer
   * waiting for the ring before its first view, a listener on a same-thread executor holding it),
   * and the news, sent once, would otherwise be lost.
   */
  private volatile View viewGiven;
  /**
   * The members of this node's view that said they are leaving ({@link Gossip#TYPE_LEAVING}): this
   * node's own LEAVING change hands nothing to them. Only a member of the view last handled or
   * {@link #viewGiven} is taken, and one in neither is dropped as each view is handled.
   */
  private final Set<Address> leavingPeers = ConcurrentHashMap.newKeySet();
  /**
   * Those of {@link #leavingPeers} that said their hand-off is done ({@link Gossip#TYPE_HANDED_OFF}):
   * the only ones the newcomers of the view they leave in are told left gracefully (see
   * {@link RingsBefore#tellNewcomers}).
   */
  private final Set<Address> handedOffPeers = ConcurrentHashMap.newKeySet();
  /** Set once the LEAVING change is queued: after it, ownership callbacks would contradict the fold. */
  private boolean left;
  /**
   * The ring this node's LEAVING change handed off to, and the state it was made from: what
   * {@link #close()} publishes unless a view came after the change. Under the publish lock.
   */
  private HandOff handOff;
  /** Set when the node shuts down: no ring is published and no callback queued after it. */
  private volatile boolean closed;

  final AtomicLong viewsSeen = new AtomicLong();
  private final AtomicInteger publishing = new AtomicInteger();
  final AtomicLong ringBuilds = new AtomicLong();
  final AtomicLong lastBuildNanos = new AtomicLong();
  final AtomicLong lastChangeMillis = new AtomicLong();
  final AtomicLong refusals = new AtomicLong();

  /** A node whose listeners all run on executors of their own (for tests that feed it views). */
  ClusterNode(NodeMetadata local, ExecutorService viewThread, Duration ringBeforeTimeout) {
    this(local, viewThread, ringBeforeTimeout, null);
  }

  /**
   * @param ringBeforeTimeout how long this node's first view waits for an old member to say which
   *                          members the ring had before it (see {@link RingsBefore#forFirstView})
   * @param listenerPool      the node's own listener pool (null for none), whose listeners are
   *                          launched first: handing a callback to it never runs it on the launching
   *                          thread, so a same-thread listener's long callback cannot hold them up
   */
  ClusterNode(NodeMetadata local, ExecutorService viewThread, Duration ringBeforeTimeout, Executor listenerPool) {
    this.local = local;
    this.listenerPool = listenerPool;
    this.viewThread = viewThread;
    this.ringsBefore = new RingsBefore(local.id(), ringBeforeTimeout);
    this.state = new Snapshot(-1, null, emptyRing(), Map.of(), Map.of(), false, List.of(), null);
  }

  void setLocalAddress(Address address) {
    this.localAddress = address;
  }

  void setRingBeforeSender(RingsBefore.Sender sender) {
    ringsBefore.setSender(sender);
  }

  /**
   * Called on a JGroups thread with an old member's account of the ring before a view, for this
   * node's first view: hands it to the view thread, which may be waiting for it or not there yet,
   * and which takes it only if {@code source} is a member of that view (it may arrive before the
   * view does, so it cannot be checked here).
   */
  void ringBeforeArrived(long viewId, UUID viewCreator, List<Member> before, List<String> leftGracefully,
                         Address source) {
    if (state.viewId() >= 0) {
      return; // only a node's first ring reads them: kept now, one would wait for the next view to go
    }
    ringsBefore.arrived(viewId, viewCreator, before, leftGracefully, source);
    if (state.viewId() >= 0) {
      // The first ring came in between, and the view thread may have forgotten the accounts before
      // this one went in: nothing reads it now, and the next view would be the first to drop it.
      ringsBefore.forget(viewId, true);
    }
  }

  /** An account of the ring before a view that names no member as gone gracefully (for tests). */
  void ringBeforeArrived(long viewId, UUID viewCreator, List<Member> before, Address source) {
    ringBeforeArrived(viewId, viewCreator, before, List.of(), source);
  }

  /**
   * Called on a JGroups thread when {@code source} says it is leaving, or with {@code handedOff}
   * that its hand-off is done (which says it is leaving too): kept while it is a member of this
   * node's view, the one its ring is of or a newer one the view thread has yet to handle (a message
   * from outside both, or from this node, is ignored).
   */
  void leavingArrived(Address source, boolean handedOff) {
    if (source != null && !source.equals(localAddress) && (lists(state.view(), source) || lists(viewGiven, source))) {
      leavingPeers.add(source);
      if (handedOff) {
        handedOffPeers.add(source);
      }
    }
  }

  private static boolean lists(View view, Address member) {
    return view != null && view.containsMember(member);
  }

  /** The members of this node's view that said they are leaving, as far as this node knows (for tests). */
  Set<Address> leavingPeers() {
    return Set.copyOf(leavingPeers);
  }

  /** Those of them that said their hand-off is done (for tests). */
  Set<Address> handedOffPeers() {
    return Set.copyOf(handedOffPeers);
  }

  Snapshot state() {
    return state;
  }

  CompletableFuture<Snapshot> firstRing() {
    return firstRing;
  }

  /**
   * Fails the first ring if none was published yet: start() gives up, and from here on no view
   * publishes anything, so no listener hears of a node whose start() failed. Under the publish
   * lock, so that a view cannot publish in between.
   *
   * @return false if the view thread settled the first ring first, with a ring (the start
   *         succeeded after all) or a refusal
   */
  boolean failFirstRing(Throwable reason) {
    synchronized (publishLock) {
      return firstRing.completeExceptionally(reason);
    }
  }

  /** Called on a JGroups thread: hand over and return at once. */
  void onView(View view) {
    viewGiven = view;
    try {
      viewThread.execute(() -> install(view));
    } catch (RejectedExecutionException closing) {
      LOG.log(Level.DEBUG, "view {0} arrived while closing", view.getViewId());
    }
  }

  private HashRing emptyRing() {
    return HashRing.builder().virtualNodes(local.virtualNodes()).build();
  }

  /**
   * Stops publishing: a view being installed right now is dropped before it is published. A node
   * in the ring publishes one last state, what it leaves behind: the ring its LEAVING change handed
   * off to (without it, and without the members it knew were leaving too), or, if a view came
   * between that change and this call (or it made none), its last ring without it. So its lookups
   * after close() agree with its listeners' fold (it owns nothing) and route to the members that
   * took its ranges.
   */
  void close() {
    try {
      synchronized (publishLock) {
        closed = true;
        Snapshot s = state;
        if (s.localInRing()) {
          // The ring the LEAVING change named holds neither this node nor the members it knew were
          // leaving too; after a later view, that view's ring without this node.
          HandOff made = handOff;
          HashRing after = made != null && made.from() == s ? made.ring() : s.ring().without(local.id());
          Map<String, Address> addresses = new LinkedHashMap<>(s.addresses());
          Map<String, NodeMetadata> metadata = new LinkedHashMap<>(s.metadata());
          for (Member m : s.ring().members()) {
            if (!after.contains(m.id())) {
              addresses.remove(m.id());
              metadata.remove(m.id());
            }
          }
          state = new Snapshot(s.viewId(), s.viewCreator(), after, Map.copyOf(addresses),
              Map.copyOf(metadata), false, s.refused(), s.view());
        }
      }
    } finally {
      wakeWaiters(); // closed even if the last ring could not be built
    }
  }

  /**
   * Completes when the next ring is published, or the node closes. Read it before {@link #state()}:
   * a ring published after that read completes it.
   */
  CompletableFuture<Void> nextPublish() {
    return published.get();
  }

  /** Whether the node has shut down: no ring comes after the current one. */
  boolean isClosed() {
    return closed;
  }

  /** Wakes every thread waiting for the next ring; each looks at the node again. */
  void wakeWaiters() {
    published.getAndSet(new CompletableFuture<>()).complete(null);
  }

  private void install(View view) {
    install(view, false);
  }

  /**
   * @param retry whether this is {@link #retryFailedView} trying the failed view again: it is then
   *              installed although it is no newer than the last view handled (it is that view)
   */
  private void install(View view, boolean retry) {
    Snapshot before = state;
    publishedView = null;
    try {
      installView(view, retry);
      if (state != before || retry) {
        failedView = null; // this view, or a later one, replaces any that failed; or it was skipped
      }
    } catch (RuntimeException | Error e) {
      // Never let one bad view kill the view thread: log it, keep the last good ring, and let a
      // start() that waits for its first ring fail with the reason. An Error too (a ring too large
      // for the heap, say): otherwise start() would wait its whole startTimeout and then blame it.
      // A running node whose ring was not published tries the view again (retryFailedView), as its
      // peers, which did install it, would otherwise compare rings with it only once a later view
      // comes, and meanwhile its lookups would disagree with theirs.
      boolean retried = firstRing.isDone() && !firstRing.isCompletedExceptionally() && state == before;
      failedView = retried ? view : null;
      firstRing.completeExceptionally(new RingmasterException(RingmasterException.Reason.VIEW_FAILED,
          "view " + view.getViewId()
          + " could not be installed: " + e.getMessage(), e));
      if (publishedView == view) {
        // Published: its callbacks were queued first, so the listeners miss nothing; what failed
        // came after (the launches run all the same, in a finally).
        Logs.quietly(() -> LOG.log(Level.ERROR, "view " + view.getViewId() + " was installed on " + local.id()
            + ", but what follows it failed", e));
      } else if (!retry || !retried) {
        Logs.quietly(() -> LOG.log(Level.ERROR, "view " + view.getViewId() + " could not be installed on " + local.id()
            + (retried ? "; it is tried again (at once, then after 1 s and twice as long each time, up to a"
            + " minute) until it or a later view is installed; failures of those tries are logged at WARNING"
            : ""), e));
      } else {
        Logs.quietly(() -> LOG.log(Level.WARNING, "view {0} could not be installed on {1} again: {2}", view.getViewId(),
            local.id(), e.toString()));
      }
    }
  }

  /** Logs each refusal at WARNING (they are in the membership change and the stats all the same). */
  private void logRefusals(List<MembershipChange.Refusal> refused) {
    for (MembershipChange.Refusal r : refused) {
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: {1}", local.id(), r.reason()));
    }
  }

  /**
   * Tries again the last view whose install failed, if no later view was installed since: on the
   * view thread, at the first call after the failure, then after 1 s, and after twice as long each
   * time, up to a minute. Called on the gossip thread at each round.
   */
  void retryFailedView() {
    retryFailedView(System.nanoTime());
  }

  /** As {@link #retryFailedView()}, at {@code now} (a {@link System#nanoTime()} value): tests pass their own. */
  void retryFailedView(long now) {
    View failed = failedView;
    if (failed == null) {
      retrying = null;
      return;
    }
    if (failed != retrying) { // a view that failed since the last round: the first try comes now
      retrying = failed;
      retryAtNanos = now;
      retryDelayNanos = FIRST_RETRY_DELAY_NANOS;
    }
    if (now - retryAtNanos < 0) {
      return;
    }
    retryAtNanos = now + retryDelayNanos;
    retryDelayNanos = Math.min(retryDelayNanos * 2, LAST_RETRY_DELAY_NANOS);
    try {
      viewThread.execute(() -> {
        if (failedView == failed) { // no later view was installed, nor failed, since
          install(failed, true);
        }
      });
    } catch (RejectedExecutionException closing) {
      LOG.log(Level.DEBUG, "view {0} not tried again: closing", failed.getViewId());
    }
  }

  private void installView(View view, boolean retry) {
    Address self = localAddress;
    if (self != null && !view.containsMember(self)) {
      // JGroups installs only views that list this member, so this one was queued by the channel
      // before a rejoin (a new member, with a new address): the rejoin's first view replaces it.
      // Quietly: a logger that throws would make this view a failed one, tried again later.
      Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: view {1} is from before this node rejoined; skipped", local.id(),
          view.getViewId()));
      return;
    }
    ViewId id = view.getViewId();
    if (!retry && lastViewId != null && id.compareToIDs(lastViewId) <= 0 && Objects.equals(self, lastViewSelf)) {
      // JGroups installs only views newer than its last, but up to 5.5.6 hands each up after
      // releasing its lock, so two installs on two threads (a coordinator's late view, and its
      // successor's) can reach the channel in the wrong order (5.5.7 hands them up under the
      // lock: JGRP-3036). Installing the older one would take the ring back to its members
      // until the next view, behind every peer's and out of view order.
      // Quietly: a logger that throws would make this view a failed one, and its retry, which
      // skips this check, would take the ring back.
      ViewId newer = lastViewId;
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: view {1} came after view {2}, which is newer; skipped",
          local.id(), id, newer));
      return;
    }
    lastViewId = id;
    lastViewSelf = self;
    if (!retry) {
      viewsSeen.incrementAndGet();
    }
    long started = System.nanoTime();
    Snapshot previous = state;

    NodeMetadata reference = RingmasterMembershipPolicy.firstRingmasterMember(view.getMembers()).orElse(local);
    Set<Address> reported = new HashSet<>(reportedRefusals);
    Admission admission = Admission.of(view, self, reference, reported, maxRingTokens);
    Map<String, Address> addresses = admission.addresses();
    Map<String, NodeMetadata> metadata = admission.metadata();
    List<MembershipChange.Refusal> refused = admission.refused();
    List<MembershipChange.Refusal> refusedNow = admission.refusedNow();
    Admission.OwnRefusal refusal = admission.own();
    boolean localIn = self != null && self.equals(addresses.get(local.id()));
    if (!firstRing.isDone() && !localIn) {
      firstRing.completeExceptionally(refusal != null
          ? new RingmasterException(refusal.kind(), refusal.reason())
          : new RingmasterException(RingmasterException.Reason.VIEW_FAILED, "the first view " + view.getViewId()
              + " does not hold this member " + self));
      logRefusals(refused);
      return;
    }

    List<Member> members = new ArrayList<>();
    for (NodeMetadata m : metadata.values()) {
      members.add(m.member());
    }
    // With the reference's virtualNodes, even on a node refused for other ones: its ring is then
    // everyone else's, so its lookups agree with theirs and its gossip finds no divergence.
    HashRing base = previous.ring().virtualNodes() == reference.virtualNodes() ? previous.ring()
        : HashRing.builder().virtualNodes(reference.virtualNodes()).build();
    beforeBuild.accept(view);
    HashRing ring = base.withMembers(members);
    long viewId = view.getViewId().getId();
    Snapshot next = new Snapshot(viewId, view.getViewId().getCreator(), ring, Map.copyOf(addresses),
        Map.copyOf(metadata), localIn, List.copyOf(refusedNow), view);
    lastBuildNanos.set(System.nanoTime() - started);

    // A node new to the ring (its first ring, or its first since the cluster refused it) is
    // compared with the ring before this view without the node: the same gains as from nothing (it
    // owned nothing before), but each names the members that held the data, not the member that
    // held this node's id until it left (which handed its data to them), nor a member that joined
    // in this same view, nor (for a first ring) one that left in it after saying it was leaving:
    // it handed its data to the ring without it. One that left without a word is named, as the old
    // members' changes name it. A ring in which this node is not admitted counts as one where it
    // holds nothing, even if another member holds its id: what it loses then goes to that member,
    // by the id.
    boolean newToRing = localIn && (previous.viewId() < 0 || !previous.localInRing());
    HashRing before = !newToRing ? previous.ring()
        : previous.viewId() >= 0 ? previous.ring().without(local.id()) // refused until now: it saw that ring
        : ringsBefore.forFirstView(view, ring, addresses.size(), localAddress);
    RingDiff diff = RingDiff.compute(before, previous.localInRing(), ring, localIn, local.id(), local.replicas());
    MembershipChange membership = membershipChange(previous, next, view, refused);
    OwnershipChange.Reason reason = view instanceof MergeView ? OwnershipChange.Reason.MERGE
        : OwnershipChange.Reason.VIEW;
    // Made before the ring is published: what fails after that (an Error making it) would leave the
    // ring published and its listeners never told, with no view to try again.
    OwnershipChange change = diff.isEmpty() ? null
        : new OwnershipChange(reason, previous.viewId(), viewId, before, ring, diff, localIn);
    // Sized before the lock for every listener, so that collecting them cannot fail once the ring is published.
    List<SerialDelivery<?>> toLaunch = new ArrayList<>(ownershipListeners.size() + membershipListeners.size() + 8);
    // The launches in a finally: whatever throws once a callback is queued (an Error in queuing the
    // next, a logger) must not leave a listener marked running with no launch to come, deaf to
    // every later change.
    try {
      synchronized (publishLock) {
        if (closed || firstRing.isCompletedExceptionally()) {
          // Closed, or start() failed (its first view refused this node, or no ring came within
          // startTimeout): start() shuts the node down, and its listeners must hear nothing.
          return;
        }
        // Counted as pending from before the ring is published until its callbacks are queued, so
        // that whoever sees the new ring and then finds no pending callback knows they have run.
        publishing.incrementAndGet();
        try {
          state = next; // publish first, then notify
          publishedView = view;
          if (ring != previous.ring()) { // counted once published: not a ring dropped, nor one built twice
            ringBuilds.incrementAndGet();
          }
          // Before start() returns (it waits for firstRing): its caller's stats() shows the first change.
          if (change != null && !left || membership != null) { // what the listeners are told, not a view after LEAVING
            lastChangeMillis.set(System.currentTimeMillis());
          }
          // Before any callback runs (they are launched after this block): a listener on a
          // same-thread executor that calls close() would otherwise wait for a start() that waits
          // for this.
          firstRing.complete(next);
          // Queued at once (enqueue never throws, and toLaunch has room for every listener): once
          // the ring is published, its listeners are told.
          if (change != null && !left) {
            enqueue(ownershipListeners, change, toLaunch);
          }
          if (membership != null) {
            enqueue(membershipListeners, membership, toLaunch);
          }
          // The refusals this view reports count as reported once its ring is published: a view that
          // failed before that, and is tried again, reports them then.
          reportedRefusals.clear();
          reportedRefusals.addAll(reported);
          refusals.addAndGet(refused.size());
        } finally {
          publishing.decrementAndGet();
        }
      }
      logRefusals(refused);
      // Before the launches, which a listener on a same-thread executor may hold for long: waiters,
      // and newcomers waiting for the ring before this view (they stop waiting after a timeout).
      wakeWaiters();
      if (localIn && previous.localInRing() && !(view instanceof MergeView) && viewId == previous.viewId() + 1) {
        ringsBefore.tellNewcomers(view, self, previous, next, handedOffPeers);
      }
    } finally {
      launchAll(toLaunch); // outside the lock: no listener code runs under it
    }
    ringsBefore.forget(viewId, state.viewId() >= 0);
    beforeForgetting.accept(view);
    // After the newcomers were told who of them left gracefully. A member of a view given since
    // stays: its news came before this node handled the view that lists it. The newest view given
    // is read for each member looked at, not once before: a view given while this runs, and the
    // news of one of its newcomers taken since, would otherwise be dropped here.
    leavingPeers.removeIf(a -> !view.containsMember(a) && !lists(viewGiven, a));
    handedOffPeers.removeIf(a -> !view.containsMember(a) && !lists(viewGiven, a));
  }

  /** The id of a view that could not be installed and is tried again, if any. */
  OptionalLong failedViewId() {
    View failed = failedView;
    return failed == null ? OptionalLong.empty() : OptionalLong.of(failed.getViewId().getId());
  }

  /** How many views' accounts of the ring before them are kept (for tests). */
  int ringsBeforeKept() {
    return ringsBefore.kept();
  }

  /**
   * Queues an event for each listener, collecting in {@code toLaunch} those to launch once the lock
   * is released (idle ones, and those with something to log: see {@link SerialDelivery#enqueue}).
   */
  private static <E> void enqueue(List<SerialDelivery<E>> listeners, E event, List<SerialDelivery<?>> toLaunch) {
    for (SerialDelivery<E> l : listeners) {
      if (l.enqueue(event)) {
        toLaunch.add(l);
      }
    }
  }

  /**
   * Whether a node id names the same member in both rings: the same JGroups member (so not a
   * process restarted, or rejoined, under that id; nor a member refused until now that took the id
   * over) with the same weight and zone. A member replaced in one view is in both lists of the
   * change, left as it was and joined as it is: what its peers would have seen had JGroups dropped
   * it in one view and admitted it in the next. This node's own rejoin (in the ring before and
   * after, under a new address) is no change to itself: it is the same process, with its data.
   */
  private boolean sameMember(String id, Snapshot previous, Snapshot next) {
    NodeMetadata before = previous.metadata().get(id);
    NodeMetadata after = next.metadata().get(id);
    if (before == null || after == null || !before.member().equals(after.member())) {
      return false;
    }
    boolean ownRejoin = id.equals(local.id()) && previous.localInRing() && next.localInRing();
    return ownRejoin || Objects.equals(previous.addresses().get(id), next.addresses().get(id));
  }

  private MembershipChange membershipChange(Snapshot previous, Snapshot next, View view,
                                            List<MembershipChange.Refusal> refused) {
    List<Member> joined = new ArrayList<>();
    List<Member> left = new ArrayList<>();
    for (Member m : next.ring().members()) {
      if (!sameMember(m.id(), previous, next)) {
        joined.add(m);
      }
    }
    for (Member m : previous.ring().members()) {
      if (!sameMember(m.id(), previous, next)) {
        left.add(m);
      }
    }
    List<List<Member>> subgroups = new ArrayList<>();
    if (view instanceof MergeView merge) {
      for (View sub : merge.getSubgroups()) {
        List<Member> group = new ArrayList<>();
        for (Address a : sub.getMembers()) {
          NodeMetadata.from(a).filter(m -> a.equals(next.addresses().get(m.id())))
              .ifPresent(m -> group.add(m.member()));
        }
        subgroups.add(group);
      }
    }
    if (joined.isEmpty() && left.isEmpty() && subgroups.isEmpty() && refused.isEmpty()) {
      return null;
    }
    return new MembershipChange(previous.viewId(), next.viewId(), next.ring().members(), joined, left, subgroups,
        refused);
  }

  /**
   * Registers an ownership listener. Under the publish lock, so the initial change (current
   * ownership from nothing) comes before any later change: the fold invariant. The initial change
   * is built before the listener is added, so that a failure to build it (a ring too large for the
   * heap, say) leaves no listener that missed it; and it is queued after, so that if the
   * listener's executor rejects it, the removal that follows finds the listener.
   */
  void addOwnershipListener(SerialDelivery<OwnershipChange> delivery) {
    boolean launch = false;
    synchronized (publishLock) {
      if (left || closed) { // close() got here first: no change would ever come
        throw closedToListeners(local.id());
      }
      Snapshot s = state;
      OwnershipChange initial = null;
      if (s.localInRing()) {
        RingDiff diff = RingDiff.compute(emptyRing(), s.ring(), local.id(), local.replicas());
        if (!diff.isEmpty()) {
          initial = new OwnershipChange(OwnershipChange.Reason.INITIAL, -1, s.viewId(), emptyRing(), s.ring(), diff,
              true);
        }
      }
      ownershipListeners.add(delivery);
      if (initial != null) {
        launch = delivery.enqueueFirst(initial);
      }
    }
    if (launch) {
      delivery.launchFirst();
    }
  }

  /** What adding a listener to a closed node throws: it would never be called. */
  static IllegalStateException closedToListeners(String nodeId) {
    return new IllegalStateException("node " + nodeId + " is closed (close() was called, or start() failed):"
        + " a listener added now would never be called; add listeners before close(), or to a new node");
  }

  /** Ownership listeners registered now (for tests). */
  int ownershipListenerCount() {
    return ownershipListeners.size();
  }

  /** Membership listeners registered now (for tests). */
  int membershipListenerCount() {
    return membershipListeners.size();
  }

  /**
   * Registers a membership listener. On a running node it first gets the current members as joined
   * from nothing (previous view -1), with the members refused now, as a listener registered before
   * start() gets the first view: folding its changes in order gives the current members. Under the
   * publish lock, so that this comes before any later change.
   */
  void addMembershipListener(SerialDelivery<MembershipChange> delivery) {
    boolean launch = false;
    synchronized (publishLock) {
      if (closed) { // close() got here first: no change would ever come
        throw closedToListeners(local.id());
      }
      Snapshot s = state;
      MembershipChange initial = null;
      if (s.viewId() >= 0) { // built first, as for an ownership listener
        List<Member> members = s.ring().members();
        initial = new MembershipChange(-1, s.viewId(), members, members, List.of(), List.of(), s.refused());
      }
      membershipListeners.add(delivery);
      if (initial != null) {
        launch = delivery.enqueueFirst(initial);
      }
    }
    if (launch) {
      delivery.launchFirst();
    }
  }

  void removeOwnershipListener(SerialDelivery<OwnershipChange> delivery) {
    ownershipListeners.remove(delivery);
  }

  void removeMembershipListener(SerialDelivery<MembershipChange> delivery) {
    membershipListeners.remove(delivery);
  }

  /**
   * Queues, on the view thread (after every view already queued), the change from the current
   * ring to the ring without this member, and stops ownership callbacks after it. The future gives
   * the {@link System#nanoTime()} at which the change was queued.
   */
  CompletableFuture<Long> queueLeaving() {
    CompletableFuture<Long> queued = new CompletableFuture<>();
    try {
      viewThread.execute(() -> {
        try {
          announceLeaving(queued);
        } catch (RuntimeException | Error e) {
          // Thrown before the change was queued (the launches throw nothing): in the future, which
          // close() waits for and reports.
        }
      });
    } catch (RejectedExecutionException stopped) { // shut down meanwhile (closeAbruptly, in the test kit)
      queued.completeExceptionally(stopped);
    }
    return queued;
  }

  /**
   * On the view thread: queues, for every ownership listener, the change from the current ring to
   * the ring without this member, and stops ownership callbacks after it.
   *
   * @return the {@link System#nanoTime()} at which the change was queued, before the launches, which
   *         run the callbacks of idle listeners on same-thread executors on this thread
   */
  long announceLeaving() {
    CompletableFuture<Long> queued = new CompletableFuture<>();
    announceLeaving(queued);
    return queued.join();
  }

  /**
   * As {@link #announceLeaving()}, completing {@code queued} once the change is queued: before the
   * launches, where a listener on a same-thread executor runs its callback, which close() then
   * waits for as it does for any other (up to leaveTimeout).
   */
  private void announceLeaving(CompletableFuture<Long> queued) {
    List<SerialDelivery<?>> toLaunch = new ArrayList<>();
    try {
      queueLeavingChange(toLaunch);
      queued.complete(System.nanoTime());
    } catch (RuntimeException | Error e) {
      queued.completeExceptionally(e);
      throw e;
    } finally {
      launchAll(toLaunch); // those queued before a throw too: none may be left marked running
    }
  }

  /**
   * As {@link #announceLeaving()}, on a thread other than the view thread, for a close() that
   * waited in vain for the view thread to queue the change (a listener on a same-thread executor
   * holds it, in a long callback). Queued from the ring last published, the one the listeners last
   * heard of, like the view thread's; the views still queued on the view thread then change no
   * listener's ownership, since the node has left. Then every launch still pending is made from
   * here, not only those of the listeners this change found idle: the held view thread has yet to
   * make those of the listeners after the one holding it, whose callbacks of that view wait for it.
   * Deliveries on the node's pool are launched from this thread; the others are handed to one task
   * of the pool that launches them one after another, in the view thread's order, so that the
   * callbacks of listeners on same-thread executors run on a pool thread, one listener after
   * another as on the view thread, never on the thread that closes the node (unless the pool
   * cannot run the task: then here, rather than never). The listener holding the view thread gets
   * the change there, once its callback returns.
   *
   * @return whether this queued the change: false if the view thread did meanwhile (or the node
   *         was not in the ring, or closed)
   */
  boolean announceLeavingFromElsewhere() {
    List<SerialDelivery<?>> toLaunch = new ArrayList<>();
    try {
      return queueLeavingChange(toLaunch);
    } finally {
      List<SerialDelivery<?>> all = new ArrayList<>(ownershipListeners);
      all.addAll(membershipListeners);
      List<SerialDelivery<?>> elsewhere = new ArrayList<>(); // launched after the pool's, as by launchAll
      for (SerialDelivery<?> d : all) {
        if (!d.launchPending()) {
          if (toLaunch.contains(d)) {
            d.launch(); // busy, with something to log (it fell behind, or the change could not be queued)
          }
          continue; // idle, running, or its launch made: nothing to hand over
        }
        if (listenerPool == null || d.executor() == listenerPool) {
          d.launchInTurn(); // without a pool, one after another here: a same-thread callback holds up the rest
        } else {
          elsewhere.add(d);
        }
      }
      if (!elsewhere.isEmpty()) {
        try {
          listenerPool.execute(() -> launchAll(elsewhere)); // one after another, as the view thread would
        } catch (RuntimeException | Error noThread) {
          launchAll(elsewhere); // launch() does not throw
        }
      }
    }
  }

  /**
   * Queues, for every ownership listener, the change from the current ring to the ring without this
   * member (unless it is not in the ring, or has already left), and marks the node left: no
   * ownership change comes after it.
   *
   * @param toLaunch gets the deliveries to launch outside the lock (even if this throws): those
   *                 that were idle, and those with something to log (see {@link SerialDelivery#enqueue})
   * @return whether the change was queued
   */
  private boolean queueLeavingChange(List<SerialDelivery<?>> toLaunch) {
    synchronized (publishLock) {
      boolean queued = false;
      boolean leftBefore = left;
      left = true; // first: a throw below must not let a second LEAVING change, or a view's, follow
      Snapshot s = state;
      if (s.localInRing() && !leftBefore && !closed) { // closed: close() gave up waiting and stopped
        HashRing without = s.ring().withMembers(staying(s));
        if (without.isEmpty()) {
          // No member that owns anything stays (isEmpty: no tokens): handed to none, the data would
          // be lost, while the leavers pass on what reaches them as they leave (to a member that
          // joins meanwhile, say).
          without = s.ring().without(local.id());
        }
        handOff = new HandOff(s, without);
        RingDiff diff = RingDiff.compute(s.ring(), without, local.id(), local.replicas());
        if (!diff.isEmpty()) {
          enqueue(ownershipListeners, new OwnershipChange(OwnershipChange.Reason.LEAVING, s.viewId(),
              s.viewId(), s.ring(), without, diff, false), toLaunch);
          queued = true;
        }
      }
      return queued;
    }
  }

  /**
   * Whether the node has come to its LEAVING change: made it, or made none, being out of the ring
   * then (for tests). No ownership change comes after it.
   */
  boolean left() {
    synchronized (publishLock) {
      return left;
    }
  }

  /** The ring a LEAVING change handed off to, made from the state {@code from}. */
  private record HandOff(Snapshot from, HashRing ring) { }

  /**
   * Whether this node made its LEAVING hand-off: it was in the ring when it left. One refused then
   * (its id held by an earlier member, say) handed nothing off, even if a view admitted it since.
   */
  boolean handedOff() {
    synchronized (publishLock) {
      return handOff != null;
    }
  }

  /**
   * The members of the ring a LEAVING change hands off to: those of {@code s} but this node and the
   * members it knows are leaving too (unless none of the rest owns anything: then the caller hands
   * off to the leavers all the same). Two nodes closed at once would otherwise each hand the other
   * part of their data, and both leave with it; one that learns of the other's leave only after it
   * has made its own change still hands that part to it (the wait for the answers to "I am leaving"
   * makes sure that at least one of two such nodes knows of the other: {@link Gossip#TYPE_LEAVING_ACK}).
   */
  private List<Member> staying(Snapshot s) {
    List<Member> staying = new ArrayList<>(s.ring().members().size());
    for (Member m : s.ring().members()) {
      Address at = s.addresses().get(m.id());
      if (!m.id().equals(local.id()) && (at == null || !leavingPeers.contains(at))) {
        staying.add(m);
      }
    }
    return staying;
  }

  /**
   * Launches queued deliveries: those on the node's listener pool first, since a listener on a
   * same-thread executor runs its callback in its launch and may hold this thread for long (a
   * hand-off on LEAVING, say); then the others, in the order given (ownership listeners before
   * membership listeners, each in the order added). Never throws ({@link SerialDelivery#launch()}
   * does not: an executor's refusal removes its listener), so every delivery is launched. A
   * same-thread listener's callback starts with no interrupt left by the caller or by the callback
   * before it (one meant for that listener, such as close()'s last resort, would make the next one's
   * hand-off fail at its first blocking call); the thread gets the interrupt back at the end.
   */
  private void launchAll(List<? extends SerialDelivery<?>> deliveries) {
    boolean interrupted = Thread.interrupted();
    try {
      for (boolean onPool : new boolean[] {true, false}) {
        for (SerialDelivery<?> d : deliveries) {
          if ((d.executor() == listenerPool) == onPool) {
            try {
              d.launchInTurn(); // never throws, by its contract; if it did, the launches after it must still go
            } catch (RuntimeException | Error e) {
              Logs.quietly(() -> LOG.log(Level.ERROR, "launching " + d.name() + " failed", e));
            }
            interrupted |= Thread.interrupted();
          }
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** What {@link #awaitListeners} found. */
  enum ListenersState {
    /** Every callback queued so far has run. */
    IDLE,
    /**
     * The others are idle, but the caller, a listener, stopped waiting for one whose callback
     * waits for it (see {@link #awaitListeners}): that one goes on once the caller's callback returns.
     */
    IN_A_CIRCLE,
    /** The deadline passed first. */
    BUSY
  }

  /**
   * Waits for every listener to finish what is queued, except the one the calling thread is
   * delivering to (if any: it cannot be waited for) and those on {@code unwaited} (null for none).
   *
   * <p>Listeners that call this from their callbacks, on different threads, can wait for each
   * other in a circle: see {@link ListenerWaits} for how such a circle ends.
   *
   * @param running the deliveries of this node's listeners whose callbacks the calling thread is
   *                running (empty for a caller that is no listener)
   * @param launch  whether a listener caller launches the deliveries its callback holds up
   *                ({@link #launchHeldUp}); false for a wait that must run no callback here
   *                (close()'s last wait, under the node's lock: they were launched before it)
   */
  ListenersState awaitListeners(long deadlineNanos, Executor unwaited, List<SerialDelivery<?>> running,
                                boolean launch) throws InterruptedException {
    // A ring is published and its callbacks queued under this lock: taking it once makes sure the
    // callbacks of the ring the caller may have just read are queued, so they are waited for.
    synchronized (publishLock) {
      // nothing to do inside: acquiring the lock is the point
    }
    if (launch) {
      launchHeldUp(running);
    }
    if (running.isEmpty()) {
      // A caller that runs no callback: no listener waits for it, so it is in no circle.
      boolean idle = true;
      for (SerialDelivery<?> l : awaited(unwaited)) {
        idle &= l.awaitIdle(deadlineNanos, runner -> false);
      }
      return idle ? ListenersState.IDLE : ListenersState.BUSY;
    }
    return listenerWaits.await(awaited(unwaited), running, deadlineNanos);
  }

  /**
   * Launches the deliveries whose launch a listener's callback on the calling thread holds up.
   * A listener on a same-thread executor calling close() or awaitListeners() holds up the launch
   * of the deliveries queued after its own: they are launched here, or they could not finish
   * before it returns. Any other caller leaves the launches to the thread that queued them: an
   * application's thread calling close(), a listener on a pool (its callback, on a thread of its
   * own, holds up nothing), or a same-thread callback launched alone (a listener's first, on the
   * thread adding it; a divergence listener's, on the gossip thread). A same-thread listener's
   * callback would otherwise run on the caller's thread, with no time limit, while the caller means
   * only to wait, up to its deadline.
   *
   * @param running the deliveries of this node's listeners whose callbacks the calling thread is running
   */
  void launchHeldUp(List<SerialDelivery<?>> running) {
    if (SerialDelivery.holdsUpLaunches(running)) {
      List<SerialDelivery<?>> all = new ArrayList<>(ownershipListeners);
      all.addAll(membershipListeners);
      launchAll(all);
    }
  }

  /** The listeners that calls of {@link #awaitListeners} from listeners wait for now, by name. */
  List<String> listenerWaits() {
    return listenerWaits.names();
  }

  /**
   * The listeners, but those on {@code unwaited} and those in {@code running} (the callers of
   * close(), which no wait helps), with callbacks queued or running: each named, with how many
   * callbacks it has left, for close()'s WARNING when they outlast leaveTimeout.
   */
  List<String> busyListeners(Executor unwaited, List<SerialDelivery<?>> running) {
    List<String> busy = new ArrayList<>();
    for (SerialDelivery<?> l : awaited(unwaited)) {
      int left = l.pending();
      if (left > 0 && !running.contains(l)) {
        busy.add(l.name() + " (" + left + (left == 1 ? " callback" : " callbacks") + " left)");
      }
    }
    return busy;
  }

  private List<SerialDelivery<?>> awaited(Executor unwaited) {
    List<SerialDelivery<?>> out = new ArrayList<>();
    for (SerialDelivery<?> l : ownershipListeners) {
      if (l.executor() != unwaited) {
        out.add(l);
      }
    }
    for (SerialDelivery<?> l : membershipListeners) {
      if (l.executor() != unwaited) {
        out.add(l);
      }
    }
    return out;
  }

  /**
   * Callbacks queued or running, plus one while a view's ring is being published and its
   * callbacks queued. Read after the ring: 0 then means every callback for that ring has run.
   */
  int pendingCallbacks() {
    int pending = publishing.get(); // read before the queues: see installView
    for (SerialDelivery<OwnershipChange> l : ownershipListeners) {
      pending += l.pending();
    }
    for (SerialDelivery<MembershipChange> l : membershipListeners) {
      pending += l.pending();
    }
    return pending;
  }

  /** The endpoints the members of one snapshot announced, by node id. */
  static Map<String, String> endpoints(Snapshot s) {
    Map<String, String> out = new HashMap<>();
    s.metadata().forEach((id, m) -> out.put(id, m.endpoint()));
    return out;
  }
}
