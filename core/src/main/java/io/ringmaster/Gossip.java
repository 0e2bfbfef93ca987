package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.util.UUID;

/**
 * The node's own messages. The agreement check: now and then, tell one random peer {@code (view
 * id, view creator, ring checksum)}. A peer that installed the same view but computed another ring
 * reports a {@link RingDivergence}. Those messages are a few bytes; a receiver only compares a few
 * longs on the JGroups thread and queues the event for the listeners' threads.
 *
 * <p>And the ring before a join: members new to the ring cannot know which members the ring had
 * before the view that admitted them (another newcomer of the same view looks like an old member),
 * so the first few old members of the view tell them ({@link #sendRingBefore}).
 *
 * <p>And "I am leaving" ({@link #sendLeaving}), which a node that closes sends every other
 * Ringmaster node of its view before its listeners' hand-off, so that a member closed at the same
 * time hands nothing to it; then, if its listeners handled the hand-off in time and none threw on it, "my hand-off is
 * done", so that the newcomers of the view it leaves in are told that its data went to the others.
 *
 * <p>And one view id with two member lists, which a race in JGroups 5.5's merge handling can leave
 * behind (docs/operations.md): a member whose view does not list the sender of a checksum for that
 * very view tells it so ({@link #TYPE_NOT_LISTED}). The sender, whose view lists that member, then
 * knows its own view is the one no one else installed, and rejoins; JGroups alone would never end
 * the split, since its merge detection compares view ids only. A member the cluster refuses sends
 * no checksum (it is not in the ring it would vouch for); it asks instead
 * ({@link #TYPE_LISTED_QUERY}), and is told the same way, with no divergence reported.
 *
 * <p>Every one of these messages goes to one member: one sent to the whole cluster is dropped, so
 * that a single forged multicast (on a stack without authentication, anyone on the network can
 * send one in a member's name) cannot make every member rejoin, or report a divergence, at once.
 * A member that answers a stranger's query logs it once per view and stranger (ten such lines at
 * most every 10 s), and has at most {@link #MAX_TELLS_QUEUED} answers waiting to be sent.
 */
