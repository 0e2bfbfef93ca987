package io.ringmaster.demo;

import io.ringmaster.MembershipChange;
import io.ringmaster.OwnershipChange;
import io.ringmaster.RingDivergence;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.List;

/**
 * The events of {@code GET /events}, one JSON object each with a {@code type} and a {@code time}
 * (epoch milliseconds). Ring positions are decimal strings: JavaScript numbers lose precision
 * beyond 2<sup>53</sup>.
 */
final class Events {
  /** Ranges listed per ownership event; the counts are always complete. */
  static final int MAX_RANGES_LISTED = 64;

  private Events() {}

  record Started(String type, long time, String id, String endpoint, long viewId, List<String> members) {}

  /** {@code refused}: why each newly refused member is kept out of the ring (id and reason). */
  record Membership(String type, long time, long previousViewId, long viewId, List<String> members,
                    List<String> joined, List<String> left, boolean merge, List<String> refused) {}

  record Gain(List<String> range, List<String> sources, String role) {}

  record Loss(List<String> range, List<String> destinations, String role) {}

  record Ownership(String type, long time, String reason, long previousViewId, long viewId, int gainedRanges,
                   double gainedFraction, List<Gain> gained, int lostRanges, double lostFraction, List<Loss> lost,
                   int roleChanges) {}

  /** Keys moved for one ownership change: {@code direction} "in" (pulled and pushed to us) or "out". */
  record Migration(String type, long time, String direction, String reason, long viewId, long keys, int ranges,
                   List<String> peers, long millis, boolean ok) {}

  record Sweep(String type, long time, long keys, List<String> peers) {}

  /**
   * Entries another peer pushed here: {@code kind} "migration" (it lost their range), "sweep" or
   * "repair"; {@code keys} of the {@code entries} were new or newer here.
   */
  record Received(String type, long time, String kind, String from, long keys, int entries) {}

  /** After a merge: every entry held here ({@code keys}) pushed to its owners in the merged ring. */
  record Repair(String type, long time, long viewId, long keys, List<String> peers, long millis, boolean ok) {}

  record Divergence(String type, long time, long viewId, String peer, String localChecksum, String peerChecksum,
                    String kind) {}

  record Leaving(String type, long time, String id, long viewId) {}

  static Started started(String id, String endpoint, long viewId, List<Member> members) {
    return new Started("started", now(), id, endpoint, viewId, ids(members));
  }

  static Membership membership(MembershipChange c) {
    return new Membership("membership", now(), c.previousViewId(), c.viewId(), ids(c.members()), ids(c.joined()),
        ids(c.left()), c.isMerge(), c.refused().stream().map(r -> (r.local() ? "this peer: " : "") + r.reason()).toList());
  }

  static Ownership ownership(OwnershipChange c) {
    List<Gain> gained = new ArrayList<>();
    double gainedFraction = 0;
    for (RingDiff.Gained g : c.gained()) {
      gainedFraction += g.range().fraction();
      if (gained.size() < MAX_RANGES_LISTED) {
        gained.add(new Gain(range(g.range()), ids(g.sources()), g.role().name().toLowerCase()));
      }
    }
    List<Loss> lost = new ArrayList<>();
    double lostFraction = 0;
    for (RingDiff.Lost l : c.lost()) {
      lostFraction += l.range().fraction();
      if (lost.size() < MAX_RANGES_LISTED) {
        lost.add(new Loss(range(l.range()), ids(l.destinations()), l.role().name().toLowerCase()));
      }
    }
    return new Ownership("ownership", now(), c.reason().name().toLowerCase(), c.previousViewId(), c.viewId(),
        c.gained().size(), gainedFraction, gained, c.lost().size(), lostFraction, lost, c.roleChanges().size());
  }

  static Migration migration(String direction, OwnershipChange c, long keys, int ranges, List<String> peers,
                             long millis, boolean ok) {
    return new Migration("migration", now(), direction, c.reason().name().toLowerCase(), c.viewId(), keys, ranges,
        List.copyOf(peers), millis, ok);
  }

  static Sweep sweep(long keys, List<String> peers) {
    return new Sweep("sweep", now(), keys, List.copyOf(peers));
  }

  static Received received(String kind, String from, long keys, int entries) {
    return new Received("received", now(), kind, from, keys, entries);
  }

  static Repair repair(long viewId, long keys, List<String> peers, long millis, boolean ok) {
    return new Repair("repair", now(), viewId, keys, List.copyOf(peers), millis, ok);
  }

  static Divergence divergence(RingDivergence d) {
    return new Divergence("divergence", now(), d.viewId(), d.peerId(), Long.toHexString(d.localChecksum()),
        Long.toHexString(d.peerChecksum()), d.kind().name());
  }

  static Leaving leaving(String id, long viewId) {
    return new Leaving("leaving", now(), id, viewId);
  }

  static List<String> range(KeyRange r) {
    return List.of(Long.toString(r.start()), Long.toString(r.end()));
  }

  static List<String> ids(List<Member> members) {
    List<String> out = new ArrayList<>(members.size());
    for (Member m : members) {
      out.add(m.id());
    }
    return out;
  }

  private static long now() {
    return System.currentTimeMillis();
  }
}
