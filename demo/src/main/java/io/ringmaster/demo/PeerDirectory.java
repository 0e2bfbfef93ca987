package io.ringmaster.demo;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Every peer's latest report about itself (view, ring checksum, key counts), gossiped to all
 * members about once a second on the fork channel, so that any peer's {@code /ring} shows each
 * member's view of the checksum and whether they all agree.
 */
final class PeerDirectory {
  /** A report is current if younger than this; older means the peer stopped reporting. */
  static final long FRESH_MILLIS = 3_500;

  record Report(Wire.PeerStatus status, long receivedAt) {
    long ageMillis(long now) {
      return Math.max(0, now - receivedAt);
    }
  }

  private final Supplier<Wire.PeerStatus> self;
  private final Rpc rpc;
  private final ConcurrentHashMap<String, Report> reports = new ConcurrentHashMap<>();

  PeerDirectory(Supplier<Wire.PeerStatus> self, Rpc rpc) {
    this.self = self;
    this.rpc = rpc;
  }

  /** Records a report received from a peer. */
  void accept(Wire.PeerStatus status) {
    reports.put(status.id(), new Report(status, System.currentTimeMillis()));
  }

  /**
   * Reports on ourselves to every member, and forgets peers that are no longer members. A peer the
   * cluster refuses (another peer holds its id) stays silent: its report would stand for the holder.
   */
  void publish(Predicate<String> isMember, boolean inRing) {
    reports.keySet().removeIf(id -> !isMember.test(id));
    if (inRing) {
      Wire.PeerStatus mine = self.get();
      accept(mine);
      rpc.broadcast(Wire.status(mine));
    }
  }

  Optional<Report> report(String id) {
    return Optional.ofNullable(reports.get(id));
  }

  /**
   * Whether the peer has reported at all: its fork channel is up. A peer that just joined is in
   * the view a little before that; a request sent to it meanwhile is dropped and times out.
   */
  boolean hasReported(String id) {
    return reports.containsKey(id);
  }
}
