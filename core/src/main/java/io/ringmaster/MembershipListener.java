package io.ringmaster;

/**
 * Told of each change of the ring's members: joins, leaves and crashes, merges after a partition.
 * Same threading and isolation rules as {@link OwnershipListener}.
 */
@FunctionalInterface
public interface MembershipListener {
  /**
   * Called for each installed view that changes the ring's members, merges partitions or refuses
   * a member, in view order. The first call is always the ring's members at that time as joined
   * from nothing ({@code previousViewId} -1): for a listener added before {@code start()}, the first
   * view; for one added to a running node, the current members. So applying {@code joined} and
   * {@code left} of every call in order gives the current members.
   */
  void onMembershipChange(MembershipChange change);
}
