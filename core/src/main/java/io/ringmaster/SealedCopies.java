package io.ringmaster;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jgroups.Address;

/**
 * The seal numbers this node has taken from each sender, so that {@link SharedSecretEncrypt}
 * drops a sealed message sent again, whatever the protocols above it would make of the copy.
 *
 * <p>A node numbers what it seals in series: one for the messages to all members and one for
 * those to each member, each split in two, regular messages and out-of-band ones, since the
 * transport delivers the two kinds apart (a sender's regular messages one batch at a time, in
 * the order they came; out-of-band ones at once, on any thread). Each message is one higher than
 * the one before in its series; a series starts at the time in milliseconds times a million,
 * and above every number its node has given, so one started again (for a member that left and
 * came back) starts above its old numbers. So a receiver takes each series of a sender in the
 * order sealed, give or take the few messages being sent or delivered at once. Per sender and
 * series, this keeps which of the last {@value #WINDOW} numbers up to the highest taken were
 * taken: a number taken before, or further below the highest than that, is a copy (or so late
 * that the reliable protocols above have sent the message again, under a new number, by then).
 * In a series to all members, a number more than {@value #GRACE} below the first one taken is
 * dropped too: a member that joined late takes almost nothing sealed before its first message
 * from that sender. (A series to this node needs no such floor: everything sealed for this
 * node's address was sent to it.)
 *
 * <p>What gets through: a number this node never took that is above the highest it took, or,
 * while its sender is in the view, among the last {@value #WINDOW} up to it (one sent to all while
 * it was on the other side of a partition, say; once a member has left, only its numbers above the
 * highest taken); and any message of a sender this node has forgotten. A member that leaves the
 * view is remembered until {@code departedKept} other members have left after it; a sender that
 * was in no view this node installed (a joiner, say), until {@value #STRANGERS_KEPT} others
 * like it have been heard from.
 *
 * <p>Thread-safe: {@link #admit} takes the series' own lock only; {@link #retain} (on view
 * changes) takes this object's.
 */
final class SealedCopies {
  /** How many numbers below a series' highest are told apart; older ones are dropped. */
  static final int WINDOW = 1024;
  /** How far below the first number taken of a series to all a number is still taken (if new). */
  static final int GRACE = 64;
  /** How many senders never in a view, and not in this one, are remembered. */
  static final int STRANGERS_KEPT = 1024;

  private final Map<Address, Sender> senders = new ConcurrentHashMap<>();
  /** Members that left, oldest first. Guarded by this. */
  private final Outside departed;
  /** Senders never in a view, oldest first. Guarded by this. */
  private final Outside strangers = new Outside(STRANGERS_KEPT);
  /** View changes seen. Guarded by this. */
  private long changes;
  /** The members of the last view. Guarded by this. */
  private Collection<Address> lastMembers = Set.of();

  /** @param departedKept how many members that left are remembered, at least 0 */
  SealedCopies(int departedKept) {
    if (departedKept < 0) {
      throw new IllegalArgumentException("departedKept must be at least 0: " + departedKept);
    }
    this.departed = new Outside(departedKept);
  }

  /**
   * Whether a message {@code sender} sealed with {@code seal}, for all members or for this one
   * ({@code toAll}), out of band or not, is taken: false for a copy of one taken before, for one
   * {@value #WINDOW} or more below the highest taken from that series, or, to all, for one more
   * than {@value #GRACE} below the series' first.
   */
  boolean admit(Address sender, boolean toAll, boolean outOfBand, long seal) {
    Sender s = senders.get(sender);
    if (s == null) {
      s = newSender(sender);
    }
    return s.series[(toAll ? 2 : 0) + (outOfBand ? 1 : 0)].admit(seal, toAll);
  }

  /**
   * A sender first heard from: a member of the last view, or one outside it, counted among the
   * strangers at once (so that however many are heard from between two views, they stay bounded).
   */
  private synchronized Sender newSender(Address sender) {
    Sender existing = senders.get(sender);
    if (existing != null) {
      return existing;
    }
    Sender s = new Sender();
    senders.put(sender, s);
    if (lastMembers.contains(sender)) {
      s.wasMember = true;
    } else {
      goOutside(sender, s);
      strangers.trim();
    }
    return s;
  }

