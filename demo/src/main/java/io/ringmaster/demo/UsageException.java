package io.ringmaster.demo;

/** A bad command line: the message names the flag and the value; the caller prints usage and exits 2. */
final class UsageException extends RuntimeException {
  UsageException(String message) {
    super(message, null, false, false);
  }
}
