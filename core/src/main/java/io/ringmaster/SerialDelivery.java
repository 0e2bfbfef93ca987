package io.ringmaster;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * Delivers events to one listener, one at a time and in order, on an executor. A listener that
 * throws is logged and keeps receiving; a listener that blocks holds up only itself.
 */
final class SerialDelivery<E> implements Registration {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  private final String name;
  private final Consumer<E> listener;
  private final Executor executor;
  private final Runnable onClose;
  private final ArrayDeque<E> queue = new ArrayDeque<>();
  private boolean running;
  /** The thread running {@link #drain()}, while {@link #running}. */
  private Thread drainer;
  private boolean closed;

  SerialDelivery(String name, Consumer<E> listener, Executor executor, Runnable onClose) {
    this.name = name;
    this.listener = listener;
    this.executor = executor;
    this.onClose = onClose;
  }

  /** Queues an event and starts delivering it if the listener is idle. */
  void submit(E event) {
    if (enqueue(event)) {
      launch();
    }
  }

  /**
   * Queues an event. True if the listener was idle: the caller must then {@link #launch()} the
   * delivery, after releasing any lock it holds, since a same-thread executor runs the listener
   * right there.
   */
  synchronized boolean enqueue(E event) {
    if (closed) {
      return false;
    }
    queue.add(event);
    if (running) {
      return false;
    }
    running = true;
    return true;
  }

  /** Hands the queued events to the executor; after {@link #enqueue} returned true. */
  void launch() {
    try {
      executor.execute(this::drain);
    } catch (RuntimeException e) {
      // A RejectedExecutionException, or anything else the caller's executor throws. Skipping
      // this callback and delivering later ones would hand the listener a sequence with a gap
      // (the fold would no longer give its ownership): remove it instead, loudly. Nothing
      // escapes to the thread that published the change, so other listeners still get it.
      synchronized (this) {
        running = false;
        closed = true;
        queue.clear();
        notifyAll();
      }
      LOG.log(System.Logger.Level.ERROR, name + ": its executor refused a callback (" + e + "); the listener is"
          + " removed so that it never sees a sequence with a gap. Register it again to start over.", e);
      onClose.run();
    }
  }

  private void drain() {
    synchronized (this) {
      drainer = Thread.currentThread();
    }
    while (true) {
      E event;
      synchronized (this) {
        event = queue.poll();
        if (event == null || closed) {
          running = false;
          drainer = null;
          notifyAll();
          return;
        }
      }
      try {
        listener.accept(event);
      } catch (Throwable t) {
        LOG.log(System.Logger.Level.ERROR, name + " threw; later callbacks still run", t);
      }
    }
  }

  /** Callbacks queued or running. */
  synchronized int pending() {
    return queue.size() + (running ? 1 : 0);
  }

  /**
   * Waits until every queued callback has run, or the deadline passes. Called from the listener's
   * own callback, returns at once: what is queued behind that callback runs when it returns.
   */
  synchronized boolean awaitIdle(long deadlineNanos) throws InterruptedException {
    while (running || !queue.isEmpty()) {
      if (drainer == Thread.currentThread()) {
        return true;
      }
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return true;
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      queue.clear();
    }
    onClose.run();
  }
}
