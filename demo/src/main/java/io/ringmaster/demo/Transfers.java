package io.ringmaster.demo;

import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import java.io.DataInputStream;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.jgroups.Address;

/**
 * Moving entries between peers: pushing them in pages (a hand-off to several destinations at once,
 * {@link #pushToOwners}), pulling ranges in pages, and dropping what was handed off. Both
 * directions retry a failed page while the other peer is still in the ring (a peer that just
 * joined may not serve its fork channel yet), and both serve the other side's requests here too.
 */
final class Transfers {
  private static final System.Logger LOG = System.getLogger(Transfers.class.getName());
  static final int PAGE_BYTES = 256 * 1024;
  /** Above {@link #VIEW_WAIT}: a pull request may wait that long for its source to see the view. */
  static final Duration PULL_TIMEOUT = Duration.ofSeconds(5);
  static final Duration PUSH_TIMEOUT = Duration.ofSeconds(2);
  static final Duration VIEW_WAIT = Duration.ofSeconds(2);
  /** How long to wait for a peer that just joined to serve its fork channel before trying anyway. */
  static final Duration READY_WAIT = Duration.ofSeconds(3);
  static final int ATTEMPTS = 5;
  /**
   * How a push refused by a peer the cluster refuses ends its error: most often another peer holds
   * its id (a push for that id reached this process), but its ring parameters may differ, or the
   * ring be full; the peer's log says which.
   */
  static final String NOT_IN_RING = " is not in the ring: the cluster refuses it (as when another peer holds its id;"
      + " see its log)";
  /** How a push refused by a leaving peer ends its error. */
  static final String LEAVING = " is leaving";

  private final Routing routing;
  private final Store store;
  private final Rpc rpc;
  private final Counters counters;
  private final LongSupplier viewId;
  private final IntSupplier pendingCallbacks;
  private final Predicate<String> ready;
  private final EventLog events;
  /** Faults a test asked for: refused pulls and repair pushes. */
  private final TestingAids aids;
  /** Where the pushes of {@link #pushToEach} run: {@link #pushThreads}, owned and stopped by the peer. */
  private final ExecutorService pushes;

  /**
   * How many destinations {@link #pushToEach} pushes to at once. A leaver in a cluster of five
   * hands off to four, and each push has one page ({@link #PAGE_BYTES}) in flight at a time, so
   * four bound what the requests hold here to about a megabyte; each destination still takes one
   * page from this peer at a time, as before. In larger clusters the other destinations wait their
   * turn.
   */
  static final int PARALLEL_PUSHES = 4;

  /**
   * The pool for {@link #Transfers}'s {@code pushes} ({@link FanOut#threads}): {@code max} threads
   * at most ({@link #PARALLEL_PUSHES} unless {@link TestingAids#PUSH_THREADS} says otherwise; 1
   * pushes to one destination at a time), the other destinations queued, and none kept once idle
   * for 30 seconds (a peer pushes only when it hands data off). Its owner shuts it down after the
   * node's close: the LEAVING change and the changes queued before it push until then. A push the
   * pool no longer takes, or still queued when it is shut down, is made all the same, on the thread
   * that calls it or that shuts the pool down: a shut-down pool is no reason to keep data back (a
   * call interrupted meanwhile is: its queued pushes send nothing).
   */
  static ExecutorService pushThreads(ThreadFactory threads, int max) {
    return FanOut.threads(threads, max);
  }

  /** Ranges this peer pulls again for an earlier view than a pull's ({@link PullRetries#pulling}). */
  interface Retrying {
    boolean pulling(List<KeyRange> ranges, long view);
  }

  private volatile Retrying retrying = (ranges, view) -> false;

  /** Set once the peer's {@link PullRetries} exist (they pull through this class). */
  void retrying(Retrying r) {
    this.retrying = r;
  }

  /**
   * @param pendingCallbacks the node's listener callbacks queued or running: with none running
   *                         here, a queued ownership change may still bring in ranges
   * @param pushes           where {@link #pushToEach} pushes, one task a destination:
   *                         {@link #pushThreads} (never the node's threads, nor the common pool: a
   *                         push waits on replies)
   */
  Transfers(Routing routing, Store store, Rpc rpc, Counters counters, LongSupplier viewId,
            IntSupplier pendingCallbacks, Predicate<String> ready, EventLog events,
            TestingAids aids, ExecutorService pushes) {
    this.pendingCallbacks = pendingCallbacks;
    this.pushes = pushes;
    this.aids = aids;
    this.routing = routing;
    this.store = store;
    this.rpc = rpc;
    this.counters = counters;
    this.events = events;
    this.viewId = viewId;
    this.ready = ready;
  }

