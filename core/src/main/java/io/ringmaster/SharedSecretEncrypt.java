package io.ringmaster;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;
import javax.crypto.Cipher;
import javax.crypto.Mac;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Event;
import org.jgroups.Header;
import org.jgroups.Message;
import org.jgroups.View;
import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.AUTH;
import org.jgroups.protocols.AuthHeader;
import org.jgroups.protocols.EncryptHeader;
import org.jgroups.protocols.SYM_ENCRYPT;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.JoinRsp;
import org.jgroups.util.Bits;
import org.jgroups.util.ByteArray;
import org.jgroups.util.ByteArrayDataOutputStream;
import org.jgroups.util.MessageBatch;
import org.jgroups.util.Util;

/**
 * {@code SYM_ENCRYPT} keyed by the cluster's shared secret (the builder's {@code secret}, the system
 * property {@code ringmaster.secret} or the environment variable {@code RINGMASTER_SECRET}) instead
 * of a keystore file: every member that knows the secret derives the same AES key. Set
 * {@code keystore_name} to use a keystore after all. Used by {@code config/jgroups/secure-tcp.xml}.
 * Public so that a JGroups stack file can name it; not part of the application API.
 *
 * <p>Plain {@code SYM_ENCRYPT} drops every message it cannot decrypt, so a joiner with a wrong
 * secret never reaches {@code AUTH}: it waits out its join timeout and then runs alone, a silent
 * split. This protocol lets exactly two kinds of messages pass unencrypted so that {@code AUTH}
 * (above it) can refuse the joiner and the joiner learns why: a join request without a payload
 * (nothing secret in it) whose token {@code AUTH} will refuse, and a join response that carries
 * only a failure reason (it can only make a join fail, never admit anyone), held a moment in case
 * a sealed answer comes; each only where it belongs ({@code passesInPlain}). A join request in
 * clear whose token checks is dropped: its sealed copy admits the joiner
 * ({@code admittedBySealedCopy}).
 *
 * <p>Plain {@code SYM_ENCRYPT} with its defaults would encrypt in ECB mode (the JDK's "AES"), in
 * which equal plaintext blocks give equal ciphertext, would check nothing (a changed ciphertext
 * decrypts to changed plaintext), and would seal only a message's payload: its headers (sequence
 * numbers, request ids, fragment numbers) and messages without a payload (acknowledgements, many
 * membership messages) would travel as they are, so a sealed payload could be sent again under
 * other headers, and a message without one forged. This protocol seals the whole message, headers,
 * flags, sender and destination included, payload or none: serialized, encrypted with AES in CBC
 * mode under a random 16-byte IV (carried in the outer message's encryption header), then followed
 * by an HMAC-SHA256 of the IV and the ciphertext (encrypt-then-MAC), under a second key derived
 * from the AES key. The receiver checks the MAC before it decrypts, and drops a message whose MAC
 * does not match or that is not sealed so; the message it passes up is the one that was sealed.
 * Each sealed message also carries a seal number, and a copy of a message this node has taken is
 * dropped here ({@code SealedCopies}, which says what gets through): the reliable protocols above
 * would take a copy as new once they have forgotten a connection (after its sender left, or a
 * connection replaced), and nothing above stops a copy of a message sent without reliability.
 * What it does not cover (the protocols below it, and the headers they add) is in
 * {@code docs/operations.md}.
 *
 * <p>The cipher and the MAC are fixed: {@code sym_algorithm} may be left unset (JGroups' default,
 * "AES", counts as unset) or set to {@value #TRANSFORMATION} (in any case, as the JDK reads
 * algorithm names), and {@code sym_iv_length} unset or 16; anything else in the stack file fails
 * the start. (In code, set the key after {@code sym_algorithm}: JGroups' {@code setSecretKey}
 * replaces an algorithm other than the key's.) {@code provider}, if set, supplies both the cipher
 * and the MAC.
 */
public class SharedSecretEncrypt extends SYM_ENCRYPT {
  /** Our protocol id, outside the range JGroups reserves for its own protocols. */
  public static final short ID = 1917;
  private static final short GMS_ID = ClassConfigurator.getProtocolId(GMS.class);
  private static final short AUTH_ID = ClassConfigurator.getProtocolId(AUTH.class);

  static {
    if (ClassConfigurator.getProtocol(ID) == null) {
      ClassConfigurator.addProtocol(ID, SharedSecretEncrypt.class);
    }
  }

