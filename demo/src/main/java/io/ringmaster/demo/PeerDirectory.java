package io.ringmaster.demo;

import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.jgroups.Address;

/**
 * Every peer's latest report about itself (view, ring checksum, key counts), gossiped to all
 * members about once a second on the fork channel, so that any peer's {@code /ring} shows each
 * member's view of the checksum and whether they all agree.
 */
final class PeerDirectory {
  /** A report is current if at most this old (in ms); older means the peer stopped reporting. */
  static final long FRESH_MILLIS = 3_500;

  /** A report, the process that sent it (empty if its address names none), and when it came. */
  record Report(Wire.PeerStatus status, Optional<UUID> process, long receivedAt) {
    long ageMillis(long now) {
      return Math.max(0, now - receivedAt);
    }
  }

  private final Supplier<Wire.PeerStatus> self;
  private final Rpc rpc;
  private final Function<String, Optional<UUID>> processOf;
  private final Supplier<Optional<UUID>> ownProcess;
  private final ConcurrentHashMap<String, Report> reports = new ConcurrentHashMap<>();

  /**
   * @param self       this peer's report
   * @param processOf  the process that holds an id in this peer's view, if any ({@link Routing#processOf})
   * @param ownProcess this process ({@link Routing#ownProcess})
   */
  PeerDirectory(Supplier<Wire.PeerStatus> self, Rpc rpc, Function<String, Optional<UUID>> processOf,
                Supplier<Optional<UUID>> ownProcess) {
    this.self = self;
    this.rpc = rpc;
    this.processOf = processOf;
    this.ownProcess = ownProcess;
  }

  /** Records a report received from a peer, sent from {@code from}. */
  void accept(Address from, Wire.PeerStatus status) {
    record(status, Routing.process(from));
  }

  private void record(Wire.PeerStatus status, Optional<UUID> process) {
    reports.put(status.id(), new Report(status, process, System.currentTimeMillis()));
  }

  /**
   * Reports on ourselves to every member, and forgets peers that are no longer members. A peer the
   * cluster refuses (another peer holds its id) stays silent: its report would stand for the holder.
   */
  void publish(Predicate<String> isMember, BooleanSupplier inRing) {
    reports.keySet().removeIf(id -> !isMember.test(id));
    if (!inRing.getAsBoolean()) {
      return; // no status built: it counts the whole store
    }
    Wire.PeerStatus mine = self.get();
    if (inRing.getAsBoolean()) { // asked again once the status is built, so that it is as new as the status
      record(mine, ownProcess.get()); // this process, whichever process the view gives the id
      rpc.broadcast(Wire.status(mine));
    }
  }

  Optional<Report> report(String id) {
    return Optional.ofNullable(reports.get(id));
  }

  /**
   * Whether the process that holds the id in this peer's view has reported: its fork channel is
   * up. A peer that just joined is in the view a little before that, and so is one restarted under
   * the same id while its old process's report is still here; a request sent to it meanwhile is
   * dropped and times out.
   */
  boolean hasReported(String id) {
    Report r = reports.get(id);
    return r != null && r.process().isPresent() && r.process().equals(processOf.apply(id));
  }
}
