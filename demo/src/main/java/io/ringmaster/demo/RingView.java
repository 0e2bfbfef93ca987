package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** {@code GET /ring}: the ring for drawing, each member's key counts, and each member's view of it. */
final class RingView {

  /**
   * @param ranges       the member's primary ranges as {@code [start, end]} decimal strings, {@code (start, end]}
   * @param primaryKeys  from the member's latest report; null until one arrived
   * @param checksum     the ring checksum the member reported (hex); null until one arrived
   */
  record MemberInfo(String id, double weight, String zone, double share, String endpoint, Long primaryKeys,
                    Long backupKeys, List<List<String>> ranges, String checksum, Long viewId) {}

  /** One member's latest report: its view id and checksum, and whether they match this peer's. */
  record PeerInfo(String id, long viewId, String checksum, boolean agrees, boolean recent, long ageMillis,
                  int migrationsInProgress) {}

  /**
   * @param inRing whether this peer is in the ring; if not (the cluster refuses it: another peer
   *               holds its id), the member named {@code local} is that other peer
   * @param agreed whether every member reported, recently, this peer's view id and checksum; false
   *               for a ring of no members
   * @param cutOffFrom the ids of the peers this peer is cut off from by {@code POST /admin/split},
   *               sorted; empty unless a split is in force
   */
  record RingReply(String local, boolean inRing, long viewId, String checksum, int virtualNodes, int replicas, int tokens,
                   boolean agreed, List<MemberInfo> members, List<PeerInfo> peers, List<String> cutOffFrom) {}

  private final Ringmaster node;
  private final PeerDirectory directory;
  private final BooleanSupplier inRing;
  private final Supplier<List<String>> cutOffFrom;
  /**
   * The last ring's primary ranges, by its checksum (a ring's ranges never change): one ring's
   * only, since at 50 members of 1,024 virtual nodes they take megabytes as text.
   */
  private volatile RangesOf lastRanges;

  private record RangesOf(long checksum, Map<String, List<List<String>>> ranges) {}

  /**
   * @param inRing whether this peer is in the ring, as it routes ({@link Routing#inRing()}): a peer
   *               closing its node is not shown as refused
   * @param cutOffFrom the ids this peer is cut off from, sorted ({@link Faults#cutOffFrom()})
   */
  RingView(Ringmaster node, PeerDirectory directory, BooleanSupplier inRing, Supplier<List<String>> cutOffFrom) {
    this.node = node;
    this.directory = directory;
    this.inRing = inRing;
    this.cutOffFrom = cutOffFrom;
  }

  /**
   * The node's view id with the ring of that very view. Read apart, a view installed between the
   * two reads would pair view N with the ring of view N+1, and the page, comparing it with a
   * peer's report of view N, would show a divergence that is not there.
   */
  record Current(long viewId, HashRing ring) {
    static Current of(Ringmaster node) {
      while (true) {
        long viewId = node.viewId();
        HashRing ring = node.ring();
        if (node.viewId() == viewId) { // no view installed while the ring was read
          return new Current(viewId, ring);
        }
      }
    }
  }

  RingReply reply(boolean withRanges) {
    Current current = Current.of(node);
    long viewId = current.viewId();
    HashRing ring = current.ring();
    long now = System.currentTimeMillis();
    Map<String, List<List<String>>> ranges = withRanges ? ranges(ring) : Map.of();
    List<MemberInfo> members = new ArrayList<>();
    List<PeerInfo> peers = new ArrayList<>();
    boolean agreed = !ring.members().isEmpty(); // no member (a closed node's last ring): none reported this view
    for (Member m : ring.members()) {
      Optional<PeerDirectory.Report> report = directory.report(m.id());
      Optional<Wire.PeerStatus> s = report.map(PeerDirectory.Report::status);
      members.add(new MemberInfo(m.id(), m.weight(), m.zone(), ring.share(m.id()), node.endpointOf(m.id()).orElse(""),
          s.map(Wire.PeerStatus::primaryKeys).orElse(null), s.map(Wire.PeerStatus::backupKeys).orElse(null),
          ranges.getOrDefault(m.id(), List.of()), s.map(x -> Long.toHexString(x.checksum())).orElse(null),
          s.map(Wire.PeerStatus::viewId).orElse(null)));
      if (report.isEmpty()) {
        agreed = false;
        continue;
      }
      Wire.PeerStatus st = report.get().status();
      long age = report.get().ageMillis(now);
      boolean recent = age <= PeerDirectory.FRESH_MILLIS;
      boolean agrees = st.checksum() == ring.checksum() && st.viewId() == viewId && recent;
      agreed &= agrees;
      peers.add(new PeerInfo(m.id(), st.viewId(), Long.toHexString(st.checksum()), agrees, recent, age,
          st.migrationsInProgress()));
    }
    return new RingReply(node.localMember().id(), inRing.getAsBoolean(), viewId, Long.toHexString(ring.checksum()),
        ring.virtualNodes(), node.config().replicas(), ring.tokenCount(), agreed, members, peers, cutOffFrom.get());
  }

  private Map<String, List<List<String>>> ranges(HashRing ring) {
    RangesOf cached = lastRanges;
    if (cached != null && cached.checksum() == ring.checksum()) {
      return cached.ranges();
    }
    Map<String, List<List<String>>> ranges = new HashMap<>();
    ring.primaryRangesByMember().forEach((id, owned) -> { // one pass over the tokens for every member
      List<List<String>> list = new ArrayList<>();
      for (KeyRange r : owned) {
        list.add(Events.range(r));
      }
      ranges.put(id, List.copyOf(list));
    });
    Map<String, List<List<String>>> all = Map.copyOf(ranges);
    lastRanges = new RangesOf(ring.checksum(), all); // two requests for a new ring may both build it
    return all;
  }
}