  private static final String TRANSFORMATION = "AES/CBC/PKCS5Padding";
  private static final int IV_LENGTH = 16;
  private static final int MAC_LENGTH = 32;
  // Names the seal's format (a seal number, then the message): a build sealing another fails every check.
  private static final byte[] MAC_KEY_LABEL = "ringmaster/sym-encrypt-mac/2".getBytes(StandardCharsets.US_ASCII);
  /** How many senders that left the view a node remembers the seal numbers of. */
  static final int DEPARTED_KEPT = 4_096;
  /** How many series a node keeps for destinations outside its view (joiners, say) before it drops them. */
  private static final int SERIES_OUTSIDE_THE_VIEW = 1_024;
  /** How far above every number given a new series starts: more than the numbers being given at once. */
  private static final long SERIES_GAP = 1L << 20;

  private volatile SecretKeySpec macKey;

  /** The key of the messages' MACs, derived from the AES key at init (for tests). */
  SecretKeySpec macKey() {
    return macKey;
  }

  /**
   * How many ciphers and MACs are kept between messages: more than the threads that seal or open
   * messages at once, as a rule (JGroups' Encrypt keeps 8 for each direction; these serve both).
   */
  static final int KEPT = 16;
  // Set up with the key once, initialized again for each message; lent to one message at a time.
  private final Lender<Cipher> ciphers = new Lender<>(KEPT, this::newCipher);
  private final Lender<Mac> macs = new Lender<>(KEPT, this::newMac);
  /** The highest seal number this node has given: a series started later starts above it. */
  private final LongAccumulator highestSeal = new LongAccumulator(Math::max, Long.MIN_VALUE);
  /** This node's seal numbers for messages to all members (see {@link SealedCopies}). */
  private final Series sealsToAll = new Series(firstSeal());
  /** Its seal numbers for messages to one member, by member. */
  private final Map<Address, Series> sealsTo = new ConcurrentHashMap<>();
  /** The members of the last view. */
  private volatile Set<Address> members = Set.of();
  private final SealedCopies copies = new SealedCopies(DEPARTED_KEPT);
  /** Spaces out the WARN lines of the drops: one per sender every 10 s, ten in all. */
  private final DropLog drops = new DropLog(System::nanoTime);
  /**
   * Join requests in clear handed up to be refused, at most {@link #MAX_CLEAR_JOINS} every 10 s:
   * each costs AUTH a WARN line (or an ERROR with a stack trace for one without a proof) and a
   * refusal sent to an address the sender chose, for which the transport keeps a sender thread. A
   * joiner with another secret asks again at each join attempt (every 2 s with secure-tcp.xml), so
   * about ten of them at once are all answered; past that, or under a flood, one may go unanswered
   * through all its attempts, and then JGroups starts it as a cluster of its own, which its
   * coordinator's view (a view of one) shows.
   */
  static final int MAX_CLEAR_JOINS = 50;
  private final DropLog.Window clearJoins = new DropLog.Window(System::nanoTime, MAX_CLEAR_JOINS);
  /** The stack's AUTH, which checks join proofs; null if it has none. */
  private volatile AUTH auth;
  /** The stack's UNICAST3, which would keep each refusal to send again; null if it has none. */
  private volatile UNICAST3 unicast;

