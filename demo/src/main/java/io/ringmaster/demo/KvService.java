package io.ringmaster.demo;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.jgroups.Address;

/**
 * Reads and writes keys on their owners.
 *
 * <p>A write is acknowledged once every owner in this peer's current ring stored it. An owner that
 * receives a write stores it and then, reading its own ring <em>after</em> the store, forwards it
 * to any owner the sender did not write to (a ring newer than the sender's). Reading the ring
 * after the store is what keeps writes racing a migration: the rebalancer scans a range only
 * after the new ring is published, so a store the scan missed sees the new ring and is forwarded,
 * and a store the scan saw is migrated with it. Stores are idempotent merges by version, so
 * retries and duplicate deliveries are harmless. A peer that is leaving takes a write sent to it
 * and forwards it to its successors; a write it sends or forwards names itself and the peers it
 * knows are leaving, each with its process, so that nobody forwards to them and a receiver leaving
 * too routes around them (a receiver ignores a name whose id is another process there);
 * and it refuses a write forwarded to it by a peer that does not know it is leaving (another one
 * leaving at the same moment), which then routes around it, while the writer writes again.
 *
 * <p>Versions come from the accepting peer's clock ({@link VersionClock}). A write can still
 * reach an owner that holds a newer version than its own: a concurrent write, or an earlier one
 * stamped by a clock that runs ahead (another host's). Owners therefore answer with the newest
 * version they hold; a write that lost is stamped again, past that, and sent again. So an
 * acknowledged write is the newest version on every owner when it is acknowledged.
 *
 * <p>Copies can still differ for a while without any write failing: each side of a partition
 * keeps its own writes until the merge repair pushes them across, and a new owner holds nothing
 * of a range until its pull completes. A read therefore asks every owner and returns the newest
 * copy, and sends it to the owners it found behind.
 */
final class KvService {
  private static final System.Logger LOG = System.getLogger(KvService.class.getName());
  /** Forwarding stops after this many peers; a longer chain means rings still settling: retry. */
  static final int MAX_HOPS = 3;
  static final Duration CALL_TIMEOUT = Duration.ofSeconds(2);
  static final Duration WRITE_DEADLINE = Duration.ofSeconds(10);
  static final Duration READY_WAIT = Duration.ofSeconds(1);
  /**
   * How long each step back to a key's previous owners may take: a peer that may go {@code n}
   * steps back waits {@code n} times this for its previous owners' copies, so that the step after
   * it has its own time; two steps fit a reader's {@link #CALL_TIMEOUT}. A write's check waits
   * less where its sender, or the write's deadline, leaves it less time (see {@link #forwardTimeout}).
   */
  static final Duration PREVIOUS_OWNER_TIMEOUT = Duration.ofMillis(900);
  /** How many steps back a read may go to the previous owners of a key still moving ({@link #ownCopy}). */
  static final int STEPS_BACK = 2;
  /** How long a read waits for the other owners once a copy arrived. */
  static final Duration READ_GRACE = Duration.ofMillis(500);
  /**
   * How long after the peer stopped a write call may still get its reply (see {@link #awaitReply}):
   * well inside the grace {@link Peer} gives requests in flight.
   */
  static final Duration REPLY_AFTER_STOP = Duration.ofSeconds(1);

  /**
   * The waits of a peer's reads and writes: {@link #DEFAULT} but in tests that hold an owner's
   * answer, or that need a margin wider than a default grace.
   *
   * @param call           how long a write waits for each owner's answer before it tries again (less
   *                       if its deadline comes first)
   * @param deadline       how long a write tries in all before it fails as {@link Unavailable}
   * @param readGrace      how long a read waits for the other owners once a copy arrived
   *                       (within the read's own {@link #CALL_TIMEOUT})
   * @param replyAfterStop how long after the peer stopped a write call may still get its reply
   */
  record Timeouts(Duration call, Duration deadline, Duration readGrace, Duration replyAfterStop) {
    static final Timeouts DEFAULT = new Timeouts(CALL_TIMEOUT, WRITE_DEADLINE, READ_GRACE, REPLY_AFTER_STOP);

    /** A write's own waits, with the default graces. */
    Timeouts(Duration call, Duration deadline) {
      this(call, deadline, READ_GRACE, REPLY_AFTER_STOP);
    }

    Timeouts withReadGrace(Duration grace) {
      return new Timeouts(call, deadline, grace, replyAfterStop);
    }

    Timeouts withReplyAfterStop(Duration grace) {
      return new Timeouts(call, deadline, readGrace, grace);
    }
  }

  /** The owners that stored a write, and its version. */
  record Written(String key, List<String> owners, Version version) {}

  /**
   * The newest copy of a key among the owners that answered (empty if none holds one), and the
   * owner whose copy it is (or, for a miss, the first in the order asked that answered).
   */
  record Read(String key, Optional<Entry> entry, String servedBy, List<String> owners) {}

  /** No owner could be reached in time; the write may or may not have been stored. */
  static final class Unavailable extends RuntimeException {
    Unavailable(String message) {
      super(message, null, false, false);
    }
  }

  private final Routing routing;
  private final Store store;
  private final VersionClock clock;

