package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Where a stack finds its shared secret, and what the join proof takes off the wire before any
 * check: JGroups reads an AUTH header in the transport, from anyone, so a length it would allocate
 * must be bounded first.
 */
class SharedSecretTest {

  /**
   * The node's own setting first, then the system property (then the environment variable: see
   * {@link #theEnvironmentVariable_givesTheSecret_afterTheSystemProperty_andMustBeTrimmed}): a
   * host-wide property must not override a node's secret, nor be ignored when the node sets none.
   */
  @Test
  void require_takesTheNodesSecretFirst_thenTheSystemProperty() {
    String before = System.getProperty(SharedSecret.PROPERTY);
    System.setProperty(SharedSecret.PROPERTY, "the-host's");
    try {
      SharedSecret.forNextStack(Optional.of("the-node's"));
      assertEquals("the-node's", SharedSecret.require("test"));
      SharedSecret.forNextStack(Optional.empty());
      assertEquals("the-host's", SharedSecret.require("test"));
    } finally {
      restore(before);
    }
  }

  @Test
  void readFrom_aProofLongerThanAnyMac_orOfANegativeLength_failsBeforeAllocatingIt() {
    for (int length : new int[] {65, 0x7FFF_FFF0, -1}) {
      IOException e = assertThrows(IOException.class,
          () -> new SharedSecretAuthToken().readFrom(input(length, new byte[0])), "length " + length);
      assertEquals("bad auth proof length " + length, e.getMessage());
    }
  }

  @Test
  void readFrom_aProofOfAMacsLength_readsItWhole() throws IOException {
    for (int length : new int[] {0, 32, 64}) {
      DataInputStream in = input(length, new byte[length]);
      new SharedSecretAuthToken().readFrom(in);
      assertEquals(0, in.available(), "a proof of " + length + " bytes, read whole");
    }
  }

  private static DataInputStream input(int length, byte[] proof) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(length);
      out.write(proof);
    }
    return new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()));
  }

  /**
   * An empty setting of the node's is none, and gives way to the system property; a blank system
   * property is none too, and gives way to the environment variable, or else to the failure that
   * names the three places a secret can come from.
   */
  @Test
  void require_skipsAnEmptyNodeSetting_andABlankSystemProperty() {
    String before = System.getProperty(SharedSecret.PROPERTY);
    try {
      System.setProperty(SharedSecret.PROPERTY, "the-host's");
      SharedSecret.forNextStack(Optional.of(""));
      assertEquals("the-host's", SharedSecret.require("test"));
      System.setProperty(SharedSecret.PROPERTY, "  ");
      SharedSecret.forNextStack(Optional.empty());
      String variable = System.getenv(SharedSecret.ENVIRONMENT); // not ours to set: either way, the blank is skipped
      if (variable != null && !variable.isBlank()) {
        assertEquals(variable, SharedSecret.require("test"));
      } else {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SharedSecret.require("test"));
        assertEquals("test needs a shared secret: set the node's \"secret\" setting, the system property "
            + SharedSecret.PROPERTY + " or the environment variable " + SharedSecret.ENVIRONMENT, e.getMessage());
      }
    } finally {
      restore(before);
    }
  }

  /**
   * The environment variable, which a test cannot set in its own JVM, read in a JVM started with
   * it: the secret comes from it when nothing else gives one, a system property still goes first,
   * one that ends with a newline fails naming the variable, never the secret, and a blank one is none.
   */
  @Test
  void theEnvironmentVariable_givesTheSecret_afterTheSystemProperty_andMustBeTrimmed() throws Exception {
    assertEquals("source=environment variable " + SharedSecret.ENVIRONMENT + " secret=from-the-environment",
        probe("from-the-environment"));
    assertEquals("source=system property " + SharedSecret.PROPERTY + " secret=the-host's",
        probe("from-the-environment", "-D" + SharedSecret.PROPERTY + "=the-host's"));
    assertEquals("failed: environment variable " + SharedSecret.ENVIRONMENT + ": the secret starts or ends with"
        + " whitespace (a newline read from a file, say); remove it, since every member must use the same secret,"
        + " byte for byte", probe("from-a-file\n"));
    assertEquals("failed: probe needs a shared secret: set the node's \"secret\" setting, the system property "
        + SharedSecret.PROPERTY + " or the environment variable " + SharedSecret.ENVIRONMENT, probe("  "),
        "a blank variable gives no secret");
  }

  /** What {@link EnvironmentProbe} prints in a JVM whose environment gives {@code secret}. */
  private static String probe(String secret, String... jvmOptions) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path")));
    command.addAll(List.of(jvmOptions));
    command.add(EnvironmentProbe.class.getName());
    Path printed = Files.createTempFile("ringmaster-probe", ".out");
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(printed.toFile());
    builder.environment().put(SharedSecret.ENVIRONMENT, secret);
    Process process = builder.start();
    try {
      boolean ended = process.waitFor(60, TimeUnit.SECONDS); // a file, not a pipe: a probe that hangs is bounded
      String out = Files.readString(printed, StandardCharsets.UTF_8).strip();
      assertTrue(ended, "the probe did not end: " + out);
      assertEquals(0, process.exitValue(), out);
      return out;
    } finally {
      process.destroyForcibly();
      Files.deleteIfExists(printed);
    }
  }

  /** Prints where the secret comes from and what it is, or why it cannot be had. */
  static final class EnvironmentProbe {
    public static void main(String[] args) {
      try {
        SharedSecret.available();
        System.out.println("source=" + SharedSecret.source().orElse("none") + " secret=" + SharedSecret.require("probe"));
      } catch (RuntimeException e) {
        System.out.println("failed: " + e.getMessage());
      }
    }
  }

  /** Leaves no secret for the next stack on this thread, and the property as it was before the test. */
  private static void restore(String property) {
    SharedSecret.forNextStack(Optional.empty());
    if (property == null) {
      System.clearProperty(SharedSecret.PROPERTY);
    } else {
      System.setProperty(SharedSecret.PROPERTY, property);
    }
  }
}
