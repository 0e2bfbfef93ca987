package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.BindException;
import org.junit.jupiter.api.Test;

/**
 * What {@link StartFailures#describe} makes of a stack's failure: the settings it names are those
 * the failure is about, and no others. ({@code PortRaceTest} and {@code RefusalAndConfigTest} start
 * real stacks that fail so.)
 */
class StartFailuresTest {
  private static final String NO_PORT = "No available port to bind to in range [1024 .. 1043]";

  private static RingmasterConfig config(int bindPort) {
    return Ringmaster.builder().nodeId("a").bindAddress("192.0.2.1").bindPort(bindPort).buildConfig();
  }

  /** A failure that is no bind failure says nothing of the bind address, although one is set. */
  @Test
  void describe_aFailureOtherThanABind_doesNotNameTheBindAddress() {
    Throwable described = StartFailures.describe(config(7800), new IOException("the stack file is broken"), false);
    assertEquals(RingmasterException.Reason.STACK, ((RingmasterException) described).reason());
    assertFalse(described.getMessage().contains("bindAddress"), described.getMessage());
    assertFalse(described.getMessage().contains("bindPort"), described.getMessage());
  }

  /** A bind that fails, deep in the causes, names the bind address it tried. */
  @Test
  void describe_aBindThatFails_namesTheBindAddress() {
    Exception e = new Exception("connect failed", new BindException("Cannot assign requested address"));
    Throwable described = StartFailures.describe(config(7800), e, false);
    assertTrue(described.getMessage().contains(" on bindAddress \"192.0.2.1\": "), described.getMessage());
  }

  /**
   * No port found from 1024 up: the range is named, but not the privilege that only ports below
   * 1024 need; from 1023, the privilege too.
   */
  @Test
  void describe_noPortFound_mentionsThePrivilegeOnlyForPortsBelow1024() {
    String from1024 = StartFailures.describe(config(1024), new BindException(NO_PORT), false).getMessage();
    assertTrue(from1024.contains(" from bindPort 1024 (and the ports of the stack's port_range after it): "),
        from1024);
    assertFalse(from1024.contains("privilege"), from1024);
    assertFalse(from1024.contains("bindAddress"), "no port is not the address's fault: " + from1024);
    String from1023 = StartFailures.describe(config(1023), new BindException(NO_PORT), false).getMessage();
    assertTrue(from1023.contains(" from bindPort 1023 (and the ports of the stack's port_range after it; ports below"
        + " 1024 need the privilege to bind them): "), from1023);
  }
}