  @Override
  public void init() throws Exception {
    // As the stack file set it: SYM_ENCRYPT's setSecretKey, run below, replaces an algorithm other
    // than the key's ("Blowfish", say) with the key's, which would let that setting pass unseen.
    String symAlgorithmSet = sym_algorithm;
    boolean fromKeystore = keystore_name != null && secret_key == null;
    if (keystore_name == null && secret_key == null) {
      setSecretKey(SharedSecret.aesKey(SharedSecret.require(getClass().getSimpleName())));
    } else if (fromKeystore) {
      try {
        readSecretKeyFromKeystore();
      } catch (Exception e) { // no such file, a wrong password, no such key: a setting, not a passing fault
        throw new IllegalArgumentException(getClass().getSimpleName() + " cannot read its key from keystore_name "
            + keystore_name + ", alias " + alias + ": " + e.getMessage(), e);
      }
    }
    // Checked before SYM_ENCRYPT sees the key: it would take a key of another algorithm as the
    // cipher to use (and fail to find a cipher of that name, or use it), and it digests the key's
    // bytes, which a key that does not give them fails with a bare NullPointerException.
    byte[] encoded = secret_key.getEncoded();
    if (!"AES".equals(secret_key.getAlgorithm()) || encoded == null
        || encoded.length != 16 && encoded.length != 24 && encoded.length != 32) {
      throw new IllegalArgumentException(getClass().getSimpleName() + " needs an AES key of 128, 192 or 256 bits"
          + " whose bytes it can read; " + (!fromKeystore ? "the key set in code"
          : "keystore_name " + keystore_name + ", alias " + alias) + " gives a "
          + secret_key.getAlgorithm() + " key" + (encoded == null ? " that does not give its bytes"
          : " of " + encoded.length * 8 + " bits"));
    }
    // Encrypt's own defaults ("AES", no IV) are taken for "not set": they are replaced below.
    for (String algorithm : new String[] {symAlgorithmSet, sym_algorithm}) {
      if (algorithm != null && !algorithm.equalsIgnoreCase("AES") && !algorithm.equalsIgnoreCase(TRANSFORMATION)) {
        throw new IllegalArgumentException(getClass().getSimpleName() + " encrypts with " + TRANSFORMATION
            + " only; sym_algorithm " + algorithm + " is not supported: leave sym_algorithm unset");
      }
    }
    if (sym_iv_length != 0 && sym_iv_length != IV_LENGTH) {
      throw new IllegalArgumentException(getClass().getSimpleName() + " uses a " + IV_LENGTH + "-byte IV;"
          + " sym_iv_length " + sym_iv_length + " is not supported: leave sym_iv_length unset");
    }
    sym_algorithm = TRANSFORMATION;
    sym_iv_length = IV_LENGTH;
    // The MAC key from the AES key, whichever way that came (the secret, or a keystore).
    MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
    sha256.update(MAC_KEY_LABEL);
    macKey = new SecretKeySpec(sha256.digest(encoded), "HmacSHA256");
    newCipher(); // a provider that lacks either fails the start here, naming itself
    newMac();
    super.init();
    findProtocolsAbove();
  }

  /**
   * Looks for the stack's AUTH and UNICAST3 again (a protocol may have been added since
   * {@link #init()}), and forgets the view of an earlier connection: a node that connects again (a
   * rejoin, see {@link io.ringmaster.RingmasterStats#rejoins()}) joins as a newcomer does, and takes
   * a refusal in clear from a member it asked (see {@link #passesInPlain}). JGroups' encryption
   * keeps its last view through a disconnect, and a refusal to a joiner that still had a view was
   * dropped as one sent to a member: the joiner started a cluster of its own instead. A connect
   * starts the stack before it joins; but a connect whose start failed part way leaves the stack
   * marked started, and the next one does not start it again: the view is also forgotten at each
   * disconnect ({@link #down(org.jgroups.Event)}).
   */
  @Override
  public void start() throws Exception {
    super.start();
    findProtocolsAbove();
    forgetTheView();
  }

  /** Forgets the view at a disconnect, once GMS above has left (see {@link #start()}). */
  @Override
  public Object down(Event evt) {
    Object result = super.down(evt);
    if (evt.getType() == Event.DISCONNECT) {
      forgetTheView();
    }
    return result;
  }

  private void forgetTheView() {
    view = null;
    members = Set.of();
    joinsAsked.clear();
    refusalHeld.set(false);
  }

  /** Drops the ciphers and MACs kept between messages, which hold the keys. */
  @Override
  public void destroy() {
    super.destroy();
    ciphers.close();
    macs.close();
  }

  /** How many ciphers and MACs are kept now: each at most {@link #KEPT}, none after {@link #destroy}. */
  int keptCiphersAndMacs() {
    return ciphers.kept() + macs.kept();
  }

  private void findProtocolsAbove() {
    auth = getProtocolStack() == null ? null : getProtocolStack().findProtocol(AUTH.class);
    unicast = getProtocolStack() == null ? null : getProtocolStack().findProtocol(UNICAST3.class);
    GMS gms = getProtocolStack() == null ? null : getProtocolStack().findProtocol(GMS.class);
    if (gms != null && gms.getJoinTimeout() > 0) {
      refusalHoldMillis = Math.min(REFUSAL_GRACE_MILLIS, gms.getJoinTimeout() / 2);
    }
  }

