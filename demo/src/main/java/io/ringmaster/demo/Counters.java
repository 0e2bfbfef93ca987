package io.ringmaster.demo;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** What a peer counts for {@code /stats}; totals since start. */
final class Counters {
  final LongAdder putsServed = new LongAdder();
  final LongAdder deletesServed = new LongAdder();
  final LongAdder getsServed = new LongAdder();
  /** Writes sent to this peer that changed its store (new keys, or newer versions). */
  final LongAdder writesStored = new LongAdder();
  /** Writes this peer sent on to owners it found missing from the sender's list. */
  final LongAdder writesForwarded = new LongAdder();
  /** Read repairs sent: owners sent a key's newest copy because a read found theirs older, or missing. */
  final LongAdder readRepairs = new LongAdder();
  /** Reads of a key this peer owns but had no copy of yet, answered from its previous owners ({@link Incoming}). */
  final LongAdder readsFromPreviousOwners = new LongAdder();
  /** Entries that a migration (a pull, or a hand-off push, even one this peer then refused) added or updated here. */
  final LongAdder keysMigratedIn = new LongAdder();
  /** Entries handed off for a lost range and then dropped here. */
  final LongAdder keysMigratedOut = new LongAdder();
  /** Entries found here outside this peer's ranges by the sweep, handed to their owners and dropped. */
  final LongAdder strayKeysHandedOff = new LongAdder();
  /** Tombstones older than the grace period, dropped here. */
  final LongAdder tombstonesPurged = new LongAdder();
  final LongAdder migrationsCompleted = new LongAdder();
  final LongAdder migrationsFailed = new LongAdder();
  /** Ownership changes being handled now. */
  final AtomicInteger migrationsInProgress = new AtomicInteger();
  /**
   * The view of the ownership change the rebalancer is handling now, or -1: until it is done, this
   * peer may still be receiving the ranges that change gave it, and serves no pull for a later view.
   */
  final AtomicLong migratingView = new AtomicLong(-1);
  /** Set once the rebalancer handled its first ownership change: before, this peer's ranges may be partial. */
  final AtomicBoolean settled = new AtomicBoolean();
}
