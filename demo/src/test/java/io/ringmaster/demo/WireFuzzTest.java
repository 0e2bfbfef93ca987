package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.ringmaster.ring.KeyRange;
import java.io.DataInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The peer-to-peer messages, fuzzed from a fixed seed. Random messages of every kind (keys,
 * values, versions, leavers, pages; empty, at the largest the layout holds, and beyond ASCII) read
 * back as written; every cut of them, random changes to one or several of their bytes, random
 * bytes, and counts or lengths that are negative, huge or past the end are refused with an
 * {@link IOException}, Wire's one kind of refusal, or read as a message the writer could have
 * sent, and never make the reader allocate for what a count claims. A peer sent such requests over
 * its fork channel answers each, with an error for those it cannot read, logs them at DEBUG only,
 * and serves the next valid request.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WireFuzzTest {
  private static final long SEED = 0x425;
  /**
   * What a reader may allocate beyond {@link #ALLOCATED_PER_BYTE} per byte of its message: less
   * than the 384 KiB {@code readUTF} makes room for when a string claims 65,535 bytes.
   */
  private static final long ALLOCATED_AT_MOST = 64 << 10;
  private static final long ALLOCATED_PER_BYTE = 32;
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** Reads one kind of message from its bytes after the first. */
  private interface Reader {
    Object read(DataInputStream in) throws IOException;
  }

  /** One kind of message: its first byte, how to read it, and how to write a value read back. */
  private record Kind(String name, byte first, Reader reader, Function<Object, byte[]> writer) {}

  private static final Kind WRITE = new Kind("write", Wire.OP_WRITE, Wire::readWrite,
      m -> Wire.write((Wire.WriteRequest) m));
  private static final Kind PULL = new Kind("pull", Wire.OP_PULL, Wire::readPull,
      m -> Wire.pull((Wire.PullRequest) m));
  private static final Kind PUSH = new Kind("push", Wire.OP_PUSH, Wire::readPush,
      m -> Wire.push((Wire.PushRequest) m));
  private static final Kind STATUS = new Kind("status", Wire.OP_STATUS, Wire::readStatus,
      m -> Wire.status((Wire.PeerStatus) m));
  private static final Kind WRITE_REPLY = new Kind("write reply", Wire.OK, Wire::readWriteReply,
      m -> Wire.writeReply((Wire.WriteReply) m));
  @SuppressWarnings("unchecked")
  private static final Kind GET_REPLY = new Kind("get reply", Wire.OK, Wire::readGetReply,
      m -> Wire.getReply((Optional<Entry>) m));
  private static final Kind PAGE = new Kind("page", Wire.OK, Wire::readPage, m -> Wire.page((Store.Page) m));

  /** A message of a kind, as its value and its bytes. */
  private record Sample(Kind kind, Object value, byte[] bytes) {
    Sample(Kind kind, Object value) {
      this(kind, value, kind.writer().apply(value));
    }
  }

  @Test
  void randomMessagesOfEveryKind_readBackAsWritten() throws Exception {
    List<Sample> samples = samples(new SplittableRandom(SEED));
    for (Sample s : samples) {
      assertEquals(s.kind().first(), s.bytes()[0], s.kind().name());
      Object read = s.kind().reader().read(Wire.open(s.bytes(), 0, s.bytes().length));
      assertEquals(s.value(), read, () -> s.kind().name() + " of " + s.bytes().length + " bytes");
    }
    assertTrue(samples.stream().anyMatch(s -> s.bytes().length > 1_000_000), "one at the largest counts");
  }

  /**
   * Every cut of a message is refused; a message changed at random bytes, or random bytes, is
   * refused or read as one its writer could send (and writes back to the same message's value):
   * never another exception, nor allocations out of proportion to its size.
   */
  @Test
  void cutChangedOrRandomMessages_areRefusedAsMalformed_orReadAsOnesTheWriterCouldSend() {
    SplittableRandom random = new SplittableRandom(SEED + 1);
    int refused = 0;
    int read = 0;
    for (Sample s : samples(new SplittableRandom(SEED))) {
      byte[] whole = s.bytes();
      // Every cut of the smaller messages; of a large one, some at random.
      for (int cut : cuts(whole.length, random)) {
        Optional<Object> out = readChecked(s.kind(), whole, cut, "cut to " + cut);
        assertTrue(out.isEmpty(), () -> s.kind().name() + " cut to " + cut + " of " + whole.length
            + " bytes read as " + out.get());
      }
      int tries = whole.length <= 200_000 ? 60 : 6;
      for (int i = 0; i < tries; i++) {
        byte[] changed = whole.clone();
        int changes = i < tries / 2 ? 1 : 2 + random.nextInt(7);
        for (int c = 0; c < changes; c++) {
          changed[1 + random.nextInt(changed.length - 1)] = (byte) random.nextInt(256);
        }
        if (readChecked(s.kind(), changed, changed.length, changes + " bytes changed").isPresent()) {
          read++;
        } else {
          refused++;
        }
      }
    }
    for (Kind kind : List.of(WRITE, PULL, PUSH, STATUS, WRITE_REPLY, GET_REPLY, PAGE)) {
      for (int i = 0; i < 2_000; i++) {
        byte[] bytes = new byte[1 + random.nextInt(i < 1_000 ? 40 : 400)];
        random.nextBytes(bytes);
        if (readChecked(kind, bytes, bytes.length, "random bytes").isPresent()) {
          read++;
        } else {
          refused++;
        }
      }
    }
    // Both outcomes happen: the changes reach the fields that are checked and those that are not.
    String outcomes = refused + " refused, " + read + " read";
    assertTrue(refused > 10_000 && read > 1_000, outcomes);
  }

  /**
   * Each int, unsigned short or long of a message replaced by a count, length or stamp that is
   * negative, huge, or more than the bytes left: refused, or read without allocating for what it
   * claims.
   */
  @Test
  void countsAndLengths_negativeHugeOrPastTheEnd_areRefused_withoutAllocatingForThem() {
    SplittableRandom random = new SplittableRandom(SEED + 2);
    int refused = 0;
    for (Sample s : samples(new SplittableRandom(SEED))) {
      byte[] whole = s.bytes();
      if (whole.length > 200_000) {
        continue; // each read takes milliseconds; the same layouts are crafted in the smaller ones
      }
      for (int at : offsets(whole.length, random)) {
        int left = whole.length - at - 4;
        for (int claim : new int[] {-1, Integer.MIN_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE - 8, 1 << 26,
            left + 1, left / 17 + 1, 65_535}) {
          if (at + 4 <= whole.length && craftedIsRefused(s, at, ByteBuffer.allocate(4).putInt(claim).array())) {
            refused++;
          }
        }
        for (int claim : new int[] {0xffff, 0x8000, Math.max(0, Math.min(0xffff, whole.length - at - 1))}) {
          if (at + 2 <= whole.length && craftedIsRefused(s, at, new byte[] {(byte) (claim >> 8), (byte) claim})) {
            refused++;
          }
        }
        for (long claim : new long[] {Long.MAX_VALUE, Long.MIN_VALUE, Version.MAX_STAMP + 1, -1}) {
          if (at + 8 <= whole.length && craftedIsRefused(s, at, ByteBuffer.allocate(8).putLong(claim).array())) {
            refused++;
          }
        }
      }
    }
    int total = refused;
    assertTrue(total > 50_000, () -> total + " refused");
  }

  private static boolean craftedIsRefused(Sample s, int at, byte[] claim) {
    byte[] crafted = s.bytes().clone();
    System.arraycopy(claim, 0, crafted, at, claim.length);
    return readChecked(s.kind(), crafted, crafted.length,
        HexFormat.of().formatHex(claim) + " at byte " + at).isEmpty();
  }

  /**
   * Reads {@code length} bytes of {@code message} as {@code kind}: empty if refused with an
   * IOException; the value read if it is one its writer could send, which writes back to bytes
   * that read as the same value. Fails on any other exception, or if the read allocated more than
   * its share.
   */
  private static Optional<Object> readChecked(Kind kind, byte[] message, int length, String what) {
    long before = THREADS.getCurrentThreadAllocatedBytes();
    Object read;
    try {
      read = kind.reader().read(Wire.open(message, 0, length));
    } catch (IOException refused) {
      read = null;
    } catch (Throwable t) { // OutOfMemoryError included: what the test is for
      throw new AssertionError(kind.name() + " " + what + ": " + t + "\n" + hex(message, length), t);
    }
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    if (allocated > ALLOCATED_AT_MOST + ALLOCATED_PER_BYTE * length) {
      allocated = allocatedReadingAgain(kind, message, length); // a path's first read links its code
    }
    if (allocated > ALLOCATED_AT_MOST + ALLOCATED_PER_BYTE * length) {
      fail(kind.name() + " " + what + ": reading " + length + " bytes allocated " + allocated + "\n"
          + hex(message, length));
    }
    if (read == null) {
      return Optional.empty();
    }
    Object value = read;
    assertWriterCouldSend(value, () -> kind.name() + " " + what + " read as " + value + "\n" + hex(message, length));
    byte[] again = kind.writer().apply(value);
    try {
      assertEquals(value, kind.reader().read(Wire.open(again, 0, again.length)), kind.name() + " " + what);
    } catch (IOException e) {
      throw new AssertionError(kind.name() + " " + what + " read as " + value + ", which reads back as " + e, e);
    }
    return Optional.of(value);
  }

  /**
   * What reading the message allocates once its path has run: the first time a message takes a
   * path, the JVM links that path's string concatenations and lambdas, which allocates tens of
   * kilobytes once.
   */
  private static long allocatedReadingAgain(Kind kind, byte[] message, int length) {
    long before = THREADS.getCurrentThreadAllocatedBytes();
    try {
      kind.reader().read(Wire.open(message, 0, length));
    } catch (IOException refused) {
      // as the first time
    }
    return THREADS.getCurrentThreadAllocatedBytes() - before;
  }

  private static String hex(byte[] message, int length) {
    int shown = Math.min(length, 200);
    return HexFormat.of().formatHex(message, 0, shown) + (shown < length ? "..." : "");
  }

  /** Checks what a message read as against what its writer guarantees. */
  private static void assertWriterCouldSend(Object m, Supplier<String> what) {
    if (m instanceof Wire.WriteRequest w) {
      assertEntry(w.entry(), what);
      assertTrue(w.hops() >= 0 && w.hops() <= 255, what);
      w.targets().forEach(t -> assertStringFits(t, what));
      w.leaving().processes().forEach((id, process) -> assertStringFits(id, what));
    } else if (m instanceof Wire.PullRequest p) {
      assertCursor(p.cursor(), what);
      assertFalse(p.ranges().contains(null), what);
    } else if (m instanceof Wire.PushRequest p) {
      assertStringFits(p.from(), what);
      p.entries().forEach(e -> assertEntry(e, what));
    } else if (m instanceof Wire.PeerStatus s) {
      assertStringFits(s.id(), what);
    } else if (m instanceof Wire.WriteReply r) {
      assertVersion(r.held(), what);
      r.storedBy().forEach((id, process) -> assertStringFits(id, what));
    } else if (m instanceof Optional<?> found) {
      found.ifPresent(e -> assertEntry((Entry) e, what));
    } else if (m instanceof Store.Page p) {
      p.entries().forEach(e -> assertEntry(e, what));
      p.next().ifPresent(c -> assertCursor(c, what));
    } else {
      fail("no such message: " + m);
    }
  }

  /** An entry as {@link Entry} documents it: a non-empty key, a tombstone without a value, a version in range. */
  private static void assertEntry(Entry e, Supplier<String> what) {
    assertFalse(e.key().isEmpty(), () -> "an empty key: " + what.get());
    assertStringFits(e.key(), what);
    assertTrue(!e.deleted() || e.value().isEmpty(), what);
    assertVersion(e.version(), what);
  }

  private static void assertVersion(Version v, Supplier<String> what) {
    assertTrue(Version.isValidStamp(v.stamp()), () -> "stamp " + v.stamp() + ": " + what.get());
    assertStringFits(v.writer(), what);
  }

  private static void assertCursor(Store.Cursor c, Supplier<String> what) {
    assertTrue(c.segment() >= 0, () -> "segment " + c.segment() + ": " + what.get());
    c.last().ifPresent(slot -> assertEquals(Store.Slot.of(slot.key()), slot, what));
  }

  /** A string the writer can write: at most 65,535 bytes of modified UTF-8. */
  private static void assertStringFits(String s, Supplier<String> what) {
    assertTrue(modifiedUtf8Length(s) <= 0xffff, what);
  }

  private static int modifiedUtf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      n += c >= 1 && c <= 0x7f ? 1 : c <= 0x7ff ? 2 : 3;
    }
    return n;
  }

  /**
   * A few hundred malformed requests of each operation (cut, changed, with crafted counts, random
   * bytes, and unknown operations) sent to a peer of two in this JVM: each is answered, with an
   * error if the peer cannot read it, none with the error of a bug; the peer logs them at DEBUG
   * only, at most once each, and then serves a valid write and read.
   */
  @Test
  void aPeerSentMalformedRequests_answersEach_logsThemAtDebugOnly_andServesTheNextValidOnes() throws Exception {
    List<InJvmPeer> peers = new ArrayList<>();
    try {
      InJvmPeer.startAll(peers, "wire-fuzz", List.of("a", "b"));
      InJvmPeer a = peers.get(0);
      SplittableRandom random = new SplittableRandom(SEED + 3);
      List<byte[]> requests = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        requests.add(malformed(Wire.write(writeRequest(random)), random));
        requests.add(malformed(Wire.pull(pullRequest(random)), random));
        requests.add(malformed(Wire.push(pushRequest(random)), random));
        requests.add(malformed(Wire.get(key(random), random.nextInt(256), random.nextBoolean(), random.nextInt(5)),
            random));
        byte[] any = new byte[1 + random.nextInt(60)];
        random.nextBytes(any);
        requests.add(any);
      }
      Duration timeout = Duration.ofSeconds(20);
      List<LogRecord> logged = Logged.by(Rpc.class, () -> {
        List<CompletableFuture<DataInputStream>> calls = new ArrayList<>();
        for (byte[] r : requests) {
          calls.add(a.rpc().call("b", r, timeout));
        }
        for (int i = 0; i < calls.size(); i++) {
          try {
            Rpc.await(calls.get(i), timeout);
          } catch (ExecutionException e) {
            Throwable why = e.getCause();
            byte[] r = requests.get(i);
            assertInstanceOf(Rpc.RemoteError.class, why, () -> why + " for " + hex(r, r.length));
            assertFalse(why.getMessage().startsWith("b: unexpected"), () -> why.getMessage() + " for " + hex(r, r.length));
          }
        }
      });
      List<Level> levels = logged.stream().map(LogRecord::getLevel).distinct().toList();
      assertTrue(levels.isEmpty() || levels.equals(List.of(Level.FINE)), () -> "logged at " + levels);
      assertTrue(logged.size() <= requests.size(), () -> logged.size() + " records");

      Entry e = Entry.of("after", "the fuzz", new Version(1, "a"));
      Wire.WriteReply stored = Wire.readWriteReply(Rpc.await(a.rpc().call("b",
          Wire.write(new Wire.WriteRequest(e, Set.of("b"), 0)), timeout), timeout));
      assertTrue(stored.stored().contains("b"), stored::toString);
      Optional<Entry> found = Wire.readGetReply(Rpc.await(a.rpc().call("b", Wire.get("after", 0, false, 0), timeout),
          timeout));
      assertEquals(Optional.of(e), found);
    } finally {
      InJvmPeer.closeAll(peers);
    }
  }

  /** A valid message broken one of the ways above: cut, changed, or with a crafted count. */
  private static byte[] malformed(byte[] valid, SplittableRandom random) {
    byte[] m = valid.clone();
    switch (random.nextInt(3)) {
      case 0:
        return Arrays.copyOf(m, 1 + random.nextInt(m.length - 1));
      case 1:
        for (int c = 1 + random.nextInt(4); c > 0; c--) {
          m[1 + random.nextInt(m.length - 1)] = (byte) random.nextInt(256);
        }
        return m;
      default:
        if (m.length >= 5) {
          int[] claims = {-1, Integer.MAX_VALUE, 1 << 26, m.length};
          ByteBuffer.wrap(m, 1 + random.nextInt(m.length - 4), 4).putInt(claims[random.nextInt(claims.length)]);
        }
        return m;
    }
  }

  // ---------------------------------------------------------------- random messages

  /** Every cut of a message of up to 4 KiB; of a larger one, some at random and the last few. */
  private static int[] cuts(int length, SplittableRandom random) {
    if (length <= 4096) {
      return IntStream.range(1, length).toArray();
    }
    return IntStream.concat(random.ints(sampled(length), 1, length), IntStream.range(length - 5, length)).toArray();
  }

  /** Every offset after the first byte of a message of up to 4 KiB; of a larger one, some at random. */
  private static int[] offsets(int length, SplittableRandom random) {
    if (length <= 4096) {
      return IntStream.range(1, length).toArray();
    }
    return random.ints(sampled(length), 1, length).toArray();
  }

  /** How many places of a large message are tried: fewer in the largest, each read of which takes milliseconds. */
  private static int sampled(int length) {
    return length <= 200_000 ? 20 : 3;
  }

  /** Random messages of every kind, and for each kind an empty one and one at the largest. */
  private static List<Sample> samples(SplittableRandom random) {
    List<Sample> all = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      all.add(new Sample(WRITE, writeRequest(random)));
      all.add(new Sample(PULL, pullRequest(random)));
      all.add(new Sample(PUSH, pushRequest(random)));
      all.add(new Sample(STATUS, new Wire.PeerStatus(string(random), random.nextLong(), random.nextLong(),
          random.nextLong(0, Long.MAX_VALUE), random.nextLong(0, Long.MAX_VALUE), random.nextLong(0, Long.MAX_VALUE),
          random.nextInt(0, Integer.MAX_VALUE), random.nextLong(1, Long.MAX_VALUE))));
      all.add(new Sample(WRITE_REPLY, new Wire.WriteReply(processes(random), version(random), random.nextBoolean())));
      all.add(new Sample(GET_REPLY, random.nextBoolean() ? Optional.of(entry(random)) : Optional.empty()));
      all.add(new Sample(PAGE, new Store.Page(entries(random), random.nextBoolean()
          ? Optional.of(cursor(random)) : Optional.empty())));
    }
    // Empty: no targets, leavers, ranges, entries or storers; an empty value and writer.
    Entry least = Entry.tombstone("k", new Version(0, ""));
    all.add(new Sample(WRITE, new Wire.WriteRequest(least, Set.of(), 0)));
    all.add(new Sample(PULL, new Wire.PullRequest(0, List.of(), Store.Cursor.START, 0)));
    all.add(new Sample(PUSH, new Wire.PushRequest(Wire.PushKind.MIGRATION, "", List.of())));
    all.add(new Sample(STATUS, new Wire.PeerStatus("", 0, 0, 0, 0, 0, 0, 0)));
    all.add(new Sample(WRITE_REPLY, new Wire.WriteReply(Map.of(), new Version(0, ""), false)));
    all.add(new Sample(GET_REPLY, Optional.empty()));
    all.add(new Sample(PAGE, new Store.Page(List.of(), Optional.empty())));
    // The largest: strings of 65,535 bytes, a value past writeUTF's limit, 65,535 leavers and targets.
    String longest = "é".repeat(32_767) + "k";
    Entry largest = Entry.of(longest, "😀".repeat(100_000), new Version(Version.MAX_STAMP, longest));
    Map<String, UUID> most = new LinkedHashMap<>();
    Set<String> targets = new LinkedHashSet<>();
    for (int i = 0; i < 0xffff; i++) {
      most.put("p" + i, new UUID(random.nextLong(), random.nextLong()));
      targets.add("t" + i);
    }
    all.add(new Sample(WRITE, new Wire.WriteRequest(largest, targets, 255, new Wire.Leavers(most))));
    // The longest strings alone, in a message small enough to craft counts in.
    all.add(new Sample(WRITE, new Wire.WriteRequest(Entry.of(longest, "v", new Version(1, longest)), Set.of("a"), 0)));
    all.add(new Sample(PULL, new Wire.PullRequest(Long.MAX_VALUE, List.of(KeyRange.full(), new KeyRange(Long.MAX_VALUE,
        Long.MIN_VALUE)), new Store.Cursor(Integer.MAX_VALUE, Optional.of(Store.Slot.of(longest))), Integer.MAX_VALUE)));
    all.add(new Sample(PUSH, new Wire.PushRequest(Wire.PushKind.REPAIR, longest, List.of(largest, largest))));
    all.add(new Sample(STATUS, new Wire.PeerStatus(longest, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE,
        Long.MAX_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE)));
    all.add(new Sample(WRITE_REPLY, new Wire.WriteReply(most, new Version(Version.MAX_STAMP, longest), true)));
    all.add(new Sample(GET_REPLY, Optional.of(largest)));
    all.add(new Sample(PAGE, new Store.Page(List.of(largest), Optional.of(new Store.Cursor(Integer.MAX_VALUE,
        Optional.of(Store.Slot.of(longest)))))));
    return all;
  }

  private static Wire.WriteRequest writeRequest(SplittableRandom random) {
    Set<String> targets = new LinkedHashSet<>();
    for (int i = random.nextInt(4); i > 0; i--) {
      targets.add(string(random));
    }
    Map<String, UUID> leaving = random.nextInt(3) == 0 ? processes(random) : Map.of();
    return new Wire.WriteRequest(entry(random), targets, random.nextInt(256),
        leaving.isEmpty() ? Wire.Leavers.NONE : new Wire.Leavers(leaving));
  }

  private static Wire.PullRequest pullRequest(SplittableRandom random) {
    List<KeyRange> ranges = new ArrayList<>();
    for (int i = random.nextInt(4); i > 0; i--) {
      ranges.add(random.nextInt(4) == 0 ? KeyRange.full() : new KeyRange(random.nextLong(), random.nextLong()));
    }
    return new Wire.PullRequest(random.nextLong(0, 10), ranges, cursor(random), random.nextInt());
  }

  private static Wire.PushRequest pushRequest(SplittableRandom random) {
    Wire.PushKind[] kinds = Wire.PushKind.values();
    return new Wire.PushRequest(kinds[random.nextInt(kinds.length)], string(random), entries(random));
  }

  private static Store.Cursor cursor(SplittableRandom random) {
    return new Store.Cursor(random.nextInt(3) == 0 ? random.nextInt(0, Integer.MAX_VALUE) : random.nextInt(4),
        random.nextBoolean() ? Optional.of(Store.Slot.of(key(random))) : Optional.empty());
  }

  private static List<Entry> entries(SplittableRandom random) {
    List<Entry> entries = new ArrayList<>();
    for (int i = random.nextInt(4); i > 0; i--) {
      entries.add(entry(random));
    }
    return entries;
  }

  private static Entry entry(SplittableRandom random) {
    Version v = version(random);
    return random.nextInt(4) == 0 ? Entry.tombstone(key(random), v) : Entry.of(key(random), string(random), v);
  }

  private static Version version(SplittableRandom random) {
    long[] edges = {0, 1, Version.MAX_STAMP};
    long stamp = random.nextInt(4) == 0 ? edges[random.nextInt(edges.length)] : random.nextLong(0, Version.MAX_STAMP);
    return new Version(stamp, string(random));
  }

  private static Map<String, UUID> processes(SplittableRandom random) {
    Map<String, UUID> processes = new LinkedHashMap<>();
    for (int i = random.nextInt(4); i > 0; i--) {
      processes.put(string(random), new UUID(random.nextLong(), random.nextLong()));
    }
    return processes;
  }

  /** A key: a string that is not empty. */
  private static String key(SplittableRandom random) {
    String s = string(random);
    return s.isEmpty() ? "k" : s;
  }

  /** Characters of one, two, three and four bytes of UTF-8, NUL (two in modified UTF-8) among them. */
  private static final int[] CODE_POINTS = {'a', 'Z', '0', '-', 0, 0x7f, 'é', 0x7ff, '€', 0xfffd, 0x1F600, 0x10FFFF};

  private static String string(SplittableRandom random) {
    StringBuilder s = new StringBuilder();
    for (int i = random.nextInt(random.nextInt(8) == 0 ? 100 : 12); i > 0; i--) {
      s.appendCodePoint(random.nextInt(3) == 0 ? CODE_POINTS[random.nextInt(CODE_POINTS.length)]
          : random.nextInt(0x20, 0x7f));
    }
    return s.toString();
  }
}
