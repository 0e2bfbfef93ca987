package io.ringmaster;

/**
 * A node could not start or join (the message says why, naming the setting or member at fault),
 * or {@link Ringmaster#awaitRing} saw no ring satisfy its condition in time.
 */
public class RingmasterException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** A failure with its reason. */
  public RingmasterException(String message) {
    super(message);
  }

  /** A failure with its reason and the exception that caused it. */
  public RingmasterException(String message, Throwable cause) {
    super(message, cause);
  }
}
