package io.ringmaster;

import java.util.concurrent.atomic.AtomicBoolean;
import org.jgroups.stack.Protocol;

/**
 * A protocol that fails the first time its stack is destroyed, with an Error: JGroups' close()
 * catches only Exceptions. Once only, so that the test cluster's own clean-up closes the channel.
 * Inserted into a running node's stack, or named in a stack file ({@code <io.ringmaster.FailsOnDestroy/>})
 * for a node whose start fails.
 */
public class FailsOnDestroy extends Protocol {
  private final AtomicBoolean failed = new AtomicBoolean();

  @Override
  public void destroy() {
    super.destroy();
    if (failed.compareAndSet(false, true)) {
      throw new AssertionError("destroy failed");
    }
  }
}
