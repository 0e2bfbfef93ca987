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
 * A node numbers the messages it seals for all members in one series, and those it seals for
 * each member in a series of that member's, each message one higher than the one before in its
 * series (a series starts at the time it starts in milliseconds times a million, so one started
 * again, for a member that came back under its old address, starts above its old numbers). A
 * member takes each series a sender sends it without gaps, in the order sealed but for the
 * reordering of concurrent delivery. Per sender and series (to all, or to this node), this keeps
 * the highest number taken and which of the {@value #WINDOW} below it were taken: a number taken
 * before, or further below the highest than that, is a copy (or so late that the reliable
 * protocols above have sent the message again, under a new number, by then).
 *
 * <p>A sender that leaves the view is remembered until {@code departedKept} others have left
 * after it: a copy of one of its messages sent later is dropped too. A sender that this node has
 * forgotten, or never heard from, starts afresh with its first sealed message.
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
   * ({@code toAll}), is taken: false for a copy of one taken before, or for one more than
   * {@value #WINDOW} below the highest taken from that series.
   */
  boolean admit(Address sender, boolean toAll, long seal) {
    Sender s = senders.computeIfAbsent(sender, a -> new Sender());
    return (toAll ? s.toAll : s.toThisNode).admit(seal);
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

  /** One sender's two series. */
  private static final class Sender {
    final Window toAll = new Window();
    final Window toThisNode = new Window();
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