  /**
   * Seals the whole message (see the class comment). The outer message carries the flags (the
   * transport and the protocols below read them: out-of-band delivery, bundling, loopback).
   */
  @Override
  protected Message encrypt(Message msg) throws Exception {
    if (msg.getSrc() == null) {
      msg.setSrc(local_addr); // sealed with its sender, as Encrypt does (JGRP-2680)
    }
    ByteArrayDataOutputStream out = new ByteArrayDataOutputStream(Long.BYTES + Short.BYTES + msg.size());
    Address dest = msg.getDest();
    Series series = dest == null ? sealsToAll : sealsTo.get(dest);
    if (series == null) {
      series = newSeries(dest);
    }
    long seal = (msg.isFlagSet(Message.Flag.OOB) ? series.outOfBand : series.regular).incrementAndGet();
    highestSeal.accumulate(seal);
    out.writeLong(seal);
    out.writeShort(msg.getType()); // then the message, as Util.messageToBuffer writes it
    msg.writeTo(out);
    ByteArray whole = out.getBuffer();
    byte[] iv = makeIv();
    return new BytesMessage(msg.getDest())
        .setArray(code(whole.array(), whole.offset(), whole.length(), iv, false))
        .setFlag(msg.getFlags(false), false, false)
        .setFlag(msg.getFlags(true), true, false)
        .putHeader(this.id, new EncryptHeader((byte) 0, symVersion(), iv).needsDeserialization(true));
  }

  /**
   * Seals ({@code decode} false) or opens a serialized message: AES-CBC with the message's IV, then
   * the MAC; opening checks the MAC first and throws if it does not match (the caller drops the
   * message).
   */
  @Override
  protected byte[] code(byte[] buf, int offset, int length, byte[] iv, boolean decode) throws Exception {
    if (iv == null || iv.length != IV_LENGTH) {
      throw new GeneralSecurityException("a message without a " + IV_LENGTH + "-byte IV: not sealed by "
          + getClass().getSimpleName());
    }
    if (!decode) {
      byte[] encrypted = cipher(Cipher.ENCRYPT_MODE, iv, buf, offset, length);
      byte[] sealed = Arrays.copyOf(encrypted, encrypted.length + MAC_LENGTH);
      System.arraycopy(mac(iv, encrypted, 0, encrypted.length), 0, sealed, encrypted.length, MAC_LENGTH);
      return sealed;
    }
    int cipherLength = length - MAC_LENGTH;
    if (cipherLength < 0
        || !MessageDigest.isEqual(mac(iv, buf, offset, cipherLength),
            Arrays.copyOfRange(buf, offset + cipherLength, offset + length))) {
      throw new GeneralSecurityException("a message failed its integrity check (a wrong key, or changed on the way)");
    }
    return cipher(Cipher.DECRYPT_MODE, iv, buf, offset, cipherLength);
  }

  /** One message through a lent cipher; the cipher is kept for the next only if this did not throw. */
  private byte[] cipher(int mode, byte[] iv, byte[] buf, int offset, int length) throws GeneralSecurityException {
    Cipher cipher = ciphers.take();
    cipher.init(mode, secret_key, new IvParameterSpec(iv));
    byte[] result = cipher.doFinal(buf, offset, length);
    ciphers.giveBack(cipher);
    return result;
  }

  /**
   * Opens a sealed message with {@link #code} (the MAC first), on a cipher of its own, and returns
   * the message that was sealed; or null (the message is dropped, and the drop logged) if it was
   * sealed for another member (a unicast sent again to this one), or is a copy of one taken before
   * ({@code SealedCopies}). A message that is not sealed whole (no payload, or marked as a payload
   * alone) comes from someone without the secret: dropped too, with null rather than an
   * exception, which Encrypt's batch handling would log by reading the payload it lacks.
   * {@code key} is an earlier key version's only with ASYM_ENCRYPT, which keeps those; here there
   * is one key, the current one, which {@link #code} uses.
   */
  @Override
  protected Message _decrypt(Cipher pooled, Key key, Message msg, EncryptHeader hdr) throws Exception {
    if (!msg.hasArray() || !hdr.needsDeserialization()) {
      dropped(msg.getSrc(), "%s: dropped a message from %s that is not sealed whole", local_addr, msg.getSrc());
      return null;
    }
    byte[] plain = code(msg.getArray(), msg.getOffset(), msg.getLength(), hdr.iv(), true);
    if (plain.length < Long.BYTES) {
      throw new GeneralSecurityException("a sealed message without a seal number");
    }
    long seal = Bits.readLong(plain, 0);
    Message opened = Util.messageFromBuffer(plain, Long.BYTES, plain.length - Long.BYTES);
    if (opened.getDest() != null && !opened.getDest().equals(local_addr)) {
      dropped(msg.getSrc(), "%s: dropped a message from %s sealed for %s", local_addr, opened.getSrc(), opened.getDest());
      return null;
    }
    if (opened.getSrc() == null) {
      dropped(msg.getSrc(), "%s: dropped a sealed message from %s that names no sender", local_addr, msg.getSrc());
      return null;
    }
    if (!copies.admit(opened.getSrc(), opened.getDest() == null, opened.isFlagSet(Message.Flag.OOB), seal)) {
      // A copy of one taken, or one too far below the numbers taken to tell (SealedCopies#admit).
      dropped(msg.getSrc(), "%s: dropped a message from %s (seal number %d): a copy of one taken, sent again, or"
          + " older than the seal numbers it keeps", local_addr, opened.getSrc(), seal);
      return null;
    }
    return opened;
  }

