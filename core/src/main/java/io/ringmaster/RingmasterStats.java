package io.ringmaster;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A node's counters, read by {@link Ringmaster#stats()}: without locks, but for
 * {@code pendingCallbacks}, which takes each listener's queue lock in turn, briefly.
 *
 * @param viewId           the installed JGroups view id, -1 before the first
 * @param members          members in the ring
 * @param viewsSeen        views handled since start
 * @param ringBuilds       views that changed the ring
 * @param lastRingBuild    time from a view's arrival on the view thread to its ring being built
 * @param pendingCallbacks ownership and membership listener callbacks queued or running (the
 *                         listener lag; divergence reports are not counted), plus one while
 *                         a view's ring is being published and its callbacks queued: read after
 *                         {@code ring()}, 0 means every callback for that ring has run
 * @param listenerFailures callbacks of this node's ownership, membership and divergence listeners
 *                         that threw (each logged at ERROR, the listener kept, the others going
 *                         on); a running total: an alert on it catches a hand-off that failed
 * @param divergences      checksum messages of this node's view that disagreed with it: another
 *                         checksum, or a sender in the ring as an id this node's ring gives
 *                         another member or none (the same view id with two member lists, after a
 *                         merge race); a running total
 * @param splitViewDivergences of {@code divergences}, those of kind
 *                         {@link RingDivergence.Kind#SPLIT_VIEW}, which end by themselves (the
 *                         member the view does not list rejoins): {@code divergences} minus these
 *                         counts the ones that should never happen
 * @param rejoins          times this node left and joined the cluster again because its view had
 *                         an id its peers' view also had, with other members (a JGroups merge race)
 * @param gossipSent       checksum messages sent (a node the cluster refuses sends none; it asks a
 *                         member of its view, each gossip interval, whether that view lists it)
 * @param gossipReceived   checksum messages received
 * @param refusedMembers   refusals seen since start: members kept out of the ring of a view, for
 *                         the reasons {@link MembershipChange.Refusal} lists; a running total, not
 *                         how many are refused now (a membership listener's first change lists
 *                         those: {@link MembershipChange#refused()})
 * @param lastChange       when a view last changed this node's ownership or brought its membership
 *                         listeners a change (members, a merge, a refusal), if ever (adding a
 *                         listener, or this node's own leave, does not count)
 * @param failedViewId     the id of a view whose ring could not be built here (no memory for it,
 *                         say) and is being tried again, if any: while present, this node routes by
 *                         the ring of {@code viewId}, older than its peers' (their gossip compares
 *                         only equal view ids, so no {@link RingDivergence} says so)
 */
public record RingmasterStats(long viewId, int members, long viewsSeen, long ringBuilds, Duration lastRingBuild,
                              int pendingCallbacks, long listenerFailures, long divergences,
                              long splitViewDivergences, long rejoins,
                              long gossipSent,
                              long gossipReceived, long refusedMembers, Optional<Instant> lastChange,
                              OptionalLong failedViewId) {}