  /** What a peer that is leaving answers a push or a forwarded write with. */
  static String leavingRefusal(String self) {
    return self + LEAVING;
  }

  /**
   * Whether a call to {@code peer} failed because that peer itself is leaving, and takes no data
   * (nor forwarded writes). Matched exactly: a peer that failed because a peer it called in turn
   * is leaving is not leaving itself.
   */
  static boolean refusedAsLeaving(Throwable cause, String peer) {
    return cause instanceof Rpc.RemoteError && (peer + ": " + leavingRefusal(peer)).equals(cause.getMessage());
  }

  /** As {@link #pushTo(String, List, Wire.PushKind, BooleanSupplier, BooleanSupplier)}, never stopped. */
  Optional<Address> pushTo(String destination, List<Entry> entries, Wire.PushKind kind, BooleanSupplier expired) {
    return pushTo(destination, entries, kind, expired, () -> false);
  }

  /**
   * Pushes entries in pages, giving up (unacknowledged) once {@code expired}: tested before each
   * attempt after a page's first, so that a push to a slow peer ends within about one
   * {@link #PUSH_TIMEOUT} a page of it (a leave's budget), and each page is still tried once; or
   * once {@code stop}: tested before every attempt, a page's first included (and while the push
   * waits for the destination to serve), so that a push no longer wanted (a sweep's, once the ring
   * it read has changed) sends no further page and leaves the push threads to the pushes queued
   * behind it. Every page goes to the one process that holds
   * the destination's id when the push starts: a destination restarted under its id between two
   * pages has lost the pages its old process took, so the push starts again, at the new process (at
   * most {@link #ATTEMPTS} times in all). On an interrupted thread (the peer stopping its sweeps and
   * retries) no page is sent.
   *
   * @return the process that acknowledged every page, for {@link #dropHandedOff}; empty if none did
   */
  Optional<Address> pushTo(String destination, List<Entry> entries, Wire.PushKind kind, BooleanSupplier expired,
                           BooleanSupplier stop) {
    Waits.until(() -> ready.test(destination) || expired.getAsBoolean() || stop.getAsBoolean(), READY_WAIT);
    for (int round = 1; ; round++) {
      Optional<Address> process = routing.addressOf(destination);
      if (process.isEmpty()) {
        if (stop.getAsBoolean()) { // a sweep's whose ring changed: often by this destination's leave, no fault
          LOG.log(Level.DEBUG, "{0}: push of {1} entries to {2} not sent: stopped", routing.self(), entries.size(),
              destination);
        } else {
          LOG.log(Level.WARNING, "{0}: push of {1} entries to {2} failed: it is not in the view", routing.self(),
              entries.size(), destination);
        }
        return Optional.empty();
      }
      PushOutcome outcome = pushPages(destination, process.get(), entries, kind, expired, stop);
      if (outcome != PushOutcome.NEW_PROCESS) {
        return outcome == PushOutcome.ACKNOWLEDGED ? process : Optional.empty();
      }
      if (round >= ATTEMPTS) {
        LOG.log(Level.WARNING, "{0}: push of {1} entries to {2} failed: its process changed {3} times during the"
            + " push", routing.self(), entries.size(), destination, round);
        return Optional.empty();
      }
      LOG.log(Level.INFO, "{0}: {1} was restarted during a push; pushing its {2} entries again, from the first",
          routing.self(), destination, entries.size());
    }
  }

  /** How a push to one process ended. */
  private enum PushOutcome {
    /** That process acknowledged every page. */
    ACKNOWLEDGED,
    /** It failed, for good. */
    FAILED,
    /** Another process holds the destination's id now. */
    NEW_PROCESS
  }

  /** Test seam: called with each page's number once its process acknowledged it. */
  volatile IntConsumer afterPage = page -> { };

