package io.ringmaster.demo;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Keys and values as the HTTP API takes them: a key is the percent-decoded rest of the path after
 * {@code /kv/}, as UTF-8; a value is the request body, as UTF-8.
 */
final class KeyCodec {
  static final int MAX_KEY_BYTES = 256;
  static final int MAX_VALUE_BYTES = 64 * 1024;

  private KeyCodec() {}

  /**
   * Decodes a raw path segment strictly: {@code %XX} escapes and literal characters (which the
   * JDK server hands over as ISO-8859-1, one per byte received) become bytes that must be UTF-8.
   * Unlike {@code URLDecoder}, {@code +} stays a plus sign. (Literal bytes outside ASCII reach
   * this only when the JDK's URI parser accepts the characters they read as: the UTF-8 of
   * {@code é} does, that of {@code €} does not, and gets the server's own 400. Clients
   * percent-encode them.)
   *
   * @throws HttpError 400 naming the problem
   */
  static String decode(String raw) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '%') {
        int hi = i + 1 < raw.length() ? hexDigit(raw.charAt(i + 1)) : -1;
        int lo = i + 2 < raw.length() ? hexDigit(raw.charAt(i + 2)) : -1;
        if (hi < 0 || lo < 0) {
          throw new HttpError(400, "malformed percent-encoding at index " + i + " of the key");
        }
        bytes.write(hi << 4 | lo);
        i += 2;
      } else if (c > 0xff) {
        throw new HttpError(400, "the key has a character that is not a byte: U+" + Integer.toHexString(c));
      } else {
        bytes.write(c);
      }
    }
    return utf8(bytes.toByteArray(), "the key");
  }

  /**
   * The value of an ASCII hex digit, or -1: {@code Character.digit} would also take other scripts'
   * digits and the fullwidth letters, which no percent-encoding has.
   */
  private static int hexDigit(char c) {
    return c < 0x80 ? Character.digit(c, 16) : -1;
  }

  /** Checks a decoded key against the limits. */
  static String validate(String key) {
    if (key.isEmpty()) {
      throw new HttpError(400, "empty key: use /kv/{key}");
    }
    int length = key.getBytes(StandardCharsets.UTF_8).length;
    if (length > MAX_KEY_BYTES) {
      throw new HttpError(400, "key too long: " + length + " UTF-8 bytes, at most " + MAX_KEY_BYTES);
    }
    return key;
  }

  /** Decodes bytes that must be UTF-8; {@code what} names them in the error. */
  static String utf8(byte[] bytes, String what) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new HttpError(400, what + " is not valid UTF-8");
    }
  }
}
