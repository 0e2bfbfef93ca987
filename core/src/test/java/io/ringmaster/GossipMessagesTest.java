package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.JChannel;
import org.jgroups.View;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What {@link Gossip#receive} does with the messages a member cannot trust: a flood of "does your
 * view list me?" queries from strangers, a "not listed" from outside the view, and malformed or
 * foreign messages. Real channels on the in-JVM stack; the node's view handling is fed no view,
 * so it has no ring yet and keeps any account of the ring before a view it is handed.
 */
class GossipMessagesTest {

  /** Channels a and b in one cluster, and a's gossip over a node that has no ring yet. */
  private static final class Pair implements AutoCloseable {
    final FedNode a = new FedNode(meta("a"));
    final Address b = meta("b").newAddress();
    final JChannel channelA = new JChannel(TestCluster.STACK);
    final JChannel channelB = new JChannel(TestCluster.STACK);
    final List<View> toldNotListed = new ArrayList<>();
    final Gossip gossip;

    Pair(String cluster, Executor background) throws Exception {
      try {
        channelA.addAddressGenerator(() -> a.self);
        channelB.addAddressGenerator(() -> b);
        channelA.connect(cluster);
        channelB.connect(cluster);
        await().atMost(Duration.ofSeconds(30))
            .until(() -> channelA.getView().size() == 2);
      } catch (Exception | Error e) {
        close(); // the caller's try-with-resources has nothing to close yet
        throw e;
      }
      gossip = new Gossip("a", channelA, a.node, d -> { }, background, toldNotListed::add);
    }

    View view() {
      return channelA.getView();
    }

    void receive(byte[] payload, Address from) {
      gossip.receive(new BytesMessage(a.self, payload).setSrc(from));
    }

    @Override
    public void close() {
      channelB.close();
      channelA.close();
      a.close();
    }
  }

  @Test
  void listedQueries_fromMoreStrangersThanTheBound_areEachAnswered_asTheAnswersGoOut() throws Exception {
    try (Pair p = new Pair("gossip-queries", Runnable::run)) {
      byte[] query = Gossip.encodeListedQuery(p.view().getViewId().getId(), p.view().getCreator());
      int strangers = 2 * Gossip.MAX_TELLS_QUEUED + 1;
      for (int i = 0; i < strangers; i++) {
        p.receive(query, UUID.randomUUID());
      }
      assertEquals(strangers, p.gossip.notListedSent.get(), "each answer sent frees its place in the queue");
      assertEquals(strangers, p.gossip.queriesReceived.get());
    }
  }

  @Test
  void listedQueries_pastTheBoundOfAnswersWaiting_areDropped_untilTheWaitingOnesGo() throws Exception {
    List<Runnable> waiting = new ArrayList<>();
    try (Pair p = new Pair("gossip-query-bound", waiting::add)) {
      byte[] query = Gossip.encodeListedQuery(p.view().getViewId().getId(), p.view().getCreator());
      for (int i = 0; i < Gossip.MAX_TELLS_QUEUED + 10; i++) {
        p.receive(query, UUID.randomUUID());
      }
      assertEquals(Gossip.MAX_TELLS_QUEUED, p.gossip.notListedSent.get(), "the rest dropped while the gossip"
          + " thread is behind");
      waiting.forEach(Runnable::run);
      waiting.clear();
      for (int i = 0; i < Gossip.MAX_TELLS_QUEUED; i++) {
        p.receive(query, UUID.randomUUID());
      }
      assertEquals(2 * Gossip.MAX_TELLS_QUEUED, p.gossip.notListedSent.get(), "once they went, as many wait again:"
          + " the dropped ones took no place");
    }
  }

  @Test
  void notListed_isBelievedFromAMemberOfTheView_andIgnoredFromAnyoneElse() throws Exception {
    try (Pair p = new Pair("gossip-not-listed", Runnable::run)) {
      View v = p.view();
      byte[] notListed = Gossip.encodeNotListed(v.getViewId().getId(), v.getCreator());
      p.receive(notListed, UUID.randomUUID()); // knows the view's id and creator, but is not in it
      assertEquals(List.of(), p.toldNotListed, "a stranger cannot make a member leave and rejoin");
      assertEquals(1, p.gossip.notListedIgnored.get());
      p.receive(notListed, p.b);
      assertEquals(List.of(v), p.toldNotListed, "b is in the view: a rejoins");
    }
  }

  @Test
  void receive_malformedOrForeignMessages_throwsNothing_andTakesNothingFromThem() throws Exception {
    try (Pair p = new Pair("gossip-malformed", Runnable::run)) {
      View v = p.view();
      Address stranger = UUID.randomUUID();
      assertDoesNotThrow(() -> p.receive(new byte[0], stranger), "an empty message");
      byte[] checksum = Gossip.encode(v.getViewId().getId(), v.getCreator(), 42, "b");
      byte[] truncated = Arrays.copyOf(checksum, checksum.length - 3);
      assertDoesNotThrow(() -> p.receive(truncated, p.b), "a checksum cut short");
      byte[] noRing = ringBefore(Gossip.TYPE_RING_BEFORE, v, "", 1.0);
      assertDoesNotThrow(() -> p.receive(noRing, p.b), "a ring before naming a member no ring can hold");
      byte[] nan = ringBefore(Gossip.TYPE_RING_BEFORE, v, "c", Double.NaN);
      assertDoesNotThrow(() -> p.receive(nan, p.b), "a weight that is not a number");
      assertEquals(0, p.a.node.ringsBeforeKept(), "none of them kept");

      byte[] foreign = ringBefore((byte) 99, v, "c", 1.0); // an application's message on the same channel
      p.receive(foreign, p.b);
      assertEquals(0, p.a.node.ringsBeforeKept(), "a message of another type is not read as one of ours");
      p.gossip.receive(new BytesMessage(null, foreign).setSrc(p.b));
      assertEquals(0, p.gossip.multicastsDropped.get(), "nor counted as a gossip multicast");

      byte[] good = ringBefore(Gossip.TYPE_RING_BEFORE, v, "c", 1.0);
      p.receive(good, p.b);
      assertEquals(1, p.a.node.ringsBeforeKept(), "a well-formed one is kept");
    }
  }

  /** A ring-before message of the given type naming one member. */
  private static byte[] ringBefore(byte type, View v, String id, double weight) throws IOException {
    byte[] header = Gossip.encodeRingBefore(v.getViewId().getId(), v.getCreator(), List.of());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.write(header, 0, header.length - Integer.BYTES); // the header, without its member count of 0
      out.writeInt(1);
      out.writeUTF(id);
      out.writeDouble(weight);
      out.writeUTF("");
    }
    byte[] payload = bytes.toByteArray();
    payload[0] = type;
    return payload;
  }
}