  private PushOutcome pushPages(String destination, Address process, List<Entry> entries, Wire.PushKind kind,
                                BooleanSupplier expired, BooleanSupplier stop) {
    int from = 0;
    for (int pageNumber = 1; from < entries.size(); pageNumber++) {
      int to = from;
      int bytes = 0;
      while (to < entries.size() && (to == from || bytes + entries.get(to).weight() <= PAGE_BYTES)) {
        bytes += entries.get(to++).weight();
      }
      byte[] request = Wire.push(new Wire.PushRequest(kind, routing.self(), entries.subList(from, to)));
      for (int attempt = 1; ; attempt++) {
        if (stop.getAsBoolean()) {
          LOG.log(Level.DEBUG, "{0}: push of {1} entries to {2} not sent: stopped", routing.self(),
              entries.size() - from, destination);
          return PushOutcome.FAILED;
        }
        if (attempt > 1 && expired.getAsBoolean()) {
          LOG.log(Level.WARNING, "{0}: push of {1} entries to {2} given up: out of time", routing.self(),
              entries.size() - from, destination);
          return PushOutcome.FAILED;
        }
        if (Thread.currentThread().isInterrupted()) {
          // The peer is stopping its sweeps, repairs and retries: sending a page it would not wait
          // for would only compete with the leave's hand-off.
          LOG.log(Level.DEBUG, "{0}: push of {1} entries to {2} not sent: interrupted", routing.self(),
              entries.size() - from, destination);
          return PushOutcome.FAILED;
        }
        try {
          Rpc.await(rpc.call(destination, process, request, PUSH_TIMEOUT), PUSH_TIMEOUT);
          break;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return PushOutcome.FAILED;
        } catch (ExecutionException e) {
          Throwable cause = Rpc.unwrap(e);
          boolean leaving = refusedAsLeaving(cause, destination);
          if (leaving) {
            routing.markLeaving(destination, Optional.of(process)); // it will not take data again: no point retrying
          } else if (routing.isLive(destination) && !routing.addressOf(destination).equals(Optional.of(process))) {
            return PushOutcome.NEW_PROCESS;
          }
          if (leaving || attempt >= ATTEMPTS || !routing.isLive(destination)) {
            // A peer that refused because it is leaving is no fault: the entries are kept, and go
            // to the ring's owners once it has left (during every other peer's leave, each sweep
            // would say so at WARNING).
            LOG.log(leaving ? Level.DEBUG : Level.WARNING, "{0}: push of {1} entries to {2} failed: {3}", routing.self(),
                to - from, destination, cause);
            return PushOutcome.FAILED;
          }
          Waits.pause(Duration.ofMillis(200L * attempt));
        }
      }
      afterPage.accept(pageNumber);
      from = to;
    }
    return PushOutcome.ACKNOWLEDGED;
  }

  /**
   * What a pull brought in.
   *
   * @param changed  entries that changed the store here, from every page merged (a pull that
   *                 failed half way merged and counts its first pages)
   * @param complete whether the source answered to the last page
   */
  record Pulled(long changed, boolean complete) {}

  /** Pulls the ranges page by page into the store. */
  Pulled pull(String source, List<KeyRange> ranges, long view) {
    return pull(source, ranges, view, () -> false);
  }

