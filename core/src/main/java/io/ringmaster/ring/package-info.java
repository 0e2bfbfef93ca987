/**
 * The consistent-hash ring as a value: no JGroups, no threads, no I/O. {@link
 * io.ringmaster.ring.HashRing} is immutable (build one with {@code HashRing.builder()}, change it
 * with {@code with}, {@code without} and {@code withMembers}), answers lookups without locks or
 * allocation, and has a checksum that equal rings share on every JVM. {@link
 * io.ringmaster.ring.RingDiff} computes exactly what one member gains and loses between two rings,
 * as {@link io.ringmaster.ring.KeyRange}s {@code (start, end]} on the circle of signed 64-bit
 * positions. {@code docs/ring-spec.md} specifies hash, tokens, order, owners and checksum to the
 * bit, with golden vectors.
 *
 * <p>Null arguments: a null member given to {@code with}, {@code withMembers} or the builder's
 * {@code add}, or a null id given to {@code without}, throws
 * {@link java.lang.IllegalArgumentException}; a null key, ring, member id, or the member given to
 * {@code isOwnerOfPosition}, elsewhere throws {@link java.lang.NullPointerException}, but for
 * {@code contains}, {@code member} and {@code share}, which answer a null id as an id no member
 * has.
 */
package io.ringmaster.ring;
