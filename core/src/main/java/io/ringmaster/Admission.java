package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jgroups.Address;
import org.jgroups.View;

/**
 * Who of a view's members is in the ring, and who is refused and why. Every member applies the
 * same rule to the same view, so all agree on who is in the ring with no coordinator, and every
 * ring it admits can be built: a member past a limit is refused (its start() fails naming the
 * limit), where its ring would fail to build on every member. Each view is counted afresh, in its
 * order: a leave may admit a member refused for size, and refuse a later one that no longer fits.
 *
 * @param addresses  the members admitted, by node id, in view order
 * @param metadata   what each admitted member announced, by node id, in view order
 * @param refused    the members refused in this view that no earlier view refused (news)
 * @param refusedNow every member refused in this view, in view order
 * @param own        why this node itself was refused, or null
 */
record Admission(Map<String, Address> addresses, Map<String, NodeMetadata> metadata,
                 List<MembershipChange.Refusal> refused, List<MembershipChange.Refusal> refusedNow,
                 OwnRefusal own) {
  /** Why the cluster refused this node, and which kind of refusal that is. */
  record OwnRefusal(String reason, RingmasterException.Reason kind) {}

  /**
   * Reads the view's members in view order, admitting those whose ring parameters match the
   * reference's, whose id no earlier member holds, and whose tokens still fit in a ring of
   * {@code tokenLimit} tokens and {@link HashRing#MAX_MEMBERS} members with those admitted before
   * them.
   *
   * @param self      this member's address, as the view's installation read it once (a rejoin may
   *                  change it meanwhile)
   * @param reference the first Ringmaster member of the view, whose parameters the ring has:
   *                  {@link RingmasterMembershipPolicy} keeps a member with the cluster's
   *                  parameters there
   * @param reported  the members whose refusal was reported, updated here for this view (the
   *                  caller's copy: it replaces the node's once this view's ring is published, so
   *                  that a view tried again reports its refusals as news again)
   * @param tokenLimit {@link HashRing#MAX_TOKENS}, or less in a test
   */
  static Admission of(View view, Address self, NodeMetadata reference, Set<Address> reported, long tokenLimit) {
    Map<String, Address> addresses = new LinkedHashMap<>();
    Map<String, NodeMetadata> metadata = new LinkedHashMap<>();
    List<MembershipChange.Refusal> refused = new ArrayList<>();
    List<MembershipChange.Refusal> refusedNow = new ArrayList<>();
    Address referenceAddress = null;
    OwnRefusal ownRefusal = null;
    long tokensAdmitted = 0;
    reported.retainAll(view.getMembers()); // forget members that left: no unbounded growth
    for (Address a : view.getMembers()) {
      Optional<NodeMetadata> found = NodeMetadata.from(a);
      if (found.isEmpty() && !NodeMetadata.isRingmasterNode(a)) {
        continue; // a JGroups member that is not a Ringmaster node: not in the ring, and no refusal
      }
      String id;
      String reason = null;
      RingmasterException.Reason kind = RingmasterException.Reason.REFUSED;
      if (found.isEmpty()) {
        // Metadata no ring could use (a foreign or broken peer, or a build that changed what this
        // one reads): every member leaves it out alike, and reports it, so that an operator sees
        // why a member is not in the ring.
        id = NodeMetadata.announcedId(a);
        reason = NodeMetadata.describe(a) + " announces Ringmaster metadata that this build cannot read or no"
            + " ring could use (another build's, or a foreign peer's); it is left out of the ring";
      } else {
        NodeMetadata m = found.get();
        id = m.id();
        if (referenceAddress == null) {
          referenceAddress = a; // the first Ringmaster member: the reference
        }
        List<String> differences = m.parameterDifferences(reference);
        long tokens = Member.tokenCount(m.virtualNodes(), m.weight()); // at most MAX_TOKENS_PER_MEMBER: from() checks
        if (!differences.isEmpty()) {
          reason = "ring parameters of " + NodeMetadata.describe(a) + " differ from the cluster's, those of its"
              + " first member " + NodeMetadata.describe(referenceAddress) + ": " + String.join("; ", differences);
        } else if (addresses.containsKey(id)) {
          reason = "node id \"" + id + "\" is already held by member " + NodeMetadata.describe(addresses.get(id))
              + "; the later member " + NodeMetadata.describe(a) + " is refused";
          kind = RingmasterException.Reason.ID_HELD;
        } else if (tokensAdmitted + tokens > tokenLimit) {
          reason = NodeMetadata.describe(a) + " would bring the ring to " + (tokensAdmitted + tokens) + " tokens,"
              + " more than the " + tokenLimit + " a ring holds: its weight " + m.weight() + " at virtualNodes "
              + m.virtualNodes() + " gives it " + tokens + ", and the members admitted before it in the view have "
              + tokensAdmitted + "; lower the weight of " + id + ", or virtualNodes on every member";
        } else if (addresses.size() == HashRing.MAX_MEMBERS) {
          reason = NodeMetadata.describe(a) + " would be member " + (HashRing.MAX_MEMBERS + 1) + " of the ring,"
              + " which holds at most " + HashRing.MAX_MEMBERS;
        }
        if (reason == null) {
          tokensAdmitted += tokens;
          addresses.put(id, a);
          metadata.put(id, m);
          reported.remove(a); // admitted (the holder of its id left): a new refusal is news again
          continue;
        }
      }
      if (a.equals(self)) {
        ownRefusal = new OwnRefusal(reason, kind);
      }
      MembershipChange.Refusal r = new MembershipChange.Refusal(id, a.equals(self), reason);
      refusedNow.add(r);
      if (reported.add(a)) {
        refused.add(r);
      }
    }
    return new Admission(Collections.unmodifiableMap(addresses), Collections.unmodifiableMap(metadata),
        List.copyOf(refused), List.copyOf(refusedNow), ownRefusal);
  }
}
