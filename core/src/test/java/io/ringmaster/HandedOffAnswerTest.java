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
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.Message;
import org.jgroups.protocols.pbcast.ViewHandler;
import org.jgroups.stack.Protocol;
import org.jgroups.util.MessageBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A leaver's "my hand-off is done" travels on its own, while the view that removes the leaver
 * comes from the coordinator: a member could handle that view first, and tell a newcomer of it
 * that the leaver still held its data. So the leaver waits for every member's answer before it
 * asks to leave. Here the coordinator holds the word back (a protocol at the top of its stack)
 * until the test sees the leaver waiting; then a newcomer joins in the very view the leaver leaves
 * in, and its first change names the coordinator, to which the leaver handed everything, as the
 * source of what it gains.
 */
class HandedOffAnswerTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aLeaverAsksToLeaveOnlyOnceItsWordIsKept_soANewcomerOfThatViewPullsFromTheMemberHandedItsData()
      throws Exception {
    List<OwnershipChange> ofC = new CopyOnWriteArrayList<>();
    try (TestCluster cluster = new TestCluster("handed-off-answer");
         JoinedThreads threads = new JoinedThreads(WAIT)) {
      Ringmaster b = cluster.start(builder(cluster, "b"));
      Ringmaster l = cluster.start(builder(cluster, "l"), n -> n.addOwnershipListener(change -> { }));
      TestCluster.awaitAgreement(List.of(b, l), 2, WAIT);
      HashRing before = b.ring();
      Address leaverAt = l.channel().getAddress();
      HoldsWord word = new HoldsWord(Gossip.TYPE_HANDED_OFF);
      b.channel().getProtocolStack().insertProtocolAtTop(word);

      ViewHandler<?> requests = TestCluster.gms(b).getViewHandler();
      requests.processing(true);
      CompletableFuture<Void> leaving;
      CompletableFuture<Ringmaster> joining;
      try {
        leaving = threads.run("close-l", l::close);
        // One condition, polled often: l waits for b's answer 2 s at most.
        await("b given l's word that its hand-off is done, and l waiting for b's answer").atMost(WAIT)
            .pollInterval(Duration.ofMillis(10)).until(() -> word.held() > 0 && l.awaitingHandedOffAcks());
        assertEquals(0, requests.size(), "l asked to leave before b kept its word");
        word.release();
        await("l's leave request queued").atMost(WAIT).until(() -> requests.size() >= 1);
        assertEquals(Set.of(), l.handedOffUnanswered(), "b answered");
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

  /** One replica, few tokens, and the default leaveTimeout. */
  private static Ringmaster.Builder builder(TestCluster cluster, String id) {
    return cluster.builder(id).virtualNodes(64).replicas(1);
  }

  private static List<String> ids(HashRing ring) {
    return ring.members().stream().map(Member::id).toList();
  }

  /**
   * A test protocol, put at the top of a running stack, that holds back the node's own messages of
   * one type (their payload's first byte) on their way up, until {@link #release}, which passes
   * them on, and every one that comes after.
   */
  static final class HoldsWord extends Protocol {
    private final byte type;
    private final List<Message> held = new ArrayList<>();
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

    private synchronized boolean holds(Message msg) {
      if (released || !msg.hasArray() || msg.getLength() < 1 || msg.getArray()[msg.getOffset()] != type) {
        return false;
      }
      held.add(msg);
      return true;
    }

    @Override
    public Object up(Message msg) {
      return holds(msg) ? null : up_prot.up(msg);
    }

    @Override
    public void up(MessageBatch batch) {
      batch.removeIf(this::holds, true);
      if (!batch.isEmpty()) {
        up_prot.up(batch);
      }
    }
  }
}
