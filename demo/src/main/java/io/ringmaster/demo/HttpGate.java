package io.ringmaster.demo;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The peer's HTTP handler through its life. The server listens from the moment the port is bound,
 * so that a client never waits on a connection nobody answers: while the peer joins its cluster
 * every request gets 503 "the peer is starting"; then {@link #open} hands requests to the API;
 * at a stop, {@link #close} refuses new requests with 503 "the peer is stopping" and waits a
 * little for those in flight, so that they end with a reply rather than a cut connection.
 */
final class HttpGate implements HttpHandler {
  private volatile HttpHandler api; // null until the peer serves
  private boolean closing; // guarded by this
  private int inFlight; // guarded by this

  @Override
  public void handle(HttpExchange exchange) {
    HttpHandler serving;
    synchronized (this) {
      serving = closing ? null : api;
      if (serving != null) {
        inFlight++;
      }
    }
    if (serving == null) {
      refuse(exchange);
      return;
    }
    try {
      serving.handle(exchange);
    } catch (IOException e) {
      exchange.close(); // the API answers every failure itself; this is a client gone away
    } finally {
      synchronized (this) {
        if (--inFlight == 0) {
          notifyAll();
        }
      }
    }
  }

  private void refuse(HttpExchange exchange) {
    boolean stopping;
    synchronized (this) {
      stopping = closing;
    }
    exchange.getResponseHeaders().set("Retry-After", "1");
    if (stopping) {
      exchange.getResponseHeaders().set("Connection", "close"); // this peer will not answer on it again
    }
    HttpApi.send(exchange, 503, new HttpApi.ErrorReply(stopping ? "the peer is stopping"
        : "the peer is starting: it has not joined its cluster yet; try again in a moment"));
  }

  /** Whether {@link #close} has begun: every request from now on is refused. */
  synchronized boolean isClosing() {
    return closing;
  }

  /** Serves requests with {@code handler} from now on. */
  void open(HttpHandler handler) {
    api = handler;
  }

  /**
   * Refuses every request from now on, then waits up to {@code grace} for those in flight.
   *
   * @return whether every request in flight ended in time
   */
  boolean close(Duration grace) {
    long deadline = System.nanoTime() + grace.toNanos();
    synchronized (this) {
      closing = true;
      boolean interrupted = false;
      try {
        while (inFlight > 0) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return false;
          }
          try {
            TimeUnit.NANOSECONDS.timedWait(this, left);
          } catch (InterruptedException e) {
            interrupted = true; // still bounded by the grace; the flag is kept for the caller
          }
        }
        return true;
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
