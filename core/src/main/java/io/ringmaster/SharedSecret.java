package io.ringmaster;

import java.nio.charset.StandardCharsets;
import java.security.spec.KeySpec;
import java.util.Optional;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Where the shared secret of {@code secure-tcp.xml} comes from: the node's {@code secret} setting,
 * else the system property {@code ringmaster.secret}, else the environment variable
 * {@code RINGMASTER_SECRET}. JGroups initializes protocols while it builds the channel, so the
 * node hands its setting to the protocols through a thread-local for exactly that call.
 */
final class SharedSecret {
  static final String PROPERTY = "ringmaster.secret";
  static final String ENVIRONMENT = "RINGMASTER_SECRET";
  private static final ThreadLocal<Optional<String>> NEXT_STACK = ThreadLocal.withInitial(Optional::empty);

  private SharedSecret() {}

  static void forNextStack(Optional<String> secret) {
    NEXT_STACK.set(secret);
  }

  /** Whether the system property or the environment variable gives a secret (the node's setting aside). */
  static boolean available() {
    String property = System.getProperty(PROPERTY);
    if (property != null && !property.isBlank()) {
      checkTrimmed(property, "system property " + PROPERTY);
    } else {
      String variable = System.getenv(ENVIRONMENT);
      if (variable != null && !variable.isBlank()) {
        checkTrimmed(variable, "environment variable " + ENVIRONMENT);
      }
    }
    return fromEnvironment().isPresent();
  }

  /**
   * Fails naming {@code source} (never the secret) when the secret starts or ends with whitespace
   * (a no-break space or a byte order mark too, as {@link SettingChecks#wellFormed} takes them):
   * most often the newline of a file it was read from, present on some members and not others,
   * which would show only as "authentication failed".
   */
  static void checkTrimmed(String secret, String source) {
    if (!secret.isEmpty() && (SettingChecks.isSpace(secret.codePointAt(0))
        || SettingChecks.isSpace(secret.codePointBefore(secret.length())))) {
      throw new IllegalArgumentException(source + ": the secret starts or ends with whitespace (a newline read"
          + " from a file, say); remove it, since every member must use the same secret, byte for byte");
    }
  }

  /**
   * Where the system property or the environment variable gives a secret (the node's setting
   * aside), as "system property ringmaster.secret"; never the secret.
   */
  static Optional<String> source() {
    String property = System.getProperty(PROPERTY);
    if (property != null && !property.isBlank()) {
      return Optional.of("system property " + PROPERTY);
    }
    String variable = System.getenv(ENVIRONMENT);
    return variable != null && !variable.isBlank() ? Optional.of("environment variable " + ENVIRONMENT)
        : Optional.empty();
  }

  private static Optional<String> fromEnvironment() {
    return Optional.ofNullable(System.getProperty(PROPERTY)).filter(s -> !s.isBlank())
        .or(() -> Optional.ofNullable(System.getenv(ENVIRONMENT)).filter(s -> !s.isBlank()));
  }

  /** The secret, or a clear failure naming the three places it could have come from. */
  static String require(String who) {
    Optional<String> secret = NEXT_STACK.get().filter(s -> !s.isEmpty()).or(SharedSecret::fromEnvironment);
    return secret.orElseThrow(() -> new IllegalStateException(who + " needs a shared secret: set the node's "
        + "\"secret\" setting, the system property " + PROPERTY + " or the environment variable " + ENVIRONMENT));
  }

  /** A 128-bit AES key derived from the secret (PBKDF2-HMAC-SHA256, fixed salt, 210,000 rounds). */
  static SecretKeySpec aesKey(String secret) throws Exception {
    return new SecretKeySpec(derive(secret, "ringmaster/sym-encrypt/1", 128), "AES");
  }

  /**
   * The key of the join proofs ({@link SharedSecretAuthToken}): derived like {@link #aesKey}, with
   * another salt, so that a proof seen on the wire costs a guesser the same 210,000 rounds per guess.
   */
  static byte[] authKey(String secret) throws Exception {
    return derive(secret, "ringmaster/auth/1", 256);
  }

  private static byte[] derive(String secret, String salt, int bits) throws Exception {
    KeySpec spec = new PBEKeySpec(secret.toCharArray(), salt.getBytes(StandardCharsets.US_ASCII),
        210_000, bits);
    return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
  }
}
