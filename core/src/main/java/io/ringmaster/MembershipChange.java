package io.ringmaster;

import io.ringmaster.ring.Member;
import java.util.List;

/**
 * A change of the ring's members between two views. A single view can both add and remove members
 * (a crash noticed while another node joins), so both lists may be non-empty.
 *
 * @param previousViewId the view before; -1 if none
 * @param viewId         the new view
 * @param members        the ring's members now, in id order
 * @param joined         members in the ring now that were not before; non-null, may be empty
 * @param left           members in the ring before that are not now (left or crashed)
 * @param subgroups      for a merge after a partition, the members of each merged side as this
 *                       node's view had them; empty for any other view
 */
public record MembershipChange(long previousViewId, long viewId, List<Member> members, List<Member> joined,
                               List<Member> left, List<List<Member>> subgroups) {

  public MembershipChange {
    members = List.copyOf(members);
    joined = List.copyOf(joined);
    left = List.copyOf(left);
    subgroups = subgroups.stream().map(List::copyOf).toList();
  }

  /** Whether this change is a merge of partitions. */
  public boolean isMerge() {
    return !subgroups.isEmpty();
  }
}
