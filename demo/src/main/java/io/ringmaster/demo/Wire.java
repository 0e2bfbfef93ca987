package io.ringmaster.demo;

import io.ringmaster.ring.KeyRange;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * The peer-to-peer messages on the demo's fork channel, as bytes. Every request starts with an
 * operation byte; every reply with {@link #OK} or {@link #ERROR}. No operation or reply byte is
 * in 1..31, which the core's gossip keeps for its own message types: a request that reaches a
 * peer whose fork channel is not up yet lands on the node's main channel, where gossip would read
 * such a first byte as one of its messages (it drops any other).
 *
 * <p>Peers of one cluster must speak the same messages: every peer announces
 * {@link #APPLICATION_VERSION} as its node's {@code applicationVersion}, so that the cluster
 * refuses a peer of a build whose messages differ, naming both versions, instead of letting it
 * misread them.
 */
final class Wire {
  /** Names these messages; a change to any of them must change it. */
  static final String APPLICATION_VERSION = "ringmaster-demo/7";

  static final byte OP_WRITE = 'W';
  static final byte OP_GET = 'G';
  static final byte OP_PULL = 'P';
  static final byte OP_PUSH = 'H';
  static final byte OP_STATUS = 'S';
  static final byte OK = 'K';
  static final byte ERROR = 'E';

  /**
   * Peers known to be leaving: each id with the process (the JGroups UUID) found leaving under it.
   * Elsewhere the id may name another process (one restarted, or the one the cluster kept when a
   * partition healed), which is not leaving.
   */
  record Leavers(Map<String, UUID> processes) {
    static final Leavers NONE = new Leavers(Map.of());

    Leavers {
      processes = Map.copyOf(processes);
    }

    boolean isEmpty() {
      return processes.isEmpty();
    }

    Set<String> ids() {
      return processes.keySet();
    }
  }

  /**
   * A client write on its way to an owner. {@code targets} are the owners the sender wrote to;
   * {@code leaving}, the peers the sender knows are leaving (itself, if it is): nobody forwards the
   * write to either, and a receiver that is leaving too routes around the leavers.
   */
  record WriteRequest(Entry entry, Set<String> targets, int hops, Leavers leaving) {
    /** A write from a sender that knows of no peer leaving. */
    WriteRequest(Entry entry, Set<String> targets, int hops) {
      this(entry, targets, hops, Leavers.NONE);
    }
  }

  /**
   * The peers that stored the write (the receiver and those it forwarded to), each id with the
   * process that stored it (its JGroups UUID), and the newest version any of them holds for the key
   * afterwards: newer than the write's own when a write with a higher stamp got there first. The
   * writer checks each process against the one its view has for the id: a copy stored by another
   * process than the one holding the id now (the peer restarted, or rejoined) does not count, and
   * the write is sent again. {@code beaten}: one of them (or a previous owner it asked) holds
   * another entry with the write's very version, which wins over it (a process restarted under
   * the writer's id, whose clock stamped the same microsecond): the write was not kept, and is
   * stamped again.
   */
  record WriteReply(Map<String, UUID> storedBy, Version held, boolean beaten) {
    WriteReply {
      storedBy = Collections.unmodifiableMap(new LinkedHashMap<>(storedBy));
    }

    /** The ids of the peers that stored the write. */
    Set<String> stored() {
      return storedBy.keySet();
    }

    WriteReply merge(WriteReply other) {
      Map<String, UUID> all = new LinkedHashMap<>(storedBy);
      other.storedBy.forEach(all::putIfAbsent);
      return new WriteReply(all, other.held.isNewerThan(held) ? other.held : held, beaten || other.beaten);
    }
  }

  /** Entries of {@code ranges} from {@code cursor}, once the source has installed view {@code viewId}. */
  record PullRequest(long viewId, List<KeyRange> ranges, Store.Cursor cursor, int maxBytes) {}

  /** Why entries are pushed: a lost range, a stray key found by the sweep, a repair after a merge. */
  enum PushKind { MIGRATION, SWEEP, REPAIR }

  record PushRequest(PushKind kind, String from, List<Entry> entries) {}

  /**
   * What a peer says about itself every second: its view, ring and key counts. {@code sequence}
   * numbers the reports of one process, 1 for its first, so that a receiver can tell which of two
   * is the later (they go out of band, and may arrive in either order; see {@link PeerDirectory}).
   */
  record PeerStatus(String id, long viewId, long checksum, long primaryKeys, long backupKeys, long strayKeys,
                    int migrationsInProgress, long sequence) {}

  private Wire() {}

  // ---------------------------------------------------------------- requests

  static byte[] write(WriteRequest r) {
    return bytes(OP_WRITE, out -> {
      entry(out, r.entry());
      out.writeByte(r.hops());
      strings(out, r.targets());
      processes(out, r.leaving().processes());
    });
  }

  static WriteRequest readWrite(DataInputStream in) throws IOException {
    Entry e = entry(in);
    int hops = in.readUnsignedByte();
    Set<String> targets = new LinkedHashSet<>(strings(in));
    Map<String, UUID> leaving = processes(in);
    return new WriteRequest(e, targets, hops, leaving.isEmpty() ? Leavers.NONE : new Leavers(leaving));
  }

  /**
   * A read of one key. A peer asked that holds no copy and is still taking the key in asks the
   * key's previous owners ({@link Incoming}) with one step fewer: {@code stepsBack} is how many
   * more times the read may go back so, 0 for none. A {@code strict} read (a write's check) fails
   * if a previous owner asked does not answer, where another read counts it as holding nothing;
   * and it is answered only by a peer that has installed {@code viewId}, the asker's view, or a
   * later one: a peer still routing by an older ring does not forward the writes it stores to the
   * asker, so its answer would not stay true.
   */
  static byte[] get(String key, int stepsBack, boolean strict, long viewId) {
    return bytes(OP_GET, out -> {
      out.writeUTF(key);
      out.writeByte(stepsBack);
      out.writeBoolean(strict);
      out.writeLong(viewId);
    });
  }

  static byte[] pull(PullRequest r) {
    return bytes(OP_PULL, out -> {
      out.writeLong(r.viewId());
      out.writeInt(r.ranges().size());
      for (KeyRange k : r.ranges()) {
        out.writeLong(k.start());
        out.writeLong(k.end());
      }
      cursor(out, r.cursor());
      out.writeInt(r.maxBytes());
    });
  }

  static PullRequest readPull(DataInputStream in) throws IOException {
    long viewId = in.readLong();
    int n = count(in, 16, "ranges");
    List<KeyRange> ranges = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      ranges.add(new KeyRange(in.readLong(), in.readLong()));
    }
    Store.Cursor cursor = cursor(in);
    return new PullRequest(viewId, ranges, cursor, in.readInt());
  }

  static byte[] push(PushRequest r) {
    return bytes(OP_PUSH, out -> {
      out.writeByte(r.kind().ordinal());
      out.writeUTF(r.from());
      entries(out, r.entries());
    });
  }

  static PushRequest readPush(DataInputStream in) throws IOException {
    int k = in.readUnsignedByte();
    if (k >= PushKind.values().length) {
      throw new IOException("malformed message: push kind " + k);
    }
    PushKind kind = PushKind.values()[k];
    String from = utf(in);
    return new PushRequest(kind, from, entries(in));
  }

  static byte[] status(PeerStatus s) {
    return bytes(OP_STATUS, out -> {
      out.writeUTF(s.id());
      out.writeLong(s.viewId());
      out.writeLong(s.checksum());
      out.writeLong(s.primaryKeys());
      out.writeLong(s.backupKeys());
      out.writeLong(s.strayKeys());
      out.writeInt(s.migrationsInProgress());
      out.writeLong(s.sequence());
    });
  }

  static PeerStatus readStatus(DataInputStream in) throws IOException {
    return new PeerStatus(utf(in), in.readLong(), in.readLong(), in.readLong(), in.readLong(), in.readLong(),
        in.readInt(), in.readLong());
  }

  // ---------------------------------------------------------------- replies

  static byte[] writeReply(WriteReply r) {
    return bytes(OK, out -> {
      processes(out, r.storedBy());
      out.writeLong(r.held().stamp());
      out.writeUTF(r.held().writer());
      out.writeBoolean(r.beaten());
    });
  }

  static WriteReply readWriteReply(DataInputStream in) throws IOException {
    Map<String, UUID> storedBy = processes(in);
    Version held = version(in);
    return new WriteReply(storedBy, held, in.readBoolean());
  }

  static byte[] getReply(Optional<Entry> found) {
    return bytes(OK, out -> {
      out.writeBoolean(found.isPresent());
      if (found.isPresent()) {
        entry(out, found.get());
      }
    });
  }

  static Optional<Entry> readGetReply(DataInputStream in) throws IOException {
    return in.readBoolean() ? Optional.of(entry(in)) : Optional.empty();
  }

  static byte[] page(Store.Page p) {
    return bytes(OK, out -> {
      entries(out, p.entries());
      out.writeBoolean(p.next().isPresent());
      if (p.next().isPresent()) {
        cursor(out, p.next().get());
      }
    });
  }

  static Store.Page readPage(DataInputStream in) throws IOException {
    List<Entry> entries = entries(in);
    return new Store.Page(entries, in.readBoolean() ? Optional.of(cursor(in)) : Optional.empty());
  }

  static byte[] pushReply(int changed) {
    return bytes(OK, out -> out.writeInt(changed));
  }

  static byte[] error(String message) {
    return bytes(ERROR, out -> out.writeUTF(message.length() > 1000 ? message.substring(0, 1000) : message));
  }

  /**
   * A stream over a message's bytes, positioned after its first byte (its operation, or a reply's
   * {@link #OK} or {@link #ERROR}), which the caller has read and checked: a message has one.
   */
  static DataInputStream open(byte[] buf, int offset, int length) {
    return new DataInputStream(new ByteArrayInputStream(buf, offset + 1, length - 1));
  }

  // ---------------------------------------------------------------- parts

  private static void entry(DataOutputStream out, Entry e) throws IOException {
    out.writeUTF(e.key());
    out.writeLong(e.version().stamp());
    out.writeUTF(e.version().writer());
    out.writeBoolean(e.deleted());
    byte[] value = e.value().getBytes(StandardCharsets.UTF_8); // may exceed writeUTF's 64 KiB
    out.writeInt(value.length);
    out.write(value);
  }

  private static Entry entry(DataInputStream in) throws IOException {
    String key = utf(in);
    if (key.isEmpty()) { // what Entry documents it never is, and no client can read, write or delete
      throw new IOException("malformed message: an entry with an empty key");
    }
    Version v = version(in);
    boolean deleted = in.readBoolean();
    byte[] value = new byte[count(in, 1, "value bytes")];
    in.readFully(value);
    if (deleted && value.length > 0) { // what Entry would refuse, as an IOException like every malformed message
      throw new IOException("malformed message: a tombstone with a value, key \"" + key + "\"");
    }
    return new Entry(key, new String(value, StandardCharsets.UTF_8), v, deleted);
  }

  /**
   * A version, refused if its stamp is out of range (a broken or hostile peer): stored, a stamp near
   * {@code Long.MAX_VALUE} would win over every later write of its key, and the clocks that
   * observe it would wrap around.
   */
  private static Version version(DataInputStream in) throws IOException {
    long stamp = in.readLong();
    if (!Version.isValidStamp(stamp)) {
      throw new IOException("malformed message: version stamp " + stamp + " outside 0.." + Version.MAX_STAMP);
    }
    return new Version(stamp, utf(in));
  }

  private static void entries(DataOutputStream out, List<Entry> entries) throws IOException {
    out.writeInt(entries.size());
    for (Entry e : entries) {
      entry(out, e);
    }
  }

  private static List<Entry> entries(DataInputStream in) throws IOException {
    int n = count(in, ENTRY_MIN_BYTES, "entries");
    List<Entry> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(entry(in));
    }
    return out;
  }

  /** The fewest bytes an entry takes: two empty strings, a stamp, a flag and a value length. */
  private static final int ENTRY_MIN_BYTES = 2 + 8 + 2 + 1 + 4;

  /**
   * A count or a length read from a message, checked against the bytes the message still holds
   * (at least {@code bytesEach} each), so that a malformed or hostile message of a few bytes cannot
   * make this peer allocate gigabytes.
   */
  private static int count(DataInputStream in, int bytesEach, String what) throws IOException {
    return fits(in.readInt(), in, bytesEach, what);
  }

  /** {@code n}, just read, if the message still holds {@code bytesEach} bytes for each; else refused. */
  private static int fits(int n, DataInputStream in, int bytesEach, String what) throws IOException {
    int left = in.available(); // exact: every message is read from a byte array
    if (n < 0 || (long) n * bytesEach > left) {
      throw new IOException("malformed message: " + n + " " + what + " with " + left + " bytes left");
    }
    return n;
  }

  /**
   * A string, refused if its length is more than the bytes left (before {@code readUTF} makes
   * room for up to 384 KiB for it), or if the writer could not write it back: {@code readUTF}
   * takes a NUL sent as one byte, where {@code writeUTF} spends two on it, so a long string of
   * such NULs would read here, then fail every message that passes it on (a forwarded write, a
   * hand-off).
   */
  private static String utf(DataInputStream in) throws IOException {
    in.mark(2);
    int length = in.readUnsignedShort();
    int left = in.available(); // exact: every message is read from a byte array
    if (length > left) {
      throw new IOException("malformed message: a string of " + length + " bytes with " + left + " bytes left");
    }
    in.reset();
    String s = in.readUTF();
    if (s.length() > 0xffff / 3) { // shorter ones fit whatever their characters
      long bytes = 0;
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        bytes += c >= 1 && c <= 0x7f ? 1 : c <= 0x7ff ? 2 : 3;
      }
      if (bytes > 0xffff) {
        throw new IOException("malformed message: a string of " + bytes + " bytes, more than the writer can send");
      }
    }
    return s;
  }

  /** Ids, each with the UUID of a process. */
  private static void processes(DataOutputStream out, Map<String, UUID> processes) throws IOException {
    out.writeShort(processes.size());
    for (Map.Entry<String, UUID> p : processes.entrySet()) {
      out.writeUTF(p.getKey());
      out.writeLong(p.getValue().getMostSignificantBits());
      out.writeLong(p.getValue().getLeastSignificantBits());
    }
  }

  private static Map<String, UUID> processes(DataInputStream in) throws IOException {
    int n = in.readUnsignedShort();
    Map<String, UUID> processes = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      processes.put(utf(in), new UUID(in.readLong(), in.readLong()));
    }
    return processes;
  }

  private static void strings(DataOutputStream out, Set<String> values) throws IOException {
    out.writeShort(values.size());
    for (String s : values) {
      out.writeUTF(s);
    }
  }

  private static List<String> strings(DataInputStream in) throws IOException {
    int n = fits(in.readUnsignedShort(), in, 2, "strings"); // each takes its length's two bytes at least
    List<String> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(utf(in));
    }
    return out;
  }

  private static void cursor(DataOutputStream out, Store.Cursor c) throws IOException {
    out.writeInt(c.segment());
    out.writeBoolean(c.last().isPresent());
    if (c.last().isPresent()) {
      out.writeUTF(c.last().get().key());
    }
  }

  private static Store.Cursor cursor(DataInputStream in) throws IOException {
    int segment = in.readInt();
    if (segment < 0) {
      throw new IOException("negative segment in a cursor: " + segment);
    }
    return new Store.Cursor(segment, in.readBoolean() ? Optional.of(Store.Slot.of(utf(in))) : Optional.empty());
  }

  private interface Body {
    void write(DataOutputStream out) throws IOException;
  }

  private static byte[] bytes(byte first, Body body) {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(64);
    try (DataOutputStream out = new DataOutputStream(buf)) {
      out.writeByte(first);
      body.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot encode a message", e); // a byte array never fails
    }
    return buf.toByteArray();
  }
}
