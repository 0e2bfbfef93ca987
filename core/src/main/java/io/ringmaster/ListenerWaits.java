package io.ringmaster;

import io.ringmaster.ClusterNode.ListenersState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The waits of listeners for each other: {@link ClusterNode#awaitListeners} called from listeners'
 * callbacks (a listener calling {@link Ringmaster#awaitListeners} or {@link Ringmaster#close()}).
 * Such calls, on different threads, can wait for each other in a circle (two pool listeners, each
 * waiting for the other). Of the calls in a circle, the one that began waiting last stops waiting
 * for the next listener of the circle and still waits for the others
 * ({@link ListenersState#IN_A_CIRCLE}); the other calls go on once its callback returns. Only
 * callbacks already running count: a callback queued behind another on a serial executor makes no
 * circle, and is waited for until the deadline.
 */
final class ListenerWaits {
  /**
   * A thread in {@link #await}: the order it started waiting in, the deliveries whose
   * callbacks it is running, and the one it waits for now (null between two).
   */
  private static final class Waiter {
    final long order;
    final List<SerialDelivery<?>> running;
    volatile SerialDelivery<?> waitingFor;

    Waiter(long order, List<SerialDelivery<?>> running) {
      this.order = order;
      this.running = running;
    }
  }

  /** The threads in {@link #await}, with what they wait for; guarded by itself. */
  private final Map<Thread, Waiter> waiters = new HashMap<>();
  private long count;

  /**
   * Waits, on behalf of the listener callbacks the calling thread runs, for each of
   * {@code awaited} to finish what is queued, but for those in {@code running}.
   *
   * @param running the deliveries whose callbacks the calling thread is running; not empty
   */
  ListenersState await(List<SerialDelivery<?>> awaited, List<SerialDelivery<?>> running, long deadlineNanos)
      throws InterruptedException {
    Thread self = Thread.currentThread();
    Waiter me;
    synchronized (waiters) {
      me = new Waiter(count++, running);
      waiters.put(self, me);
    }
    try {
      Predicate<Thread> futile = runner -> closesCircle(runner, me);
      ListenersState found = ListenersState.IDLE;
      for (SerialDelivery<?> l : awaited) {
        if (!awaitIdle(l, me, deadlineNanos, futile)) {
          // Once past the deadline, any later failure is too: BUSY is never overwritten.
          found = System.nanoTime() - deadlineNanos >= 0 ? ListenersState.BUSY : ListenersState.IN_A_CIRCLE;
        }
      }
      return found;
    } finally {
      synchronized (waiters) {
        waiters.remove(self);
      }
    }
  }

  /** The listeners that the calls in {@link #await} wait for now, by name. */
  List<String> names() {
    List<String> out = new ArrayList<>();
    synchronized (waiters) {
      for (Waiter w : waiters.values()) {
        SerialDelivery<?> d = w.waitingFor;
        if (d != null) {
          out.add(d.name());
        }
      }
    }
    return out;
  }

  private boolean awaitIdle(SerialDelivery<?> l, Waiter me, long deadlineNanos, Predicate<Thread> futile)
      throws InterruptedException {
    if (me.running.contains(l)) {
      return true; // its own listener is not waited for
    }
    me.waitingFor = l;
    // The other waits test again whether they close a circle: this one may now pass through them.
    // Woken where they sleep, on the listener each waits for (removed from the node or not).
    List<SerialDelivery<?>> sleepingOn = new ArrayList<>();
    synchronized (waiters) {
      for (Waiter w : waiters.values()) {
        SerialDelivery<?> d = w.waitingFor;
        if (w != me && d != null) {
          sleepingOn.add(d);
        }
      }
    }
    sleepingOn.forEach(SerialDelivery::wake);
    try {
      return l.awaitIdle(deadlineNanos, futile);
    } finally {
      me.waitingFor = null;
    }
  }

  /**
   * Whether following who waits for whom, from the thread running the callback that {@code me}
   * waits for, leads back to a callback that {@code me}'s thread runs, through waits that all
   * started before {@code me}'s: then {@code me} is the last wait of a circle, and stops.
   */
  private boolean closesCircle(Thread runner, Waiter me) {
    synchronized (waiters) {
      Thread t = runner;
      for (int step = 0; step < waiters.size() && t != null; step++) {
        Waiter w = waiters.get(t);
        if (w == null || w == me || w.order > me.order) {
          return false; // no circle, or a later wait in it stops instead
        }
        SerialDelivery<?> next = w.waitingFor;
        if (next == null) {
          return false;
        }
        if (me.running.contains(next)) {
          return true;
        }
        t = next.runner();
      }
      return false;
    }
  }
}
