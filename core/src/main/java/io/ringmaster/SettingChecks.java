package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.time.Duration;

/**
 * The checks behind {@link Ringmaster.Builder}'s setters, and the token count that
 * {@link Ringmaster.Builder#buildConfig()} checks once the weight and {@code virtualNodes} are both
 * known. Each fails with an {@link IllegalArgumentException} that names the setting and shows the
 * value.
 */
final class SettingChecks {
  private SettingChecks() {}

  /**
   * The smallest weight that gives one token: about half a token, {@code 0.5 / virtualNodes},
   * moved to the nearest double that works, as that quotient, rounded to a double, can multiply
   * back to just under a half (for 49 virtual nodes, say) and so round to no token.
   */
  static double smallestWeight(int virtualNodes) {
    double w = 0.5 / virtualNodes;
    while (Member.tokenCount(virtualNodes, w) == 0) {
      w = Math.nextUp(w);
    }
    while (Member.tokenCount(virtualNodes, Math.nextDown(w)) > 0) {
      w = Math.nextDown(w);
    }
    return w;
  }

  static <T> T notNull(String setting, T value, String hint) {
    if (value == null) {
      throw new IllegalArgumentException(setting + " must not be null" + hint);
    }
    return value;
  }

  static String nonEmpty(String setting, String value) {
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(setting + " must be non-empty: " + (value == null ? "null" : "\"\""));
    }
    return value;
  }

  /**
   * Fails naming the setting for a value with an unpaired surrogate (no UTF-8 form), a control
   * character, or a space at either end: an id read from a file with its line break, or typed with
   * a space, would be another member than the one it reads as, owning other keys.
   */
  static String wellFormed(String setting, String value) {
    if (value.codePoints().anyMatch(c -> c >= Character.MIN_SURROGATE && c <= Character.MAX_SURROGATE)) {
      throw new IllegalArgumentException(setting + " has an unpaired surrogate, which has no UTF-8 form: "
          + shown(value));
    }
    if (value.codePoints().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException(setting + " has a control character: " + shown(value));
    }
    if (!value.isEmpty() && (isSpace(value.codePointAt(0)) || isSpace(value.codePointBefore(value.length())))) {
      throw new IllegalArgumentException(setting + " has a space at either end: " + shown(value));
    }
    return value;
  }

  /** A space of any kind, or a byte order mark (which a value read from a file may start with). */
  static boolean isSpace(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\uFEFF';
  }

  /** A value quoted for a message, with characters outside printable ASCII as Java escapes. */
  static String shown(String value) {
    StringBuilder b = new StringBuilder("\"");
    value.chars().limit(120).forEach(c -> b.append(c >= 0x20 && c < 0x7f ? Character.toString(c)
        : String.format("\\u%04x", c)));
    return b.append(value.length() > 120 ? "\"... (" + value.length() + " chars)" : "\"").toString();
  }

  /** Durations are whole milliseconds in config files; more than a day is taken for a typo. */
  private static final Duration MAX_DURATION = Duration.ofHours(24);

  static Duration duration(String setting, Duration d, Duration min) {
    notNull(setting, d, "");
    if (d.compareTo(min) < 0 || d.compareTo(MAX_DURATION) > 0) {
      // In milliseconds only if that fits a long: Duration.toMillis() fails past it.
      boolean inMillis = d.compareTo(Duration.ofMillis(Long.MIN_VALUE)) >= 0
          && d.compareTo(Duration.ofMillis(Long.MAX_VALUE)) <= 0;
      String value = inMillis ? d.toMillis() + " ms (" + d + ")" : d.toString();
      throw new IllegalArgumentException(setting + " must be between " + min.toMillis() + " ms and "
          + MAX_DURATION.toHours() + " hours: " + value);
    }
    return d;
  }

  /**
   * Fails for a weight that gives this member no token while above 0 (it would own nothing without
   * saying so; the message names the smallest weight that works), or more tokens than a member may
   * have.
   */
  static void checkTokens(int virtualNodes, double weight) {
    long tokens = Member.tokenCount(virtualNodes, weight);
    if (tokens == 0 && weight > 0) {
      throw new IllegalArgumentException("weight " + weight + " with virtualNodes " + virtualNodes
          + " gives 0 tokens, so this member would own nothing: use weight 0 for a member that owns nothing,"
          + " or at least " + smallestWeight(virtualNodes) + " (half a token)");
    }
    if (tokens > HashRing.MAX_TOKENS_PER_MEMBER) {
      // Past 2^63 Math.round saturates: the product says how far, as HashRing.Builder says it.
      double product = virtualNodes * weight;
      String count = tokens < Long.MAX_VALUE ? Long.toString(tokens)
          : Double.isInfinite(product) ? "more than 2^1023" : "about " + product;
      throw new IllegalArgumentException("weight " + weight + " with virtualNodes " + virtualNodes + " gives "
          + count + " tokens, more than " + HashRing.MAX_TOKENS_PER_MEMBER + ": lower weight or virtualNodes");
    }
  }
}