  /**
   * Forgets the seal numbers of members that left, and those for them: one that comes back starts
   * a new series, above every number this node has given.
   */
  @Override
  protected void handleView(View view) {
    super.handleView(view);
    joinsAsked.clear(); // in a view: no refusal in clear is taken any more
    refusalHeld.set(false);
    Set<Address> now = new HashSet<>(view.getMembers());
    members = now;
    copies.retain(now);
    sealsTo.keySet().retainAll(now);
  }

  /**
   * The series for a member this node has not sealed for since its last view. Those of
   * destinations outside the view (a joiner's, or one that anyone can make this node answer with
   * a join request in clear) are dropped once there are too many of them: only a view change
   * would, and anyone can ask for them.
   */
  private Series newSeries(Address dest) {
    Series series = sealsTo.computeIfAbsent(dest, d -> new Series(firstSeal()));
    Set<Address> now = members;
    if (sealsTo.size() > now.size() + SERIES_OUTSIDE_THE_VIEW) {
      sealsTo.keySet().removeIf(a -> !now.contains(a));
    }
    return series;
  }

  /** How many destinations this node keeps a series of seal numbers for. */
  int seriesKept() {
    return sealsTo.size();
  }

  /**
   * Where a series of seal numbers starts: above every number this node has given, with room for
   * those being given at this moment, and above those of a node that had its address before (see
   * {@link SealedCopies}).
   */
  private long firstSeal() {
    return Math.max(System.currentTimeMillis() * 1_000_000L, highestSeal.get() + SERIES_GAP);
  }

  /** The seal numbers for one destination (or all): regular messages, and out-of-band ones. */
  private static final class Series {
    final AtomicLong regular;
    final AtomicLong outOfBand;

    Series(long first) {
      regular = new AtomicLong(first);
      outOfBand = new AtomicLong(first);
    }
  }

  private byte[] mac(byte[] iv, byte[] buf, int offset, int length) {
    Mac mac = macs.take();
    mac.update(iv);
    mac.update(buf, offset, length);
    byte[] result = mac.doFinal();
    macs.giveBack(mac);
    return result;
  }

  private Cipher newCipher() {
    try {
      return hasProvider() ? Cipher.getInstance(TRANSFORMATION, provider) : Cipher.getInstance(TRANSFORMATION);
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException(TRANSFORMATION + " unavailable" + fromProvider() + ": " + e.getMessage(), e);
    }
  }

  private Mac newMac() {
    try {
      Mac mac = hasProvider() ? Mac.getInstance("HmacSHA256", provider) : Mac.getInstance("HmacSHA256");
      mac.init(macKey);
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("HmacSHA256 unavailable" + fromProvider() + ": " + e.getMessage(), e);
    }
  }

  private boolean hasProvider() {
    return provider != null && !provider.isBlank();
  }

  private String fromProvider() {
    return hasProvider() ? " from provider " + provider : "";
  }

  /** A message from below: one of the two kinds let through in clear, or a sealed one, opened. */
  @Override
  public Object up(Message msg) {
    if (passesInPlain(msg)) {
      if (isBareJoin(msg)) {
        return admittedBySealedCopy(msg) || overClearJoinLimit(msg) ? null : upInClear(msg);
      }
      holdRefusal(msg);
      return null;
    }
    Message opened = open(msg);
    return opened == null ? null : up_prot.up(opened);
  }

  /**
   * A batch from below: each message opened, and kept in the batch only if what was sealed agrees
   * with the batch's envelope, which came in clear: its sender, its destination, and whether it
   * is out of band. The protocols above take the envelope's word for all three, so a sealed
   * message put into another envelope (sent again as another member's, to all, or out of band)
   * would slip past their duplicate checks and ordering; one that does not agree goes up on its
   * own, where they read what was sealed.
   */
  @Override
  public void up(MessageBatch batch) {
    List<Message> kept = new ArrayList<>(batch.size());
    List<Message> apart = new ArrayList<>();
    boolean oob = batch.mode() == MessageBatch.Mode.OOB;
    List<Message> clear = new ArrayList<>();
    for (Message msg : batch) {
      if (passesInPlain(msg)) {
        if (!isBareJoin(msg)) {
          holdRefusal(msg);
        } else if (!admittedBySealedCopy(msg) && !overClearJoinLimit(msg)) {
          clear.add(msg);
        }
        continue;
      }
      Message opened = open(msg);
      if (opened != null) {
        boolean fits = Objects.equals(opened.getSrc(), batch.sender())
            && Objects.equals(opened.getDest(), batch.dest())
            && opened.isFlagSet(Message.Flag.OOB) == oob;
        (fits ? kept : apart).add(opened);
      }
    }
    batch.clear();
    kept.forEach(batch::add);
    if (!batch.isEmpty()) {
      up_prot.up(batch);
    }
    apart.forEach(up_prot::up);
    clear.forEach(this::upInClear);
  }

