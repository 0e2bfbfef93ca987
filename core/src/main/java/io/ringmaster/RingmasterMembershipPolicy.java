package io.ringmaster;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.MembershipChangePolicy;

/**
 * Orders JGroups views so that the ring parameters of a cluster stay those of its members, not
 * those of a misconfigured node. Ringmaster installs it in the stack of every node it starts.
 *
 * <p>Every member takes the ring parameters ({@code virtualNodes}, {@code replicas},
 * {@code applicationVersion}, spec version, {@link Ringmaster#PROTOCOL_VERSION}) of the first
 * Ringmaster member of the view as the reference and refuses the members that differ; that rule
 * needs nothing but the view, so all members agree. JGroups' own order would let a refused member
 * come first: when the members before it leave, or when a partition heals and JGroups puts first
 * the coordinator whose address sorts lowest, which may be a misconfigured node that was alone on
 * its side. This policy keeps the cluster's parameters first:
 * <ul>
 *   <li>On a join or leave, the parameters stay those of the previous view's first Ringmaster
 *       member, the ring's. Members stay in JGroups' order, except when the first Ringmaster
 *       member would then have other parameters (the members before a refused one left): the
 *       first member of the previous view that has the ring's parameters is moved to its place
 *       (one refused in that view for its id or the ring's size has them, and may be moved).
 *       Neither a joiner (it must not coordinate the view that admits it) nor a member with other
 *       parameters is ever moved there, however many of them there are: misconfigured nodes
 *       that start, fail their start and leave, or crash and wait to be found dead, can
 *       outnumber the ring's members for a while, and must not take the cluster over.
 *       Only when no member with the ring's parameters is left do the others take JGroups'
 *       order. So after a tie won by a misconfigured node (below), correct nodes that join are
 *       refused until it leaves.</li>
 *   <li>On a merge, the winning parameters are those of the most members of the subgroups' rings:
 *       in each subgroup, the node ids that hold its first Ringmaster member's parameters (a
 *       member refused on its side for other parameters does not count, for the same reason as
 *       above, and an id two members hold counts once; ties: the
 *       parameters of the ring member whose address sorts lowest). If every subgroup with
 *       a Ringmaster member is led by a member with them (one configuration everywhere, the usual
 *       case; a subgroup of plain JGroups members only does not count), JGroups'
 *       coordinator stands: the one whose address sorts lowest comes first, then the rest of its
 *       side, then the other sides by their coordinators' addresses, so that of two members with
 *       one id, the one on the side of the lower coordinator keeps the id. Otherwise, of the
 *       subgroups led by a member with them, the one whose ring holds the most members comes first
 *       (ties: the one whose coordinator's address sorts lowest), then the others by their
 *       coordinators' addresses (JGroups hands them over in hash-map order). So a lone
 *       misconfigured node never wins against two correct members in rings, however they are
 *       split, and misconfigured nodes refused on a side never win; but neither does a correct
 *       member refused on its side (one that lost a tie before) count against it.</li>
 * </ul>
 *
 * <p>Each JGroups member picks the next coordinator, and rebuilds views from deltas, with its own
 * policy, so every member of the cluster must use this one: with mixed policies, a crashed
 * coordinator can stay in the view for good, each candidate waiting for the other. Ringmaster
 * installs it on every node it starts, replacing any other (with a warning if the stack set one
 * other than JGroups' default). A plain JGroups member sharing a cluster with Ringmaster nodes needs
 * {@code <pbcast.GMS membership_change_policy="io.ringmaster.RingmasterMembershipPolicy"
 * use_delta_views="false"/>} (full views: a member rebuilds a delta view with its own policy, so
 * members whose last views differed would each keep a different list under one view id).
 */
public final class RingmasterMembershipPolicy implements MembershipChangePolicy {
  private final GMS.DefaultMembershipPolicy jgroups = new GMS.DefaultMembershipPolicy();

  /** Subgroups by their coordinator's (first member's) address. */
  private static final Comparator<Collection<Address>> BY_COORDINATOR =
      Comparator.comparing(g -> g.iterator().next());

  /** A new policy; it keeps no state: every decision is made from the membership it is given. */
  public RingmasterMembershipPolicy() {
  }

  @Override
  public List<Address> getNewMembership(Collection<Address> current, Collection<Address> joiners,
                                        Collection<Address> leavers, Collection<Address> suspects) {
    List<Address> next = new ArrayList<>(jgroups.getNewMembership(current, joiners, leavers, suspects));
    Optional<NodeMetadata.RingParameters> ring = firstRingmasterMember(current).map(NodeMetadata::parameters);
    int first = indexOfFirstRingmasterMember(next);
    if (ring.isEmpty() || first < 0 || holds(next.get(first), ring.get())) {
      return next;
    }
    Set<Address> before = new HashSet<>(current);
    for (int i = first + 1; i < next.size(); i++) {
      Address a = next.get(i);
      // In the previous view, with the ring's parameters: neither a joiner nor a misconfigured node.
      if (before.contains(a) && holds(a, ring.get())) {
        next.remove(i);
        next.add(first, a);
        break;
      }
    }
    return next;
  }

