package io.ringmaster;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
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
 * series, this keeps the highest number taken and which of the {@value #WINDOW} below it were
 * taken: a number taken before, or further below the highest than that, is a copy (or so late
 * that the reliable protocols above have sent the message again, under a new number, by then).
 * A series' first number taken counts as if every number below it had been taken too: a member
 * that joined late takes nothing sealed before its first message from that sender.
 *
 * <p>What gets through: a number within the window, of a message this node never took (one sent
 * while it was on the other side of a partition, say); and any message of a sender that this
 * node has forgotten. A sender that leaves the view is remembered until {@code departedKept}
 * others have left after it.
 *
 * <p>Thread-safe: {@link #admit} takes the sender's own lock only; {@link #retain} (on view
 * changes) takes this object's.
 */
final class SealedCopies {
  /** How many numbers below a sender's highest are told apart; older ones are dropped. */
  static final int WINDOW = 1024;

  private final int departedKept;
  private final Map<Address, Sender> senders = new ConcurrentHashMap<>();
  /** Senders that left, oldest first, each with the view change it left in. Guarded by this. */
  private final ArrayDeque<Departure> departed = new ArrayDeque<>();
  /** View changes seen. Guarded by this. */
  private long changes;
  /** Senders remembered as departed (some entries of {@link #departed} are stale: back since). Guarded by this. */
  private int departedCount;

  /** @param departedKept how many senders that left are remembered, at least 0 */
  SealedCopies(int departedKept) {
    if (departedKept < 0) {
      throw new IllegalArgumentException("departedKept must be at least 0: " + departedKept);
    }
    this.departedKept = departedKept;
  }

  /**
   * Whether a message {@code sender} sealed with {@code seal}, for all members or for this one
   * ({@code toAll}), out of band or not, is taken: false for a copy of one taken before, for one
   * more than {@value #WINDOW} below the highest taken from that series, or for one below the
   * series' first.
   */
  boolean admit(Address sender, boolean toAll, boolean outOfBand, long seal) {
    Sender s = senders.computeIfAbsent(sender, a -> new Sender());
    return s.series[(toAll ? 2 : 0) + (outOfBand ? 1 : 0)].admit(seal);
  }

  /**
   * Marks the senders not in {@code members} as departed (a sender that is back in a view is not),
   * and forgets the oldest departed ones beyond {@code departedKept}.
   */
  synchronized void retain(Collection<Address> members) {
    changes++;
    for (Map.Entry<Address, Sender> e : senders.entrySet()) {
      Sender w = e.getValue();
      if (members.contains(e.getKey())) {
        if (w.departedIn != 0) {
          w.departedIn = 0;
          departedCount--;
        }
      } else if (w.departedIn == 0) {
        w.departedIn = changes;
        departedCount++;
        departed.add(new Departure(e.getKey(), changes));
      }
    }
    while (departedCount > departedKept) {
      Departure d = departed.poll();
      if (current(d)) {
        senders.remove(d.sender());
        departedCount--;
      }
    }
    if (departed.size() > 2 * departedCount + 64) { // the stale entries a member that leaves and comes back leaves
      departed.removeIf(d -> !current(d));
    }
  }

  /** Whether the sender left at that change and has not come back since (nor left again later). */
  private boolean current(Departure d) {
    Sender w = senders.get(d.sender());
    return w != null && w.departedIn == d.change();
  }

  /** The senders remembered, present or departed. */
  int senders() {
    return senders.size();
  }

  private record Departure(Address sender, long change) {}

  /** One sender's four series: to this node or to all, each regular or out of band. */
  private static final class Sender {
    final Window[] series = {new Window(), new Window(), new Window(), new Window()};
    /** The view change the sender left in, 0 while it is a member. Guarded by the SealedCopies. */
    long departedIn;
  }

  /** One series' numbers: the highest taken, and a ring of bits for the {@value #WINDOW} up to it. */
  private static final class Window {
    private final long[] taken = new long[WINDOW / Long.SIZE];
    private boolean any;
    private long highest;

    synchronized boolean admit(long seal) {
      if (!any) {
        any = true;
        highest = seal;
        Arrays.fill(taken, -1L); // the numbers below the first: taken
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
