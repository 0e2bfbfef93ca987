package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.EmptyMessage;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.protocols.AUTH;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.util.ByteArrayDataInputStream;
import org.jgroups.util.ByteArrayDataOutputStream;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.UUID;
import org.jgroups.util.Util;
import org.junit.jupiter.api.Test;

/**
 * What the node reads from other members, fed from fixed seeds: the metadata a member announces in
 * its address ({@link NodeMetadata}), the node's own messages ({@link Gossip}), the join proof
 * ({@link SharedSecretAuthToken}) and sealed messages ({@link SharedSecretEncrypt}). Members may run
 * other versions, and on a secure stack anyone who reaches the port can send bytes. So each reader
 * is given every value the writer makes (read back as written), every message cut short, random
 * changes, random bytes, and length or count prefixes that lie (negative, huge, beyond the bytes
 * left). A reader may refuse (an {@code IOException}, a message dropped, a member left out), but
 * never throws anything else, never allocates more than a few times the bytes it was given, and
 * what it takes is what a ring can hold.
 */
class ControlMessagesFuzzTest {
  private static final Duration LIMIT = Duration.ofSeconds(30);
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
  /** What reading a message may allocate beyond a few bytes a byte: an exception, a record or two. */
  private static final long ALLOWANCE = 16 * 1024;
  /** Characters drawn for ids, zones and endpoints: 1 to 4 bytes in UTF-8, and U+FFFD itself. */
  private static final int[] CODE_POINTS = {'a', 'Z', '0', '-', '.', ':', 'é', 'ß', 'Ж', '中', '€', 0xFFFD, 0x1F600,
      0x10348, 0x10FFFF};

  // ---- NodeMetadata, read from a member's address ----

  /** Every metadata a node can announce, written into its address and read back from the wire, is what it announced. */
  @Test
  void nodeMetadata_everyValueAMemberAnnounces_readsBackAsWritten() throws Exception {
    Random random = new Random(0x5EED_0001L);
    for (int i = 0; i < 2_000; i++) {
      NodeMetadata m = randomMetadata(random);
      assertEquals(Optional.of(m), NodeMetadata.from(overTheWire(m.newAddress())), m.toString());
    }
  }

  /**
   * Each value of a member's address cut short at every length, changed at random, or replaced by
   * random bytes or by crafted weights and parameters (NaN, infinities, negative, no virtual node,
   * too many tokens): the member is left out, or read as metadata a ring can use, the same way on
   * every read.
   */
  @Test
  void nodeMetadata_cutShortChangedOrRandom_isLeftOut_orWhatARingCanUse() throws Exception {
    Random random = new Random(0x5EED_0002L);
    int readable = 0;
    int leftOut = 0;
    for (int i = 0; i < 60; i++) {
      NodeMetadata m = randomMetadata(random);
      ExtendedUUID written = m.newAddress();
      for (String key : new String[] {"rm.i", "rm.w", "rm.z", "rm.p", "rm.a", "rm.e"}) {
        byte[] value = written.get(key);
        for (int length = 0; value != null && length < value.length; length++) {
          ExtendedUUID cut = copyOf(written).put(key, Arrays.copyOf(value, length));
          Optional<NodeMetadata> read = checkedRead(cut);
          boolean fixedSize = key.equals("rm.w") || key.equals("rm.p");
          if (fixedSize || key.equals("rm.i") && length == 0) {
            assertEquals(Optional.empty(), read, key + " cut to " + length + " bytes: " + m);
          }
        }
        for (int j = 0; j < 15; j++) {
          byte[] other = randomBytes(random, random.nextInt(NodeMetadata.MAX_VALUE_BYTES + 1));
          if (checkedRead(copyOf(written).put(key, other)).isPresent()) {
            readable++;
          } else {
            leftOut++;
          }
        }
      }
      for (double weight : new double[] {Double.NaN, Double.longBitsToDouble(0x7FF0_0000_0000_0001L),
          Double.longBitsToDouble(0xFFF8_0000_0000_0000L), Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -1,
          -Double.MIN_VALUE, Double.MAX_VALUE, (double) HashRing.MAX_TOKENS_PER_MEMBER + 1, -0.0, Double.MIN_VALUE}) {
        checkedRead(copyOf(written).put("rm.w", ByteBuffer.allocate(8).putDouble(weight).array()));
      }
      for (int virtualNodes : new int[] {0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE,
          HashRing.MAX_TOKENS_PER_MEMBER, HashRing.MAX_TOKENS_PER_MEMBER + 1, 1}) {
        for (int replicas : new int[] {0, -1, Integer.MIN_VALUE, 1, Integer.MAX_VALUE}) {
          byte[] params = ByteBuffer.allocate(12 + random.nextInt(3) * 4).putInt(random.nextInt())
              .putInt(virtualNodes).putInt(replicas).array();
          checkedRead(copyOf(written).put("rm.p", params));
        }
      }
      // Bytes no writer makes: every invalid one read as U+FFFD (3 bytes), an overlong NUL, a surrogate's own bytes.
      byte[] invalid = new byte[NodeMetadata.MAX_VALUE_BYTES];
      Arrays.fill(invalid, (byte) 0xFF);
      for (byte[] notUtf8 : new byte[][] {invalid, {'a', (byte) 0xC0, (byte) 0x80}, {'a', (byte) 0xED, (byte) 0xA0,
          (byte) 0x80}}) {
        for (String key : new String[] {"rm.i", "rm.z", "rm.a", "rm.e"}) {
          assertEquals(Optional.empty(), checkedRead(copyOf(written).put(key, notUtf8)), key + ": " + hex(notUtf8));
        }
      }
      byte[] wire = addressBytes(written);
      for (int j = 0; j < 60; j++) {
        byte[] changed = mutate(random, wire);
        Address back;
        try {
          back = Util.readAddress(new ByteArrayDataInputStream(changed));
        } catch (Exception unreadable) {
          continue; // the transport drops a message whose addresses it cannot read: no metadata to read
        }
        if (checkedRead(back).isPresent()) {
          readable++;
        } else {
          leftOut++;
        }
      }
    }
    assertTrue(readable > 100 && leftOut > 100, "both outcomes drawn: " + readable + " read, " + leftOut + " left out");
  }

