package io.ringmaster;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Hands the divergences that gossip finds to a node's divergence listeners, from its gossip
 * thread, never from the JGroups thread that received the checksum. Each listener hears a
 * divergence once per view, however many gossip rounds find it again.
 */
final class DivergenceReports {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /** At most this many reports wait for the gossip thread; the rest are dropped (at DEBUG). */
  static final int MAX_QUEUED = 64;

  /**
   * A divergence listener's delivery, and what it has been handed in the current view: gossip finds
   * a lasting divergence again at each round, and the listener hears it once per view. Its own
   * memory, so that a listener added later still hears one found before it came; read and written
   * on the gossip thread only, which hands the reports over.
   */
  private record Listener(SerialDelivery<RingDivergence> delivery, OncePerView handed) {}

  private final String nodeId;
  private final Executor gossipThread;
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  /** Reports handed to the gossip thread and not yet passed on to the listeners. */
  private final AtomicInteger queued = new AtomicInteger();

  DivergenceReports(String nodeId, Executor gossipThread) {
    this.nodeId = nodeId;
    this.gossipThread = gossipThread;
  }

  void add(SerialDelivery<RingDivergence> delivery) {
    listeners.add(new Listener(delivery, new OncePerView()));
  }

  void remove(SerialDelivery<RingDivergence> delivery) {
    listeners.removeIf(l -> l.delivery() == delivery);
  }

  /** Divergence listeners registered now. */
  int listenerCount() {
    return listeners.size();
  }

  /** Called on the JGroups thread that received the checksum: hands the report to the gossip thread. */
  void report(RingDivergence d) {
    if (queued.incrementAndGet() > MAX_QUEUED) {
      // The gossip thread is behind (a send waiting on the transport) and senders keep naming new
      // divergences: each would wait in the timer's queue, which has no bound. Counted in stats().
      queued.decrementAndGet();
      Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: {1} divergence reports wait already; not handed on:"
          + " {2}", nodeId, MAX_QUEUED, d));
      return;
    }
    try {
      gossipThread.execute(() -> {
        queued.decrementAndGet();
        listeners.forEach(l -> {
          if (l.handed().first(d.viewId(), d)) { // before queuing: a slow listener's queue holds each once
            l.delivery().submit(d);
          }
        });
      });
    } catch (RejectedExecutionException closing) {
      queued.decrementAndGet();
      Logs.quietly(() -> LOG.log(Level.DEBUG, "divergence reported while closing: {0}", d));
    }
  }
}
