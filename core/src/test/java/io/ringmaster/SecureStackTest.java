package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.protocols.AUTH;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What {@code secure-tcp.xml} promises beyond refusing a wrong secret (RefusalAndConfigTest): the
 * payloads leave a member encrypted (and not in ECB mode), a message that comes without the key's
 * encryption, or changed on the way, is dropped, and a join proof is good for the joiner's own
 * address only. Two real members on
 * 127.0.0.1, with {@link WireTap}s put into their running stacks just above and below the
 * encryption.
 */
class SecureStackTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String STACK = "ringmaster/jgroups/secure-tcp.xml";

  @Test
  void payloadsLeaveSealed_plainOrChangedMessagesAreDropped_equalPlaintextsDiffer() throws Exception {
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

      // The same 200 bytes sent twice: two ciphertexts that differ, and no block repeated in
      // either, though the plaintext repeats one block (ECB would give equal blocks).
      String same = "x".repeat(200);
      bAbove.sendDown(WireTap.probe(toA, same));
      bAbove.sendDown(WireTap.probe(toA, same));
      await("both arrive").atMost(WAIT)
          .until(() -> aAbove.probesUp.stream().filter(("wiretap:" + same)::equals).count() == 2);
      List<byte[]> sealed = bBelow.sentDown.stream().filter(p -> p.length == sealedLength(208)).toList();
      assertEquals(2, sealed.size(), "the two sealed payloads on the wire");
      int cipherLength = sealedLength(208) - 32; // the MAC, over the random IV too, differs anyway
      assertFalse(Arrays.equals(sealed.get(0), 0, cipherLength, sealed.get(1), 0, cipherLength),
          "the same plaintext gave the same ciphertext");
      for (byte[] ciphertext : sealed) {
        Set<String> blocks = new HashSet<>();
        for (int i = 0; i + 16 <= ciphertext.length; i += 16) {
          assertTrue(blocks.add(Arrays.toString(Arrays.copyOfRange(ciphertext, i, i + 16))), "a repeated block");
        }
      }

      // A sealed payload with one bit changed on the way is dropped, not decrypted to something else.
      String changed = "t".repeat(292);
      aBelow.corruptLength = sealedLength(300);
      bAbove.sendDown(WireTap.probe(toA, changed));
      bAbove.sendDown(WireTap.probe(toA, "after"));
      await("the message after it").atMost(WAIT).until(() -> aAbove.probesUp.contains("wiretap:after"));
      assertEquals(1, aBelow.corrupted.get(), "the changed message reached a");
      assertTrue(aAbove.probesUp.stream().noneMatch(p -> p.startsWith("wiretap:t")),
          "a changed payload got past the integrity check: " + aAbove.probesUp);
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

  /** The length of a sealed payload of {@code plain} bytes: AES-CBC with PKCS#5 padding, then a 32-byte MAC. */
  private static int sealedLength(int plain) {
    return (plain / 16 + 1) * 16 + 32;
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
        return true;
      }
    }
    return false;
  }
}
