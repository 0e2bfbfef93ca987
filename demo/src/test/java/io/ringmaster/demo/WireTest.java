package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.KeyRange;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class WireTest {
  /** No first byte of the demo's messages is one that the core's gossip keeps (1..31). */
  @Test
  void noOperationOrReplyByte_isOneTheCoresGossipKeeps() {
    for (byte b : new byte[] {Wire.OP_WRITE, Wire.OP_GET, Wire.OP_PULL, Wire.OP_PUSH, Wire.OP_STATUS, Wire.OK,
        Wire.ERROR}) {
      assertTrue(b < 1 || b > 31, () -> "byte " + b);
    }
  }

  private static DataInputStream body(byte[] message, byte op) {
    assertEquals(op, message[0]);
    return Wire.open(message, 0, message.length);
  }

  @Test
  void roundTrip_everyMessage_decodesToWhatWasSent() throws Exception {
    Entry big = Entry.of("k", "é".repeat(40_000), new Version(7, "p1")); // 80 KB: more than writeUTF allows
    Entry gone = Entry.tombstone("k2", new Version(8, "p2"));
    Wire.WriteRequest w = new Wire.WriteRequest(big, new LinkedHashSet<>(List.of("a", "b")), 2);
    assertEquals(w, Wire.readWrite(body(Wire.write(w), Wire.OP_WRITE)));
    Wire.WriteRequest fromALeaver = new Wire.WriteRequest(gone, new LinkedHashSet<>(List.of("b", "a")), 1,
        new Wire.Leavers(Map.of("x", new UUID(1, -2), "a", new UUID(-3, 4))));
    Wire.WriteRequest decoded = Wire.readWrite(body(Wire.write(fromALeaver), Wire.OP_WRITE));
    assertEquals(fromALeaver, decoded);
    assertEquals(List.of("b", "a"), List.copyOf(decoded.targets()), "in the order sent");

    Wire.PullRequest p = new Wire.PullRequest(12, List.of(new KeyRange(5, -5), KeyRange.full()),
        new Store.Cursor(1, Optional.of(Store.Slot.of("k9"))), 1000);
    assertEquals(p, Wire.readPull(body(Wire.pull(p), Wire.OP_PULL)));

    Wire.PushRequest push = new Wire.PushRequest(Wire.PushKind.REPAIR, "p3", List.of(big, gone));
    assertEquals(push, Wire.readPush(body(Wire.push(push), Wire.OP_PUSH)));

    Map<String, UUID> storedBy = new LinkedHashMap<>();
    storedBy.put("c", new UUID(-1, 7));
    storedBy.put("a", new UUID(Long.MIN_VALUE, Long.MAX_VALUE));
    Wire.WriteReply reply = new Wire.WriteReply(storedBy, new Version(9, "c"), false);
    Wire.WriteReply decodedReply = Wire.readWriteReply(body(Wire.writeReply(reply), Wire.OK));
    assertEquals(reply, decodedReply);
    Wire.WriteReply beaten = new Wire.WriteReply(storedBy, new Version(9, "c"), true);
    assertEquals(beaten, Wire.readWriteReply(body(Wire.writeReply(beaten), Wire.OK)));
    assertEquals(List.of("c", "a"), List.copyOf(decodedReply.stored()), "in the order sent");

    Wire.PeerStatus s = new Wire.PeerStatus("p1", 3, -99, 10, 20, 1, 0, 41);
    assertEquals(s, Wire.readStatus(body(Wire.status(s), Wire.OP_STATUS)));
    Wire.PeerStatus last = new Wire.PeerStatus("p1", 3, -99, 10, 20, 1, 0, Long.MAX_VALUE);
    assertEquals(Long.MAX_VALUE, Wire.readStatus(body(Wire.status(last), Wire.OP_STATUS)).sequence(), "all 64 bits");

    Store.Page page = new Store.Page(List.of(gone), Optional.of(new Store.Cursor(0, Optional.of(Store.Slot.of("k2")))));
    assertEquals(page, Wire.readPage(body(Wire.page(page), Wire.OK)));
    assertEquals(Optional.of(gone), Wire.readGetReply(body(Wire.getReply(Optional.of(gone)), Wire.OK)));
  }

  /**
   * Every message's bytes, for fixed contents, pinned with the version that names them: a change to
   * any layout fails here until {@link Wire#APPLICATION_VERSION} changes too (and then this digest),
   * so peers of two builds refuse each other instead of misreading each other's messages.
   */
  @Test
  void layouts_arePinnedWithTheVersionThatNamesThem() throws Exception {
    Entry e = Entry.of("k", "v", new Version(7, "p1"));
    Entry gone = Entry.tombstone("k2", new Version(8, "p2"));
    Map<String, UUID> storedBy = new LinkedHashMap<>();
    storedBy.put("c", new UUID(-1, 7));
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    for (byte[] m : List.of(
        // One leaver only: the order of a map of several is not fixed from one JVM to the next.
        Wire.write(new Wire.WriteRequest(e, new LinkedHashSet<>(List.of("a", "b")), 2,
            new Wire.Leavers(Map.of("x", new UUID(1, -2))))),
        Wire.get("k", 2, true, 7),
        Wire.pull(new Wire.PullRequest(12, List.of(new KeyRange(5, -5)), new Store.Cursor(1,
            Optional.of(Store.Slot.of("k9"))), 1000)),
        Wire.push(new Wire.PushRequest(Wire.PushKind.MIGRATION, "p3", List.of(e, gone))),
        Wire.writeReply(new Wire.WriteReply(storedBy, new Version(9, "c"), true)),
        Wire.status(new Wire.PeerStatus("p1", 3, -99, 10, 20, 1, 0, 41)),
        Wire.page(new Store.Page(List.of(gone), Optional.empty())),
        Wire.getReply(Optional.of(e)),
        Wire.error("no"))) {
      all.write(m);
    }
    String digest = HexFormat.of().formatHex(
        MessageDigest.getInstance("SHA-256").digest(all.toByteArray()));
    assertEquals("ringmaster-demo/7 f10a0f9e57972a98ac69b771efccfe146bdedc68e4f10231836edf9777ab2e6f", Wire.APPLICATION_VERSION + " " + digest,
        "a message's layout changed: change Wire.APPLICATION_VERSION, then the digest here");
  }

  @Test
  void operationBytes_neverOne_soTheCoreGossipIgnoresThem() {
    for (byte op : new byte[] {Wire.OP_WRITE, Wire.OP_GET, Wire.OP_PULL, Wire.OP_PUSH, Wire.OP_STATUS}) {
      assertNotEquals(1, op);
    }
  }

  /**
   * A count or length that the message cannot hold (a few bytes claiming two billion) is refused
   * as malformed before anything is allocated for it.
   */
  @Test
  void lengthPrefixes_largerThanTheMessage_areRefused_notAllocated() throws Exception {
    Entry e = Entry.of("k", "v", new Version(7, "p1"));
    byte[] write = Wire.write(new Wire.WriteRequest(e, new LinkedHashSet<>(List.of("a")), 0));
    // The value's length is the int just before its one byte "v": claim 0x7ffffff0 bytes.
    int at = lastIndexOf(write, (byte) 'v') - 4;
    assertEquals(1, ByteBuffer.wrap(write, at, 4).getInt(), "found the value's length");
    ByteBuffer.wrap(write, at, 4).putInt(0x7ffffff0);
    IOException bad = assertThrows(IOException.class,
        () -> Wire.readWrite(body(write, Wire.OP_WRITE)));
    assertTrue(bad.getMessage().startsWith("malformed message: 2147483632 value bytes"),
        bad.getMessage());

    byte[] push = Wire.push(new Wire.PushRequest(Wire.PushKind.SWEEP, "p3", List.of(e)));
    int count = 1 + 1 + 2 + 2; // after the op, the kind and the sender "p3"
    assertEquals(1, ByteBuffer.wrap(push, count, 4).getInt(), "found the entry count");
    ByteBuffer.wrap(push, count, 4).putInt(1 << 29);
    assertThrows(IOException.class, () -> Wire.readPush(body(push, Wire.OP_PUSH)));

    push[1] = 99; // no such kind of push
    assertThrows(IOException.class, () -> Wire.readPush(body(push, Wire.OP_PUSH)));

    byte[] pull = Wire.pull(new Wire.PullRequest(3, List.of(KeyRange.full()), Store.Cursor.START, 100));
    ByteBuffer.wrap(pull, 1 + 8, 4).putInt(-1); // the range count, after the op and the view id
    assertThrows(IOException.class, () -> Wire.readPull(body(pull, Wire.OP_PULL)));

    // A cursor's segment below 0: refused as malformed, not an index out of bounds in the store.
    byte[] cursor = Wire.pull(new Wire.PullRequest(3, List.of(), Store.Cursor.START, 100));
    ByteBuffer.wrap(cursor, 1 + 8 + 4, 4).putInt(-1); // after the op, the view id and no ranges
    assertThrows(IOException.class, () -> Wire.readPull(body(cursor, Wire.OP_PULL)));
  }

  /**
   * A count is checked against the bytes left at its smallest size each: two entries where one is
   * left (21 bytes, fewer than two entries' 34 at least) is refused, naming what it claims.
   */
  @Test
  void aCountOfEntries_beyondWhatTheBytesLeftCanHold_isRefusedNamingIt() {
    byte[] push = Wire.push(new Wire.PushRequest(Wire.PushKind.SWEEP, "p3", List.of(Entry.of("k", "v",
        new Version(7, "p1")))));
    int count = 1 + 1 + 2 + 2; // after the op, the kind and the sender "p3"
    ByteBuffer.wrap(push, count, 4).putInt(2);
    IOException bad = assertThrows(IOException.class,
        () -> Wire.readPush(body(push, Wire.OP_PUSH)));
    assertEquals("malformed message: 2 entries with 21 bytes left", bad.getMessage());
  }

  /** The first byte past the last kind of push is no kind: refused as malformed, like any other. */
  @Test
  void aPushKindJustPastTheLast_isRefusedAsMalformed() {
    byte[] push = Wire.push(new Wire.PushRequest(Wire.PushKind.REPAIR, "p3", List.of()));
    push[1] = (byte) Wire.PushKind.values().length;
    IOException bad = assertThrows(IOException.class,
        () -> Wire.readPush(body(push, Wire.OP_PUSH)));
    assertEquals("malformed message: push kind 3", bad.getMessage());
  }

  /**
   * The replies to a write forwarded to several owners, merged as the receiver answers its writer:
   * every peer that stored it, once, with the process that answered first for its id; the newest
   * version any of them holds, whichever reply names it; beaten if any of them was.
   */
  @Test
  void writeReplies_merged_keepEveryStorerOnce_theNewestVersionHeld_andBeatenIfAnyWas() {
    UUID aFirst = new UUID(1, 1);
    Wire.WriteReply fromA = new Wire.WriteReply(Map.of("a", aFirst), new Version(9, "a"), false);
    Wire.WriteReply fromB = new Wire.WriteReply(Map.of("b", new UUID(2, 2)), new Version(10, "b"), false);
    Wire.WriteReply fromAAgain = new Wire.WriteReply(Map.of("a", new UUID(3, 3)), new Version(8, "a"), false);

    Wire.WriteReply ab = fromA.merge(fromB);
    assertEquals(List.of("a", "b"), List.copyOf(ab.stored()), "each storer, in the order heard");
    assertEquals(new Version(10, "b"), ab.held(), "the newer version, from the reply merged in");
    assertEquals(new Version(10, "b"), fromB.merge(fromA).held(), "the newer version, from the reply merged into");
    assertEquals(false, ab.beaten(), "neither was beaten");

    Wire.WriteReply again = ab.merge(fromAAgain);
    assertEquals(Map.of("a", aFirst, "b", new UUID(2, 2)), again.storedBy(), "a once, with its first process");
    assertEquals(new Version(10, "b"), again.held());

    Wire.WriteReply beaten = new Wire.WriteReply(Map.of(), new Version(9, "a"), true);
    assertEquals(true, ab.merge(beaten).beaten(), "beaten in the reply merged in");
    assertEquals(true, beaten.merge(ab).beaten(), "beaten in the reply merged into");
  }

  /** Reads one kind of message from its bytes, after the first. */
  private interface Reader {
    Object read(DataInputStream in) throws IOException;
  }

  /**
   * A message cut short at any byte (a sender that stopped half way, a buffer read short) is
   * refused as malformed, an IOException like every other malformed message: never read as a whole
   * one with its last fields missing or defaulted, nor failing some other way.
   */
  @Test
  void everyMessageCutShort_atAnyByte_isRefusedAsMalformed() throws Exception {
    Entry e = Entry.of("k", "v", new Version(7, "p1"));
    Entry gone = Entry.tombstone("k2", new Version(8, "p2"));
    Map<byte[], Reader> messages = new LinkedHashMap<>();
    messages.put(Wire.write(new Wire.WriteRequest(e, new LinkedHashSet<>(List.of("a", "b")), 2,
        new Wire.Leavers(Map.of("x", new UUID(1, -2))))), Wire::readWrite);
    messages.put(Wire.pull(new Wire.PullRequest(12, List.of(new KeyRange(5, -5)),
        new Store.Cursor(1, Optional.of(Store.Slot.of("k9"))), 1000)), Wire::readPull);
    messages.put(Wire.push(new Wire.PushRequest(Wire.PushKind.MIGRATION, "p3", List.of(e, gone))), Wire::readPush);
    messages.put(Wire.status(new Wire.PeerStatus("p1", 3, -99, 10, 20, 1, 0, 41)), Wire::readStatus);
    messages.put(Wire.writeReply(new Wire.WriteReply(Map.of("c", new UUID(-1, 7)), new Version(9, "c"), true)),
        Wire::readWriteReply);
    messages.put(Wire.getReply(Optional.of(e)), Wire::readGetReply);
    messages.put(Wire.page(new Store.Page(List.of(e, gone), Optional.of(new Store.Cursor(0,
        Optional.of(Store.Slot.of("k2")))))), Wire::readPage);
    for (Map.Entry<byte[], Reader> m : messages.entrySet()) {
      byte[] whole = m.getKey();
      assertNotNull(m.getValue().read(Wire.open(whole, 0, whole.length)), "the whole message reads");
      for (int length = 1; length < whole.length; length++) {
        DataInputStream cut = Wire.open(whole, 0, length);
        int at = length;
        assertThrows(IOException.class, () -> m.getValue().read(cut),
            () -> "message " + (char) whole[0] + " cut to " + at + " of its " + whole.length + " bytes");
      }
    }
  }

  /** The reply to a push: OK, then how many entries changed the receiver's store, a big-endian int. */
  @Test
  void pushReply_isOkThenTheCountOfEntriesChanged() {
    assertArrayEquals(new byte[] {Wire.OK, 0, 0, 1, 2}, Wire.pushReply(258));
  }

  /** A message inside a larger buffer (at an offset, with bytes after it) is read up to its own end only. */
  @Test
  void open_aMessageInsideALargerBuffer_readsItsOwnBytesOnly() throws Exception {
    byte[] buf = {9, Wire.OK, 0, 0, 0, 7, 9, 9};
    DataInputStream in = Wire.open(buf, 1, 5);
    assertEquals(4, in.available(), "the message's bytes after its first");
    assertEquals(7, in.readInt());
    assertEquals(-1, in.read(), "nothing past the message");
  }

  /** The first stamp, 0, is one a peer may send. */
  @Test
  void versionStampZero_isAccepted() throws Exception {
    Entry first = Entry.of("k", "v", new Version(0, "p1"));
    assertEquals(first, Wire.readWrite(body(Wire.write(new Wire.WriteRequest(first, new LinkedHashSet<>(List.of("a")),
        0)), Wire.OP_WRITE)).entry());
  }

  /**
   * A stamp no clock makes (negative, or past 2^53 - 1): stored, one near Long.MAX_VALUE would win
   * over every later write of its key, and the clocks observing it would wrap around.
   */
  @Test
  void versionStamps_outOfRange_areRefused() throws Exception {
    for (long stamp : new long[] {Long.MAX_VALUE, Version.MAX_STAMP + 1, -1}) {
      Entry e = Entry.of("k", "v", new Version(stamp, "p1"));
      byte[] write = Wire.write(new Wire.WriteRequest(e, new LinkedHashSet<>(List.of("a")), 0));
      IOException bad = assertThrows(IOException.class,
          () -> Wire.readWrite(body(write, Wire.OP_WRITE)));
      assertEquals("malformed message: version stamp " + stamp + " outside 0.." + Version.MAX_STAMP, bad.getMessage());
      byte[] reply = Wire.writeReply(new Wire.WriteReply(Map.of("a", new UUID(1, 2)), new Version(stamp, "a"), false));
      assertThrows(IOException.class,
          () -> Wire.readWriteReply(body(reply, Wire.OK)));
    }
    Entry last = Entry.of("k", "v", new Version(Version.MAX_STAMP, "p1"));
    assertEquals(last, Wire.readWrite(body(Wire.write(new Wire.WriteRequest(last, new LinkedHashSet<>(List.of("a")), 0)),
        Wire.OP_WRITE)).entry(), "the last stamp is still one");
  }

  /** A tombstone that carries a value (what Entry refuses) is a malformed message, not a crash of the reader. */
  @Test
  void aTombstoneWithAValue_isRefusedAsMalformed() throws Exception {
    Entry e = Entry.of("k", "v", new Version(7, "p1"));
    byte[] write = Wire.write(new Wire.WriteRequest(e, new LinkedHashSet<>(List.of("a")), 0));
    int deleted = lastIndexOf(write, (byte) 'v') - 4 - 1; // the flag, before the value's length
    assertEquals(0, write[deleted], "found the flag");
    write[deleted] = 1;
    IOException bad = assertThrows(IOException.class,
        () -> Wire.readWrite(body(write, Wire.OP_WRITE)));
    assertEquals("malformed message: a tombstone with a value, key \"k\"", bad.getMessage());
  }

  /**
   * A string of 65,535 bytes, the most the writer can send, made of the characters at each edge of
   * modified UTF-8's sizes (1 and 127 take one byte, 128 and 2047 two): read back as it was sent,
   * not counted as longer and refused.
   */
  @Test
  void theLongestStrings_ofCharactersAtEachEdgeOfTheirSize_readBack() throws Exception {
    for (String longest : List.of("\u0001".repeat(0xffff), "\u007f".repeat(0xffff), "\u0080".repeat(0xffff / 2) + "k",
        "\u07ff".repeat(0xffff / 2) + "k")) {
      Wire.PushRequest push = new Wire.PushRequest(Wire.PushKind.REPAIR, longest, List.of());
      byte[] bytes = Wire.push(push);
      assertEquals(1 + 1 + 2 + 0xffff + 4, bytes.length, "the sender's 65,535 bytes");
      assertEquals(push, Wire.readPush(body(bytes, Wire.OP_PUSH)), () -> "a sender of " + longest.length()
          + " characters " + Integer.toHexString(longest.charAt(0)));
    }
  }

  /**
   * A count of strings (a write's targets) is checked against the bytes left at two each, a length
   * at least: three targets where one and the leavers' count are left is refused, naming the count.
   */
  @Test
  void aCountOfTargets_beyondWhatTheBytesLeftCanHold_isRefusedNamingIt() {
    byte[] write = Wire.write(new Wire.WriteRequest(Entry.of("k", "v", new Version(7, "p1")),
        new LinkedHashSet<>(List.of("a")), 0));
    int count = write.length - 2 - 3 - 2; // before the leavers' count, the target "a" and the targets' count
    assertEquals(1, ByteBuffer.wrap(write, count, 2).getShort(), "found the targets' count");
    ByteBuffer.wrap(write, count, 2).putShort((short) 3);
    IOException bad = assertThrows(IOException.class, () -> Wire.readWrite(body(write, Wire.OP_WRITE)));
    assertEquals("malformed message: 3 strings with 5 bytes left", bad.getMessage());
  }

  private static int lastIndexOf(byte[] bytes, byte b) {
    for (int i = bytes.length - 1; i >= 0; i--) {
      if (bytes[i] == b) {
        return i;
      }
    }
    throw new AssertionError("no byte " + b);
  }
}
