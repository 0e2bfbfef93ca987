package io.ringmaster;

import io.ringmaster.RingmasterException.Reason;
import java.net.BindException;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * What a failed {@link Ringmaster#start()} throws ({@link #describe}): from the exception it
 * caught, a {@link RingmasterException} whose reason and message say why (refused by the cluster,
 * no ring in time, a stack that could not bind its address or find a port, a coordinator that
 * turned the join down), or an {@link IllegalArgumentException} or {@link Error} as it is. And the
 * tests of a failure's causes that start() and {@link Stacks} tell failures apart by: whether the
 * transport found no port, which start() retries with a new stack ({@link #foundNoPort}), and
 * {@link #anyCause}.
 */
final class StartFailures {
  private StartFailures() {}

  /**
   * What a failed {@link Ringmaster#start()} of the node with {@code config} throws: a
   * {@link RingmasterException} that says why, or an Error as it is.
   *
   * @param published whether the listeners had been told the node's first ring
   */
  static Throwable describe(RingmasterConfig config, Throwable e, boolean published) {
    if (published && !(e instanceof Error)) { // nothing of the stack's: the node joined, and leaves again
      return new RingmasterException(Reason.LEFT_AFTER_JOIN, "node " + config.nodeId() + " joined cluster \""
          + config.clusterName()
          + "\" but failed to finish its start, so it left again: " + e, e);
    }
    if (e instanceof ExecutionException) {
      Throwable cause = e.getCause(); // the view thread's RingmasterException, or close()'s
      Reason reason = cause instanceof RingmasterException r ? r.reason() : Reason.VIEW_FAILED;
      return new RingmasterException(reason, "node " + config.nodeId() + " cannot join cluster \""
          + config.clusterName() + "\": " + cause.getMessage(), cause);
    }
    if (e instanceof TimeoutException) {
      return new RingmasterException(Reason.START_TIMEOUT, "node " + config.nodeId()
          + " got no ring within startTimeout " + config.startTimeout());
    }
    if (e instanceof InterruptedException) { // start() sets the thread's flag again once the node is shut down
      return new RingmasterException(Reason.INTERRUPTED, "interrupted while starting node " + config.nodeId(), e);
    }
    if (e instanceof RingmasterException || e instanceof IllegalArgumentException || e instanceof Error) {
      return e;
    }
    String address = config.bindAddress().isPresent() && bindFailed(e) && !foundNoPort(e)
        ? " on bindAddress \"" + config.bindAddress().get() + "\"" : "";
    // A port of the range that none could bind (all taken, or below 1024 without the privilege).
    String port = config.bindPort().isPresent() && foundNoPort(e) ? " from bindPort " + config.bindPort().get()
        + " (and the ports of the stack's port_range after it" + (config.bindPort().get() < 1024
        ? "; ports below 1024 need the privilege to bind them)" : ")") : "";
    // FD_SOCK2's own port range taken, the transport's port free: JGroups' words do not say whose.
    String detector = anyCause(e, t -> String.valueOf(t.getMessage())
        .contains("failed to find an available port in ports"))
        ? " (its failure detector, FD_SOCK2, found none of its ports free: in the shipped stacks, 100 to 103 above"
          + " the transport's port)" : "";
    Optional<Throwable> refused = causeOf(e, t -> t instanceof SecurityException);
    if (refused.isPresent()) {
      // The cluster turned the join down (AUTH: a wrong secret): JGroups' connect throws the
      // coordinator's reason as a SecurityException.
      return new RingmasterException(Reason.REFUSED, "node " + config.nodeId() + " cannot join cluster \""
          + config.clusterName() + "\": its coordinator refused the join: " + refused.get().getMessage(), e);
    }
    return new RingmasterException(Reason.STACK, "node " + config.nodeId() + " cannot start its JGroups stack "
        + config.jgroupsConfig() + address + port + detector + ": " + e + Stacks.variablesSet(config.jgroupsConfig()), e);
  }

  private static boolean bindFailed(Throwable e) {
    return anyCause(e, t -> t instanceof BindException);
  }

  /** The first of {@code e} and its causes that passes {@code test}. */
  private static Optional<Throwable> causeOf(Throwable e, Predicate<Throwable> test) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (test.test(t)) {
        return Optional.of(t);
      }
    }
    return Optional.empty();
  }

  /** Whether {@code e} or one of its causes passes {@code test}. */
  static boolean anyCause(Throwable e, Predicate<Throwable> test) {
    return causeOf(e, test).isPresent();
  }

  /**
   * Whether a connect failed because the transport found no port of its range to bind: JGroups'
   * {@link BindException} "No available port to bind to in range", which a lost race for a port
   * causes. Other bind failures, such as a bind address of no interface, are not retried.
   */
  static boolean foundNoPort(Throwable e) {
    return anyCause(e, t -> t instanceof BindException
        && String.valueOf(t.getMessage()).startsWith("No available port"));
  }
}
