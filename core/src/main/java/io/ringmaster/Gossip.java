package io.ringmaster;

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
 * The agreement check: now and then, tell one random peer {@code (view id, view creator, ring
 * checksum)}. A peer that installed the same view but computed another ring reports a
 * {@link RingDivergence}.
 * Messages are a few bytes; a receiver only compares a few longs on the JGroups thread and queues
 * the event for the listeners' threads.
 */
final class Gossip {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());
  /** 2: view id, view creator, checksum, sender (1 was the format without the creator, now ignored). */
  static final byte TYPE_CHECKSUM = 2;
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
      out.writeByte(TYPE_CHECKSUM);
      out.writeLong(viewId);
      UUID creator = viewCreator instanceof UUID u ? u : NO_CREATOR;
      out.writeLong(creator.getMostSignificantBits());
      out.writeLong(creator.getLeastSignificantBits());
      out.writeLong(checksum);
      out.writeUTF(senderId);
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
    return bytes.toByteArray();
  }

  /** Handles a message on a JGroups thread: decode, compare, queue. Never blocks. */
  void receive(Message msg) {
    if (!msg.hasArray()) {
      return; // not ours: our gossip is always a byte array
    }
    byte[] payload = msg.getArray();
    if (payload == null || msg.getLength() < 1 || payload[msg.getOffset()] != TYPE_CHECKSUM) {
      return;
    }
    long viewId;
    UUID creator;
    long checksum;
    String sender;
    try (DataInputStream in = new DataInputStream(
        new java.io.ByteArrayInputStream(payload, msg.getOffset() + 1, msg.getLength() - 1))) {
      viewId = in.readLong();
      creator = new UUID(in.readLong(), in.readLong());
      checksum = in.readLong();
      sender = in.readUTF();
    } catch (IOException malformed) {
      LOG.log(Level.DEBUG, "malformed gossip from {0}", msg.getSrc());
      return;
    }
    received.incrementAndGet();
    ClusterNode.Snapshot s = node.state();
    // The same view (number and coordinator) must give the same ring; a partition that reached
    // the same number under another coordinator is another view, not a divergence.
    UUID local = s.viewCreator() instanceof UUID u ? u : NO_CREATOR;
    boolean sameView = s.viewId() == viewId && local.equals(creator); // UUIDs: equal bits, whatever the subclass
    if (sameView && s.ring().checksum() != checksum) {
      divergences.incrementAndGet();
      RingDivergence d = new RingDivergence(viewId, sender, s.ring().checksum(), checksum);
      LOG.log(Level.ERROR, "{0}: ring divergence in view {1}: {2} has checksum {3}, this node {4}",
          localId, viewId, sender, Long.toHexString(checksum), Long.toHexString(s.ring().checksum()));
      onDivergence.accept(d);
    }
  }
}
