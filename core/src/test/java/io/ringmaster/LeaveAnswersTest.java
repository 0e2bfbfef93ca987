package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import io.ringmaster.ring.RingDiff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.Receiver;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.jgroups.stack.Protocol;
import org.jgroups.util.MessageBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A node that closes waits for every member's answer to each of its two words before it goes on.
 *
 * <p>"I am leaving", before its LEAVING change: of two nodes that close at the same moment, each
 * told the other's word before it answered it (the word and the answer go in order), so at least
 * one knows of the other when it makes its change. Here each holds the other's word back (a
 * protocol at the top of its stack, which holds everything that sender sends after it too, as the
 * order requires) until both wait; then both hand off to the third member only, not to each other.
 *
 * <p>"My hand-off is done", before it asks to leave: the word travels on its own, while the view
 * that removes the leaver comes from the coordinator, which could handle that view first and tell
 * a newcomer of it that the leaver still held its data. Here the coordinator holds the word back
 * until the test sees the leaver waiting; then a newcomer joins in the very view the leaver leaves
 * in, and its first change names the coordinator, to which the leaver handed everything, as the
 * source of what it gains.
 *
 * <p>And what bounds the waits: an interrupt of the thread in close() ends them, and a plain
 * JGroups member of the view is neither told nor waited for.
 */
class LeaveAnswersTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  /**
   * How long a patient node waits for each answer, and its leaveTimeout: longer than the test waits,
   * so that only the answer the test holds back lets it go on before the test gives up, on a
   * machine however busy (not the 2 s it waits for each answer otherwise).
   */
  private static final Duration PATIENCE = WAIT.multipliedBy(2);

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaverAsksToLeaveOnlyOnceItsWordIsKept_soANewcomerOfThatViewPullsFromTheMemberHandedItsData()
      throws Exception {
    List<OwnershipChange> ofC = new CopyOnWriteArrayList<>();
    try (TestCluster cluster = new TestCluster("handed-off-answer");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster b = cluster.start(builder(cluster, "b"));
      Ringmaster l = cluster.start(patient(cluster, "l"), n -> {
        n.answerTimeout = PATIENCE;
        n.addOwnershipListener(change -> { });
      });
      TestCluster.awaitAgreement(List.of(b, l), 2, WAIT);
      HashRing before = b.ring();
      Address leaverAt = l.channel().getAddress();
      HoldsWord word = new HoldsWord(Gossip.TYPE_HANDED_OFF);
      b.channel().getProtocolStack().insertProtocolAtTop(word);

      ViewHandler<?> requests = TestCluster.holdRequests(b);
      CompletableFuture<Void> leaving;
      CompletableFuture<Ringmaster> joining;
      try {
        leaving = threads.run("close-l", l::close);
        await("b given l's word that its hand-off is done, and l waiting for b's answer").atMost(WAIT)
            .until(() -> word.held() > 0 && l.awaitingAnswers(true));
        assertEquals(0, requests.size(), "l asked to leave before b kept its word");
        word.release();
        // Before l's wait ends: b's answer lets it go.
        await("l's leave request queued").atMost(WAIT).until(() -> requests.size() >= 1);
        assertEquals(Set.of(), l.unanswered(true), "b answered");
        joining = threads.supply("start-c", () -> cluster.start(builder(cluster, "c"),
            n -> n.addOwnershipListener(ofC::add)));
        await("c's join queued").atMost(WAIT).until(() -> requests.size() >= 2);
      } finally {
        requests.processing(false);
        word.release();
      }
      leaving.get(1, TimeUnit.MINUTES);
      Ringmaster c = joining.get(1, TimeUnit.MINUTES);
      TestCluster.awaitAgreement(List.of(b, c), 2, WAIT);

      await("c's first change").atMost(WAIT).until(() -> !ofC.isEmpty());
      OwnershipChange first = ofC.get(0);
      assertEquals(List.of("b", "c"), ids(first.ring()));
      assertTrue(b.viewId() == first.viewId() && !b.channel().getView().containsMember(leaverAt),
          "l left in the view c joined in");
      assertEquals(List.of("b", "l"), ids(before), "l was in the ring before");
      assertEquals(List.of("b"), ids(first.previousRing()),
          "c compares with the ring without l, which handed everything to b");
      assertFalse(first.gained().isEmpty());
      for (RingDiff.Gained g : first.gained()) {
        assertEquals(List.of("b"), first.sourcesInRing(g).stream().map(Member::id).toList(),
            "c pulls " + g.range() + " from b");
      }
    }
  }

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void twoNodesClosingAtOnce_eachWaitsForTheOthersAnswer_andNeitherHandsTheOtherAnything() throws Exception {
    List<OwnershipChange> ofA = new CopyOnWriteArrayList<>();
    List<OwnershipChange> ofB = new CopyOnWriteArrayList<>();
    try (TestCluster cluster = new TestCluster("leaving-answer");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster c = cluster.start(builder(cluster, "c"));
      Ringmaster a = cluster.start(patient(cluster, "a"), n -> {
        n.answerTimeout = PATIENCE;
        n.addOwnershipListener(ofA::add);
      });
      Ringmaster b = cluster.start(patient(cluster, "b"), n -> {
        n.answerTimeout = PATIENCE;
        n.addOwnershipListener(ofB::add);
      });
      TestCluster.awaitAgreement(List.of(a, b, c), 3, WAIT);
      HoldsWord atA = new HoldsWord(Gossip.TYPE_LEAVING);
      HoldsWord atB = new HoldsWord(Gossip.TYPE_LEAVING);
      a.channel().getProtocolStack().insertProtocolAtTop(atA);
      b.channel().getProtocolStack().insertProtocolAtTop(atB);
      CompletableFuture<Void> closingA;
      CompletableFuture<Void> closingB;
      try {
        closingA = threads.run("close-a", a::close);
        closingB = threads.run("close-b", b::close);
        await("each given the other's word, and each waiting for the other's answer").atMost(WAIT)
            .until(() -> atA.held() > 0 && atB.held() > 0
                && a.awaitingAnswers(false) && b.awaitingAnswers(false));
        assertFalse(a.pastLeavingChange() || b.pastLeavingChange(), "neither made its change yet");
      } finally {
        atA.release(); // b's word reaches a, which answers it; the answer waits behind a's word at b
        atB.release();
      }
      closingA.get(1, TimeUnit.MINUTES);
      closingB.get(1, TimeUnit.MINUTES);
      assertEquals(Set.of(), a.unanswered(false), "b and c answered a");
      assertEquals(Set.of(), b.unanswered(false), "a and c answered b");
      for (List<OwnershipChange> of : List.of(ofA, ofB)) {
        OwnershipChange leaving = of.get(of.size() - 1);
        assertEquals(OwnershipChange.Reason.LEAVING, leaving.reason());
        assertEquals(List.of("c"), ids(leaving.ring()), "hands off to c alone, not to the other leaver");
        assertFalse(leaving.lost().isEmpty());
      }
    }
  }

  /**
   * An interrupt of the thread in close() ends the wait for the answers: the node leaves without
   * the one held back, and close() returns with the flag set.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void anInterruptWhileWaitingForTheAnswers_endsTheWait_andTheNodeLeavesWithItsFlagSet() throws Exception {
    try (TestCluster cluster = new TestCluster("handed-off-interrupt")) {
      Ringmaster b = cluster.start(builder(cluster, "b"));
      Ringmaster l = cluster.start(patient(cluster, "l"), n -> {
        n.answerTimeout = PATIENCE;
        n.addOwnershipListener(change -> { });
      });
      TestCluster.awaitAgreement(List.of(b, l), 2, WAIT);
      Address leaverAt = l.channel().getAddress();
      HoldsWord word = new HoldsWord(Gossip.TYPE_HANDED_OFF);
      b.channel().getProtocolStack().insertProtocolAtTop(word);
      CompletableFuture<Boolean> flagAfterClose = new CompletableFuture<>();
      Thread closer = TestCluster.closeOnAThreadOfItsOwn(l, flagAfterClose);
      try {
        await("l waiting for b's answer").atMost(WAIT).until(() -> word.held() > 0 && l.awaitingAnswers(true));
        closer.interrupt();
        assertTrue(flagAfterClose.get(WAIT.toSeconds(), TimeUnit.SECONDS), "close() returned with the flag set");
        assertEquals(Set.of(b.channel().getAddress()), l.unanswered(true), "b's answer was held back");
        await("b's view without l").atMost(WAIT).until(() -> !b.channel().getView().containsMember(leaverAt));
      } finally {
        word.release();
        closer.join(WAIT.toMillis());
      }
    }
  }

  /**
   * A plain JGroups member of the cluster (a monitor, say) is no Ringmaster node: a node that
   * closes neither sends it its words, which its application would receive, nor waits for answers
   * it never sends.
   */
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aPlainJGroupsMember_isNeitherToldNorWaitedFor() throws Exception {
    List<Message> toPlain = new CopyOnWriteArrayList<>();
    try (TestCluster cluster = new TestCluster("handed-off-plain");
         JChannel plain = new JChannel(TestCluster.STACK)) {
      Ringmaster b = cluster.start(builder(cluster, "b"));
      Ringmaster l = cluster.start(builder(cluster, "l"), n -> n.addOwnershipListener(change -> { }));
      TestCluster.awaitAgreement(List.of(b, l), 2, WAIT);
      // As docs/operations.md asks of a plain member of a Ringmaster cluster.
      plain.getProtocolStack().<GMS>findProtocol(GMS.class).setMembershipChangePolicy(new RingmasterMembershipPolicy())
          .useDeltaViews(false);
      plain.setReceiver(new Receiver() {
        @Override
        public void receive(Message msg) {
          toPlain.add(msg);
        }
      });
      plain.connect(cluster.name);
      Address plainAt = plain.getAddress();
      await("l's view lists the plain member").atMost(WAIT).until(() -> l.channel().getView().containsMember(plainAt));

      l.close();

      assertEquals(Set.of(), l.unanswered(false), "l waited for the plain member's answer to \"I am leaving\"");
      assertEquals(Set.of(), l.unanswered(true), "l waited for the plain member's answer to \"my hand-off is done\"");
      assertEquals(List.of(), toPlain.stream().map(m -> m.getSrc() + ": " + m.getLength() + " bytes").toList(),
          "messages the plain member's application received");
    }
  }

  /** One replica, few tokens, and TestCluster's leaveTimeout. */
  private static Ringmaster.Builder builder(TestCluster cluster, String id) {
    return cluster.builder(id).virtualNodes(64).replicas(1);
  }

  /** As {@link #builder}, with a leaveTimeout of {@link #PATIENCE}; set the node's answerTimeout to it too. */
  private static Ringmaster.Builder patient(TestCluster cluster, String id) {
    return builder(cluster, id).leaveTimeout(PATIENCE);
  }

  private static List<String> ids(HashRing ring) {
    return ring.members().stream().map(Member::id).toList();
  }

  /**
   * A test protocol, put at the top of a running stack, that holds back the node's own messages of
   * one type (their payload's first byte) on their way up, and everything their sender sends after
   * one (as a network that delivers each sender's messages in order would), until {@link #release},
   * which passes them on in order, and every one that comes after.
   */
  static final class HoldsWord extends Protocol {
    private final byte type;
    private final List<Message> held = new ArrayList<>();
    private final Set<Address> heldFrom = new HashSet<>();
    private boolean released;

    HoldsWord(byte type) {
      this.type = type;
    }

    synchronized int held() {
      return held.size();
    }

    void release() {
      List<Message> go;
      synchronized (this) {
        released = true;
        go = new ArrayList<>(held);
        held.clear();
      }
      go.forEach(up_prot::up);
    }

    private synchronized boolean holds(Message msg, Address sender) {
      if (released) {
        return false;
      }
      boolean word = msg.hasArray() && msg.getLength() >= 1 && msg.getArray()[msg.getOffset()] == type;
      if (!word && !heldFrom.contains(sender)) {
        return false;
      }
      heldFrom.add(sender);
      held.add(msg);
      return true;
    }

    @Override
    public Object up(Message msg) {
      return holds(msg, msg.getSrc()) ? null : up_prot.up(msg);
    }

    @Override
    public void up(MessageBatch batch) {
      batch.removeIf(m -> holds(m, m.getSrc() != null ? m.getSrc() : batch.sender()), true);
      if (!batch.isEmpty()) {
        up_prot.up(batch);
      }
    }
  }
}