  /**
   * Passes up a message taken in clear. AUTH throws once it has sent the refusal of a join request
   * without its header: dropped here, through the drop log, rather than as JGroups' ERROR line with
   * a stack trace at each such request (anyone can send them), and without losing the messages
   * after it in a batch.
   */
  private Object upInClear(Message msg) {
    try {
      return up_prot.up(msg);
    } catch (RuntimeException refused) {
      if (!isBareJoin(msg)) {
        throw refused; // only AUTH's refusal is expected; anything else is a fault, with its stack trace
      }
      dropped(msg.getSrc(), "%s: refused a join request in clear from %s: %s", local_addr, msg.getSrc(),
          refused.getMessage());
      return null;
    }
  }

  /**
   * How long a join refusal in clear waits before it goes up, at most: dropped if this node has a
   * view by then (its join was answered, sealed). The members' addresses that a refusal must name
   * travel in clear (discovery answers anyone who names the cluster), so anyone who can reach the
   * port can send one; held, it fails a join only where no sealed answer came within this time,
   * which is what a joiner with another secret gets (it can open nothing). Half of GMS's
   * {@code join_timeout} if that is shorter: a refusal must reach the join attempt it answers, or
   * the joiner, its attempts used up, would start a cluster of its own.
   */
  static final long REFUSAL_GRACE_MILLIS = 1_000;

  /** {@link #REFUSAL_GRACE_MILLIS}, or half of GMS's join timeout (set at init). */
  private volatile long refusalHoldMillis = REFUSAL_GRACE_MILLIS;
  /** A refusal is held: one is enough to fail the join, and the others are not kept. */
  private final AtomicBoolean refusalHeld = new AtomicBoolean();

  /** The seal numbers taken from each sender (for tests). */
  SealedCopies sealedCopies() {
    return copies;
  }

  /** How long a join refusal in clear is held (for tests). */
  long refusalHoldMillis() {
    return refusalHoldMillis;
  }

  /** Sets how long a join refusal in clear is held (for tests). */
  void refusalHoldMillis(long millis) {
    refusalHoldMillis = millis;
  }

  private void holdRefusal(Message msg) {
    if (!refusalHeld.compareAndSet(false, true)) {
      log.debug("%s: dropped a join refusal in clear from %s: one is held already", local_addr, msg.getSrc());
      return;
    }
    // On the timer's own thread: GMS only completes the join with it.
    Future<?> held = getTransport().getTimer().schedule(() -> {
      refusalHeld.set(false);
      if (view == null) {
        upInClear(msg);
      } else {
        log.debug("%s: dropped a join refusal in clear from %s: joined meanwhile", local_addr, msg.getSrc());
      }
    }, refusalHoldMillis, TimeUnit.MILLISECONDS, false);
    if (held == null) { // the stack is stopping: nobody waits for the join any more
      refusalHeld.set(false);
      log.debug("%s: dropped a join refusal in clear from %s: stopping", local_addr, msg.getSrc());
    }
  }

  /**
   * A sealed message, opened (see {@link #_decrypt}), or null if it is to be dropped: no encryption
   * header, sealed under another key, no seal that checks, sealed for another member, or a copy
   * sent again. Each drop is logged.
   */
  private Message open(Message msg) {
    EncryptHeader header = msg.getHeader(this.id);
    if (header == null && isBareJoin(msg) && onlyJoinHeaders(msg)
        && Objects.equals(gmsHeader(msg).getMember(), msg.getSrc())) {
      // The clear copy of a join request from a member already admitted (it asked again before the
      // answer reached it): its sealed copy is the one that counts.
      log.debug("%s: dropped the clear copy of a join request from %s, a member already", local_addr, msg.getSrc());
      return null;
    }
    if (header == null) {
      dropped(msg.getSrc(), "%s: dropped a message from %s without an encryption header", local_addr, msg.getSrc());
      return null;
    }
    if (!Arrays.equals(header.version(), symVersion())) {
      // SYM_ENCRYPT would drop it too, but silently where the sender is a member: a member whose
      // key differs (another keystore key, with the same secret for AUTH) would go unnoticed.
      dropped(msg.getSrc(), "%s: dropped a message from %s sealed under another key", local_addr, msg.getSrc());
      return null;
    }
    try {
      return decrypt(null, msg.copy(true, true)); // a copy: the buffer is kept for retransmissions
    } catch (Exception e) {
      dropped(msg.getSrc(), "%s: dropped a message from %s: %s", local_addr, msg.getSrc(), e);
      return null;
    }
  }

