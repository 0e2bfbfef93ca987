package io.ringmaster;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Supplier;

/**
 * Objects that are costly to set up (a cipher or a MAC holding a key), lent to one user at a time
 * and kept for the next. {@link #take} never waits, since JGroups threads call it: it takes a kept
 * one, or makes one when all are out. {@link #giveBack} keeps at most {@code capacity} and drops
 * the rest. The objects belong to the lender, so they go when it goes: unlike copies kept in a
 * {@code ThreadLocal}, which stay on every thread that ever used one (application threads that
 * sent a message included) after the protocol that made them is closed. Lock-free.
 *
 * @param <T> what is lent
 */
final class Lender<T> {
  private final AtomicReferenceArray<T> kept;
  private final Supplier<T> make;
  private volatile boolean closed;

  /**
   * @param capacity how many to keep between uses: about as many as threads use them at once
   * @param make     makes one, set up; called when none is kept
   */
  Lender(int capacity, Supplier<T> make) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be at least 1: " + capacity);
    }
    this.kept = new AtomicReferenceArray<>(capacity);
    this.make = Objects.requireNonNull(make, "make");
  }

  /** A kept one, or a new one if none is kept; the caller has it alone until it gives it back. */
  T take() {
    for (int i = 0; i < kept.length(); i++) {
      T t;
      if (kept.get(i) != null && (t = kept.getAndSet(i, null)) != null) {
        return t;
      }
    }
    return make.get();
  }

  /**
   * Keeps {@code t} for the next {@link #take}, or drops it if as many are kept as fit. Give back
   * only what was left in a state fit for the next user (after a call that threw, drop it).
   */
  void giveBack(T t) {
    Objects.requireNonNull(t, "t");
    for (int i = 0; i < kept.length() && !closed; i++) {
      if (kept.get(i) == null && kept.compareAndSet(i, null, t)) {
        if (closed) { // closed meanwhile: its clearing may have passed this slot
          kept.compareAndSet(i, t, null);
        }
        return;
      }
    }
  }

  /**
   * Drops every kept one, and keeps none from now on: one out now is dropped when given back, and
   * {@link #take} makes a new one each time.
   */
  void close() {
    closed = true;
    for (int i = 0; i < kept.length(); i++) {
      kept.set(i, null);
    }
  }

  /** How many are kept now. */
  int kept() {
    int n = 0;
    for (int i = 0; i < kept.length(); i++) {
      if (kept.get(i) != null) {
        n++;
      }
    }
    return n;
  }
}
