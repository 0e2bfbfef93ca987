package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.jgroups.Address;
import org.jgroups.View;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.UUID;
import org.jgroups.util.Util;
import org.junit.jupiter.api.Test;

/**
 * {@link Admission}, the rule by which every member decides alone who of a view is in the ring:
 * as a pure function of the view, fed views of members with mixed parameters, repeated ids,
 * weights of 0 and token limits that some views pass. Which member computes it, and what it reported before, must not change who is
 * admitted, or members would disagree on the ring.
 */
class AdmissionTest {
  private static final long SEED = 0x5EED_AD01L;

  /** A node's metadata with 2 replicas, as {@link FedNode#meta} makes it, with the values given. */
  private static NodeMetadata meta(String id, double weight, int virtualNodes, String applicationVersion) {
    return new NodeMetadata(id, weight, "", HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION, virtualNodes, 2,
        applicationVersion, "");
  }

  @Test
  void of_isTheSameOnEveryMember_whateverItReportedBefore() {
    Random random = new Random(SEED);
    for (int trial = 0; trial < 500; trial++) {
      List<Address> members = new ArrayList<>();
      int n = 1 + random.nextInt(12);
      for (int i = 0; i < n; i++) {
        String id = "n" + random.nextInt(8); // ids repeat
        int virtualNodes = random.nextInt(5) == 0 ? 128 : 64; // some of other parameters
        String version = random.nextInt(7) == 0 ? "v2" : "";
        double weight = random.nextInt(4) == 0 ? 0 : 1 + random.nextInt(3);
        members.add(meta(id, weight, virtualNodes, version).newAddress());
      }
      if (random.nextBoolean()) {
        members.add(random.nextInt(members.size() + 1), UUID.randomUUID()); // a plain JGroups member
      }
      if (random.nextInt(4) == 0) { // a member whose metadata this build cannot read: refused, by its id
        ExtendedUUID unreadable = meta("u" + trial, 1, 64, "").newAddress();
        unreadable.remove("rm.w");
        members.add(1 + random.nextInt(members.size()), unreadable);
      }
      View view = View.create(members.get(0), 1 + trial, members.toArray(new Address[0]));
      NodeMetadata reference = RingmasterMembershipPolicy.firstRingmasterMember(view.getMembers()).orElseThrow();
      long limit = 64L * (1 + random.nextInt(20)); // some views past it

      Admission first = null;
      for (Address self : members) {
        Set<Address> reported = new HashSet<>();
        members.stream().filter(m -> random.nextBoolean()).forEach(reported::add); // each its own history
        Admission a = Admission.of(view, self, reference, reported, limit);
        if (first == null) {
          first = a;
        } else {
          String at = "trial " + trial + ", computed at " + self;
          assertEquals(first.addresses(), a.addresses(), at);
          assertEquals(first.refusedNow().stream().map(MembershipChange.Refusal::reason).toList(),
              a.refusedNow().stream().map(MembershipChange.Refusal::reason).toList(), at);
        }
        assertRules(view, reference, limit, a, self);
      }
    }
  }

  /** What every admission must satisfy: distinct ids, the reference's parameters, the token limit. */
  private static void assertRules(View view, NodeMetadata reference, long limit, Admission a, Address self) {
    long tokens = 0;
    for (var e : a.addresses().entrySet()) {
      NodeMetadata m = NodeMetadata.from(e.getValue()).orElseThrow();
      assertEquals(e.getKey(), m.id());
      assertEquals(List.of(), m.parameterDifferences(reference));
      tokens += Member.tokenCount(m.virtualNodes(), m.weight());
    }
    assertTrue(tokens <= limit, tokens + " tokens, over " + limit);
    List<Address> admittedInOrder = new ArrayList<>(a.addresses().values());
    List<Address> viewOrder = view.getMembers().stream().filter(admittedInOrder::contains).toList();
    assertEquals(viewOrder, admittedInOrder, "in view order");
    boolean selfIn = a.addresses().containsValue(self);
    boolean selfRefused = a.refusedNow().stream().anyMatch(MembershipChange.Refusal::local);
    assertEquals(selfRefused, a.own() != null, "its own refusal, said once");
    assertTrue(!(selfIn && selfRefused));
    for (MembershipChange.Refusal r : a.refused()) {
      assertTrue(a.refusedNow().contains(r), "news is a refusal of this view");
    }
    long ringmasterNodes = view.getMembers().stream().filter(NodeMetadata::isRingmasterNode).count();
    assertEquals(ringmasterNodes, a.addresses().size() + a.refusedNow().size(),
        "every Ringmaster node is admitted or refused; a plain JGroups member is neither");
  }