  /**
   * Logs a drop at WARN, at most once every 10 s per sender and ten times every 10 s in all, with
   * how many drops went unlogged since; the others at DEBUG.
   */
  private void dropped(Address sender, String format, Object... args) {
    String suffix = drops.admit(sender);
    if (suffix != null) {
      log.warn(format + suffix, args);
    } else if (log.isDebugEnabled()) {
      log.debug(format, args);
    }
  }

  /**
   * A rejection goes out in plain text: the joiner it refuses cannot decrypt anything we send. A
   * bare join request goes out twice: sealed, which a coordinator with
   * the same secret takes (it drops the clear copy), and in clear, for one with another secret,
   * whose {@code AUTH} can then refuse it and say why. What goes in clear goes with only the
   * membership and {@code AUTH} headers ({@link #inClear}).
   */
  @Override
  public Object down(Message msg) {
    if (isRejection(msg)) {
      Object result = down_prot.down(inClear(msg));
      forgetRefused(msg.getDest());
      return result;
    }
    if (isBareJoin(msg)) {
      if (view == null && msg.getDest() != null && joinsAsked.size() < MAX_JOINS_ASKED) {
        joinsAsked.add(msg.getDest()); // a refusal in clear is taken from it alone
      }
      Object result = super.down(msg);
      down_prot.down(inClear(msg));
      return result;
    }
    return super.down(msg);
  }

  /**
   * The members this node asked to join, while it has no view: a join refusal in clear is taken
   * only from one of them, sent to this node. Anyone who can reach the port can send a refusal in
   * clear; taken from anyone, one with text of the sender's choosing would fail the start (as
   * REFUSED, the wrong-secret failure), with no need to know which member this node asked.
   */
  private final Set<Address> joinsAsked = ConcurrentHashMap.newKeySet();
  /** At most this many are remembered: a joiner asks the coordinator, and again each join timeout. */
  private static final int MAX_JOINS_ASKED = 64;

  /**
   * A copy of a message to send in clear, with only its membership and {@code AUTH} headers (the
   * transport adds its own), as a receiver takes it ({@link #onlyJoinHeaders}). Not UNICAST3's:
   * UNICAST3 sits above the encryption and below AUTH, so it would act on that header (take a
   * connection's first number, close a connection, purge acknowledged messages, or keep an unknown
   * sender's message with no bound) before AUTH refused anything. Neither kind needs it: a refused
   * joiner never reads the acknowledgements, which go sealed, and sends its join request again
   * until it is answered (each time another clear copy, refused again).
   */
  private static Message inClear(Message msg) {
    Message plain = msg.copy(true, false);
    for (short id : new short[] {GMS_ID, AUTH_ID}) {
      Header header = msg.getHeader(id);
      if (header != null) {
        plain.putHeader(id, header);
      }
    }
    return plain;
  }

  /**
   * Drops UNICAST3's connection to a joiner just refused (a non-member): UNICAST3 keeps every
   * message it sends until it is acknowledged, and a refused joiner cannot acknowledge (it cannot
   * open what this node seals), so each refusal would be sent again every half second and kept,
   * as many as join requests come in clear, for as long as they come. Sent once, the refusal is
   * not sent again; a joiner that misses it asks again after its join timeout.
   */
  private void forgetRefused(Address joiner) {
    UNICAST3 u = unicast;
    if (u != null && joiner != null && !members.contains(joiner)) {
      u.removeSendConnection(joiner);
    }
  }

