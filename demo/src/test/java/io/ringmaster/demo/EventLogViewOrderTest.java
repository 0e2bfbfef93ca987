package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A log {@linkplain EventLog#inViewOrder() in view order}: an ownership event published before the
 * membership event of its view is shown after it, with the events published after it, in their
 * order; nothing is kept back for good.
 */
class EventLogViewOrderTest {
  /** An event as the log shows it: its type and view, enough to tell the events here apart. */
  private record Ev(String type, long viewId) {}

  private final EventLog log = EventLog.inViewOrder();

  @AfterEach
  void close() {
    log.close();
  }

  @Test
  void ownershipEventBeforeItsViewsMembership_isShownAfterIt_withTheEventsPublishedMeanwhile() {
    log.membershipIn(1); // the first view, reported as "started"
    log.publishOwnership(1, new Ev("ownership", 1));
    assertEquals(List.of("ownership 1"), shown(), "the first view's: shown at once");

    log.publishOwnership(2, new Ev("ownership", 2));
    log.publish(new Ev("migration", 2));
    log.publish(new Ev("received", -1));
    assertEquals(List.of("ownership 1"), shown(), "kept back, with what came after it");

    log.publishMembership(2, new Ev("membership", 2));
    assertEquals(List.of("ownership 1", "membership 2", "ownership 2", "migration 2", "received -1"), shown());

    log.publishMembership(3, new Ev("membership", 3));
    log.publishOwnership(3, new Ev("ownership", 3));
    log.publish(new Ev("migration", 3));
    assertEquals(List.of("membership 3", "ownership 3", "migration 3"), shown().subList(5, 8),
        "its view's membership already in: shown at once");
  }

  /**
   * A membership event shows the ownership events of its view and of earlier ones, and stops at one
   * of a later view, which waits for its own.
   */
  @Test
  void membershipEvent_showsTheOwnershipEventsUpToItsView_only() {
    log.membershipIn(1);
    log.publishOwnership(2, new Ev("ownership", 2));
    log.publish(new Ev("migration", 2));
    log.publishOwnership(4, new Ev("ownership", 4));
    log.publish(new Ev("migration", 4));

    log.publishMembership(3, new Ev("membership", 3)); // view 2's was not logged: 3 is past it
    assertEquals(List.of("membership 3", "ownership 2", "migration 2"), shown());

    log.publishMembership(4, new Ev("membership", 4));
    assertEquals(List.of("membership 3", "ownership 2", "migration 2", "membership 4", "ownership 4", "migration 4"),
        shown());
  }

  @Test
  void close_showsWhatWasKeptBack_andLaterEventsAtOnce() {
    log.membershipIn(1);
    log.publishOwnership(2, new Ev("ownership", 2));
    log.publish(new Ev("leaving", 2));
    log.close();
    assertEquals(List.of("ownership 2", "leaving 2"), shown(), "shown on close: the membership event never came");
    log.publishOwnership(3, new Ev("ownership", 3));
    assertEquals(List.of("ownership 2", "leaving 2", "ownership 3"), shown());
  }

  /** Past {@value EventLog#CAPACITY} events kept back, the log shows them all rather than keep more. */
  @Test
  void eventsKeptBack_areShown_pastTheLogsCapacity() {
    log.membershipIn(1);
    log.publishOwnership(2, new Ev("ownership", 2));
    for (int i = 1; i < EventLog.CAPACITY; i++) {
      log.publish(new Ev("received", i));
    }
    assertEquals(List.of(), shown(), EventLog.CAPACITY + " kept back");
    log.publish(new Ev("received", EventLog.CAPACITY));
    List<String> all = shown();
    assertEquals(EventLog.CAPACITY, all.size(), "the log's last " + EventLog.CAPACITY);
    assertEquals("received " + EventLog.CAPACITY, all.get(all.size() - 1));
  }

  /** The log the other tests use: what is published is shown at once, in that order. */
  @Test
  void aLogNotInViewOrder_showsOwnershipEventsAtOnce() {
    EventLog plain = new EventLog();
    plain.publishOwnership(2, new Ev("ownership", 2));
    plain.publish(new Ev("migration", 2));
    plain.publishMembership(2, new Ev("membership", 2));
    List<String> shown = new ArrayList<>();
    plain.recent().forEach(json -> shown.add(label(json)));
    assertEquals(List.of("ownership 2", "migration 2", "membership 2"), shown);
  }

  private List<String> shown() {
    List<String> out = new ArrayList<>();
    log.recent().forEach(json -> out.add(label(json)));
    return out;
  }

  private static String label(String json) {
    var e = PeerCluster.parse(json);
    return e.path("type").asText() + " " + e.path("viewId").asLong();
  }
}