  /** The clock this peer stamps its writes with (for tests). */
  VersionClock clock() {
    return clock;
  }
  private final Rpc rpc;
  private final Counters counters;
  private final LongSupplier viewId;
  private final Predicate<String> ready;
  private final boolean readRepair;
  private final Timeouts timeouts;
  private final Function<String, List<String>> previousOwners;
  /** Set once the peer has left: a write still going round its loop then gives up at once. */
  private volatile boolean stopped;
  /** Completed by {@link #stopped()}: wakes the waits of writes in flight, whose replies can no longer come. */
  private final CompletableFuture<Long> stopSignal = new CompletableFuture<>();

  /**
   * @param ready         whether a peer serves requests yet
   * @param readRepair    whether a read sends the newest copy to the owners it found behind (off only
   *                      for tests that count the copies migrations made: {@link TestingAids#NO_READ_REPAIR})
   * @param timeouts      {@link Timeouts#DEFAULT} but in tests
   */
  KvService(Routing routing, Store store, VersionClock clock, Rpc rpc, Counters counters, LongSupplier viewId,
            Predicate<String> ready, boolean readRepair, Timeouts timeouts,
            Function<String, List<String>> previousOwners) {
    this.routing = routing;
    this.store = store;
    this.clock = clock;
    this.rpc = rpc;
    this.counters = counters;
    this.viewId = viewId;
    this.ready = ready;
    this.readRepair = readRepair;
    this.timeouts = timeouts;
    this.previousOwners = previousOwners;
  }

  Written put(String key, String value) {
    counters.putsServed.increment();
    return replicate(Entry.of(key, value, clock.next()));
  }

  Written delete(String key) {
    counters.deletesServed.increment();
    return replicate(Entry.tombstone(key, clock.next()));
  }

  /**
   * Called once the peer has left the cluster: writes still in flight answer 503 "the peer is
   * stopping" at their next round instead of retrying until their deadline.
   */
  void stopped() {
    stopped = true; // first: a write woken by the signal must find it set
    stopSignal.complete(System.nanoTime());
  }

