package io.ringmaster;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.MembershipChangePolicy;

/**
 * Orders JGroups views so that the ring parameters of a cluster stay those of its members, not
 * those of a misconfigured node. Ringmaster installs it in the stack of every node it starts.
 *
 * <p>Every member takes the ring parameters ({@code virtualNodes}, {@code replicas}, spec
 * version) of the first Ringmaster member of the view as the reference and refuses the members
 * that differ; that rule needs nothing but the view, so all members agree. JGroups' own order
 * would let a refused member come first: when the members before it leave, or when a partition
 * heals and JGroups puts first the coordinator whose address sorts lowest, which may be a
 * misconfigured node that was alone on its side. This policy keeps the reference where it was:
 * <ul>
 *   <li>On a join or leave, members stay in JGroups' order, except when the first Ringmaster
 *       member would then have other parameters than the first one had before: the first member
 *       that was already in the view and has those parameters is moved to its place.</li>
 *   <li>On a merge, the subgroup whose ring holds the most members comes first (ties: the one
 *       whose coordinator's address sorts lowest, as in JGroups), then the others in JGroups'
 *       order. So the larger side keeps its parameters and, for two members with one id, its
 *       member keeps the id.</li>
 * </ul>
 *
 * <p>JGroups members rebuild views from deltas with their own policy, so every member of the
 * cluster must use the same one: a plain JGroups member sharing a cluster with Ringmaster nodes
 * needs {@code <pbcast.GMS membership_change_policy="io.ringmaster.RingmasterMembershipPolicy"/>}.
 */
public final class RingmasterMembershipPolicy implements MembershipChangePolicy {
  private final GMS.DefaultMembershipPolicy jgroups = new GMS.DefaultMembershipPolicy();

  /** A new policy; it keeps no state: every decision is made from the membership it is given. */
  public RingmasterMembershipPolicy() {
  }

  @Override
  public List<Address> getNewMembership(Collection<Address> current, Collection<Address> joiners,
                                        Collection<Address> leavers, Collection<Address> suspects) {
    List<Address> next = new ArrayList<>(jgroups.getNewMembership(current, joiners, leavers, suspects));
    Optional<NodeMetadata> reference = firstRingmasterMember(current);
    int first = indexOfFirstRingmasterMember(next);
    if (reference.isEmpty() || first < 0 || sameParameters(next.get(first), reference.get())) {
      return next;
    }
    Set<Address> before = new HashSet<>(current);
    for (int i = first + 1; i < next.size(); i++) {
      Address a = next.get(i);
      if (before.contains(a) && sameParameters(a, reference.get())) { // never a joiner: it is not in the cluster yet
        next.remove(i);
        next.add(first, a);
        break;
      }
    }
    return next;
  }

  @Override
  public List<Address> getNewMembership(Collection<Collection<Address>> subviews) {
    Collection<Address> largest = null;
    int largestRing = -1;
    for (Collection<Address> subview : subviews) {
      if (subview.isEmpty()) {
        continue;
      }
      int ring = ringSize(subview);
      if (ring > largestRing
          || ring == largestRing && subview.iterator().next().compareTo(largest.iterator().next()) < 0) {
        largest = subview;
        largestRing = ring;
      }
    }
    if (largest == null) {
      return jgroups.getNewMembership(subviews);
    }
    Set<Address> merged = new LinkedHashSet<>(largest);
    subviews.forEach(merged::addAll);
    return new ArrayList<>(merged);
  }

  /**
   * How many node ids of a subgroup hold the parameters of its first Ringmaster member: the
   * members its ring can hold.
   */
  static int ringSize(Collection<Address> subview) {
    NodeMetadata reference = firstRingmasterMember(subview).orElse(null);
    Set<String> ids = new HashSet<>();
    for (Address a : subview) {
      NodeMetadata.from(a).filter(m -> m.sameParameters(reference)).ifPresent(m -> ids.add(m.id()));
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

  private static boolean sameParameters(Address a, NodeMetadata reference) {
    return NodeMetadata.from(a).map(m -> m.sameParameters(reference)).orElse(false);
  }
}
