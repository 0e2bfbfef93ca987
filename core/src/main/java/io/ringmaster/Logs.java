package io.ringmaster;

/**
 * The guard around a node's own log calls. A logger that throws (a filter's bug, a backend's) has
 * nothing to tell it with, and must not stop the work after the log: the view thread's next view,
 * a listener's next callback, the next gossip round or rejoin attempt.
 */
final class Logs {
  private Logs() {}

  /** Runs one log call, and never throws. */
  static void quietly(Runnable log) {
    try {
      log.run();
    } catch (RuntimeException | Error logging) {
      // nothing to tell it with
    }
  }
}
