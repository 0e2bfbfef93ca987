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

/**
 * The ranges this peer gained and has not finished taking in, each with the peers that held it
 * before: from the moment a change is published (a listener on the publishing thread notes it,
 * right after the change is handed to the rebalancer, which is on the node's pool and may still be
 * busy with an earlier change) until the rebalancer's pulls for it are done, and for as long as a
 * pull of it is retried. Meanwhile this peer owns keys it may not hold yet, while their previous
 * owners still do; a read that misses here asks them ({@link KvService}), so that a key
 * acknowledged before the change does not read as missing while it moves.
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

  /**
   * @param retriedFrom the sources of the pull retries that cover a ring position ({@link PullRetries#sourcesFor})
   */
  Incoming(String self, int replicas, Function<Long, List<String>> retriedFrom) {
    this.self = self;
    this.replicas = replicas;
    this.retriedFrom = retriedFrom;
  }

  /** A change was published: what it gains is coming in. Quick, and safe on the node's view thread. */
  synchronized void arrived(OwnershipChange change) {
    if (doneFirst.removeIf(c -> c == change)) {
      return; // the rebalancer took it up and finished it before this ran
    }
    if (!change.gained().isEmpty()) {
      pending.add(new Pending(change, gainedWithSources(change, self, replicas)));
    }
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
    long position = HashRing.position(key);
    Set<String> from = new LinkedHashSet<>();
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