  /**
   * The two kinds of messages taken in clear, each only where it belongs, and carrying nothing but
   * the headers it is sent with (GMS, AUTH, the transport's), so that no other protocol's header
   * rides in on it (UNICAST3's included: see {@link #inClear}): a bare join request from a member
   * not in this node's view, asking to join as its sender (to be refused:
   * {@link #admittedBySealedCopy} drops one whose proof checks), and, while this node has no view
   * yet (it is joining), a rejection sent to it by a member it asked to join ({@link #joinsAsked}),
   * with one of AUTH's reasons, which then waits ({@link #REFUSAL_GRACE_MILLIS}) for a sealed answer.
   */
  private boolean passesInPlain(Message msg) {
    if (msg.getHeader(this.id) != null || !onlyJoinHeaders(msg)) {
      return false;
    }
    View current = view;
    if (isBareJoin(msg)) {
      return (current == null || !current.containsMember(msg.getSrc()))
          && Objects.equals(gmsHeader(msg).getMember(), msg.getSrc());
    }
    return current == null && isRejection(msg) && local_addr != null && local_addr.equals(msg.getDest())
        && msg.getSrc() != null && joinsAsked.contains(msg.getSrc());
  }

  /**
   * Whether a join request taken in clear is left to its sealed copy, and dropped here: when its
   * proof passes this stack's AUTH (or the stack has no AUTH to refuse it). A join request in
   * clear goes up only to be refused, so that a joiner with another secret learns why. Its
   * proof covers the joiner's address but not what the request's header says of the joiner (its
   * node id, weight, zone, endpoint), and anyone who saw a join can send its request again after
   * the member left: taken in clear, such a request would admit a member that nobody runs, with
   * whatever the sender wrote into it. A joiner with the secret sends each request sealed too, with
   * the same sequence number, and that copy admits it.
   */
  private boolean admittedBySealedCopy(Message msg) {
    if (!isBareJoin(msg)) {
      return false;
    }
    AUTH checker = auth;
    boolean left = checker == null || msg.getHeader(AUTH_ID) instanceof AuthHeader h && h.getToken() != null
        && checker.getAuthToken() != null && checker.getAuthToken().authenticate(h.getToken(), msg);
    if (left) {
      log.debug("%s: a join request in clear from %s %s: dropped, its sealed copy admits it", local_addr,
          msg.getSrc(), checker == null ? "(no AUTH in the stack)" : "whose proof checks");
    }
    return left;
  }

  /** Whether a join request in clear, to be refused, is dropped: past {@link #MAX_CLEAR_JOINS} in 10 s. */
  private boolean overClearJoinLimit(Message msg) {
    if (!isBareJoin(msg) || clearJoins.tryTake()) {
      return false;
    }
    dropped(msg.getSrc(), "%s: dropped a join request in clear from %s unanswered: more than %d in 10 s", local_addr,
        msg.getSrc(), MAX_CLEAR_JOINS);
    return true;
  }

  /** Whether the message carries no headers but those a clear join request is sent with, and the transport's. */
  private boolean onlyJoinHeaders(Message msg) {
    short transport = getTransport().getId();
    for (short id : msg.getHeaders().keySet()) {
      if (id != GMS_ID && id != AUTH_ID && id != transport) {
        return false;
      }
    }
    return true;
  }

  private static GMS.GmsHeader gmsHeader(Message msg) {
    Header h = msg.getHeader(GMS_ID);
    return h instanceof GMS.GmsHeader gms ? gms : null;
  }

  /** A join request without a payload: nothing secret in it, and AUTH checks its token. */
  private static boolean isBareJoin(Message msg) {
    GMS.GmsHeader gms = gmsHeader(msg);
    if (gms == null || msg.hasPayload()) {
      return false;
    }
    byte type = gms.getType();
    return type == GMS.GmsHeader.JOIN_REQ || type == GMS.GmsHeader.JOIN_REQ_WITH_STATE_TRANSFER;
  }

  /**
   * The reasons JGroups' AUTH gives a refused joiner, the only join refusals JGroups makes: a
   * refusal in clear with any other text is not taken, so that a forged one cannot put words of
   * its sender's choosing into a joiner's failure.
   */
  private static final Set<String> AUTH_REASONS = Set.of("authentication failed", "no AUTH header found in message",
      "join or merge without an AUTH header");

  /** A join response that carries only one of AUTH's failure reasons: it can make a join fail, never admit anyone. */
  private static boolean isRejection(Message msg) {
    GMS.GmsHeader gms = gmsHeader(msg);
    if (gms == null || gms.getType() != GMS.GmsHeader.JOIN_RSP || !msg.hasArray()) {
      return false;
    }
    try {
      JoinRsp rsp = Util.streamableFromBuffer(JoinRsp::new, msg.getArray(), msg.getOffset(), msg.getLength());
      return rsp.getFailReason() != null && rsp.getView() == null && AUTH_REASONS.contains(rsp.getFailReason());
    } catch (Exception notARejection) {
      return false;
    }
  }
}
