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

  /** Records an event (a record from {@link Events}) and sends it to every subscriber. */
  void publish(Object event) {
    String json = Json.string(event);
    synchronized (this) {
      Sse sse = new Sse(++sequence, json);
      if (recent.size() == CAPACITY) {
        recent.removeFirst();
      }
      recent.addLast(sse);
      for (Subscriber s : subscribers) {
        s.offer(sse);
      }
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
      // An id this process sent: the events after it. Any other (sent by the process before a
      // restart, say): all of them.
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

  @Override
  public void close() {
    closed = true;
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
