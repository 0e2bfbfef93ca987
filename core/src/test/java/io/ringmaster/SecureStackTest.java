package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.logging.Level;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.EmptyMessage;
import org.jgroups.Event;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.auth.FixedMembershipToken;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.AUTH;
import org.jgroups.protocols.AuthHeader;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.protocols.FRAG2;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.UnicastHeader3;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.JoinRsp;
import org.jgroups.protocols.pbcast.NAKACK2;
import org.jgroups.protocols.pbcast.NakAckHeader2;
import org.jgroups.stack.IpAddress;
import org.jgroups.stack.Protocol;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.AsciiString;
import org.jgroups.util.ByteArray;
import org.jgroups.util.MessageBatch;
import org.jgroups.util.TimeScheduler3;
import org.jgroups.util.UUID;
import org.jgroups.util.Util;
import org.junit.jupiter.api.Test;

/**
 * What {@code secure-tcp.xml} promises beyond refusing a wrong secret (RefusalAndConfigTest): the
 * messages leave a member sealed whole (and not in ECB mode); a message that comes without the
 * key's seal, forged, changed on the way or sent again goes no further; and a join proof is good
 * for the joiner's own address only. Two real members on
 * 127.0.0.1, with {@link WireTap}s put into their running stacks just above and below the
 * encryption.
 */
class SecureStackTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String STACK = "ringmaster/jgroups/secure-tcp.xml";

  /**
   * The secure stack left bound to 127.0.0.1 (its default, for trying it on one host) says, at
   * start, that members on other hosts cannot join, naming the settings that open it: each would
   * otherwise start a cluster of its own, with nothing saying why. A stack without the encryption
   * (the in-JVM one) says nothing of the kind.
   */
  @Test
  void aSecureStackBoundToLoopback_warnsThatOnlyThisHostCanJoin() {
    try (NodeLog log = new NodeLog(r -> r.getLevel().intValue() >= Level.WARNING.intValue());
         TestCluster cluster = new TestCluster("secure-loopback")) {
      cluster.start(cluster.builder("alone").jgroupsConfig(STACK).bindPort(7954).initialHosts("127.0.0.1[7954]")
          .secret("s3cret-loopback"));
      cluster.start("in-jvm");
      List<String> warnings = log.messages();
      // Once for each stack the start built (a lost race for a port builds another), all for "alone".
      List<String> loopback = warnings.stream().filter(m -> m.contains("only members on this host can join")).toList();
      assertFalse(loopback.isEmpty(), warnings::toString);
      for (String warning : loopback) {
        assertTrue(warning.startsWith("alone: stack " + STACK + " is bound to 127.0.0.1"), warning);
        assertTrue(warning.contains("set bindAddress and initialHosts"), warning);
      }
    }
  }

  @Test
  void messagesLeaveSealedWhole_andPlainForgedChangedOrReplayedOnesGoNoFurther() throws Exception {
    String idA = "alpha-7Qz2";
    String idB = "bravo-3Kd8";
    try (TestCluster cluster = new TestCluster("secure-wire")) {
      Ringmaster a = cluster.start(cluster.builder(idA).jgroupsConfig(STACK).bindPort(7950)
          .initialHosts("127.0.0.1[7950]").secret("s3cret-wire"));
      Ringmaster b = cluster.start(cluster.builder(idB).jgroupsConfig(STACK).bindPort(7951)
          .initialHosts("127.0.0.1[7950]").secret("s3cret-wire"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      // Probes sent past the reliable protocols stop just above the encryption; those sent through
      // b's whole stack ("through ...") go up through a's, to just below the node.
      Predicate<String> local = p -> !p.startsWith("wiretap:through");
      // Below first: every message the tap above records after this has passed the one below.
      WireTap aBelow = tap(a, ProtocolStack.Position.BELOW, p -> false);
      WireTap aAbove = tap(a, ProtocolStack.Position.ABOVE, local);
      WireTap aTop = new WireTap(p -> true);
      a.channel().getProtocolStack().insertProtocol(aTop, ProtocolStack.Position.ABOVE, FRAG2.class); // the top one
      WireTap bAbove = tap(b, ProtocolStack.Position.ABOVE, local);
      WireTap bBelow = tap(b, ProtocolStack.Position.BELOW, p -> false);
      Thread test = Thread.currentThread();
      Address toA = a.channel().getAddress();

      // a's gossip carries its id: in clear above the encryption, nowhere in what leaves below it.
      byte[] id = idA.getBytes(StandardCharsets.UTF_8);
      await("a's gossip, with its id, on its way down").atMost(WAIT)
          .until(() -> aAbove.sentDown.stream().anyMatch(m -> contains(m.payload(), id)));
      assertFalse(aBelow.sentDown.isEmpty(), "messages left a");
      assertTrue(aBelow.sentDown.stream().noneMatch(m -> contains(m.payload(), id)), "a's id in clear on the wire");

      // A message sent through b's whole stack, then its sealed bytes sent again under nothing but
      // the encryption header: its seal number makes the copy one, dropped by the encryption.
      int sent = bBelow.sentBy(test).size();
      b.channel().send(WireTap.probe(toA, "through 1"));
      WireTap.Seen original = bBelow.sentBy(test).get(sent);
      await("the message, at the top of a's stack").atMost(WAIT)
          .until(() -> aTop.probesUp().contains("wiretap:through 1"));
      // Acknowledged: b's UNICAST3 sends it no more. (Until then it may send it again, sealed anew,
      // which a's encryption rightly lets through and its UNICAST3 drops as a duplicate.)
      UNICAST3 unicastOfB = b.channel().getProtocolStack().findProtocol(UNICAST3.class);
      await("b's messages acknowledged").atMost(WAIT).until(() -> unicastOfB.getNumUnackedMessages() == 0);
      long pastTheEncryption = aAbove.probesUp().stream().filter("wiretap:through 1"::equals).count();
      bBelow.sendDown(new BytesMessage(toA, original.payload()).putHeader(SharedSecretEncrypt.ID, original.sealed()));
      // a's taps record a message once it has gone all the way up: then the copy's journey is over.
      await("the copy, through a's stack").atMost(WAIT)
          .until(() -> aBelow.passedUp.stream().filter(m -> Arrays.equals(m.payload(), original.payload())).count() == 2);
      assertEquals(1, aTop.probesUp().stream().filter("wiretap:through 1"::equals).count(),
          "a replayed message got through");
      assertEquals(pastTheEncryption, aAbove.probesUp().stream().filter("wiretap:through 1"::equals).count(),
          "the copy got past the encryption");
      // Copies under another envelope, which travels in clear and so is anyone's to set: another
      // sender, the out-of-band flag, addressed to all. A copy is known by the sender, destination
      // and flag sealed inside, so each is still a copy, and dropped.
      SharedSecretEncrypt encryptionOfA0 = a.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address sealedBy = b.channel().getAddress();
      List<Message> envelopes = List.of(
          new BytesMessage(toA, original.payload()).putHeader(SharedSecretEncrypt.ID, original.sealed())
              .setSrc(UUID.randomUUID()),
          new BytesMessage(null, original.payload()).putHeader(SharedSecretEncrypt.ID, original.sealed())
              .setSrc(sealedBy));
      for (Message copy : envelopes) {
        encryptionOfA0.up(copy);
        assertEquals(pastTheEncryption, aAbove.probesUp().stream().filter("wiretap:through 1"::equals).count(),
            "a copy got past the encryption under another envelope: " + copy);
      }
      int sentOob = bBelow.sentBy(test).size();
      b.channel().send(WireTap.probe(toA, "through out of band 1").setFlag(Message.Flag.OOB));
      WireTap.Seen oob = bBelow.sentBy(test).get(sentOob);
      await("the out-of-band message, at the top of a's stack").atMost(WAIT)
          .until(() -> aTop.probesUp().contains("wiretap:through out of band 1"));
      // Acknowledged, as above: until then b may send it again, sealed anew, which a rightly takes.
      await("b's messages acknowledged").atMost(WAIT).until(() -> unicastOfB.getNumUnackedMessages() == 0);
      long oobPast = aAbove.probesUp().stream().filter("wiretap:through out of band 1"::equals).count();
      Message regular = new BytesMessage(toA, oob.payload()).putHeader(SharedSecretEncrypt.ID, oob.sealed())
          .setSrc(sealedBy);
      encryptionOfA0.up(regular); // the same message, its envelope without the flag
      assertEquals(oobPast, aAbove.probesUp().stream().filter("wiretap:through out of band 1"::equals).count(),
          "a copy of an out-of-band message got past the encryption in an envelope without the flag");

      // The same for messages no protocol above the encryption would know again (sent past the
      // reliable ones, as a message is once they have forgotten its connection): to a, and to all.
      for (Address to : Arrays.asList(toA, null)) {
        String text = "once " + (to == null ? "to all" : "to a");
        int sentOnce = bBelow.sentBy(test).size();
        bAbove.sendDown(WireTap.probe(to, text));
        WireTap.Seen once = bBelow.sentBy(test).get(sentOnce);
        await("the message, past a's encryption").atMost(WAIT)
            .until(() -> aAbove.probesUp().contains("wiretap:" + text));
        bBelow.sendDown(new BytesMessage(to, once.payload()).putHeader(SharedSecretEncrypt.ID, once.sealed()));
        await("its copy, through a's encryption").atMost(WAIT)
            .until(() -> aBelow.passedUp.stream().filter(m -> Arrays.equals(m.payload(), once.payload())).count() == 2);
        assertEquals(1, aAbove.probesUp().stream().filter(("wiretap:" + text)::equals).count(),
            "a copy of a message " + text + " got past the encryption");
      }

      // A message sealed whole, as b seals, but under another key (another secret, or another
      // keystore key): a drops it.
      SharedSecretEncrypt otherKey = new SharedSecretEncrypt();
      otherKey.setSecretKey(SharedSecret.aesKey("not-the-s3cret-wire"));
      otherKey.init();
      Message underOtherKey = otherKey.encrypt(WireTap.probe(toA, "under another key").setSrc(b.channel().getAddress()));
      bBelow.sendDown(underOtherKey);
      bAbove.sendDown(WireTap.probe(toA, "after the other key"));
      await("the sealed message after it").atMost(WAIT)
          .until(() -> aAbove.probesUp().contains("wiretap:after the other key"));
      await("the message under another key, through a's encryption").atMost(WAIT)
          .until(() -> aBelow.passedUp.stream().anyMatch(m -> m.sealed() != null
              && !Arrays.equals(m.sealed().version(), encryptionVersion(a))));
      assertFalse(aAbove.probesUp().contains("wiretap:under another key"),
          "a message sealed under another key got past a's encryption");

      // A message b sealed for another member, sent again to a under its own encryption header: a
      // opens it, sees whom it was sealed for, and drops it.
      Address elsewhere = UUID.randomUUID();
      int sentElsewhere = bBelow.sentBy(test).size();
      bAbove.sendDown(WireTap.probe(elsewhere, "for another member"));
      WireTap.Seen forOther = bBelow.sentBy(test).get(sentElsewhere);
      assertTrue(forOther.sealed() != null, "sealed on its way out");
      bBelow.sendDown(new BytesMessage(toA, forOther.payload()).putHeader(SharedSecretEncrypt.ID, forOther.sealed()));
      await("the message sealed for another member, through a's encryption").atMost(WAIT)
          .until(() -> aBelow.passedUp.stream().anyMatch(m -> Arrays.equals(m.payload(), forOther.payload())));
      assertFalse(aAbove.probesUp().contains("wiretap:for another member"),
          "a message sealed for another member got past a's encryption");

      // From b to a, each past b's encryption, as by someone without the key: a plain message, and
      // one with no payload that carries an encryption header copied from the wire. Then a sealed
      // message: once it is up, the two before it from the same sender have been dealt with.
      bBelow.sendDown(WireTap.probe(toA, "plain"));
      await("a sealed message from b, to copy its header").atMost(WAIT)
          .until(() -> bBelow.sentDown.stream().anyMatch(m -> m.sealed() != null));
      EncryptHeader copied = bBelow.sentDown.stream().map(WireTap.Seen::sealed).filter(h -> h != null).findFirst()
          .orElseThrow();
      bBelow.sendDown(new EmptyMessage(toA).putHeader(SharedSecretEncrypt.ID,
          new EncryptHeader((byte) 0, copied.version(), copied.iv()).needsDeserialization(true)));
      bAbove.sendDown(WireTap.probe(toA, "sealed"));
      await("the sealed message, opened").atMost(WAIT).until(() -> aAbove.probesUp().contains("wiretap:sealed"));
      await("the plain message, through a's encryption").atMost(WAIT)
          .until(() -> aBelow.probesUp().contains("wiretap:plain"));
      await("the forged message, through a's encryption").atMost(WAIT)
          .until(() -> aBelow.passedUp.stream().anyMatch(m -> m.sealed() != null && m.payload().length == 0));
      assertFalse(aAbove.probesUp().contains("wiretap:plain"), "a plain message got past the encryption");
      assertTrue(aAbove.passedUp.stream().noneMatch(m -> m.sealed() != null),
          "a message got past the encryption without being opened");
      assertFalse(aBelow.probesUp().contains("wiretap:sealed"), "the sealed message was readable on the wire");

      // Join requests are taken in clear only from a non-member, asking to join as its sender, with
      // no other protocol's header, and only to be refused; a rejection only while this node has no
      // view. One of each that breaks a rule (a stranger's with NAKACK2's header, and one with
      // UNICAST3's, which UNICAST3 would keep with no bound before AUTH saw it); one whose proof
      // checks (sent again by someone who saw it: in clear, it would admit whatever member its
      // header names), which is left to its sealed copy; and one good join request (from a
      // stranger, whom AUTH then refuses).
      Address b0 = b.channel().getAddress();
      Address stranger = UUID.randomUUID();
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      List<Message> forged = List.of(
          new EmptyMessage(toA).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, b0)),
          new EmptyMessage(toA).setSrc(stranger).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, b0)),
          new EmptyMessage(toA).setSrc(stranger).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
              .putHeader(ClassConfigurator.getProtocolId(NAKACK2.class), NakAckHeader2.createMessageHeader(1)),
          new EmptyMessage(toA).setSrc(stranger).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
              .putHeader(ClassConfigurator.getProtocolId(UNICAST3.class), UnicastHeader3.createDataHeader(1, (short) 0,
                  false)),
          new BytesMessage(toA).setArray(GMS.marshal(new JoinRsp("authentication failed"))) // a rejection, as AUTH sends one
              .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_RSP)));
      forged.forEach(bBelow::sendDown);
      SharedSecretAuthToken noProof = new SharedSecretAuthToken();
      noProof.readFrom(new DataInputStream(new ByteArrayInputStream(new byte[4]))); // a proof of length 0
      Address replayed = UUID.randomUUID();
      bBelow.sendDown(new EmptyMessage(toA).setSrc(replayed)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, replayed))
          .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(token(replayed, "s3cret-wire"))));
      bBelow.sendDown(new EmptyMessage(toA).setSrc(stranger)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
          .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(noProof)));
      await("all seven, through a's encryption").atMost(WAIT).until(() -> aBelow.passedUp.stream()
          .filter(m -> m.headers().contains("JOIN_REQ") || m.headers().contains("JOIN_RSP")).count() == 7);
      assertEquals(List.of("JOIN_REQ from " + stranger), aAbove.passedUp.stream()
          .filter(m -> m.headers().contains("JOIN_REQ") || m.headers().contains("JOIN_RSP"))
          .map(m -> (m.headers().contains("JOIN_REQ") ? "JOIN_REQ" : "JOIN_RSP") + " from "
              + m.headers().replaceAll(".*mbr=([^,]*),.*", "$1")).toList(), "what got past the encryption in clear");
      // a's AUTH refuses the stranger, in clear; a's UNICAST3 keeps no connection to it, which would
      // send the refusal again every half second (the stranger cannot acknowledge it) and keep one
      // more refusal for each request the stranger sends.
      await("a's refusal, sent").atMost(WAIT).until(() -> aBelow.sentDown.stream()
          .anyMatch(m -> m.sealed() == null && m.headers().contains("JOIN_RSP")));
      UNICAST3 unicastOfA = a.channel().getProtocolStack().findProtocol(UNICAST3.class);
      await("a's connection to the refused stranger, dropped").atMost(WAIT)
          .until(() -> !unicastOfA.hasSendConnectionTo(stranger));

      // A member's own join request (as when it repeats one the coordinator has already answered by
      // adding it) goes out sealed as well as in clear: the sealed copy gets through, and the clear
      // one is dropped as such, at DEBUG (it comes with every such repeat), not as a message
      // without a seal, which is a WARN.
      try (EncryptionLog encryptionLog = new EncryptionLog()) {
        List<String> logged = encryptionLog.lines;
        bAbove.sendDown(new EmptyMessage(toA).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, b0))
            .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(noProof)));
        await("b's join request, past a's encryption").atMost(WAIT).until(() -> aAbove.passedUp.stream()
            .anyMatch(m -> m.headers().contains("JOIN_REQ]: mbr=" + b0 + ",")));
        await("its clear copy, through a's encryption").atMost(WAIT).until(() -> aBelow.passedUp.stream()
            .anyMatch(m -> m.sealed() == null && m.headers().contains("JOIN_REQ]: mbr=" + b0 + ",")));
        assertEquals(List.of("FINE " + toA + ": dropped the clear copy of a join request from " + b0
            + ", a member already"), logged.stream().filter(w -> w.contains(" from " + b0)).toList());
      }

      // What b sends in clear (a join request, a refusal) leaves with only the membership and AUTH
      // headers, as receivers take it: without UNICAST3's, nor any other protocol's. Sent to an
      // address no one has, so that no receiver's UNICAST3 acts on them.
      short unicast = ClassConfigurator.getProtocolId(UNICAST3.class);
      Address nobody = UUID.randomUUID();
      int sentBefore = bBelow.sentBy(test).size();
      bAbove.sendDown(new EmptyMessage(nobody).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, b0))
          .putHeader(unicast, UnicastHeader3.createDataHeader(1, (short) 0, true))
          .putHeader(ClassConfigurator.getProtocolId(NAKACK2.class), NakAckHeader2.createMessageHeader(1)));
      bAbove.sendDown(new BytesMessage(nobody).setArray(GMS.marshal(new JoinRsp("authentication failed"))) // as AUTH sends it
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_RSP))
          .putHeader(unicast, UnicastHeader3.createDataHeader(2, (short) 0, false)));
      List<WireTap.Seen> toNobody = bBelow.sentBy(test).subList(sentBefore, bBelow.sentBy(test).size());
      assertEquals(List.of("sealed", "JOIN_REQ", "JOIN_RSP"), toNobody.stream()
          .map(m -> m.sealed() != null ? "sealed" : m.headers().contains("JOIN_REQ") ? "JOIN_REQ" : "JOIN_RSP")
          .toList(),
          () -> toNobody.stream().map(m -> m.headers() + " " + m.payload().length).toList().toString());
      assertTrue(toNobody.stream().filter(m -> m.sealed() == null)
          .noneMatch(m -> m.headers().contains("UNICAST3") || m.headers().contains("NAKACK2")),
          "another protocol's header in clear: " + toNobody);

      // A sealed message in a batch whose envelope (sent in clear) disagrees with what was sealed
      // goes up on its own, as it was sealed: another sender; to all (UNICAST3 passes a batch to all
      // up without its duplicate check, so a unicast sent again that way would be delivered twice);
      // out of band for a regular message, or regular for one out of band (either loses its
      // ordering). In an envelope that agrees, it stays in the batch. Each sealed by b's encryption,
      // and not sent: a copy of one a has taken would be dropped.
      SharedSecretEncrypt encryptionOfA = a.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      SharedSecretEncrypt encryptionOfB = b.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      record Envelope(String text, Address dest, Address sender, MessageBatch.Mode mode, boolean oob, boolean agrees) {}
      for (Envelope envelope : List.of(
          new Envelope("enveloped-by-its-sender", toA, b0, MessageBatch.Mode.REG, false, true),
          new Envelope("enveloped-by-a-stranger", toA, stranger, MessageBatch.Mode.REG, false, false),
          new Envelope("enveloped-as-to-all", null, b0, MessageBatch.Mode.REG, false, false),
          new Envelope("enveloped-out-of-band", toA, b0, MessageBatch.Mode.OOB, false, false),
          new Envelope("out-of-band-enveloped-as-regular", toA, b0, MessageBatch.Mode.REG, true, false),
          new Envelope("out-of-band-enveloped-out-of-band", toA, b0, MessageBatch.Mode.OOB, true, true))) {
        Message probe = WireTap.probe(toA, envelope.text()).setSrc(b0);
        if (envelope.oob()) {
          probe.setFlag(Message.Flag.OOB);
        }
        Message enveloped = encryptionOfB.encrypt(probe);
        MessageBatch batch = new MessageBatch(envelope.dest(), envelope.sender(), new AsciiString(cluster.name),
            envelope.dest() == null, envelope.mode(), 1);
        batch.add(enveloped.setSrc(envelope.sender()));
        encryptionOfA.up(batch);
        // Gossip and acknowledgements pass the tap meanwhile: only this probe counts.
        List<WireTap.Seen> up = aAbove.passedUp.stream()
            .filter(m -> ("wiretap:" + envelope.text()).equals(m.probe())).toList();
        assertEquals(1, up.size(), "went up once: " + envelope);
        assertEquals(envelope.agrees() ? b0 : null, up.get(0).batchSender(), "in its batch, or on its own: " + envelope);
      }

      // The same 200 bytes sent twice: two ciphertexts that differ, and no block repeated in
      // either, though the plaintext repeats one block (ECB would give equal blocks).
      String same = "x".repeat(200);
      int before = bBelow.sentBy(test).size();
      bAbove.sendDown(WireTap.probe(toA, same));
      bAbove.sendDown(WireTap.probe(toA, same));
      await("both arrive").atMost(WAIT)
          .until(() -> aAbove.probesUp().stream().filter(("wiretap:" + same)::equals).count() == 2);
      List<WireTap.Seen> twice = bBelow.sentBy(test).subList(before, before + 2);
      byte[] first = twice.get(0).payload();
      byte[] second = twice.get(1).payload();
      int cipherLength = first.length - 32; // the MAC, over the random IV too, differs anyway
      assertEquals(first.length, second.length);
      assertFalse(Arrays.equals(first, 0, cipherLength, second, 0, cipherLength),
          "the same plaintext gave the same ciphertext");
      for (byte[] ciphertext : List.of(first, second)) {
        Set<String> blocks = new HashSet<>();
        for (int i = 0; i + 16 <= cipherLength; i += 16) {
          assertTrue(blocks.add(Arrays.toString(Arrays.copyOfRange(ciphertext, i, i + 16))), "a repeated block");
        }
      }

      // A sealed message with one bit changed on the way is dropped, not opened into something else.
      bBelow.corruptNextFrom = test;
      bAbove.sendDown(WireTap.probe(toA, "c".repeat(1_000)));
      bAbove.sendDown(WireTap.probe(toA, "after"));
      await("the message after it").atMost(WAIT).until(() -> aAbove.probesUp().contains("wiretap:after"));
      assertTrue(aAbove.probesUp().stream().noneMatch(p -> p.startsWith("wiretap:c")),
          "a changed message got past the integrity check: " + aAbove.probesUp());

      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);

      // The ciphers and MACs, set up with the keys, are kept between messages by the protocol
      // alone (not by each thread that sent one), and dropped when the node closes.
      int kept = encryptionOfA.keptCiphersAndMacs();
      assertTrue(kept > 0 && kept <= 2 * SharedSecretEncrypt.KEPT, "kept: " + kept);
      a.close();
      assertEquals(0, encryptionOfA.keptCiphersAndMacs(), "ciphers and MACs kept after close");
    }
  }

  /**
   * A reliable unicast sent again once its sender has replaced its connection to the receiver
   * (as after an idle connection was closed): the receiver's reliable protocol takes a copy that
   * opens a connection as new, so only the seal number tells it for a copy.
   */
  @Test
  void aCopyOfTheFirstMessageOfAReplacedConnection_isDropped() throws Exception {
    try (TestCluster cluster = new TestCluster("secure-replay")) {
      Ringmaster a = cluster.start(cluster.builder("alpha-9Rw1").jgroupsConfig(STACK).bindPort(7952)
          .initialHosts("127.0.0.1[7952]").secret("s3cret-replay").gossipInterval(Duration.ofHours(1)));
      Ringmaster b = cluster.start(cluster.builder("bravo-2Lm6").jgroupsConfig(STACK).bindPort(7953)
          .initialHosts("127.0.0.1[7952]").secret("s3cret-replay").gossipInterval(Duration.ofHours(1)));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      WireTap aBelow = tap(a, ProtocolStack.Position.BELOW, p -> false);
      WireTap aTop = new WireTap(p -> true);
      a.channel().getProtocolStack().insertProtocol(aTop, ProtocolStack.Position.ABOVE, FRAG2.class);
      WireTap bBelow = tap(b, ProtocolStack.Position.BELOW, p -> false);
      Thread test = Thread.currentThread();
      Address toA = a.channel().getAddress();
      UNICAST3 unicastOfB = b.channel().getProtocolStack().findProtocol(UNICAST3.class);

      unicastOfB.removeSendConnection(toA);
      int sent = bBelow.sentBy(test).size();
      b.channel().send(WireTap.probe(toA, "first of a connection"));
      WireTap.Seen first = bBelow.sentBy(test).get(sent);
      // Each taken before the next connection: one replaced before its message is acknowledged
      // drops the message.
      await("it, at the top of a's stack").atMost(WAIT)
          .until(() -> aTop.probesUp().contains("wiretap:first of a connection"));
      unicastOfB.removeSendConnection(toA);
      b.channel().send(WireTap.probe(toA, "first of the next"));
      await("the next, at the top of a's stack").atMost(WAIT)
          .until(() -> aTop.probesUp().contains("wiretap:first of the next"));

      bBelow.sendDown(new BytesMessage(toA, first.payload()).putHeader(SharedSecretEncrypt.ID, first.sealed()));
      await("the copy, through a's stack").atMost(WAIT)
          .until(() -> aBelow.passedUp.stream().filter(m -> Arrays.equals(m.payload(), first.payload())).count() == 2);
      assertEquals(1, aTop.probesUp().stream().filter("wiretap:first of a connection"::equals).count(),
          "a copy of a connection's first message got through");
    }
  }

  /**
   * A stranger flooding a member with join requests in clear, each from a new address (each would
   * cost AUTH a log line and a refusal to an address the stranger chose): at most
   * {@link SharedSecretEncrypt#MAX_CLEAR_JOINS} go up to be refused every 10 s, the rest are
   * dropped unanswered (and logged as drops are, DropLogTest).
   */
  @Test
  void joinRequestsInClear_pastTheLimitIn10Seconds_areDroppedUnanswered() throws Exception {
    try (TestCluster cluster = new TestCluster("secure-join-flood")) {
      Ringmaster a = cluster.start(cluster.builder("alpha-5Jf3").jgroupsConfig(STACK).bindPort(7956)
          .initialHosts("127.0.0.1[7956]").secret("s3cret-flood"));
      WireTap aAbove = tap(a, ProtocolStack.Position.ABOVE, p -> false);
      SharedSecretEncrypt encryption = a.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      SharedSecretAuthToken noProof = new SharedSecretAuthToken();
      noProof.readFrom(new DataInputStream(new ByteArrayInputStream(new byte[4]))); // a proof of length 0
      int sent = 3 * SharedSecretEncrypt.MAX_CLEAR_JOINS;
      for (int i = 0; i < sent; i++) { // straight into a's encryption, as if from its transport
        Address stranger = UUID.randomUUID();
        encryption.up(new EmptyMessage(a.channel().getAddress()).setSrc(stranger)
            .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
            .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(noProof)));
      }
      assertEquals(SharedSecretEncrypt.MAX_CLEAR_JOINS, aAbove.passedUp.stream()
          .filter(m -> m.headers().contains("JOIN_REQ")).count(), "went up to AUTH, to be refused");
    }
  }

  /**
   * A join request in clear goes up only to be refused. One whose proof checks (sent again after
   * its member left, by anyone who saw it) is left to its sealed copy, as is any in a stack with no
   * AUTH to refuse it: taken in clear, either would admit a member nobody runs. Whether it comes
   * alone or in a batch. A stranger's, with no proof, goes up, alone or in a batch. The protocol of
   * a stack built (not connected), under a recorder; AUTH is then taken out of the stack.
   */
  @Test
  void aJoinRequestInClear_whoseProofChecks_orWithNoAuthInTheStack_goesNoFurther_aloneOrInABatch()
      throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member").jgroupsConfig(STACK)
        .secret("s3cret-clear").buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      List<Message> passedUp = new CopyOnWriteArrayList<>();
      between(encrypt, self, passedUp);
      encrypt.start(); // finds AUTH above it
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      short authId = ClassConfigurator.getProtocolId(AUTH.class);
      Address replayed = UUID.randomUUID();
      SharedSecretAuthToken proof = new SharedSecretAuthToken();
      proof.readFrom(new DataInputStream(new ByteArrayInputStream(proofSentBy(replayed, "s3cret-clear"))));
      SharedSecretAuthToken noProof = new SharedSecretAuthToken();
      noProof.readFrom(new DataInputStream(new ByteArrayInputStream(new byte[4]))); // a proof of length 0
      Address stranger = UUID.randomUUID();
      BiFunction<Address, SharedSecretAuthToken, Message> join = (from, token) -> {
        Message m = new EmptyMessage(self).setSrc(from).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, from));
        return token == null ? m : m.putHeader(authId, new AuthHeader(token));
      };
      Function<Message, MessageBatch> inABatch = m -> {
        MessageBatch batch = new MessageBatch(self, m.getSrc(), new AsciiString("c"), false, MessageBatch.Mode.REG, 1);
        batch.add(m);
        return batch;
      };

      encrypt.up(join.apply(replayed, proof));
      encrypt.up(inABatch.apply(join.apply(replayed, proof)));
      assertEquals(List.of(), passedUp, "a join request whose proof checks, in clear");
      encrypt.up(join.apply(stranger, noProof));
      encrypt.up(inABatch.apply(join.apply(stranger, noProof)));
      assertEquals(List.of(stranger, stranger), passedUp.stream().map(Message::getSrc).toList(),
          "a stranger's, to be refused");

      passedUp.clear();
      channel.getProtocolStack().removeProtocol(AUTH.class);
      encrypt.start(); // finds no AUTH
      encrypt.up(join.apply(stranger, null));
      encrypt.up(inABatch.apply(join.apply(stranger, null)));
      encrypt.up(join.apply(stranger, noProof));
      assertEquals(List.of(), passedUp, "with no AUTH to refuse it, a join request in clear");
    }
  }

  /**
   * The limit on join requests in clear holds for those that come in batches too (a burst over
   * one connection comes so): {@link SharedSecretEncrypt#MAX_CLEAR_JOINS} of them go up in 10 s.
   * The protocol of a stack built (not connected), under a recorder.
   */
  @Test
  void joinRequestsInClear_inBatches_pastTheLimitIn10Seconds_areDroppedUnanswered() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member").jgroupsConfig(STACK)
        .secret("s3cret-batches").buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      List<Message> passedUp = new CopyOnWriteArrayList<>();
      between(encrypt, self, passedUp);
      encrypt.start();
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      SharedSecretAuthToken noProof = new SharedSecretAuthToken();
      noProof.readFrom(new DataInputStream(new ByteArrayInputStream(new byte[4])));
      Address sender = UUID.randomUUID();
      for (int b = 0; b < 3 * SharedSecretEncrypt.MAX_CLEAR_JOINS / 10; b++) {
        MessageBatch batch = new MessageBatch(self, sender, new AsciiString("c"), false, MessageBatch.Mode.REG, 10);
        for (int i = 0; i < 10; i++) {
          Address stranger = UUID.randomUUID();
          batch.add(new EmptyMessage(self).setSrc(stranger)
              .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
              .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(noProof)));
        }
        encrypt.up(batch);
      }
      assertEquals(SharedSecretEncrypt.MAX_CLEAR_JOINS, passedUp.size(), "went up to AUTH, to be refused");
    }
  }

  /**
   * A node that left a cluster and connects again (as a rejoin does) joins as a newcomer: a
   * refusal in clear from the member it asked still fails its join. Before, the encryption kept
   * the view the node had left, dropped the refusal as one sent to a member, and the joiner, its
   * join attempts unanswered, started a cluster of its own.
   */
  @Test
  void afterALeave_aJoinAgainWithAnotherSecret_isStillRefused() throws Exception {
    try (TestCluster cluster = new TestCluster("secure-join-again")) {
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(STACK).bindPort(7958)
          .initialHosts("127.0.0.1[7958]").secret("s3cret-again"));
      RingmasterConfig config = cluster.builder("x").jgroupsConfig(STACK).bindPort(7959)
          .initialHosts("127.0.0.1[7958]").secret("another-s3cret").buildConfig();
      try (JChannel x = Stacks.create(config)) {
        x.connect(config.clusterName() + "-elsewhere"); // a answers no one of another cluster
        assertEquals(List.of(x.getAddress()), x.getView().getMembers(), "alone");
        x.disconnect();
        Exception refused = assertThrows(Exception.class,
            () -> x.connect(config.clusterName()));
        assertTrue(String.valueOf(refused.getMessage()).contains("authentication failed"), refused.toString());
        assertFalse(x.isConnected());
      }
      assertEquals(1, a.members().size());
    }
  }

  /**
   * A member's sealed join request, sent again after the member left (by anyone who recorded it
   * on the wire), is dropped by the encryption as a copy of one taken: it would otherwise admit,
   * under the left member's address and id, a member that nobody runs. The copy goes straight up
   * a's stack from below its encryption, as if from its transport.
   */
  @Test
  void aSealedJoinRequestSentAgainAfterTheMemberLeft_isDropped() throws Exception {
    try (TestCluster cluster = new TestCluster("secure-join-replay")) {
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(STACK).bindPort(7957)
          .initialHosts("127.0.0.1[7957]").secret("s3cret-replay"));
      WireTap aBelow = tap(a, ProtocolStack.Position.BELOW, p -> false);
      WireTap aAbove = tap(a, ProtocolStack.Position.ABOVE, p -> false);
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(STACK).bindPort(7958)
          .initialHosts("127.0.0.1[7957]").secret("s3cret-replay"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      Address bAddress = b.channel().getAddress();

      // b's join request as it reached a, sealed: found by opening what came up with the same key.
      SharedSecretEncrypt sameKey = new SharedSecretEncrypt();
      sameKey.setSecretKey(SharedSecret.aesKey("s3cret-replay"));
      sameKey.init();
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      WireTap.Seen joinRequest = aBelow.passedUp.stream().filter(m -> m.sealed() != null).filter(m -> {
        try {
          byte[] plain = sameKey.code(m.payload(), 0, m.payload().length, m.sealed().iv(), true);
          Message opened = Util.messageFromBuffer(plain, Long.BYTES, plain.length - Long.BYTES);
          GMS.GmsHeader header = opened.getHeader(gms);
          return header != null && header.getType() == GMS.GmsHeader.JOIN_REQ && bAddress.equals(opened.getSrc());
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }).findFirst().orElseThrow(() -> new AssertionError("no sealed join request from b reached a"));

      b.close();
      await("a alone").atMost(WAIT).until(() -> a.channel().getView().size() == 1);
      SharedSecretEncrypt encryptionOfA = a.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      assertEquals(1, encryptionOfA.sealedCopies().departedNow(), "b's seal numbers, kept as a member's that left"
          + " (until " + SharedSecretEncrypt.DEPARTED_KEPT + " others leave after it), not a stranger's");
      // Once, or more if b's join was slow enough for GMS to ask again: counted before the copy.
      long opened = aAbove.passedUp.stream().filter(m -> m.headers().contains("JOIN_REQ")).count();
      assertTrue(opened >= 1, "b's join request, opened");
      aBelow.up(new BytesMessage(a.channel().getAddress(), joinRequest.payload()).setSrc(bAddress)
          .putHeader(SharedSecretEncrypt.ID, joinRequest.sealed()));
      assertEquals(opened, aAbove.passedUp.stream().filter(m -> m.headers().contains("JOIN_REQ")).count(),
          "the join request sent again got past a's encryption");
      assertEquals(1, a.channel().getView().size());
    }
  }

  /**
   * A join request that a member sealed and the coordinator never took (held back by someone on
   * the path: b's first try, say, answered by its next), sent by that someone after the member
   * left, is dropped by the encryption: its number, below the highest taken from b, was never
   * taken, and taken then it would admit, under b's address and id, a member that nobody runs,
   * with no need for the coordinator to forget b first. Here b's own encryption seals the request
   * as its GMS would and keeps it; b then sends a out of band one more message, which a takes.
   */
  @Test
  void aSealedJoinRequestTheCoordinatorNeverTook_sentAfterTheMemberLeft_isDropped() throws Exception {
    try (TestCluster cluster = new TestCluster("secure-join-held")) {
      Ringmaster a = cluster.start(cluster.builder("a").jgroupsConfig(STACK).bindPort(7957)
          .initialHosts("127.0.0.1[7957]").secret("s3cret-held"));
      WireTap aBelow = tap(a, ProtocolStack.Position.BELOW, p -> false);
      WireTap aAbove = tap(a, ProtocolStack.Position.ABOVE, p -> p.equals("wiretap:after"));
      Ringmaster b = cluster.start(cluster.builder("b").jgroupsConfig(STACK).bindPort(7958)
          .initialHosts("127.0.0.1[7957]").secret("s3cret-held"));
      TestCluster.awaitAgreement(List.of(a, b), 2, WAIT);
      Address aAddress = a.channel().getAddress();
      Address bAddress = b.channel().getAddress();

      SharedSecretEncrypt encryptionOfB = b.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      AUTH authOfB = b.channel().getProtocolStack().findProtocol(AUTH.class);
      Message held = encryptionOfB.encrypt(new EmptyMessage(aAddress).setFlag(Message.Flag.OOB)
          .putHeader(ClassConfigurator.getProtocolId(GMS.class), new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, bAddress))
          .putHeader(ClassConfigurator.getProtocolId(AUTH.class), new AuthHeader(authOfB.getAuthToken())));
      WireTap bAbove = tap(b, ProtocolStack.Position.ABOVE, p -> false);
      bAbove.sendDown(WireTap.probe(aAddress, "after").setFlag(Message.Flag.OOB));
      await("a takes b's next message").atMost(WAIT).until(() -> aAbove.probesUp().contains("wiretap:after"));

      b.close();
      await("a alone").atMost(WAIT).until(() -> a.channel().getView().size() == 1);
      long opened = aAbove.passedUp.stream().filter(m -> m.headers().contains("JOIN_REQ")).count();
      aBelow.up(held.setSrc(bAddress));
      assertEquals(opened, aAbove.passedUp.stream().filter(m -> m.headers().contains("JOIN_REQ")).count(),
          "the join request a never took got past a's encryption after b left");
      assertEquals(1, a.channel().getView().size());
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
    short gms = ClassConfigurator.getProtocolId(GMS.class);
    assertTrue(member.authenticate(received, new BytesMessage().setSrc(joiner)
        .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, joiner))), "joining as itself");
    assertFalse(member.authenticate(received, new BytesMessage().setSrc(joiner)
        .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, other))), "the proof, to admit another address");
  }

  /**
   * The proof a joiner sends, against a vector computed with another implementation (Python's
   * {@code hmac} over {@code hashlib.pbkdf2_hmac}'s key): HMAC-SHA256, keyed with the secret's join
   * key, of "ringmaster-auth/1" and the joiner's UUID as two big-endian longs, after its length.
   * Both ends run the same code, so only a vector shows a change that every build of a rolling
   * upgrade would not share.
   */
  @Test
  void joinProof_matchesAVectorComputedElsewhere() throws Exception {
    assertEquals("00000020" + "756a0f74aa971d0bf161d048ec074e5775bdb1093af21c5fb3fdbddba0ed63bd",
        HexFormat.of().formatHex(proofSentBy(new UUID(1, 2), "golden-s3cret \u00fc")));
  }

  /**
   * AUTH takes whatever token class a join request names: a token of another kind, none at all, a
   * request with no sender, or a member whose token has no secret yet, admits no one.
   */
  @Test
  void joinProof_ofAnotherKindOfToken_orWithNoSenderOrNoSecret_admitsNoOne() throws Exception {
    Address joiner = UUID.randomUUID();
    SharedSecretAuthToken received = new SharedSecretAuthToken();
    received.readFrom(new DataInputStream(new ByteArrayInputStream(proofSentBy(joiner, "s3cret-proof"))));
    SharedSecretAuthToken member = token(joiner, "s3cret-proof");

    assertFalse(member.authenticate(new FixedMembershipToken(joiner.toString()), new BytesMessage().setSrc(joiner)),
        "a token of another kind");
    assertFalse(member.authenticate(null, new BytesMessage().setSrc(joiner)), "no token");
    assertFalse(member.authenticate(received, new BytesMessage()), "no sender");
    assertFalse(new SharedSecretAuthToken().authenticate(received, new BytesMessage().setSrc(joiner)),
        "a member's token with no secret");
  }

  /**
   * With addresses that are no UUIDs (a transport set to use IP addresses), the proof still binds
   * the joiner's address: seen on the wire, it admits no other.
   */
  @Test
  void joinProof_ofAnAddressThatIsNoUuid_isGoodForThatAddressOnly() throws Exception {
    Address joiner = new IpAddress("127.0.0.1", 7800);
    Address other = new IpAddress("127.0.0.1", 7801);
    SharedSecretAuthToken received = new SharedSecretAuthToken();
    received.readFrom(new DataInputStream(new ByteArrayInputStream(proofSentBy(joiner, "s3cret-proof"))));

    SharedSecretAuthToken member = token(joiner, "s3cret-proof");
    assertTrue(member.authenticate(received, new BytesMessage().setSrc(joiner)), "the joiner's own proof");
    assertFalse(member.authenticate(received, new BytesMessage().setSrc(other)), "replayed from another address");
  }

  /**
   * JGroups sizes the AUTH header of a join request by the token's {@code size()}: it is what
   * {@code writeTo} writes, with a proof or (no address yet) without one.
   */
  @Test
  void joinProof_sizeGivenToJGroups_isWhatTheTokenWrites() throws Exception {
    Address joiner = UUID.randomUUID();
    assertEquals(proofSentBy(joiner, "s3cret-proof").length, token(joiner, "s3cret-proof").size());
    assertEquals(4 + 32, token(joiner, "s3cret-proof").size(), "the length, then an HMAC-SHA256");
    SharedSecretAuthToken noAddressYet = token(null, "s3cret-proof");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      noAddressYet.writeTo(out);
    }
    assertEquals(bytes.size(), noAddressYet.size());
  }

  /** A token of a stack whose address is {@code self}, initialized with {@code secret}. */
  static SharedSecretAuthToken token(Address self, String secret) throws Exception {
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
  private static WireTap tap(Ringmaster node, ProtocolStack.Position where, Predicate<String> swallows)
      throws Exception {
    WireTap tap = new WireTap(swallows);
    node.channel().getProtocolStack().insertProtocol(tap, where, SharedSecretEncrypt.class);
    return tap;
  }

  /**
   * Puts the encryption of a stack built (not connected) at {@code self}, between a recorder of what
   * it passes up and a protocol that sends nothing on (messages and events), above the transport,
   * which the encryption looks for below it.
   */
  static void between(SharedSecretEncrypt encrypt, Address self, List<Message> passedUp) {
    between(encrypt, self, passedUp, new CopyOnWriteArrayList<>());
  }

  /** As {@link #between(SharedSecretEncrypt, Address, List)}, recording the messages it sends down in {@code sentDown}. */
  private static void between(SharedSecretEncrypt encrypt, Address self, List<Message> passedUp,
                              List<Message> sentDown) {
    encrypt.setAddress(self);
    encrypt.setUpProtocol(new Protocol() {
      @Override
      public Object up(Message msg) {
        passedUp.add(msg);
        return null;
      }
    });
    encrypt.setDownProtocol(new Protocol() {
      @Override
      public Object down(Message msg) {
        sentDown.add(msg);
        return null; // sent nowhere
      }

      @Override
      public Object down(Event evt) {
        return null;
      }
    }.setDownProtocol(encrypt.getProtocolStack().getTransport()));
  }

  /**
   * Only a join request without a payload goes out in clear as well as sealed, and only such a one
   * comes in clear to be refused: one with a payload (which JGroups never sends, and which could
   * carry anything) goes sealed alone, and in clear goes no further; so does any other membership
   * message. A join request that asks for the state too is a join request like the other: in clear
   * both ways. The protocol of a stack
   * built (not connected), between recorders of what it passes up and sends down.
   */
  @Test
  void onlyAJoinRequestWithoutAPayload_goesInClear_eitherKind() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member").jgroupsConfig(STACK)
        .secret("s3cret-kinds").buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      List<Message> passedUp = new CopyOnWriteArrayList<>();
      List<Message> sentDown = new CopyOnWriteArrayList<>();
      between(encrypt, self, passedUp, sentDown);
      encrypt.start(); // finds AUTH above it
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      short authId = ClassConfigurator.getProtocolId(AUTH.class);
      Address coordinator = UUID.randomUUID();
      byte[] payload = "not for the wire in clear".getBytes(StandardCharsets.US_ASCII);

      encrypt.down(new BytesMessage(coordinator, payload).setSrc(self)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, self)));
      assertEquals(List.of(true), sentDown.stream().map(m -> m.getHeader(SharedSecretEncrypt.ID) != null).toList(),
          "a join request with a payload, sealed alone");
      sentDown.clear();
      encrypt.down(new EmptyMessage(coordinator).setSrc(self)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ_WITH_STATE_TRANSFER, self)));
      assertEquals(List.of(true, false), sentDown.stream().map(m -> m.getHeader(SharedSecretEncrypt.ID) != null)
          .toList(), "a join request for the state too: sealed, then in clear");
      sentDown.clear();
      encrypt.down(new EmptyMessage(coordinator).setSrc(self)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.LEAVE_REQ, self)));
      assertEquals(List.of(true), sentDown.stream().map(m -> m.getHeader(SharedSecretEncrypt.ID) != null).toList(),
          "a membership message other than a join request, without a payload: sealed alone");

      SharedSecretAuthToken noProof = new SharedSecretAuthToken();
      noProof.readFrom(new DataInputStream(new ByteArrayInputStream(new byte[4]))); // a proof of length 0
      Address stranger = UUID.randomUUID();
      encrypt.up(new BytesMessage(self, payload).setSrc(stranger)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, stranger))
          .putHeader(authId, new AuthHeader(noProof)));
      assertEquals(List.of(), passedUp, "a join request in clear with a payload");
      encrypt.up(new EmptyMessage(self).setSrc(stranger)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.LEAVE_REQ, stranger)));
      assertEquals(List.of(), passedUp, "a leave request in clear");
      encrypt.up(new EmptyMessage(self).setSrc(stranger)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ_WITH_STATE_TRANSFER, stranger))
          .putHeader(authId, new AuthHeader(noProof)));
      assertEquals(List.of(stranger), passedUp.stream().map(Message::getSrc).toList(),
          "a stranger's join request for the state too, in clear, to be refused");
    }
  }

  /**
   * A join response in clear is taken (held, then passed up) only when it carries one of AUTH's
   * reasons and nothing else: not one that carries a view as well (a response that admits), nor one
   * whose payload is no join response at all, though each comes from the member asked, to this
   * joiner. The same from this node: a response with a view goes out sealed alone. The protocol
   * of a stack built (not connected), between recorders, with the transport's timer counting what
   * is held.
   */
  @Test
  void aJoinResponseInClear_withAViewOrThatIsNoJoinResponse_isNoRefusal() throws Exception {
    try (Joiner joiner = new Joiner("s3cret-no-refusal")) {
      SharedSecretEncrypt encrypt = joiner.encrypt;
      Address coordinator = UUID.randomUUID();
      encrypt.down(joiner.joinRequestTo(coordinator));
      JoinRsp admits = new JoinRsp(View.create(coordinator, 1, coordinator, joiner.self), null)
          .setFailReason("authentication failed");

      encrypt.up(joiner.responseFrom(coordinator, Util.streamableToBuffer(admits)));
      encrypt.up(joiner.responseFrom(coordinator,
          new ByteArray("authentication failed".getBytes(StandardCharsets.US_ASCII))));
      assertEquals(List.of(), joiner.passedUp);
      assertEquals(0, joiner.held(), "none held: a response with a view, and one that is no join response");
      encrypt.up(joiner.refusalFrom(coordinator));
      assertEquals(1, joiner.held(), "a refusal alone, held");

      joiner.sentDown.clear();
      encrypt.down(joiner.responseFrom(coordinator, Util.streamableToBuffer(admits)).setSrc(joiner.self)
          .setDest(coordinator));
      assertEquals(List.of(true), joiner.sentDown.stream().map(m -> m.getHeader(SharedSecretEncrypt.ID) != null)
          .toList(), "a response with a view, sealed alone");
    }
  }

  /**
   * A joiner remembers the first 64 members it asks to join, no more (it asks the coordinator, and
   * again at each join timeout): a refusal in clear from the 64th is taken, one from the 65th is
   * not.
   */
  @Test
  void aJoiner_takesARefusalInClear_fromThe64MembersItAskedFirstOnly() throws Exception {
    try (Joiner joiner = new Joiner("s3cret-asked")) {
      List<Address> asked = new ArrayList<>();
      for (int i = 0; i < 65; i++) {
        asked.add(UUID.randomUUID());
        joiner.encrypt.down(joiner.joinRequestTo(asked.get(i)));
      }

      joiner.encrypt.up(joiner.refusalFrom(asked.get(64)));
      assertEquals(0, joiner.held(), "the 65th member asked is not remembered");
      joiner.encrypt.up(joiner.refusalFrom(asked.get(63)));
      assertEquals(1, joiner.held(), "the 64th is");
      assertEquals(List.of(), joiner.passedUp, "held");
    }
  }

  /**
   * The members asked to join are those of this connection only: after a disconnect, a refusal in
   * clear from a member asked before is not taken until this node asks it again.
   */
  @Test
  void aRefusalInClear_fromAMemberAskedBeforeADisconnect_isNotTaken() throws Exception {
    try (Joiner joiner = new Joiner("s3cret-asked-before")) {
      Address coordinator = UUID.randomUUID();

      joiner.encrypt.down(joiner.joinRequestTo(coordinator));
      joiner.encrypt.down(new Event(Event.DISCONNECT));
      joiner.encrypt.up(joiner.refusalFrom(coordinator));
      assertEquals(0, joiner.held(), "a refusal from the member asked before the disconnect");
      joiner.encrypt.down(joiner.joinRequestTo(coordinator));
      joiner.encrypt.up(joiner.refusalFrom(coordinator));
      assertEquals(1, joiner.held(), "asked again: its refusal is held");
      assertEquals(List.of(), joiner.passedUp);
    }
  }

  /**
   * The encryption of a stack built for a joiner (not connected) at {@link #self}, between
   * recorders of what it passes up and sends down ({@link #between}), with the transport's timer (which a connect would start) counting
   * the refusals in clear it holds, each for ten minutes: never waited out.
   */
  private static final class Joiner implements AutoCloseable {
    private static final short GMS_ID = ClassConfigurator.getProtocolId(GMS.class);
    final Address self = UUID.randomUUID();
    final List<Message> passedUp = new CopyOnWriteArrayList<>();
    final List<Message> sentDown = new CopyOnWriteArrayList<>();
    final SharedSecretEncrypt encrypt;
    private final JChannel channel;
    private final TimeScheduler3 timer;
    /** The transport's own tasks. */
    private final int others;

    Joiner(String secret) throws Exception {
      channel = Stacks.create(Ringmaster.builder().nodeId("joiner").jgroupsConfig(STACK).secret(secret)
          .buildConfig());
      ProtocolStack stack = channel.getProtocolStack();
      timer = (TimeScheduler3) stack.getTransport().getTimer();
      timer.start();
      encrypt = stack.findProtocol(SharedSecretEncrypt.class);
      encrypt.refusalHoldMillis(600_000);
      others = timer.size();
      between(encrypt, self, passedUp, sentDown);
    }

    /** The refusals in clear held now. */
    int held() {
      return timer.size() - others;
    }

    /** This joiner's request to join, sent to {@code member}. */
    Message joinRequestTo(Address member) {
      return new EmptyMessage(member).setSrc(self).putHeader(GMS_ID, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, self));
    }

    /** A join response from {@code member} to this joiner, with {@code payload}. */
    Message responseFrom(Address member, ByteArray payload) {
      return new BytesMessage(self).setArray(payload).setSrc(member)
          .putHeader(GMS_ID, new GMS.GmsHeader(GMS.GmsHeader.JOIN_RSP));
    }

    /** A refusal from {@code member}, as AUTH sends one. */
    Message refusalFrom(Address member) throws Exception {
      return responseFrom(member, Util.streamableToBuffer(new JoinRsp("authentication failed")));
    }

    @Override
    public void close() {
      try {
        timer.stop();
      } finally {
        channel.close();
      }
    }
  }

  /** The version (a digest of the key) that the node's encryption puts in what it seals. */
  private static byte[] encryptionVersion(Ringmaster node) {
    SharedSecretEncrypt encryption = node.channel().getProtocolStack().findProtocol(SharedSecretEncrypt.class);
    return encryption.symVersion();
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
        return true;
      }
    }
    return false;
  }

  /**
   * What the encryption drops from outside is said at WARNING, naming the sender: a message with no
   * seal, and one sealed under another key (which JGroups itself would drop with no more than a
   * trace line). Operators alert on these (docs/operations.md). The protocol of a stack built (not
   * connected), under a recorder, from senders not seen before (each is said once every 10 s).
   */
  @Test
  void dropsOfPlainMessagesAndOfOnesSealedUnderAnotherKey_areSaidAtWarning() throws Exception {
    try (EncryptionLog encryptionLog = new EncryptionLog();
         JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member").jgroupsConfig(STACK)
             .secret("s3cret-drops").buildConfig())) {
      List<String> logged = encryptionLog.lines;
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      List<Message> passedUp = new CopyOnWriteArrayList<>();
      between(encrypt, self, passedUp);
      SharedSecretEncrypt otherKey = new SharedSecretEncrypt();
      otherKey.setSecretKey(SharedSecret.aesKey("not-the-s3cret-drops"));
      otherKey.init();
      Address plainSender = UUID.randomUUID();
      Address otherKeySender = UUID.randomUUID();

      encrypt.up(new BytesMessage(self, "plain".getBytes(StandardCharsets.US_ASCII)).setSrc(plainSender));
      encrypt.up(otherKey.encrypt(WireTap.probe(self, "under another key").setSrc(otherKeySender))
          .setSrc(otherKeySender));

      assertEquals(List.of(), passedUp);
      assertTrue(logged.stream().anyMatch(l -> l.startsWith("WARNING " + self + ": dropped a message from "
          + plainSender + " without an encryption header")), logged::toString);
      assertTrue(logged.stream().anyMatch(l -> l.startsWith("WARNING " + self + ": dropped a message from "
          + otherKeySender + " sealed under another key")), logged::toString);
    }
  }


  /**
   * A refusal in clear is held for half of GMS's join timeout, so that it reaches the attempt it
   * answers, but at most {@link SharedSecretEncrypt#REFUSAL_GRACE_MILLIS}; a join timeout of 0
   * (none) leaves it as it was. Read when the protocol starts.
   */
  @Test
  void aRefusalIsHeldForHalfTheJoinTimeout_atMostItsGrace() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("joiner").jgroupsConfig(STACK)
        .secret("s3cret-hold").buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      GMS gms = channel.getProtocolStack().findProtocol(GMS.class);
      between(encrypt, UUID.randomUUID(), new CopyOnWriteArrayList<>());
      gms.setJoinTimeout(1_000);
      encrypt.start();
      assertEquals(500, encrypt.refusalHoldMillis(), "half of 1 s");
      gms.setJoinTimeout(4_000);
      encrypt.start();
      assertEquals(SharedSecretEncrypt.REFUSAL_GRACE_MILLIS, encrypt.refusalHoldMillis(), "not half of 4 s");
      gms.setJoinTimeout(0);
      encrypt.start();
      assertEquals(SharedSecretEncrypt.REFUSAL_GRACE_MILLIS, encrypt.refusalHoldMillis(), "as it was");
    }
  }

  /**
   * A join refusal in clear is taken only while joining, from a member this node asked to join,
   * sent to this node, with one of AUTH's reasons, and only if no view came within its hold (the
   * join answered, sealed), one at a time: anyone who can reach the port could otherwise fail a
   * joiner's start with a refusal of their own (REFUSED, the wrong-secret failure), with text of
   * their choosing. The hold is half of GMS's join timeout (secure-tcp.xml's 2 s), so that a refusal
   * reaches the attempt it answers. The protocol of a stack built (not connected), between two
   * recorders, with the transport's timer (which a connect would start) counting what is held.
   */
  @Test
  void aRefusalInClear_isTakenOnlyFromAMemberAskedToJoin_sentToThisNode() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("joiner").jgroupsConfig(STACK)
        .secret("s3cret-refusal").buildConfig())) {
      ProtocolStack stack = channel.getProtocolStack();
      TimeScheduler3 timer = (TimeScheduler3) stack.getTransport().getTimer();
      timer.start();
      try {
        SharedSecretEncrypt encrypt = stack.findProtocol(SharedSecretEncrypt.class);
        assertEquals(1_000, encrypt.refusalHoldMillis(), "half of the stack's join_timeout of 2 s");
        // Longer here, so that a refusal is still held when the asserts below look, even after a
        // pause of a second on a slow machine (and a view comes within the hold).
        encrypt.refusalHoldMillis(3_000);
        int others = timer.size(); // the transport's own tasks
        Address self = UUID.randomUUID();
        Address coordinator = UUID.randomUUID();
        List<Message> passedUp = new CopyOnWriteArrayList<>();
        between(encrypt, self, passedUp);
        short gms = ClassConfigurator.getProtocolId(GMS.class);
        BiFunction<Address, String, Message> refusalTo = (to, reason) -> {
          try {
            return new BytesMessage(to, Util.streamableToBuffer(new JoinRsp(reason)))
                .setSrc(coordinator).putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_RSP));
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        };
        Supplier<Message> refusal = () -> refusalTo.apply(self, "authentication failed");

        encrypt.up(refusal.get());
        encrypt.down(new EmptyMessage(coordinator).setSrc(self).putHeader(gms,
            new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, self)));
        encrypt.up(refusal.get().setSrc(UUID.randomUUID()));
        encrypt.up(refusalTo.apply(null, "authentication failed"));
        encrypt.up(refusalTo.apply(UUID.randomUUID(), "authentication failed"));
        assertDoesNotThrow(() -> encrypt.up(refusal.get().setSrc(null)));
        encrypt.up(refusalTo.apply(self, "words of my choosing"));
        assertEquals(List.of(), passedUp);
        assertEquals(others, timer.size(), "none held: before a member was asked, from a member not asked, to all, to"
            + " another node, from no one, or not AUTH's");

        encrypt.up(refusal.get());
        MessageBatch batch = new MessageBatch(self, coordinator, new AsciiString("c"), false, MessageBatch.Mode.REG, 1);
        batch.add(refusal.get());
        encrypt.up(batch);
        assertEquals(List.of(), passedUp, "held while a sealed answer may still come");
        assertEquals(others + 1, timer.size(), "one held, the others dropped: one is enough to fail the join");
        await("the refusal of the member asked, to this node, after its hold").atMost(WAIT)
            .until(() -> passedUp.size() == 1);
        batch.clear();
        batch.add(refusal.get());
        encrypt.up(batch);
        assertEquals(others + 1, timer.size(), "a refusal in a batch is held too");
        await("that one after its hold").atMost(WAIT).until(() -> passedUp.size() == 2);
        // AUTH's two other reasons (a join request without its header) are taken as well. Only
        // whether each is taken is looked at, not while it is held: a short hold will do.
        encrypt.refusalHoldMillis(100);
        for (String reason : List.of("no AUTH header found in message", "join or merge without an AUTH header")) {
          int before = passedUp.size();
          encrypt.up(refusalTo.apply(self, reason));
          await("a refusal saying \"" + reason + "\", after its hold").atMost(WAIT)
              .until(() -> passedUp.size() == before + 1);
        }

        // A view within the hold (the join answered, sealed) drops a refusal still held.
        encrypt.refusalHoldMillis(3_000);
        encrypt.up(refusal.get());
        assertEquals(others + 1, timer.size());
        encrypt.handleView(View.create(coordinator, 1, coordinator, self));
        await("the held refusal's turn").atMost(WAIT).until(() -> timer.size() == others);
        assertEquals(4, passedUp.size(), "the refusal held when the view came was dropped");
      } finally {
        timer.stop();
      }
    }
  }

  /**
   * A node that was a member and joins again (a rejoin) takes a refusal in clear from the member it
   * asks as any joiner does: the view it had is forgotten at the disconnect, and again when its
   * stack starts (JGroups does not start again a stack whose start failed part way, unless it is
   * stopped, as Ringmaster's rejoin does: the disconnect's reset must hold alone for any other
   * caller; a view handled after the disconnect, from a leave that timed out, is cleared by the
   * start's). The protocol of a stack built (not connected), between two recorders,
   * with the transport's timer counting the refusals held.
   */
  @Test
  void aMemberJoiningAgain_takesARefusalInClear_afterADisconnectAndAfterAStart() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("again").jgroupsConfig(STACK)
        .secret("s3cret-again").buildConfig())) {
      ProtocolStack stack = channel.getProtocolStack();
      TimeScheduler3 timer = (TimeScheduler3) stack.getTransport().getTimer();
      timer.start();
      try {
        SharedSecretEncrypt encrypt = stack.findProtocol(SharedSecretEncrypt.class);
        Address self = UUID.randomUUID();
        Address coordinator = UUID.randomUUID();
        between(encrypt, self, new CopyOnWriteArrayList<>());
        short gms = ClassConfigurator.getProtocolId(GMS.class);
        for (String how : List.of("a disconnect", "a start", "a view after a disconnect, then a start",
            "a disconnect while the last refusal is still held")) {
          if (!how.endsWith("still held")) { // there, no view: the refusal held before is forgotten alone
            encrypt.handleView(View.create(coordinator, 1, coordinator, self)); // a member
          }
          switch (how) {
            case "a disconnect" -> encrypt.down(new Event(Event.DISCONNECT));
            case "a start" -> encrypt.start();
            case "a disconnect while the last refusal is still held" ->
                encrypt.down(new Event(Event.DISCONNECT));
            default -> {
              encrypt.down(new Event(Event.DISCONNECT));
              encrypt.handleView(View.create(coordinator, 2, coordinator, self)); // the leave timed out
              encrypt.start();
            }
          }
          encrypt.refusalHoldMillis(600_000); // counted while held, never waited out (a start sets it again)
          int before = timer.size();
          encrypt.down(new EmptyMessage(coordinator).setSrc(self).putHeader(gms,
              new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, self)));
          encrypt.up(new BytesMessage(self, Util.streamableToBuffer(
              new JoinRsp("authentication failed"))).setSrc(coordinator)
              .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_RSP)));
          assertEquals(before + 1, timer.size(), "after " + how + ": the refusal is held, as any joiner's");
        }
      } finally {
        timer.stop();
      }
    }
  }

  /**
   * A join request in clear that the protocol above refuses by throwing (AUTH does, once it has
   * sent its refusal of one without its header) is dropped here, not thrown to the transport, where
   * JGroups logs an ERROR line with a stack trace for each one anyone sends; in a batch, the
   * messages after it still go up. The protocol of a stack built (not connected), under a recorder.
   */
  @Test
  void aJoinRequestInClearRefusedByAThrow_isDroppedHere_andABatchGoesOn() throws Exception {
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member").jgroupsConfig(STACK)
        .secret("s3cret-throw").buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      Address joiner = UUID.randomUUID();
      encrypt.setAddress(self);
      List<Message> reached = new CopyOnWriteArrayList<>();
      encrypt.setUpProtocol(new Protocol() {
        @Override
        public Object up(Message msg) {
          reached.add(msg);
          throw new IllegalStateException("found a join request but no AUTH header (as AUTH throws)");
        }
      });
      short gms = ClassConfigurator.getProtocolId(GMS.class);
      Supplier<Message> join = () -> new EmptyMessage(self).setSrc(joiner)
          .putHeader(gms, new GMS.GmsHeader(GMS.GmsHeader.JOIN_REQ, joiner));
      assertEquals(null, assertDoesNotThrow(() -> encrypt.up(join.get())));
      assertEquals(1, reached.size());
      MessageBatch batch = new MessageBatch(self, joiner, new AsciiString("c"), false, MessageBatch.Mode.REG, 2);
      batch.add(join.get());
      batch.add(join.get());
      assertDoesNotThrow(() -> encrypt.up(batch));
      assertEquals(3, reached.size(), "both of the batch went up");
    }
  }
}
