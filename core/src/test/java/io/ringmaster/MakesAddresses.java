package io.ringmaster;

import java.util.concurrent.atomic.AtomicReference;
import org.jgroups.JChannel;
import org.jgroups.stack.Protocol;
import org.jgroups.util.ExtendedUUID;

/**
 * A protocol that gives the channel an address generator of its own when the stack is built, as
 * RELAY2 does with {@code enable_address_tagging} (set in makes-addresses.xml).
 */
public class MakesAddresses extends Protocol {
  private static final AtomicReference<JChannel> LAST_BUILT = new AtomicReference<>();

  /** The channel of the last stack with this protocol that was built, or null if none was. */
  static JChannel lastBuilt() {
    return LAST_BUILT.get();
  }

  @Override
  public void init() throws Exception {
    super.init();
    LAST_BUILT.set(getProtocolStack().getChannel());
    getProtocolStack().getChannel().addAddressGenerator(ExtendedUUID::randomUUID);
  }
}
