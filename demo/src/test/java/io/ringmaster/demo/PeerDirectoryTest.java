package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.jgroups.Address;
import org.junit.jupiter.api.Test;

/** A peer counts as ready (serving requests) once the process that holds its id now has reported. */
class PeerDirectoryTest {
  /** The process holding each id in this peer's view. */
  private final Map<String, UUID> view = new HashMap<>();
  /** This process. */
  private final UUID self = UUID.randomUUID();
  /** Not started: its broadcast of this peer's own report fails, and is only logged. */
  private final PeerDirectory directory = new PeerDirectory(() -> status("a", 7), new Rpc(null, null, null),
      id -> Optional.ofNullable(view.get(id)), () -> Optional.of(self));

  @Test
  void aPeerRestartedUnderItsId_isNotReady_untilItsNewProcessReports() {
    Address first = org.jgroups.util.UUID.randomUUID();
    view.put("b", Routing.process(first).orElseThrow());
    assertFalse(directory.hasReported("b"), "no report yet");
    directory.accept(first, status("b", 7));
    assertTrue(directory.hasReported("b"));

    Address restarted = org.jgroups.util.UUID.randomUUID();
    view.put("b", Routing.process(restarted).orElseThrow());
    assertFalse(directory.hasReported("b"), "the report of b's old process does not make its new one ready");
    assertEquals(7, directory.report("b").orElseThrow().status().viewId(), "the report is still shown");
    directory.accept(restarted, status("b", 8));
    assertTrue(directory.hasReported("b"));

    view.remove("b");
    assertFalse(directory.hasReported("b"), "b is not in the view");
  }

  @Test
  void thisPeersOwnReport_makesThisProcessReady_notAnotherHoldingItsId() {
    view.put("a", self);
    directory.publish(id -> true, () -> true);
    assertTrue(directory.hasReported("a"));
    // A merge gave the id to another process between this peer's look at the ring and its report.
    view.put("a", UUID.randomUUID());
    directory.publish(id -> true, () -> true);
    assertFalse(directory.hasReported("a"), "this process's report does not make the other one ready");
  }

  /** A report is forgotten once its peer is no longer a member; the members' reports are kept. */
  @Test
  void publish_forgetsTheReportsOfPeersNoLongerMembers_only() {
    directory.accept(org.jgroups.util.UUID.randomUUID(), status("b", 7));
    directory.accept(org.jgroups.util.UUID.randomUUID(), status("gone", 7));
    directory.publish(id -> !id.equals("gone"), () -> false);
    assertTrue(directory.report("b").isPresent(), "b is a member");
    assertEquals(Optional.empty(), directory.report("gone"));
  }

  private static Wire.PeerStatus status(String id, long viewId) {
    return new Wire.PeerStatus(id, viewId, 0L, 0L, 0L, 0L, 0);
  }
}
