package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.KeyRange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A pull of more than a page ({@link Transfers#PAGE_BYTES}) asks page after page until the source
 * says there is no more, and only then counts as complete: after a crash, pulls alone restore the
 * copies, and a pull that stopped after its first page would leave keys a replica short with no
 * retry to come. Two real nodes in this JVM (the in-memory JGroups stack).
 */
class PagedPullTest {
  private final List<InJvmPeer> nodes = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(nodes);
  }

  @Test
  void aPullOfMoreThanAPage_bringsEveryPage_andOnlyThenIsComplete() throws Exception {
    InJvmPeer.startAll(nodes, "paged-pull", List.of("a", "b"));
    InJvmPeer a = nodes.get(0);
    InJvmPeer b = nodes.get(1);
    a.counters().settled.set(true); // as its rebalancer sets it once its first change is handled
    String value = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    int entries = 7; // four pages
    for (int i = 0; i < entries; i++) {
      a.store().merge(Entry.of("big-" + i, value, new Version(1, "a")));
    }
    Transfers.Pulled pulled = assertTimeoutPreemptively(Duration.ofSeconds(60),
        () -> b.transfers().pull("a", List.of(KeyRange.full()), a.node().viewId()));
    assertTrue(pulled.complete(), "the source answered to the last page");
    assertEquals(entries, pulled.changed());
    for (int i = 0; i < entries; i++) {
      assertTrue(b.store().get("big-" + i).isPresent(), "big-" + i + " pulled");
    }
  }
  /**
   * A pull on an interrupted thread (a pull retry that the peer's close() stopped) asks nothing:
   * its source would scan and send a page that nobody reads, competing with the leave's hand-off.
   */
  @Test
  void aPullOnAnInterruptedThread_asksTheSourceNothing() throws Exception {
    InJvmPeer.startAll(nodes, "interrupted-pull", List.of("a", "b"));
    InJvmPeer a = nodes.get(0);
    InJvmPeer b = nodes.get(1);
    a.counters().settled.set(true);
    AtomicInteger asked = new AtomicInteger();
    a.rpc().handle(Wire.OP_PULL, in -> {
      asked.incrementAndGet();
      return a.transfers().handlePull(in);
    });
    Transfers.Pulled pulled;
    Thread.currentThread().interrupt();
    try {
      pulled = b.transfers().pull("a", List.of(KeyRange.full()), a.node().viewId());
      assertTrue(Thread.currentThread().isInterrupted(), "the interrupt is kept");
    } finally {
      Thread.interrupted();
    }
    assertEquals(new Transfers.Pulled(0, false), pulled);
    // A request sent would reach a within milliseconds: none does within a second.
    await("no pull request reaches a").during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(10)).until(() -> asked.get() == 0);
  }

  /**
   * A pull interrupted while it waits for its second page (the peer stopping its retries, or a
   * change's pulls on the calling thread once the pull threads are stopped) ends there, incomplete,
   * counting the first page it merged, and returns with its interrupt kept for its caller.
   */
  @Test
  void aPullInterruptedWhileItWaitsForAPage_endsIncomplete_keepingTheInterrupt() throws Exception {
    InJvmPeer.startAll(nodes, "pull-interrupted-waiting", List.of("a", "b"));
    InJvmPeer a = nodes.get(0);
    InJvmPeer b = nodes.get(1);
    a.counters().settled.set(true);
    String value = "x".repeat(Transfers.PAGE_BYTES / 7); // weighs 3 bytes a char: two to a page
    for (int i = 0; i < 3; i++) {
      a.store().merge(Entry.of("big-" + i, value, new Version(1, "a")));
    }
    AtomicInteger asked = new AtomicInteger();
    CountDownLatch secondPageAsked = new CountDownLatch(1);
    a.rpc().handleQuickly(Wire.OP_PULL, in -> {
      if (asked.incrementAndGet() == 1) {
        return CompletableFuture.completedFuture(a.transfers().handlePull(in));
      }
      secondPageAsked.countDown();
      return new CompletableFuture<>(); // never answered
    });
    Interrupting.Ended<Transfers.Pulled> pulled = Interrupting.whileWaiting("pull-retry",
        () -> b.transfers().pull("a", List.of(KeyRange.full()), a.node().viewId()), secondPageAsked,
        "a was asked for the second page", Transfers.PULL_TIMEOUT.multipliedBy(2));
    assertEquals(new Transfers.Pulled(2, false), pulled.result(), "the first page's two entries merged");
    assertTrue(pulled.stillInterrupted(), "the pull returns with its interrupt");
    assertEquals(2, asked.get(), "not asked again once interrupted");
  }
}
