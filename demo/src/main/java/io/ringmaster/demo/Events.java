package io.ringmaster.demo;

import io.ringmaster.MembershipChange;
import io.ringmaster.OwnershipChange;
import io.ringmaster.RingDivergence;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The events of {@code GET /events}, one JSON object each with a {@code type} and a {@code time}
 * (epoch milliseconds). Ring positions are decimal strings: JavaScript numbers lose precision
 * beyond 2<sup>53</sup>.
 */
final class Events {
  /** Ranges listed per ownership event; the counts are always complete. */
  static final int MAX_RANGES_LISTED = 64;
  /** Rings with more members than this get no per-member moves in their membership events. */
  static final int MAX_MEMBERS_DIFFED = 256;

  private Events() {}

  record Started(String type, long time, String id, String endpoint, long viewId, List<String> members) {}

  /**
   * {@code refused}: why each newly refused member is kept out of the ring (id and reason).
   * {@code moved}: every member whose primary ranges changed, in id order (empty past
   * {@value #MAX_MEMBERS_DIFFED} members).
   */
  record Membership(String type, long time, long previousViewId, long viewId, List<String> members,
                    List<String> joined, List<String> left, boolean merge, List<String> refused,
                    List<Moved> moved) {}

  /**
   * What one member gained and lost as primary owner in a view change: the number of ranges
   * (merged where they touch and have the same previous or new owner), the fraction of the
   * circle, and whom from and to.
   */
  record Moved(String id, int gainedRanges, double gainedFraction, List<String> from, int lostRanges,
               double lostFraction, List<String> to) {}

  record Gain(List<String> range, List<String> sources, String role) {}

  record Loss(List<String> range, List<String> destinations, String role) {}

  /**
   * This peer's own change. {@code gained} and {@code lost} list the first
   * {@value #MAX_RANGES_LISTED} ranges; the counts, fractions, {@code sources} (every previous
   * owner of a gained range) and {@code destinations} (every owner now of a lost range) cover all.
   * {@code self} is this peer's id; {@code refused} whether the cluster refused this peer: another
   * peer holds its id, and is the destination named {@code self}.
   */
  record Ownership(String type, long time, String reason, long previousViewId, long viewId, int gainedRanges,
                   double gainedFraction, List<Gain> gained, List<String> sources, int lostRanges,
                   double lostFraction, List<Loss> lost, List<String> destinations, int roleChanges, String self,
                   boolean refused) {}

  /**
   * Sent first to a browser that reconnects naming an event older than those still buffered: the
   * {@code missed} events between are gone. Its id is the last of them, so a browser that
   * reconnects again is sent the buffered ones.
   */
  record Gap(String type, long time, long missed) {}

  /**
   * Keys moved: {@code direction} "in" (pulled and pushed to us) or "out". For one ownership change,
   * {@code reason} is the change's ({@code viewId} its view); "retry" is a round of a pull retried in
   * the background after the pull for {@code viewId} failed ({@code peers}: its source), "drain" a
   * pass of a leave's drain, which hands on what the hand-off left, by entry ({@code ranges} 0).
   */
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

  /**
   * @param before the ring of the change's previous view
   * @param after  the ring of its members now
   */
  static Membership membership(MembershipChange c, HashRing before, HashRing after) {
    return new Membership("membership", now(), c.previousViewId(), c.viewId(), ids(c.members()), ids(c.joined()),
        ids(c.left()), c.isMerge(), c.refused().stream().map(r -> (r.local() ? "this peer: " : "") + r.reason()).toList(),
        moved(before, after));
  }

  /**
   * Every member whose primary ranges differ between the two rings, in id order: what the ring
   * page draws, so what its log says moved. Empty when either ring has more than
   * {@value #MAX_MEMBERS_DIFFED} members (each member's diff is a pass over both rings).
   */
  static List<Moved> moved(HashRing before, HashRing after) {
    if (before.members().size() > MAX_MEMBERS_DIFFED || after.members().size() > MAX_MEMBERS_DIFFED) {
      return List.of();
    }
    SortedSet<String> ids = new TreeSet<>(ids(before.members()));
    ids.addAll(ids(after.members()));
    List<Moved> moved = new ArrayList<>();
    for (String id : ids) {
      RingDiff d = RingDiff.compute(before, after, id, 1);
      if (d.gained().isEmpty() && d.lost().isEmpty()) {
        continue;
      }
      Set<String> from = new TreeSet<>();
      double gained = 0;
      for (RingDiff.Gained g : d.gained()) {
        gained += g.range().fraction();
        from.addAll(ids(g.sources()));
      }
      Set<String> to = new TreeSet<>();
      double lost = 0;
      for (RingDiff.Lost l : d.lost()) {
        lost += l.range().fraction();
        to.addAll(ids(l.destinations()));
      }
      moved.add(new Moved(id, d.gained().size(), gained, List.copyOf(from), d.lost().size(), lost, List.copyOf(to)));
    }
    return moved;
  }

  static Gap gap(long missed) {
    return new Gap("gap", now(), missed);
  }

  static Ownership ownership(OwnershipChange c) {
    List<Gain> gained = new ArrayList<>();
    Set<String> sources = new TreeSet<>();
    double gainedFraction = 0;
    for (RingDiff.Gained g : c.gained()) {
      gainedFraction += g.range().fraction();
      sources.addAll(ids(g.sources()));
      if (gained.size() < MAX_RANGES_LISTED) {
        gained.add(new Gain(range(g.range()), ids(g.sources()), g.role().name().toLowerCase(Locale.ROOT)));
      }
    }
    List<Loss> lost = new ArrayList<>();
    Set<String> destinations = new TreeSet<>();
    double lostFraction = 0;
    for (RingDiff.Lost l : c.lost()) {
      lostFraction += l.range().fraction();
      destinations.addAll(ids(l.destinations()));
      if (lost.size() < MAX_RANGES_LISTED) {
        lost.add(new Loss(range(l.range()), ids(l.destinations()), l.role().name().toLowerCase(Locale.ROOT)));
      }
    }
    return new Ownership("ownership", now(), c.reason().name().toLowerCase(Locale.ROOT), c.previousViewId(), c.viewId(),
        c.gained().size(), gainedFraction, gained, List.copyOf(sources), c.lost().size(), lostFraction, lost,
        List.copyOf(destinations), c.roleChanges().size(), c.diff().memberId(),
        !c.inRing() && c.ring().contains(c.diff().memberId()));
  }

  static Migration migration(String direction, OwnershipChange c, long keys, int ranges, List<String> peers,
                             long millis, boolean ok) {
    return migration(direction, c.reason().name().toLowerCase(Locale.ROOT), c.viewId(), keys, ranges, peers, millis,
        ok);
  }

  /** Keys moved for {@code reason} "retry" or "drain" (see {@link Migration}). */
  static Migration migration(String direction, String reason, long viewId, long keys, int ranges, List<String> peers,
                             long millis, boolean ok) {
    return new Migration("migration", now(), direction, reason, viewId, keys, ranges, List.copyOf(peers), millis, ok);
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
