package io.ringmaster.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Steps that must each run whatever the ones before them threw (a leave that drains after a
 * hand-off failed, a shutdown that stops every pool): each failure is kept, and the first is
 * thrown at the end with the others suppressed in it.
 */
final class Steps {
  private final List<Throwable> failures = new ArrayList<>();

  /** Runs a step. */
  void run(Runnable step) {
    run(() -> {
      step.run();
      return true;
    });
  }

  /** Runs a step: its result, or false if it threw. */
  boolean run(BooleanSupplier step) {
    try {
      return step.getAsBoolean();
    } catch (RuntimeException | Error e) {
      failures.add(e);
      return false;
    }
  }

  /** Whether a step threw. */
  boolean failed() {
    return !failures.isEmpty();
  }

  /** Throws the first failure, if any, with the later ones suppressed in it. */
  void throwFirst() {
    if (failures.isEmpty()) {
      return;
    }
    Throwable first = failures.get(0);
    failures.stream().skip(1).filter(t -> t != first).forEach(first::addSuppressed);
    if (first instanceof Error error) {
      throw error;
    }
    throw (RuntimeException) first;
  }
}