  @Override
  public List<Address> getNewMembership(Collection<Collection<Address>> subviews) {
    List<Collection<Address>> groups = subviews.stream().filter(s -> !s.isEmpty()).toList();
    if (groups.isEmpty()) {
      return new ArrayList<>();
    }
    Optional<NodeMetadata.RingParameters> winning = mostHeldParameters(groups);
    if (groups.stream().allMatch(g -> firstRingmasterMember(g).isEmpty() || ledBy(g, winning))) {
      // One configuration on every side with a Ringmaster node (the usual case; a side of plain
      // JGroups members only takes no part in it): JGroups' coordinator, the one whose
      // address sorts lowest. If the merge view's creator installs one view of its own while the
      // merge runs (JGroups 5.5 keeps handling joins and leaves then), both can carry the same id
      // and creator: its side drops the merge view, the other side installs it, and MERGE3,
      // comparing view ids, never sees that they differ. The largest side's coordinator, busy
      // with that side's joins and leaves, would be that creator in almost every merge; with the
      // lowest address, only when that is its own. After it, the rest of its side, then the other
      // sides by their coordinators' addresses: JGroups takes the sides in the order their merge
      // answers sit in a hash map, so of two members with one id off the coordinators, either
      // could come first and keep the id.
      return firstThenByCoordinator(groups.stream().min(BY_COORDINATOR).orElseThrow(), groups);
    }
    Comparator<Collection<Address>> order = Comparator
        .comparing((Collection<Address> g) -> !ledBy(g, winning)) // led by the winning parameters first
        .thenComparing(RingmasterMembershipPolicy::ringSize, Comparator.reverseOrder())
        .thenComparing(BY_COORDINATOR); // then JGroups' choice: the lowest coordinator
    // The winning parameters are some side's ring's, so the first side is led by them.
    return firstThenByCoordinator(groups.stream().min(order).orElseThrow(), groups);
  }

  /**
   * The members of {@code first}, then those of the other groups by {@link #BY_COORDINATOR} (not
   * in the order JGroups hands them over, a hash map's), each member once.
   */
  private static List<Address> firstThenByCoordinator(Collection<Address> first, List<Collection<Address>> groups) {
    Set<Address> merged = new LinkedHashSet<>(first);
    groups.stream().sorted(BY_COORDINATOR).forEach(merged::addAll);
    return new ArrayList<>(merged);
  }

  /**
   * The ring parameters of the most node ids in the rings of a merge's groups: in each group, those
   * that hold the parameters of its first Ringmaster member (one refused on its side for other
   * parameters does not count); on a tie, those of the ring member whose address sorts lowest.
   * Empty with no Ringmaster member.
   */
  static Optional<NodeMetadata.RingParameters> mostHeldParameters(Collection<? extends Collection<Address>> groups) {
    Map<NodeMetadata.RingParameters, Set<String>> ids = new HashMap<>();
    Map<NodeMetadata.RingParameters, Address> lowest = new HashMap<>();
    for (Collection<Address> group : groups) {
      Optional<NodeMetadata.RingParameters> ring = firstRingmasterMember(group).map(NodeMetadata::parameters);
      if (ring.isEmpty()) {
        continue; // plain JGroups members only
      }
      for (Address a : group) {
        NodeMetadata.from(a).filter(m -> m.parameters().equals(ring.get())).ifPresent(m -> {
          ids.computeIfAbsent(m.parameters(), k -> new HashSet<>()).add(m.id());
          lowest.merge(m.parameters(), a, (x, y) -> x.compareTo(y) <= 0 ? x : y);
        });
      }
    }
    return ids.keySet().stream().min(Comparator
        .comparing((NodeMetadata.RingParameters p) -> ids.get(p).size(), Comparator.reverseOrder())
        .thenComparing(lowest::get));
  }

  /** Whether the group's first Ringmaster member has these parameters (true if there are none to have). */
  private static boolean ledBy(Collection<Address> group, Optional<NodeMetadata.RingParameters> parameters) {
    return parameters.isEmpty()
        || firstRingmasterMember(group).map(m -> m.parameters().equals(parameters.get())).orElse(false);
  }

  private static boolean holds(Address a, NodeMetadata.RingParameters parameters) {
    return NodeMetadata.from(a).map(m -> m.parameters().equals(parameters)).orElse(false);
  }

  /**
   * How many node ids of a subgroup hold the parameters of its first Ringmaster member: the
   * members its ring can hold.
   */
  static int ringSize(Collection<Address> subview) {
    Optional<NodeMetadata.RingParameters> reference = firstRingmasterMember(subview).map(NodeMetadata::parameters);
    if (reference.isEmpty()) {
      return 0;
    }
    Set<String> ids = new HashSet<>();
    for (Address a : subview) {
      if (holds(a, reference.get())) {
        ids.add(NodeMetadata.from(a).orElseThrow().id());
      }
    }
    return ids.size();
  }

  static Optional<NodeMetadata> firstRingmasterMember(Collection<Address> members) {
    for (Address a : members) {
      Optional<NodeMetadata> m = NodeMetadata.from(a);
      if (m.isPresent()) {
        return m;
      }
    }
    return Optional.empty();
  }

  private static int indexOfFirstRingmasterMember(List<Address> members) {
    for (int i = 0; i < members.size(); i++) {
      if (NodeMetadata.from(members.get(i)).isPresent()) {
        return i;
      }
    }
    return -1;
  }
}
