package io.ringmaster;

/**
 * Two members installed the same view but computed different rings, or disagree on which member
 * holds an id (then the checksums may be equal: the ring names ids, not addresses): a bug or a
 * configuration split that would make them disagree on owners. Found by the background checksum
 * gossip.
 *
 * @param viewId        the view both members had
 * @param peerId        the other member's node id
 * @param localChecksum this node's ring checksum
 * @param peerChecksum  the peer's ring checksum
 */
public record RingDivergence(long viewId, String peerId, long localChecksum, long peerChecksum) {}
