package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;

/**
 * {@link DivergenceReports}, which hands each divergence the gossip finds to the divergence
 * listeners: a listener removed (its registration closed) hears nothing more, and the others go
 * on hearing; reports past {@link DivergenceReports#MAX_QUEUED} waiting for the gossip thread are
 * dropped, and those it refuses (closing) wait for nothing. ({@code ClusterAgreementTest} makes real
 * divergences.)
 */
class DivergenceReportsTest {

  @Test
  void remove_dropsOnlyThatListener_andTheOthersStillHear() {
    DivergenceReports reports = new DivergenceReports("a", Runnable::run);
    List<RingDivergence> first = new CopyOnWriteArrayList<>();
    List<RingDivergence> second = new CopyOnWriteArrayList<>();
    SerialDelivery<RingDivergence> one = new SerialDelivery<>("one", first::add, Runnable::run, this, () -> { });
    SerialDelivery<RingDivergence> two = new SerialDelivery<>("two", second::add, Runnable::run, this, () -> { });
    reports.add(one);
    reports.add(two);
    assertEquals(2, reports.listenerCount());
    RingDivergence before = new RingDivergence(3, "b", 1, 2, RingDivergence.Kind.CHECKSUM);
    reports.report(before);
    reports.remove(one);
    assertEquals(1, reports.listenerCount(), "the other listener stays");
    RingDivergence after = new RingDivergence(4, "b", 5, 6, RingDivergence.Kind.CHECKSUM);
    reports.report(after);
    assertEquals(List.of(before), first, "removed: hears nothing after");
    assertEquals(List.of(before, after), second);
  }

  /**
   * Gossip finds a lasting divergence again at each round, and a listener hears it once: so too
   * after more views, each with a divergence of its own, than one view's memory holds
   * ({@link OncePerView#MAX_REMEMBERED}), as on a node that runs for long beside a peer that
   * diverges in every view.
   */
  @Test
  void report_aDivergenceFoundAgainInItsView_isHandedOnOnce_afterManyViewsToo() {
    DivergenceReports reports = new DivergenceReports("a", Runnable::run);
    List<RingDivergence> heard = new ArrayList<>();
    reports.add(new SerialDelivery<>("one", heard::add, Runnable::run, this, () -> { }));
    int views = OncePerView.MAX_REMEMBERED + 1;
    for (long view = 1; view <= views; view++) {
      RingDivergence d = new RingDivergence(view, "b", 1, 2, RingDivergence.Kind.CHECKSUM);
      reports.report(d);
      reports.report(d); // found again by the next round
    }
    assertEquals(views, heard.size(), "each view's divergence once");
  }

  /**
   * With the gossip thread behind, {@link DivergenceReports#MAX_QUEUED} reports wait for it, not
   * one fewer; the next is dropped, said at DEBUG; once the thread has run them, as many wait again.
   */
  @Test
  void report_pastMaxQueuedWaiting_dropsTheRestAtDebug_untilTheGossipThreadRunsThem() {
    try (NodeLog log = new NodeLog(r -> r.getMessage() != null && r.getMessage().contains("divergence"))) {
      List<Runnable> behind = new ArrayList<>(); // the gossip thread, busy: its tasks wait
      DivergenceReports reports = new DivergenceReports("a", behind::add);
      List<RingDivergence> heard = new CopyOnWriteArrayList<>();
      reports.add(new SerialDelivery<>("one", heard::add, Runnable::run, this, () -> { }));
      for (int i = 0; i <= DivergenceReports.MAX_QUEUED; i++) {
        reports.report(new RingDivergence(3, "peer-" + i, 1, 2, RingDivergence.Kind.CHECKSUM));
      }
      assertEquals(DivergenceReports.MAX_QUEUED, behind.size());
      assertEquals(List.of(Level.FINE), log.levels(), "the one past the bound, at DEBUG");
      assertEquals("a: " + DivergenceReports.MAX_QUEUED + " divergence reports wait already; not handed on: "
          + new RingDivergence(3, "peer-" + DivergenceReports.MAX_QUEUED, 1, 2, RingDivergence.Kind.CHECKSUM),
          log.messages().get(0));

      behind.forEach(Runnable::run);
      behind.clear();
      assertEquals(DivergenceReports.MAX_QUEUED, heard.size());
      for (int i = 0; i < DivergenceReports.MAX_QUEUED; i++) {
        reports.report(new RingDivergence(4, "peer-" + i, 5, 6, RingDivergence.Kind.CHECKSUM));
      }
      assertEquals(DivergenceReports.MAX_QUEUED, behind.size(), "room again for as many, the dropped one counts not");
      assertEquals(1, log.records().size());
      behind.forEach(Runnable::run);
      assertEquals(2 * DivergenceReports.MAX_QUEUED, heard.size());
    }
  }

  /**
   * A gossip thread that refuses reports (the node closing) drops each, said at DEBUG, and a
   * refused report does not count among those waiting: past {@link DivergenceReports#MAX_QUEUED}
   * of them, none is dropped for the bound, and a thread that takes them again hears the next.
   */
  @Test
  void report_refusedByTheGossipThread_isDroppedAtDebug_andDoesNotCountAsWaiting() {
    try (NodeLog log = new NodeLog(r -> r.getMessage() != null && r.getMessage().contains("divergence"))) {
      boolean[] closing = {true};
      DivergenceReports reports = new DivergenceReports("a", task -> {
        if (closing[0]) {
          throw new RejectedExecutionException("closing");
        }
        task.run();
      });
      List<RingDivergence> heard = new CopyOnWriteArrayList<>();
      reports.add(new SerialDelivery<>("one", heard::add, Runnable::run, this, () -> { }));
      RingDivergence refused = new RingDivergence(3, "b", 1, 2, RingDivergence.Kind.CHECKSUM);
      for (int i = 0; i <= DivergenceReports.MAX_QUEUED; i++) {
        reports.report(refused);
      }
      assertEquals(List.of(), heard);
      assertEquals(DivergenceReports.MAX_QUEUED + 1, log.records().size());
      assertEquals(List.of("divergence reported while closing: " + refused), log.messages().stream().distinct().toList());
      assertEquals(List.of(Level.FINE), log.levels().stream().distinct().toList());

      closing[0] = false;
      RingDivergence taken = new RingDivergence(4, "b", 5, 6, RingDivergence.Kind.CHECKSUM);
      reports.report(taken);
      assertEquals(List.of(taken), heard);
    }
  }
}
