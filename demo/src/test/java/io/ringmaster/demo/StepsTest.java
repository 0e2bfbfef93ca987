package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link Steps}, which keeps a leave draining after its hand-off threw ({@link Rebalancer}) and a
 * peer's shutdown stopping every pool after one failed to stop ({@link Peer#close}).
 */
class StepsTest {

  @Test
  void everyStepRuns_afterOnesThatThrew_andTheFirstFailureIsThrown_withTheLaterOnesSuppressed() {
    List<String> ran = new ArrayList<>();
    IllegalStateException first = new IllegalStateException("hand-off");
    OutOfMemoryError second = new OutOfMemoryError("drain");
    Steps steps = new Steps();

    assertFalse(steps.run(() -> {
      ran.add("hand-off");
      throw first;
    }), "a step that threw counts as failed");
    assertFalse(steps.run(() -> {
      ran.add("drain");
      throw second;
    }));
    assertTrue(steps.run(() -> {
      ran.add("fetch");
      return true;
    }), "a step after them runs, and its own result is returned");
    steps.run((Runnable) () -> ran.add("close"));

    assertEquals(List.of("hand-off", "drain", "fetch", "close"), ran);
    assertTrue(steps.failed());
    assertSame(first, assertThrows(IllegalStateException.class, steps::throwFirst));
    assertArrayEquals(new Throwable[] {second}, first.getSuppressed());
  }

  @Test
  void anErrorThrownFirst_isThrownAsItself() {
    Steps steps = new Steps();
    StackOverflowError error = new StackOverflowError();
    steps.run(() -> {
      throw error;
    });
    steps.run(() -> {
      throw error; // the same throwable again is not suppressed in itself
    });
    assertSame(error, assertThrows(StackOverflowError.class, steps::throwFirst));
    assertEquals(0, error.getSuppressed().length);
  }

  @Test
  void stepsThatReturnFalse_areNotFailures() {
    Steps steps = new Steps();
    assertFalse(steps.run(() -> false));
    assertFalse(steps.failed(), "a step that ran and said no did not throw");
    assertDoesNotThrow(steps::throwFirst);
  }
}
