package io.ringmaster;

import org.jgroups.stack.Protocol;
import org.jgroups.util.ExtendedUUID;

/**
 * A protocol that gives the channel an address generator of its own when the stack is built, as
 * RELAY2 does with {@code enable_address_tagging} (set in makes-addresses.xml).
 */
public class MakesAddresses extends Protocol {
  @Override
  public void init() throws Exception {
    super.init();
    getProtocolStack().getChannel().addAddressGenerator(ExtendedUUID::randomUUID);
  }
}
