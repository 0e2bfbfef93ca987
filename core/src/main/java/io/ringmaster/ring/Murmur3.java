package io.ringmaster.ring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * MurmurHash3 x64 128-bit with seed 0, returning the first 64 bits ({@code h1}) as a signed long:
 * the value Guava's {@code Hashing.murmur3_128().hashBytes(b).asLong()} returns.
 *
 * <p>Strings are hashed over their UTF-8 bytes, encoded on the fly so that no array is allocated.
 * The encoding is exactly {@code String.getBytes(StandardCharsets.UTF_8)}: a lone surrogate
 * becomes {@code '?'} (0x3F), a surrogate pair one 4-byte sequence.
 *
 * <p>The 16-byte block step is written out at each of its three uses: it updates two longs, which
 * a method could hand back only by allocating, and this is the lookup's hot path.
 */
final class Murmur3 {
  private static final long C1 = 0x87c37b91114253d5L;
  private static final long C2 = 0x4cf5ad432745937fL;
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private Murmur3() {}

  static long hash(byte[] data) {
    return hash(data, 0, data.length);
  }

  static long hash(byte[] data, int offset, int length) {
    long h1 = 0;
    long h2 = 0;
    int end = offset + length;
    int i = offset;
    for (; i <= end - 16; i += 16) { // not i + 16 <= end, which overflows for arrays near 2^31 bytes
      long k1 = (long) LONG_LE.get(data, i);
      long k2 = (long) LONG_LE.get(data, i + 8);
      h1 ^= mixK1(k1);
      h1 = Long.rotateLeft(h1, 27) + h2;
      h1 = h1 * 5 + 0x52dce729;
      h2 ^= mixK2(k2);
      h2 = Long.rotateLeft(h2, 31) + h1;
      h2 = h2 * 5 + 0x38495ab5;
    }
    long k1 = 0;
    long k2 = 0;
    int tail = end - i;
    // Tail bytes are read little-endian: bytes 0..7 into k1, 8..15 into k2.
    for (int t = tail - 1; t >= 8; t--) {
      k2 = (k2 << 8) | (data[i + t] & 0xffL);
    }
    for (int t = Math.min(tail, 8) - 1; t >= 0; t--) {
      k1 = (k1 << 8) | (data[i + t] & 0xffL);
    }
    // Mixing a zero k is a no-op, so the tail needs no length switch.
    h2 ^= mixK2(k2);
    h1 ^= mixK1(k1);
    return finish(h1, h2, length);
  }

  static long hash(String s) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      if (s.charAt(i) >= 0x80) {
        return hashEncoding(s);
      }
    }
    return hashAscii(s, n);
  }

  /** A string of ASCII characters only: its chars are its UTF-8 bytes. */
  private static long hashAscii(String s, int n) {
    long h1 = 0;
    long h2 = 0;
    int i = 0;
    for (; i <= n - 16; i += 16) { // as in hash(byte[], int, int)
      h1 ^= mixK1(asciiLong(s, i, 8));
      h1 = Long.rotateLeft(h1, 27) + h2;
      h1 = h1 * 5 + 0x52dce729;
      h2 ^= mixK2(asciiLong(s, i + 8, 8));
      h2 = Long.rotateLeft(h2, 31) + h1;
      h2 = h2 * 5 + 0x38495ab5;
    }
    int tail = n - i;
    long k2 = tail > 8 ? asciiLong(s, i + 8, tail - 8) : 0;
    long k1 = asciiLong(s, i, Math.min(tail, 8));
    h2 ^= mixK2(k2);
    h1 ^= mixK1(k1);
    return finish(h1, h2, n);
  }

  /** Up to eight ASCII chars as the little-endian long of their bytes. */
  private static long asciiLong(String s, int i, int count) {
    long v = 0;
    for (int b = count - 1; b >= 0; b--) {
      v = (v << 8) | s.charAt(i + b);
    }
    return v;
  }

  /** Any string: UTF-8 encoded on the fly, byte by byte, into the block buffer k1:k2. */
  private static long hashEncoding(String s) {
    int n = s.length();
    long h1 = 0;
    long h2 = 0;
    long length = 0;
    long k1 = 0;
    long k2 = 0;
    int fill = 0; // bytes in the current block
    int i = 0;
    while (i < n) {
      char c = s.charAt(i++);
      int bytes; // up to 4 UTF-8 bytes, first byte lowest
      int count;
      if (c < 0x80) {
        bytes = c;
        count = 1;
      } else if (c < 0x800) {
        bytes = (0xc0 | (c >>> 6)) | ((0x80 | (c & 0x3f)) << 8);
        count = 2;
      } else if (Character.isSurrogate(c)) {
        char d;
        if (Character.isHighSurrogate(c) && i < n && Character.isLowSurrogate(d = s.charAt(i))) {
          i++;
          int cp = Character.toCodePoint(c, d);
          bytes = (0xf0 | (cp >>> 18))
              | ((0x80 | ((cp >>> 12) & 0x3f)) << 8)
              | ((0x80 | ((cp >>> 6) & 0x3f)) << 16)
              | ((0x80 | (cp & 0x3f)) << 24);
          count = 4;
        } else {
          bytes = '?';
          count = 1;
        }
      } else {
        bytes = (0xe0 | (c >>> 12))
            | ((0x80 | ((c >>> 6) & 0x3f)) << 8)
            | ((0x80 | (c & 0x3f)) << 16);
        count = 3;
      }
      for (int b = 0; b < count; b++, bytes >>>= 8) {
        long v = bytes & 0xffL;
        if (fill < 8) {
          k1 |= v << (fill << 3);
        } else {
          k2 |= v << ((fill - 8) << 3);
        }
        if (++fill == 16) {
          h1 ^= mixK1(k1);
          h1 = Long.rotateLeft(h1, 27) + h2;
          h1 = h1 * 5 + 0x52dce729;
          h2 ^= mixK2(k2);
          h2 = Long.rotateLeft(h2, 31) + h1;
          h2 = h2 * 5 + 0x38495ab5;
          k1 = 0;
          k2 = 0;
          fill = 0;
        }
      }
      length += count;
    }
    h2 ^= mixK2(k2);
    h1 ^= mixK1(k1);
    return finish(h1, h2, length);
  }

  private static long mixK1(long k1) {
    k1 *= C1;
    k1 = Long.rotateLeft(k1, 31);
    return k1 * C2;
  }

  private static long mixK2(long k2) {
    k2 *= C2;
    k2 = Long.rotateLeft(k2, 33);
    return k2 * C1;
  }

  private static long finish(long h1, long h2, long length) {
    h1 ^= length;
    h2 ^= length;
    h1 += h2;
    h2 += h1;
    h1 = fmix(h1);
    h2 = fmix(h2);
    return h1 + h2;
  }

  private static long fmix(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    k ^= k >>> 33;
    return k;
  }
}
