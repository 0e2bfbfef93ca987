package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class KeyCodecTest {

  @Test
  void decode_escapesAndPlus_decodesStrictlyAsUtf8() {
    assertEquals("a b+c/d", KeyCodec.decode("a%20b+c%2Fd"));
    assertEquals("é", KeyCodec.decode("%C3%A9"));
    assertEquals("é", KeyCodec.decode("\u00c3\u00a9"), "raw UTF-8 bytes, as the JDK server passes them");
  }

  @Test
  void decode_malformed_failsWith400NamingTheProblem() {
    HttpError bad = assertThrows(HttpError.class, () -> KeyCodec.decode("ab%4"));
    assertEquals(400, bad.status());
    assertEquals("malformed percent-encoding at index 2 of the key", bad.getMessage());
    assertEquals("the key is not valid UTF-8", assertThrows(HttpError.class, () -> KeyCodec.decode("%C3%28")).getMessage());
    assertThrows(HttpError.class, () -> KeyCodec.decode("%zz"));
    assertEquals("malformed percent-encoding at index 2 of the key",
        assertThrows(HttpError.class, () -> KeyCodec.decode("ab%")).getMessage(), "a % at the very end");
    assertEquals("the key has a character that is not a byte: U+141",
        assertThrows(HttpError.class, () -> KeyCodec.decode("\u0141")).getMessage());
  }

  /**
   * An escape's two digits are ASCII hex digits only: another script's digits (Arabic-Indic one,
   * U+0661) or a fullwidth letter (U+FF21) are malformed, not the byte their value would give.
   */
  @Test
  void decode_anEscapeWithDigitsOutsideAscii_isMalformed() {
    for (String raw : List.of("a%\u0661\u0661", "a%\uff21\uff21", "a%4\u0661")) {
      assertEquals("malformed percent-encoding at index 1 of the key",
          assertThrows(HttpError.class, () -> KeyCodec.decode(raw)).getMessage(), raw);
    }
    assertEquals("a\u00aa", KeyCodec.decode("a%C2%aA"), "ASCII digits of either case");
  }

  /**
   * The edges of what decodes to a byte: an escape whose first digit is 0 is one (a tab, a
   * newline); U+00FF, the last character that is a byte, is one too, the byte 0xFF, which no UTF-8
   * holds.
   */
  @Test
  void decode_anEscapeStartingWithZero_andTheLastByteCharacter_areBytes() {
    assertEquals("a\tb\n", KeyCodec.decode("a%09b%0A"));
    assertEquals("the key is not valid UTF-8",
        assertThrows(HttpError.class, () -> KeyCodec.decode("\u00ff")).getMessage());
  }

  @Test
  void validate_emptyOrOver256Bytes_fails() {
    assertEquals("empty key: use /kv/{key}", assertThrows(HttpError.class, () -> KeyCodec.validate("")).getMessage());
    assertEquals("k".repeat(256), KeyCodec.validate("k".repeat(256)));
    assertEquals("key too long: 258 UTF-8 bytes, at most 256",
        assertThrows(HttpError.class, () -> KeyCodec.validate("é".repeat(129))).getMessage());
  }
}
