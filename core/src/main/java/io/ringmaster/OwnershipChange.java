package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.ToLongFunction;

/**
 * What the local member gained and lost between two rings. Carries both rings and both view ids
 * so an application can route with either while it moves data. Every member computes the same
 * ring for a view, but installs it at its own pace: a range gained here may for a moment still be
 * its previous owner's there, so work that must run once needs a fence of the application's own
 * (the old owner stops on losing the range, or with {@code replicas > 1} on a role change away
 * from {@code PRIMARY}, since it keeps the range as a backup; the new one takes a lease before it
 * starts). docs/recipes.md, "Jobs that must run once", works one through, with the fencing token
 * the shared store must check.
 *
 * @param reason         why the ring changed
 * @param previousViewId the JGroups view id this node had installed before {@code viewId}; -1
 *                       for {@link Reason#INITIAL} and for the node's first view (whose
 *                       {@code previousRing} is still the cluster's ring before it: see below);
 *                       for {@link Reason#LEAVING}, equal to {@code viewId} (both rings are of the
 *                       last view this node installed)
 * @param viewId         the JGroups view id of {@code ring}. Ids never decrease from one change
 *                       to the next (a LEAVING change repeats the last view's), except after
 *                       this node rejoins the cluster (to end a split view, see
 *                       {@code stats().rejoins()}): it is then a new member of views whose
 *                       ids may be lower. Order changes by their delivery, not by this id
 * @param previousRing   the ring before; for a node's first view, and its first view in the ring
 *                       after the cluster refused it (another member held its id, and has left),
 *                       the ring before that view without the node, so that its gains name the
 *                       members that held the data, never a member that joined in the same view.
 *                       In a node's first view, a member that left gracefully in that view (it
 *                       told the others, just before it left, that every listener of its had
 *                       handled its LEAVING change within leaveTimeout, none throwing) is left out
 *                       too, so the members it handed the data to are the sources (docs/api.md,
 *                       "Moving the data", says when they do not hold it); one that crashed, or
 *                       whose hand-off threw or ran out of time, stays, named as the source of
 *                       what it held (see
 *                       {@link #sourcesInRing}). In the first view after a refusal, no other
 *                       member is left out: a graceful leaver stays, like one that crashed. A new node
 *                       learns that ring, and who of it left gracefully, from the old members; if none answers within 5 s or half
 *                       of {@code startTimeout}, whichever is shorter, the ring after without the
 *                       node stands in. It stands in at once when the node is alone in that ring
 *                       (as when it starts the cluster), so its gains have no sources, and when the
 *                       view is a merge, whose sides had different rings, so they name the view's
 *                       members
 * @param ring           the ring after (for {@link Reason#LEAVING}, the ring without this member
 *                       and without the members that told it they are leaving too, unless no
 *                       member that owns anything would be left: then only without this member)
 * @param diff           the member's gained and lost ranges and role changes; never empty
 * @param inRing         whether this node is in {@code ring}. Nearly always the same as
 *                       {@code ring.contains(diff.memberId())}, but not in the change that refuses
 *                       a node because another member holds its id (a merge that brings back a
 *                       member of the same id from the other side, say): {@code ring} then holds
 *                       that id, the other member's, and this node has lost everything; routing by
 *                       {@code ring}, keys it gives that id are not this node's. False for
 *                       {@link Reason#LEAVING}
 */
