package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Where a stack finds its shared secret, and what the join proof takes off the wire before any
 * check: JGroups reads an AUTH header in the transport, from anyone, so a length it would allocate
 * must be bounded first.
 */
class SharedSecretTest {

  /**
   * The node's own setting first, then the system property (then the environment variable, which a
   * test cannot set): a host-wide property must not override a node's secret, nor be ignored when
   * the node sets none.
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
