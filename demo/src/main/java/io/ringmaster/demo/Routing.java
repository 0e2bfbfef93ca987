package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.KeyRange;
import io.ringmaster.ring.Member;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jgroups.Address;

/**
 * Which ring this peer routes by: the node's current ring, or, once it has started to leave, the
 * ring it leaves behind: the current ring without it and without the peers it learnt are leaving
 * too, so that writes reaching a leaving peer after it handed its data off, and the data itself,
 * go on to peers that stay.
 *
 * <p>And whether an owner's id is this peer: not while the cluster refuses it. When a partition
 * heals with this peer's id on both sides, the cluster may keep the id for the other peer; then
 * this peer owns nothing, and an owner named by its id is the other peer, reached by that id like
 * any other ({@link #isSelf}).
 */
final class Routing {
  private final Ringmaster node;
  private final String self;
  private final int replicas;
  private volatile boolean leaving;
  private volatile Optional<UUID> processAtClosing = Optional.empty();
  /**
   * Other peers found leaving while this one leaves (they refused a push or a forwarded write, or
   * a write named them), each with the process that held its id then: a peer restarted under the
   * id since is not leaving.
   */
  private final Map<String, Optional<Address>> leavers = new ConcurrentHashMap<>();
  /** The leaving ring last derived, and from what: a ring costs a rebuild, routing asks often. */
  private volatile Derived derived;

  private record Derived(HashRing base, boolean inRing, Set<String> leavers, HashRing ring) {}

  Routing(Ringmaster node) {
    this.node = node;
    this.self = node.localMember().id();
    this.replicas = node.config().replicas();
  }

  String self() {
    return self;
  }

  int replicas() {
    return replicas;
  }

  HashRing ring() {
    return leaving ? leavingRing() : node.ring();
  }

  private HashRing leavingRing() {
    HashRing base = node.ring();
    boolean inRing = inRing(); // read after the ring: as new as it, or newer
    Set<String> known = activeLeavers();
    Derived d = derived;
    if (d != null && d.base() == base && d.inRing() == inRing && d.leavers().equals(known)) {
      return d.ring();
    }
    // While the cluster refuses this peer, the member with its id is the peer that holds the id.
    // (After its node closed, the ring holds no member with its id: without() leaves it as it is.)
    HashRing ring = inRing ? base.without(self) : base;
    // One rebuild for all the leavers (each rebuild walks every token: one per leaver cost as many
    // as there are leavers, again whenever one more is found).
    List<Member> staying = ring.members().stream().filter(m -> !known.contains(m.id())).toList();
    HashRing withoutAll = staying.size() == ring.members().size() ? ring : ring.withMembers(staying);
    if (!withoutAll.isEmpty()) {
      ring = withoutAll;
    } else {
      for (String id : known) {
        HashRing without = ring.without(id);
        if (!without.isEmpty()) { // if every other peer is leaving too, they are still better than none
          ring = without;
        }
      }
    }
    derived = new Derived(base, inRing, known, ring);
    return ring;
  }

  /**
   * From now on route by the ring this peer leaves behind. The caller scans the store next; a
   * write stores and then reads the ring ({@link #storedThenRoute()}). The fences on both sides
   * make sure at least one of them sees the other: the scan sees the write, or the write sees the
   * leaving ring and is forwarded.
   */
  void startLeaving() {
    this.leaving = true;
    VarHandle.fullFence();
  }

  /**
   * A peer is leaving (it refused data, or a write named it): while this peer leaves, it routes
   * around it, until the id is held by a process other than {@code process} (the one found leaving:
   * called before the refusal, or the one a write named under the id). Ignored while
   * this peer stays (it learns again once it leaves, from the next refusal), so a peer that left
   * and came back under its id is not routed around later.
   */
  void markLeaving(String memberId, Optional<Address> process) {
    if (leaving && !isSelf(memberId)) {
      leavers.put(memberId, process);
    }
  }

  /**
   * While this peer leaves, its id (unless the cluster refuses it) and those of the peers it
   * learnt are leaving too, each with its process: a write it sends or forwards names them, so
   * that no owner forwards it to them (a leaving peer refuses forwarded writes). None while it
   * stays.
   */
  Wire.Leavers leavers() {
    if (!leaving) {
      return Wire.Leavers.NONE;
    }
    Map<String, UUID> processes = new LinkedHashMap<>();
    for (Map.Entry<String, Optional<Address>> l : leavers.entrySet()) {
      if (node.addressOf(l.getKey()).equals(l.getValue())) { // still the process found leaving
        l.getValue().flatMap(Routing::process).ifPresent(p -> processes.put(l.getKey(), p));
      }
    }
    // This process, if the id names it (one read: not the process the cluster kept the id for
    // instead, if a partition healed between a look at whether this peer is in the ring and this).
    Optional<UUID> mine = ownProcess();
    if (mine.isPresent() && (processOf(self).equals(mine) || closedFromRing() && processAtClosing.equals(mine))) {
      processes.put(self, mine.get());
    }
    return processes.isEmpty() ? Wire.Leavers.NONE : new Wire.Leavers(processes);
  }