  /**
   * As {@link #pull(String, List, long)}, ending (incomplete) once {@code stop}, or once the thread
   * is interrupted (the peer stopping its retries), tested before each attempt.
   */
  Pulled pull(String source, List<KeyRange> ranges, long view, BooleanSupplier stop) {
    long changed = 0;
    Store.Cursor cursor = Store.Cursor.START;
    while (true) {
      byte[] request = Wire.pull(new Wire.PullRequest(view, ranges, cursor, PAGE_BYTES));
      Store.Page page = null;
      for (int attempt = 1; page == null; attempt++) {
        if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
          LOG.log(Level.INFO, "{0}: pull of {1} ranges from {2} ended: this peer is stopping", routing.self(),
              ranges.size(), source);
          return new Pulled(changed, false);
        }
        try {
          page = Wire.readPage(Rpc.await(rpc.call(source, request, PULL_TIMEOUT), PULL_TIMEOUT));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return new Pulled(changed, false);
        } catch (Exception e) {
          if (attempt >= ATTEMPTS || !routing.isLive(source)) {
            LOG.log(Level.WARNING, "{0}: pull of {1} ranges from {2} failed: {3}", routing.self(), ranges.size(),
                source, Rpc.unwrap(e));
            return new Pulled(changed, false);
          }
          Waits.pause(Duration.ofMillis(200L * attempt));
        }
      }
      for (Entry e : page.entries()) {
        if (store.merge(e)) {
          changed++;
        }
      }
      if (page.next().isEmpty()) {
        return new Pulled(changed, true);
      }
      // A source whose page does not move the scan on (a bug, or a peer of another version) would
      // be asked for the same page for good: the pull ends, and is retried as a failed one.
      if (!page.next().get().isPast(cursor)) {
        LOG.log(Level.WARNING, "{0}: pull of {1} ranges from {2} failed: its page ends at {3}, not past {4}",
            routing.self(), ranges.size(), source, page.next().get(), cursor);
        return new Pulled(changed, false);
      }
      cursor = page.next().get();
    }
  }

  /**
   * Pushes entries grouped by their owners once to each owner that {@code to} accepts, of every
   * entry it owns (a push per owner list would make about as many round trips as entries in a
   * large cluster, where most owner lists differ), as {@link #pushToEach} does.
   *
   * @return the owners that took all that was pushed to them, each with the process that
   *         acknowledged, for {@link #dropHandedOff(Map, Map, Consumer)}
   */
  Map<String, Address> pushToOwners(Map<List<String>, List<Entry>> byOwners, Predicate<String> to,
                                    Wire.PushKind kind, BooleanSupplier expired) {
    return pushToOwners(byOwners, to, kind, expired, () -> false);
  }

  /**
   * As {@link #pushToOwners(Map, Predicate, Wire.PushKind, BooleanSupplier)}, each push ending,
   * unacknowledged, once {@code stop}, tested before each page it sends
   * ({@link #pushTo(String, List, Wire.PushKind, BooleanSupplier, BooleanSupplier)}).
   */
  Map<String, Address> pushToOwners(Map<List<String>, List<Entry>> byOwners, Predicate<String> to,
                                    Wire.PushKind kind, BooleanSupplier expired, BooleanSupplier stop) {
    Map<String, List<Entry>> perOwner = new LinkedHashMap<>();
    byOwners.forEach((owners, entries) -> owners.stream().filter(to)
        .forEach(owner -> perOwner.computeIfAbsent(owner, k -> new ArrayList<>()).addAll(entries)));
    return pushToEach(perOwner, kind, expired, stop);
  }

  /**
   * Pushes each owner its entries, to {@link #PARALLEL_PUSHES} owners at once, each on one of the
   * peer's push threads ({@link FanOut#run}), so that a leave or a repair takes about as long as its
   * longest push rather than all of them in a row; returns once every push has ended. Each push
   * gives up once {@code expired}, tested as
   * {@link #pushTo(String, List, Wire.PushKind, BooleanSupplier, BooleanSupplier)} says;
   * interrupted while it waits (the peer stopping its sweeps and repairs, the node stopping a
   * callback that outlived its leave timeout), this interrupts the pushes, which end as they would
   * on this thread, and returns with its interrupt kept. A push the pool no longer takes is made on
   * this thread, in full. A push that throws (a bug) fails the call once all have ended: the first,
   * in the order of the owners, is thrown, the later ones suppressed in it.
   *
   * @return the owners that took all that was pushed to them, each with the process that
   *         acknowledged
   */
  Map<String, Address> pushToEach(Map<String, List<Entry>> perOwner, Wire.PushKind kind, BooleanSupplier expired) {
    return pushToEach(perOwner, kind, expired, () -> false);
  }

  /**
   * As {@link #pushToEach(Map, Wire.PushKind, BooleanSupplier)}, each push ending, unacknowledged,
   * once {@code stop}, tested before each page it sends
   * ({@link #pushTo(String, List, Wire.PushKind, BooleanSupplier, BooleanSupplier)}): a push still
   * queued behind other pushes then sends nothing when it starts.
   */
  Map<String, Address> pushToEach(Map<String, List<Entry>> perOwner, Wire.PushKind kind, BooleanSupplier expired,
                                  BooleanSupplier stop) {
    List<String> owners = List.copyOf(perOwner.keySet());
    List<FanOut.Task<Optional<Address>>> pushEach = new ArrayList<>();
    // A push of an interrupted call that runs off the push threads (queued when the peer stopped
    // them) sends nothing, as it would have sent nothing on the call's own, interrupted thread.
    perOwner.forEach((owner, entries) -> pushEach.add(interrupted -> interrupted.getAsBoolean() ? Optional.empty()
        : pushTo(owner, entries, kind, expired, stop)));
    List<Optional<Address>> acknowledged = FanOut.run(pushes, pushEach);
    Map<String, Address> took = new HashMap<>();
    for (int i = 0; i < owners.size(); i++) {
      String owner = owners.get(i);
      acknowledged.get(i).ifPresent(process -> took.put(owner, process));
    }
    return took;
  }

  /**
   * {@link #dropHandedOff(List, Map)} for each owner list's entries, counting only the owners that
   * list names: a ring changed since the push may name another owner, one that took other
   * entries, not these.
   *
   * @param droppedTo told the owners of each list some of whose entries were dropped
   * @return how many entries were dropped
   */
  long dropHandedOff(Map<List<String>, List<Entry>> byOwners, Map<String, Address> took,
                     Consumer<Set<String>> droppedTo) {
    long dropped = 0;
    for (Map.Entry<List<String>, List<Entry>> group : byOwners.entrySet()) {
      Map<String, Address> tookThese = new HashMap<>(took);
      tookThese.keySet().retainAll(group.getKey());
      long these = dropHandedOff(group.getValue(), tookThese);
      if (these > 0) {
        dropped += these;
        droppedTo.accept(tookThese.keySet());
      }
    }
    return dropped;
  }

  /**
   * Drops the entries that every owner has now acknowledged, unless this peer owns them or they
   * were rewritten since they were read. The owners are those of the ring this peer routes by at
   * the drop, not at the push: a member that joined meanwhile (a joiner during a leave, say) may own
   * some of them now without having got them, and its pull from here may already be over, so those
   * are kept for a later pass, the leave's drain or the sweep, to hand to it. An owner counts only
   * while the process that acknowledged holds its id: one restarted since has lost what it took.
   *
   * @param took the peers that took every one of these entries, each with the process that
   *             acknowledged a push of them all (none that took other entries only)
   */
  long dropHandedOff(List<Entry> entries, Map<String, Address> took) {
    long dropped = 0;
    for (Entry e : entries) {
      List<String> owners = routing.owners(e.key());
      if (owners.isEmpty() || routing.indexOfSelf(owners) >= 0 || !tookAll(owners, took)) {
        continue;
      }
      if (routing.isLeaving()) {
        // Still read here until this peer has left the others' view; kept before the drop, so
        // that a read between the two finds it. Kept even if the drop does not happen: a read
        // takes the stored copy then, which is as new or newer.
        store.keepHandedOff(e);
      }
      if (store.removeIfUnchanged(e)) {
        dropped++;
      }
    }
    return dropped;
  }

  /**
   * Whether every peer in {@code took} is still the process that acknowledged: one restarted under
   * its id since has lost what its old process took.
   */
  boolean stillHeldByThoseThatTook(Map<String, Address> took) {
    return took.entrySet().stream().allMatch(t -> routing.addressOf(t.getKey()).equals(Optional.of(t.getValue())));
  }

  /** Whether each owner took the entries, through the process that holds its id now. */
  private boolean tookAll(List<String> owners, Map<String, Address> took) {
    for (String owner : owners) {
      Address process = took.get(owner);
      if (process == null || !routing.addressOf(owner).equals(Optional.of(process))) {
        return false;
      }
    }
    return true;
  }

  /** The ids of the members that are in the ring this peer routes by, this peer excepted. */
  List<String> liveOthers(List<Member> members) {
    List<String> out = new ArrayList<>();
    for (Member m : members) {
      if (!routing.isSelf(m.id()) && routing.isLive(m.id())) {
        out.add(m.id());
      }
    }
    return out;
  }

  /** Handles {@link Wire#OP_PULL}. */
  byte[] handlePull(DataInputStream in) throws Exception {
    Wire.PullRequest r = Wire.readPull(in);
    if (aids.refusePull()) {
      return Wire.error("pull refused (" + TestingAids.REFUSE_PULLS + ")");
    }
    // Scan only once this peer routes by the puller's ring (or a newer one): a write stored here
    // after the scan then sees the new ring and is forwarded to the puller. A scan before that
    // could miss a write stored here by the old ring, and the puller would count the range as
    // pulled: refuse instead, and the puller asks again.
    if (!Waits.until(() -> viewId.getAsLong() >= r.viewId(), VIEW_WAIT)) {
      return Wire.error("view " + r.viewId() + " not installed here yet (this peer has view "
          + viewId.getAsLong() + ")");
    }
    String busy = stillTakingIn(r.viewId());
    if (busy == null && retrying.pulling(r.ranges(), r.viewId())) {
      busy = "still pulling part of these ranges again, for an earlier view";
    }
    if (busy != null) {
      return Wire.error(busy + "; ask again");
    }
    // A page of at most PAGE_BYTES whatever the puller asks: a reply waits for flow-control credits
    // on one of the RPC workers, so what a slow or hostile puller can hold is workers x one page.
    return Wire.page(store.scan(r.ranges(), r.cursor(), Math.min(r.maxBytes(), PAGE_BYTES)));
  }

  /**
   * Why this peer may still be receiving ranges a pull for {@code view} asks for, or null. It may
   * be an owner still taking them in for an earlier view (it joined, then another owner crashed):
   * what it holds now would be all the puller ever got of them, since entries merged here later
   * are not passed on. So it refuses (the puller asks again) before its first ownership change is
   * handled, while it handles one of an earlier view, or while one is queued. One of the puller's
   * own view is answered: two owners that gained ranges in one view pull from each other.
   */
  private String stillTakingIn(long view) {
    if (!counters.settled.get()) {
      return "still taking in its first ranges";
    }
    long migrating = counters.migratingView.get();
    if (migrating >= 0) {
      return migrating < view ? "still moving data for view " + migrating : null;
    }
    return pendingCallbacks.getAsInt() > 0 ? "ownership changes queued here" : null;
  }

  /**
   * Handles {@link Wire#OP_PUSH}: merges, and counts (and reports) what it brought in, refused or
   * not. A leaving peer refuses, so the sender keeps its copy: otherwise a peer that has not yet
   * seen the leave could sweep keys that the leaver just handed it back to the leaver, drop them,
   * and lose them. Checked after the merge, like writes: a push merged after the leaver's hand-off
   * scan is refused.
   */
  byte[] handlePush(DataInputStream in) throws Exception {
    Wire.PushRequest r = Wire.readPush(in);
    aids.holdPushPage(r.kind()); // a slow destination, if a benchmark asked for one
    if (r.kind() == Wire.PushKind.REPAIR && aids.refuseRepair(r.from())) {
      return Wire.error("repair push refused (" + TestingAids.REFUSE_REPAIRS + ")");
    }
    if (r.kind() != Wire.PushKind.REPAIR && aids.refuseHandoff()) {
      return Wire.error(r.kind().name().toLowerCase(Locale.ROOT) + " push refused (" + TestingAids.REFUSE_HANDOFFS + ")");
    }
    int changed = 0;
    for (Entry e : r.entries()) {
      if (store.merge(e)) {
        changed++;
      }
    }
    Routing.storedThenRoute();
    // Counted and reported even if refused below: what it merged is here either way, and this
    // peer's leave (counted as migrated out) or sweep hands it on later (a leaving peer, or one
    // the cluster refuses, merges before it refuses; a retry of the same push adds nothing).
    if (r.kind() == Wire.PushKind.MIGRATION) {
      counters.keysMigratedIn.add(changed);
    }
    if (changed > 0) {
      events.publish(Events.received(r.kind().name().toLowerCase(Locale.ROOT), r.from(), changed, r.entries().size()));
    }
    if (!routing.inRing()) {
      // The sender meant the peer holding this id; it keeps its copy, and this peer's sweep (or
      // its leave) hands on what it merged. Checked first: a sender told "leaving" would route
      // around the id, the holder's included.
      return Wire.error(routing.self() + NOT_IN_RING);
    }
    if (routing.isLeaving()) {
      return Wire.error(leavingRefusal(routing.self())); // what it merged, its own leave hands on
    }
    // Taken: the sender may drop its copies now, those this peer held already included.
    r.entries().forEach(store::retake);
    return Wire.pushReply(changed);
  }
}
