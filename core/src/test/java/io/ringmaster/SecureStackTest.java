package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.protocols.AUTH;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What {@code secure-tcp.xml} promises beyond refusing a wrong secret (RefusalAndConfigTest): the
 * payloads leave a member encrypted, a message that comes without the key's encryption is
 * dropped, and a join proof is good for the joiner's own address only. Two real members on
 * 127.0.0.1, with {@link WireTap}s put into their running stacks just above and below the
 * encryption.
 */
class SecureStackTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String STACK = "ringmaster/jgroups/secure-tcp.xml";

  @Test
  void payloadsLeaveEncrypted_andAPlainMessageFromOutsideIsDropped() throws Exception {
    String idA = "alpha-7Qz2";
    String idB = "bravo-3Kd8";
    try (TestCluster cluster = new TestCluster("secure-wire")) {
      Ringmaster a = cluster.start(cluster.builder(idA).jgroupsConfig(STACK).bindPort(7950)
          .initialHosts("127.0.0.1[7950]").secret("s3cret-wire"));
      Ringmaster b = cluster.start(cluster.builder(idB).jgroupsConfig(STACK).bindPort(7951)
          .initialHosts("127.0.0.1[7950]").secret("s3cret-wire"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      WireTap aAbove = tap(a, ProtocolStack.Position.ABOVE, true);
      WireTap aBelow = tap(a, ProtocolStack.Position.BELOW, false);
      WireTap bAbove = tap(b, ProtocolStack.Position.ABOVE, true);
      WireTap bBelow = tap(b, ProtocolStack.Position.BELOW, false);

      // a's gossip carries its id: in clear above the encryption, nowhere in what leaves below it.
      byte[] id = idA.getBytes(StandardCharsets.UTF_8);
      await("a's gossip, with its id, on its way down").atMost(WAIT)
          .until(() -> aAbove.sentDown.stream().anyMatch(p -> contains(p, id)));
      assertFalse(aBelow.sentDown.isEmpty(), "messages left a");
      assertTrue(aBelow.sentDown.stream().noneMatch(p -> contains(p, id)), "a's id in clear on the wire");

      // From b to a: a message sent past b's encryption, as by someone without the key, then one
      // through it. The plain one reaches a's stack and goes no further; the sealed one goes up.
      Address toA = a.channel().getAddress();
      bBelow.sendDown(WireTap.probe(toA, "plain"));
      bAbove.sendDown(WireTap.probe(toA, "sealed"));
      await("the plain message, at a's encryption").atMost(WAIT).until(() -> aBelow.probesUp.contains("wiretap:plain"));
      await("the sealed message, decrypted above it").atMost(WAIT)
          .until(() -> aAbove.probesUp.contains("wiretap:sealed"));
      assertFalse(aAbove.probesUp.contains("wiretap:plain"), "a plain message got past the encryption");
      assertFalse(aBelow.probesUp.contains("wiretap:sealed"), "the sealed message was readable on the wire");
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
    }
  }

  @Test
  void joinProof_isGoodForTheJoinersOwnAddressOnly() throws Exception {
    Address joiner = UUID.randomUUID();
    Address other = UUID.randomUUID();
    byte[] proof = proofSentBy(joiner, "s3cret-proof");
    SharedSecretAuthToken received = new SharedSecretAuthToken();
    received.readFrom(new DataInputStream(new ByteArrayInputStream(proof)));

    SharedSecretAuthToken member = token(joiner, "s3cret-proof");
    assertTrue(member.authenticate(received, new BytesMessage().setSrc(joiner)), "the joiner's own proof");
    assertFalse(member.authenticate(received, new BytesMessage().setSrc(other)), "replayed from another address");
    assertFalse(token(joiner, "another-secret").authenticate(received, new BytesMessage().setSrc(joiner)),
        "checked under another secret");
  }

  /** A token of a stack whose address is {@code self}, initialized with {@code secret}. */
  private static SharedSecretAuthToken token(Address self, String secret) throws Exception {
    SharedSecretAuthToken token = new SharedSecretAuthToken();
    SharedSecret.forNextStack(Optional.of(secret));
    try {
      token.init();
    } finally {
      SharedSecret.forNextStack(Optional.empty());
    }
    AUTH auth = new AUTH();
    auth.setAddress(self);
    token.setAuth(auth);
    return token;
  }

  /** The bytes a joiner at {@code self} sends as its token. */
  private static byte[] proofSentBy(Address self, String secret) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      token(self, secret).writeTo(out);
    }
    return bytes.toByteArray();
  }

  /** Puts a tap into the node's running stack, just above or below its encryption. */
  private static WireTap tap(Ringmaster node, ProtocolStack.Position where, boolean swallowProbes) throws Exception {
    WireTap tap = new WireTap(swallowProbes);
    node.channel().getProtocolStack().insertProtocol(tap, where, SharedSecretEncrypt.class);
    return tap;
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (java.util.Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
        return true;
      }
    }
    return false;
  }
}