  /**
   * A refusal is news once while it lasts: a member admitted in between (the holder of its id
   * left) and refused again is news again; one that left and comes back refused is too.
   */
  @Test
  void of_aRefusalIsNewsAgain_afterTheMemberWasAdmitted_orLeft() {
    NodeMetadata a = meta("a", 1, 64, "");
    Address holder = a.newAddress();
    Address twin = a.newAddress();
    Address other = meta("b", 1, 64, "").newAddress();
    Set<Address> reported = new HashSet<>();
    assertEquals(1, Admission.of(View.create(holder, 1, holder, twin), twin, a, reported, HashRing.MAX_TOKENS)
        .refused().size());
    assertEquals(0, Admission.of(View.create(twin, 2, twin), twin, a, reported, HashRing.MAX_TOKENS)
        .refused().size(), "the holder left: admitted");
    holder = a.newAddress(); // a new process with the id, before the twin in view order
    assertEquals(1, Admission.of(View.create(holder, 3, holder, twin), twin, a, reported, HashRing.MAX_TOKENS)
        .refused().size(), "refused again: news again");
    Admission.of(View.create(holder, 4, holder, other), other, a, reported, HashRing.MAX_TOKENS);
    assertEquals(1, Admission.of(View.create(holder, 5, holder, other, twin), other, a, reported,
        HashRing.MAX_TOKENS).refused().size(), "left, and back refused: news again");
  }

  /**
   * A peer that announces an empty id (a foreign or broken one: no build of ours can): JGroups
   * reads the empty value back as none, and the member is refused as unreadable, under "?". Read as
   * a null id, it failed every view that held it, on every member, freezing every ring.
   */
  @Test
  void of_aPeerAnnouncingAnEmptyId_isRefusedUnderAQuestionMark_andTheOthersAdmitted() throws Exception {
    NodeMetadata a = meta("a", 1, 64, "");
    Address first = a.newAddress();
    ExtendedUUID sent = meta("x", 1, 64, "").newAddress();
    sent.put("rm.i", new byte[0]);
    ExtendedUUID odd = Util.streamableFromByteBuffer(
        ExtendedUUID.class, Util.streamableToByteBuffer(sent));
    assertNull(odd.get("rm.i"), "as JGroups reads an empty value: none");
    Admission admission = Admission.of(View.create(first, 1, first, odd), first, a, new HashSet<>(),
        HashRing.MAX_TOKENS);
    assertEquals(List.of(first), List.copyOf(admission.addresses().values()));
    assertEquals(List.of("?"), admission.refusedNow().stream().map(MembershipChange.Refusal::nodeId).toList());
    assertTrue(admission.refusedNow().get(0).reason().startsWith("? ("), admission.refusedNow().toString());
  }

  /**
   * A member with other ring parameters is refused naming the member whose parameters the ring
   * has: the first Ringmaster member of the view (not a plain JGroups member before it, nor a
   * later member), by id and whole JGroups UUID.
   */
  @Test
  void of_aMemberWithOtherParameters_isRefusedNamingTheFirstRingmasterMember() {
    NodeMetadata a = meta("a", 1, 64, "");
    Address plain = UUID.randomUUID();
    Address first = a.newAddress();
    Address second = meta("b", 1, 64, "").newAddress();
    Address other = meta("c", 1, 128, "").newAddress();
    View view = View.create(plain, 1, plain, first, second, other);
    Admission admission = Admission.of(view, second, a, new HashSet<>(), HashRing.MAX_TOKENS);
    assertEquals(List.of(first, second), List.copyOf(admission.addresses().values()));
    assertEquals(List.of("c"), admission.refusedNow().stream().map(MembershipChange.Refusal::nodeId).toList());
    String reason = admission.refusedNow().get(0).reason();
    assertTrue(reason.contains("differ from the cluster's, those of its first member a ("
        + ((UUID) first).toStringLong() + "): "), reason);
  }

  /**
   * A ring holds {@code tokenLimit} tokens, no fewer: a member that brings it to the limit exactly
   * is admitted, and the next one is refused, naming the count it would bring the ring to, the
   * limit, its own tokens and those of the members admitted before it.
   */
  @Test
  void of_aMemberFillingTheRingToTheTokenLimit_isAdmitted_andTheNextRefusedNamingTheCounts() {
    NodeMetadata a = meta("a", 1, 64, "");
    Address first = a.newAddress();
    Address second = meta("b", 2, 64, "").newAddress();
    Address third = meta("c", 0.5, 64, "").newAddress();
    View view = View.create(first, 1, first, second, third);
    Admission admission = Admission.of(view, third, a, new HashSet<>(), 3 * 64);
    assertEquals(List.of(first, second), List.copyOf(admission.addresses().values()),
        "64 and 128 tokens: the limit, not past it");
    assertEquals(RingmasterException.Reason.REFUSED, admission.own().kind());
    assertEquals(NodeMetadata.describe(third) + " would bring the ring to 224 tokens, more than the 192 a ring holds:"
        + " its weight 0.5 at virtualNodes 64 gives it 32, and the members admitted before it in the view have 192;"
        + " lower the weight of c, or virtualNodes on every member", admission.own().reason());
  }

