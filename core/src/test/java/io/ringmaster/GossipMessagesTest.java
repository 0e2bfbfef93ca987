package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.JChannel;
import org.jgroups.Message;
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
    final FailingChannel channelA = new FailingChannel();
    final JChannel channelB = new JChannel(TestCluster.STACK);
    final List<View> toldNotListed = new ArrayList<>();
    final List<RingDivergence> divergences = new ArrayList<>();
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
      gossip = new Gossip("a", channelA, a.node, divergences::add, background, toldNotListed::add);
    }

    View view() {
      return channelA.getView();
    }

    /**
     * Puts a in its ring under the channel's view: first a view of a alone (as a's first view is),
     * so that the channel's view, b joining, does not wait for an account of the ring before it.
     */
    View inTheRing() throws Exception {
      View v = view();
      a.view(0, a.self);
      a.install(v);
      return v;
    }

    void receive(byte[] payload, Address from) {
      gossip.receive(new BytesMessage(a.self, payload).setSrc(from));
    }

    @Override
    public void close() {
      channelA.heal();
      channelB.close();
      channelA.close();
      a.close();
    }
  }

  /**
   * A channel whose sends throw while {@code failing}; with {@code leavesOnFailure}, it also says it
   * is not connected from the first failure on, as a channel whose rejoin left between a round's
   * check and its send would.
   */
  private static final class FailingChannel extends JChannel {
    volatile boolean failing;
    volatile boolean leavesOnFailure;
    private volatile boolean left;
    final List<Address> refused = new CopyOnWriteArrayList<>();

    FailingChannel() throws Exception {
      super(TestCluster.STACK);
    }

    @Override
    public JChannel send(Message msg) throws Exception {
      if (failing) {
        refused.add(msg.getDest());
        left = leavesOnFailure;
        throw new IllegalStateException("a send refused (a test)");
      }
      return super.send(msg);
    }

    @Override
    public boolean isConnected() {
      return !left && super.isConnected();
    }

    /** Sends as a plain channel again, connected as it was. */
    void heal() {
      failing = false;
      leavesOnFailure = false;
      left = false;
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
    try (Pair p = new Pair("gossip-query-bound", waiting::add);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("answers to send already"))) {
      byte[] query = Gossip.encodeListedQuery(p.view().getViewId().getId(), p.view().getCreator());
      List<Address> strangers = new ArrayList<>();
      for (int i = 0; i < Gossip.MAX_TELLS_QUEUED + 10; i++) {
        strangers.add(new UUID(7, i));
        p.receive(query, strangers.get(i));
      }
      assertEquals(Gossip.MAX_TELLS_QUEUED, p.gossip.notListedSent.get(), "the rest dropped while the gossip"
          + " thread is behind");
      assertEquals(strangers.subList(Gossip.MAX_TELLS_QUEUED, strangers.size()).stream()
          .map(s -> "a: " + Gossip.MAX_TELLS_QUEUED + " answers to send already, " + s + " not told").toList(),
          log.messages(), "each stranger left untold is said, at DEBUG");
      assertTrue(log.levels().stream().allMatch(Level.FINE::equals), log.levels()::toString);
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
    try (Pair p = new Pair("gossip-not-listed", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("ignored"))) {
      View v = p.view();
      byte[] notListed = Gossip.encodeNotListed(v.getViewId().getId(), v.getCreator());
      Address stranger = new UUID(7, 1);
      p.receive(notListed, stranger); // knows the view's id and creator, but is not in it
      assertEquals(List.of(), p.toldNotListed, "a stranger cannot make a member leave and rejoin");
      assertEquals(1, p.gossip.notListedIgnored.get());
      assertEquals(List.of("a: ignored \"not in view " + v.getViewId().getId() + "\" from " + stranger
          + ": this node's view is " + v.getViewId()), log.messages(), "said at DEBUG, with the view it has");
      p.receive(notListed, p.b);
      assertEquals(List.of(v), p.toldNotListed, "b is in the view: a rejoins");
    }
  }

  @Test
  void receive_malformedOrForeignMessages_throwsNothing_andTakesNothingFromThem() throws Exception {
    try (Pair p = new Pair("gossip-malformed", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().startsWith("malformed message from"));
         NodeLog multicasts = new NodeLog(r -> r.getMessage().contains("sent to every member"))) {
      View v = p.view();
      Address stranger = UUID.randomUUID();
      assertDoesNotThrow(() -> p.receive(new byte[0], stranger), "an empty message");
      assertDoesNotThrow(() -> p.receive(new byte[] {Gossip.TYPE_CHECKSUM}, stranger), "a type alone");
      byte[] checksum = Gossip.encode(v.getViewId().getId(), v.getCreator(), 42, "b");
      byte[] truncated = Arrays.copyOf(checksum, checksum.length - 3);
      assertDoesNotThrow(() -> p.receive(truncated, p.b), "a checksum cut short");
      byte[] noRing = ringBefore(Gossip.TYPE_RING_BEFORE, v, "", 1.0);
      assertDoesNotThrow(() -> p.receive(noRing, p.b), "a ring before naming a member no ring can hold");
      byte[] nan = ringBefore(Gossip.TYPE_RING_BEFORE, v, "c", Double.NaN);
      assertDoesNotThrow(() -> p.receive(nan, p.b), "a weight that is not a number");
      assertEquals(0, p.a.node.ringsBeforeKept(), "none of them kept");
      assertEquals(0, p.gossip.received.get(), "no checksum read");
      List<String> said = log.messages();
      assertEquals(4, said.size(), "each malformed one said at DEBUG (the empty one is no message of ours): " + said);
      assertTrue(said.get(0).startsWith("malformed message from " + stranger + ": java.io.EOFException"), said.get(0));
      assertTrue(said.get(3).startsWith("malformed message from " + p.b + ": java.lang.IllegalArgumentException"),
          said.get(3));

      byte[] foreign = ringBefore((byte) 99, v, "c", 1.0); // an application's message on the same channel
      p.receive(foreign, p.b);
      assertEquals(0, p.a.node.ringsBeforeKept(), "a message of another type is not read as one of ours");
      p.gossip.receive(new BytesMessage(null, foreign).setSrc(p.b));
      assertEquals(0, p.gossip.multicastsDropped.get(), "nor counted as a gossip multicast");
      p.gossip.receive(new BytesMessage(null, checksum).setSrc(p.b)); // one of ours, sent to every member
      assertEquals(1, p.gossip.multicastsDropped.get(), "a multicast of ours is dropped");
      assertEquals(0, p.gossip.received.get(), "unread");
      assertEquals(List.of("a: dropped a gossip message sent to every member by " + p.b), multicasts.messages(),
          "and said at DEBUG, naming its sender");

      byte[] good = ringBefore(Gossip.TYPE_RING_BEFORE, v, "c", 1.0);
      p.receive(good, p.b);
      assertEquals(1, p.a.node.ringsBeforeKept(), "a well-formed one is kept");
    }
  }

  /**
   * A node the cluster refuses (here: fed no view, so not in its ring) asks, each round, a
   * Ringmaster member of its channel's view whether that member's view lists it, and sends no
   * checksum; a query the channel refuses while connected is thrown to the round's caller (which
   * says it at WARNING), and one refused by a channel that left meanwhile is not.
   */
  @Test
  void round_whileRefused_asksAMemberOfItsChannelsView_andAQueryThatCannotBeSentIsThrown() throws Exception {
    try (Pair p = new Pair("gossip-refused-round", Runnable::run)) {
      p.gossip.round();
      assertEquals(1, p.gossip.queriesSent.get(), "b, the one other member, asked");
      assertEquals(0, p.gossip.sent.get(), "no checksum from a node outside the ring");
      p.channelA.failing = true;
      IllegalStateException thrown = assertThrows(IllegalStateException.class, p.gossip::round);
      assertEquals("asking " + p.b + " whether view " + p.view().getViewId() + " lists this node failed:"
          + " java.lang.IllegalStateException: a send refused (a test)", thrown.getMessage());
      assertEquals(List.of(p.b), p.channelA.refused, "the query went to b");
      p.channelA.leavesOnFailure = true;
      assertDoesNotThrow(p.gossip::round, "a channel that left is expected to refuse");
      assertEquals(1, p.gossip.queriesSent.get(), "the failed ones not counted as sent");
    }
  }

  /**
   * A member of the ring sends its checksum to a peer each round. A send the channel refuses while
   * connected under the address it sent from is thrown (the round's caller says it at WARNING: a
   * stack that throws at every send must not go unseen); one refused because the channel left
   * meanwhile (a rejoin, a close) is expected, and said at DEBUG alone.
   */
  @Test
  void round_inTheRing_throwsWhenItsChecksumCannotBeSent_unlessTheChannelLeftMeanwhile() throws Exception {
    try (Pair p = new Pair("gossip-round-fails", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("the channel not connected"))) {
      p.inTheRing();
      p.gossip.round();
      assertEquals(1, p.gossip.sent.get(), "a checksum sent to b");
      assertEquals(0, p.gossip.queriesSent.get(), "a member of the ring asks nothing");
      p.channelA.failing = true;
      IllegalStateException thrown = assertThrows(IllegalStateException.class, p.gossip::round);
      assertEquals("sending the ring checksum to " + p.b + " failed: java.lang.IllegalStateException: a send"
          + " refused (a test)", thrown.getMessage());
      assertEquals(List.of(), log.messages(), "thrown, not said at DEBUG");
      p.channelA.leavesOnFailure = true;
      assertDoesNotThrow(p.gossip::round, "a channel that left is expected to refuse");
      assertEquals(List.of("sending the ring checksum to " + p.b + " failed, the channel not connected, or"
          + " connected again since: java.lang.IllegalStateException: a send refused (a test)"), log.messages());
      assertEquals(List.of(Level.FINE), log.levels());
      assertEquals(1, p.gossip.sent.get(), "the failed ones not counted as sent");
    }
  }

  /**
   * Telling a newcomer the ring before its view, a send that fails is said at DEBUG, naming the
   * newcomer and the view, and the next newcomer is still told.
   */
  @Test
  void sendRingBefore_whenASendFails_saysItAtDebug_andTellsTheNextNewcomer() throws Exception {
    try (Pair p = new Pair("gossip-ring-before-fails", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("the ring before view"))) {
      Address c = new UUID(7, 3);
      p.channelA.failing = true;
      assertDoesNotThrow(() -> p.gossip.sendRingBefore(7, p.a.self, List.of(new Member("a", 1.0, "")),
          List.of(), List.of(p.b, c)));
      assertEquals(List.of(p.b, c), p.channelA.refused, "both newcomers tried");
      assertEquals(List.of(
          "telling " + p.b + " the ring before view 7 failed: java.lang.IllegalStateException: a send refused (a test)",
          "telling " + c + " the ring before view 7 failed: java.lang.IllegalStateException: a send refused (a test)"),
          log.messages());
      assertEquals(List.of(Level.FINE, Level.FINE), log.levels());
    }
  }

  /**
   * A checksum for this node's view that disagrees is reported by its kind (another checksum from
   * the member holding that id; an id held by another address, or by none; a sender the view does
   * not list) and said once per view and sender: at ERROR, naming what differs, but a split view at
   * DEBUG (its WARNING comes from the answer, and the sender rejoins); the same one again at DEBUG.
   */
  @Test
  void checksums_thatDisagree_areReportedByKind_andSaidOnceAViewAndSender() throws Exception {
    try (Pair p = new Pair("gossip-divergences", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("divergence in view")
             || r.getMessage().contains("found again"))) {
      View v = p.inTheRing();
      long id = v.getViewId().getId();
      long mine = p.a.node.state().ring().checksum();
      long other = mine ^ 0x5a5a;
      Address stranger = new UUID(7, 4);
      p.receive(Gossip.encode(id, v.getCreator(), other, "b"), p.b);
      p.receive(Gossip.encode(id, v.getCreator(), other, "b"), p.b); // the same, a round later
      p.receive(Gossip.encode(id, v.getCreator(), mine, "z"), p.b); // an id no member has
      p.receive(Gossip.encode(id, v.getCreator(), mine, "a"), p.b); // a's id, from b
      p.receive(Gossip.encode(id, v.getCreator(), mine, "s"), stranger); // not in the view
      p.receive(Gossip.encode(id, v.getCreator(), mine, "b"), p.b); // agrees

      assertEquals(List.of(
          new RingDivergence(id, "b", mine, other, RingDivergence.Kind.CHECKSUM),
          new RingDivergence(id, "b", mine, other, RingDivergence.Kind.CHECKSUM),
          new RingDivergence(id, "z", mine, mine, RingDivergence.Kind.HOLDER),
          new RingDivergence(id, "a", mine, mine, RingDivergence.Kind.HOLDER),
          new RingDivergence(id, "s", mine, mine, RingDivergence.Kind.SPLIT_VIEW)), p.divergences);
      assertEquals(List.of(Level.SEVERE, Level.FINE, Level.SEVERE, Level.SEVERE, Level.FINE), log.levels(),
          log.messages()::toString);
      List<String> said = log.messages();
      assertEquals("a: ring divergence in view " + id + ": b has checksum " + Long.toHexString(other)
          + ", this node " + Long.toHexString(mine), said.get(0));
      assertEquals("a: " + p.divergences.get(1) + " found again, or past the lines of 10 s", said.get(1));
      assertEquals("a: ring divergence in view " + id + ": " + p.b + " says it is in the ring as z, where this"
          + " node has no member with that id", said.get(2));
      assertEquals("a: ring divergence in view " + id + ": " + p.b + " says it is in the ring as a, where this"
          + " node has " + p.a.self, said.get(3));
      assertEquals("a: divergence in view " + id + " reported; s rejoins", said.get(4));
      assertEquals(1, p.gossip.notListedSent.get(), "the stranger told");
    }
  }

  /**
   * A sender naming a new id in each checksum (a forger, a plain JGroups member): each one is
   * reported, but at most {@value DropLog#MAX_LINES} ERROR lines come in 10 s; the rest are said at
   * DEBUG.
   */
  @Test
  void checksums_aFloodOfNewDisagreements_isSaidInTenErrorLinesAtMost() throws Exception {
    try (Pair p = new Pair("gossip-divergence-flood", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().contains("divergence in view")
             || r.getMessage().contains("found again"))) {
      View v = p.inTheRing();
      long mine = p.a.node.state().ring().checksum();
      int flood = DropLog.MAX_LINES + 3;
      for (int i = 0; i < flood; i++) {
        p.receive(Gossip.encode(v.getViewId().getId(), v.getCreator(), mine, "z" + i), p.b);
      }
      assertEquals(flood, p.divergences.size(), "each reported");
      List<Level> expected = new ArrayList<>();
      for (int i = 0; i < flood; i++) {
        expected.add(i < DropLog.MAX_LINES ? Level.SEVERE : Level.FINE);
      }
      assertEquals(expected, log.levels(), log.messages()::toString);
      assertTrue(log.messages().get(flood - 1).endsWith(" found again, or past the lines of 10 s"),
          log.messages().get(flood - 1));
    }
  }

  /**
   * View 0, the number of JGroups' first view, is compared like any other (here a sender that view
   * does not list, told so); a node with no view yet (its view id -1, its creator none) compares
   * with nothing, not even a checksum claiming that.
   */
  @Test
  void checksum_forViewZero_isCompared_butNoViewComparesWithNothing() throws Exception {
    try (Pair p = new Pair("gossip-view-zero", Runnable::run)) {
      p.receive(Gossip.encode(-1, null, 42, "b"), p.b);
      assertEquals(List.of(), p.divergences, "no view yet: nothing to compare");
      p.a.view(0, p.a.self);
      long mine = p.a.node.state().ring().checksum();
      p.receive(Gossip.encode(0, p.a.self, mine, "b"), p.b); // b says view 0 lists it: it does not
      assertEquals(List.of(new RingDivergence(0, "b", mine, mine, RingDivergence.Kind.SPLIT_VIEW)),
          p.divergences, "view 0 compared");
      assertEquals(1, p.gossip.notListedSent.get(), "b told");
    }
  }

  /**
   * A checksum for the view before this node's or the view after it (a peer that installed its
   * next view first, or has not installed this node's yet: every view change, at some member) is
   * compared with nothing: no divergence, and no "not listed" to a sender this view does not hold,
   * which would make it rejoin for no split. The same checksums for this very view are reported.
   */
  @Test
  void checksums_forTheViewBeforeOrAfter_areComparedWithNothing_andNoSenderIsTold() throws Exception {
    try (Pair p = new Pair("gossip-other-views", Runnable::run)) {
      View v = p.inTheRing();
      long id = v.getViewId().getId();
      long other = p.a.node.state().ring().checksum() ^ 0x5a5a;
      Address joiner = new UUID(7, 5); // not in this view: in the next one, say
      for (long view : new long[] {id - 1, id + 1}) {
        p.receive(Gossip.encode(view, v.getCreator(), other, "b"), p.b);
        p.receive(Gossip.encode(view, v.getCreator(), other, "j"), joiner);
      }
      assertEquals(4, p.gossip.received.get(), "each read");
      assertEquals(List.of(), p.divergences);
      assertEquals(0, p.gossip.notListedSent.get(), "no one told it is not in a view");

      p.receive(Gossip.encode(id, v.getCreator(), other, "b"), p.b);
      p.receive(Gossip.encode(id, v.getCreator(), other, "j"), joiner);
      assertEquals(List.of(RingDivergence.Kind.CHECKSUM, RingDivergence.Kind.SPLIT_VIEW),
          p.divergences.stream().map(RingDivergence::kind).toList(), "the same for this view: compared");
      assertEquals(1, p.gossip.notListedSent.get());
    }
  }

  /**
   * An answer to a stranger that the channel refuses to send, or that a closing node's gossip
   * thread no longer takes, is said at DEBUG, naming the stranger and the view, and frees its place
   * among the answers waiting: strangers past the bound are still each said, not dropped as a flood.
   */
  @Test
  void answersToStrangers_thatFailToGoOrAreRefusedWhileClosing_areSaidAtDebug() throws Exception {
    AtomicBoolean closing = new AtomicBoolean();
    Executor background = r -> {
      if (closing.get()) {
        throw new RejectedExecutionException("closing (a test)");
      }
      r.run();
    };
    try (Pair p = new Pair("gossip-tells-fail", background);
         NodeLog log = new NodeLog(r -> r.getMessage().startsWith("telling {0} {1} failed")
             || r.getMessage().startsWith("closing: ") || r.getMessage().contains("answers to send already"))) {
      View v = p.view();
      byte[] query = Gossip.encodeListedQuery(v.getViewId().getId(), v.getCreator());
      p.channelA.failing = true;
      Address first = new UUID(7, 5);
      p.receive(query, first);
      assertEquals(List.of(first), p.channelA.refused);
      assertEquals(List.of("telling " + first + " it is not in view " + v.getViewId() + " failed:"
          + " java.lang.IllegalStateException: a send refused (a test)"), log.messages());
      closing.set(true);
      List<String> expected = new ArrayList<>(log.messages());
      for (int i = 0; i <= Gossip.MAX_TELLS_QUEUED; i++) {
        Address stranger = new UUID(8, i);
        p.receive(query, stranger);
        expected.add("closing: " + stranger + " not told it is not in view " + v.getViewId());
      }
      assertEquals(expected, log.messages(), "each said, none dropped as past the bound");
      assertTrue(log.levels().stream().allMatch(Level.FINE::equals), log.levels()::toString);
      assertEquals(1, p.gossip.notListedSent.get(), "only the one handed to the gossip thread counted");
    }
  }

  /**
   * Every ring before that the encoder writes is read back and kept: the empty one and one of as
   * many members as a ring holds ({@link HashRing#MAX_MEMBERS}) included, neither said malformed.
   */
  @Test
  void ringBefore_asTheEncoderWritesIt_isKept_withNoMembersOrAsManyAsARingHolds() throws Exception {
    try (Pair p = new Pair("gossip-ring-before-edges", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().startsWith("malformed message from"))) {
      p.receive(Gossip.encodeRingBefore(11, p.a.self, List.of()), p.b);
      assertEquals(1, p.a.node.ringsBeforeKept(), "no members: kept");
      List<Member> most = new ArrayList<>(HashRing.MAX_MEMBERS);
      for (int i = 0; i < HashRing.MAX_MEMBERS; i++) {
        most.add(new Member("m" + i, 1.0, ""));
      }
      p.receive(Gossip.encodeRingBefore(12, p.a.self, most), p.b);
      assertEquals(2, p.a.node.ringsBeforeKept(), HashRing.MAX_MEMBERS + " members: kept");
      assertEquals(List.of(), log.messages(), "neither malformed");
    }
  }

  /**
   * An account of the ring before that names members gone gracefully is read whole: the newcomer
   * leaves them out of the ring before its first view. One that names more of them than it has
   * members is malformed, and not kept. "I am leaving" and "my hand-off is done" are taken from a
   * member of the view only.
   */
  @Test
  void ringBefore_namingMembersGoneGracefully_isReadWhole_andLeaving_isTakenFromMembersOnly() throws Exception {
    try (Pair p = new Pair("gossip-ring-before-gone", Runnable::run);
         NodeLog log = new NodeLog(r -> r.getMessage().startsWith("malformed message from"))) {
      View v = p.view();
      long id = v.getViewId().getId();
      Member b = meta("b").member();
      Member d = meta("d").member();
      p.receive(Gossip.encodeRingBefore(id, v.getCreator(), List.of(d), List.of("d", "e")), p.b);
      assertEquals(0, p.a.node.ringsBeforeKept(), "two gone of one member: not kept");
      assertEquals(1, log.messages().size(), "said malformed: " + log.messages());
      p.receive(Gossip.encodeRingBefore(id, v.getCreator(), List.of(b, d), List.of("d")), p.b);
      p.a.install(v);
      assertEquals(List.of("b"), p.a.ownership.get(0).previousRing().members().stream().map(Member::id).toList(),
          "d left gracefully");

      byte[] leaving = Gossip.encodeRingBefore(id, v.getCreator(), List.of());
      leaving[0] = Gossip.TYPE_LEAVING; // the same header; the member count after it is not read
      p.receive(leaving, meta("x").newAddress());
      assertEquals(Set.of(), p.a.node.leavingPeers(), "not a member of the view");
      p.receive(leaving, p.b);
      assertEquals(Set.of(p.b), p.a.node.leavingPeers());
      assertEquals(Set.of(), p.a.node.handedOffPeers(), "only said it was leaving");
      leaving[0] = Gossip.TYPE_HANDED_OFF;
      p.receive(leaving, meta("x").newAddress());
      assertEquals(Set.of(), p.a.node.handedOffPeers(), "not a member of the view");
      p.receive(leaving, p.b);
      assertEquals(Set.of(p.b), p.a.node.handedOffPeers());
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