  /**
   * The leavers a write named whose ids name the same processes here (elsewhere an id may name
   * another process: a restarted one, or the one the cluster kept when a partition healed),
   * marked as leaving here (heeded only if this peer leaves too).
   */
  Wire.Leavers accept(Wire.Leavers named) {
    if (named.isEmpty()) {
      return Wire.Leavers.NONE;
    }
    Map<String, UUID> same = new LinkedHashMap<>();
    named.processes().forEach((id, process) -> {
      Optional<Address> here = node.addressOf(id);
      if (here.flatMap(Routing::process).equals(Optional.of(process))) {
        markLeaving(id, here);
        same.put(id, process);
      }
    });
    return same.isEmpty() ? Wire.Leavers.NONE : new Wire.Leavers(same);
  }

  /** The process that holds {@code memberId} in this peer's view, if any. */
  Optional<UUID> processOf(String memberId) {
    return node.addressOf(memberId).flatMap(Routing::process);
  }

  /** This process, as a write reply names it; empty while its channel has no address (closed, or rejoining). */
  Optional<UUID> ownProcess() {
    Address mine = node.channel().getAddress();
    return mine == null ? Optional.empty() : process(mine);
  }

  /** The bits of a JGroups address that name its process, whatever its subclass. */
  static Optional<UUID> process(Address address) {
    return address instanceof org.jgroups.util.UUID u
        ? Optional.of(new UUID(u.getMostSignificantBits(), u.getLeastSignificantBits()))
        : Optional.empty();
  }

  /**
   * Whether, while leaving, every peer left in the ring that owns keys is known to be leaving too:
   * nobody will take this peer's data (a member of weight 0 owns none, and is never sent any).
   */
  boolean onlyLeaversLeft() {
    return leaving && activeLeavers().containsAll(ring().members().stream().filter(m -> m.weight() > 0).map(Member::id)
        .toList());
  }

  /** The ids of the peers found leaving whose process is still the one found leaving. */
  private Set<String> activeLeavers() {
    Set<String> ids = new HashSet<>();
    leavers.forEach((id, process) -> {
      if (node.addressOf(id).equals(process)) {
        ids.add(id);
      }
    });
    return ids;
  }

  /** Called after storing an entry and before reading the ring to route it: see {@link #startLeaving}. */
  static void storedThenRoute() {
    VarHandle.fullFence();
  }

  boolean isLeaving() {
    return leaving;
  }

  /** The key's owners' ids, primary first; empty if the ring has no tokens. */
  List<String> owners(String key) {
    return owners(ring(), key);
  }

  List<String> owners(HashRing ring, String key) {
    if (ring.isEmpty()) {
      return List.of();
    }
    List<Member> owners = ring.owners(key, replicas);
    List<String> ids = new ArrayList<>(owners.size());
    for (Member m : owners) {
      ids.add(m.id());
    }
    return ids;
  }

  boolean isOwner(String key) {
    return indexOfSelf(owners(key)) >= 0;
  }

  /**
   * Whether this peer owns the key in the cluster's ring, the one other peers route by: while it
   * leaves too, when {@link #isOwner} goes by the ring it leaves behind. False while the cluster
   * refuses this peer.
   */
  boolean ownsInClusterRing(String key) {
    return indexOfSelf(owners(node.ring(), key)) >= 0;
  }

  /**
   * Whether this peer is among the owners of a range's last position: of a whole range, for a range
   * from an ownership change, whose positions all have the same owners in that change's ring.
   */
  boolean owns(KeyRange range) {
    HashRing ring = ring();
    if (ring.isEmpty() || !inRing()) {
      return false;
    }
    for (Member m : ring.ownersOfPosition(range.end(), replicas)) {
      if (m.id().equals(self)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether {@code memberId} is this peer: its id, while the cluster does not refuse it. A refused
   * peer's id in a ring names the peer that holds the id, to be sent to like any other. Read after
   * the ring the id came from, so never older than it.
   */
  boolean isSelf(String memberId) {
    return memberId.equals(self) && inRing();
  }

  /**
   * Whether this peer is in the ring: the cluster does not refuse it. A peer whose node closed from
   * the ring stays in: its node then answers for the ring it left behind, which no longer holds its
   * id, but it is still no peer the cluster refuses (it refuses data as leaving, not as refused).
   * One refused during its leave for a duplicate id is not: its node's ring then holds the id, the
   * holder's.
   */
  boolean inRing() {
    return node.isInRing() || closedFromRing();
  }

  /** Whether the node closed from the ring: it was in it when the peer began to close it. */
  private boolean closedFromRing() {
    return processAtClosing.isPresent() && !node.isInRing() && !node.ring().contains(self);
  }

  /**
   * Called right before the node closes: notes the process that holds this peer's id then, if the
   * node is in the ring, for {@link #inRing()} and {@link #leavers()} (once closed, the node no
   * longer lists its own address).
   */
  void nodeClosing() {
    processAtClosing = node.isInRing() ? processOf(self) : Optional.empty();
  }

  /** This peer's place among a key's owners (0: primary), or -1 if it is not one of them. */
  int indexOfSelf(List<String> owners) {
    int i = owners.indexOf(self);
    return i >= 0 && inRing() ? i : -1;
  }

  /**
   * The JGroups address of the process that holds a member id now: a new one when the id's
   * process was restarted and admitted again.
   */
  Optional<Address> addressOf(String memberId) {
    return node.addressOf(memberId);
  }

  /** Whether a member is in the ring this peer routes by, hence worth sending to. */
  boolean isLive(String memberId) {
    return ring().contains(memberId);
  }
}