  /**
   * Reads an address twice and checks the outcome: left out, or metadata within what the writer
   * guarantees and a ring accepts; and the same both times, since every member must read it alike.
   */
  private static Optional<NodeMetadata> checkedRead(Address address) throws Exception {
    Address onTheWire = overTheWire(address);
    Optional<NodeMetadata> read = NodeMetadata.from(onTheWire);
    assertEquals(read, NodeMetadata.from(onTheWire), "read twice");
    read.ifPresent(m -> {
      assertFalse(m.id().isEmpty(), m.toString());
      for (String value : List.of(m.id(), m.zone(), m.endpoint(), m.applicationVersion())) {
        assertTrue(value.getBytes(StandardCharsets.UTF_8).length <= NodeMetadata.MAX_VALUE_BYTES,
            () -> value.getBytes(StandardCharsets.UTF_8).length + " bytes in UTF-8, more than any member can announce: "
                + SettingChecks.shown(value));
      }
      assertTrue(m.weight() >= 0 && Double.isFinite(m.weight()), m.toString());
      assertTrue(m.virtualNodes() >= 1 && m.virtualNodes() <= HashRing.MAX_TOKENS_PER_MEMBER, m.toString());
      assertTrue(m.replicas() >= 1, m.toString());
      long tokens = Member.tokenCount(m.virtualNodes(), m.weight());
      assertTrue(tokens <= HashRing.MAX_TOKENS_PER_MEMBER, tokens + " tokens: " + m);
      // A ring of its own parameters (the only ones it is admitted with) holds it, beside a member of weight 1.
      if (tokens <= 512 && m.virtualNodes() <= 512) {
        HashRing ring = HashRing.builder().virtualNodes(m.virtualNodes()).add(m.member())
            .add(Member.of(m.id() + "-other")).build();
        assertTrue(ring.members().contains(m.member()), m.toString());
      }
    });
    return read;
  }

  // ---- Gossip: checksums, the ring before a view, "not listed" and its query ----