final class Gossip {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());
  /**
   * 2: view id, view creator, checksum, sender (1 was the format without the creator, now ignored).
   * The first byte of every message this class sends or reads is in 1..31, a range kept for it: an
   * application's messages on the node's channel (or on a fork of it not yet up) start otherwise,
   * and are dropped here.
   */
  static final byte TYPE_CHECKSUM = 2;
  /** View id, view creator, then the ring's members before that view: a count, then id, weight, zone. */
  static final byte TYPE_RING_BEFORE = 3;
  /**
   * View id, view creator: "my view with this id and creator does not list you", to a member that
   * gossiped a checksum for that view, or asked ({@link #TYPE_LISTED_QUERY}) about it.
   */
  static final byte TYPE_NOT_LISTED = 4;
  /**
   * View id, view creator: "does your view with this id and creator list me?", from a member the
   * cluster refuses, to a member of its view. Answered only when it does not, with
   * {@link #TYPE_NOT_LISTED}; releases without this type ignore it.
   */
  static final byte TYPE_LISTED_QUERY = 5;
  /**
   * View id, view creator: "I am leaving", from a member whose graceful leave has begun, to every
   * other Ringmaster node of its view (those the cluster refuses too: a view may let one in before
   * the sender has left), before its listeners' hand-off; from a member the cluster refuses too (a
   * view may let it in before it has left). A member that is leaving too then hands nothing to it
   * (unless no member that owns anything stays): receivers keep the sender's address, never its
   * id, which a member the cluster refuses shares with the member that holds it. Each member
   * answers it ({@link #TYPE_LEAVING_ACK}). Releases without this type ignore it.
   */
  static final byte TYPE_LEAVING = 6;
  /**
   * View id, view creator: "my hand-off is done", from a member that is leaving, to every other
   * Ringmaster node of its view, once every listener of its handled the LEAVING change within
   * {@code leaveTimeout} and each listener given that change returned from it normally (none threw
   * on it, and none was removed before it returned), just before it leaves. The old members that tell
   * the newcomers of the view it leaves in what the ring was before it name only such members as
   * gone gracefully: one that said it was leaving but not this still counts as holding its data.
   * Releases without this type ignore it.
   */
  static final byte TYPE_HANDED_OFF = 7;
  /**
   * View id, view creator: "I have your word that your hand-off is done", the answer to
   * {@link #TYPE_HANDED_OFF}, sent once the word is kept, or ignored (from a member in neither of the
   * receiver's views, which no wait would change). The leaver waits for it from every member
   * it told (at most {@link #ANSWER_TIMEOUT}) before it leaves: the word travels on its own, the
   * view that removes the leaver through the coordinator, and without the wait the view can be
   * handled first, so that a member that tells the newcomers of that view what the ring was before
   * names the leaver as still holding its data. Releases without this type ignore it (and send none:
   * a leaver waits for them until the timeout).
   */
  static final byte TYPE_HANDED_OFF_ACK = 8;
  /**
   * View id, view creator: "I have your word that you are leaving", the answer to
   * {@link #TYPE_LEAVING}, sent once the word is kept, or ignored. A node that closes waits for it
   * from every member it told (at most {@link #ANSWER_TIMEOUT}) before it makes its LEAVING change. The word
   * and the answer go in the order each member sent them (unlike the other messages of this class,
   * not out of band), so of two nodes that close at the same moment, each told the other's word
   * before it answered it, at least one has the other's word when it makes its change, and hands it
   * nothing: they do not push to each other, unless an answer comes after the timeout. Releases
   * without this type ignore it (a closing node waits for them until the timeout).
   */
  static final byte TYPE_LEAVING_ACK = 9;
  /** How long a node that closes waits, at most, for the answers to each of its two words. */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(2);
  /** Stands for a view creator that is not a UUID (never, with the stacks Ringmaster builds). */
  private static final UUID NO_CREATOR = new UUID(0, 0);

  private final String localId;
  private final JChannel channel;
  private final ClusterNode node;
  private final Consumer<RingDivergence> onDivergence;
  /** Runs sends a JGroups thread must not wait for (they may wait for the transport's queue). */
  private final Executor background;
  /** Told this node's view when a member of that view does not list this node in it. */
  private final Consumer<View> onNotListed;
  final AtomicLong sent = new AtomicLong();
  final AtomicLong received = new AtomicLong();
  /**
   * The divergences found of a split view (SPLIT_VIEW), and the others; apart, so that stats() gives
   * the others as the difference of two counts it reads, which never goes back.
   */
  final AtomicLong splitViewDivergences = new AtomicLong();
  final AtomicLong otherDivergences = new AtomicLong();
  /**
   * The divergences logged in the current view, with the address that sent each: a peer that
   * keeps gossiping the same disagreement, round after round, is logged once per view (the
   * listeners' reports are kept to once per view by each listener's own memory).
   */
  private final OncePerView logged = new OncePerView();
  /** "Not in view" messages not believed: for another view, or from a member outside it. */
  final AtomicLong notListedIgnored = new AtomicLong();
  /** {@link #TYPE_NOT_LISTED} messages this node queued to send. */
  final AtomicLong notListedSent = new AtomicLong();
  /** {@link #TYPE_LISTED_QUERY} messages sent (by this node, while refused) and received. */
  final AtomicLong queriesSent = new AtomicLong();
  final AtomicLong queriesReceived = new AtomicLong();
  /** Messages of this class sent to the whole cluster, dropped unread. */
  final AtomicLong multicastsDropped = new AtomicLong();
  /** Answers "your view is not mine" queued at most, beyond which a stranger's query goes unanswered. */
  static final int MAX_TELLS_QUEUED = 64;
  private final AtomicInteger tellsQueued = new AtomicInteger();
  /** The members a node that closes awaits the answer of, to one of its words; null but while it waits. */
  private volatile Awaited awaitedAnswers;
  /** The members told "not in view", by view: each is logged once a view (guarded by itself). */
  private final OncePerView told = new OncePerView();
  /** Those WARNINGs, ten at most every 10 s (a forger can name a new member in each query). */
  private final DropLog.Window toldLines = new DropLog.Window(System::nanoTime, DropLog.MAX_LINES);
  /** The ERROR lines of divergences, at most {@link DropLog#MAX_LINES} every 10 s (the reports themselves all go on). */
  private final DropLog.Window divergenceLines = new DropLog.Window(System::nanoTime, DropLog.MAX_LINES);

  /**
   * @param background  runs the replies to checksums from members this node's view does not list, and
   *                    the answers to the words of a node that closes
   * @param onNotListed called on a JGroups thread, without waiting, when a member of this node's
   *                    view says that view does not list this node
   */
  Gossip(String localId, JChannel channel, ClusterNode node, Consumer<RingDivergence> onDivergence,
         Executor background, Consumer<View> onNotListed) {
    this.localId = localId;
    this.channel = channel;
    this.node = node;
    this.onDivergence = onDivergence;
    this.background = background;
    this.onNotListed = onNotListed;
  }

  /**
   * One round: send our view id and checksum to a random peer; or, while the cluster refuses this
   * node, ask a random member of its view whether that member's view lists it.
   */
  void round() {
    ClusterNode.Snapshot s = node.state();
    if (node.isClosed()) { // read after the state: close() sets it before it publishes its last one
      return; // its last ring is the one it leaves behind, under its last view id: nothing to compare
    }
    if (!s.localInRing()) {
      queryListed(); // refused: its ring is the members', but it is not one of them
      return;
    }
    if (!Objects.equals(channel.getAddress(), s.addresses().get(localId))) {
      // Rejoined: the channel has its new address before the first view under it is installed. A
      // checksum now would carry the old view from an address that view does not hold, and a
      // peer still in that view would report a divergence that is none.
      return;
    }
    Address peer = randomPeer(s.addresses().values());
    if (peer == null) {
      return;
    }
    Address self = channel.getAddress();
    try {
      channel.send(control(peer, encode(s.viewId(), s.viewCreator(), s.ring().checksum(), localId)));
      sent.incrementAndGet();
    } catch (Exception e) {
      sendFailed("sending the ring checksum to " + peer, e, self);
    }
  }

  /**
   * A send of a round failed. While the channel is connected that is a failing gossip, thrown to the
   * round's caller, which logs it at WARNING when the rounds start failing: a stack that throws at
   * every send must not go unseen. A channel that is not connected (a rejoin between its leave and
   * its join, a node closing), or no longer under the address it sent from (a rejoin that ended
   * meanwhile), is expected to refuse: logged at DEBUG.
   */
  private void sendFailed(String what, Exception e, Address sentFrom) {
    if (!channel.isConnected() || !Objects.equals(channel.getAddress(), sentFrom)) {
      LOG.log(Level.DEBUG, "{0} failed, the channel not connected, or connected again since: {1}", what, e);
      return;
    }
    throw new IllegalStateException(what + " failed: " + e, e);
  }

  /**
   * A refused node sends no checksum, yet it may be the one member of a split view its peers do not
   * list (one view id with two member lists, see the class comment), with nothing else to tell it.
   * So it asks one Ringmaster member of its channel's view a round (a plain JGroups member would
   * not answer) whether that member's view lists it.
   */
  private void queryListed() {
    View v = channel.getView();
    Address peer = v == null ? null
        : randomPeer(v.getMembers().stream().filter(NodeMetadata::isRingmasterNode).toList());
    if (peer == null) {
      return;
    }
    Address self = channel.getAddress();
    try {
      channel.send(control(peer, encodeListedQuery(v.getViewId().getId(), v.getViewId().getCreator())));
      queriesSent.incrementAndGet();
    } catch (Exception e) {
      sendFailed("asking " + peer + " whether view " + v.getViewId() + " lists this node", e, self);
    }
  }

  /**
   * One of the node's own messages to {@code to}: out of band and past flow control. They are
   * small (a ring before a view, the largest, holds one id, weight and zone per member), need no
   * order, and must not wait: an application that exhausts its credits towards a slow member (its
   * traffic over a fork channel shares them) would otherwise hold the gossip thread, which also
   * tells newcomers the ring before their view and retries failed views.
   */
  static Message control(Address to, byte[] payload) {
    return new BytesMessage(to, payload).setFlag(Message.Flag.OOB, Message.Flag.NO_FC);
  }

  /**
   * A message of this class to one member, delivered in the order this node sent it among its
   * messages to that member that are not out of band: "I am leaving" and its answer
   * ({@link #TYPE_LEAVING_ACK} says why).
   */
  static Message ordered(Address to, byte[] payload) {
    return new BytesMessage(to, payload).setFlag(Message.Flag.NO_FC);
  }

  /** A random one of {@code members} other than this node, or null if none (or not connected). */
  private Address randomPeer(Collection<Address> members) {
    List<Address> peers = new ArrayList<>(members);
    peers.remove(channel.getAddress());
    if (peers.isEmpty() || !channel.isConnected()) {
      return null;
    }
    return peers.get(ThreadLocalRandom.current().nextInt(peers.size()));
  }

  static byte[] encode(long viewId, Address viewCreator, long checksum, String senderId) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(48);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeHeader(out, TYPE_CHECKSUM, viewId, viewCreator);
      out.writeLong(checksum);
      out.writeUTF(senderId);
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  static byte[] encodeNotListed(long viewId, Address viewCreator) {
    return encodeHeader(TYPE_NOT_LISTED, viewId, viewCreator);
  }

  static byte[] encodeListedQuery(long viewId, Address viewCreator) {
    return encodeHeader(TYPE_LISTED_QUERY, viewId, viewCreator);
  }

  /** A message that is its header alone. */
  private static byte[] encodeHeader(byte type, long viewId, Address viewCreator) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(25);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeHeader(out, type, viewId, viewCreator);
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  /** A view creator as the UUID messages carry; {@link #NO_CREATOR} for one that is not a UUID. */
  static UUID creatorBits(Address creator) {
    return creator instanceof UUID u ? u : NO_CREATOR;
  }

  /** What every message starts with: its type, then the view it is about (number and creator). */
  private static void writeHeader(DataOutputStream out, byte type, long viewId, Address viewCreator)
      throws IOException {
    out.writeByte(type);
    out.writeLong(viewId);
    UUID creator = creatorBits(viewCreator);
    out.writeLong(creator.getMostSignificantBits());
    out.writeLong(creator.getLeastSignificantBits());
  }

  /**
   * Tells the members new to the ring in a view which members the ring had before it, and which of
   * those left in that view after they said their hand-off was done ({@link #TYPE_HANDED_OFF}). On the
   * gossip thread, not a JGroups one: a send may still wait for the transport's queue.
   */
  void sendRingBefore(long viewId, Address viewCreator, List<Member> before, List<String> leftGracefully,
                      List<Address> newcomers) {
    byte[] payload = encodeRingBefore(viewId, viewCreator, before, leftGracefully);
    for (Address newcomer : newcomers) {
      try {
        channel.send(control(newcomer, payload));
      } catch (Exception e) {
        LOG.log(Level.DEBUG, "telling {0} the ring before view {1} failed: {2}", newcomer, Long.toString(viewId), e);
      }
    }
  }

  /** An account of the ring before a view that names no member as gone gracefully, as earlier builds sent it. */
  static byte[] encodeRingBefore(long viewId, Address viewCreator, List<Member> before) {
    return encodeRingBefore(viewId, viewCreator, before, List.of());
  }

  /**
   * The ring's members before a view, then, only if there are any, the ids of those that left in
   * that view after saying their hand-off was done: a count and the ids. A release that does not know
   * that part reads the members and ignores the rest.
   */
  static byte[] encodeRingBefore(long viewId, Address viewCreator, List<Member> before, List<String> leftGracefully) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(32 + 24 * before.size());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeHeader(out, TYPE_RING_BEFORE, viewId, viewCreator);
      out.writeInt(before.size());
      for (Member m : before) {
        out.writeUTF(m.id());
        out.writeDouble(m.weight());
        out.writeUTF(m.zone());
      }
      if (!leftGracefully.isEmpty()) {
        out.writeInt(leftGracefully.size());
        for (String id : leftGracefully) {
          out.writeUTF(id);
        }
      }
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  /**
   * Tells every other Ringmaster node of this node's view that it is leaving
   * ({@link #TYPE_LEAVING}), or, with {@code handedOff}, that its hand-off is done
   * ({@link #TYPE_HANDED_OFF}): the members of the ring {@code s} holds, those of its view that the
   * cluster refuses (one let in later may close before this node has left, or tell a newcomer of
   * the view this node leaves in what the ring was), and those of the channel's view, which may be
   * a view ahead. The first word in order ({@link #ordered}), the second out of band. On the thread
   * that closes the node: a send may wait for the transport's queue.
   */
  private void sendLeaving(ClusterNode.Snapshot s, boolean handedOff) {
    Set<Address> members = new LinkedHashSet<>();
    addRecipients(s, members);
    byte[] payload = encodeLeaving(s.viewId(), s.viewCreator(), handedOff);
    for (Address member : members) {
      try {
        channel.send(handedOff ? control(member, payload) : ordered(member, payload));
      } catch (Exception e) {
        LOG.log(Level.DEBUG, "telling {0} that {1} {2} failed: {3}", member, localId,
            handedOff ? "handed its data off" : "is leaving", e);
      }
    }
  }

  /**
   * Adds the members {@link #sendLeaving} tells to {@code members}: see there. Only Ringmaster nodes:
   * a plain JGroups member's application would get the message, and it sends no answer to wait for.
   */
  private void addRecipients(ClusterNode.Snapshot s, Set<Address> members) {
    members.addAll(s.addresses().values());
    if (s.view() != null) {
      s.view().getMembers().stream().filter(NodeMetadata::isRingmasterNode).forEach(members::add);
    }
    View latest = channel.getView();
    if (latest != null) {
      latest.getMembers().stream().filter(NodeMetadata::isRingmasterNode).forEach(members::add);
    }
    members.remove(channel.getAddress());
    if (s.localInRing()) { // the ring's address of this node's id is its own, an earlier one after a rejoin
      members.remove(s.addresses().get(localId));
    }
  }

  /**
   * Says one of the two words as {@link #sendLeaving} does, then waits until every member told
   * answers ({@link #TYPE_LEAVING_ACK}, {@link #TYPE_HANDED_OFF_ACK}) or {@code timeout} passes,
   * whichever comes first; but for the members that said they are leaving too (one may have closed,
   * and a closed node answers nothing). An interrupt ends the wait, and is kept.
   *
   * @return the members whose answer did not come
   */
  Set<Address> sayAndAwaitAnswers(ClusterNode.Snapshot s, boolean handedOff, Duration timeout) {
    Set<Address> waitFor = ConcurrentHashMap.newKeySet();
    addRecipients(s, waitFor);
    waitFor.removeAll(node.leavingPeers());
    Awaited awaited = new Awaited(handedOff ? TYPE_HANDED_OFF_ACK : TYPE_LEAVING_ACK, waitFor);
    awaitedAnswers = awaited;
    try {
      sendLeaving(s, handedOff);
      awaited.await(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      awaitedAnswers = null;
    }
    return Set.copyOf(waitFor);
  }

  /** The members whose answer of one type a node that closes awaits: removed as each answers. */
  private static final class Awaited {
    private final byte type;
    private final Set<Address> members;

    Awaited(byte type, Set<Address> members) {
      this.type = type;
      this.members = members;
    }

    /** On a JGroups thread: never blocks but for the monitor, held only to wake the waiter. */
    void answered(byte answer, Address member) {
      if (answer == type && members.remove(member)) {
        synchronized (this) {
          notifyAll();
        }
      }
    }

    synchronized void await(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      for (long left = timeout.toNanos(); !members.isEmpty() && left > 0; left = deadline - System.nanoTime()) {
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }

    boolean waiting(byte answer) {
      return answer == type && !members.isEmpty();
    }
  }

  /** Whether this node, closing, waits for the answers to one of its words (for tests). */
  boolean awaitingAnswers(boolean handedOff) {
    Awaited a = awaitedAnswers;
    return a != null && a.waiting(handedOff ? TYPE_HANDED_OFF_ACK : TYPE_LEAVING_ACK);
  }

  /** "I am leaving", or with {@code handedOff} "my hand-off is done": the header alone. */
  static byte[] encodeLeaving(long viewId, Address viewCreator, boolean handedOff) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(32);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeHeader(out, handedOff ? TYPE_HANDED_OFF : TYPE_LEAVING, viewId, viewCreator);
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  /** Handles a message on a JGroups thread: decode, then compare and queue, or hand over. Never blocks. */
  void receive(Message msg) {
    if (node.isClosed()) {
      // Until its channel closes: its ring, the one it leaves behind, differs from its peers' under
      // the same view id, and a closing node asks nothing and answers nothing.
      return;
    }
    if (!msg.hasArray()) {
      return; // not ours: our messages are always a byte array
    }
    byte[] payload = msg.getArray();
    if (payload == null || msg.getLength() < 1) {
      return;
    }
    byte type = payload[msg.getOffset()];
    if (type != TYPE_CHECKSUM && type != TYPE_RING_BEFORE && type != TYPE_NOT_LISTED && type != TYPE_LISTED_QUERY
        && type != TYPE_LEAVING && type != TYPE_HANDED_OFF && type != TYPE_HANDED_OFF_ACK
        && type != TYPE_LEAVING_ACK) {
      return;
    }
    if (msg.getDest() == null) { // each is sent to one member: a multicast is not one of ours
      multicastsDropped.incrementAndGet();
      Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: dropped a gossip message sent to every member by {1}",
          localId, msg.getSrc()));
      return;
    }
    try (DataInputStream in = new DataInputStream(
        new ByteArrayInputStream(payload, msg.getOffset() + 1, msg.getLength() - 1))) {
      long viewId = in.readLong();
      UUID creator = new UUID(in.readLong(), in.readLong());
      if (type == TYPE_CHECKSUM) {
        checksum(viewId, creator, in.readLong(), readUtf(in), msg.getSrc());
      } else if (type == TYPE_NOT_LISTED) {
        notListed(viewId, creator, msg.getSrc());
      } else if (type == TYPE_LISTED_QUERY) {
        listedQuery(viewId, creator, msg.getSrc());
      } else if (type == TYPE_LEAVING || type == TYPE_HANDED_OFF) {
        boolean handedOff = type == TYPE_HANDED_OFF;
        node.leavingArrived(msg.getSrc(), handedOff);
        if (msg.getSrc() != null) { // kept (or not, from a member outside the view): the sender may go on
          queueSend(msg.getSrc(), encodeHeader(handedOff ? TYPE_HANDED_OFF_ACK : TYPE_LEAVING_ACK, viewId, creator),
              handedOff ? "its word that its hand-off is done is kept" : "its word that it is leaving is kept",
              !handedOff);
        }
      } else if (type == TYPE_HANDED_OFF_ACK || type == TYPE_LEAVING_ACK) {
        Awaited a = awaitedAnswers;
        if (a != null) {
          a.answered(type, msg.getSrc());
        }
      } else {
        int count = in.readInt();
        if (count < 0 || count > in.available() || count > HashRing.MAX_MEMBERS) {
          throw new IOException("member count " + count);
        }
        List<Member> before = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          before.add(new Member(readUtf(in), in.readDouble(), readUtf(in)));
        }
        List<String> leftGracefully = new ArrayList<>();
        if (in.available() > 0) { // an earlier build sends no such part
          int left = in.readInt();
          if (left < 0 || left > count || left > in.available()) {
            throw new IOException("count of members gone gracefully " + left + ", of " + count + " members");
          }
          for (int i = 0; i < left; i++) {
            leftGracefully.add(readUtf(in));
          }
        }
        node.ringBeforeArrived(viewId, creator, before, leftGracefully, msg.getSrc());
      }
    } catch (IOException | IllegalArgumentException malformed) {
      Logs.quietly(() -> LOG.log(Level.DEBUG, "malformed message from {0}: {1}", msg.getSrc(), malformed));
    }
  }

  /**
   * {@link DataInputStream#readUTF()}, but a length beyond the bytes left is refused before anything
   * is read: the JDK sizes its buffers by the length (up to 384 KB for 65,535), so a message of a
   * few bytes could make each receiver allocate that much.
   */
  private static String readUtf(DataInputStream in) throws IOException {
    in.mark(Short.BYTES);
    int length = in.readUnsignedShort();
    if (length > in.available()) {
      throw new EOFException("a string of " + length + " bytes, " + in.available() + " left");
    }
    in.reset();
    return in.readUTF();
  }

  private void checksum(long viewId, UUID creator, long checksum, String sender, Address source) {
    received.incrementAndGet();
    ClusterNode.Snapshot s = node.state();
    if (node.isClosed()) { // read after the state, as in round(): a ring left behind compares with nothing
      return;
    }
    // The same view (number and coordinator) must give the same ring; a partition that reached
    // the same number under another coordinator is another view, not a divergence.
    UUID local = creatorBits(s.viewCreator());
    // UUIDs: equal bits, whatever the subclass. A node with no view yet compares with nothing.
    boolean sameView = s.viewId() >= 0 && s.viewId() == viewId && local.equals(creator);
    if (!sameView) {
      return;
    }
    // A node gossips only while it is in its own ring, so in the same view its sender must be this
    // node's member with that id: if not, the two disagree on who was admitted, whatever the checksums.
    boolean holder = source != null && source.equals(s.addresses().get(sender));
    boolean notListed = false;
    if (!holder && source != null) {
      // The ring's own view, not the channel's: that may have moved on while the next ring is built
      // (a split healing), and then could not say whether this view lists the sender.
      View v = s.view();
      notListed = v != null && !v.containsMember(source);
      if (notListed) {
        tellNotListed(source, v);
      }
    }
    if (s.ring().checksum() != checksum || !holder) {
      (notListed ? splitViewDivergences : otherDivergences).incrementAndGet(); // one of the two: see stats()
      RingDivergence d = new RingDivergence(viewId, sender, s.ring().checksum(), checksum,
          notListed ? RingDivergence.Kind.SPLIT_VIEW
              : holder ? RingDivergence.Kind.CHECKSUM : RingDivergence.Kind.HOLDER);
      boolean first;
      synchronized (logged) { // JGroups threads, one per sender or batch
        first = logged.first(ViewKey.of(viewId, creator), List.of(d, String.valueOf(source)));
      }
      // Handed on first: a logger that throws must not keep the listeners from hearing of it (the
      // report is taken once per view and sender).
      onDivergence.accept(d);
      boolean lineDue = first && (notListed || divergenceLines.tryTake());
      boolean split = notListed;
      Logs.quietly(() -> {
        if (!lineDue) {
          // Found again in this view, or past the ERROR lines of 10 s: a sender names its id and
          // checksum freely, so a flood of new ones would be a flood of lines.
          LOG.log(Level.DEBUG, "{0}: {1} found again, or past the lines of 10 s", localId, d);
        } else if (split) {
          LOG.log(Level.DEBUG, "{0}: divergence in view {1} reported; {2} rejoins", localId, Long.toString(viewId),
              sender);
        } else if (holder) {
          LOG.log(Level.ERROR, "{0}: ring divergence in view {1}: {2} has checksum {3}, this node {4}", localId,
              Long.toString(viewId), sender, Long.toHexString(checksum), Long.toHexString(s.ring().checksum()));
        } else {
          LOG.log(Level.ERROR, "{0}: ring divergence in view {1}: {2} says it is in the ring as {3}, where this"
              + " node has {4}", localId, Long.toString(viewId), source, sender,
              s.addresses().containsKey(sender) ? s.addresses().get(sender) : "no member with that id");
        }
      });
    }
  }

  /**
   * A member the cluster refuses asks whether this node's view lists it: told only when this
   * node's view has that very id and creator and does not list it. A query about any other view
   * says nothing about a split (the asker, or this node, is in a view the other has not got yet).
   */
  private void listedQuery(long viewId, UUID creator, Address source) {
    View v = channelView(viewId, creator);
    if (v != null && source != null && !v.containsMember(source)) {
      tellNotListed(source, v);
    }
    queriesReceived.incrementAndGet(); // after the answer is counted: tests read the two in this order
  }

  /**
   * The channel's view, if it is the view with this number and creator. The ring's view can lag
   * behind it, so what the channel lists is what decides who is a member.
   */
  private View channelView(long viewId, UUID creator) {
    View v = channel.getView();
    if (v == null || v.getViewId().getId() != viewId) {
      return null;
    }
    return creatorBits(v.getViewId().getCreator()).equals(creator) ? v : null;
  }

  /**
   * A member gossiped a checksum for this node's view, or asked about it, and that view does not
   * list it: JGroups installed one view id with two member lists. Tell it, from the gossip thread
   * (a send may block).
   */
  private void tellNotListed(Address member, View view) {
    boolean first;
    synchronized (told) { // JGroups threads, one per sender or batch
      first = told.first(view.getViewId(), member);
    }
    Level level = first && toldLines.tryTake() ? Level.WARNING : Level.DEBUG;
    // Quietly: the member must still be told, or the split stays.
    Logs.quietly(() -> LOG.log(level, "{0}: {1} says it is in view {2}, which does not list it: one view id"
        + " with two member lists (a JGroups merge race); telling it to rejoin", localId, NodeMetadata.describe(member),
        view.getViewId()));
    if (queueSend(member, encodeNotListed(view.getViewId().getId(), view.getViewId().getCreator()),
        "it is not in view " + view.getViewId(), false)) {
      notListedSent.incrementAndGet();
    }
  }

  /**
   * Sends {@code payload} to {@code member} from the background executor: a JGroups thread must not
   * wait for the transport's queue. At most {@link #MAX_TELLS_QUEUED} such sends wait at once (a
   * flood of queries gets no more); one that fails, or finds the node closing, is logged at DEBUG.
   * With {@code ordered}, as {@link #ordered} sends it, else out of band.
   *
   * @return whether the send was queued
   */
  private boolean queueSend(Address member, byte[] payload, String what, boolean ordered) {
    if (tellsQueued.incrementAndGet() > MAX_TELLS_QUEUED) { // a flood of queries: answers still waiting to go
      tellsQueued.decrementAndGet();
      Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: {1} answers to send already, {2} not told", localId,
          MAX_TELLS_QUEUED, member));
      return false;
    }
    try {
      background.execute(() -> {
        try {
          channel.send(ordered ? ordered(member, payload) : control(member, payload));
        } catch (Exception e) {
          LOG.log(Level.DEBUG, "telling {0} {1} failed: {2}", member, what, e);
        } finally {
          tellsQueued.decrementAndGet();
        }
      });
      return true;
    } catch (RejectedExecutionException closing) {
      tellsQueued.decrementAndGet();
      LOG.log(Level.DEBUG, "closing: {0} not told {1}", member, what);
      return false;
    }
  }

  /**
   * A member says its view with this id does not list this node. Believed only when this node's
   * channel is in that very view and the view lists the sender: then the two views have one id and
   * different members, and this node's is the one its peers did not install.
   */
  private void notListed(long viewId, UUID creator, Address source) {
    View v = channelView(viewId, creator);
    if (v == null || source == null || !v.containsMember(source) || source.equals(channel.getAddress())) {
      notListedIgnored.incrementAndGet();
      Logs.quietly(() -> LOG.log(Level.DEBUG, "{0}: ignored \"not in view {1}\" from {2}: this node''s view"
          + " is {3}", localId, Long.toString(viewId), source,
          channel.getView() == null ? "none" : channel.getView().getViewId()));
      return;
    }
    onNotListed.accept(v);
  }
}
