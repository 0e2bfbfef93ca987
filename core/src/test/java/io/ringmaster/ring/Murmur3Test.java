package io.ringmaster.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Our MurmurHash3 against Guava's, an independent implementation, on random inputs. */
class Murmur3Test {
  private static final HashFunction GUAVA = Hashing.murmur3_128();

  @Test
  void hashBytes_everyLength0To64_matchesGuava() {
    SplittableRandom random = new SplittableRandom(42);
    for (int len = 0; len <= 64; len++) {
      for (int trial = 0; trial < 200; trial++) {
        byte[] data = new byte[len];
        for (int k = 0; k < len; k++) {
          data[k] = (byte) random.nextInt(256);
        }
        assertEquals(GUAVA.hashBytes(data).asLong(), Murmur3.hash(data), () -> "length " + data.length);
      }
    }
  }

  @Test
  void hashBytes_offsetAndLength_hashesOnlyThatSlice() {
    byte[] data = "xxuser:123456yy".getBytes(StandardCharsets.UTF_8);
    assertEquals(GUAVA.hashBytes(data, 2, 11).asLong(), Murmur3.hash(data, 2, 11));
  }

  @Test
  void hashString_asciiEveryLength0To64_matchesGuavaOverUtf8() {
    SplittableRandom random = new SplittableRandom(7);
    for (int len = 0; len <= 64; len++) {
      for (int trial = 0; trial < 200; trial++) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < len; k++) {
          sb.append((char) random.nextInt(128));
        }
        assertUtf8HashMatches(sb.toString());
      }
    }
  }

  @Test
  void hashString_nonAsciiEveryLength0To64_matchesGuavaOverUtf8() {
    SplittableRandom random = new SplittableRandom(11);
    int[] alphabet = {'a', 'Z', 0x7f, 0x80, 0xe9, 0x7ff, 0x800, 0x4e2d, 0xffff, 0x1f600, 0x10ffff};
    for (int len = 0; len <= 64; len++) {
      for (int trial = 0; trial < 200; trial++) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < len) {
          sb.appendCodePoint(alphabet[random.nextInt(alphabet.length)]);
        }
        assertUtf8HashMatches(sb.toString());
      }
    }
  }

  @Test
  void hashString_loneSurrogates_hashLikeGetBytesWithQuestionMarks() {
    for (String s : new String[] {"\ud800", "a\udc00b", "\ud83d", "\ud83d\ud83d\ude00", "0123456789abcdef\udfff"}) {
      assertUtf8HashMatches(s);
    }
  }

  /**
   * Lone surrogates anywhere: a high or a low one alone, two of one kind in a row, a pair reversed,
   * at the start, the end and either side of each 16-byte block edge, among characters of every
   * UTF-8 width (U+0000 and U+FFFF included). Each malformed char is one {@code '?'}, and only a
   * high surrogate followed by a low one is a pair, as {@code getBytes(UTF_8)} has it.
   */
  @Test
  void hashString_loneSurrogatesAnywhere_everyLength0To40_matchesGetBytes() {
    SplittableRandom random = new SplittableRandom(13);
    char[] alphabet = {'a', '?', 0, 0x7f, 0x80, 0x7ff, 0x800, 0xfffe, 0xffff, 0xd7ff, 0xe000,
        0xd800, 0xdbff, 0xdc00, 0xdfff};
    for (int len = 0; len <= 40; len++) {
      for (int trial = 0; trial < 300; trial++) {
        char[] chars = new char[len];
        for (int k = 0; k < len; k++) {
          chars[k] = alphabet[random.nextInt(alphabet.length)];
        }
        assertUtf8HashMatches(new String(chars));
      }
    }
    for (String s : new String[] {"\udc00\udc00", "\ude00\ud83d", "0123456789abcde\udfff\udc00", "\ud800\ud800"}) {
      assertUtf8HashMatches(s);
    }
  }

  @Test
  void hashString_asciiBlockThenNonAscii_matchesGuava() {
    assertUtf8HashMatches("0123456789abcdef0123456789abcde\u00e9-tail");
    assertUtf8HashMatches("0123456789abcdef\u4e2d0123456789abcdef");
  }

  private static void assertUtf8HashMatches(String s) {
    long expected = GUAVA.hashBytes(s.getBytes(StandardCharsets.UTF_8)).asLong();
    assertEquals(expected, Murmur3.hash(s), () -> "string " + s.codePoints().boxed().toList());
  }
}
