package io.ringmaster;

import java.util.Objects;

/**
 * A node could not start or join, or {@link Ringmaster#awaitRing} saw no ring satisfy its
 * condition in time. The message says why, naming the setting or member at fault; {@link #reason()}
 * tells a program what kind of failure it was, so that it can decide whether to try again:
 *
 * <pre>{@code
 * try {
 *   node.start();
 * } catch (RingmasterException e) {
 *   switch (e.reason()) {
 *     case ID_HELD, START_TIMEOUT -> retryLater(); // its earlier self not yet found dead; peers slow
 *     case REFUSED -> alert(e.getMessage());        // settings this cluster does not take
 *     default -> throw e;                           // STACK: the message says whether it can clear
 *   }
 * }
 * }</pre>
 *
 * <p>A node whose {@code start()} failed is closed; trying again takes a new node, built with the
 * same or corrected settings.
 */
public class RingmasterException extends RuntimeException {
  private static final long serialVersionUID = 2L;

  /** What kind of failure a {@link RingmasterException} reports. */
  public enum Reason {
    /**
     * The cluster did not admit these settings: the node's ring parameters ({@code virtualNodes},
     * {@code replicas}, {@code applicationVersion}, and the build's ring spec and membership
     * protocol versions, {@link Ringmaster#PROTOCOL_VERSION}) differ from the cluster's, its
     * tokens would take the ring past the most a ring holds ({@link
     * io.ringmaster.ring.HashRing#MAX_TOKENS}, counting the members admitted before it in the
     * view), or the coordinator refused its join (a wrong secret).
     * Starting again with the same settings fails again, unless the member it was compared with
     * was the odd one out (a lone misconfigured member whose side of a healing partition it
     * joined: the message names that member); if that member won the heal (a tie of one correct
     * member against it), it leads the cluster, and every start fails until it is stopped. A
     * refusal for the ring's size ends once enough tokens have left the ring (each view is
     * counted afresh, in its order: docs/api.md, "Ring size").
     */
    REFUSED,
    /**
     * A member of the view holds this node's id. Usually this node's earlier self, restarted
     * before the cluster found it dead (seconds, at most the stack's failure detection time): a
     * new node with the same settings joins once it is gone. If it is another live process given
     * the same id, it stays: the message names the holder's address.
     */
    ID_HELD,
    /**
     * The JGroups stack could not start: its address or no port of its range could be bound, or a
     * protocol failed as it started; the message and the cause (JGroups' exception) say which. A
     * port range taken by other processes can clear; an address that is no interface of this host
     * cannot. (A stack file that cannot be read, or a protocol that refuses its settings, fails
     * with an {@link IllegalArgumentException} instead: at build, or as the stack starts.)
     */
    STACK,
    /** No ring came within {@code startTimeout}. */
    START_TIMEOUT,
    /** The node's first view could not be made into a ring that holds it; the cause says why. */
    VIEW_FAILED,
    /**
     * The node joined and its listeners heard the first ring, but the rest of its start failed (a
     * logger or an executor that threw, say), so it left again; they heard that too.
     */
    LEFT_AFTER_JOIN,
    /** {@link Ringmaster#close()} was called while {@code start()} waited for the first ring. */
    CLOSED,
    /** The thread in {@code start()} was interrupted; start() sets its interrupt flag again. */
    INTERRUPTED,
    /**
     * {@link Ringmaster#awaitRing}'s condition (or {@link io.ringmaster.testing.LocalCluster}'s
     * agreement) did not hold within its timeout.
     */
    AWAIT_TIMEOUT
  }

  private final Reason reason;

  /** A failure of the given kind, with its message. */
  public RingmasterException(Reason reason, String message) {
    super(message);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  /** A failure of the given kind, with its message and the exception that caused it. */
  public RingmasterException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  /** What kind of failure this is. */
  public Reason reason() {
    return reason;
  }
}
