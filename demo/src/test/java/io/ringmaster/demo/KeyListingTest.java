package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** {@link HttpApi#listKeys}: what {@code GET /keys} lists, within its count and its bytes. */
class KeyListingTest {
  private static final Version V = new Version(1, "p1");

  private static List<Entry> entries(List<String> keys) {
    List<Entry> out = new ArrayList<>();
    for (String k : keys) {
      out.add(Entry.of(k, "v", V));
    }
    return out;
  }

  @Test
  void tombstonesAndUnwantedKeysAreLeftOut_andAFullListIsNotTruncated() {
    List<Entry> entries = new ArrayList<>(entries(List.of("a", "b", "c", "skip")));
    entries.add(Entry.tombstone("gone", V));
    HttpApi.Listed listed = HttpApi.listKeys(entries, k -> !k.equals("skip"), 10, 1_000);
    assertEquals(List.of("a", "b", "c"), listed.keys());
    assertFalse(listed.truncated());
  }

  @Test
  void theLimit_stopsTheList_andSaysSo() {
    HttpApi.Listed listed = HttpApi.listKeys(entries(List.of("a", "b", "c")), k -> true, 2, 1_000);
    assertEquals(List.of("a", "b"), listed.keys());
    assertTrue(listed.truncated());
    assertFalse(HttpApi.listKeys(entries(List.of("a", "b")), k -> true, 2, 1_000).truncated(), "exactly the limit");
  }

  /**
   * Random keys of every kind a key may hold (control characters, quotes, backslashes, 2-, 3- and
   * 4-byte UTF-8): the estimate of a key's JSON is never short (exact for printable text of the
   * Basic Multilingual Plane), and the listed keys, written as the reply writes them, never exceed
   * the byte cap.
   */
  @Test
  void theByteCap_holdsForTheJsonTheReplyWrites() {
    String alphabet = "ab\u0001\n\"\\/\u00e9\u20ac\ud83d\ude00\u007f";
    SplittableRandom random = new SplittableRandom(11);
    for (int round = 0; round < 200; round++) {
      List<String> keys = new ArrayList<>();
      for (int k = 0; k < 40; k++) {
        StringBuilder key = new StringBuilder();
        for (int c = 1 + random.nextInt(30); c > 0; c--) {
          int at = random.nextInt(alphabet.length());
          at -= Character.isLowSurrogate(alphabet.charAt(at)) ? 1 : 0;
          key.appendCodePoint(alphabet.codePointAt(at));
        }
        keys.add(key.toString());
      }
      int cap = 2 + random.nextInt(2_000);
      for (String key : keys) {
        int json = Json.bytes(key).length;
        boolean plain = key.chars().noneMatch(c -> c < 0x20 || Character.isSurrogate((char) c));
        assertTrue(plain ? HttpApi.jsonBytes(key) == json : HttpApi.jsonBytes(key) >= json,
            () -> "estimate " + HttpApi.jsonBytes(key) + ", written " + json + " for " + Json.string(key));
      }
      HttpApi.Listed listed = HttpApi.listKeys(entries(keys), k -> true, 1_000, cap);
      int written = Json.bytes(listed.keys()).length;
      assertTrue(written <= cap, () -> written + " bytes written, cap " + cap);
      assertEquals(listed.keys(), keys.subList(0, listed.keys().size()));
      if (!listed.truncated()) {
        assertEquals(keys, listed.keys());
      }
    }
  }

  /**
   * Golden values at each edge of {@link HttpApi#jsonBytes}'s classes of characters (control,
   * quote and backslash, ASCII, two- and three-byte UTF-8): the last control character counts its
   * six-byte escape, a space one byte, U+007F one, U+0080 and U+07FF two, U+0800 three; each of
   * the printable ones exactly as many as the reply's JSON writer writes.
   */
  @Test
  void jsonBytes_atEachEdgeOfItsCharacterClasses_isTheGoldenCount() {
    assertEquals(8, HttpApi.jsonBytes("\u001f"), "U+001F, escaped as \\u001F, in quotes");
    String[] printable = {" ", "\"", "\\", "\u007f", "\u0080", "\u07ff", "\u0800", "\uffff"};
    int[] golden = {3, 4, 4, 3, 4, 4, 5, 5};
    for (int i = 0; i < printable.length; i++) {
      String key = printable[i];
      assertEquals(golden[i], HttpApi.jsonBytes(key), () -> "jsonBytes of U+" + Integer.toHexString(key.charAt(0)));
      assertEquals(golden[i], Json.bytes(key).length, () -> "JSON written for U+" + Integer.toHexString(key.charAt(0)));
    }
  }

  /**
   * The byte cap is inclusive and counts one comma between keys, none before the first:
   * {@code ["a"]} is 5 bytes and {@code ["a","b"]} 9, so a cap of 5 lists "a" and one of 4
   * nothing; a cap of 9 lists both, one of 8 only "a", each saying whether a key was left out.
   */
  @Test
  void theByteCap_isInclusive_andCountsOneCommaBetweenKeys() {
    HttpApi.Listed one = HttpApi.listKeys(entries(List.of("a")), k -> true, 10, 5);
    assertEquals(List.of("a"), one.keys(), "[\"a\"] is 5 bytes: within a cap of 5");
    assertFalse(one.truncated(), "nothing left out under a cap of 5");
    HttpApi.Listed none = HttpApi.listKeys(entries(List.of("a")), k -> true, 10, 4);
    assertEquals(List.of(), none.keys(), "[\"a\"] is over a cap of 4");
    assertTrue(none.truncated(), "a left out under a cap of 4");
    HttpApi.Listed both = HttpApi.listKeys(entries(List.of("a", "b")), k -> true, 10, 9);
    assertEquals(List.of("a", "b"), both.keys(), "[\"a\",\"b\"] is 9 bytes: within a cap of 9");
    assertFalse(both.truncated(), "nothing left out under a cap of 9");
    HttpApi.Listed first = HttpApi.listKeys(entries(List.of("a", "b")), k -> true, 10, 8);
    assertEquals(List.of("a"), first.keys(), "[\"a\",\"b\"] is over a cap of 8");
    assertTrue(first.truncated(), "b left out under a cap of 8");
  }
}
