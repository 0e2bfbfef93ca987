package io.ringmaster;

/**
 * Told of each change of the ring's members: joins, leaves and crashes, merges after a partition.
 * Same threading and isolation rules as {@link OwnershipListener}.
 */
@FunctionalInterface
public interface MembershipListener {
  /**
   * Called for each installed view that changes the ring's members, merges partitions or refuses
   * a member, in view order.
   */
  void onMembershipChange(MembershipChange change);
}
