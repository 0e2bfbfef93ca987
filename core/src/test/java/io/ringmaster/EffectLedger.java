package io.ringmaster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The outside world that {@link JobScheduler}s act on, shared by the nodes of one JVM: a lease per
 * job, a fencing token sequence that only grows, and the log of every run it accepted or refused.
 * It is the shared store of docs/recipes.md, "Jobs that must run once": it judges a lease's expiry
 * by its own clock, which moves only when the test calls {@link #advance(Duration)}, so that a
 * job that moves to another node without an {@code advance} moved because its old holder released
 * it, never because its lease ran out. A run is accepted only if its token is at least the latest
 * the ledger issued for the job; the ledger does not check ticks, so a tick run twice shows in
 * {@link #duplicateTicks()}.
 */
final class EffectLedger {
  /** One run, accepted or refused: the job, its tick, the node that ran it and the token it wrote with. */
  record Entry(long seq, String job, long tick, String node, long token, boolean accepted) {}

  /** A lease taken: its token, and the last tick accepted for the job before it (-1 for none). */
  record Taken(long token, long lastTick) {}

  private record Lease(String holder, long token, long expiresAt) {}

  private final long epochNanos = System.nanoTime();
  private final Map<String, Lease> leases = new HashMap<>();
  private final Map<String, Long> latestToken = new HashMap<>();
  private final Map<String, Long> lastTick = new HashMap<>();
  private final List<Entry> entries = new ArrayList<>();
  private final List<String> takes = new ArrayList<>();
  private long clock;
  private long tokens;

  /** The start of every job's calendar: tick k of a job of period p is due at epoch + k * p. */
  long epochNanos() {
    return epochNanos;
  }

  /** Moves the ledger's clock, by which leases expire; nothing else moves it. */
  synchronized void advance(Duration by) {
    clock += by.toNanos();
  }

  /** A new token, higher than any before, if the job's lease is free, expired or {@code holder}'s already. */
  synchronized Optional<Taken> take(String job, String holder, Duration ttl) {
    Lease lease = leases.get(job);
    if (lease != null && lease.expiresAt > clock && !lease.holder.equals(holder)) {
      return Optional.empty();
    }
    long token = ++tokens;
    takes.add(job);
    leases.put(job, new Lease(holder, token, clock + ttl.toNanos()));
    latestToken.put(job, token);
    return Optional.of(new Taken(token, lastTick.getOrDefault(job, -1L)));
  }

  /** Whether the lease is still this token's (no newer one issued); if so it now runs ttl from now. */
  synchronized boolean renew(String job, long token, Duration ttl) {
    Lease lease = leases.get(job);
    if (lease == null || lease.token != token) {
      return false;
    }
    leases.put(job, new Lease(lease.holder, token, clock + ttl.toNanos()));
    return true;
  }

  /** Frees the lease, if it is still this token's. */
  synchronized void release(String job, long token) {
    Lease lease = leases.get(job);
    if (lease != null && lease.token == token) {
      leases.remove(job);
    }
  }

  /** Takes a run's effect only if no newer token was issued for the job; says whether it did. */
  synchronized boolean write(String job, long tick, String node, long token) {
    boolean accepted = token >= latestToken.getOrDefault(job, 0L);
    entries.add(new Entry(entries.size(), job, tick, node, token, accepted));
    if (accepted) {
      lastTick.merge(job, tick, Math::max);
    }
    return accepted;
  }

  /** How many leases were taken so far: takes from this mark on are {@link #takenSince(int)}. */
  synchronized int takeMark() {
    return takes.size();
  }

  /** The jobs whose leases were taken from {@code mark} on, once for each take, in order. */
  synchronized List<String> takenSince(int mark) {
    return List.copyOf(takes.subList(mark, takes.size()));
  }

  /** The sequence number the next run will get: runs from a mark on are those with {@code seq >= mark}. */
  synchronized long mark() {
    return entries.size();
  }

  /** Every run from {@code mark} on, accepted or refused, in the order the ledger saw them. */
  synchronized List<Entry> since(long mark) {
    return List.copyOf(entries.subList((int) mark, entries.size()));
  }

  /** The runs refused, in order. */
  synchronized List<Entry> refused() {
    return entries.stream().filter(e -> !e.accepted()).toList();
  }

  /** The latest accepted run of each job that has one, by job. */
  synchronized Map<String, Entry> latest() {
    Map<String, Entry> latest = new TreeMap<>();
    for (Entry e : entries) {
      if (e.accepted()) {
        latest.put(e.job(), e);
      }
    }
    return latest;
  }

  /** Each accepted run whose job and tick an earlier accepted run had already. */
  synchronized List<Entry> duplicateTicks() {
    Map<String, Entry> seen = new HashMap<>();
    List<Entry> duplicates = new ArrayList<>();
    for (Entry e : entries) {
      if (e.accepted() && seen.putIfAbsent(e.job() + "#" + e.tick(), e) != null) {
        duplicates.add(e);
      }
    }
    return duplicates;
  }

  /**
   * Each accepted run that follows an accepted run of another node for the same job under a token
   * no newer than that run's: two nodes ran the job under one lease, or the later under an older one.
   */
  synchronized List<Entry> overlaps() {
    Map<String, Entry> previous = new HashMap<>();
    List<Entry> overlaps = new ArrayList<>();
    for (Entry e : entries) {
      if (!e.accepted()) {
        continue;
      }
      Entry before = previous.put(e.job(), e);
      if (before != null && !before.node().equals(e.node()) && e.token() <= before.token()) {
        overlaps.add(e);
      }
    }
    return overlaps;
  }
}
