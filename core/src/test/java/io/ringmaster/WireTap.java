package io.ringmaster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.stack.Protocol;
import org.jgroups.util.ByteArrayDataOutputStream;
import org.jgroups.util.MessageBatch;

/**
 * A test protocol, put into a running stack, that records every message passing it: down, with
 * the thread that sent it (a test's own sends are told apart from the node's), and up. It keeps
 * the "probes" it is told to (a payload that starts with {@code wiretap:}) from going further up,
 * where the node would misread them. A message is recorded once it has gone on, so a record means
 * that call has finished.
 */
final class WireTap extends Protocol {
  private static final byte[] PROBE = "wiretap:".getBytes(StandardCharsets.US_ASCII);

  /**
   * A message as it passed: its payload, its encryption header if it had one, its headers as
   * JGroups prints them, its flags ({@link Message#getFlags()}), the sending thread (down only),
   * and the sender the batch it came up in named (null if it came up alone).
   */
  record Seen(byte[] payload, EncryptHeader sealed, String headers, short flags, Thread thread, Address batchSender) {
    String probe() {
      return payload.length >= PROBE.length && Arrays.equals(payload, 0, PROBE.length, PROBE, 0, PROBE.length)
          ? new String(payload, StandardCharsets.US_ASCII) : null;
    }
  }

  final List<Seen> sentDown = new CopyOnWriteArrayList<>();
  final List<Seen> passedUp = new CopyOnWriteArrayList<>();
  /** The next message this thread sends down gets one bit of its payload flipped, as if changed on the way. */
  volatile Thread corruptNextFrom;
  private final Predicate<String> swallows;

  /** @param swallows which probes, by their text, go no further up */
  WireTap(Predicate<String> swallows) {
    this.swallows = swallows;
  }

  /** A probe message to {@code dest} saying {@code text}. */
  static Message probe(Address dest, String text) {
    return new BytesMessage(dest, ("wiretap:" + text).getBytes(StandardCharsets.US_ASCII));
  }

  /** Sends {@code msg} on down from here: past every protocol above this one. */
  void sendDown(Message msg) {
    down_prot.down(msg);
  }

  /** The messages {@code thread} sent down past this tap. */
  List<Seen> sentBy(Thread thread) {
    return sentDown.stream().filter(s -> s.thread() == thread).toList();
  }

  /** The probes that passed up, as their text. */
  List<String> probesUp() {
    return passedUp.stream().map(Seen::probe).filter(p -> p != null).toList();
  }

  @Override
  public Object down(Message msg) {
    if (corruptNextFrom == Thread.currentThread() && msg.hasArray()) {
      corruptNextFrom = null;
      msg.getArray()[msg.getOffset() + msg.getLength() / 2] ^= 0x10;
    }
    Seen seen = seen(msg, Thread.currentThread(), null); // before the layers below may change it
    Object result = down_prot.down(msg);
    sentDown.add(seen);
    return result;
  }

  @Override
  public Object up(Message msg) {
    Seen seen = seen(msg, null, null);
    if (seen.probe() != null && swallows.test(seen.probe())) {
      passedUp.add(seen);
      return null;
    }
    try {
      return up_prot.up(msg);
    } finally {
      passedUp.add(seen);
    }
  }

  @Override
  public void up(MessageBatch batch) {
    List<Seen> seen = new ArrayList<>();
    batch.removeIf(m -> {
      Seen s = seen(m, null, batch.sender());
      seen.add(s);
      return s.probe() != null && swallows.test(s.probe());
    }, true);
    try {
      if (!batch.isEmpty()) {
        up_prot.up(batch);
      }
    } finally {
      passedUp.addAll(seen);
    }
  }

  private static Seen seen(Message msg, Thread thread, Address batchSender) {
    return new Seen(payload(msg), msg.getHeader(SharedSecretEncrypt.ID), msg.printHeaders(), msg.getFlags(), thread,
        batchSender);
  }

  private static byte[] payload(Message msg) {
    if (msg.hasArray() && msg.getArray() == null) { // a BytesMessage with no payload
      return new byte[0];
    }
    if (msg.hasArray()) {
      return Arrays.copyOfRange(msg.getArray(), msg.getOffset(), msg.getOffset() + msg.getLength());
    }
    if (!msg.hasPayload()) {
      return new byte[0];
    }
    ByteArrayDataOutputStream out = new ByteArrayDataOutputStream();
    try {
      msg.writePayload(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Arrays.copyOf(out.buffer(), out.position());
  }
}
