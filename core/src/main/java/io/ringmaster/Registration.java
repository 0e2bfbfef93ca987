package io.ringmaster;

/** The handle of a registered listener; {@link #close()} removes it. Idempotent. */
@FunctionalInterface
public interface Registration extends AutoCloseable {
  @Override
  void close();
}
