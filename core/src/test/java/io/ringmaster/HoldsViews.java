package io.ringmaster;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jgroups.Event;
import org.jgroups.stack.Protocol;

/**
 * Holds the views going up to the channel while a test says so: a joining member's
 * {@code connect()} returns only after its first view went up, so holding that view holds the
 * start. Used by {@code holds-views.xml}, at the top of the stack.
 */
public class HoldsViews extends Protocol {
  private static volatile CountDownLatch gate;
  private static final AtomicBoolean HOLDING = new AtomicBoolean();
  private static volatile CountDownLatch initGate;
  private static final AtomicBoolean IN_INIT = new AtomicBoolean();

  /** A stack's {@code init()} is held from now until {@link #releaseInit()}, or a minute at most: the stack is being built. */
  static void holdInit() {
    IN_INIT.set(false);
    initGate = new CountDownLatch(1);
  }

  /** Whether a stack's {@code init()} is being held now. */
  static boolean inInit() {
    return IN_INIT.get();
  }

  static void releaseInit() {
    CountDownLatch g = initGate;
    initGate = null;
    if (g != null) {
      g.countDown();
    }
  }

  @Override
  public void init() throws Exception {
    super.init();
    CountDownLatch g = initGate;
    if (g != null) {
      IN_INIT.set(true);
      try {
        g.await(1, TimeUnit.MINUTES); // bounded: a failed test lets it go too
      } finally {
        IN_INIT.set(false);
      }
    }
  }

  /** Views are held from now until {@link #release()}, or a minute at most. */
  static void hold() {
    HOLDING.set(false);
    gate = new CountDownLatch(1);
  }

  /** Whether a view is being held now. */
  static boolean holding() {
    return HOLDING.get();
  }

  static void release() {
    CountDownLatch g = gate;
    gate = null;
    if (g != null) {
      g.countDown();
    }
  }

  @Override
  public Object up(Event evt) {
    CountDownLatch g = gate;
    if (evt.type() == Event.VIEW_CHANGE && g != null) {
      HOLDING.set(true);
      try {
        g.await(1, TimeUnit.MINUTES); // bounded: a failed test lets it go too
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        HOLDING.set(false);
      }
    }
    return up_prot.up(evt);
  }
}
