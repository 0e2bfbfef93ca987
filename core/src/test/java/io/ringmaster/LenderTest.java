package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LenderTest {

  /** A lent object that says if two users ever had it at once. */
  private static final class Thing {
    final AtomicBoolean inUse = new AtomicBoolean();
  }

  @Test
  void take_makesOneWhenNoneIsKept_andGivesBackTheKeptOnes() {
    AtomicInteger made = new AtomicInteger();
    Lender<Thing> lender = new Lender<>(2, () -> {
      made.incrementAndGet();
      return new Thing();
    });
    Thing first = lender.take();
    Thing second = lender.take();
    Thing third = lender.take(); // none kept: made, not waited for
    assertEquals(3, made.get());
    lender.giveBack(first);
    lender.giveBack(second);
    lender.giveBack(third); // two kept already: dropped
    assertEquals(2, lender.kept());
    List<Thing> again = List.of(lender.take(), lender.take());
    assertTrue(again.contains(first) && again.contains(second), "the kept ones lent again");
    assertEquals(3, made.get());
    Thing out = lender.take();
    lender.giveBack(first);
    lender.close();
    assertEquals(0, lender.kept());
    lender.giveBack(out); // out while it closed: dropped
    assertEquals(0, lender.kept());
    Thing after = lender.take();
    assertEquals(5, made.get(), "a closed lender makes a new one each time");
    lender.giveBack(after);
    assertEquals(0, lender.kept(), "and keeps none");
  }

  @Test
  void manyThreads_neverShareOne_andNoMoreThanTheCapacityIsKept() throws Exception {
    Lender<Thing> lender = new Lender<>(3, Thing::new);
    int threads = 6;
    CyclicBarrier start = new CyclicBarrier(threads);
    ConcurrentLinkedQueue<String> faults = new ConcurrentLinkedQueue<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread worker = new Thread(() -> {
        try {
          start.await();
          for (int i = 0; i < 20_000; i++) {
            Thing thing = lender.take();
            if (!thing.inUse.compareAndSet(false, true)) {
              faults.add("lent to two users at once");
            }
            thing.inUse.set(false);
            lender.giveBack(thing);
          }
        } catch (Exception e) {
          faults.add(e.toString());
        }
      });
      workers.add(worker);
      worker.start();
    }
    for (Thread worker : workers) {
      worker.join();
    }
    assertEquals(List.of(), List.copyOf(faults));
    assertTrue(lender.kept() >= 1 && lender.kept() <= 3, "kept: " + lender.kept());
  }

  @Test
  void badArguments_failNamingWhatIsWrong() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Lender<>(0, Thing::new));
    assertEquals("capacity must be at least 1: 0", e.getMessage());
    Lender<Thing> lender = new Lender<>(1, Thing::new);
    assertThrows(NullPointerException.class, () -> lender.giveBack(null));
  }
}
