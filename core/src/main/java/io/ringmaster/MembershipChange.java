package io.ringmaster;

import io.ringmaster.ring.Member;
import java.util.List;

/**
 * A change of the ring's members between two views. A single view can both add and remove members
 * (a crash noticed while another node joins), so both lists may be non-empty. A member replaced
 * under its node id within one view (a process restarted, with the same settings or a new weight
 * or zone, or rejoined, before its old self was removed; a refused member taking over an id whose
 * holder left) is in both, left as it was and joined as it is, as if JGroups had removed it in one
 * view and admitted it in the next; this node's own rejoin is not reported to itself. To follow
 * the members, remove those that left, then add those that joined.
 *
 * @param previousViewId the view before; -1 if none
 * @param viewId         the new view
 * @param members        the ring's members now, in id order
 * @param joined         members in the ring now that were not before (by id, or as this JGroups
 *                       member with this weight and zone); non-null, may be empty
 * @param left           members in the ring before that are not now (left, crashed, or replaced)
 * @param subgroups      for a merge after a partition, the members of each merged side as this
 *                       node's view had them, less those the merged ring does not hold (refused
 *                       ones, and members that are not Ringmaster nodes); empty for any other view
 * @param refused        JGroups members of the view kept out of the ring, each reported in the
 *                       first view that holds it; a listener added to a running node gets in its
 *                       first change (previous view -1) every member refused then; non-null,
 *                       usually empty
 */
public record MembershipChange(long previousViewId, long viewId, List<Member> members, List<Member> joined,
                               List<Member> left, List<List<Member>> subgroups, List<Refusal> refused) {

  /**
   * Copies every list, so a change is immutable.
   *
   * @throws NullPointerException if a list, a subgroup or an element of one is null
   */
  public MembershipChange {
    members = List.copyOf(members);
    joined = List.copyOf(joined);
    left = List.copyOf(left);
    subgroups = subgroups.stream().map(List::copyOf).toList();
    refused = List.copyOf(refused);
  }

  /**
   * A member every node keeps out of the ring, by the same rule: its ring parameters differ from
   * the cluster's (those of the view's first Ringmaster member), an earlier member of the view
   * holds its node id (two live members with one id, after a partition heals), or its tokens would
   * take the ring past the most a ring holds, with those of the members admitted before it in the
   * view ({@link io.ringmaster.ring.HashRing#MAX_TOKENS}, {@link
   * io.ringmaster.ring.HashRing#MAX_MEMBERS}; counted afresh in each view, so a member admitted
   * until then may be refused once a member before it that did not fit does), or it announces
   * Ringmaster metadata that this build cannot read (another build's, or a foreign peer's). It
   * owns nothing while it stays. A node refused when it joins is not told here: its {@code start()} fails
   * instead.
   *
   * @param nodeId the id it announces ("?" for a member whose metadata announces none that can be
   *               read)
   * @param local  whether it is this node: then this node owns nothing while it is refused
   *               (until the holder of its id leaves, or it restarts with matching parameters or
   *               another id)
   * @param reason the reason, naming the member by id and JGroups address, and what keeps it out:
   *               the parameters that differ (and the member whose parameters the ring has), the
   *               member holding its id, the ring's size, or metadata that cannot be read
   */
  public record Refusal(String nodeId, boolean local, String reason) {}

  /** Whether this change is a merge of partitions. */
  public boolean isMerge() {
    return !subgroups.isEmpty();
  }
}
