package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jgroups.Address;
import org.jgroups.View;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A node's first view, fed straight to its view handling: the ring before that view comes from an
 * old member's message, so a member that joined in the same view is never named as a source; old
 * members send that message to the newcomers. And the views around a rejoin (a new address).
 */
class RingBeforeJoinTest {
  private static final NodeMetadata A = FedNode.meta("a");
  private static final NodeMetadata B = FedNode.meta("b");
  private static final NodeMetadata C = FedNode.meta("c");
  private static final NodeMetadata D = FedNode.meta("d");
  private static final NodeMetadata E = FedNode.meta("e");

  @Test
  void newcomer_toldTheRingBefore_gainsOnlyFromItsMembers() throws Exception {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a); // before view 5: a alone
      node.install(View.create(a, 5, a, c, b)); // c joins with b
      OwnershipChange first = node.ownership.get(0);
      HashRing before = ring(A);
      assertEquals(before.checksum(), first.previousRing().checksum());
      TestCluster.assertGainsFrom(before, 2, first);
    }
  }

  /**
   * An account that goes in just after the view thread published the first ring and forgot the
   * accounts (between ringBeforeArrived's check that the node has no ring and the hand-over) is
   * dropped at once, not kept until the next view. The window is opened without a seam: the view's
   * creator is a UUID whose bits, read to key the account after that check, first install view 0.
   */
  @Test
  void anAccountGoingInJustAfterTheFirstRingForgotTheOthers_isDroppedAtOnce() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      AtomicBoolean once = new AtomicBoolean();
      UUID creator = new UUID(((UUID) a).getMostSignificantBits(), ((UUID) a).getLeastSignificantBits()) {
        @Override
        public long getMostSignificantBits() {
          if (once.compareAndSet(false, true)) { // keying the account, after the first check
            try {
              node.install(View.create(b, 0, b)); // the first ring is published, the accounts forgotten
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          }
          return super.getMostSignificantBits();
        }
      };
      node.node.ringBeforeArrived(3, creator, List.of(A.member()), a);
      assertTrue(once.get(), "the first ring came in between the check and the hand-over");
      assertEquals(0, node.node.state().viewId());
      assertEquals(0, node.node.ringsBeforeKept(), "the account that went in after the forget is dropped at once");
    }
  }

  /** Once a node has its first ring, accounts of the ring before a view are not kept: none would be read. */
  @Test
  void accountsArrivingAfterTheFirstRing_areNotKept() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a);
      node.node.ringBeforeArrived(9, (UUID) a, List.of(A.member()), a); // for a later view: kept until the first ring
      assertEquals(2, node.node.ringsBeforeKept());
      node.install(View.create(a, 5, a, b));
      assertEquals(0, node.node.ringsBeforeKept(), "the first ring is installed: none will be read");
      node.node.ringBeforeArrived(Long.MAX_VALUE, (UUID) a, List.of(A.member()), a);
      assertEquals(0, node.node.ringsBeforeKept(), "one for a view far ahead would stay for good");
    }
  }

  /**
   * A node whose first view is view 0 (it found no cluster and founded one: JGroups numbers a
   * founder's first view 0) forgets every account that came before it, those for later views too
   * (from a cluster whose view it was in before its join gave up, say): it has its ring, and none
   * will be read. Only a node with no ring keeps the accounts of later views.
   */
  @Test
  void founder_firstViewZero_forgetsEveryAccount_thoseOfLaterViewsToo() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(3, (UUID) a, List.of(A.member()), a); // its join into a's view 3 gave up
      assertEquals(1, node.node.ringsBeforeKept(), "kept while the node has no ring");
      node.install(View.create(b, 0, b)); // alone, its own cluster
      assertEquals(0, node.node.state().viewId(), "view 0 installed");
      assertTrue(node.node.state().localInRing(), "with b in its ring");
      assertEquals(0, node.node.ringsBeforeKept(), "the first ring is installed: the account for view 3 is dropped");
    }
  }

  /**
   * Accounts from an address outside the view and from this node's own address are not taken, and
   * each is logged at WARNING naming the address it came from and the view; a member's account counts.
   */
  @Test
  void newcomer_answerFromOutsideTheViewOrFromItself_isIgnored_andAMembersAnswerCounts() throws Exception {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    Address outside = D.newAddress();
    View view = View.create(a, 5, a, c, b); // c joins with b
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("not another member of that view"));
         FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      // Two accounts that would make another ring: from an address outside view 5, and one in b's name.
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member(), D.member()), outside);
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member(), E.member()), b);
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a);
      node.install(view);
      OwnershipChange first = node.ownership.get(0);
      assertEquals(ring(A).checksum(), first.previousRing().checksum());
      TestCluster.assertGainsFrom(ring(A), 2, first);
      assertEquals(List.of(Level.WARNING, Level.WARNING), log.levels(), "one WARNING for each account ignored");
      List<LogRecord> records = log.records();
      assertEquals(List.of("b", view.getViewId(), outside), List.of(records.get(0).getParameters()),
          "the first names the address outside the view");
      assertEquals(List.of("b", view.getViewId(), b), List.of(records.get(1).getParameters()),
          "the second names this node's own address");
    }
  }

  /**
   * An account from a member of the view whose members make no ring (two with one id: a sender's
   * bug, or not a Ringmaster message) is logged at WARNING with the ring's error and naming its
   * sender, and the next account counts; with no other account, the ring of the view without this
   * node stands in once the wait is over.
   */
  @Test
  void newcomer_anAccountWhoseMembersMakeNoRing_isLoggedWithTheError_andTheNextAccountOrTheStandInCounts()
      throws Exception {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    List<Member> twoWithOneId = List.of(A.member(), new Member("a", 2.0, ""));
    View view = View.create(a, 5, a, c, b); // c joins with b
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("make no ring"));
         FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, twoWithOneId, c);
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a);
      node.install(view);
      assertEquals(ring(A).checksum(), node.ownership.get(0).previousRing().checksum(), "a's account counts");
      assertEquals(List.of(Level.WARNING), log.levels(), "one WARNING, for c's account");
      LogRecord record = log.records().get(0);
      assertEquals("b: the members the ring had before view " + view.getViewId() + ", as " + c + " told them,"
          + " make no ring", record.getMessage());
      assertInstanceOf(IllegalArgumentException.class, record.getThrown(), "with the ring's error");
      assertTrue(record.getThrown().getMessage().contains("duplicate member id"), record.getThrown().getMessage());
    }
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("make no ring"));
         FedNode node = new FedNode(B, b, Duration.ofMillis(300))) {
      node.node.ringBeforeArrived(5, (UUID) a, twoWithOneId, c);
      node.install(view);
      assertEquals(ring(A, C).checksum(), node.ownership.get(0).previousRing().checksum(),
          "no account made a ring: the view's ring without b stands in");
      assertEquals(List.of(Level.WARNING), log.levels(), "c's account is logged when it is the only one too");
    }
  }

  /**
   * A member the account names as gone gracefully (it said it was leaving, and left in this view)
   * is not in the ring before: it handed its data to the ring without it. One that left without a
   * word stays in, so that the newcomer sees no member of the ring holds what it held; and so does
   * one named gone whose id the view's ring has (a process started again under it, in this view).
   */
  @Test
  void firstView_leavesOutTheMembersThatLeftGracefully_only() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address c = C.newAddress();
    RingsBefore rings = new RingsBefore("b", Duration.ofMinutes(5));
    rings.arrived(5, (UUID) a, List.of(A.member(), D.member(), E.member()), List.of("d"), a);
    assertEquals(ring(A, E).checksum(), rings.forFirstView(View.create(a, 5, a, b), ring(A, B), 2, b).checksum(),
        "d left gracefully, e did not say so");
    rings.arrived(6, (UUID) a, List.of(A.member(), C.member()), List.of("c"), a);
    assertEquals(ring(A, C).checksum(), rings.forFirstView(View.create(a, 6, a, c, b), ring(A, B, C), 3, b).checksum(),
        "a c is in the view's ring again");
    rings.arrived(7, (UUID) a, List.of(A.member(), D.member()), a); // as an earlier build sends it
    assertEquals(ring(A, D).checksum(), rings.forFirstView(View.create(a, 7, a, b), ring(A, B), 2, b).checksum());
  }

  /**
   * A newcomer's first view on an interrupted thread (the node is closing) does not wait, nor take
   * an account that is there: the ring of the view without this node stands in at once, and the
   * thread stays interrupted, for whoever handles the interrupt after it.
   */
  @Test
  void firstView_onAnInterruptedThread_returnsTheStandIn_andKeepsTheInterrupt() {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    RingsBefore rings = new RingsBefore("b", Duration.ofMinutes(5));
    rings.arrived(5, (UUID) a, List.of(A.member()), a);
    HashRing before;
    boolean stillInterrupted;
    Thread.currentThread().interrupt();
    try {
      before = rings.forFirstView(View.create(a, 5, a, c, b), ring(A, B, C), 3, b);
    } finally {
      stillInterrupted = Thread.interrupted(); // and clears it, for the tests after this one
    }
    assertNotNull(before, "a ring, not null");
    assertTrue(stillInterrupted, "the interrupt is kept");
    assertEquals(ring(A, C).checksum(), before.checksum(), "the view's ring without b, not a's account");
    assertEquals(0, rings.kept(), "the view's accounts are dropped");
  }

  /**
   * Accounts for more views than are kept (16, RingsBefore.MAX_VIEWS) before any is asked for: the
   * first 16 views' are kept, a later view's is dropped (one a member made up for each view number
   * must not grow the node's memory without bound).
   */
  @Test
  void accountsForMoreViewsThanAreKept_keepTheFirstSixteenViews_andDropTheRest() {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    RingsBefore rings = new RingsBefore("b", Duration.ofMillis(300));
    for (long viewId = 1; viewId <= 20; viewId++) {
      rings.arrived(viewId, (UUID) a, List.of(A.member()), a);
      assertEquals(Math.min(viewId, 16), rings.kept(), "kept after the account for view " + viewId);
    }
    assertEquals(ring(A).checksum(), rings.forFirstView(View.create(a, 16, a, c, b), ring(A, B, C), 3, b).checksum(),
        "view 16's account is kept");
    assertEquals(ring(A, C).checksum(), rings.forFirstView(View.create(a, 17, a, c, b), ring(A, B, C), 3, b).checksum(),
        "view 17's was dropped: the stand-in after the wait");
  }

  /**
   * A view handled by a node that has no ring yet forgets the accounts of that view and of earlier
   * ones, which no view will read, and keeps those of later views, which its first view may read.
   */
  @Test
  void forget_withoutARing_dropsTheAccountsOfThatViewAndEarlier_andKeepsLaterOnes() {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    RingsBefore rings = new RingsBefore("b", Duration.ofMillis(300));
    for (long viewId = 4; viewId <= 6; viewId++) {
      rings.arrived(viewId, (UUID) a, List.of(A.member()), a);
    }
    rings.forget(5, false);
    assertEquals(1, rings.kept(), "views 4 and 5 forgotten");
    assertEquals(ring(A).checksum(), rings.forFirstView(View.create(a, 6, a, c, b), ring(A, B, C), 3, b).checksum(),
        "view 6's account is kept, and read");
  }

  /**
   * An account from a member of the view whose members would make a ring of more tokens than any
   * ring before this view could have had (a member that made it up): ignored with a WARNING, not
   * built (gigabytes, for a message of a few hundred bytes), and a member's true account counts.
   */
  @Test
  void newcomer_anAccountWithFarMoreTokensThanARingBeforeCouldHave_isIgnored() throws Exception {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    double heavy = (double) (RingsBefore.MAX_TOKENS / 2) / 64; // 2^21 tokens each, at 64 a unit of weight
    List<Member> madeUp = new ArrayList<>(List.of(A.member()));
    for (int i = 0; i < 3; i++) {
      madeUp.add(new Member("made-up-" + i, heavy, ""));
    }
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("ignored an account of the ring before"));
         FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, madeUp, c);
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a);
      node.install(View.create(a, 5, a, c, b)); // c joins with b
      assertEquals(ring(A).checksum(), node.ownership.get(0).previousRing().checksum());
      assertEquals(1, log.records().size());
      assertEquals(3 * (RingsBefore.MAX_TOKENS / 2) + 64, log.records().get(0).getParameters()[3]);
    }
    // A true account of a large member that left with the join: far more than four times the view's
    // small ring, within the bound, so built.
    Member gone = new Member("gone", heavy / 8, ""); // 2^18 tokens
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("ignored an account of the ring before"));
         FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member(), gone), a);
      node.install(View.create(a, 5, a, c, b));
      assertEquals(HashRing.builder().virtualNodes(64).add(A.member()).add(gone).build().checksum(),
          node.ownership.get(0).previousRing().checksum());
      assertEquals(List.of(), log.records());
    }
  }

  /**
   * The bound on an account's tokens is four times the view's ring once that is more than
   * {@link RingsBefore#MAX_TOKENS}: a view whose ring has just over a quarter of it (a large member
   * that stays) takes an account of exactly four times its ring, which is built, not ignored.
   */
  @Test
  void newcomer_anAccountOfExactlyFourTimesALargeViewsRing_isBuilt() {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    Member large = new Member("a", (double) (RingsBefore.MAX_TOKENS / 4) / 64, ""); // 2^20 tokens
    HashRing viewRing = HashRing.builder().virtualNodes(64).add(large).add(B.member()).add(C.member()).build();
    long bound = 4L * viewRing.tokenCount();
    assertTrue(bound > RingsBefore.MAX_TOKENS, "four times the view's ring is the bound");
    Member gone = new Member("gone", (double) (bound - RingsBefore.MAX_TOKENS / 4) / 64, "");
    RingsBefore rings = new RingsBefore("b", Duration.ofSeconds(1));
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("ignored an account of the ring before"))) {
      rings.arrived(5, (UUID) a, List.of(large, gone), a);
      HashRing before = rings.forFirstView(View.create(a, 5, a, c, b), viewRing, 3, b);
      assertEquals(List.of(), log.records());
      assertEquals(bound, before.tokenCount(), "the account's ring, at the bound");
      assertEquals(List.of("a", "gone"), before.members().stream().map(Member::id).toList());
    }
  }

  @Test
  void newcomer_answerForAnotherView_isIgnored_andTheRingWithoutItStandsInAfterTheWait() throws Exception {
    Address a = A.newAddress();
    Address c = C.newAddress();
    Address b = B.newAddress();
    try (NodeLog log = new NodeLog(r -> r.getMessage().contains("which members the ring had before it"));
         FedNode node = new FedNode(B, b, Duration.ofMillis(300))) {
      node.node.ringBeforeArrived(5, (UUID) c, List.of(A.member()), c); // view 5 of another creator
      UUID creator = (UUID) a;
      // and of creators whose UUIDs differ from a's in only one half
      node.node.ringBeforeArrived(5, new UUID(creator.getMostSignificantBits(), ~creator.getLeastSignificantBits()),
          List.of(A.member()), c);
      node.node.ringBeforeArrived(5, new UUID(~creator.getMostSignificantBits(), creator.getLeastSignificantBits()),
          List.of(A.member()), c);
      node.node.ringBeforeArrived(4, (UUID) a, List.of(A.member()), a); // an earlier view
      long started = System.nanoTime();
      node.install(View.create(a, 5, a, c, b));
      assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(300), "waited for an answer");
      // The wait ended for want of an answer, not at once: the WARNING says so, with the wait.
      assertEquals(1, log.records().size());
      assertEquals("300", log.records().get(0).getParameters()[1]);
      assertEquals(ring(A, C).checksum(), node.ownership.get(0).previousRing().checksum());
    }
  }

  @Test
  void newcomer_alone_doesNotWait() throws Exception {
    Address b = B.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofMinutes(5))) {
      node.install(View.create(b, 1, b));
      assertEquals(0, node.ownership.get(0).previousRing().tokenCount());
    }
  }

  @Test
  void oldMembers_firstThreeInViewOrder_tellEachNewcomerTheRingBefore() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address c = C.newAddress();
    Address d = D.newAddress();
    Address e = E.newAddress();
    View before = View.create(a, 7, a, b, c, d);
    View after = View.create(a, 8, a, b, c, d, e);
    for (Address self : List.of(a, b, c, d)) {
      NodeMetadata meta = NodeMetadata.from(self).orElseThrow();
      try (FedNode node = new FedNode(meta, self, Duration.ofSeconds(10))) {
        List<String> sent = new CopyOnWriteArrayList<>();
        node.node.setRingBeforeSender((viewId, creator, members, gone, newcomers) -> sent.add(viewId + " " + creator
            + " " + members.stream().map(Member::id).toList() + " " + newcomers));
        node.node.ringBeforeArrived(7, (UUID) a, List.of(A.member()), self.equals(a) ? b : a); // answered at once
        node.install(before);
        node.install(after);
        List<String> expected = self.equals(d) ? List.of() : List.of("8 " + a + " [a, b, c, d] " + List.of(e));
        assertEquals(expected, sent, "sent by " + meta.id());
      }
    }
  }

  /**
   * An old member names to the newcomers the members of the ring before that said their hand-off
   * was done and left in the view: not one that only said it was leaving, nor one that left without
   * a word, nor one outside its view that claims either. Those gone from the view are forgotten once
   * it is handled; one that said it is leaving and stays is kept.
   */
  @Test
  void oldMember_namesToTheNewcomers_theMembersThatSaidTheirHandOffWasDone_andLeft() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address c = C.newAddress();
    Address d = D.newAddress();
    Address e = E.newAddress();
    try (FedNode node = new FedNode(A, a, Duration.ofSeconds(10))) {
      List<String> sent = accountsSent(node);
      node.install(View.create(a, 1, a));
      node.install(View.create(a, 2, a, b, c, d)); // told b, c and d: no one left
      assertTrue(sent.get(0).startsWith("2 [a] gone [] to "), sent.toString());
      node.node.leavingArrived(b, true);
      node.node.leavingArrived(c, false);
      node.node.leavingArrived(d, false);
      node.node.leavingArrived(e, true); // not in the view
      node.node.leavingArrived(a, true); // itself
      assertEquals(Set.of(b, c, d), node.node.leavingPeers());
      assertEquals(Set.of(b), node.node.handedOffPeers());
      node.install(View.create(a, 3, a, d, e)); // b and c left, b with its hand-off done; d stays
      assertEquals("3 [a, b, c, d] gone [b] to " + List.of(e), sent.get(sent.size() - 1));
      assertEquals(Set.of(d), node.node.leavingPeers(), "b and c forgotten once gone");
      assertEquals(Set.of(), node.node.handedOffPeers());
    }
  }

  /** Records each account of the ring before that the node sends: "view [members] gone [ids] to [newcomers]". */
  private static List<String> accountsSent(FedNode node) {
    List<String> sent = new CopyOnWriteArrayList<>();
    node.node.setRingBeforeSender((viewId, creator, members, gone, newcomers) -> sent.add(viewId + " "
        + members.stream().map(Member::id).toList() + " gone " + gone + " to " + newcomers));
    return sent;
  }

  /**
   * A newcomer told, while its first view waits for the ring before it, that a member of that view
   * is leaving and has handed its data off keeps the news: its LEAVING change hands that member
   * nothing, and when the member leaves in a view that brings in another newcomer, it names the
   * member to that newcomer as gone gracefully.
   */
  @Test
  void newcomer_toldOfALeaveBeforeItsFirstRing_keepsIt_andPassesItOn() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address c = C.newAddress();
    Address d = D.newAddress();
    try (FedNode node = new FedNode(A, a, Duration.ofSeconds(10))) {
      List<String> sent = accountsSent(node);
      node.node.onView(View.create(b, 5, b, c, a)); // a joins b and c: its view thread waits for an account
      node.node.leavingArrived(c, true);
      assertEquals(-1, node.node.state().viewId(), "no ring yet");
      node.node.ringBeforeArrived(5, (UUID) b, List.of(B.member(), C.member()), b);
      node.installed();
      assertEquals(Set.of(c), node.node.leavingPeers(), "kept once the first ring is in");
      assertEquals(Set.of(c), node.node.handedOffPeers());

      node.install(View.create(b, 6, b, a, d)); // c left, d joined
      assertEquals("6 [a, b, c] gone [c] to " + List.of(d), sent.get(sent.size() - 1));
      assertEquals(Set.of(), node.node.handedOffPeers(), "c forgotten once gone");
    }
    try (FedNode node = new FedNode(A, a, Duration.ofSeconds(10))) {
      node.node.onView(View.create(b, 5, b, c, a));
      node.node.leavingArrived(c, false);
      node.node.ringBeforeArrived(5, (UUID) b, List.of(B.member(), C.member()), b);
      node.installed();
      node.node.announceLeaving();
      OwnershipChange leaving = node.lastOwnership();
      assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
      assertEquals(List.of("b"), leaving.ring().members().stream().map(Member::id).toList(),
          "c said it was leaving");
    }
  }

  /**
   * A member that skipped a view (a leaving coordinator's last view came after its successor's
   * next one) had another ring before this view than the others: it does not answer, so a newcomer
   * is never told of a member that has left.
   */
  @Test
  void oldMember_thatSkippedTheViewBefore_tellsNobody() throws Exception {
    Address c = C.newAddress();
    Address d = D.newAddress();
    Address b = B.newAddress();
    Address e = E.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      List<String> sent = new CopyOnWriteArrayList<>();
      node.node.setRingBeforeSender((viewId, creator, members, gone, newcomers) -> sent.add(viewId + " "
          + members.stream().map(Member::id).toList()));
      node.node.ringBeforeArrived(5, (UUID) c, List.of(C.member(), D.member()), c);
      node.install(View.create(c, 5, c, d, b)); // b joins
      node.install(View.create(d, 7, d, b, e)); // view 6 (c left: d, b) never reached b; e joins in 7
      assertEquals(List.of(), sent, "b's ring before view 7 still has c");
      node.install(View.create(d, 8, d, b, e, A.newAddress())); // its last view is 7: it tells again
      assertEquals(List.of("8 [b, d, e]"), sent);
    }
  }

  @Test
  void oldMember_tellsTheNewcomers_beforeItsListenersRun_evenOneThatHoldsTheViewThread() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address e = E.newAddress();
    try (FedNode node = new FedNode(A, a, Duration.ofSeconds(10))) {
      CountDownLatch told = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      node.node.setRingBeforeSender((viewId, creator, members, gone, newcomers) -> told.countDown());
      // A listener on a same-thread executor, handing data off for as long as it takes.
      node.node.addOwnershipListener(new SerialDelivery<OwnershipChange>("slow", change -> {
        if (change.viewId() == 8) {
          try {
            release.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
          }
        }
      }, Runnable::run, this, () -> { }));
      node.node.ringBeforeArrived(7, (UUID) a, List.of(A.member()), b); // its first view, answered at once
      node.install(View.create(a, 7, a, b));
      node.node.onView(View.create(a, 8, a, b, e)); // e waits for the ring before view 8
      try {
        assertTrue(told.await(10, TimeUnit.SECONDS), "told while the listener still holds the view thread");
      } finally {
        release.countDown();
      }
      node.install(View.create(a, 9, a, b, e));
    }
  }

  /**
   * A view queued before a rejoin (it lists the old address only) is skipped, said at DEBUG, and
   * tells the listeners nothing; the rejoin's first view compares with the last ring installed.
   */
  @Test
  void rejoin_viewQueuedUnderTheOldAddress_isSkipped_andTheNewFirstViewComparesWithTheLastRing() throws Exception {
    Address a = A.newAddress();
    Address b = B.newAddress();
    Address c = C.newAddress();
    try (FedNode node = new FedNode(B, b, Duration.ofSeconds(10))) {
      node.node.ringBeforeArrived(5, (UUID) a, List.of(A.member()), a);
      node.install(View.create(a, 5, a, b));
      int changes = node.ownership.size();
      Address rejoined = B.newAddress(); // what the address generator does when the channel connects again
      node.node.setLocalAddress(rejoined);
      View stale = View.create(a, 6, a, b, c); // queued before the rejoin: lists the old address only
      try (NodeLog log = new NodeLog(r -> String.valueOf(r.getMessage())
          .contains("is from before this node rejoined"))) {
        node.install(stale);
        assertEquals(List.of("b: view " + stale.getViewId() + " is from before this node rejoined; skipped"),
            log.messages(), "the skip is said, at DEBUG");
        assertEquals(List.of(Level.FINE), log.levels());
      }
      assertEquals(5, node.node.state().viewId(), "the stale view is not installed");
      assertEquals(changes, node.ownership.size(), "and tells the listeners nothing (it would say b lost all)");
      node.install(View.create(a, 7, a, c, rejoined));
      assertTrue(node.node.state().localInRing());
      OwnershipChange change = node.ownership.get(node.ownership.size() - 1);
      assertEquals(5, change.previousViewId());
      assertEquals(ring(A, B).checksum(), change.previousRing().checksum(), "from the ring it had, not from nothing");
      assertEquals(List.of(), change.gained(), "c joined: b only loses");
      assertTrue(!change.lost().isEmpty());
    }
  }

  private static HashRing ring(NodeMetadata... members) {
    List<Member> list = new ArrayList<>();
    for (NodeMetadata m : members) {
      list.add(m.member());
    }
    return HashRing.builder().virtualNodes(64).addAll(list).build();
  }
}
