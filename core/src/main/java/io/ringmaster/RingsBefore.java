package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.MergeView;
import org.jgroups.View;
import org.jgroups.util.UUID;

/**
 * What a newcomer's first ring is compared with: the ring before the view that brought it in.
 * Only the old members know it (in the view, a member that joined with the newcomer looks like any
 * other), so the first few old members of each view that adds members tell the newcomers which
 * members the ring had ({@link #tellNewcomers}), and a newcomer's view thread waits briefly for
 * one such account ({@link #forFirstView}), which the gossip hands over as it arrives
 * ({@link #arrived}). Then the sources of the newcomer's first ranges name the members that hold
 * the data, not members that joined with it.
 */
final class RingsBefore {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /**
   * Tells the members new to the ring in a view which members the ring had before it, and which of
   * them left in that view after saying their hand-off was done.
   */
  interface Sender {
    void send(long viewId, Address viewCreator, List<Member> before, List<String> leftGracefully,
              List<Address> newcomers);
  }

  /**
   * At most how long a node's first view waits for an old member to say what the ring was before
   * it; at most half of {@code startTimeout} too.
   */
  private static final Duration MAX_TIMEOUT = Duration.ofSeconds(5);

  /** How many old members tell the newcomers of a view what the ring was before it. */
  static final int SENDERS = 3;

  /** At most this many announced rings are kept for views not installed yet. */
  private static final int MAX_VIEWS = 16;

  /**
   * Tokens at most in an account of the ring before a join that is built into a ring (about 54 MB),
   * unless the view's own ring has more than a quarter of that: the rest are ignored. A ring before
   * has the view's members that were in it and those that left with the join, so a cluster of up
   * to 4,000 members at 1,024 tokens each, collapsing to a few, stays within it.
   */
  static final long MAX_TOKENS = 1L << 22;

  /** At most this many answers are kept for one view: the {@value #SENDERS} senders', and one to spare. */
  private static final int MAX_ANSWERS_PER_VIEW = SENDERS + 1;

  /**
   * An old member's account of the ring before a view: its members, those of them that left in
   * that view after saying their hand-off was done, and who sent it.
   */
  private record Answer(Address source, List<Member> members, List<String> leftGracefully) { }

  private final String localId;
  /** How long a newcomer's first view waits for an account. */
  private final Duration timeout;
  private final Map<ViewKey, BlockingQueue<Answer>> byView = new ConcurrentHashMap<>();
  private volatile Sender sender = (viewId, creator, before, leftGracefully, newcomers) -> { };

  RingsBefore(String localId, Duration timeout) {
    this.localId = localId;
    this.timeout = timeout;
  }

  /**
   * How long a newcomer's first view waits for the ring before it: {@link #MAX_TIMEOUT}, or half of
   * {@code startTimeout} if that is less, which leaves start() time for the rest.
   */
  static Duration timeout(Duration startTimeout) {
    Duration halfStart = startTimeout.dividedBy(2);
    return halfStart.compareTo(MAX_TIMEOUT) < 0 ? halfStart : MAX_TIMEOUT;
  }

  void setSender(Sender sender) {
    this.sender = sender;
  }

  /**
   * Called on a JGroups thread with an old member's account of the ring before a view, while this
   * node has no ring yet: hands it to the view thread, which may be waiting for it or not there
   * yet, and which takes it only if {@code source} is a member of that view (it may arrive before
   * the view does, so it cannot be checked here).
   */
  void arrived(long viewId, UUID viewCreator, List<Member> before, List<String> leftGracefully, Address source) {
    ViewKey key = ViewKey.of(viewId, viewCreator);
    BlockingQueue<Answer> answers = byView.get(key);
    if (answers == null && byView.size() < MAX_VIEWS) { // not asked for yet: kept, within bounds
      answers = byView.computeIfAbsent(key, k -> new ArrayBlockingQueue<>(MAX_ANSWERS_PER_VIEW));
    }
    if (answers != null) {
      answers.offer(new Answer(source, before, leftGracefully)); // dropped once the view has enough of them
    }
  }

  /**
   * Forgets the accounts no view will read, once view {@code viewId} is handled: all of them once
   * this node has a ring (only its first ring reads them), else those of that view and earlier.
   */
  void forget(long viewId, boolean hasRing) {
    if (hasRing) {
      byView.clear();
    } else {
      byView.keySet().removeIf(k -> k.id() <= viewId);
    }
  }

  /** An account that names no member as gone gracefully, as earlier builds send it (for tests). */
  void arrived(long viewId, UUID viewCreator, List<Member> before, Address source) {
    arrived(viewId, viewCreator, before, List.of(), source);
  }

  /** How many views' accounts are kept (for tests). */
  int kept() {
    return byView.size();
  }

