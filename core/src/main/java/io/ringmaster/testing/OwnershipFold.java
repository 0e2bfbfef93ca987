package io.ringmaster.testing;

import io.ringmaster.OwnershipChange;
import io.ringmaster.OwnershipListener;
import io.ringmaster.Ringmaster;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * An ownership listener that folds every change it hears into what the node owns, at a fixed
 * sample of ring positions, and checks each change: against the fold (a range gained that was
 * already held, a range lost or a role changed that was not held so, two ranges of one change on
 * one position, a change with nothing in it, a role changed to itself), and against its own two
 * rings: a gained range's sources are its owners in the ring before, and a lost range's
 * destinations its owners in the ring after, at every position of the sample inside the range
 * and at its end; at each range's end (a position every range holds, so that none escapes the
 * checks), the member's roles are its places in the two rings, and the ring before a gain and the
 * ring after a loss do not hold it (but for a change that refuses the node: its ring after holds
 * another member of its id). A test compares the fold with the node's ring
 * ({@link #disagreement(Ringmaster)}): what a listener that moves data by these changes would hold,
 * against what the node owns.
 *
 * <p>One fold per node: the fold belongs to the member of the first change it hears, and a change
 * of another member (the fold added to several nodes) is kept but not folded, and reported as a
 * violation that names both members; {@link #disagreement(Ringmaster)} with another node names
 * both too. Add it before {@code start()} (or to a running node, whose first change is its
 * ownership then, from nothing: at such an {@code INITIAL} change the fold starts over, so it may
 * be added again to the same node once its {@link io.ringmaster.Registration} ended, except while
 * the cluster refuses the node, when no {@code INITIAL} change comes), and compare once the
 * node's listeners have handled its current ring
 * ({@link LocalCluster#awaitSettled}, or {@link Ringmaster#awaitListeners}): the fold lags the
 * ring by the callbacks still queued. Thread-safe.
 *
 * <p>It keeps every change it hears ({@link #changes()}), with its two rings: consecutive changes
 * share one, so a fold holds about one ring a change (some 13 bytes a token: 1.3 MB for 100
 * members of 1,024 virtual nodes). Long churn tests with many members want fewer virtual nodes.
 */
public final class OwnershipFold implements OwnershipListener {
  private static final byte NONE = 0;
  private static final byte PRIMARY = 1;
  private static final byte BACKUP = 2;

  private final long[] positions;
  private final byte[] held;
  private final List<OwnershipChange> changes = new ArrayList<>();
  private final List<String> violations = new ArrayList<>();
  /** The member whose changes this fold folds: that of the first change heard (null before). */
  private String member;

  /** A fold at 2,048 positions: the circle's two ends, and random ones of a fixed seed. */
  public OwnershipFold() {
    this(2048, 1);
  }

  /**
   * A fold at {@code positions} positions: {@code Long.MIN_VALUE}, {@code Long.MAX_VALUE}, and
   * random ones drawn from {@code seed}.
   *
   * @throws IllegalArgumentException if {@code positions} is below 2
   */
  public OwnershipFold(int positions, long seed) {
    if (positions < 2) {
      throw new IllegalArgumentException("positions must be at least 2 (the circle's two ends): " + positions);
    }
    SplittableRandom random = new SplittableRandom(seed);
    this.positions = new long[positions];
    for (int i = 2; i < positions; i++) {
      this.positions[i] = random.nextLong();
    }
    this.positions[0] = Long.MIN_VALUE;
    this.positions[1] = Long.MAX_VALUE;
    this.held = new byte[positions];
  }

  @Override
  public synchronized void onOwnershipChange(OwnershipChange change) {
    changes.add(change);
    String heard = change.diff().memberId();
    if (member == null) {
      member = heard;
    } else if (!member.equals(heard)) {
      violations.add(change.reason() + " change to view " + change.viewId() + ": a change of " + heard
          + ", heard by the fold of " + member + " (one fold per node), not folded");
      return;
    }
    if (change.diff().isEmpty()) {
      violations.add(change.reason() + " change to view " + change.viewId() + ": nothing changed");
    }
    if (change.inRing() && !change.ring().contains(change.diff().memberId())) {
      violations.add(change.reason() + " change to view " + change.viewId() + ": in a ring that does not hold "
          + change.diff().memberId());
    }
    checkEnds(change);
    if (change.reason() == OwnershipChange.Reason.INITIAL) {
      // A change from nothing: this fold, added again after its registration ended, starts over here.
      Arrays.fill(held, NONE);
    }
    int n = change.replicas();
    for (int i = 0; i < positions.length; i++) {
      long p = positions[i];
      byte before = held[i];
      int hits = 0;
      for (RingDiff.Gained g : change.gained()) {
        if (g.range().contains(p)) {
          hits++;
          if (before != NONE) {
            violate(change, p, "gained as " + g.role() + " where it was held as " + name(before));
          }
          expectOwners(change, p, g.sources(), owners(change.previousRing(), p, n), "gained with sources ",
              "the ring before");
          held[i] = code(g.role());
        }
      }
      for (RingDiff.Lost l : change.lost()) {
        if (l.range().contains(p)) {
          hits++;
          if (before != code(l.role())) {
            violate(change, p, "lost as " + l.role() + " where it was held as " + name(before));
          }
          expectOwners(change, p, l.destinations(), owners(change.ring(), p, n), "lost to ", "the ring after");
          held[i] = NONE;
        }
      }
      for (RingDiff.RoleChange r : change.roleChanges()) {
        if (r.range().contains(p)) {
          hits++;
          if (before != code(r.before())) {
            violate(change, p, "changed from " + r.before() + " where it was held as " + name(before));
          }
          held[i] = code(r.after());
        }
      }
      if (hits > 1) {
        violate(change, p, hits + " ranges of the change hold it");
      }
    }
  }

  /**
   * Each range of the change, at its end (a position every range holds): gained ranges' sources
   * are the owners there in the ring before, without the member, lost ranges' destinations the
   * owners in the ring after, without the member, and the member is where the roles say, in the
   * ring each role is of.
   */
  private void checkEnds(OwnershipChange change) {
    RingDiff diff = change.diff();
    String member = diff.memberId();
    int n = diff.replicas();
    for (RingDiff.Gained g : change.gained()) {
      long end = g.range().end();
      List<Member> before = owners(change.previousRing(), end, n);
      expectOwners(change, end, g.sources(), before, "gained with sources ", "the ring before");
      expectRole(change, end, owners(change.ring(), end, n), member, g.role(), "gained as ");
      expectNone(change, end, before, member, "gained where the ring before makes it ");
    }
    for (RingDiff.Lost l : change.lost()) {
      long end = l.range().end();
      List<Member> after = owners(change.ring(), end, n);
      expectOwners(change, end, l.destinations(), after, "lost to ", "the ring after");
      expectRole(change, end, owners(change.previousRing(), end, n), member, l.role(), "lost as ");
      if (change.inRing() || !change.ring().contains(member)) {
        // Unless the change refuses the node for its id: the ring after then holds that id, another
        // member's, among the new owners.
        expectNone(change, end, after, member, "lost where the ring after makes it ");
      }
    }
    for (RingDiff.RoleChange r : change.roleChanges()) {
      long end = r.range().end();
      if (r.before() == r.after()) {
        violate(change, end, "changed from " + r.before() + " to " + r.after());
      }
      expectRole(change, end, owners(change.previousRing(), end, n), member, r.before(), "changed from ");
      expectRole(change, end, owners(change.ring(), end, n), member, r.after(), "changed to ");
    }
  }

  private void expectRole(OwnershipChange change, long position, List<Member> owners, String member,
                          RingDiff.Role role, String what) {
    byte actual = roleIn(owners, member);
    if (actual != code(role)) {
      violate(change, position, what + role + ", where that ring makes it " + name(actual));
    }
  }

  private void expectOwners(OwnershipChange change, long position, List<Member> told, List<Member> owners,
                            String what, String ring) {
    if (!told.equals(owners)) {
      violate(change, position, what + ids(told) + ", where " + ring + " has " + ids(owners));
    }
  }

  private void expectNone(OwnershipChange change, long position, List<Member> owners, String member, String what) {
    byte actual = roleIn(owners, member);
    if (actual != NONE) {
      violate(change, position, what + name(actual));
    }
  }

  private static List<Member> owners(HashRing ring, long position, int replicas) {
    return ring.isEmpty() ? List.of() : ring.ownersOfPosition(position, replicas);
  }

  private static byte roleIn(List<Member> owners, String member) {
    for (int k = 0; k < owners.size(); k++) {
      if (owners.get(k).id().equals(member)) {
        return k == 0 ? PRIMARY : BACKUP;
      }
    }
    return NONE;
  }

  private static List<String> ids(List<Member> members) {
    return members.stream().map(Member::id).toList();
  }

  private void violate(OwnershipChange change, long position, String what) {
    violations.add(change.reason() + " change to view " + change.viewId() + ", position "
        + Long.toHexString(position) + ": " + what);
  }

  private static byte code(RingDiff.Role role) {
    return role == RingDiff.Role.PRIMARY ? PRIMARY : BACKUP;
  }

  private static String name(byte code) {
    return code == NONE ? "nothing" : code == PRIMARY ? "PRIMARY" : "BACKUP";
  }

  /**
   * Where the fold differs from what {@code node}'s ring gives it (as primary, as backup, or
   * nothing; nothing while the cluster refuses the node, whose id the ring may give another
   * member), or empty if nowhere: the first position that differs, described.
   */
  public Optional<String> disagreement(Ringmaster node) {
    Ringmaster.RingState state = node.ringState(); // the ring and whether the node is in it, read together
    String id = node.localMember().id();
    return disagreement(state.inRing() ? state.ring() : state.ring().without(id), id, node.config().replicas());
  }

  /**
   * Where the fold differs from what {@code ring} gives member {@code memberId} with
   * {@code replicas} owners per key, or empty if nowhere; for a fold of another member's changes,
   * that.
   */
  public synchronized Optional<String> disagreement(HashRing ring, String memberId, int replicas) {
    if (member != null && !member.equals(memberId)) {
      return Optional.of("the changes heard are " + member + "'s, not " + memberId + "'s (one fold per node)");
    }
    for (int i = 0; i < positions.length; i++) {
      byte actual = roleIn(owners(ring, positions[i], replicas), memberId);
      if (held[i] != actual) {
        return Optional.of("position " + Long.toHexString(positions[i]) + ": the changes heard give " + memberId + " "
            + name(held[i]) + ", the ring " + name(actual) + " (after " + changes.size() + " changes)");
      }
    }
    return Optional.empty();
  }

  /** Whether the fold holds nothing: after a node's {@code LEAVING} change, say. */
  public synchronized boolean holdsNothing() {
    for (byte b : held) {
      if (b != NONE) {
        return false;
      }
    }
    return true;
  }

  /** Every change heard, in order. */
  public synchronized List<OwnershipChange> changes() {
    return List.copyOf(changes);
  }

  /**
   * What the changes contradicted: the fold before them, or their own rings (sources,
   * destinations, roles), in order; empty if nothing.
   */
  public synchronized List<String> violations() {
    return List.copyOf(violations);
  }
}
