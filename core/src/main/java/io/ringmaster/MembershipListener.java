package io.ringmaster;

/**
 * Told of each change of the ring's members: joins, leaves and crashes, merges after a partition.
 * Same threading and isolation rules as {@link OwnershipListener}.
 */
@FunctionalInterface
public interface MembershipListener {
  void onMembershipChange(MembershipChange change);
}
