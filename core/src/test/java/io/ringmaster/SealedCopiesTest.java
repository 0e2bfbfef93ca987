package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import javax.crypto.spec.SecretKeySpec;
import org.jgroups.Address;
import org.jgroups.EmptyMessage;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.ViewId;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Which sealed messages {@link SharedSecretEncrypt} takes, by their seal numbers: each number of a
 * series once, however the series is reordered within the window; a copy never, nor a number
 * below a series' first; the four series of a sender apart; and the senders that left, for as
 * long as they are remembered.
 */
class SealedCopiesTest {
  private static final int W = SealedCopies.WINDOW;

  /**
   * A series delivered out of order after its first number (each at most half a window from its
   * place), with copies of random earlier numbers mixed in: every number taken exactly once, every
   * copy dropped.
   */
  @Test
  void reorderedSeriesWithCopies_eachNumberTakenOnce() {
    Random random = new Random(20261203);
    for (int trial = 0; trial < 200; trial++) {
      SealedCopies copies = new SealedCopies(16);
      Address sender = UUID.randomUUID();
      long first = random.nextLong() >>> 2; // anywhere a series may start
      int n = 1 + random.nextInt(5 * W);
      List<Long> order = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        order.add(first + i);
      }
      int block = 1 + random.nextInt(W / 2);
      for (int from = 1; from < n; from += block) {
        Collections.shuffle(order.subList(from, Math.min(n, from + block)), random);
      }
      Set<Long> taken = new HashSet<>();
      for (long seal : order) {
        assertTrue(copies.admit(sender, false, false, seal), "trial " + trial + ": " + seal + " taken the first time");
        taken.add(seal);
        long earlier = first + random.nextInt((int) (seal - first) + 1);
        if (taken.contains(earlier)) {
          assertFalse(copies.admit(sender, false, false, earlier), "trial " + trial + ": a copy of " + earlier);
        }
      }
    }
  }

  @Test
  void aNumberAWindowBelowTheHighest_isDropped_oneLessIsTakenOnce() {
    SealedCopies copies = new SealedCopies(16);
    Address sender = UUID.randomUUID();
    long first = 5_000_000L;
    long high = first + W + 5;
    assertTrue(copies.admit(sender, true, false, first));
    assertTrue(copies.admit(sender, true, false, high), "ahead, leaving numbers on their way");
    assertFalse(copies.admit(sender, true, false, high - W), "a window below: too late to tell from a copy");
    assertTrue(copies.admit(sender, true, false, high - W + 1), "just inside the window, never taken");
    assertFalse(copies.admit(sender, true, false, high - W + 1), "its copy");
    assertTrue(copies.admit(sender, true, false, high + 3 * W), "a jump ahead");
    assertFalse(copies.admit(sender, true, false, high), "what was taken before the jump is now far below");
    assertTrue(copies.admit(sender, true, false, high + 3 * W - 1), "numbers skipped by the jump are free");
  }

  /**
   * Every joiner heard from before its view is first counted among the strangers, and leaves a
   * stale entry in their queue once its view comes: swept once they pile up, or they would grow by
   * one a join, for as long as the node runs.
   */
  @Test
  void joinersHeardBeforeTheirView_leaveNoPileOfStaleEntries() {
    SealedCopies copies = new SealedCopies(16);
    Address member = UUID.randomUUID();
    copies.retain(List.of(member));
    for (int join = 0; join < 10_000; join++) {
      Address joiner = UUID.randomUUID();
      assertTrue(copies.admit(joiner, false, false, 1), "heard before its view: a stranger");
      copies.retain(List.of(member, joiner)); // its view; the joiner before it has left
    }
    assertTrue(copies.outsideEntries() <= 2 * (16 + 1) + 64, copies.outsideEntries() + " entries");
    assertTrue(copies.senders() <= 2 + 16 + 1, copies.senders() + " senders");
  }

  /**
   * A series that starts again far ahead (a member back after a partition under the same address,
   * its numbers from the clock again): the window is cleared at once, not a number at a time,
   * which would hold a JGroups receive thread, and the series' lock, for hours. The bound below is
   * no measure of speed: the work is a few microseconds, and one number at a time takes hours.
   */
  @Test
  void aJumpFarAhead_clearsTheWindowAtOnce() {
    SealedCopies copies = new SealedCopies(16);
    Address sender = UUID.randomUUID();
    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
      assertTrue(copies.admit(sender, false, false, 7));
      assertTrue(copies.admit(sender, false, false, 1L << 40), "far ahead: new");
      assertFalse(copies.admit(sender, false, false, 1L << 40), "its copy");
      assertTrue(copies.admit(sender, false, false, (1L << 40) - 1), "just below it: never taken");
      assertFalse(copies.admit(sender, false, false, 7), "what was taken before the jump is far below");
    });
  }

  /**
   * A member that joined late takes nothing sealed to all more than a few numbers before the first
   * message it took from a sender (those few: sent at once with it, and overtaken). Sealed for this
   * node, anything within the window is new.
   */
  @Test
  void belowASeriesFirstNumber_toAll_onlyTheGraceIsTaken_toThisNode_theWindow() {
    SealedCopies copies = new SealedCopies(16);
    Address sender = UUID.randomUUID();
    for (boolean outOfBand : List.of(true, false)) {
      assertTrue(copies.admit(sender, true, outOfBand, 9_000));
      assertFalse(copies.admit(sender, true, outOfBand, 9_000 - SealedCopies.GRACE - 1),
          "sealed before the first taken");
      assertFalse(copies.admit(sender, true, outOfBand, 9_000 - W));
      assertTrue(copies.admit(sender, true, outOfBand, 9_000 - SealedCopies.GRACE), "overtaken by the first");
      assertFalse(copies.admit(sender, true, outOfBand, 9_000 - SealedCopies.GRACE), "its copy");
      assertTrue(copies.admit(sender, true, outOfBand, 9_001));
      assertTrue(copies.admit(sender, true, outOfBand, 9_003));
      assertTrue(copies.admit(sender, true, outOfBand, 9_002), "after the first, late is fine");

      assertTrue(copies.admit(sender, false, outOfBand, 9_000));
      assertTrue(copies.admit(sender, false, outOfBand, 9_000 - W + 1), "sealed for this node: on its way");
      assertFalse(copies.admit(sender, false, outOfBand, 9_000 - W + 1), "its copy");
      assertFalse(copies.admit(sender, false, outOfBand, 9_000 - W), "below the window");
    }
  }

  /**
   * A sender's four series (to all or to this node, regular or out of band) and two senders are
   * told apart: out-of-band messages far ahead of a regular one held up in delivery leave it be.
   */
  @Test
  void seriesAndSenders_areKeptApart() {
    SealedCopies copies = new SealedCopies(16);
    Address a = UUID.randomUUID();
    Address b = UUID.randomUUID();
    for (boolean toAll : List.of(true, false)) {
      for (boolean outOfBand : List.of(true, false)) {
        assertTrue(copies.admit(a, toAll, outOfBand, 77));
        assertTrue(copies.admit(b, toAll, outOfBand, 77));
      }
    }
    for (boolean toAll : List.of(true, false)) {
      for (boolean outOfBand : List.of(true, false)) {
        assertFalse(copies.admit(a, toAll, outOfBand, 77));
        assertFalse(copies.admit(b, toAll, outOfBand, 77));
      }
    }
    for (long oob = 78; oob < 78 + 2 * W; oob++) {
      assertTrue(copies.admit(a, true, true, oob));
    }
    assertTrue(copies.admit(a, true, false, 78), "the regular message after the out-of-band ones");
  }

  /**
   * The series a node keeps for destinations outside its view are bounded: anyone can make a node
   * answer (a join request in clear, from any address, gets an acknowledgement, sealed).
   */
  @Test
  void seriesForDestinationsOutsideTheView_areBounded() throws Exception {
    SharedSecretEncrypt encrypt = encryptionAt(UUID.randomUUID());
    for (int i = 0; i < 5_000; i++) {
      encrypt.encrypt(new EmptyMessage(UUID.randomUUID()));
      assertTrue(encrypt.seriesKept() <= 1_025, () -> "series kept: " + encrypt.seriesKept());
    }
  }

  /**
   * The series for destinations outside the view are dropped together once there are more than
   * 1,024 of them beyond the members' (the view's size), and not before; a member's series stays,
   * its numbers going on where they were.
   */
  @Test
  void seriesForDestinationsOutsideTheView_droppedPast1024_aMembersSeriesGoesOn() throws Exception {
    Address self = UUID.randomUUID();
    Address member = UUID.randomUUID();
    SharedSecretEncrypt encrypt = encryptionAt(self);
    encrypt.handleView(new View(new ViewId(self, 1), List.of(self, member)));
    long toMember = sealNumber(encrypt, member);
    assertEquals(1, encrypt.seriesKept());
    for (int outside = 1; outside <= 1_024 + 1; outside++) {
      encrypt.encrypt(new EmptyMessage(UUID.randomUUID()));
      assertEquals(1 + outside, encrypt.seriesKept(), "the member's and " + outside + " outside the view");
    }
    encrypt.encrypt(new EmptyMessage(UUID.randomUUID()));
    assertEquals(1, encrypt.seriesKept(), "1,027 for a view of 2: those outside it dropped, the member's kept");
    assertEquals(toMember + 1, sealNumber(encrypt, member), "the member's series goes on");
  }

  /**
   * A member's series is forgotten once a view leaves it out: sealed for again (it came back), it
   * gets a new series, above every number the node has given, not the old one going on.
   */
  @Test
  void aMembersSeries_isForgottenWhenItLeavesTheView_andStartsAboveAllOnItsReturn() throws Exception {
    Address self = UUID.randomUUID();
    Address member = UUID.randomUUID();
    SharedSecretEncrypt encrypt = encryptionAt(self);
    encrypt.handleView(new View(new ViewId(self, 1), List.of(self, member)));
    long before = sealNumber(encrypt, member);
    encrypt.handleView(new View(new ViewId(self, 2), List.of(self)));
    assertEquals(0, encrypt.seriesKept(), "the series of the member that left");
    long after = sealNumber(encrypt, member);
    assertTrue(after > before + (1 << 20), "back at " + after + ": a new series, not 2^20 above " + before);
  }

  private static long sealNumber(SharedSecretEncrypt encrypt, Address dest) throws Exception {
    Message sealed = encrypt.encrypt(new EmptyMessage(dest));
    EncryptHeader header = sealed.getHeader(encrypt.getId());
    byte[] plain = encrypt.code(sealed.getArray(), sealed.getOffset(), sealed.getLength(), header.iv(), true);
    return ByteBuffer.wrap(plain).getLong();
  }

  /**
   * Senders that left are remembered until {@code departedKept} others left after them; one that
   * is back in the view is not forgotten for having left before.
   */
  @Test
  void departedSenders_rememberedUpToTheLimit_oldestForgottenFirst() {
    SealedCopies copies = new SealedCopies(2);
    Address stays = UUID.randomUUID();
    Address first = UUID.randomUUID();
    Address second = UUID.randomUUID();
    Address third = UUID.randomUUID();
    Address returns = UUID.randomUUID();
    for (Address a : List.of(stays, first, second, third, returns)) {
      assertTrue(copies.admit(a, false, false, 10));
    }
    copies.retain(Set.of(stays, first, second, third, returns)); // all members
    copies.retain(Set.of(stays, second, third)); // first and returns leave
    copies.retain(Set.of(stays, third, returns)); // second leaves; returns is back
    assertEquals(5, copies.senders(), "two departed, both remembered");
    copies.retain(Set.of(stays, returns)); // third leaves: first, the oldest departed, is forgotten
    assertEquals(4, copies.senders());
    assertTrue(copies.admit(first, false, false, 10), "forgotten: its number is new again");
    for (Address a : List.of(stays, second, third, returns)) {
      assertFalse(copies.admit(a, false, false, 10), a + " still remembered");
    }
    // returns leaves again: second, now the oldest departed, is forgotten; first, heard from again
    // but in no view since, is a stranger now, counted apart.
    copies.retain(Set.of(stays));
    assertEquals(4, copies.senders(), "stays, third, returns and first");
    assertFalse(copies.admit(stays, false, false, 10));
    assertFalse(copies.admit(third, false, false, 10));
    assertFalse(copies.admit(returns, false, false, 10), "its later departure counts, not its first");
    assertTrue(copies.admit(second, false, false, 10), "forgotten");
  }

  /**
   * A number a member sealed and this node never took (lost on the way, or held back by someone on
   * the path, like a join request's first try), below the highest taken from it, is taken while
   * the member is in the view, and dropped once it has left, in each of its four series: sent
   * again then, a join request would admit under its address a member that nobody runs. Its newer
   * numbers still get through (a member back after a partition).
   */
  @Test
  void aNumberNeverTakenBelowTheHighest_isDroppedOnceItsSenderLeft_newerOnesTaken() {
    SealedCopies copies = new SealedCopies(16);
    Address stays = UUID.randomUUID();
    Address leaves = UUID.randomUUID();
    copies.retain(Set.of(stays, leaves));
    for (boolean toAll : new boolean[] {false, true}) {
      for (boolean outOfBand : new boolean[] {false, true}) {
        assertTrue(copies.admit(leaves, toAll, outOfBand, 100));
        assertTrue(copies.admit(leaves, toAll, outOfBand, 102), "101 never taken");
        assertTrue(copies.admit(stays, toAll, outOfBand, 100));
        assertTrue(copies.admit(stays, toAll, outOfBand, 102));
      }
    }
    assertTrue(copies.admit(stays, false, false, 101), "in the view: the number on its way is taken");
    copies.retain(Set.of(stays));
    for (boolean toAll : new boolean[] {false, true}) {
      for (boolean outOfBand : new boolean[] {false, true}) {
        String series = (toAll ? "to all" : "to this node") + (outOfBand ? ", out of band" : "");
        assertFalse(copies.admit(leaves, toAll, outOfBand, 101), series + ": never taken, sent after it left");
        assertTrue(copies.admit(leaves, toAll, outOfBand, 103), series + ": newer than all taken");
        assertFalse(copies.admit(leaves, toAll, outOfBand, 103), series + ": its copy");
      }
    }
    assertTrue(copies.admit(stays, true, true, 101), "a member's windows stay open through the view change");
  }

  /**
   * Closing a window marks every bit of its ring taken, those of the numbers above the highest
   * too: they must be freed as the window moves forward, or a member back after a partition, or
   * merged back, would have its newer messages dropped as copies. After its sender leaves (and
   * again after it is back in the view and leaves once more), a long run of newer numbers, each
   * reached by a jump of 1, less than, exactly or more than {@value SealedCopies#WINDOW} ahead and
   * the numbers skipped then filled in from the top down: each within the window is taken exactly
   * once, in each of the four series.
   */
  @Test
  void newerNumbersOfAMemberThatLeft_eachTakenOnce_whateverTheJumpsAfterItsWindowsClosed() {
    SealedCopies copies = new SealedCopies(16);
    Address stays = UUID.randomUUID();
    Address leaves = UUID.randomUUID();
    copies.retain(Set.of(stays, leaves));
    long first = 1_000_000_000_003L; // not on a word of the ring
    long[] highest = new long[4];
    for (int series = 0; series < 4; series++) {
      assertTrue(copies.admit(leaves, series >= 2, series % 2 == 1, first));
      assertTrue(copies.admit(leaves, series >= 2, series % 2 == 1, first + 2), "first + 1 never taken");
      highest[series] = first + 2;
    }
    long[] jumps = {1, 1, 2, 7, 63, 64, 65, W / 2, W - 1, W, 1, W + 1, 3, 3 * W + 5, W, 1};
    for (Set<Address> view : List.of(Set.of(stays), Set.of(stays, leaves), Set.of(stays))) {
      copies.retain(view);
      boolean left = !view.contains(leaves);
      for (int series = 0; series < 4; series++) {
        boolean toAll = series >= 2;
        boolean outOfBand = series % 2 == 1;
        String name = (toAll ? "to all" : "to this node") + (outOfBand ? ", out of band" : "")
            + (left ? ", left" : ", back in the view");
        // The highest taken has a number skipped below it: skipped before the window closed, it is
        // dropped; skipped after (the member back in the view), it is taken.
        assertEquals(!left, copies.admit(leaves, toAll, outOfBand, highest[series] - 1),
            name + ": one below the highest, never taken");
        long previous = highest[series];
        for (long jump : jumps) {
          long seal = previous + jump;
          assertTrue(copies.admit(leaves, toAll, outOfBand, seal), name + ": " + jump + " ahead");
          assertFalse(copies.admit(leaves, toAll, outOfBand, seal), name + ": " + jump + " ahead, its copy");
          for (long skipped = seal - 1; skipped > previous && seal - skipped < W; skipped--) {
            assertTrue(copies.admit(leaves, toAll, outOfBand, skipped),
                name + ": " + (seal - skipped) + " below the highest, skipped by a jump of " + jump);
            assertFalse(copies.admit(leaves, toAll, outOfBand, skipped),
                name + ": " + (seal - skipped) + " below the highest, its copy");
          }
          assertFalse(copies.admit(leaves, toAll, outOfBand, seal - W), name + ": a window below the highest");
          previous = seal;
        }
        assertTrue(copies.admit(leaves, toAll, outOfBand, previous + 2), name + ": 2 ahead");
        highest[series] = previous + 2;
      }
    }
  }

  /**
   * Senders never in a view (joiners, or the old addresses of copies sent again) are counted apart
   * from the members that left, and bounded, between view changes too: however many, they make
   * this node forget no member, not even one first heard from after the view that added it.
   */
  @Test
  void sendersNeverInAView_areCountedApart_andBounded() {
    SealedCopies copies = new SealedCopies(2);
    Address member = UUID.randomUUID();
    Address left = UUID.randomUUID();
    assertTrue(copies.admit(member, true, false, 10));
    assertTrue(copies.admit(left, true, false, 10));
    copies.retain(Set.of(member, left));
    copies.retain(Set.of(member));
    Address heardLate = UUID.randomUUID();
    copies.retain(Set.of(member, heardLate)); // heardLate joins; nothing heard from it yet
    assertTrue(copies.admit(heardLate, true, false, 10));
    copies.retain(Set.of(member)); // and leaves
    for (int i = 0; i < SealedCopies.STRANGERS_KEPT + 100; i++) {
      assertTrue(copies.admit(UUID.randomUUID(), true, false, 10));
      assertTrue(copies.senders() <= 3 + SealedCopies.STRANGERS_KEPT, "bounded between views too");
    }
    copies.retain(Set.of(member));
    assertEquals(3 + SealedCopies.STRANGERS_KEPT, copies.senders(),
        "the member, the two that left, and the strangers kept");
    assertFalse(copies.admit(left, true, false, 10), "the member that left is still remembered");
    assertFalse(copies.admit(heardLate, true, false, 10), "and the one first heard from after its view");
  }

  /**
   * The entries of senders outside the view are swept of stale ones (senders back in a view) only
   * once there are more than twice the current ones plus 64, at a view change as at a stranger's
   * first message; the current ones stay, so that those senders are still forgotten in turn.
   */
  @Test
  void staleOutsideEntries_sweptOncePastTwiceTheCurrentOnesPlus64_currentOnesKept() {
    SealedCopies copies = new SealedCopies(16);
    Address member = UUID.randomUUID();
    copies.retain(List.of(member));
    List<Address> joiners = new ArrayList<>();
    for (int i = 0; i < 67; i++) {
      joiners.add(UUID.randomUUID());
    }
    for (Address joiner : joiners.subList(0, 64)) {
      assertTrue(copies.admit(joiner, true, false, 10), "heard before its view: a stranger");
    }
    assertEquals(64, copies.outsideEntries(), "64 strangers, none stale");
    List<Address> view = new ArrayList<>(List.of(member));
    view.addAll(joiners.subList(0, 64));
    copies.retain(view);
    assertEquals(64, copies.outsideEntries(), "64 stale entries, not more than 2 * 0 + 64: kept");
    for (Address joiner : joiners.subList(64, 67)) {
      assertTrue(copies.admit(joiner, true, false, 10));
    }
    assertEquals(67, copies.outsideEntries(), "67 entries, not more than 2 * 3 + 64");
    view.addAll(joiners.subList(64, 66)); // two of the three join: one stranger left, 66 stale entries
    copies.retain(view);
    assertEquals(1, copies.outsideEntries(), "67 entries, more than 2 * 1 + 64: the stale ones swept, the current kept");
    assertFalse(copies.admit(joiners.get(66), true, false, 10), "the stranger left is still remembered");
    assertEquals(joiners.size(), copies.senders(), "every joiner remembered (the member sent nothing)");
  }

  /** None of the members that left may be remembered (0); fewer than that fails, naming the value. */
  @Test
  void departedKept_zeroForgetsAMemberAsItLeaves_belowZeroFails() {
    SealedCopies copies = new SealedCopies(0);
    Address stays = UUID.randomUUID();
    Address leaves = UUID.randomUUID();
    assertTrue(copies.admit(stays, false, false, 10));
    assertTrue(copies.admit(leaves, false, false, 10));
    copies.retain(Set.of(stays, leaves));
    copies.retain(Set.of(stays));
    assertEquals(1, copies.senders(), "the member that left is forgotten at once");
    assertTrue(copies.admit(leaves, false, false, 10), "forgotten: its number is new again");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new SealedCopies(-1));
    assertEquals("departedKept must be at least 0: -1", e.getMessage());
  }

  /** An encryption protocol on its own (no stack), with an all-zero key, at {@code self}. */
  private static SharedSecretEncrypt encryptionAt(Address self) throws Exception {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.setSecretKey(new SecretKeySpec(new byte[16], "AES"));
    encrypt.init();
    encrypt.setAddress(self);
    return encrypt;
  }
}