  /**
   * A ring holds {@link HashRing#MAX_MEMBERS} members: a view of one Ringmaster member more, all
   * within the token limit, admits the first that many, in view order, and refuses the last,
   * naming the limit, where a ring of them all would fail to build on every member.
   */
  @Test
  void of_aMemberPastTheMostMembersARingHolds_isRefusedNamingTheLimit() {
    NodeMetadata reference = meta("m0", 1, 1, "");
    ExtendedUUID template = reference.newAddress();
    Address[] members = new Address[HashRing.MAX_MEMBERS + 1];
    for (int i = 0; i < members.length; i++) { // as newAddress() makes them, but without naming each in JGroups' cache
      members[i] = new ExtendedUUID(1, i).addContents(template).put("rm.i", ("m" + i).getBytes(StandardCharsets.UTF_8));
    }
    Address last = members[HashRing.MAX_MEMBERS];
    Admission admission = Admission.of(View.create(members[0], 1, members), last, reference, new HashSet<>(),
        HashRing.MAX_TOKENS);
    assertEquals(List.of("m" + HashRing.MAX_MEMBERS),
        admission.refusedNow().stream().map(MembershipChange.Refusal::nodeId).toList());
    assertEquals(RingmasterException.Reason.REFUSED, admission.own().kind());
    assertEquals(NodeMetadata.describe(last) + " would be member 65536 of the ring, which holds at most 65535",
        admission.own().reason());
    assertTrue(List.of(members).subList(0, HashRing.MAX_MEMBERS).equals(List.copyOf(admission.addresses().values())),
        "the first " + HashRing.MAX_MEMBERS + " admitted, in view order");
  }

  @Test
  void of_aSecondMemberWithAnId_isRefusedAsIdHeld_andNewsOnlyOnce() {
    NodeMetadata a = meta("a", 1, 64, "");
    Address first = a.newAddress();
    Address twin = a.newAddress();
    View view = View.create(first, 3, first, twin);
    Set<Address> reported = new HashSet<>();
    Admission once = Admission.of(view, twin, a, reported, HashRing.MAX_TOKENS);
    assertEquals(List.of(first), List.copyOf(once.addresses().values()));
    assertEquals(RingmasterException.Reason.ID_HELD, once.own().kind());
    assertEquals(1, once.refused().size());
    Admission again = Admission.of(view, twin, a, reported, HashRing.MAX_TOKENS);
    assertEquals(List.of(), again.refused(), "reported already: no news");
    assertEquals(1, again.refusedNow().size(), "still refused");
    assertNull(Admission.of(view, first, a, new HashSet<>(), HashRing.MAX_TOKENS).own());
  }

  /**
   * A node reports a refusal once while it lasts, and again once the refused member left and came
   * back refused (a partition that healed: the same address): its membership listeners hear it,
   * and stats' refusal count grows, each time. What it reported before a view is what that view's
   * admission says, not what earlier views said: a member that left is forgotten.
   */
  @Test
  void aNode_reportsARefusalAgain_afterTheRefusedMemberLeftAndCameBack() throws Exception {
    try (FedNode n = new FedNode(FedNode.meta("a"))) {
      Address b = FedNode.meta("b").newAddress();
      Address twin = FedNode.meta("b").newAddress(); // b's id, after b in view order: refused
      n.view(1, n.self);
      n.view(2, n.self, b, twin);
      assertEquals(List.of("b"), n.lastMembership().refused().stream().map(MembershipChange.Refusal::nodeId).toList(),
          "the twin's refusal, reported in view 2");
      n.view(3, n.self, b, twin);
      assertEquals(2, n.lastMembership().viewId(), "view 3 refuses the twin again: no news");
      n.view(4, n.self, b); // the twin is cut off
      assertEquals(2, n.lastMembership().viewId(), "the twin, never in the ring, leaves it unchanged");
      n.view(5, n.self, b, twin); // and back, at the same address

      MembershipChange back = n.lastMembership();
      assertEquals(5, back.viewId(), "the twin's return is heard");
      assertEquals(List.of("b"), back.refused().stream().map(MembershipChange.Refusal::nodeId).toList(),
          "refused again: news again");
      assertEquals(2, n.node.refusals.get(), "two refusals reported");
    }
  }
}
