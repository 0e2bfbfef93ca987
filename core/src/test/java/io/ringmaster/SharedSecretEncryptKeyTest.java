package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.SecretKey;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.EmptyMessage;
import org.jgroups.Message;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.Protocol;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The key {@link SharedSecretEncrypt} takes from a keystore ({@code keystore_name}) or from code
 * instead of the shared secret: an AES key of 128, 192 or 256 bits is used as it is, and anything
 * else fails the start with a message that names where the key came from and what it is, before
 * JGroups would take the key's algorithm as the cipher to use. And the cipher settings it takes, and
 * the seal it makes with the key.
 */
class SharedSecretEncryptKeyTest {
  private static final String PASSWORD = "keystore-password";
  private static final String ALIAS = "ringmaster";

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}-byte key")
  @ValueSource(ints = {16, 24, 32}) // AES-128, -192 and -256, as the javadoc promises
  void anAesKeyFromAKeystore_sealsAsTheSameKeySetInCode(int keyLength) throws Exception {
    byte[] bytes = randomBytes(keyLength);
    SharedSecretEncrypt fromStore = fromKeystore(keystore(new SecretKeySpec(bytes, "AES")));
    fromStore.init();
    SharedSecretEncrypt inCode = new SharedSecretEncrypt();
    inCode.setSecretKey(new SecretKeySpec(bytes, "AES"));
    inCode.init();
    SharedSecretEncrypt otherKey = new SharedSecretEncrypt();
    otherKey.setSecretKey(new SecretKeySpec(randomBytes(16), "AES"));
    otherKey.init();

    assertArrayEquals(bytes, fromStore.secretKey().getEncoded());
    assertEquals(16, fromStore.simIvLength(), "a 16-byte IV for AES-CBC");
    byte[] plain = "a message, sealed whole".getBytes(StandardCharsets.UTF_8);
    byte[] iv = randomBytes(16);
    byte[] sealed = fromStore.code(plain, 0, plain.length, iv, false);
    assertArrayEquals(plain, inCode.code(sealed, 0, sealed.length, iv, true), "opened by the same key set in code");
    byte[] back = inCode.code(plain, 0, plain.length, iv, false);
    assertArrayEquals(plain, fromStore.code(back, 0, back.length, iv, true), "and the other way round");
    assertThrows(GeneralSecurityException.class, () -> otherKey.code(sealed, 0, sealed.length, iv, true),
        "opened under another key");
  }

  /**
   * The keys a shared secret gives, against vectors computed with another implementation (Python's
   * {@code hashlib.pbkdf2_hmac} and {@code hashlib.sha256}): PBKDF2-HMAC-SHA256 of the secret's
   * UTF-8 bytes, 210,000 rounds, a salt for each key, 128 bits for AES and 256 for the join proofs;
   * the MACs' key is SHA-256 of its label and the AES key, so that no two keys are the same.
   */
  @Test
  void theKeysOfASecret_matchVectorsComputedElsewhere() throws Exception {
    String secret = "golden-s3cret \u00fc";
    SecretKeySpec aes = SharedSecret.aesKey(secret);
    assertEquals("AES", aes.getAlgorithm());
    assertEquals("3d8d21ef5eadab00747a7a845219dd4e", HexFormat.of().formatHex(aes.getEncoded()));
    assertEquals("9a9c3008374517dd5c1f10eed4e8ee89220325124d86c217c25c6ae9ea62338e",
        HexFormat.of().formatHex(SharedSecret.authKey(secret)));
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.setSecretKey(aes);
    encrypt.init();
    assertEquals("55688da22530814aa11df89bcbb7dfb723c02557557a5ef6c68efe2b0b8eb94f",
        HexFormat.of().formatHex(encrypt.macKey().getEncoded()));
  }

  /**
   * A seal is AES-CBC of the message, then HMAC-SHA256 of the IV and the ciphertext (computed here
   * with the JDK's own cipher and MAC, not the protocol's code), and opening checks that MAC before
   * it decrypts anything: a changed IV (which CBC alone would take, changing the first block
   * without a word), a changed last block (which would fail the padding check, telling an attacker
   * something) or a changed or cut MAC all fail the same integrity check.
   */
  @Test
  void aSeal_isEncryptThenMacOverTheIv_andOpeningChecksTheMacBeforeDecrypting() throws Exception {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    SecretKeySpec aes = SharedSecret.aesKey("s3cret-seal");
    encrypt.setSecretKey(aes);
    encrypt.init();
    byte[] plain = "a message, sealed whole: more than one block of it".getBytes(StandardCharsets.UTF_8);
    byte[] iv = randomBytes(16);

    Cipher cbc = Cipher.getInstance("AES/CBC/PKCS5Padding");
    cbc.init(Cipher.ENCRYPT_MODE, aes, new IvParameterSpec(iv));
    byte[] ciphertext = cbc.doFinal(plain);
    Mac hmac = Mac.getInstance("HmacSHA256");
    hmac.init(encrypt.macKey());
    hmac.update(iv);
    byte[] mac = hmac.doFinal(ciphertext);
    byte[] sealed = encrypt.code(plain, 0, plain.length, iv, false);
    assertArrayEquals(ByteBuffer.allocate(ciphertext.length + mac.length).put(ciphertext).put(mac).array(),
        sealed, "the ciphertext, then its MAC");
    byte[] framed = new byte[sealed.length + 5];
    System.arraycopy(sealed, 0, framed, 3, sealed.length);
    assertArrayEquals(plain, encrypt.code(framed, 3, sealed.length, iv, true), "opened within a larger buffer");

    byte[] otherIv = iv.clone();
    otherIv[0] ^= 1;
    assertIntegrityFails(encrypt, sealed, otherIv, "another IV");
    byte[] lastBlockChanged = sealed.clone();
    lastBlockChanged[ciphertext.length - 1] ^= 1;
    assertIntegrityFails(encrypt, lastBlockChanged, iv, "a changed last block");
    byte[] macChanged = sealed.clone();
    macChanged[sealed.length - 1] ^= 1;
    assertIntegrityFails(encrypt, macChanged, iv, "a changed MAC");
    assertIntegrityFails(encrypt, Arrays.copyOf(sealed, sealed.length - 1), iv, "a MAC cut short");
    assertIntegrityFails(encrypt, Arrays.copyOf(sealed, 31), iv, "less than a MAC");
  }

  private static void assertIntegrityFails(SharedSecretEncrypt encrypt, byte[] sealed, byte[] iv, String what) {
    GeneralSecurityException e = assertThrows(GeneralSecurityException.class,
        () -> encrypt.code(sealed, 0, sealed.length, iv, true), what);
    assertEquals(GeneralSecurityException.class, e.getClass(), what + ": " + e); // not the cipher's BadPadding
    assertTrue(e.getMessage().contains("integrity check"), what + ": " + e.getMessage());
  }

  @Test
  void aKeystoreKeyOfAnotherAlgorithm_failsNamingTheKeystoreAndAlias() throws Exception {
    Path store = keystore(new SecretKeySpec(randomBytes(32), "HmacSHA256"));

    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fromKeystore(store).init());

    assertTrue(e.getMessage().contains("keystore_name " + store + ", alias " + ALIAS), e.getMessage());
    assertTrue(e.getMessage().contains("gives a HmacSHA256 key of 256 bits"), e.getMessage());
  }

  /**
   * A keystore that cannot be read (no such file, a wrong password, no such alias) is a setting to
   * mend, not a fault that may pass: the start fails with an IllegalArgumentException naming the
   * keystore and the alias (an IOException would make it a STACK failure, which a supervisor may
   * retry for ever).
   */
  @Test
  void aKeystoreThatCannotBeRead_failsNamingTheKeystoreAndAlias() throws Exception {
    Path missing = dir.resolve("no-such.jceks");
    Path store = keystore(new SecretKeySpec(randomBytes(16), "AES"));
    SharedSecretEncrypt wrongPassword = (SharedSecretEncrypt) fromKeystore(store).storePassword("not-the-password");
    SharedSecretEncrypt wrongAlias = (SharedSecretEncrypt) fromKeystore(store).alias("another-alias");
    for (var c : Map.of(fromKeystore(missing), missing + ", alias " + ALIAS,
        wrongPassword, store + ", alias " + ALIAS, wrongAlias, store + ", alias another-alias").entrySet()) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.getKey().init());
      assertTrue(e.getMessage().startsWith("SharedSecretEncrypt cannot read its key from keystore_name " + c.getValue()),
          e.getMessage());
    }
  }

  @Test
  void aKeystoreAesKeyOfAnUnusableLength_failsGivingTheLength() throws Exception {
    Path store = keystore(new SecretKeySpec(randomBytes(8), "AES"));

    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fromKeystore(store).init());

    assertTrue(e.getMessage().contains("gives a AES key of 64 bits"), e.getMessage());
  }

  @Test
  void aKeyThatDoesNotGiveItsBytes_failsSayingSo() {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.setSecretKey(new OpaqueAesKey());

    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, encrypt::init);

    assertTrue(e.getMessage().contains("the key set in code gives a AES key that does not give its bytes"),
        e.getMessage());
  }

  /** The cipher and the MAC are fixed: a setting that would change them fails the start, naming itself. */
  @Test
  void settingsForAnotherCipher_failTheStartNamingTheSettingAndValue() throws Exception {
    SharedSecretEncrypt gcm = inCode().symAlgorithm("AES/GCM/NoPadding");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, gcm::init);
    assertTrue(e.getMessage().contains("sym_algorithm AES/GCM/NoPadding is not supported"), e.getMessage());

    // An algorithm other than the key's, set before the key is (as a stack file sets it, before
    // init() keys the protocol from the secret): JGroups would replace it with the key's, unseen.
    for (String other : List.of("Blowfish", "DES/CBC/PKCS5Padding")) {
      SharedSecretEncrypt fromTheSecret = new SharedSecretEncrypt().symAlgorithm(other);
      SharedSecret.forNextStack(Optional.of("s3cret-algorithm"));
      try {
        e = assertThrows(IllegalArgumentException.class, fromTheSecret::init);
      } finally {
        SharedSecret.forNextStack(Optional.empty());
      }
      assertTrue(e.getMessage().contains("sym_algorithm " + other + " is not supported"), e.getMessage());
    }
    for (String same : List.of("aes", "aes/cbc/pkcs5padding")) { // algorithm names are read in any case
      SharedSecretEncrypt fromTheSecret = new SharedSecretEncrypt().symAlgorithm(same);
      SharedSecret.forNextStack(Optional.of("s3cret-algorithm"));
      try {
        fromTheSecret.init();
      } finally {
        SharedSecret.forNextStack(Optional.empty());
      }
    }

    SharedSecretEncrypt shortIv = inCode().symIvLength(12);
    e = assertThrows(IllegalArgumentException.class, shortIv::init);
    assertTrue(e.getMessage().contains("sym_iv_length 12 is not supported"), e.getMessage());

    SharedSecretEncrypt noSuchProvider = inCode();
    noSuchProvider.setValue("provider", "NoSuchProvider");
    e = assertThrows(IllegalArgumentException.class, noSuchProvider::init);
    assertTrue(e.getMessage().contains("from provider NoSuchProvider"), e.getMessage());

    SharedSecretEncrypt sunJce = inCode().symAlgorithm("AES/CBC/PKCS5Padding").symIvLength(16);
    sunJce.setValue("provider", "SunJCE");
    sunJce.init(); // the only values, and a provider that has both
    SharedSecretEncrypt plain = inCode();
    plain.init();
    byte[] message = "sealed by one, opened by the other".getBytes(StandardCharsets.UTF_8);
    byte[] iv = randomBytes(16);
    byte[] sealed = sunJce.code(message, 0, message.length, iv, false);
    assertArrayEquals(message, plain.code(sealed, 0, sealed.length, iv, true));
  }

  /**
   * A message sealed by one member opens whole at another with the key: payload, headers, flags,
   * its destination, and its sender, which the seal takes from the sealing node when the message
   * names none; to one member or to all.
   */
  @Test
  void aSealedMessage_opensWhole_withTheSealersAddressAsItsSender() throws Exception {
    SecretKeySpec key = new SecretKeySpec(randomBytes(16), "AES");
    SharedSecretEncrypt sealer = new SharedSecretEncrypt();
    sealer.setSecretKey(key);
    sealer.init();
    SharedSecretEncrypt opener = new SharedSecretEncrypt();
    opener.setSecretKey(key);
    opener.init();
    Address a = UUID.randomUUID();
    Address b = UUID.randomUUID();
    sealer.setAddress(a);
    opener.setAddress(b);
    List<Message> passedUp = new CopyOnWriteArrayList<>();
    opener.setUpProtocol(new Protocol() {
      @Override
      public Object up(Message msg) {
        passedUp.add(msg);
        return null;
      }
    });
    short gms = ClassConfigurator.getProtocolId(GMS.class);
    opener.up(sealer.encrypt(new BytesMessage(b, "to b".getBytes(StandardCharsets.UTF_8))
        .putHeader(gms, new GMS.GmsHeader(
            GMS.GmsHeader.VIEW_ACK))));
    opener.up(sealer.encrypt(new BytesMessage(null, "to all".getBytes(StandardCharsets.UTF_8))
        .setFlag(Message.Flag.OOB)));

    assertEquals(2, passedUp.size(), "both opened");
    Message toB = passedUp.get(0);
    assertEquals(List.of(a, b, "to b"), List.of(toB.getSrc(), toB.getDest(), text(toB)));
    GMS.GmsHeader header = toB.getHeader(gms);
    assertEquals(GMS.GmsHeader.VIEW_ACK, header.getType(), "its header, sealed with it");
    Message toAll = passedUp.get(1);
    assertEquals(List.of(a, "to all"), List.of(toAll.getSrc(), text(toAll)));
    assertEquals(null, toAll.getDest());
    assertTrue(toAll.isFlagSet(Message.Flag.OOB), "its flags, sealed with it");
  }

  /**
   * The seal numbers of a series (see SealedCopies) start at the time in milliseconds times a
   * million, and go up by one; each series started later (one for each new destination) starts
   * above every number the node has given, even within the same millisecond, with room for those
   * being given at that moment (2^20).
   */
  @Test
  void sealNumbers_startAtTheClockTimesAMillion_andEachNewSeriesAboveEveryNumberGiven() throws Exception {
    long before = System.currentTimeMillis();
    SharedSecretEncrypt encrypt = inCode();
    long after = System.currentTimeMillis();
    encrypt.init();
    encrypt.setAddress(UUID.randomUUID());
    long first = sealNumber(encrypt, new EmptyMessage(null));
    assertTrue(first >= before * 1_000_000L + 1 && first <= after * 1_000_000L + 1,
        first + " is not the clock times a million (" + before + " to " + after + " ms), plus one");
    assertEquals(first + 1, sealNumber(encrypt, new EmptyMessage(null)), "the next, one higher");
    long highest = first + 1;
    for (int i = 0; i < 100; i++) {
      long start = sealNumber(encrypt, new EmptyMessage(UUID.randomUUID()));
      assertTrue(start > highest + (1 << 20), "a new series at " + start + ", not 2^20 above " + highest);
      highest = start;
    }
  }

  /**
   * Out-of-band messages are numbered in a series of their own, apart from the regular ones to the
   * same destination (the transport delivers the two kinds apart: SealedCopies): each series starts
   * at the same number and goes up by one with its own kind only.
   */
  @Test
  void outOfBandMessages_areNumberedApartFromRegularOnes() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    encrypt.init();
    encrypt.setAddress(UUID.randomUUID());
    Address to = UUID.randomUUID();
    for (Address dest : Arrays.asList(to, null)) {
      long regular = sealNumber(encrypt, new EmptyMessage(dest));
      long outOfBand = sealNumber(encrypt, new EmptyMessage(dest).setFlag(Message.Flag.OOB));
      assertEquals(regular, outOfBand, "the first out-of-band number, to " + dest);
      assertEquals(regular + 1, sealNumber(encrypt, new EmptyMessage(dest)), "the next regular one, to " + dest);
      assertEquals(outOfBand + 1, sealNumber(encrypt, new EmptyMessage(dest).setFlag(Message.Flag.OOB)),
          "the next out-of-band one, to " + dest);
    }
  }

  /**
   * What leaves carries the sealed message's flags, transient ones included, in clear: the transport
   * and the protocols below the encryption read them (out-of-band delivery, bundling, loopback).
   */
  @Test
  void theSealedMessage_carriesTheFlagsOfTheMessageSealed() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    encrypt.init();
    encrypt.setAddress(UUID.randomUUID());
    Message msg = new EmptyMessage(UUID.randomUUID()).setFlag(Message.Flag.OOB, Message.Flag.DONT_BUNDLE)
        .setFlag(Message.TransientFlag.DONT_LOOPBACK);
    Message sealed = encrypt.encrypt(msg);
    assertEquals(msg.getFlags(false), sealed.getFlags(false), "flags");
    assertEquals(msg.getFlags(true), sealed.getFlags(true), "transient flags");
    assertTrue(sealed.isFlagSet(Message.Flag.OOB) && sealed.isFlagSet(Message.TransientFlag.DONT_LOOPBACK));
  }

  /**
   * What the encryption header says travels in clear, outside the MAC: a sealed message whose
   * header is changed to say its payload alone was encrypted (JGroups' own format, which this
   * protocol never sends) is dropped, not opened. So are one without a payload that carries the
   * header, one changed on the way, one sealed for another member, one whose seal names no sender
   * (sealed by a node without an address) and a copy of one taken; each drop is said at WARNING,
   * with why.
   */
  @Test
  void eachSealedMessageDropped_isSaidAtWarningWithWhy() throws Exception {
    SecretKeySpec key = new SecretKeySpec(randomBytes(16), "AES");
    SharedSecretEncrypt sealer = keyed(key);
    Address a = UUID.randomUUID();
    Address b = UUID.randomUUID();
    sealer.setAddress(a);
    List<Message> passedUp = new CopyOnWriteArrayList<>();
    SharedSecretEncrypt opener = opener(key, b, passedUp);
    try (EncryptionLog log = new EncryptionLog()) {
      List<String> logged = log.lines;
      // Each from an envelope sender of its own: the drops of one sender are said once every 10 s.
      Message sealed = sealer.encrypt(new BytesMessage(b, "to b".getBytes(StandardCharsets.UTF_8)));
      EncryptHeader header = sealed.getHeader(sealer.getId());
      Address marked = UUID.randomUUID();
      opener.up(sealed.copy(true, false).setSrc(marked).putHeader(sealer.getId(),
          new EncryptHeader((byte) 0, header.version(), header.iv()).needsDeserialization(false)));
      assertEquals(List.of(), passedUp, "marked as a payload alone");
      Address noPayload = UUID.randomUUID();
      opener.up(new EmptyMessage(b).setSrc(noPayload).putHeader(sealer.getId(), header));
      Address changed = UUID.randomUUID();
      byte[] changedBytes = Arrays.copyOfRange(sealed.getArray(), sealed.getOffset(),
          sealed.getOffset() + sealed.getLength());
      changedBytes[0] ^= 1;
      opener.up(new BytesMessage(b, changedBytes).setSrc(changed).putHeader(sealer.getId(), header));
      Address forOther = UUID.randomUUID();
      opener.up(sealer.encrypt(new EmptyMessage(UUID.randomUUID())).setSrc(forOther));
      SharedSecretEncrypt noAddress = keyed(key);
      Address nameless = UUID.randomUUID();
      opener.up(noAddress.encrypt(new EmptyMessage(b)).setSrc(nameless));
      assertEquals(List.of(), passedUp);

      opener.up(sealed);
      assertEquals(1, passedUp.size(), "the message as sealed, opened");
      Address copy = UUID.randomUUID();
      opener.up(sealed.copy(true, true).setSrc(copy));
      assertEquals(1, passedUp.size(), "its copy");

      for (String line : List.of(
          "WARNING " + b + ": dropped a message from " + noPayload + " that is not sealed whole",
          "WARNING " + b + ": dropped a message from " + changed + ": java.security.GeneralSecurityException: a message"
              + " failed its integrity check",
          "WARNING " + b + ": dropped a message from " + a + " sealed for ",
          "WARNING " + b + ": dropped a sealed message from " + nameless + " that names no sender",
          "WARNING " + b + ": dropped a message from " + a + " (seal number ")) {
        assertTrue(logged.stream().anyMatch(l -> l.startsWith(line)), line + " in " + logged);
      }
    }
  }

  /**
   * Sealed to all, a member takes nothing sealed more than SealedCopies.GRACE before the first it
   * took from that sender (a joiner must not take, sent again, what was sent to all before it
   * joined); sealed for it alone, anything within the window is new, however late. The series are
   * told apart by what was sealed, not by the envelope.
   */
  @Test
  void sealedToAll_nothingLongBeforeTheFirstTaken_sealedForThisNode_theWholeWindow() throws Exception {
    SecretKeySpec key = new SecretKeySpec(randomBytes(16), "AES");
    SharedSecretEncrypt sealer = keyed(key);
    sealer.setAddress(UUID.randomUUID());
    Address b = UUID.randomUUID();
    List<Message> passedUp = new CopyOnWriteArrayList<>();
    SharedSecretEncrypt opener = opener(key, b, passedUp);
    for (Address dest : Arrays.asList(null, b)) {
      List<Message> sealed = new ArrayList<>();
      for (int i = 0; i <= SealedCopies.GRACE + 1; i++) {
        sealed.add(sealer.encrypt(new BytesMessage(dest, ("number " + i).getBytes(StandardCharsets.UTF_8))));
      }
      passedUp.clear();
      opener.up(sealed.get(sealed.size() - 1)); // the first taken
      opener.up(sealed.get(1)); // GRACE below it
      opener.up(sealed.get(0)); // GRACE + 1 below it
      assertEquals(dest == null ? List.of("number 65", "number 1") : List.of("number 65", "number 1", "number 0"),
          passedUp.stream().map(m -> new String(m.getArray(), m.getOffset(), m.getLength(), StandardCharsets.UTF_8))
              .toList(), "sealed to " + dest);
    }
  }

  /** An encryption keyed with {@code key}, on its own: no stack, no address. */
  private static SharedSecretEncrypt keyed(SecretKeySpec key) throws Exception {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.setSecretKey(key);
    encrypt.init();
    return encrypt;
  }

  /** An encryption keyed with {@code key} at {@code self}, under a recorder of what it passes up. */
  private static SharedSecretEncrypt opener(SecretKeySpec key, Address self, List<Message> passedUp) throws Exception {
    SharedSecretEncrypt opener = keyed(key);
    opener.setAddress(self);
    opener.setUpProtocol(new Protocol() {
      @Override
      public Object up(Message msg) {
        passedUp.add(msg);
        return null;
      }
    });
    return opener;
  }

  /**
   * A seal's IV is 16 bytes: another length (which the encryption header, in clear, may claim),
   * or none, fails as a message not sealed by this protocol, before any MAC is computed.
   */
  @Test
  void anIvOfAnotherLength_orNone_failsAsNotSealedHere() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    encrypt.init();
    byte[] plain = "a message".getBytes(StandardCharsets.UTF_8);
    byte[] sealed = encrypt.code(plain, 0, plain.length, randomBytes(16), false);
    for (byte[] iv : Arrays.asList(null, randomBytes(12), randomBytes(17))) {
      for (boolean decode : List.of(true, false)) {
        byte[] buf = decode ? sealed : plain;
        GeneralSecurityException e = assertThrows(GeneralSecurityException.class,
            () -> encrypt.code(buf, 0, buf.length, iv, decode));
        assertEquals("a message without a 16-byte IV: not sealed by SharedSecretEncrypt", e.getMessage());
      }
    }
    assertEquals(2, encrypt.keptCiphersAndMacs(), "no cipher or MAC lent and lost");
  }

  /** A provider left blank is none: the JDK's default providers supply the cipher and the MAC. */
  @Test
  void aBlankProvider_isNone() throws Exception {
    for (String blank : List.of("", "  ")) {
      SharedSecretEncrypt encrypt = inCode();
      encrypt.setValue("provider", blank);
      encrypt.init();
      byte[] plain = "sealed with the default providers".getBytes(StandardCharsets.UTF_8);
      byte[] iv = randomBytes(16);
      byte[] sealed = encrypt.code(plain, 0, plain.length, iv, false);
      assertArrayEquals(plain, encrypt.code(sealed, 0, sealed.length, iv, true), "provider \"" + blank + "\"");
    }
  }

  /** The seal number a message sealed by {@code encrypt} carries (the first 8 bytes of what is sealed). */
  private static long sealNumber(SharedSecretEncrypt encrypt, Message msg) throws Exception {
    Message sealed = encrypt.encrypt(msg);
    EncryptHeader header = sealed.getHeader(encrypt.getId());
    byte[] plain = encrypt.code(sealed.getArray(), sealed.getOffset(), sealed.getLength(), header.iv(), true);
    return ByteBuffer.wrap(plain).getLong();
  }

  private static String text(Message msg) {
    return new String(msg.getArray(), msg.getOffset(), msg.getLength(), StandardCharsets.UTF_8);
  }

  /**
   * A seal and an opening each give their cipher and their MAC back, kept for the next message:
   * one of each is kept after them, not made again for every message.
   */
  @Test
  void aSealAndAnOpening_keepTheirCipherAndMac_forTheNextMessage() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    encrypt.init();
    byte[] plain = "kept between messages".getBytes(StandardCharsets.UTF_8);
    byte[] iv = randomBytes(16);
    byte[] sealed = encrypt.code(plain, 0, plain.length, iv, false);
    assertEquals(2, encrypt.keptCiphersAndMacs(), "a cipher and a MAC, given back");
    assertArrayEquals(plain, encrypt.code(sealed, 0, sealed.length, iv, true));
    assertEquals(2, encrypt.keptCiphersAndMacs(), "the same ones, lent again and given back");
  }

  /**
   * The integrity check covers the IV and all that comes before the MAC, nothing included: a MAC
   * alone that checks (which only a holder of the key can make) opens to nothing, and is not taken
   * for a message cut short.
   */
  @Test
  void aMacAlone_thatChecks_opensToNothing() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    encrypt.init();
    byte[] iv = randomBytes(16);
    Mac hmac = Mac.getInstance("HmacSHA256");
    hmac.init(encrypt.macKey());
    byte[] macOfNothing = hmac.doFinal(iv);
    assertArrayEquals(new byte[0], encrypt.code(macOfNothing, 0, macOfNothing.length, iv, true));
  }

  /**
   * How long a join refusal in clear is held is read from the stack's GMS when the protocol is
   * initialized (as the stack is built, before it starts): half GMS's join_timeout, at most
   * REFUSAL_GRACE_MILLIS.
   */
  @Test
  void theRefusalHold_isHalfTheStacksJoinTimeout_fromInit() throws Exception {
    SharedSecretEncrypt encrypt = inCode();
    new ProtocolStack().addProtocols(encrypt, new GMS().setJoinTimeout(600));
    encrypt.init();
    assertEquals(300, encrypt.refusalHoldMillis(), "half of 600 ms");
    SharedSecretEncrypt noTimeout = inCode();
    new ProtocolStack().addProtocols(noTimeout, new GMS().setJoinTimeout(0));
    noTimeout.init();
    assertEquals(SharedSecretEncrypt.REFUSAL_GRACE_MILLIS, noTimeout.refusalHoldMillis(), "no join timeout: the grace");
  }

  private static SharedSecretEncrypt inCode() {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.setSecretKey(new SecretKeySpec(new byte[16], "AES"));
    return encrypt;
  }

  private SharedSecretEncrypt fromKeystore(Path store) {
    SharedSecretEncrypt encrypt = new SharedSecretEncrypt();
    encrypt.keystoreName(store.toString()).alias(ALIAS).storePassword(PASSWORD);
    return encrypt;
  }

  private Path keystore(SecretKey key) throws Exception {
    KeyStore store = KeyStore.getInstance("JCEKS");
    store.load(null, null);
    store.setEntry(ALIAS, new KeyStore.SecretKeyEntry(key), new KeyStore.PasswordProtection(PASSWORD.toCharArray()));
    Path file = dir.resolve("ring.jceks");
    try (OutputStream out = Files.newOutputStream(file)) {
      store.store(out, PASSWORD.toCharArray());
    }
    return file;
  }

  private static final SplittableRandom RANDOM = new SplittableRandom(20261202);

  private static byte[] randomBytes(int n) {
    byte[] bytes = new byte[n];
    SplittableRandom random = RANDOM.split();
    for (int i = 0; i < n; i++) {
      bytes[i] = (byte) random.nextInt(256);
    }
    return bytes;
  }

  /** An AES key kept in a device, say, that will not give its bytes. */
  private static final class OpaqueAesKey implements SecretKey {
    @Override
    public String getAlgorithm() {
      return "AES";
    }

    @Override
    public String getFormat() {
      return null;
    }

    @Override
    public byte[] getEncoded() {
      return null;
    }
  }
}
