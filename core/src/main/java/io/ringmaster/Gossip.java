package io.ringmaster;

import io.ringmaster.ring.Member;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.JChannel;
import org.jgroups.Message;
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
 */
final class Gossip {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());
  /** 2: view id, view creator, checksum, sender (1 was the format without the creator, now ignored). */
  static final byte TYPE_CHECKSUM = 2;
  /** View id, view creator, then the ring's members before that view: a count, then id, weight, zone. */
  static final byte TYPE_RING_BEFORE = 3;
  /** Stands for a view creator that is not a UUID (never, with the stacks Ringmaster builds). */
  private static final UUID NO_CREATOR = new UUID(0, 0);

  private final String localId;
  private final JChannel channel;
  private final ClusterNode node;
  private final Consumer<RingDivergence> onDivergence;
  final AtomicLong sent = new AtomicLong();
  final AtomicLong received = new AtomicLong();
  final AtomicLong divergences = new AtomicLong();

  Gossip(String localId, JChannel channel, ClusterNode node, Consumer<RingDivergence> onDivergence) {
    this.localId = localId;
    this.channel = channel;
    this.node = node;
    this.onDivergence = onDivergence;
  }

  /** One round: send our view id and checksum to a random peer. */
  void round() {
    ClusterNode.Snapshot s = node.state();
    if (!s.localInRing()) {
      return; // refused: its ring is the members', but it is not one of them
    }
    List<Address> peers = new ArrayList<>(s.addresses().values());
    peers.remove(channel.getAddress());
    if (peers.isEmpty() || !channel.isConnected()) {
      return;
    }
    Address peer = peers.get(ThreadLocalRandom.current().nextInt(peers.size()));
    try {
      channel.send(new BytesMessage(peer, encode(s.viewId(), s.viewCreator(), s.ring().checksum(), localId)));
      sent.incrementAndGet();
    } catch (Exception e) {
      LOG.log(Level.DEBUG, "gossip to {0} failed: {1}", peer, e);
    }
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

  /** What every message starts with: its type, then the view it is about (number and creator). */
  private static void writeHeader(DataOutputStream out, byte type, long viewId, Address viewCreator)
      throws IOException {
    out.writeByte(type);
    out.writeLong(viewId);
    UUID creator = viewCreator instanceof UUID u ? u : NO_CREATOR;
    out.writeLong(creator.getMostSignificantBits());
    out.writeLong(creator.getLeastSignificantBits());
  }

  /**
   * Tells the members new to the ring in a view which members the ring had before it. On the
   * gossip thread: a send may wait for flow control.
   */
  void sendRingBefore(long viewId, Address viewCreator, List<Member> before, List<Address> newcomers) {
    byte[] payload = encodeRingBefore(viewId, viewCreator, before);
    for (Address newcomer : newcomers) {
      try {
        channel.send(new BytesMessage(newcomer, payload));
      } catch (Exception e) {
        LOG.log(Level.DEBUG, "telling {0} the ring before view {1} failed: {2}", newcomer, viewId, e);
      }
    }
  }

  static byte[] encodeRingBefore(long viewId, Address viewCreator, List<Member> before) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(32 + 24 * before.size());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeHeader(out, TYPE_RING_BEFORE, viewId, viewCreator);
      out.writeInt(before.size());
      for (Member m : before) {
        out.writeUTF(m.id());
        out.writeDouble(m.weight());
        out.writeUTF(m.zone());
      }
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  /** Handles a message on a JGroups thread: decode, then compare and queue, or hand over. Never blocks. */
  void receive(Message msg) {
    if (!msg.hasArray()) {
      return; // not ours: our messages are always a byte array
    }
    byte[] payload = msg.getArray();
    if (payload == null || msg.getLength() < 1) {
      return;
    }
    byte type = payload[msg.getOffset()];
    if (type != TYPE_CHECKSUM && type != TYPE_RING_BEFORE) {
      return;
    }
    try (DataInputStream in = new DataInputStream(
        new java.io.ByteArrayInputStream(payload, msg.getOffset() + 1, msg.getLength() - 1))) {
      long viewId = in.readLong();
      UUID creator = new UUID(in.readLong(), in.readLong());
      if (type == TYPE_CHECKSUM) {
        checksum(viewId, creator, in.readLong(), in.readUTF(), msg.getSrc());
      } else {
        int count = in.readInt();
        if (count < 0 || count > in.available()) {
          throw new IOException("member count " + count);
        }
        List<Member> before = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          before.add(new Member(in.readUTF(), in.readDouble(), in.readUTF()));
        }
        node.ringBeforeArrived(viewId, creator, before);
      }
    } catch (IOException | IllegalArgumentException malformed) {
      LOG.log(Level.DEBUG, "malformed message from {0}: {1}", msg.getSrc(), malformed);
    }
  }

  private void checksum(long viewId, UUID creator, long checksum, String sender, Address source) {
    received.incrementAndGet();
    ClusterNode.Snapshot s = node.state();
    // The same view (number and coordinator) must give the same ring; a partition that reached
    // the same number under another coordinator is another view, not a divergence.
    UUID local = s.viewCreator() instanceof UUID u ? u : NO_CREATOR;
    boolean sameView = s.viewId() == viewId && local.equals(creator); // UUIDs: equal bits, whatever the subclass
    if (!sameView) {
      return;
    }
    // A node gossips only while it is in its own ring, so in the same view its sender must be this
    // node's member with that id: if not, the two disagree on who was admitted, whatever the checksums.
    boolean holder = source != null && source.equals(s.addresses().get(sender));
    if (s.ring().checksum() != checksum || !holder) {
      divergences.incrementAndGet();
      RingDivergence d = new RingDivergence(viewId, sender, s.ring().checksum(), checksum);
      if (holder) {
        LOG.log(Level.ERROR, "{0}: ring divergence in view {1}: {2} has checksum {3}, this node {4}",
            localId, viewId, sender, Long.toHexString(checksum), Long.toHexString(s.ring().checksum()));
      } else {
        LOG.log(Level.ERROR, "{0}: ring divergence in view {1}: {2} says it is in the ring as {3}, where this"
            + " node has {4}", localId, viewId, source, sender,
            s.addresses().containsKey(sender) ? s.addresses().get(sender) : "no member with that id");
      }
      onDivergence.accept(d);
    }
  }
}
