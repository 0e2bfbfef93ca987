package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.OwnershipChange.Reason;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The values the API hands an application and that an application may build itself (for tests of
 * its listeners, say): an ownership or membership change, a divergence report, a failure's kind.
 * A missing field is refused at once, naming it, rather than failing later where it is read; a
 * membership change's lists are its own, so the lists it was built from may change afterwards.
 */
class PublicValuesTest {
  private static final HashRing EMPTY = HashRing.builder().virtualNodes(16).build();
  private static final HashRing A = EMPTY.withMembers(List.of(Member.of("a")));
  private static final HashRing AB = EMPTY.withMembers(List.of(Member.of("a"), Member.of("b")));

  private static void assertRefusesNull(String field, Executable build) {
    assertEquals(field, assertThrows(NullPointerException.class, build).getMessage());
  }

  @Test
  void ownershipChange_withAFieldNull_isRefused_namingTheField() {
    RingDiff join = RingDiff.compute(EMPTY, false, A, true, "a", 1);
    assertRefusesNull("reason", () -> new OwnershipChange(null, -1, 1, EMPTY, A, join, true));
    assertRefusesNull("previousRing", () -> new OwnershipChange(Reason.VIEW, -1, 1, null, A, join, true));
    assertRefusesNull("ring", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, null, join, true));
    assertRefusesNull("diff", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A, null, true));
    assertRefusesNull("reason", () -> new OwnershipChange(null, -1, 1, EMPTY, A, join));
    assertRefusesNull("previousRing", () -> new OwnershipChange(Reason.VIEW, -1, 1, null, A, join));
    assertRefusesNull("ring", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, null, join));
    assertRefusesNull("diff", () -> new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A, null));
  }

  /** Built without {@code inRing}, a change has its node in the ring exactly when the ring holds its id. */
  @Test
  void ownershipChange_builtWithoutInRing_isInRingOnlyWhenTheRingHoldsTheNode() {
    OwnershipChange joined = new OwnershipChange(Reason.VIEW, -1, 1, EMPTY, A,
        RingDiff.compute(EMPTY, false, A, true, "a", 1));
    assertTrue(joined.inRing(), joined::toString);
    HashRing onlyB = EMPTY.withMembers(List.of(Member.of("b")));
    OwnershipChange leaving = new OwnershipChange(Reason.LEAVING, 2, 2, AB, onlyB,
        RingDiff.compute(AB, true, onlyB, false, "a", 1));
    assertFalse(leaving.inRing(), leaving::toString);
    assertFalse(leaving.lost().isEmpty(), "a lost what b took over: " + leaving);
  }

  /**
   * A change's ranges and replica count are those of its diff: as c crashes out of {a, b, c, d}
   * with two replicas, a takes over as primary some ranges it held as c's backup.
   */
  @Test
  void ownershipChange_givesItsDiffsRangesAndReplicaCount() {
    HashRing before = EMPTY.withMembers(Stream.of("a", "b", "c", "d").map(Member::of).toList());
    HashRing after = before.without("c");
    RingDiff diff = RingDiff.compute(before, after, "a", 2);
    OwnershipChange crash = new OwnershipChange(Reason.VIEW, 1, 2, before, after, diff);
    assertFalse(diff.roleChanges().isEmpty(), "a is primary now where it was c's backup: " + diff);
    assertEquals(diff.roleChanges(), crash.roleChanges());
    assertEquals(diff.gained(), crash.gained());
    assertEquals(2, crash.replicas());
  }

  /**
   * With two replicas, as c crashes out of {a, b, c, d}: a key is among a's gained keys exactly when
   * a owns it now and did not before, filed under the gain whose sources are the key's owners
   * before; the sources still in the ring are those but c, in their order. As c leaves instead, a
   * key is among c's lost keys exactly when c owned it, under the loss whose destinations are the
   * key's owners now. String keys and their UTF-8 bytes are grouped alike.
   */
  @Test
  void ownershipChange_groupsKeysByItsRanges_andNamesTheSourcesStillInTheRing() {
    HashRing before = EMPTY.withMembers(List.of(Member.of("a"), Member.of("b"), Member.of("c"), Member.of("d")));
    HashRing after = before.without("c");
    List<String> keys = IntStream.range(0, 5_000).mapToObj(k -> "user:" + k).toList();
    List<byte[]> rawKeys = keys.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();

    OwnershipChange crash = new OwnershipChange(Reason.VIEW, 1, 2, before, after,
        RingDiff.compute(before, after, "a", 2));
    Map<RingDiff.Gained, List<String>> gained = crash.gainedKeys(keys);
    Map<String, RingDiff.Gained> gainOf = new HashMap<>();
    gained.forEach((gain, inIt) -> inIt.forEach(key -> gainOf.put(key, gain)));
    int fromC = 0;
    for (String key : keys) {
      boolean gain = after.owners(key, 2).contains(Member.of("a")) && !before.owners(key, 2).contains(Member.of("a"));
      assertEquals(gain, gainOf.containsKey(key), key);
      if (gain) {
        List<Member> sources = gainOf.get(key).sources();
        assertEquals(before.owners(key, 2), sources, key);
        List<Member> inRing = new ArrayList<>(sources);
        fromC += inRing.remove(Member.of("c")) ? 1 : 0;
        assertEquals(inRing, crash.sourcesInRing(gainOf.get(key)), key);
      }
    }
    assertTrue(fromC > 0, "some of a's gains were c's");
    assertEquals(gained.keySet().stream().toList(),
        crash.gained().stream().filter(gained::containsKey).toList(), "in the order of gained()");
    Map<RingDiff.Gained, List<String>> gainedFromBytes = new HashMap<>();
    crash.gainedKeys(rawKeys, HashRing::position).forEach((gain, inIt) ->
        gainedFromBytes.put(gain, inIt.stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList()));
    assertEquals(gained, gainedFromBytes);

    OwnershipChange leave = new OwnershipChange(Reason.LEAVING, 2, 2, before, after,
        RingDiff.compute(before, after, "c", 2));
    Map<RingDiff.Lost, List<String>> lost = leave.lostKeys(keys);
    Map<String, RingDiff.Lost> lossOf = new HashMap<>();
    lost.forEach((loss, inIt) -> inIt.forEach(key -> lossOf.put(key, loss)));
    for (String key : keys) {
      assertEquals(before.owners(key, 2).contains(Member.of("c")), lossOf.containsKey(key), key);
      if (lossOf.containsKey(key)) {
        assertEquals(after.owners(key, 2), lossOf.get(key).destinations(), key);
      }
    }
    Map<RingDiff.Lost, List<String>> lostFromBytes = new HashMap<>();
    leave.lostKeys(rawKeys, HashRing::position).forEach((loss, inIt) ->
        lostFromBytes.put(loss, inIt.stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList()));
    assertEquals(lost, lostFromBytes);
    assertEquals(Map.of(), leave.gainedKeys(keys), "c gained nothing");

    assertRefusesNull("keys", () -> crash.lostKeys(null));
    assertRefusesNull("keys", () -> crash.gainedKeys((List<String>) null, HashRing::position));
    assertRefusesNull("positionOf", () -> crash.gainedKeys(rawKeys, null));
    assertRefusesNull("gained", () -> crash.sourcesInRing(null));
  }

  /**
   * With two replicas, as c crashes out of {a, b, c, d, e}: the sources in the ring are the members
   * but c that held a range a gained, each once, in the order of the gains; a source's gains are
   * those it held, and its gained keys are the keys a gained that it owned before, so fetching from
   * every source in the ring fetches every gained key that some member still in the ring held.
   */
  @Test
  void ownershipChange_namesWhatToFetchFromEachSource() {
    HashRing before = EMPTY.withMembers(Stream.of("a", "b", "c", "d", "e").map(Member::of).toList());
    HashRing after = before.without("c");
    OwnershipChange crash = new OwnershipChange(Reason.VIEW, 1, 2, before, after,
        RingDiff.compute(before, after, "a", 2));
    List<String> keys = IntStream.range(0, 5_000).mapToObj(k -> "user:" + k).toList();

    List<Member> expectedSources = new ArrayList<>();
    crash.gained().forEach(gained -> gained.sources().stream()
        .filter(source -> !source.id().equals("c") && !expectedSources.contains(source))
        .forEach(expectedSources::add));
    assertEquals(expectedSources, crash.sourcesInRing());
    assertTrue(crash.sourcesInRing().size() >= 2, "a gained from more than one member: " + crash.sourcesInRing());
    assertFalse(crash.gainedFrom(Member.of("c")).isEmpty(), "c held some of a's gains, though it crashed");

    Set<String> fetched = new HashSet<>();
    for (Member source : List.of(Member.of("b"), Member.of("c"), Member.of("d"), Member.of("e"))) {
      assertEquals(crash.gained().stream().filter(gained -> gained.sources().contains(source)).toList(),
          crash.gainedFrom(source), source.id());
      Map<String, RingDiff.Gained> gainOf = new HashMap<>();
      crash.gainedKeys(source, keys).forEach((gain, inIt) -> inIt.forEach(key -> gainOf.put(key, gain)));
      for (String key : keys) {
        List<Member> owners = before.owners(key, 2);
        boolean fromIt = after.owners(key, 2).contains(Member.of("a")) && !owners.contains(Member.of("a"))
            && owners.contains(source);
        assertEquals(fromIt, gainOf.containsKey(key), source.id() + " " + key);
        if (fromIt) {
          assertTrue(gainOf.get(key).range().contains(key), key);
        }
      }
      if (!source.id().equals("c")) {
        fetched.addAll(gainOf.keySet());
      }
      List<byte[]> rawKeys = keys.stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();
      Map<RingDiff.Gained, List<String>> fromBytes = new HashMap<>();
      crash.gainedKeys(source, rawKeys, HashRing::position).forEach((gain, inIt) ->
          fromBytes.put(gain, inIt.stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList()));
      assertEquals(crash.gainedKeys(source, keys), fromBytes, source.id());
    }
    Set<String> heldInRing = new HashSet<>();
    crash.gainedKeys(keys).forEach((gain, inIt) -> {
      if (!crash.sourcesInRing(gain).isEmpty()) {
        heldInRing.addAll(inIt);
      }
    });
    assertEquals(heldInRing, fetched);

    assertRefusesNull("source", () -> crash.gainedFrom(null));
    assertRefusesNull("source", () -> crash.gainedKeys(null, keys));
    assertRefusesNull("keys", () -> crash.gainedKeys(Member.of("b"), (List<String>) null));
    assertRefusesNull("positionOf", () -> crash.gainedKeys(Member.of("b"), keys, null));
  }

  @Test
  void membershipChange_keepsCopiesOfItsLists_notTheListsItWasBuiltFrom() {
    Member a = Member.of("a");
    Member b = Member.of("b");
    List<Member> members = new ArrayList<>(List.of(a, b));
    List<Member> joined = new ArrayList<>(List.of(b));
    List<Member> left = new ArrayList<>(List.of(Member.of("c")));
    List<Member> side = new ArrayList<>(List.of(a));
    List<List<Member>> subgroups = new ArrayList<>(List.of(side));
    List<MembershipChange.Refusal> refused = new ArrayList<>(List.of(new MembershipChange.Refusal("d", false,
        "d differs")));
    MembershipChange change = new MembershipChange(3, 4, members, joined, left, subgroups, refused);
    MembershipChange same = new MembershipChange(3, 4, List.of(a, b), List.of(b), List.of(Member.of("c")),
        List.of(List.of(a)), List.of(new MembershipChange.Refusal("d", false, "d differs")));

    members.clear();
    joined.clear();
    left.clear();
    side.add(b);
    subgroups.add(List.of(b));
    refused.clear();

    assertEquals(same, change, "the change is as it was built");
    assertTrue(change.isMerge());
    assertFalse(new MembershipChange(4, 5, List.of(a), List.of(), List.of(b), List.of(), List.of()).isMerge(),
        "no subgroups: no merge");
    assertThrows(UnsupportedOperationException.class, () -> change.members().add(a));
    assertThrows(UnsupportedOperationException.class, () -> change.subgroups().get(0).add(b));
  }

  @Test
  void ringDivergence_withoutPeerIdOrKind_isRefused_namingTheField() {
    assertRefusesNull("peerId", () -> new RingDivergence(3, null, 1, 2, RingDivergence.Kind.CHECKSUM));
    assertRefusesNull("kind", () -> new RingDivergence(3, "b", 1, 2, null));
  }

  @Test
  void ringmasterException_withoutAReason_isRefused_andOtherwiseKeepsItsMessageAndCause() {
    assertRefusesNull("reason", () -> new RingmasterException(null, "no ring within 30 s"));
    assertRefusesNull("reason", () -> new RingmasterException(null, "no ring within 30 s", new Error()));
    Error cause = new Error("the stack's");
    RingmasterException e = new RingmasterException(RingmasterException.Reason.STACK, "the stack failed", cause);
    assertEquals(RingmasterException.Reason.STACK, e.reason());
    assertEquals("the stack failed", e.getMessage());
    assertSame(cause, e.getCause());
  }
}
