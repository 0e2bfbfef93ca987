package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code --name value} pairs, and switches ({@code --name} alone), checked against the flags a
 * command knows. Each typed getter fails with a {@link UsageException} naming the flag and the bad
 * value, {@link #shown} so that the error stays one line and tells a value with a space or an
 * invisible character from the one it looks like.
 */
final class Flags {
  private final Map<String, String> values;
  private final Set<String> switchesOn;

  private Flags(Map<String, String> values, Set<String> switchesOn) {
    this.values = values;
    this.switchesOn = switchesOn;
  }

  static Flags parse(String[] args, int from, Set<String> known) {
    return parse(args, from, known, Set.of());
  }

  /** As {@link #parse(String[], int, Set)}, with {@code switches}: flags that take no value. */
  static Flags parse(String[] args, int from, Set<String> known, Set<String> switches) {
    Map<String, String> values = new LinkedHashMap<>();
    Set<String> on = new HashSet<>();
    for (int i = from; i < args.length; i++) {
      String flag = args[i];
      if (!flag.startsWith("--")) {
        throw new UsageException("unexpected argument " + quoted(flag) + ": flags look like --name value"
            + (i > from && switches.contains(args[i - 1]) ? " (" + args[i - 1] + " takes no value)" : ""));
      }
      if (switches.contains(flag)) {
        if (!on.add(flag)) {
          throw new UsageException(flag + " is given twice");
        }
        continue;
      }
      if (!known.contains(flag)) {
        throw new UsageException("unknown flag " + shown(flag));
      }
      if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
        throw new UsageException(flag + " needs a value");
      }
      if (values.put(flag, args[++i]) != null) {
        throw new UsageException(flag + " is given twice");
      }
    }
    return new Flags(values, on);
  }

  /** Whether the switch {@code flag} was given. */
  boolean on(String flag) {
    return switchesOn.contains(flag);
  }

  Optional<String> string(String flag) {
    Optional<String> v = Optional.ofNullable(values.get(flag));
    if (v.isPresent() && v.get().isBlank()) {
      throw new UsageException(flag + " must not be empty: " + quoted(v.get()));
    }
    return v;
  }

  /** A JGroups cluster name, checked by the library's rule so that the error names the flag. */
  Optional<String> clusterName(String flag) {
    return string(flag).map(v -> {
      try {
        Ringmaster.builder().clusterName(v);
        return v;
      } catch (IllegalArgumentException e) {
        throw new UsageException(flag + ": " + e.getMessage());
      }
    });
  }

  Optional<Integer> integer(String flag, int min, int max) {
    return string(flag).map(v -> {
      try {
        int n = Integer.parseInt(v);
        if (n >= min && n <= max) {
          return n;
        }
      } catch (NumberFormatException notANumber) {
        // reported below with the range
      }
      throw new UsageException(flag + " must be a whole number in " + min + ".." + max + ": " + shown(v));
    });
  }

  Optional<Long> longValue(String flag, long min) {
    return string(flag).map(v -> {
      try {
        long n = Long.parseLong(v);
        if (n >= min) {
          return n;
        }
      } catch (NumberFormatException notANumber) {
        // reported below
      }
      throw new UsageException(flag + " must be a whole number >= " + min + ": " + shown(v));
    });
  }

  Optional<Double> nonNegative(String flag) {
    return string(flag).map(v -> {
      try {
        double d = Double.parseDouble(v);
        if (d == 0 && exactSign(v) > 0) {
          // 1e-400 parses to 0: a weight that asked for a share would silently own nothing.
          throw new UsageException(flag + " is too small to tell from 0 as a double: " + shown(v));
        }
        if (d >= 0 && Double.isFinite(d) && exactSign(v) >= 0) { // -1e-400 is no weight >= 0 either
          return d;
        }
      } catch (NumberFormatException notANumber) {
        // reported below
      }
      throw new UsageException(flag + " must be a finite number >= 0: " + shown(v));
    });
  }

  /**
   * The sign of the number {@code v} spells, read exactly: 1, 0 or -1, for a finite number in any
   * form {@code Double.parseDouble} reads (decimal or hex, with or without an f or d suffix). Only
   * a zero is 0: 1e-400, 1e-400d and 0x1p-2000 are 1, though each parses to 0.
   */
  private static int exactSign(String v) {
    String s = v.trim().toLowerCase(Locale.ROOT);
    int x = s.indexOf('x');
    // The significand: before the exponent (e, or p in hex) and, in hex, after the 0x. An f or d
    // suffix it keeps (a decimal without an exponent) counts as no digit.
    String significand = x < 0 ? s.split("e", 2)[0] : s.substring(x + 1).split("p", 2)[0];
    if (!significand.matches(x < 0 ? ".*[1-9].*" : ".*[1-9a-f].*")) {
      return 0;
    }
    return s.startsWith("-") ? -1 : 1;
  }

  Optional<Path> path(String flag) {
    return string(flag).map(v -> {
      try {
        return Path.of(v);
      } catch (InvalidPathException e) { // a NUL, or a character the file system's encoding lacks
        throw new UsageException(flag + " is not a path this system takes: " + shown(v) + " (" + e.getReason() + ")");
      }
    });
  }

  int port(String flag) {
    return integer(flag, 1, 65535).orElseThrow(() -> new UsageException(flag + " is required"));
  }

  /** The most characters of a value a message shows. */
  private static final int SHOWN_CHARS = 120;

  /**
   * {@code value} as a message shows it: as it is if it is 1 to 120 visible characters, none of
   * them a space; else {@link #quoted}.
   */
  static String shown(String value) {
    boolean plain = !value.isEmpty() && value.length() <= SHOWN_CHARS
        && value.codePoints().noneMatch(c -> c == ' ' || invisible(c));
    return plain ? value : quoted(value);
  }

  /**
   * {@code value} in double quotes, cut after 120 characters (then saying how many it has), with
   * {@code "} and {@code \} escaped by a backslash (so a JSON body reads {@code "{\"ids\": 3}"}),
   * and each character that does not show or would break the line (a control character, an unpaired
   * surrogate, a format character such as a zero-width space, a space other than ' ') as Java
   * escapes of its UTF-16 code units: a line break in a value leaves the message one line, and a
   * value of "8081" and a space is not shown as 8081.
   */
  static String quoted(String value) {
    StringBuilder b = new StringBuilder("\"");
    int end = value.offsetByCodePoints(0, value.codePointCount(0, Math.min(value.length(), SHOWN_CHARS)));
    value.substring(0, end).codePoints().forEach(c -> {
      if (c == '"' || c == '\\') {
        b.append('\\').appendCodePoint(c);
      } else if (invisible(c)) {
        for (char unit : Character.toChars(c)) {
          b.append(String.format("\\u%04x", (int) unit));
        }
      } else {
        b.appendCodePoint(c);
      }
    });
    return b.append(end < value.length() ? "\"... (" + value.length() + " chars)" : "\"").toString();
  }

  /** Whether a character does not show, or would break the line: see {@link #quoted}. */
  static boolean invisible(int c) {
    int type = Character.getType(c);
    return Character.isISOControl(c) || type == Character.FORMAT || type == Character.SURROGATE
        || c != ' ' && (Character.isWhitespace(c) || Character.isSpaceChar(c));
  }
}
