package io.ringmaster;

/**
 * The handle of a registered listener. {@link #close()} stops its deliveries: the changes still
 * queued for it are dropped (its fold ends there), and none is taken for delivery once close()
 * returns. A callback already under way (one taken, even if its call has not begun) is neither
 * waited for nor interrupted by this close(), and from then on {@link Ringmaster#close()} does not
 * wait for it as a listener's (only, on the node's pool, as any of the pool's tasks: up to a
 * second, then interrupted), nor does {@link RingmasterStats#pendingCallbacks()} count it. It may be
 * called from the listener's own callback, and a second call does nothing. To listen again, add the
 * listener again: on a running node its first change is then the current state, from nothing.
 */
@FunctionalInterface
public interface Registration extends AutoCloseable {
  @Override
  void close();
}
