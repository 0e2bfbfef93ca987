package io.ringmaster.demo;

import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.jgroups.Address;

/**
 * Every peer's latest report about itself (view, ring checksum, key counts), gossiped to all
 * members about once a second on the fork channel, so that any peer's {@code /ring} shows each
 * member's view of the checksum and whether they all agree.
 *
 * <p>Reports go out of band, so two from one sender may arrive in the reverse order. Each carries
 * its sender's {@linkplain Wire.PeerStatus#sequence() sequence number}, counted up by the process
 * that sends it, and a report never replaces a later one from the same JGroups address: otherwise
 * the older one (a previous view, its checksum) would stand until the next report, up to a second
 * later. An address is new for every process, and for every rejoin of one (whose numbers go on): a
 * peer restarted under its id counts from 1 again, and the reports of a new address replace those
 * of the old one whatever their numbers (as would a report of the old address arriving after them,
 * until the next).
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

  private final LongFunction<Wire.PeerStatus> self;
  private final Rpc rpc;
  private final Function<String, Optional<UUID>> processOf;
  private final Supplier<Optional<UUID>> ownProcess;
  private final ConcurrentHashMap<String, Report> reports = new ConcurrentHashMap<>();
  /** The sequence number of this process's last report. */
  private final AtomicLong sent = new AtomicLong();

  /**
   * @param self       this peer's report, given its sequence number
   * @param processOf  the process that holds an id in this peer's view, if any ({@link Routing#processOf})
   * @param ownProcess this process ({@link Routing#ownProcess})
   */
  PeerDirectory(LongFunction<Wire.PeerStatus> self, Rpc rpc, Function<String, Optional<UUID>> processOf,
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

  /**
   * Keeps the report, unless the one held for its id came from the same process with a higher
   * sequence number. Reports are delivered on several threads at once: compared and stored in one
   * step. Without a process on either side (an address that names none) they cannot be told apart,
   * and the last to arrive is kept.
   */
  private void record(Wire.PeerStatus status, Optional<UUID> process) {
    Report arrived = new Report(status, process, System.currentTimeMillis());
    reports.merge(status.id(), arrived, (held, next) -> held.process().isPresent()
        && held.process().equals(next.process()) && held.status().sequence() > next.status().sequence() ? held : next);
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
    Wire.PeerStatus mine = self.apply(sent.incrementAndGet());
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