public record OwnershipChange(Reason reason, long previousViewId, long viewId, HashRing previousRing,
                              HashRing ring, RingDiff diff, boolean inRing) {

  /** Why a change was delivered. */
  public enum Reason {
    /** The listener was added to a running node: the current ownership, from nothing. */
    INITIAL,
    /**
     * A new view: members joined, left or crashed, or are cut off by a partition (to this side
     * they look crashed: what it gains from them alone has no source in the ring).
     */
    VIEW,
    /**
     * A merge view after a partition healed. Gains name their sources as this node's side of the
     * partition knew them; writes made on the other side may be on members of that side only, so
     * an application that accepted writes on both sides reconciles with the merged owners too. If
     * both sides had a member of one id, a source may name the one of this node's side that the
     * merge refused: {@code addressOf} then gives the other one, which kept the id; the refused
     * member hears that it lost everything, and to whom, so that it can hand its data on. With one
     * replica, when the merged ring holds every member of this node's side, this node gains
     * nothing here and loses only ranges whose owners are now members of the other side (what it
     * took over during the split, and what a member that joined there took from it), owners that
     * hold that side's copies: the application reconciles the two (docs/api.md, "Moving the data").
     */
    MERGE,
    /**
     * This node is leaving gracefully: everything it owns, and who takes it over, as of
     * {@link OwnershipChange#ring()}. No ownership change comes after it, so if a view changes the
     * owners while the hand-off runs (a destination crashes, say), nothing tells the listener: a
     * hand-off that fails should look up the current owners in
     * {@code node.ring().without(node.localMember().id())} before it gives up: {@code node.ring()}
     * follows the views this node installs (and holds this node) until close() stops waiting for
     * the listeners, though not while a listener on a same-thread executor holds the view thread.
     * The node tells the other members that it is leaving before this change is made, and a member
     * that told it the same is in none of the destinations, unless every member that owns anything
     * did: then they all are, and pass on what reaches them. A push that succeeds can still miss: a
     * node closed at the same time that said so only after this change was made takes the push
     * and leaves with it, unless it passes on what reaches it. So a store that must lose nothing
     * pushes everything it holds here, each key to its owners in {@link OwnershipChange#ring()}
     * (not only the keys of {@link OwnershipChange#lost()}: such a push may have brought it keys
     * outside the ranges it owned), and passes on what reaches it while it leaves, to none of the
     * leavers this change left out or the push came through (docs/api.md, "Moving the data").
     * Inside this callback the node counts as closed to {@code awaitRing}: on a condition its ring
     * does not satisfy yet, it throws {@code IllegalStateException} at once rather than wait.
     */
    LEAVING
  }

  /**
   * Checks that every field but the view ids is non-null.
   *
   * @throws NullPointerException naming the field, if {@code reason}, a ring or {@code diff} is null
   */
  public OwnershipChange {
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(previousRing, "previousRing");
    Objects.requireNonNull(ring, "ring");
    Objects.requireNonNull(diff, "diff");
  }

  /**
   * A change whose node is in {@code ring} if {@code ring} holds its id: every change but one that
   * refuses the node for an id another member holds (for tests of listeners, say).
   *
   * @throws NullPointerException naming the field, if {@code reason}, a ring or {@code diff} is null
   */
  public OwnershipChange(Reason reason, long previousViewId, long viewId, HashRing previousRing, HashRing ring,
                         RingDiff diff) {
    this(reason, previousViewId, viewId, previousRing, ring, diff,
        Objects.requireNonNull(ring, "ring").contains(Objects.requireNonNull(diff, "diff").memberId()));
  }

  /**
   * Ranges now owned, each with the members that held them before (where to fetch from): the
   * owners in {@link #previousRing()}, so after a crash the crashed member too (with one replica,
   * the only source, and its data gone with it unless kept elsewhere).
   */
  public List<RingDiff.Gained> gained() {
    return diff.gained();
  }

  /** Ranges no longer owned, each with their new owners (where to hand off to). */
  public List<RingDiff.Lost> lost() {
    return diff.lost();
  }

  /** Ranges kept with a new role (primary to backup, or back). */
  public List<RingDiff.RoleChange> roleChanges() {
    return diff.roleChanges();
  }

  /** The replica count the change was computed for. */
  public int replicas() {
    return diff.replicas();
  }

  /**
   * The sources of a gained range that are members of {@link #ring()}: those still in the cluster
   * to fetch from. A member that crashed or left in this view is among {@code gained.sources()} (it
   * held the range) but not here; with one replica, a range gained from a crashed member has no
   * source left, and its data must come from storage of the application's own. A member that left
   * gracefully in a node's first view is not among a range's sources there: the sources are the
   * members it handed the range to (see {@link #previousRing()}). Primary first, as in {@code sources()}. Sources are matched by id: a member that joined in this view
   * under the id of one that left (a process restarted under it) is listed, though it holds none of
   * the data; so is, after a {@link Reason#MERGE} that refused a member of this node's side because
   * the other side's member of that id kept it, a source of that id, though the member the id names
   * now never held the range (the refused one hands its data on instead). A merge's sources are
   * this side's owners only (see {@link Reason#MERGE}).
   *
   * @throws NullPointerException if {@code gained} is null
   */
  public List<Member> sourcesInRing(RingDiff.Gained gained) {
    Objects.requireNonNull(gained, "gained");
    return gained.sources().stream().filter(source -> ring.contains(source.id())).toList();
  }

  /**
   * Every member of {@link #ring()} that is a source of a gained range, once: the members to fetch
   * from, in the order they first appear in {@link #gained()} and its {@code sources()}. Matched by
   * id, as {@link #sourcesInRing(RingDiff.Gained)}. Empty when nothing was gained, and when every
   * source of every gain has left the cluster.
   *
   * <pre>{@code
   * for (Member source : change.sourcesInRing()) {
   *   store.fetch(source, change.gainedFrom(source).stream().map(RingDiff.Gained::range).toList());
   * }
   * }</pre>
   */
  public List<Member> sourcesInRing() {
    Map<String, Member> sources = new LinkedHashMap<>();
    for (RingDiff.Gained gained : gained()) {
      sourcesInRing(gained).forEach(source -> sources.putIfAbsent(source.id(), source));
    }
    return List.copyOf(sources.values());
  }

  /**
   * The gained ranges whose {@code sources()} name a member of {@code source}'s id, in the order of
   * {@link #gained()}: what to ask {@code source} for. Empty if it held none of them. A member that
   * crashed or left in this view is answered too (it held them), though it cannot be asked.
   *
   * @throws NullPointerException if {@code source} is null
   */
  public List<RingDiff.Gained> gainedFrom(Member source) {
    String id = Objects.requireNonNull(source, "source").id();
    return gained().stream()
        .filter(gained -> gained.sources().stream().anyMatch(held -> held.id().equals(id)))
        .toList();
  }

  /**
   * Groups keys by the lost range that holds them, in the order of {@link #lost()}: for each
   * range, the keys to hand to its {@code destinations()}. Keys in no lost range are left out, and
   * the keys are not removed from {@code keys}, which is read once (a concurrent map's live key
   * set will do). As {@link KeyRange#partition(List, java.util.function.Function, Iterable)}, in
   * {@code O(log ranges)} per key.
   *
   * <pre>{@code
   * change.lostKeys(store.keys()).forEach((lost, keys) -> store.push(keys, lost.destinations()));
   * }</pre>
   *
   * On a {@link Reason#LEAVING} change this leaves out what the node holds outside the ranges it
   * owned (a push another leaver made to it, say): a lossless hand-off routes every key it holds
   * by {@link #ring()} instead.
   *
   * @throws NullPointerException if {@code keys} is null
   */
  public Map<RingDiff.Lost, List<String>> lostKeys(Iterable<String> keys) {
    return lostKeys(keys, HashRing::position);
  }

  /**
   * As {@link #lostKeys(Iterable)}, for keys of any type placed on the ring by {@code positionOf}:
   * for {@code byte[]} keys, {@code HashRing::position}.
   *
   * @throws NullPointerException if {@code keys} or {@code positionOf} is null
   */
  public <K> Map<RingDiff.Lost, List<K>> lostKeys(Iterable<K> keys, ToLongFunction<? super K> positionOf) {
    return KeyRange.partition(lost(), RingDiff.Lost::range, Objects.requireNonNull(keys, "keys"),
        Objects.requireNonNull(positionOf, "positionOf"));
  }

  /**
   * Groups keys by the gained range that holds them, in the order of {@link #gained()}: given the
   * keys a source holds, for each range, those in it. Every gained range is a candidate, not only
   * those the source held: {@link #gainedKeys(Member, Iterable)} keeps to those. Keys in no gained
   * range are left out; {@code keys} is read once, as in {@link #lostKeys(Iterable)}.
   *
   * @throws NullPointerException if {@code keys} is null
   */
  public Map<RingDiff.Gained, List<String>> gainedKeys(Iterable<String> keys) {
    return gainedKeys(keys, HashRing::position);
  }

  /**
   * As {@link #gainedKeys(Iterable)}, for keys of any type placed on the ring by
   * {@code positionOf}: for {@code byte[]} keys, {@code HashRing::position}.
   *
   * @throws NullPointerException if {@code keys} or {@code positionOf} is null
   */
  public <K> Map<RingDiff.Gained, List<K>> gainedKeys(Iterable<K> keys, ToLongFunction<? super K> positionOf) {
    return KeyRange.partition(gained(), RingDiff.Gained::range, Objects.requireNonNull(keys, "keys"),
        Objects.requireNonNull(positionOf, "positionOf"));
  }

  /**
   * As {@link #gainedKeys(Iterable)}, in the ranges of {@link #gainedFrom(Member) gainedFrom(source)}
   * only: given the keys {@code source} holds, those to fetch from it, by range. Fetching every
   * member of {@link #sourcesInRing()} this way fetches each gained key from each of its sources
   * still in the cluster; with {@code replicas > 1}, from more than one, which may disagree on a
   * key written while the view changed.
   *
   * <pre>{@code
   * for (Member source : change.sourcesInRing()) {
   *   change.gainedKeys(source, peers.get(source.id()).keys()).values().forEach(keys -> store.copyFrom(source, keys));
   * }
   * }</pre>
   *
   * @throws NullPointerException if {@code source} or {@code keys} is null
   */
  public Map<RingDiff.Gained, List<String>> gainedKeys(Member source, Iterable<String> keys) {
    return gainedKeys(source, keys, HashRing::position);
  }

  /**
   * As {@link #gainedKeys(Member, Iterable)}, for keys of any type placed on the ring by
   * {@code positionOf}: for {@code byte[]} keys, {@code HashRing::position}.
   *
   * @throws NullPointerException if {@code source}, {@code keys} or {@code positionOf} is null
   */
  public <K> Map<RingDiff.Gained, List<K>> gainedKeys(Member source, Iterable<K> keys,
                                                      ToLongFunction<? super K> positionOf) {
    return KeyRange.partition(gainedFrom(source), RingDiff.Gained::range, Objects.requireNonNull(keys, "keys"),
        Objects.requireNonNull(positionOf, "positionOf"));
  }
}
