package io.ringmaster;

import java.util.ArrayList;
import java.util.List;
import org.jgroups.Header;
import org.jgroups.Message;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.SYM_ENCRYPT;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.JoinRsp;
import org.jgroups.util.MessageBatch;
import org.jgroups.util.Util;

/**
 * {@code SYM_ENCRYPT} keyed by the cluster's shared secret (see {@link SharedSecret}) instead of a
 * keystore file: every member that knows the secret derives the same AES key. Set
 * {@code keystore_name} to use a keystore after all. Used by {@code config/jgroups/secure-tcp.xml}.
 *
 * <p>Plain {@code SYM_ENCRYPT} drops every message it cannot decrypt, so a joiner with a wrong
 * secret never reaches {@code AUTH}: it waits out its join timeout and then runs alone, a silent
 * split. This protocol lets exactly two kinds of messages pass unencrypted so that {@code AUTH}
 * (above it) can refuse the joiner and the joiner learns why: a join or merge request without a
 * payload (nothing secret in it; {@code AUTH} checks its token), and a join response that carries
 * only a failure reason (it can only make a join fail, never admit anyone).
 */
public class SharedSecretEncrypt extends SYM_ENCRYPT {
  /** Our protocol id, outside the range JGroups reserves for its own protocols. */
  public static final short ID = 1917;
  private static final short GMS_ID = ClassConfigurator.getProtocolId(GMS.class);

  static {
    if (ClassConfigurator.getProtocol(ID) == null) {
      ClassConfigurator.addProtocol(ID, SharedSecretEncrypt.class);
    }
  }

  @Override
  public void init() throws Exception {
    if (keystore_name == null && secret_key == null) {
      setSecretKey(SharedSecret.aesKey(SharedSecret.require(getClass().getSimpleName())));
    }
    super.init();
  }

  @Override
  public Object up(Message msg) {
    return passesInPlain(msg) ? up_prot.up(msg) : super.up(msg);
  }

  @Override
  public void up(MessageBatch batch) {
    List<Message> plain = new ArrayList<>();
    batch.removeIf(m -> passesInPlain(m) && plain.add(m), true);
    plain.forEach(this::up);
    if (!batch.isEmpty()) {
      super.up(batch);
    }
  }

  /** A rejection goes out in plain text: the joiner it refuses cannot decrypt anything we send. */
  @Override
  public Object down(Message msg) {
    return isRejection(msg) ? down_prot.down(msg) : super.down(msg);
  }

  /** A bare request has nothing to decrypt, even with our header; a rejection arrives without one. */
  private boolean passesInPlain(Message msg) {
    return isBareRequest(msg) || (msg.getHeader(this.id) == null && isRejection(msg));
  }

  private static GMS.GmsHeader gmsHeader(Message msg) {
    Header h = msg.getHeader(GMS_ID);
    return h instanceof GMS.GmsHeader gms ? gms : null;
  }

  /** A join or merge request without a payload: nothing secret in it, and AUTH checks its token. */
  private static boolean isBareRequest(Message msg) {
    GMS.GmsHeader gms = gmsHeader(msg);
    if (gms == null || msg.hasPayload()) {
      return false;
    }
    byte type = gms.getType();
    return type == GMS.GmsHeader.JOIN_REQ || type == GMS.GmsHeader.JOIN_REQ_WITH_STATE_TRANSFER
        || type == GMS.GmsHeader.MERGE_REQ;
  }

  /** A join response that carries only a failure reason: it can make a join fail, never admit anyone. */
  private static boolean isRejection(Message msg) {
    GMS.GmsHeader gms = gmsHeader(msg);
    if (gms == null || gms.getType() != GMS.GmsHeader.JOIN_RSP || !msg.hasArray()) {
      return false;
    }
    try {
      JoinRsp rsp = Util.streamableFromBuffer(JoinRsp::new, msg.getArray(), msg.getOffset(), msg.getLength());
      return rsp.getFailReason() != null && rsp.getView() == null;
    } catch (Exception notARejection) {
      return false;
    }
  }
}
