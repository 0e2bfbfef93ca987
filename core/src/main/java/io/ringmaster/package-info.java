/**
 * A cluster member that keeps a consistent-hash ring of its JGroups cluster and tells listeners
 * exactly what it gained and lost at each membership change.
 *
 * <p>Start with {@link io.ringmaster.Ringmaster}: its builder takes the settings (reported back as
 * a {@link io.ringmaster.RingmasterConfig}), {@code start()} joins the cluster, the lookups answer
 * from the current ring, and {@code close()} leaves after telling the listeners to whom this node's
 * ranges go. Listeners hear {@link io.ringmaster.OwnershipChange}s,
 * {@link io.ringmaster.MembershipChange}s and {@link io.ringmaster.RingDivergence}s;
 * {@link io.ringmaster.RingmasterStats} holds the node's counters. The ring itself, with no JGroups,
 * threads or I/O, is in {@link io.ringmaster.ring}; nodes in one JVM for the tests of code that
 * embeds Ringmaster, in {@link io.ringmaster.testing}.
 *
 * <p>{@link io.ringmaster.RingmasterMembershipPolicy}, {@link io.ringmaster.SharedSecretEncrypt} and
 * {@link io.ringmaster.SharedSecretAuthToken} are public so that a JGroups stack file can name
 * them; applications do not call them.
 *
 * <p>Null arguments: a builder setter of a value given null throws
 * {@link java.lang.IllegalArgumentException} naming the setting, as for any other bad value, and
 * so does a null config file; a null key, listener, executor, condition or timeout throws
 * {@link java.lang.NullPointerException}.
 */
package io.ringmaster;
