package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.jgroups.Address;
import org.jgroups.stack.IpAddress;
import org.junit.jupiter.api.Test;

/** A peer counts as ready (serving requests) once the process that holds its id now has reported. */
class PeerDirectoryTest {
  /** The process holding each id in this peer's view. */
  private final Map<String, UUID> view = new HashMap<>();
  /** This process's address, and the process it names. */
  private final Address selfAddress = org.jgroups.util.UUID.randomUUID();
  private final UUID self = Routing.process(selfAddress).orElseThrow();
  /** Not started: its broadcast of this peer's own report fails, and is only logged. */
  private final PeerDirectory directory = new PeerDirectory(sequence -> status("a", 7, sequence),
      new Rpc(null, null, null), id -> Optional.ofNullable(view.get(id)), () -> Optional.of(self));

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

  /**
   * Reports go out of band: a process's report of its previous view may arrive after the one of
   * its new view. The later report is kept, whichever order they come in.
   */
  @Test
  void aReportArrivingLate_fromTheSameProcess_doesNotReplaceTheLaterOne() {
    Address b = org.jgroups.util.UUID.randomUUID();
    directory.accept(b, status("b", 7, 1));
    directory.accept(b, status("b", 8, 2));
    assertEquals(status("b", 8, 2), directory.report("b").orElseThrow().status(), "the next report, in order");
    directory.accept(b, status("b", 7, 1));
    assertEquals(status("b", 8, 2), directory.report("b").orElseThrow().status(), "not the earlier one, late");
  }

  /** A peer restarted under its id counts its reports from 1 again: they replace its old process's. */
  @Test
  void aPeerRestartedUnderItsId_countingFromOneAgain_replacesTheReportOfItsOldProcess() {
    Address first = org.jgroups.util.UUID.randomUUID();
    directory.accept(first, status("b", 7, 500));
    Address restarted = org.jgroups.util.UUID.randomUUID();
    view.put("b", Routing.process(restarted).orElseThrow());
    directory.accept(restarted, status("b", 8, 1));
    assertEquals(status("b", 8, 1), directory.report("b").orElseThrow().status());
    assertTrue(directory.hasReported("b"), "the new process reported");
  }

  /**
   * Reports from an address that names no process cannot be told apart from another process's:
   * the last to arrive is kept, whatever its number.
   */
  @Test
  void reportsFromAnAddressNamingNoProcess_theLastToArriveIsKept() {
    Address noProcess = new IpAddress(InetAddress.getLoopbackAddress(), 7800);
    assertEquals(Optional.empty(), Routing.process(noProcess));
    directory.accept(noProcess, status("b", 8, 2));
    directory.accept(noProcess, status("b", 7, 1));
    assertEquals(status("b", 7, 1), directory.report("b").orElseThrow().status());
  }

  /**
   * This peer numbers its reports one up each time, from 1, and keeps its own latest: its previous
   * report, coming back late from its own broadcast, does not replace it.
   */
  @Test
  void publish_numbersThisPeersReports_oneUpEachTime() {
    directory.publish(id -> true, () -> true);
    assertEquals(1, directory.report("a").orElseThrow().status().sequence());
    directory.publish(id -> true, () -> true);
    assertEquals(2, directory.report("a").orElseThrow().status().sequence());
    directory.accept(selfAddress, status("a", 7, 1));
    assertEquals(2, directory.report("a").orElseThrow().status().sequence(), "the first report, heard back late");
  }

  private static Wire.PeerStatus status(String id, long viewId) {
    return status(id, viewId, 1);
  }

  private static Wire.PeerStatus status(String id, long viewId, long sequence) {
    return new Wire.PeerStatus(id, viewId, 0L, 0L, 0L, 0L, 0, sequence);
  }
}
