package io.ringmaster.demo;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The last {@value #CAPACITY} events and the Server-Sent Events subscribers of {@code /events}.
 * A new subscriber first gets the buffered events, then live ones; a browser reconnecting with
 * the {@code Last-Event-ID} header (or a page that opens a new stream naming the last event it
 * showed) gets only the buffered events after that one, so it shows none twice, and first a
 * {@code gap} event if some after that one are no longer buffered. Each
 * subscriber has its own bounded queue and writer thread, so a slow browser never holds up a
 * publisher; one that falls {@value #QUEUE} events behind, or whose connection fails, is dropped.
 *
 * <p>A log {@linkplain #inViewOrder() in view order} shows each view's membership event before this
 * peer's ownership event of that view. The node runs the two listeners that publish them on threads
 * of their own, so the ownership event may come first: the log then keeps it back, with every event
 * published after it, until the membership event of its view (or of a later one) is in, and shows
 * them after it, in the order they came. Nobody waits for this: the publisher returns at once, and
 * only what the log shows is later. At most {@value #CAPACITY} events are kept back, and none once
 * the log is closed: a membership event that never comes (its listener stopped with the node) holds
 * nothing back for good. An ownership event of a view below the newest membership in the log (a node
 * that rejoined counts its views again from a lower id) is not kept back either, whichever came first.
 */
final class EventLog implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(EventLog.class.getName());
  static final int CAPACITY = 200;
  static final int MAX_SUBSCRIBERS = 32;
  static final int QUEUE = 1_000;
  /**
   * How often an idle stream gets a comment line. A browser that went away is noticed only when a
   * write fails (the first write after it left usually still succeeds), so this also bounds how
   * long its place among the {@value #MAX_SUBSCRIBERS} stays taken: about two heartbeats.
   */
  static final Duration HEARTBEAT = Duration.ofSeconds(2);

  /** One event as sent: its sequence number and JSON. */
  private record Sse(long id, String json) {}

  /**
   * Starts every event id this process sends ({@code <epoch>-<sequence>}), so that a browser
   * reconnecting to a peer restarted on the same port names an id this one does not know.
   */
  private final String epoch = String.format("%08x", ThreadLocalRandom.current().nextInt());

  private final ArrayDeque<Sse> recent = new ArrayDeque<>();
  private final List<Subscriber> subscribers = new CopyOnWriteArrayList<>();
  private final AtomicInteger threadCount = new AtomicInteger();
  private long sequence;
  private volatile boolean closed;

  /** Whether ownership events wait for the membership event of their view ({@link #inViewOrder()}). */
  private final boolean viewOrder;
  /**
   * The newest view whose membership is in the log (the first view's as the {@code started} event):
   * an ownership event of a view up to this one is shown at once.
   */
  private long membershipIn = -1;
  /**
   * The events kept back, oldest first: an ownership event of a view newer than {@link #membershipIn}
   * and every event published after it. Their ids are given when they are shown.
   */
  private final ArrayDeque<Held> held = new ArrayDeque<>();

  /** An event kept back; {@code view} is the view of an ownership event, -1 for any other event. */
  private record Held(String json, long view) {}

  /** A log that shows events in the order they are published. */
  EventLog() {
    this(false);
  }

  private EventLog(boolean viewOrder) {
    this.viewOrder = viewOrder;
  }

  /**
   * A log that shows this peer's ownership event of a view after the membership event of that view,
   * and the events published after the ownership event after both (see the class comment).
   */
  static EventLog inViewOrder() {
    return new EventLog(true);
  }

  /** Records an event (a record from {@link Events}) and sends it to every subscriber. */
  void publish(Object event) {
    String json = Json.string(event);
    synchronized (this) {
      if (held.isEmpty()) {
        show(json);
      } else {
        hold(new Held(json, -1));
      }
    }
  }

  /**
   * Publishes the membership event of view {@code viewId}: shown at once, ahead of the events kept
   * back, and then the ownership event of that view, or of an earlier one, with what followed it.
   */
  void publishMembership(long viewId, Object event) {
    String json = Json.string(event);
    synchronized (this) {
      show(json);
      membershipIn(viewId);
    }
  }

  /**
   * Says that the membership of view {@code viewId} is in the log in another form, or never will
   * be: the node's first view, which the {@code started} event reports.
   */
  synchronized void membershipIn(long viewId) {
    membershipIn = Math.max(membershipIn, viewId);
    while (!held.isEmpty() && held.peekFirst().view() <= membershipIn) {
      show(held.removeFirst().json());
    }
  }

  /**
   * Publishes this peer's ownership event of view {@code viewId}: kept back, in a log in view order,
   * until the membership event of that view is in.
   */
  void publishOwnership(long viewId, Object event) {
    String json = Json.string(event);
    synchronized (this) {
      boolean waits = viewOrder && !closed && viewId > membershipIn;
      if (waits || !held.isEmpty()) {
        hold(new Held(json, waits ? viewId : -1));
      } else {
        show(json);
      }
    }
  }

  /** Keeps an event back, unless {@value #CAPACITY} are already: then shows them all, and it. */
  private void hold(Held event) {
    held.addLast(event);
    if (held.size() > CAPACITY || closed) {
      showHeld();
    }
  }

  /** Shows every event kept back, in order. */
  private void showHeld() {
    while (!held.isEmpty()) {
      show(held.removeFirst().json());
    }
  }

  /** Gives the event its id, buffers it and sends it to every subscriber: under the lock. */
  private void show(String json) {
    Sse sse = new Sse(++sequence, json);
    if (recent.size() == CAPACITY) {
      recent.removeFirst();
    }
    recent.addLast(sse);
    for (Subscriber s : subscribers) {
      s.offer(sse);
    }
  }

  /** The buffered events' JSON, oldest first. */
  synchronized List<String> recent() {
    List<String> out = new ArrayList<>(recent.size());
    recent.forEach(e -> out.add(e.json()));
    return out;
  }

  /** Starts streaming to {@code exchange}; returns at once, the exchange stays open. */
  void subscribe(HttpExchange exchange) throws IOException {
    subscribe(exchange, null);
  }

  /**
   * The same, for a subscriber that names the last event it saw in {@code lastEventId} (null if
   * none) when its request has no {@code Last-Event-ID} header.
   */
  void subscribe(HttpExchange exchange, String lastEventId) throws IOException {
    String header = exchange.getRequestHeaders().getFirst("Last-Event-ID");
    long seen = lastEventId(header != null ? header : lastEventId);
    Subscriber s = new Subscriber(exchange);
    synchronized (this) { // the check and the place it grants, at once: concurrent requests cannot both pass
      if (closed) {
        throw new HttpError(503, "the peer is stopping");
      }
      if (subscribers.size() >= MAX_SUBSCRIBERS) {
        throw new HttpError(503, "too many event subscribers (at most " + MAX_SUBSCRIBERS + ")");
      }
      // An id this process sent (or 0: none yet): the events after it. Any other (sent by the
      // process before a restart, say): all of them.
      boolean known = seen >= 0 && seen <= sequence;
      long oldest = recent.isEmpty() ? sequence + 1 : recent.peekFirst().id();
      if (known && oldest > seen + 1) { // it missed events no longer buffered: say how many
        s.offer(new Sse(oldest - 1, Json.string(Events.gap(oldest - 1 - seen))));
      }
      for (Sse e : recent) {
        if (!known || e.id() > seen) {
          s.offer(e);
        }
      }
      subscribers.add(s);
    }
    try {
      HttpApi.discardQuietly(exchange); // a GET sent with a body: see HttpApi
      exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
      exchange.getResponseHeaders().set("Cache-Control", "no-cache");
      exchange.sendResponseHeaders(200, 0);
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
    s.thread.start();
  }

  /** The sequence number in the id a reconnecting browser names, or -1 if none or not this process's. */
  private long lastEventId(String named) {
    String prefix = epoch + "-";
    String id = named == null ? "" : named.strip();
    if (!id.startsWith(prefix)) {
      return -1;
    }
    try {
      return Long.parseLong(id.substring(prefix.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  int subscribers() {
    return subscribers.size();
  }

  /** Stops the streams; the events kept back are shown, as is every event published from now on. */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      showHeld();
    }
    subscribers.forEach(Subscriber::close);
  }

  private final class Subscriber {
    private final HttpExchange exchange;
    private final BlockingQueue<Sse> queue = new ArrayBlockingQueue<>(QUEUE);
    private final Thread thread;
    private volatile boolean done;

    Subscriber(HttpExchange exchange) {
      this.exchange = exchange;
      this.thread = new Thread(this::run, "sse-" + threadCount.incrementAndGet());
      thread.setDaemon(true);
    }

    void offer(Sse e) {
      if (!queue.offer(e)) {
        LOG.log(Level.INFO, "dropping an /events subscriber that fell {0} events behind", QUEUE);
        close();
      }
    }

    void run() {
      OutputStream out = exchange.getResponseBody();
      long nextHeartbeat = System.nanoTime() + HEARTBEAT.toNanos();
      try {
        out.write(": connected\n\n".getBytes(StandardCharsets.UTF_8));
        out.flush();
        while (!done && !closed) {
          Sse e = queue.poll(Math.max(1, nextHeartbeat - System.nanoTime()), TimeUnit.NANOSECONDS);
          if (e != null) {
            out.write(("id: " + epoch + "-" + e.id() + "\ndata: " + e.json() + "\n\n").getBytes(StandardCharsets.UTF_8));
          } else {
            out.write(": heartbeat\n\n".getBytes(StandardCharsets.UTF_8));
            nextHeartbeat = System.nanoTime() + HEARTBEAT.toNanos();
          }
          out.flush();
        }
      } catch (IOException | InterruptedException disconnected) {
        // the browser went away: clean up below
      } finally {
        close();
        exchange.close();
      }
    }

    /** Stops the writer; it closes the exchange itself, so this never blocks on a slow socket. */
    void close() {
      done = true;
      subscribers.remove(this);
      if (Thread.currentThread() != thread) {
        thread.interrupt();
      }
    }
  }
}