  /** Every checksum a member can gossip is read as written: it reaches the divergence report whole. */
  @Test
  void gossip_everyChecksumAMemberSends_readsBackAsWritten() throws Exception {
    try (InView a = new InView()) {
      Random random = new Random(0x5EED_0003L);
      for (int i = 0; i < 2_000; i++) {
        long checksum = i % 3 == 0 ? new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE}[i / 3 % 4] : random.nextLong();
        String sender = "x" + randomText(random, NodeMetadata.MAX_VALUE_BYTES - 1);
        a.receive(Gossip.encode(0, a.node.self, checksum, sender));
        RingDivergence d = a.divergences.get(a.divergences.size() - 1);
        assertEquals(new RingDivergence(0, sender, a.node.node.state().ring().checksum(), checksum,
            RingDivergence.Kind.HOLDER), d);
      }
      assertEquals(2_000, a.divergences.size());
    }
  }

  /**
   * Every ring before a view that an old member sends a newcomer is read as written: the
   * newcomer's first ownership change starts from those very members.
   */
  @Test
  void gossip_everyRingBeforeAMemberSends_readsBackAsWritten() throws Exception {
    Random random = new Random(0x5EED_0004L);
    Address old = FedNode.meta("x").newAddress();
    for (int i = 0; i < 12; i++) {
      List<Member> before = new ArrayList<>();
      Set<String> ids = new HashSet<>(Set.of("n"));
      for (int k = random.nextInt(12); k > 0; k--) {
        String id = "m" + randomText(random, random.nextInt(NodeMetadata.MAX_VALUE_BYTES));
        if (ids.add(id)) {
          double weight = k % 4 == 0 ? 0 : 4 * random.nextDouble();
          before.add(new Member(id, weight, randomText(random, random.nextInt(NodeMetadata.MAX_VALUE_BYTES + 1))));
        }
      }
      NodeMetadata newcomer = FedNode.meta("n");
      try (FedNode n = new FedNode(newcomer, newcomer.newAddress(), Duration.ofSeconds(10));
           JChannel channel = new JChannel(TestCluster.STACK)) {
        Gossip gossip = new Gossip("n", channel, n.node, d -> { }, r -> { }, v -> { });
        View view = View.create(old, 5 + i, old, n.self);
        gossip.receive(new BytesMessage(n.self, Gossip.encodeRingBefore(5 + i, old, before)).setSrc(old));
        n.install(view);
        assertEquals(Set.copyOf(before), Set.copyOf(n.lastOwnership().previousRing().members()), "case " + i);
      }
    }
  }

  /**
   * Every message of each type cut short at every length, changed at random, random bytes, and
   * counts and string lengths that lie: {@link Gossip#receive} throws nothing, takes nothing from
   * a message cut short, and allocates no more than a few bytes for each byte it was given (a
   * count or a length read from the message sizes nothing before the bytes are there).
   */
  @Test
  void gossip_cutShortChangedRandomOrLying_throwsNothing_andAllocatesByTheMessagesLength() throws Exception {
    try (InView a = new InView()) {
      Random random = new Random(0x5EED_0005L);
      List<byte[]> whole = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        whole.add(Gossip.encode(i % 2 == 0 ? 0 : random.nextLong(), a.node.self, random.nextLong(),
            randomText(random, 1 + random.nextInt(40))));
        List<Member> before = new ArrayList<>();
        for (int k = i % 5; k > 0; k--) {
          before.add(new Member("m" + k + randomText(random, 10), random.nextDouble(), randomText(random, 5)));
        }
        // Every other account names some of its members, and a stranger, as gone gracefully.
        List<String> gone = i % 2 == 0 ? List.of()
            : before.stream().map(Member::id).filter(id -> random.nextBoolean()).toList();
        whole.add(Gossip.encodeRingBefore(random.nextInt(3), a.node.self, before,
            gone.isEmpty() ? gone : Stream.concat(gone.stream(), Stream.of(randomText(random, 8))).toList()));
      }
      whole.add(Gossip.encodeNotListed(0, a.node.self));
      whole.add(Gossip.encodeListedQuery(0, a.node.self));
      whole.add(Gossip.encodeLeaving(0, a.node.self, false));
      whole.add(Gossip.encodeLeaving(0, a.node.self, true));
      List<byte[]> corpus = new ArrayList<>();
      for (byte[] message : whole) {
        for (int length = 0; length < message.length; length++) {
          corpus.add(Arrays.copyOf(message, length));
        }
        for (int j = 0; j < 50; j++) {
          corpus.add(mutate(random, message));
        }
      }
      for (int i = 0; i < 1_000; i++) {
        byte[] noise = randomBytes(random, 1 + random.nextInt(120));
        noise[0] = (byte) (Gossip.TYPE_CHECKSUM + random.nextInt(Gossip.TYPE_HANDED_OFF - Gossip.TYPE_CHECKSUM + 1));
        corpus.add(noise);
      }
      corpus.addAll(lyingPrefixes(a.node.self));

      int divergencesBefore = a.divergences.size();
      for (byte[] message : corpus) { // once to load and warm what a first read needs
        a.receive(message);
      }
      assertTimeoutPreemptively(LIMIT, () -> {
        for (byte[] message : corpus) {
          long allocatedBefore = allocatedBytes();
          a.receive(message);
          long allocated = allocatedBytes() - allocatedBefore;
          assertTrue(allocated <= ALLOWANCE + 8L * message.length, () -> "reading " + message.length + " bytes"
              + " allocated " + allocated + ": " + hex(message));
        }
      });
      for (byte[] message : whole) {
        int before = a.divergences.size();
        for (int length = 0; length < message.length; length++) {
          a.receive(Arrays.copyOf(message, length));
        }
        assertEquals(before, a.divergences.size(), "nothing taken from a checksum cut short: " + hex(message));
      }
      assertTrue(a.divergences.size() > divergencesBefore, "whole checksums were read");
    }
  }

  /** Ring before messages whose member count, and checksums whose sender's length, say more than the bytes left. */
  private static List<byte[]> lyingPrefixes(Address creator) throws IOException {
    List<byte[]> out = new ArrayList<>();
    byte[] header = Gossip.encodeRingBefore(0, creator, List.of());
    int headerLength = header.length - Integer.BYTES;
    for (int count : new int[] {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, HashRing.MAX_MEMBERS,
        HashRing.MAX_MEMBERS + 1, 1 << 20, 40, 41, 3}) {
      for (int left : new int[] {0, 12, 40}) {
        ByteBuffer b = ByteBuffer.allocate(headerLength + Integer.BYTES + left).put(header, 0, headerLength)
            .putInt(count);
        out.add(b.array()); // the members' bytes all 0: empty ids
      }
    }
    byte[] checksum = Gossip.encode(0, creator, 42, "b");
    int beforeSender = checksum.length - 3; // the sender "b": a length of 2 bytes, then 1 byte
    for (int length : new int[] {0xFFFF, 0x8000, 0x1000, 2}) {
      byte[] lying = Arrays.copyOf(checksum, checksum.length);
      lying[beforeSender] = (byte) (length >>> 8);
      lying[beforeSender + 1] = (byte) length;
      out.add(lying);
      // a ring before whose one member's id says as much
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream data = new DataOutputStream(bytes)) {
        data.write(header, 0, headerLength);
        data.writeInt(1);
        data.writeShort(length);
        data.write(new byte[] {'c', 0, 0, 0});
      }
      out.add(bytes.toByteArray());
    }
    return out;
  }

  /** A node in its ring under view 0 (of itself alone), its gossip over a channel that is not connected. */
  private static final class InView implements AutoCloseable {
    final FedNode node = new FedNode(FedNode.meta("a"));
    final JChannel channel;
    final List<RingDivergence> divergences = new CopyOnWriteArrayList<>();
    final Gossip gossip;

    InView() throws Exception {
      try {
        node.view(0, node.self);
        channel = new JChannel(TestCluster.STACK);
      } catch (Exception | Error e) {
        node.close();
        throw e;
      }
      gossip = new Gossip("a", channel, node.node, divergences::add, r -> { }, v -> { });
    }

    /** A message to this node from itself: the one member of its view, so none is told it is not listed. */
    void receive(byte[] payload) {
      gossip.receive(new BytesMessage(node.self, payload).setSrc(node.self));
    }

    @Override
    public void close() {
      channel.close();
      node.close();
    }
  }

  // ---- SharedSecretAuthToken, the join proof ----

  /**
   * A join proof as a joiner writes it is read back and admits that joiner; cut short, with a
   * length that lies, or changed, it is an {@code IOException} or admits no one, and a length that
   * lies sizes nothing.
   */
  @Test
  void authToken_writtenReadCutShortOrLying_admitsOnlyTheJoinerItWasMadeFor() throws Exception {
    SharedSecretAuthToken token = new SharedSecretAuthToken();
    SharedSecret.forNextStack(Optional.of("s3cret-fuzz-auth"));
    try {
      token.init();
    } finally {
      SharedSecret.forNextStack(Optional.empty());
    }
    AUTH auth = new AUTH();
    token.setAuth(auth);
    Random random = new Random(0x5EED_0006L);
    for (int i = 0; i < 300; i++) {
      Address joiner = i % 2 == 0 ? UUID.randomUUID() : FedNode.meta("j" + i).newAddress();
      auth.setAddress(joiner);
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        token.writeTo(out);
      }
      byte[] written = bytes.toByteArray();
      assertTrue(token.authenticate(readToken(written).orElseThrow(), fromJoiner(joiner)), "as written");
      assertFalse(token.authenticate(readToken(written).orElseThrow(), fromJoiner(UUID.randomUUID())),
          "from another address");
      for (int length = 0; length < written.length; length++) {
        assertEquals(Optional.empty(), readToken(Arrays.copyOf(written, length)), "cut to " + length);
      }
      for (int j = 0; j < 10; j++) {
        byte[] changed = mutate(random, written);
        // Bytes after the proof are the next field's: a change there leaves the proof as it was.
        if (changed.length < written.length || !Arrays.equals(changed, 0, written.length, written, 0, written.length)) {
          Optional<SharedSecretAuthToken> read = readToken(changed);
          assertFalse(read.isPresent() && token.authenticate(read.get(), fromJoiner(joiner)),
              () -> "changed: " + hex(changed));
        }
      }
    }
    List<byte[]> lying = new ArrayList<>();
    for (int length : new int[] {-1, Integer.MIN_VALUE, 65, 4096, 1 << 20, Integer.MAX_VALUE}) {
      for (int left : new int[] {0, 32, 64}) {
        lying.add(ByteBuffer.allocate(Integer.BYTES + left).putInt(length).array());
      }
    }
    readToken(lying.get(0)); // loads what a refusal of the length needs (a proof cut short was refused above)
    for (byte[] bytes : lying) {
      // Only the read between the two counts: on JDK 25 linking the assertion's message lambda on
      // its first run allocates about 30 KB, which is not the token's.
      long allocatedBefore = allocatedBytes();
      Optional<SharedSecretAuthToken> read = readToken(bytes);
      long allocated = allocatedBytes() - allocatedBefore;
      assertEquals(Optional.empty(), read, () -> "refused: " + hex(bytes));
      assertTrue(allocated <= ALLOWANCE, () -> hex(bytes) + " allocated " + allocated);
    }
  }

  /** A token read from {@code bytes}, or empty for the {@code IOException} that refuses it (anything else fails). */
  private static Optional<SharedSecretAuthToken> readToken(byte[] bytes) {
    SharedSecretAuthToken read = new SharedSecretAuthToken();
    try {
      read.readFrom(new DataInputStream(new ByteArrayInputStream(bytes)));
      return Optional.of(read);
    } catch (IOException refused) {
      return Optional.empty();
    }
  }

  private static Message fromJoiner(Address joiner) {
    return new EmptyMessage(UUID.randomUUID()).setSrc(joiner);
  }

  // ---- SharedSecretEncrypt: sealed messages, from anyone who reaches the port ----

  /**
   * Messages sealed with the cluster's key are opened as they were sealed; the same messages cut
   * short at every length, changed anywhere (the IV included), under an IV of another length, not
   * marked as sealed whole, sent again, or random bytes under a well-formed header, reach nothing
   * above the encryption, and throw nothing; and what a node does with one before its MAC is
   * checked allocates no more than a few bytes for each byte of the message.
   */
  @Test
  void sealedMessages_cutShortChangedOrForged_reachNothingAboveTheEncryption() throws Exception {
    String secret = "s3cret-fuzz-seal";
    try (JChannel channel = Stacks.create(Ringmaster.builder().nodeId("member")
        .jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").secret(secret).buildConfig())) {
      SharedSecretEncrypt encrypt = channel.getProtocolStack().findProtocol(SharedSecretEncrypt.class);
      Address self = UUID.randomUUID();
      List<Message> passedUp = new CopyOnWriteArrayList<>();
      SecureStackTest.between(encrypt, self, passedUp);
      SharedSecretEncrypt sameKey = new SharedSecretEncrypt();
      sameKey.setSecretKey(SharedSecret.aesKey(secret));
      sameKey.init();
      Random random = new Random(0x5EED_0007L);
      List<Address> senders = List.of(UUID.randomUUID(), UUID.randomUUID(), UUID.randomUUID());

      List<Message> forged = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        Address sender = senders.get(i % senders.size());
        byte[] payload = randomBytes(random, i == 0 ? 2_000 : random.nextInt(200));
        Message plain = new BytesMessage(i % 4 == 3 ? null : self, payload).setSrc(sender);
        if (random.nextBoolean()) {
          plain.setFlag(Message.Flag.OOB);
        }
        Message sealed = sameKey.encrypt(plain).setSrc(sender);
        EncryptHeader header = sealed.getHeader(SharedSecretEncrypt.ID);
        byte[] array = sealed.getArray();
        // Not marked as sealed whole (what SYM_ENCRYPT seals is a payload alone): dropped, its seal number not taken.
        encrypt.up(envelope(self, sender, array, new EncryptHeader((byte) 0, header.version(), header.iv())));
        assertEquals(List.of(), passedUp, "a message not marked as sealed whole");
        encrypt.up(sealed);
        Message opened = passedUp.remove(passedUp.size() - 1);
        assertEquals(plain.getSrc(), opened.getSrc());
        assertEquals(plain.getDest(), opened.getDest());
        assertEquals(plain.isFlagSet(Message.Flag.OOB), opened.isFlagSet(Message.Flag.OOB));
        assertArrayEquals(payload, opened.getArray());
        assertEquals(List.of(), passedUp, "one message up for one sealed");

        forged.add(sealed.copy(true, true)); // sent again
        for (int length = 0; length < array.length; length += i == 0 ? 1 + random.nextInt(16) : 1) {
          forged.add(envelope(self, sender, Arrays.copyOf(array, length), header));
        }
        for (int j = 0; j < 20; j++) {
          forged.add(envelope(self, sender, mutate(random, array), header));
        }
        for (int bit = 0; bit < 8 * header.iv().length; bit += 1 + random.nextInt(8)) {
          byte[] iv = header.iv().clone();
          iv[bit / 8] ^= (byte) (1 << (bit % 8));
          forged.add(envelope(self, sender, array, new EncryptHeader((byte) 0, header.version(), iv)
              .needsDeserialization(true)));
        }
        int ivLength = random.nextInt(33);
        if (ivLength != 16) {
          forged.add(envelope(self, sender, array, new EncryptHeader((byte) 0, header.version(),
              randomBytes(random, ivLength)).needsDeserialization(true)));
        }
        forged.add(envelope(self, sender, array, new EncryptHeader((byte) 0, header.version(), header.iv())));
        forged.add(envelope(self, sender, randomBytes(random, random.nextInt(300)),
            new EncryptHeader((byte) 0, header.version(), randomBytes(random, 16)).needsDeserialization(true)));
      }
      for (Message m : forged.subList(0, 200)) { // loads what a first drop needs
        encrypt.up(m.copy(true, true));
      }
      assertTimeoutPreemptively(LIMIT, () -> {
        for (Message m : forged) {
          long allocatedBefore = allocatedBytes();
          encrypt.up(m);
          long allocated = allocatedBytes() - allocatedBefore;
          assertTrue(allocated <= 4 * ALLOWANCE + 8L * m.getLength(), () -> m.getLength() + " bytes allocated "
              + allocated);
        }
      });
      assertEquals(List.of(), passedUp.stream().map(m -> m.getSrc() + " " + m.getLength()).toList(),
          "nothing forged or sent again went up");
    }
  }

  private static Message envelope(Address to, Address from, byte[] array, EncryptHeader header) {
    return new BytesMessage(to, array).setSrc(from).putHeader(SharedSecretEncrypt.ID, header);
  }

  /** What this thread has allocated so far: a measure the JVM must give, or the bounds above would hold vacuously. */
  private static long allocatedBytes() {
    assertTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
        "the JVM measures each thread's allocation");
    return THREADS.getCurrentThreadAllocatedBytes();
  }

  // ---- drawing values ----

  /** Metadata a node can announce: each value valid, at its limits now and then, in other versions too. */
  private static NodeMetadata randomMetadata(Random random) {
    int virtualNodes = switch (random.nextInt(5)) {
      case 0 -> 1;
      case 1 -> HashRing.MAX_TOKENS_PER_MEMBER;
      default -> 1 + random.nextInt(1_000);
    };
    double most = (double) HashRing.MAX_TOKENS_PER_MEMBER / virtualNodes;
    double weight = switch (random.nextInt(4)) {
      case 0 -> 0;
      case 1 -> most; // the most tokens a member may have
      default -> random.nextDouble() * Math.min(4, most);
    };
    return new NodeMetadata("i" + randomText(random, random.nextInt(NodeMetadata.MAX_VALUE_BYTES)), weight,
        randomText(random, sometimesAll(random)), random.nextInt(1 << 16), random.nextInt(1 << 16), virtualNodes,
        1 + random.nextInt(random.nextBoolean() ? 5 : Integer.MAX_VALUE), randomText(random, sometimesAll(random)),
        randomText(random, sometimesAll(random)));
  }

  private static int sometimesAll(Random random) {
    return random.nextInt(4) == 0 ? NodeMetadata.MAX_VALUE_BYTES : random.nextInt(NodeMetadata.MAX_VALUE_BYTES + 1);
  }

  /** Text of at most {@code maxBytes} bytes in UTF-8 (as many as fit), drawn from {@link #CODE_POINTS}. */
  private static String randomText(Random random, int maxBytes) {
    StringBuilder b = new StringBuilder();
    int bytes = 0;
    while (true) {
      int c = CODE_POINTS[random.nextInt(CODE_POINTS.length)];
      int size = new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8).length;
      if (bytes + size > maxBytes) {
        return b.toString();
      }
      b.appendCodePoint(c);
      bytes += size;
    }
  }

  private static byte[] randomBytes(Random random, int length) {
    byte[] b = new byte[length];
    random.nextBytes(b);
    return b;
  }

  /** A copy changed at random: a few bytes set or flipped, or one cut out or put in. */
  private static byte[] mutate(Random random, byte[] original) {
    byte[] b = original.clone();
    switch (random.nextInt(4)) {
      case 0 -> {
        for (int k = 1 + random.nextInt(3); k > 0 && b.length > 0; k--) {
          b[random.nextInt(b.length)] ^= (byte) (1 << random.nextInt(8));
        }
      }
      case 1 -> {
        if (b.length > 0) {
          b[random.nextInt(b.length)] = (byte) new int[] {0, 0xFF, 0x7F, 0x80}[random.nextInt(4)];
        }
      }
      case 2 -> {
        if (b.length > 0) {
          int at = random.nextInt(b.length);
          byte[] shorter = new byte[b.length - 1];
          System.arraycopy(b, 0, shorter, 0, at);
          System.arraycopy(b, at + 1, shorter, at, b.length - at - 1);
          b = shorter;
        }
      }
      default -> {
        int at = random.nextInt(b.length + 1);
        byte[] longer = new byte[b.length + 1];
        System.arraycopy(b, 0, longer, 0, at);
        longer[at] = (byte) random.nextInt();
        System.arraycopy(b, at, longer, at + 1, b.length - at);
        b = longer;
      }
    }
    return b;
  }

  private static ExtendedUUID copyOf(ExtendedUUID address) {
    return new ExtendedUUID(address);
  }

  /** An address as JGroups writes it into views and headers. */
  private static byte[] addressBytes(Address address) throws IOException {
    ByteArrayDataOutputStream out = new ByteArrayDataOutputStream(64);
    Util.writeAddress(address, out);
    return Arrays.copyOf(out.buffer(), out.position());
  }

  /** An address as another member reads it: written, then read back. */
  private static Address overTheWire(Address address) throws Exception {
    return Util.readAddress(new ByteArrayDataInputStream(addressBytes(address)));
  }

  private static String hex(byte[] bytes) {
    return bytes.length > 64 ? Util.byteArrayToHexString(bytes, 0, 64) + "... (" + bytes.length + " bytes)"
        : Util.byteArrayToHexString(bytes);
  }
}
