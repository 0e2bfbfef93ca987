package io.ringmaster;

import java.util.Objects;

/**
 * Two members installed the same view but disagree on it: they computed different rings, they
 * disagree on which member holds an id (then the checksums may be equal: the ring names ids, not
 * addresses), or a JGroups merge race gave one view id two member lists. Found by the background
 * checksum gossip; {@link #kind()} says which, and whether it ends by itself.
 *
 * @param viewId        the view both members had
 * @param peerId        the other member's node id, as it gave it
 * @param localChecksum this node's ring checksum
 * @param peerChecksum  the peer's ring checksum
 * @param kind          what the two disagree on
 */
public record RingDivergence(long viewId, String peerId, long localChecksum, long peerChecksum, Kind kind) {

  /**
   * A report, as the gossip makes one.
   *
   * @throws NullPointerException if {@code peerId} or {@code kind} is null
   */
  public RingDivergence {
    Objects.requireNonNull(peerId, "peerId");
    Objects.requireNonNull(kind, "kind");
  }

  /** What two members of one view disagree on. */
  public enum Kind {
    /**
     * The peer is the member this node has under its id, and their checksums differ: the two
     * computed different rings from the same members. Should not happen: a bug, or members that
     * disagree on the ring's parameters or spec version; compare their {@code ringJson()}. Does
     * not end by itself.
     */
    CHECKSUM,
    /**
     * The peer is not the member this node has under the id the peer gossips as (this node has
     * another member under it, or none), and nothing shows a split view: the two disagree on
     * which member was admitted under that id, whatever their checksums. Should not happen; does
     * not end by itself.
     */
    HOLDER,
    /**
     * This node's view of that id does not list the peer: a JGroups merge race gave the view id
     * two member lists. The peer is told, and leaves and rejoins the cluster, so it ends by itself
     * (see "Watching a cluster" in {@code docs/operations.md}).
     */
    SPLIT_VIEW
  }
}
