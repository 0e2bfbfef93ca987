package io.ringmaster;

import org.jgroups.Address;
import org.jgroups.util.UUID;

/**
 * A view, by number and creator, as another member names it in a message: two partitions can
 * reach the same view number under different coordinators.
 */
record ViewKey(long id, long creatorHigh, long creatorLow) {
  static ViewKey of(long id, Address creator) {
    UUID u = Gossip.creatorBits(creator);
    return new ViewKey(id, u.getMostSignificantBits(), u.getLeastSignificantBits());
  }
}
