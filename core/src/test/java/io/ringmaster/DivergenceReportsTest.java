package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@link DivergenceReports}, which hands each divergence the gossip finds to the divergence
 * listeners: a listener removed (its registration closed) hears nothing more, and the others go
 * on hearing. ({@code ClusterAgreementTest} makes real divergences.)
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
}
