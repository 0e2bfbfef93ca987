package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ringmaster.OwnershipChange;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** {@link Incoming}: which peers a key is still coming in from, and for how long. */
class IncomingTest {
  private final HashRing before = HashRing.builder().virtualNodes(64).add(Member.of("a")).build();
  private final HashRing after = HashRing.builder().virtualNodes(64).add(Member.of("a")).add(Member.of("b")).build();
  private final OwnershipChange join = new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, before, after,
      RingDiff.compute(before, after, "b", 1));

  /** A key b owns after the join, and one a keeps. */
  private String key(String owner) {
    for (int i = 0; ; i++) {
      if (after.ownerOf("k" + i).id().equals(owner)) {
        return "k" + i;
      }
    }
  }

  /** The ring b's node published last: b joins a, published before its listeners hear of it. */
  private final AtomicReference<HashRing> published = new AtomicReference<>(after);

  @Test
  void aGainedKey_comesInFromItsPreviousOwner_untilTheChangeIsDone() {
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.arrived(join);
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
    assertEquals(List.of(), incoming.previousOwners(key("a")), "a key b did not gain");
    incoming.done(join);
    assertEquals(List.of(), incoming.previousOwners(key("b")));
  }

  /**
   * This peer's LEAVING change names the ring without it, which the node publishes only once it
   * has left: until then a key it owns is not coming in from anyone (it would read as coming in
   * from its successors, and each write here would ask them for their copies).
   */
  @Test
  void whileThisPeerLeaves_aKeyItStillOwns_comesInFromNoOne() {
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.arrived(join);
    incoming.done(join);
    HashRing without = after.without("b");
    incoming.arrived(new OwnershipChange(OwnershipChange.Reason.LEAVING, 2, 2, after, without,
        RingDiff.compute(after, without, "b", 1)));
    assertEquals(List.of(), incoming.previousOwners(key("b")), "published is still the ring with b");
    assertEquals(List.of(), incoming.previousOwners(key("a")));
  }

  @Test
  void aKeyInARingPublishedAndNotYetNoted_comesInFromItsOwnersInTheRingLastNoted() {
    published.set(HashRing.builder().virtualNodes(64).build());
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    assertEquals(List.of(), incoming.previousOwners(key("b")), "b is in no ring yet");
    published.set(after); // b's first ring: until its change is noted, its keys are where they were
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
    assertEquals(List.of(), incoming.previousOwners(key("a")), "a key b does not own");
    incoming.arrived(join);
    incoming.done(join);
    assertEquals(List.of(), incoming.previousOwners(key("b")), "noted and taken in");

    HashRing aLeft = HashRing.builder().virtualNodes(64).add(Member.of("b")).build();
    published.set(aLeft); // a left: b takes its keys, and has not heard of it yet
    assertEquals(List.of("a"), incoming.previousOwners(key("a")));
    assertEquals(List.of(), incoming.previousOwners(key("b")), "b owned it in the ring last noted");
    OwnershipChange leave = new OwnershipChange(OwnershipChange.Reason.VIEW, 2, 3, after, aLeft,
        RingDiff.compute(after, aLeft, "b", 1));
    incoming.arrived(leave);
    assertEquals(List.of("a"), incoming.previousOwners(key("a")), "noted: pending until done");
    incoming.done(leave);
    assertEquals(List.of(), incoming.previousOwners(key("a")));
  }

  /**
   * With two replicas, a key a leaver held comes in from its other owner too (the one a read can
   * still reach), while the leave is published and not yet noted.
   */
  @Test
  void aKeyOfALeaver_notYetNoted_comesInFromEveryOwnerItHad_theOneStayingIncluded() {
    HashRing three = HashRing.builder().virtualNodes(64).add(Member.of("a")).add(Member.of("b"))
        .add(Member.of("c")).build();
    HashRing aLeft = three.without("a");
    String key = null;
    for (int i = 0; key == null; i++) {
      if (three.owners("k" + i, 2).stream().map(Member::id).sorted().toList().equals(List.of("a", "c"))) {
        key = "k" + i;
      }
    }
    published.set(three);
    Incoming incoming = new Incoming("b", 2, position -> List.of(), published::get);
    OwnershipChange joined = new OwnershipChange(OwnershipChange.Reason.VIEW, 1, 2, three.without("b"), three,
        RingDiff.compute(three.without("b"), three, "b", 2));
    incoming.arrived(joined);
    incoming.done(joined);
    assertEquals(List.of(), incoming.previousOwners(key), "b does not own it");

    published.set(aLeft); // a left: b takes its place beside c
    assertEquals(List.of("a", "c"), incoming.previousOwners(key).stream().sorted().toList());

    // A key b owned before the leave and still owns is not coming in, from its co-owner or anyone.
    String kept = null;
    for (int i = 0; kept == null; i++) {
      List<String> ownersBefore = three.owners("k" + i, 2).stream().map(Member::id).sorted().toList();
      List<String> ownersAfter = aLeft.owners("k" + i, 2).stream().map(Member::id).sorted().toList();
      if (ownersBefore.equals(List.of("b", "c")) && ownersAfter.equals(List.of("b", "c"))) {
        kept = "k" + i;
      }
    }
    assertEquals(List.of(), incoming.previousOwners(kept), "owned by b before too");
  }

  /**
   * A first change from an empty ring (a peer that started alone, then was merged with a, say)
   * names no previous owners: a key it gained comes in from its owners in the ring without this
   * peer, where its data is, until the change is done.
   */
  @Test
  void aKeyGainedByAFirstChangeFromAnEmptyRing_comesInFromItsOwnersInTheRingWithoutThisPeer() {
    HashRing empty = HashRing.builder().virtualNodes(64).build();
    OwnershipChange first = new OwnershipChange(OwnershipChange.Reason.INITIAL, 0, 2, empty, after,
        RingDiff.compute(empty, after, "b", 1));
    assertEquals(List.of(), first.gained().get(0).sources(), "the change itself names none");
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.arrived(first);
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
    assertEquals(List.of(), incoming.previousOwners(key("a")), "a key b did not gain");
    incoming.done(first);
    assertEquals(List.of(), incoming.previousOwners(key("b")));
  }

  @Test
  void aChangeDoneBeforeItWasNotedAsArrived_leavesNothingPending() {
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.done(join); // a busy rebalancer took it up before the other listener ran
    incoming.arrived(join);
    assertEquals(0, incoming.pendingChanges());
    assertEquals(List.of(), incoming.previousOwners(key("b")));
    incoming.arrived(join); // published again (another change, say): noted this time
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
  }

  /**
   * Two changes in flight at once: each is done on its own. The one done names only itself, and a
   * change done before it arrived keeps only itself from being noted: another that arrives meanwhile
   * is pending.
   */
  @Test
  void twoChangesAtOnce_eachIsDoneOnItsOwn() {
    OwnershipChange next = new OwnershipChange(OwnershipChange.Reason.VIEW, 2, 3, before, after,
        RingDiff.compute(before, after, "b", 1));
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.arrived(join);
    incoming.arrived(next);
    assertEquals(2, incoming.pendingChanges());
    incoming.done(join);
    assertEquals(1, incoming.pendingChanges(), "the other change is still being taken in");
    assertEquals(List.of("a"), incoming.previousOwners(key("b")));
    incoming.done(next);
    assertEquals(0, incoming.pendingChanges());

    Incoming doneFirst = new Incoming("b", 1, position -> List.of(), published::get);
    doneFirst.done(join); // taken up and finished before it was noted
    doneFirst.arrived(next);
    assertEquals(1, doneFirst.pendingChanges(), "another change arriving is noted");
    doneFirst.arrived(join);
    assertEquals(1, doneFirst.pendingChanges(), "the change done first is not");
    doneFirst.done(next);
    assertEquals(0, doneFirst.pendingChanges());
  }

  @Test
  void aPullBeingRetried_namesItsSource_butNeverThisPeer() {
    Incoming incoming = new Incoming("b", 1, position -> List.of("c", "b"), published::get);
    incoming.arrived(join);
    incoming.done(join);
    assertEquals(List.of("c"), incoming.previousOwners(key("b")));
    incoming.arrived(join); // published again (another change, say)
    assertEquals(List.of("a", "c"), incoming.previousOwners(key("b")));
  }

  /**
   * A peer's purge keeps the tombstones of keys still coming in from their previous owners (the
   * pull, or a read asking them, would bring the deleted value back), and drops them once the
   * change is done; a tombstone of a key not coming in goes after its grace as any other.
   */
  @Test
  void thePeersPurge_keepsTheTombstonesOfKeysStillComingIn_untilTheirChangeIsDone() {
    Incoming incoming = new Incoming("b", 1, position -> List.of(), published::get);
    incoming.arrived(join);
    Store store = new Store();
    long now = 100_000_000L;
    Version old = new Version(now - 60_000_000L, "b"); // a minute before now
    store.merge(Entry.tombstone(key("b"), old));
    store.merge(Entry.tombstone(key("a"), old));
    Duration grace = Duration.ofSeconds(10);

    assertEquals(1, Peer.purgeTombstones(store, incoming, now, grace), "the tombstone of the key not coming in");
    assertEquals(true, store.get(key("b")).orElseThrow().deleted(), "the key coming in from a keeps its tombstone");
    assertEquals(Optional.empty(), store.get(key("a")));
    incoming.done(join);
    assertEquals(1, Peer.purgeTombstones(store, incoming, now, grace), "taken in: its grace is over");
    assertEquals(0, store.size());
  }
}