  /**
   * Marks the senders not in {@code members} as outside the view (a sender back in it is not),
   * and forgets the ones outside longest beyond the limits: members that left, and senders never
   * in a view, each counted apart.
   */
  synchronized void retain(Collection<Address> members) {
    changes++;
    lastMembers = members;
    for (Map.Entry<Address, Sender> e : senders.entrySet()) {
      Sender s = e.getValue();
      if (members.contains(e.getKey())) {
        if (s.outside != null) {
          s.outside.count--;
          s.outside = null;
        }
        s.wasMember = true;
      } else if (s.outside == null) {
        goOutside(e.getKey(), s);
      }
    }
    departed.trim();
    strangers.trim();
  }

  /**
   * Counts the sender outside the view: among the members that left, or the strangers. A member
   * that leaves has its windows closed: a number it sealed below the highest taken from it, and
   * never taken (one lost on the way, or held back by someone on the path), is dropped from now on,
   * since a copy of it could only come from someone who recorded it, and the join request among
   * them would admit, under its address, a member that nobody runs. Its newer numbers are still
   * taken (a member back after a partition, its merge).
   */
  private void goOutside(Address sender, Sender s) {
    if (s.wasMember) {
      for (Window w : s.series) {
        w.close();
      }
    }
    s.outside = s.wasMember ? departed : strangers;
    s.outsideSince = changes;
    s.outside.add(sender, changes);
  }

  /** The senders remembered, in the view or outside it. */
  int senders() {
    return senders.size();
  }

  /** Entries in the queues of senders outside the view, stale ones included (for tests). */
  synchronized int outsideEntries() {
    return departed.queue.size() + strangers.queue.size();
  }

  /** Senders outside the view now that were members of a view this node installed (for tests). */
  synchronized int departedNow() {
    return departed.count;
  }

  private record Departure(Address sender, long change) {}

  /** Senders outside the view, of one kind, oldest first; some entries are stale (back in a view since). */
  private final class Outside {
    private final ArrayDeque<Departure> queue = new ArrayDeque<>();
    private final int kept;
    /** Senders of this kind outside the view now. */
    int count;

    Outside(int kept) {
      this.kept = kept;
    }

    void add(Address sender, long change) {
      queue.add(new Departure(sender, change));
      count++;
    }

    /** Forgets the senders outside longest beyond {@link #kept}, and drops stale entries once they pile up. */
    void trim() {
      while (count > kept) {
        Departure d = queue.poll();
        if (current(d)) {
          senders.remove(d.sender());
          count--;
        }
      }
      if (queue.size() > 2 * count + 64) {
        queue.removeIf(d -> !current(d));
      }
    }

    /** Whether the sender went outside the view at that change and has not come back since. */
    private boolean current(Departure d) {
      Sender s = senders.get(d.sender());
      return s != null && s.outside == this && s.outsideSince == d.change();
    }
  }

  /** One sender's four series (to this node or to all, each regular or out of band), and where it stands. */
  private static final class Sender {
    final Window[] series = {new Window(), new Window(), new Window(), new Window()};
    // Guarded by the SealedCopies.
    boolean wasMember;
    /** The kind of sender outside the view it is counted as, or null while it is in the view. */
    Outside outside;
    long outsideSince;
  }

  /** One series' numbers: the highest taken, and a ring of bits for the last {@value #WINDOW} up to it. */
  private static final class Window {
    private final long[] taken = new long[WINDOW / Long.SIZE];
    private boolean any;
    private long highest;

    synchronized boolean admit(long seal, boolean withFloor) {
      if (!any) {
        any = true;
        highest = seal;
        if (withFloor) {
          Arrays.fill(taken, -1L); // the numbers below the first: taken, but for the grace below
          for (long s = seal - GRACE; s < seal; s++) {
            taken[index(s)] &= ~bit(s);
          }
        }
        mark(seal);
        return true;
      }
      if (seal > highest) {
        long ahead = seal - highest; // sealed numbers of one sender never wrap: no overflow
        if (ahead >= WINDOW) {
          Arrays.fill(taken, 0);
        } else {
          for (long s = highest + 1; s < seal; s++) {
            taken[index(s)] &= ~bit(s); // numbers not taken yet (still on their way) are free
          }
        }
        highest = seal;
        mark(seal);
        return true;
      }
      if (highest - seal >= WINDOW || (taken[index(seal)] & bit(seal)) != 0) {
        return false;
      }
      mark(seal);
      return true;
    }

    /** Takes every number up to the highest as taken: only newer ones get through. */
    synchronized void close() {
      if (any) {
        Arrays.fill(taken, -1L);
      }
    }

    private void mark(long seal) {
      taken[index(seal)] |= bit(seal);
    }

    private static int index(long seal) {
      return (int) ((seal & (WINDOW - 1)) >>> 6);
    }

    private static long bit(long seal) {
      return 1L << (seal & 63);
    }
  }
}
