package io.ringmaster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.stack.Protocol;
import org.jgroups.util.ByteArrayDataOutputStream;
import org.jgroups.util.MessageBatch;

/**
 * A test protocol, put into a running stack, that records the payload of every message it passes
 * down, and of every "probe" (a payload that starts with {@code wiretap:}) it passes up; with
 * {@code swallowProbes} it keeps probes from going further up, where the node would misread them.
 * Each message is recorded once it has gone on, so a record means that call has finished.
 */
final class WireTap extends Protocol {
  private static final byte[] PROBE = "wiretap:".getBytes(StandardCharsets.US_ASCII);
  final List<byte[]> sentDown = new CopyOnWriteArrayList<>();
  final List<String> probesUp = new CopyOnWriteArrayList<>();
  /** Up-going payloads of this length get one bit flipped, as if changed on the way (-1: none). */
  volatile int corruptLength = -1;
  final java.util.concurrent.atomic.AtomicInteger corrupted = new java.util.concurrent.atomic.AtomicInteger();
  private final boolean swallowProbes;

  WireTap(boolean swallowProbes) {
    this.swallowProbes = swallowProbes;
  }

  /** A probe message to {@code dest} saying {@code text}. */
  static Message probe(Address dest, String text) {
    return new BytesMessage(dest, ("wiretap:" + text).getBytes(StandardCharsets.US_ASCII));
  }

  /** Sends {@code msg} on down from here: past every protocol above this one. */
  void sendDown(Message msg) {
    down_prot.down(msg);
  }

  @Override
  public Object down(Message msg) {
    byte[] payload = payload(msg); // before the layers below may change it
    Object result = down_prot.down(msg);
    sentDown.add(payload);
    return result;
  }

  @Override
  public Object up(Message msg) {
    corruptIfAsked(msg);
    String probe = probeText(msg);
    if (probe != null && swallowProbes) {
      probesUp.add(probe);
      return null;
    }
    Object result = up_prot.up(msg);
    if (probe != null) {
      probesUp.add(probe);
    }
    return result;
  }

  @Override
  public void up(MessageBatch batch) {
    List<String> probes = new ArrayList<>();
    batch.removeIf(m -> {
      corruptIfAsked(m);
      String probe = probeText(m);
      if (probe != null) {
        probes.add(probe);
      }
      return probe != null && swallowProbes;
    }, true);
    if (!batch.isEmpty()) {
      up_prot.up(batch);
    }
    probesUp.addAll(probes);
  }

  private void corruptIfAsked(Message msg) {
    if (msg.hasArray() && msg.getLength() == corruptLength) {
      msg.getArray()[msg.getOffset() + msg.getLength() / 2] ^= 0x10;
      corrupted.incrementAndGet();
    }
  }

  private static String probeText(Message msg) {
    byte[] p = payload(msg);
    return p.length >= PROBE.length && Arrays.equals(p, 0, PROBE.length, PROBE, 0, PROBE.length)
        ? new String(p, StandardCharsets.US_ASCII) : null;
  }

  private static byte[] payload(Message msg) {
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
