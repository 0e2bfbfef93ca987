package io.ringmaster;

/**
 * Told of each change of the ring's members: joins, leaves and crashes, merges after a partition.
 * Same threading and isolation rules as {@link OwnershipListener}.
 */
@FunctionalInterface
public interface MembershipListener {
  /**
   * Called for each installed view that changes the ring's members (a member replaced under its
   * id, by a restart or a rejoin, included), merges partitions or refuses a member, in view order.
   * The first call is always the ring's members at that time as joined from nothing
   * ({@code previousViewId} -1): for a listener added before {@code start()}, the first view; for
   * one added to a running node, the current members. So removing {@code left}, then adding
   * {@code joined}, call after call, gives the current members, up to this node's own leave: no
   * membership change reports it (ownership listeners hear it as
   * {@link OwnershipChange.Reason#LEAVING}), so after {@link Ringmaster#close()} the fold still
   * lists this node where {@link Ringmaster#members()} no longer does.
   */
  void onMembershipChange(MembershipChange change);
}
