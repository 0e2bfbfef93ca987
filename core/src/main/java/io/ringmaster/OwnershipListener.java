package io.ringmaster;

/**
 * Told what the local member gained and lost at each ring change.
 *
 * <p>Runs on a thread of the node (or on the {@link java.util.concurrent.Executor} given at
 * registration), never on a JGroups thread, one call at a time per registration (a listener
 * registered twice is two registrations), in the order the node installs its views. It may
 * block (to move data, say) without delaying ring installation or other listeners, unless its
 * executor runs tasks on the calling thread ({@code Runnable::run}, a pool with
 * {@code CallerRunsPolicy}) or blocks in {@code execute()}: the node hands callbacks over from its
 * view thread, so such an executor holds up later rings, and the current change of the listeners
 * on executors of yours handed it after this one (the node's own pool is handed each change first,
 * then ownership listeners, then membership listeners). Other threads hand callbacks over too: the
 * first change of a listener added to a running node is handed over by the thread that adds it (so
 * with a same-thread executor it runs inside {@code addOwnershipListener}, before the
 * {@link Registration} is returned: do not add one while holding a lock it needs), and a listener
 * on a same-thread executor that calls {@link Ringmaster#close()} or
 * {@link Ringmaster#awaitListeners} hands over, on its own thread, the callbacks its call holds
 * up. And a {@link Ringmaster#close()} that gave up waiting for a view thread held by such a
 * listener hands over the callbacks the view thread has yet to start, from the node's pool (see
 * there). An exception it throws is logged and does not stop later calls.
 *
 * <p>Each change queued for a listener that has not run it yet holds two rings (before and after,
 * about 13 bytes per token each, shared with the other listeners), so a listener stuck through
 * many views holds that many rings; {@link RingmasterStats#pendingCallbacks()} shows the lag.
 *
 * <p>The fold invariant: starting from nothing and applying every change in order gives exactly
 * the member's current ownership; a listener added to a running node first gets the current
 * ownership as a change from nothing.
 */
@FunctionalInterface
public interface OwnershipListener {
  /**
   * Called once per ring change that changes what this member owns or its role (primary or backup)
   * for any of it, in view order.
   */
  void onOwnershipChange(OwnershipChange change);
}
