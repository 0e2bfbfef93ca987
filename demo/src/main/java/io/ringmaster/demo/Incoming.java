package io.ringmaster.demo;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The ranges this peer gained and has not finished taking in, each with the peers that held it
 * before: from the moment a change is published (a listener on the publishing thread notes it,
 * right after the change is handed to the rebalancer, which is on the node's pool and may still be
 * busy with an earlier change) until the rebalancer's pulls for it are done, and for as long as a
 * pull of it is retried. Meanwhile this peer owns keys it may not hold yet, while their previous
 * owners still do; a read here asks them, even if this peer holds a copy ({@link KvService}), so
 * that a key acknowledged before the change reads neither as missing nor as an older copy handed
 * on here meanwhile while it moves. That holds in the moment between a ring's publication and the
 * listener noting its change too: a key this peer owns in the node's ring and did not own in the
 * ring last noted is coming in from the owners it had there.
 */
final class Incoming {
  private final String self;
  private final int replicas;
  /** A change being taken in, with what it gained and from whom. */
  private record Pending(OwnershipChange change, List<RingDiff.Gained> gained) {}

  private final List<Pending> pending = new CopyOnWriteArrayList<>();
  /**
   * Changes done before they were noted as arrived (guarded by this): both listeners get a change
   * at once, the rebalancer's first (the node's pool is handed each change first), and it can take
   * a change up, and finish it, before the other listener runs.
   */
  private final List<OwnershipChange> doneFirst = new ArrayList<>();
  private final Function<Long, List<String>> retriedFrom;
  private final Supplier<HashRing> published;
  /**
   * The ring of the last change noted as arrived, set once {@link #pending} holds what it gained;
   * null until the first. The node publishes a ring before its listeners hear of it.
   */
  private volatile HashRing noted;

  /**
   * @param retriedFrom the sources of the pull retries that cover a ring position ({@link PullRetries#sourcesFor})
   * @param published   the ring the node published last ({@code Ringmaster::ring})
   */
  Incoming(String self, int replicas, Function<Long, List<String>> retriedFrom, Supplier<HashRing> published) {
    this.self = self;
    this.replicas = replicas;
    this.retriedFrom = retriedFrom;
    this.published = published;
  }

  /** A change was published: what it gains is coming in. Quick, and safe on the node's view thread. */
  synchronized void arrived(OwnershipChange change) {
    if (change.reason() == OwnershipChange.Reason.LEAVING) {
      // It gains nothing, and its ring (without this peer) is not the node's until the node has
      // left: noted, every key this peer still owns would read as coming in from its successors.
      return;
    }
    if (doneFirst.removeIf(c -> c == change)) {
      // the rebalancer took it up and finished it before this ran
    } else if (!change.gained().isEmpty()) {
      pending.add(new Pending(change, gainedWithSources(change, self, replicas)));
    }
    noted = change.ring();
  }

  /** The rebalancer is done with a change: what its pulls did not get is in the pull retries now. */
  synchronized void done(OwnershipChange change) {
    if (!pending.removeIf(p -> p.change() == change) && !change.gained().isEmpty()) {
      doneFirst.add(change);
    }
  }

  /** Changes noted and not yet done (for tests). */
  int pendingChanges() {
    return pending.size();
  }

  /** The peers, other than this one, that held the key before it came to this peer, while it is still coming in. */
  List<String> previousOwners(String key) {
    HashRing last = noted; // read before the node's ring: as old as it, or older
    HashRing now = published.get();
    long position = HashRing.position(key);
    Set<String> from = new LinkedHashSet<>();
    if (last != now) {
      notYetNoted(last, now, position, from);
    }
    for (Pending p : pending) {
      for (RingDiff.Gained g : p.gained()) {
        if (g.range().contains(position)) {
          g.sources().stream().map(Member::id).forEach(from::add);
        }
      }
    }
    from.addAll(retriedFrom.apply(position));
    from.remove(self);
    return List.copyOf(from);
  }

  /**
   * Adds the owners a key had in the ring last noted if this peer owns it in the ring the node
   * published since, and did not before: the change that brings it in is not noted yet. Before
   * the first change is noted, that ring is the published one without this peer, where the data
   * of a peer that just joined is.
   */
  private void notYetNoted(HashRing last, HashRing now, long position, Set<String> from) {
    if (now.isEmpty() || !ids(now.ownersOfPosition(position, replicas)).contains(self)) {
      return;
    }
    HashRing before = last != null ? last : now.without(self);
    if (before.isEmpty()) {
      return;
    }
    List<String> owners = ids(before.ownersOfPosition(position, replicas));
    if (!owners.contains(self)) {
      from.addAll(owners);
    }
  }

  private static List<String> ids(List<Member> members) {
    return members.stream().map(Member::id).toList();
  }

  /**
   * What a change gained, each range with the members that held it before. A change from an empty
   * ring names no sources (the first of a peer that started alone, or of a listener added after the
   * start): where any data is then is the ring without this peer.
   */
  static List<RingDiff.Gained> gainedWithSources(OwnershipChange change, String self, int replicas) {
    if (!change.previousRing().isEmpty() || change.gained().isEmpty()) {
      return change.gained();
    }
    HashRing ring = change.ring();
    return RingDiff.compute(ring.without(self), ring, self, replicas).gained();
  }
}