  /**
   * The ring before the view that brought this node into the cluster. Only the old members know
   * it: in the view, a member that joined with this node looks like any other. So this waits for
   * one of them to say which members it had ({@link #tellNewcomers}); the wait ends as soon as the
   * first answer from another member of the view that makes a ring is here, usually within
   * milliseconds (an answer from an address outside the view is not taken: a buggy or foreign
   * sender's list, as large as a message can make it, would otherwise be built into a ring; nor
   * one whose members have more tokens than {@link #MAX_TOKENS} and four times this view's
   * ring, which no ring before it could have).
   * A member the account names as gone gracefully (it said its hand-off was done, and left in this view)
   * is left out, unless this view's ring has a member with its id: it handed its data to the ring
   * without it, so the members of that ring are the sources. One that crashed, or left without
   * saying its hand-off was done, stays in: it is named as the source of what it held, and since
   * it is not in the ring, the application knows that no member may hold that data.
   * Without one (the senders crashed, or none is a Ringmaster node), the ring of this view without
   * this node stands in: then the sources of a range may name a member that joined with it and
   * holds none of the data.
   */
  HashRing forFirstView(View view, HashRing ring, int admitted, Address localAddress) {
    if (admitted <= 1 || view instanceof MergeView) {
      return ring.without(localId); // alone: nothing before; a merge: no old member to ask
    }
    ViewKey key = ViewKey.of(view.getViewId().getId(), view.getViewId().getCreator());
    BlockingQueue<Answer> answers = byView.computeIfAbsent(key, k -> new ArrayBlockingQueue<>(MAX_ANSWERS_PER_VIEW));
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      for (Answer told; (told = answers.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) != null; ) {
        if (!view.containsMember(told.source()) || told.source().equals(localAddress)) {
          Answer ignored = told;
          Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: ignored an account of the ring before view {1} from {2},"
              + " not another member of that view", localId, view.getViewId(), ignored.source()));
          continue;
        }
        long tokens = 0;
        for (Member m : told.members()) {
          tokens += Member.tokenCount(ring.virtualNodes(), Math.max(0, m.weight())); // NaN: 0, refused below
        }
        if (tokens > Math.max(MAX_TOKENS, 4L * ring.tokenCount())) {
          // A ring the sender could not have had (one a member made up, say): building it could
          // take gigabytes, and fail this node's start.
          Answer big = told;
          long named = tokens;
          Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: ignored an account of the ring before view {1} from {2}: its"
              + " members have {3} tokens, more than {4} and four times this view''s ring", localId,
              view.getViewId(), big.source(), named, MAX_TOKENS));
          continue;
        }
        try {
          return ring.withMembers(heldTheData(told, ring)).without(localId);
        } catch (IllegalArgumentException e) {
          // The answer names members no ring can hold (two with one id, say): a sender's bug, or
          // not a Ringmaster message. Another sender's may do; if none, the stand-in below.
          Answer bad = told;
          Logs.quietly(() -> LOG.log(Level.WARNING, localId + ": the members the ring had before view "
              + view.getViewId() + ", as " + bad.source() + " told them, make no ring", e));
        }
      }
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: no other member of view {2} said within {1} ms which members"
          + " the ring had before it (in a way that makes a ring); the sources of this node''s first ranges may"
          + " name members that joined with it", localId, Long.toString(timeout.toMillis()),
          view.getViewId()));
      return ring.without(localId);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the node is closing
      return ring.without(localId);
    } finally {
      byView.remove(key);
    }
  }

  /**
   * The members of an account's ring before that held the data when this view came: all of them
   * but those that left gracefully in it, whose data went to the others.
   */
  private static List<Member> heldTheData(Answer told, HashRing ring) {
    if (told.leftGracefully().isEmpty()) {
      return told.members();
    }
    Set<String> gone = new HashSet<>(told.leftGracefully());
    List<Member> held = new ArrayList<>(told.members().size());
    for (Member m : told.members()) {
      if (!gone.contains(m.id()) || ring.member(m.id()).isPresent()) {
        held.add(m);
      }
    }
    return held;
  }

  /**
   * Tells the members new to the ring in this view which members it had before, if this node is
   * one of the first {@value #SENDERS} members of the view (in view order) that were in
   * the ring before and still are. Only a node whose last view has the id just before this one's
   * tells, so that a node that skipped a view (a leaving coordinator's last view, overtaken by its
   * successor's next one) does not name members that have left; those that tell installed views
   * of the same id, which are the same view unless JGroups gave two views one id (then a
   * newcomer may be told a ring that still has a member that left). More than one, so that a sender that
   * has just crashed (it leaves the view only later) does not leave the newcomers waiting. A
   * newcomer takes the first answer.
   *
   * <p>The account also names the members of the ring before that are not in this view's ring
   * and said their hand-off was done ({@code handedOff}, addresses): they handed their data to the ring
   * without them, not to the newcomers (see {@link #forFirstView}).
   */
  void tellNewcomers(View view, Address self, ClusterNode.Snapshot previous, ClusterNode.Snapshot next,
                     Set<Address> handedOff) {
    Set<Address> before = new HashSet<>(previous.addresses().values());
    List<Address> newcomers = new ArrayList<>();
    for (Address a : next.addresses().values()) {
      if (!before.contains(a)) {
        newcomers.add(a);
      }
    }
    if (newcomers.isEmpty()) {
      return;
    }
    Set<Address> now = new HashSet<>(next.addresses().values());
    int senders = 0;
    for (Address a : view.getMembers()) {
      if (now.contains(a) && before.contains(a)) {
        if (a.equals(self)) {
          sender.send(next.viewId(), next.viewCreator(), previous.ring().members(), leftGracefully(previous, now,
              handedOff), newcomers);
          return;
        }
        if (++senders == SENDERS) {
          return;
        }
      }
    }
  }

  /** The ids of the members of {@code previous}'s ring that said their hand-off was done and are not in {@code now}. */
  private static List<String> leftGracefully(ClusterNode.Snapshot previous, Set<Address> now, Set<Address> handedOff) {
    List<String> left = new ArrayList<>();
    for (Map.Entry<String, Address> e : previous.addresses().entrySet()) {
      if (handedOff.contains(e.getValue()) && !now.contains(e.getValue())) {
        left.add(e.getKey());
      }
    }
    return left;
  }
}
