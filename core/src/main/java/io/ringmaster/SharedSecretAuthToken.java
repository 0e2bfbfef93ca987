package io.ringmaster;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jgroups.Address;
import org.jgroups.Message;
import org.jgroups.auth.AuthToken;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.util.UUID;

/**
 * A JGroups {@link AuthToken} for {@code AUTH}: a joiner proves it knows the cluster's shared
 * secret by sending an HMAC-SHA256 of its own address under a key derived from that secret
 * ({@code SharedSecret.authKey}: 210,000 PBKDF2 rounds per guess for anyone who saw a proof).
 * Binding the proof to the joiner's address means a captured token is worthless from any other
 * address. Sent again from the same address it passes, and it does not cover what the join
 * request says of the joiner (its node id, weight, zone): so {@link SharedSecretEncrypt} takes a
 * join request whose proof passes only sealed, and one in clear only to be refused (see
 * docs/operations.md). Used by {@code config/jgroups/secure-tcp.xml}; the secret comes from the
 * builder's {@code secret}, the system property {@code ringmaster.secret} or the environment
 * variable {@code RINGMASTER_SECRET}. Public so that a JGroups stack file can name it; not part of
 * the application API.
 */
public class SharedSecretAuthToken extends AuthToken {
  private static final byte[] LABEL = "ringmaster-auth/1".getBytes(StandardCharsets.US_ASCII);
  private byte[] secret; // the derived key, not the secret itself
  private byte[] proof = new byte[0];

  /** For JGroups, which creates tokens by reflection. */
  public SharedSecretAuthToken() {}

  @Override
  public void init() throws Exception {
    secret = SharedSecret.authKey(SharedSecret.require("AUTH with " + getClass().getSimpleName()));
  }

  @Override
  public String getName() {
    return getClass().getName();
  }

  @Override
  public int size() {
    return 4 + computeProofForSelf().length;
  }

  @Override
  public boolean authenticate(AuthToken token, Message msg) {
    if (!(token instanceof SharedSecretAuthToken other) || secret == null || msg.getSrc() == null) {
      return false;
    }
    // GMS admits the member its header names, not the sender: they must be one, or a proof seen on
    // the wire would admit any address sent under it.
    if (msg.getHeader(ClassConfigurator.getProtocolId(GMS.class)) instanceof GMS.GmsHeader gms
        && gms.getMember() != null && !gms.getMember().equals(msg.getSrc())) {
      return false;
    }
    // This node's own token, not read from the wire: a message to itself (the merge leader's merge
    // request to itself), which UNICAST3 hands back up before the encryption, so never written out.
    byte[] presented = other == this ? computeProofForSelf() : other.proof;
    return MessageDigest.isEqual(presented, mac(msg.getSrc()));
  }

  @Override
  public void writeTo(DataOutput out) throws IOException {
    byte[] p = computeProofForSelf();
    out.writeInt(p.length);
    out.write(p);
  }

  @Override
  public void readFrom(DataInput in) throws IOException {
    int length = in.readInt();
    if (length < 0 || length > 64) {
      throw new IOException("bad auth proof length " + length);
    }
    proof = new byte[length];
    in.readFully(proof);
  }

  private byte[] computeProofForSelf() {
    Address self = auth == null ? null : auth.getAddress();
    return self == null || secret == null ? new byte[0] : mac(self);
  }

  private byte[] mac(Address address) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(LABEL);
      if (address instanceof UUID u) {
        mac.update(ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits())
            .array());
      } else {
        mac.update(address.toString().getBytes(StandardCharsets.UTF_8));
      }
      return mac.doFinal();
    } catch (Exception e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }
}
