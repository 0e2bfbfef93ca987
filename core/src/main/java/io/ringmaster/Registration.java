package io.ringmaster;

/**
 * The handle of a registered listener. {@link #close()} stops its deliveries: the changes still
 * queued for it are dropped (its fold ends there), and none is taken for delivery once close()
 * returns. A callback already under way (one taken, even if its call has not begun) is neither
 * waited for nor interrupted by this close(), and from then on neither {@link Ringmaster#close()}
 * waits for it as a listener's callback (on the node's pool, it may still be interrupted when the
 * pool stops) nor {@link RingmasterStats#pendingCallbacks()} counts it. It may be
 * called from the listener's own callback, and a second call does nothing. To listen again, add the
 * listener again: on a running node its first change is then the current state, from nothing.
 */
public interface Registration extends AutoCloseable {
  /**
   * Stops the listener's deliveries, as described above. Throws nothing, and a second call does
   * nothing.
   */
  @Override
  void close();

  /**
   * Whether the listener is still registered: true until {@link #close()}, or until the node
   * removes it because its executor refused a callback (which would have handed it a sequence
   * with a gap; an ERROR names it while the node runs). Once false, the listener hears nothing
   * more: add it again to start over from the current state (its first change is then an
   * {@code INITIAL} one, from nothing, if the node owns anything then: a listener that keeps state
   * resets it there; added while the cluster refuses the node, it gets no {@code INITIAL} change,
   * so reset it as you add it again). A node's close() leaves its
   * listeners registered, but for one whose callback the node's own pool, stopping, refused.
   */
  boolean isActive();
}
