package io.ringmaster;

/**
 * Two members installed the same view but computed different rings, or disagree on which member
 * holds an id (then the checksums may be equal: the ring names ids, not addresses): a bug or a
 * configuration split that would make them disagree on owners, or a view id that a JGroups merge
 * race gave two member lists, which the member not listed ends by rejoining the cluster. Found by
 * the background checksum gossip.
 *
 * @param viewId        the view both members had
 * @param peerId        the other member's node id
 * @param localChecksum this node's ring checksum
 * @param peerChecksum  the peer's ring checksum
 */
public record RingDivergence(long viewId, String peerId, long localChecksum, long peerChecksum) {}
