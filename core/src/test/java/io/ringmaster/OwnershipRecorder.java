package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Records a node's ownership callbacks and folds them into what the node should believe it owns,
 * at a fixed set of ring positions, so a test can compare the fold with the ring.
 */
final class OwnershipRecorder implements OwnershipListener, MembershipListener {
  /** 0 = not an owner, 1 = primary, 2 = backup. */
  private final long[] positions;
  private final byte[] believed;
  private final List<OwnershipChange> changes = new ArrayList<>();
  private final List<MembershipChange> memberships = new ArrayList<>();
  private final List<String> violations = new ArrayList<>();

  OwnershipRecorder(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    positions = new long[2048];
    for (int i = 0; i < positions.length; i++) {
      positions[i] = random.nextLong();
    }
    positions[0] = Long.MIN_VALUE;
    positions[1] = Long.MAX_VALUE;
    believed = new byte[positions.length];
  }

  @Override
  public synchronized void onOwnershipChange(OwnershipChange change) {
    if (!changes.isEmpty() && change.viewId() < changes.get(changes.size() - 1).viewId()) {
      violations.add("view order: " + change.viewId() + " after " + changes.get(changes.size() - 1).viewId());
    }
    changes.add(change);
    for (int i = 0; i < positions.length; i++) {
      long p = positions[i];
      byte old = believed[i];
      int hits = 0;
      for (RingDiff.Gained g : change.gained()) {
        if (g.range().contains(p)) {
          hits++;
          if (old != 0) {
            violations.add("gained a position already owned at view " + change.viewId());
          }
          believed[i] = code(g.role());
        }
      }
      for (RingDiff.Lost l : change.lost()) {
        if (l.range().contains(p)) {
          hits++;
          if (old != code(l.role())) {
            violations.add("lost a position as " + l.role() + ", held as " + name(old) + ", at view "
                + change.viewId());
          }
          believed[i] = 0;
        }
      }
      for (RingDiff.RoleChange r : change.roleChanges()) {
        if (r.range().contains(p)) {
          hits++;
          if (old != code(r.before())) {
            violations.add("role change from " + r.before() + " at a position held as " + name(old) + ", at view "
                + change.viewId());
          }
          believed[i] = code(r.after());
        }
      }
      if (hits > 1) {
        violations.add(hits + " ranges of one change hold one position, at view " + change.viewId());
      }
    }
  }

  private static byte code(RingDiff.Role role) {
    return (byte) (role == RingDiff.Role.PRIMARY ? 1 : 2);
  }

  private static String name(byte code) {
    return code == 0 ? "nothing" : code == 1 ? "PRIMARY" : "BACKUP";
  }

  @Override
  public synchronized void onMembershipChange(MembershipChange change) {
    memberships.add(change);
  }

  /** Whether the fold of every callback equals the member's ownership in {@code ring}. */
  synchronized boolean foldMatches(HashRing ring, String memberId, int replicas) {
    for (int i = 0; i < positions.length; i++) {
      byte actual = 0;
      if (!ring.isEmpty()) {
        List<Member> owners = ring.ownersOfPosition(positions[i], replicas);
        for (int k = 0; k < owners.size(); k++) {
          if (owners.get(k).id().equals(memberId)) {
            actual = (byte) (k == 0 ? 1 : 2);
          }
        }
      }
      if (believed[i] != actual) {
        return false;
      }
    }
    return true;
  }

  synchronized boolean ownsNothing() {
    for (byte b : believed) {
      if (b != 0) {
        return false;
      }
    }
    return true;
  }

  synchronized List<OwnershipChange> changes() {
    return List.copyOf(changes);
  }

  synchronized List<MembershipChange> memberships() {
    return List.copyOf(memberships);
  }

  synchronized List<String> violations() {
    return List.copyOf(violations);
  }
}