  /**
   * A write call's reply, as {@link Rpc#await} gives it, except that a peer stopping meanwhile ends
   * the wait with 503 "the peer is stopping" within {@link Timeouts#replyAfterStop} of the stop (a reply
   * received as the node left may still be on its way to the call): the node has left, so no
   * other reply will come, and the call's own timeout would outlast the grace the peer gives
   * requests in flight.
   *
   * @param timeout the call's timeout, or less: what the round's calls were given
   * @param until   when to stop waiting without a reply ({@link System#nanoTime}): shared by the
   *                round's calls, so that a timer held up costs the write one {@link Rpc#AWAIT_MARGIN},
   *                not one for each owner
   */
  private Wire.WriteReply awaitReply(CompletableFuture<Wire.WriteReply> call, Duration timeout, long until)
      throws InterruptedException, ExecutionException {
    try {
      CompletableFuture.anyOf(call, stopSignal).get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (ExecutionException | TimeoutException readBelow) {
      // the call's own failure, read below; or no reply in time
    }
    if (!call.isDone() && stopSignal.isDone()) {
      try {
        long left = stopSignal.join() + timeouts.replyAfterStop().toNanos() - System.nanoTime(); // one grace for every call
        call.get(Math.max(0, left), TimeUnit.NANOSECONDS);
      } catch (ExecutionException | TimeoutException readBelow) {
        // as above
      }
    }
    if (!call.isDone()) {
      if (stopSignal.isDone()) {
        throw new Unavailable("the peer is stopping");
      }
      throw Rpc.noReply(timeout);
    }
    return call.get(); // done: its reply, or its failure
  }

  /**
   * Writes {@code e} to the key's owners until every owner of the current ring has it: after a
   * failure, waits for a new view (the owner may have crashed) and writes to the owners of the
   * ring then.
   */
  Written replicate(Entry write) {
    Entry e = write;
    Set<String> stored = new LinkedHashSet<>();
    // The process that stored the write under each id in "stored", as its reply named it: once the
    // id names another process (restarted, or rejoined), that copy no longer counts and the write
    // is sent again.
    Map<String, UUID> storedBy = new HashMap<>();
    boolean storedHere = false; // this peer's own copy is among "stored", under its id
    long deadline = System.nanoTime() + timeouts.deadline().toNanos();
    LastError lastError = new LastError();
    while (true) {
      if (stopped) {
        // Left the cluster: no owner can be reached any more, so the rounds left until the deadline
        // would only hold the request (and the peer's stop) up. The writer tries another peer.
        throw new Unavailable("the peer is stopping");
      }
      long view = viewId.getAsLong();
      if (storedHere && !routing.inRing()) {
        // A copy stored here while this peer held its id does not count once the cluster refuses
        // it: the id now names the peer that holds it.
        stored.remove(routing.self());
        storedBy.remove(routing.self());
        storedHere = false;
      }
      boolean counted = storedHere; // this peer's own copy: checked above
      stored.removeIf(id -> {
        boolean restarted = !(counted && routing.isSelf(id))
            && !routing.processOf(id).equals(Optional.ofNullable(storedBy.get(id)));
        if (restarted) {
          storedBy.remove(id);
        }
        return restarted;
      });
      List<String> owners = routing.owners(e.key());
      if (owners.isEmpty()) {
        throw new Unavailable("the ring has no owners");
      }
      List<String> missing = new ArrayList<>(owners);
      missing.removeAll(stored);
      if (missing.isEmpty()) {
        return new Written(e.key(), owners, e.version());
      }
      if (deadline - System.nanoTime() <= 0) { // the wait for a new view lasted until the deadline: no round without time
        throw notStored(e.key(), missing, stored, lastError.toString());
      }
      // Names this peer and the others it knows are leaving, if it is: no owner forwards to them.
      Wire.WriteRequest request = new Wire.WriteRequest(e, new LinkedHashSet<>(owners), 0, routing.leavers());
      if (routing.isLeaving() && routing.inRing()) {
        // Not an owner in the ring it leaves behind, but still in everyone else's until it leaves
        // their view: a copy here serves their reads meanwhile (the owners written to hold the
        // copies that count).
        store.merge(e);
      }
      byte[] message = Wire.write(request);
      Map<String, CompletableFuture<Wire.WriteReply>> calls = new LinkedHashMap<>();
      boolean here = routing.indexOfSelf(missing) >= 0; // decided once: this peer's id is this peer
      for (String owner : missing) {
        if (!(here && owner.equals(routing.self()))) {
          // An owner that just joined may not serve its fork channel yet: a request now would time out.
          // Each wait, and each call, within the time the write has left: never past its deadline.
          Waits.until(() -> stopped || ready.test(owner), atMost(READY_WAIT, deadline));
          calls.put(owner, rpc.call(owner, message, atMost(timeouts.call(), deadline)).thenApply(KvService::reply));
        }
      }
      if (here) {
        // Its check of the previous owners and its forwards, too, within the time the write has left.
        calls.put(routing.self(), storeAndForward(request, atMost(forwardTimeout(request.hops()), deadline)));
      }
      Version newest = e.version();
      boolean beaten = false; // an owner holds another entry with this very version, which wins
      // Every call ends by then, at its own timeout, this peer's own store's too (its check of the
      // key's previous owners and its forwards were given the time left); the margin is for a timer
      // held up. Past this end the round counts a call as no reply.
      Duration timeout = atMost(timeouts.call(), deadline);
      boolean cutShort = timeout.compareTo(timeouts.call()) < 0; // by the deadline
      long repliesDue = System.nanoTime() + timeout.plus(Rpc.AWAIT_MARGIN).toNanos();
      for (Map.Entry<String, CompletableFuture<Wire.WriteReply>> call : calls.entrySet()) {
        try {
          Wire.WriteReply reply = awaitReply(call.getValue(), timeout, repliesDue);
          // The owner called, and those it forwarded the write to, each with its process.
          reply.storedBy().forEach((id, process) -> {
            stored.add(id);
            storedBy.putIfAbsent(id, process);
          });
          storedHere |= here && call.getKey().equals(routing.self()) && reply.stored().contains(routing.self());
          newest = reply.held().isNewerThan(newest) ? reply.held() : newest;
          beaten |= reply.beaten();
        } catch (ExecutionException failed) {
          String error = call.getKey() + ": " + Rpc.describe(failed);
          if (cutShort && Rpc.unwrap(failed) instanceof TimeoutException) {
            lastError.cutShort(error);
          } else {
            lastError.set(error);
          }
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new Unavailable("interrupted");
        }
      }
      boolean superseded = newest.isNewerThan(e.version()) || beaten;
      if (superseded) {
        String why = newest.isNewerThan(e.version()) ? "superseded by " + newest
            : "another entry holds the version " + newest;
        // A newer version got there first (see the class comment), or another entry with this very
        // version (a process restarted under this peer's id stamped the same microsecond) won the
        // tie: restamp past it, write again.
        clock.observe(newest.stamp());
        storedBy.clear();
        Version again = clock.next();
        if (!again.isNewerThan(newest)) { // a stamp the clock does not follow: see VersionClock.observe
          // A conflict with what is stored, not a reason to retry: writing again changes nothing.
          throw new HttpError(409, "\"" + e.key() + "\" holds a version stamped " + newest.stamp() + " by "
              + newest.writer() + ", more than " + VersionClock.MAX_AHEAD.toDays() + " days ahead of this peer's clock ("
              + again.stamp() + "): a peer's clock is wrong; no write can supersede it here");
        }
        e = new Entry(e.key(), e.value(), again, e.deleted());
        stored.clear();
        storedHere = false;
        lastError.set(why);
      } else if (stored.containsAll(missing)) {
        if (stopped) {
          // Every owner of the ring of this round stored it: the stop changes nothing for this write.
          return new Written(e.key(), owners, e.version());
        }
        if (System.nanoTime() <= deadline) {
          continue; // check the owners again: the ring may have changed meanwhile
        }
        // Every owner stored it in this round, yet the rounds went on until the deadline: each time
        // a copy stored by a process other than the one now holding its id was dropped. Never loop
        // past the deadline, whatever the views say.
        lastError.set("copies stored by processes other than those holding the owners' ids now");
      }
      if (System.nanoTime() > deadline) {
        throw notStored(e.key(), missing, stored, lastError.toString());
      }
      if (!superseded) {
        // An owner may have crashed; a stop ends the wait too, for the 503 at the top of the loop. With
        // less than two such waits left, this one lasts until the deadline: a round needs time for its calls.
        Duration pause = Duration.ofMillis(250);
        Duration left = atMost(timeouts.deadline(), deadline);
        Waits.until(() -> stopped || viewId.getAsLong() != view,
            left.compareTo(pause.multipliedBy(2)) < 0 ? left : pause);
      }
    }
  }

  /**
   * Why a write is not stored yet, for the 503 that ends it: the last error of its rounds, and a
   * call the write's deadline cut short after it, if one did.
   */
  private static final class LastError {
    private String error = "";
    private String cutOff = ""; // a timeout after the error, in a round the deadline cut short

    /** A new reason the write is not stored: it replaces the last, and any cut-short call after it. */
    void set(String error) {
      this.error = error;
      cutOff = "";
    }

    /**
     * A call that timed out in a round the deadline cut short: said after the error before it,
     * which says why the write was not stored until then (an owner superseding it, say). With no
     * error before it, it is the error.
     */
    void cutShort(String error) {
      if (this.error.isEmpty()) {
        set(error);
      } else {
        cutOff = "; then " + error + " (the write's deadline cut that call short)";
      }
    }

    @Override
    public String toString() {
      return error + cutOff;
    }
  }

  /** The 503 of a write whose owners {@code missing} did not all store it ({@code stored} did) by its deadline. */
  private Unavailable notStored(String key, List<String> missing, Set<String> stored, String lastError) {
    List<String> unstored = new ArrayList<>(missing);
    unstored.removeAll(stored);
    return new Unavailable("owners " + (unstored.isEmpty() ? missing : unstored) + " of \"" + key
        + "\" did not store the write within " + timeouts.deadline().toSeconds() + " s; last error: " + lastError);
  }

  /**
   * {@code wait}, or the time left until {@code deadline} (a {@link System#nanoTime} value) if less,
   * in whole milliseconds rounded up (a wait that long reaches the deadline); never negative.
   */
  private static Duration atMost(Duration wait, long deadline) {
    long left = (Math.max(0, deadline - System.nanoTime()) + 999_999) / 1_000_000;
    return left < wait.toMillis() ? Duration.ofMillis(left) : wait;
  }

  /** The leavers of both; for an id in both, this peer's own process for it (checked here, and later). */
  private static Wire.Leavers union(Wire.Leavers named, Wire.Leavers own) {
    if (named.isEmpty() || own.isEmpty()) {
      return named.isEmpty() ? own : named;
    }
    Map<String, UUID> processes = new LinkedHashMap<>(named.processes());
    processes.putAll(own.processes());
    return new Wire.Leavers(processes);
  }

  private static Wire.WriteReply reply(DataInputStream in) {
    try {
      return Wire.readWriteReply(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Handles {@link Wire#OP_WRITE} without blocking. */
  CompletableFuture<byte[]> handleWrite(DataInputStream in) throws IOException {
    return storeAndForward(Wire.readWrite(in)).thenApply(Wire::writeReply);
  }

  /**
   * Whether {@code copy} has the write's very version and wins over it (see
   * {@link Entry#supersedes}): then the write was not kept, though no newer version was seen.
   */
  private static boolean beats(Optional<Entry> copy, Entry write) {
    return copy.isPresent() && copy.get().version().equals(write.version()) && copy.get().supersedes(write);
  }

  /**
   * Stores the write here, then sends it on to the owners (by this peer's ring, read after the
   * store) that the sender did not write to. Never blocks: the future completes when those
   * owners answered (each call is bounded by its timeout).
   *
   * @return the peers that stored it, and the newest version they hold
   */
  CompletableFuture<Wire.WriteReply> storeAndForward(Wire.WriteRequest r) {
    return storeAndForward(r, forwardTimeout(r.hops()));
  }

  /**
   * As {@link #storeAndForward(Wire.WriteRequest)}, its calls (the check of
   * {@link #withPreviousOwners} and the forwards) each within {@code timeout}: a write that this
   * peer makes itself gives them no more than the time it has left.
   */
  private CompletableFuture<Wire.WriteReply> storeAndForward(Wire.WriteRequest r, Duration timeout) {
    Entry e = r.entry();
    if (store.merge(e)) {
      counters.writesStored.increment();
    }
    Wire.Leavers named = routing.accept(r.leaving()); // marked here, if this peer leaves too
    Routing.storedThenRoute();
    clock.observe(e.version().stamp());
    List<String> owners = routing.owners(e.key());
    // This peer's copy counts only while it is in the ring. The sender named it by its id: if the
    // cluster refuses this peer now, that id is another peer's, which has not seen the write.
    boolean counted = routing.inRing();
    if (r.hops() > 0 && counted && routing.isLeaving()) {
      // A forwarded write names this peer as an owner in its sender's ring: the ring of a peer that
      // has not heard this one is leaving (another peer leaving, forwarding to it as its successor;
      // a request names the leavers its senders knew of, and nobody forwards to those). A leaving
      // peer succeeds nobody, and its hand-off may be over: refuse, as a push is refused, so that a
      // leaving sender routes around it and the writer writes again, instead of counting copies
      // that are leaving. Not while the cluster refuses this peer: its id is then another peer's,
      // which is not leaving.
      return CompletableFuture.failedFuture(new Rpc.Declined(Transfers.leavingRefusal(routing.self())));
    }
    // Named with this process, so that the writer can tell if the id is another process's later.
    Optional<UUID> mine = counted ? routing.ownProcess() : Optional.empty();
    Optional<Entry> now = store.get(e.key());
    Wire.WriteReply here = new Wire.WriteReply(mine.isPresent() ? Map.of(routing.self(), mine.get()) : Map.of(),
        now.map(Entry::version).orElse(e.version()), beats(now, e));
    CompletableFuture<Wire.WriteReply> own = counted ? withPreviousOwners(e, here, timeout)
        : CompletableFuture.completedFuture(here);
    List<String> extra = new ArrayList<>(owners);
    for (String target : r.targets()) {
      if (counted || !target.equals(routing.self())) {
        extra.remove(target);
      }
    }
    extra.removeIf(routing::isSelf);
    extra.removeAll(named.ids());
    if (extra.isEmpty()) {
      return own;
    }
    if (r.hops() >= MAX_HOPS) {
      return CompletableFuture.failedFuture(new IllegalStateException(
          "hop limit " + MAX_HOPS + " reached forwarding \"" + e.key() + "\" to " + extra));
    }
    counters.writesForwarded.increment();
    Set<String> targets = new LinkedHashSet<>(r.targets());
    targets.addAll(owners);
    // The names as received, not only those taken here: each receiver checks them against its own view.
    byte[] forward = Wire.write(new Wire.WriteRequest(e, targets, r.hops() + 1, union(r.leaving(), routing.leavers())));
    List<CompletableFuture<Wire.WriteReply>> calls = new ArrayList<>();
    for (String owner : extra) {
      Optional<Address> process = routing.addressOf(owner); // the one a refusal comes from
      calls.add(rpc.callFromWorker(owner, forward, timeout).whenComplete((reply, failed) -> {
        if (failed != null && Transfers.refusedAsLeaving(Rpc.unwrap(failed), owner)) {
          routing.markLeaving(owner, process); // while this peer leaves, the writer's next attempt goes around it
        }
      }).thenApply(KvService::reply));
    }
    calls.add(own);
    return CompletableFuture.allOf(calls.toArray(CompletableFuture<?>[]::new)).thenApply(done -> {
      Wire.WriteReply all = here;
      for (CompletableFuture<Wire.WriteReply> c : calls) {
        all = all.merge(c.join());
      }
      return all;
    });
  }

  /**
   * How long a peer that received a write {@code hops} hops from the writer waits for the calls it
   * makes for it (forwards, and the check of {@link #withPreviousOwners}): each hop waits less than
   * the one before it, so that its sender hears a failure, with its reason, before its own timeout.
   * The writer, an owner itself, waits this long for its own store's calls only while its write
   * has that much time left.
   */
  private static Duration forwardTimeout(int hops) {
    // A request claiming more hops than any peer forwards (a broken or hostile sender) still gets time.
    return CALL_TIMEOUT.minusMillis(400L * (Math.min(hops, MAX_HOPS) + 1));
  }

  /**
   * This owner's reply to a write, with the newest version the key's previous owners hold while
   * the key is still coming in here: an older write there, stamped higher by a faster clock, would
   * otherwise win over this one when the pull brings it, after this one was acknowledged. Held here,
   * that version makes the writer stamp its write again past it, as for a newer copy held here.
   * The previous owners go back a step in turn if they are taking the key in too (two joins in a
   * row), as for a read. Unlike a read, this fails if one of them does not answer in time (busy,
   * or crashed and not yet out of the view): the write is not acknowledged here, and the writer
   * tries again until its deadline, rather than acknowledged with a stamp that a copy still coming
   * in may beat. In time: within {@link #PREVIOUS_OWNER_TIMEOUT} a step, and within {@code budget},
   * the time this peer's sender leaves it (the writer's own write: the time it has left). Sent from a worker: this runs on a JGroups thread.
   */
  private CompletableFuture<Wire.WriteReply> withPreviousOwners(Entry write, Wire.WriteReply here, Duration budget) {
    String key = write.key();
    Duration steps = PREVIOUS_OWNER_TIMEOUT.multipliedBy(STEPS_BACK);
    List<CompletableFuture<Optional<Entry>>> calls = askPreviousOwners(key, STEPS_BACK - 1,
        budget.compareTo(steps) < 0 ? budget : steps, true, true);
    if (calls.isEmpty()) {
      return CompletableFuture.completedFuture(here);
    }
    return CompletableFuture.allOf(calls.toArray(CompletableFuture<?>[]::new)).thenApply(all -> {
      // This peer's copy again too: a hand-off may have brought a newer one meanwhile, and the
      // previous owner that sent it then dropped it, answering with none.
      Version held = here.held();
      Optional<Entry> now = store.get(key);
      boolean beaten = here.beaten() || beats(now, write);
      if (now.isPresent() && now.get().version().isNewerThan(held)) {
        held = now.get().version();
      }
      for (CompletableFuture<Optional<Entry>> call : calls) {
        Optional<Entry> there = call.join();
        beaten |= beats(there, write);
        if (there.isPresent() && there.get().version().isNewerThan(held)) {
          held = there.get().version();
        }
      }
      return new Wire.WriteReply(here.storedBy(), held, beaten);
    });
  }

  /**
   * Reads a key from all its owners at once and returns the newest copy among those that answer
   * in time (the one that {@link Entry#supersedes} every other; a tombstone reads as deleted).
   * Every owner is asked because one copy can be older than another for a while: after a partition
   * heals, until the merge repair reached every owner (each side kept its own writes), or on a new
   * owner still pulling its ranges. An owner that answered with an older copy, or none, is sent the
   * newest (a read repair, not waited for). A peer that is leaving counts its own copy too, held or
   * handed off: until its hand-off reached the owners, it may be the only one.
   *
   * <p>In time means: within {@link #CALL_TIMEOUT}, and at most {@link #READ_GRACE} (the read grace of
   * {@link Timeouts}) after the first copy arrived (this peer's own, if it is an owner and holds one,
   * at once), so that an owner that crashed or stalls costs a read half a second until the view
   * drops it, not two; a key no owner holds waits for every answer. An owner that just joined and
   * does not serve requests yet is asked too, but waited for only if no other owner answered.
   *
   * @throws Unavailable if no owner answered in time
   */
  Read get(String key) {
    counters.getsServed.increment();
    List<String> owners = routing.owners(key);
    if (owners.isEmpty()) {
      throw new Unavailable("the ring has no owners");
    }
    // This peer first, then the owners that serve requests, then those that just joined, each in
    // ring order: of two owners holding the same copy, the first asked is the one named.
    List<String> asked = new ArrayList<>();
    List<String> joining = new ArrayList<>();
    for (String owner : owners) {
      if (routing.isSelf(owner)) {
        asked.add(0, owner);
      } else {
        (ready.test(owner) ? asked : joining).add(owner);
      }
    }
    boolean leavingSelf = routing.isLeaving() && routing.inRing() && !asked.contains(routing.self());
    if (leavingSelf) {
      // A leaving peer owns nothing, but until its hand-off has reached the owners its copy may be
      // the only one, or the newest: it counts as one more answer, if it holds a copy.
      asked.add(0, routing.self());
    }
    int serving = asked.size();
    asked.addAll(joining);
    List<CompletableFuture<Optional<Entry>>> calls = new ArrayList<>();
    for (String owner : asked) {
      calls.add(routing.isSelf(owner)
          ? ownCopy(key, STEPS_BACK, false, false)
          : rpc.call(owner, Wire.get(key, STEPS_BACK, false, viewId.getAsLong()), CALL_TIMEOUT)
              .thenApply(KvService::getReply));
    }
    long deadline = System.nanoTime() + CALL_TIMEOUT.toNanos() + TimeUnit.MILLISECONDS.toNanos(100);
    // When the first copy arrived, from whichever owner: the others get the read grace from then.
    CompletableFuture<Long> firstCopy = new CompletableFuture<>();
    calls.forEach(c -> c.thenAccept(found -> {
      if (found.isPresent()) {
        firstCopy.complete(System.nanoTime());
      }
    }));
    try {
      awaitAnswers(serving > 0 ? calls.subList(0, serving) : calls, firstCopy, deadline);
      // The leaving peer's own "none" is no owner's answer: it holds only what it has not handed off.
      boolean ownerAnswered = false;
      for (int i = 0; i < serving; i++) {
        ownerAnswered |= answered(calls.get(i)) && (i > 0 || !leavingSelf || calls.get(i).join().isPresent());
      }
      if (serving > 0 && serving < calls.size() && !ownerAnswered) {
        awaitAnswers(calls, firstCopy, deadline); // no serving owner answered: the new ones, then
      }
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      throw new Unavailable("interrupted");
    }
    Map<String, Optional<Entry>> held = new LinkedHashMap<>();
    String lastError = "";
    for (int i = 0; i < asked.size(); i++) {
      CompletableFuture<Optional<Entry>> call = calls.get(i);
      if (!call.isDone()) {
        lastError = asked.get(i) + ": no answer in time";
      } else if (call.isCompletedExceptionally()) {
        lastError = asked.get(i) + ": " + Rpc.describe(failure(call));
      } else {
        held.put(asked.get(i), call.join());
      }
    }
    if (held.isEmpty()) {
      throw new Unavailable("no owner of \"" + key + "\" answered " + asked + "; last error: " + lastError);
    }
    // A miss names an owner that said so: not this peer while it leaves (it owns nothing).
    String servedBy = held.keySet().stream().filter(owners::contains).findFirst().orElse(null);
    Optional<Entry> newest = Optional.empty();
    for (Map.Entry<String, Optional<Entry>> copy : held.entrySet()) {
      Optional<Entry> winner = Entry.newer(newest, copy.getValue());
      if (winner != newest) {
        newest = winner;
        servedBy = copy.getKey();
      }
    }
    if (servedBy == null) { // only the leaving peer's own "none": no owner said the key is missing
      throw new Unavailable("no owner of \"" + key + "\" answered " + owners + "; last error: " + lastError);
    }
    if (newest.isPresent() && readRepair) {
      repair(newest.get(), owners, held);
    }
    return new Read(key, newest, servedBy, owners);
  }

  /**
   * Waits until every call in {@code calls} completed, or {@code deadline} passed, or
   * {@link Timeouts#readGrace} passed since {@code firstCopy} completed, whichever comes first.
   */
  private void awaitAnswers(List<CompletableFuture<Optional<Entry>>> calls, CompletableFuture<Long> firstCopy,
                            long deadline) throws InterruptedException {
    CompletableFuture<Void> all = CompletableFuture.allOf(calls.toArray(CompletableFuture<?>[]::new));
    try {
      CompletableFuture.anyOf(all, firstCopy).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      if (!all.isDone()) {
        long graceEnds = firstCopy.join() + timeouts.readGrace().toNanos();
        long until = graceEnds - deadline < 0 ? graceEnds : deadline; // nanoTime values compare by difference
        all.get(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS);
      }
    } catch (ExecutionException | TimeoutException enough) {
      // a call failed (then all are done) or the time is up: the answers there are will do
    }
  }

  private static boolean answered(CompletableFuture<?> call) {
    return call.isDone() && !call.isCompletedExceptionally();
  }

  /** Why a call that completed exceptionally failed. */
  private static Throwable failure(CompletableFuture<?> call) {
    return call.handle((reply, failed) -> Rpc.unwrap(failed)).join();
  }

  /**
   * Sends {@code newest} to the owners whose copy it supersedes (or that had none), as a write of
   * that version: stores merge by version, so a copy that became newer meanwhile stays. Not waited
   * for; an owner it does not reach, or that answered the read too late, is repaired by a later
   * read or write. The request names every owner as written to, so that the owners repaired do not
   * forward it to those that did not answer (a crashed one, most likely).
   */
  private void repair(Entry newest, List<String> owners, Map<String, Optional<Entry>> held) {
    Wire.WriteRequest request = null;
    for (Map.Entry<String, Optional<Entry>> copy : held.entrySet()) {
      if (!owners.contains(copy.getKey()) // a leaving peer's own copy: it is handing it off anyway
          || copy.getValue().isPresent() && !newest.supersedes(copy.getValue().get())) {
        continue;
      }
      if (request == null) {
        request = new Wire.WriteRequest(newest, new LinkedHashSet<>(owners), 0, routing.leavers());
      }
      counters.readRepairs.increment();
      if (routing.isSelf(copy.getKey())) {
        storeAndForward(request);
      } else {
        String owner = copy.getKey();
        rpc.call(owner, Wire.write(request), CALL_TIMEOUT).whenComplete((reply, failed) -> {
          if (failed != null) {
            LOG.log(System.Logger.Level.DEBUG, "read repair of \"{0}\" on {1} failed: {2}", newest.key(), owner,
                Rpc.unwrap(failed));
          }
        });
      }
    }
  }

  private static Optional<Entry> getReply(DataInputStream in) {
    try {
      return Wire.readGetReply(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Handles {@link Wire#OP_GET}: this peer's copy ({@link #ownCopy}), or the newest one of the
   * key's previous owners or, for a key this peer's ring gives to others, of its owners; while it
   * leaves, what it already handed off counts, since the asking peer still routes the key here.
   * Runs on a JGroups thread: the reads of other peers are sent from a worker.
   */
  CompletableFuture<byte[]> handleGet(DataInputStream in) throws IOException {
    String key = in.readUTF();
    int stepsBack = Math.min(in.readUnsignedByte(), STEPS_BACK);
    boolean strict = in.readBoolean();
    long askersView = in.readLong();
    long view = viewId.getAsLong();
    if (strict && view < askersView) {
      // A write's check from a new owner of the key: until this peer routes by the asker's ring, a
      // write stored here is not forwarded to the asker, which would acknowledge its own over it.
      // Refused, as a pull is: the check fails, and the writer tries again.
      return CompletableFuture.failedFuture(new Rpc.Declined("view " + askersView
          + " not installed here yet (this peer has view " + view + ")"));
    }
    return ownCopy(key, stepsBack, true, strict).thenApply(Wire::getReply);
  }

  /**
   * This peer's copy of a key, for a read. While the key is still coming in (it gained the key's
   * range and its pulls are not done: {@link Incoming}), the key's previous owners still hold it,
   * and the owners that readers ask may hold none of it yet, or only an older copy handed on to
   * them meanwhile (a stray that another peer's sweep passed on, say): then, if {@code stepsBack}
   * allows, the previous owners are asked, whether this peer holds a copy or not (with one step
   * fewer: a previous owner may itself be taking the key in from the one before, after two joins
   * in a row), within {@link #PREVIOUS_OWNER_TIMEOUT} per step left, and the newest copy counts,
   * this peer's included. A read that comes
   * as the first step, from a reader, goes back only if this peer owns the key in its own ring.
   * One from another peer for a key this peer's ring gives to other peers (the reader routed it by
   * an older ring, or this peer is leaving, or the cluster refuses it) asks those owners instead
   * (those that serve requests, with one step fewer): this peer may have handed the key to them and
   * dropped it, or hold an older copy than theirs, so the key does not read as missing, nor as its
   * old value, while it moves. A leaving peer that holds a copy of a key it owns in the cluster's
   * ring answers with it, handed off or not, without asking: its reads stay one hop while it hands
   * off every key it holds. This peer's own first-step read of a key it does not own (a leaving
   * peer's, say) answers with what it holds, without asking anyone: the read asks the owners
   * itself. This peer's own copy is read again once the others answered: a hand-off may have
   * brought it meanwhile, and the previous owner then dropped it.
   *
   * @param fromPeer   whether another peer asked: the request came on a JGroups thread, which must
   *                   not wait for credits, so the calls made for it are sent from a worker; and
   *                   only then does a peer that does not own the key ask its owners (this peer's
   *                   own reads ask them directly)
   * @param strict     whether a previous owner that does not answer fails the read (a write's
   *                   check, {@link #withPreviousOwners}) even if another copy was found; a read
   *                   that is not strict fails only if it found no copy (the peer that did not
   *                   answer may hold one), so a reader is told "unavailable", never "not found",
   *                   for a key it could not look up everywhere it may be
   */
  private CompletableFuture<Optional<Entry>> ownCopy(String key, int stepsBack, boolean fromPeer,
                                                     boolean strict) {
    Optional<Entry> mine = store.readable(key);
    // A reader's read (the first step) at a peer that does not own the key in its own ring.
    boolean readerAskedNonOwner = stepsBack >= STEPS_BACK && !routing.isOwner(key);
    // Never for a write's check, which goes back from an owner (stepsBack is then below STEPS_BACK).
    boolean forward = readerAskedNonOwner && fromPeer && !strict
        && !(mine.isPresent() && routing.isLeaving() && routing.ownsInClusterRing(key));
    // A copy held here does not end the search while the key is still coming in: it may be older
    // than the previous owners' (a stray another peer's sweep handed on), and answering with it
    // would return a value older than a write they acknowledged before the change.
    if (!forward && (stepsBack <= 0 || readerAskedNonOwner)) {
      return CompletableFuture.completedFuture(mine);
    }
    Duration timeout = PREVIOUS_OWNER_TIMEOUT.multipliedBy(stepsBack);
    List<CompletableFuture<Optional<Entry>>> calls = forward
        ? askOwners(key, stepsBack - 1, timeout, fromPeer)
        : askPreviousOwners(key, stepsBack - 1, timeout, fromPeer, strict);
    if (calls.isEmpty()) {
      // Read again: the pull that brought the key in may have ended since the first read.
      return CompletableFuture.completedFuture(store.readable(key));
    }
    // Every call ends, answered or failed: a failed one fails a write's check (strict), and a read
    // that finds no copy, since the peer that did not answer may hold the key.
    CompletableFuture<?>[] ended = calls.stream().map(c -> c.handle((entry, failed) -> null))
        .toArray(CompletableFuture<?>[]::new);
    return CompletableFuture.allOf(ended).thenApply(all -> {
      Optional<Entry> own = store.readable(key);
      Optional<Entry> newest = own;
      Throwable unanswered = null;
      for (CompletableFuture<Optional<Entry>> call : calls) {
        if (call.isCompletedExceptionally()) {
          unanswered = failure(call);
        } else {
          newest = Entry.newer(newest, call.join());
        }
      }
      if (unanswered != null && (strict || newest.isEmpty())) {
        // Not "not found": a 404 must mean that no owner holds the key. The reader's peer reports
        // this owner as not answering, and a 503 if no other owner does.
        throw unanswered instanceof Rpc.Declined declined ? declined : new Rpc.Declined(Rpc.describe(unanswered));
      }
      // A reader's read answered by a previous owner: counted once, where it came.
      if (newest != own && !strict && !forward && stepsBack == STEPS_BACK) {
        counters.readsFromPreviousOwners.increment();
      }
      return newest;
    });
  }

  /**
   * Asks the owners of a key in this peer's ring that serve requests (this peer is not one) for
   * their copies, each going back {@code stepsBack} more steps, within {@code timeout}; the call to
   * one that does not answer fails, naming it. If none has reported that it serves requests yet (one that just
   * joined, to which this peer may have handed the key), every live owner is asked, within one
   * {@link #PREVIOUS_OWNER_TIMEOUT} at most: one that does not answer yet costs that wait, where
   * skipping it would answer "not found" for a key it holds, or this peer's older copy for one
   * written there since (a copy held here then answers if none does).
   */
  private List<CompletableFuture<Optional<Entry>>> askOwners(String key, int stepsBack, Duration timeout,
                                                             boolean fromWorker) {
    byte[] request = Wire.get(key, stepsBack, false, viewId.getAsLong());
    List<String> live = routing.owners(key).stream().filter(routing::isLive).toList();
    List<String> serving = live.stream().filter(ready).toList();
    boolean unreported = serving.isEmpty();
    Duration wait = unreported && timeout.compareTo(PREVIOUS_OWNER_TIMEOUT) > 0 ? PREVIOUS_OWNER_TIMEOUT : timeout;
    return (unreported ? live : serving).stream().map(owner ->
        (fromWorker ? rpc.callFromWorker(owner, request, wait) : rpc.call(owner, request, wait))
            .thenApply(KvService::getReply).exceptionally(failed -> {
              throw new Rpc.Declined("owner " + owner + " of \"" + key + "\", which " + routing.self()
                  + " does not own, did not say which version it holds: " + Rpc.describe(failed));
            })).toList();
  }

  /**
   * Asks the live previous owners of a key still coming in here for their copies, each going back
   * {@code stepsBack} more steps, within {@code timeout}; the call to one that does not answer
   * fails with the reason. Empty if the key is not coming in.
   *
   * @param fromWorker whether to send from a worker (on a JGroups thread, which must not wait for credits)
   */
  private List<CompletableFuture<Optional<Entry>>> askPreviousOwners(String key, int stepsBack, Duration timeout,
                                                                     boolean fromWorker, boolean strict) {
    byte[] request = Wire.get(key, stepsBack, strict, viewId.getAsLong());
    return previousOwners.apply(key).stream().filter(routing::isLive).map(owner -> {
      CompletableFuture<Optional<Entry>> call = (fromWorker ? rpc.callFromWorker(owner, request, timeout)
          : rpc.call(owner, request, timeout)).thenApply(KvService::getReply);
      return call.exceptionally(failed -> {
        throw new Rpc.Declined("previous owner " + owner + " of \"" + key + "\", which is still coming in to "
            + routing.self() + ", did not say which version it holds: " + Rpc.describe(failed));
      });
    }).toList();
  }
}
