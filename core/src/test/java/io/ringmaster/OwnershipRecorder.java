package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.testing.OwnershipFold;
import java.util.ArrayList;
import java.util.List;

/**
 * Records a node's ownership and membership callbacks, folding the ownership ones with an
 * {@link OwnershipFold} (what the node should believe it owns, at a fixed set of ring positions),
 * so a test can compare the fold with the ring; it also checks that view ids grow, which holds in
 * tests without a rejoin.
 */
final class OwnershipRecorder implements OwnershipListener, MembershipListener {
  private final OwnershipFold fold;
  private final List<MembershipChange> memberships = new ArrayList<>();
  private final List<String> viewOrder = new ArrayList<>();
  private long lastViewId = Long.MIN_VALUE;

  OwnershipRecorder(long seed) {
    fold = new OwnershipFold(2048, seed);
  }

  @Override
  public synchronized void onOwnershipChange(OwnershipChange change) {
    if (change.viewId() < lastViewId) {
      viewOrder.add("view order: " + change.viewId() + " after " + lastViewId);
    }
    lastViewId = change.viewId();
    fold.onOwnershipChange(change);
  }

  @Override
  public synchronized void onMembershipChange(MembershipChange change) {
    memberships.add(change);
  }

  /** Whether the fold of every callback equals the member's ownership in {@code ring}. */
  boolean foldMatches(HashRing ring, String memberId, int replicas) {
    return fold.disagreement(ring, memberId, replicas).isEmpty();
  }

  boolean ownsNothing() {
    return fold.holdsNothing();
  }

  List<OwnershipChange> changes() {
    return fold.changes();
  }

  synchronized List<MembershipChange> memberships() {
    return List.copyOf(memberships);
  }

  synchronized List<String> violations() {
    List<String> all = new ArrayList<>(viewOrder);
    all.addAll(fold.violations());
    return all;
  }
}
