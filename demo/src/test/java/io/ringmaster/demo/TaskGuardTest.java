package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * A maintenance task that keeps failing (every second, for the status) logs its first failure of a
 * kind with the stack trace, then DEBUG until it succeeds: each failure was a WARNING with a stack
 * trace, a line a second for as long as it lasted, also when it failed on and off. A new kind of
 * failure is said, an Error at ERROR, and a task run once (a repair after a merge) every time.
 */
class TaskGuardTest {

  @Test
  void aTaskThatKeepsFailing_isLoggedOnce_thenAtDebug_andItsRecoveryAtInfo() {
    Logger logger = Logger.getLogger(TaskGuard.class.getName());
    List<LogRecord> records = new CopyOnWriteArrayList<>();
    Handler handler = new Handler() {
      @Override
      public void publish(LogRecord r) {
        records.add(r);
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    Level before = logger.getLevel();
    logger.setLevel(Level.ALL);
    logger.addHandler(handler);
    try {
      TaskGuard guard = new TaskGuard();
      Runnable failing = () -> {
        throw new IllegalStateException("a store that cannot be read (a test)");
      };
      guard.run("sweep", failing);
      guard.run("sweep", failing);
      guard.run("status", () -> { });          // another task: nothing to say
      guard.run("sweep", failing);
      guard.run("sweep", () -> { });           // recovered
      guard.run("sweep", () -> { });
      guard.run("status", () -> {
        throw new OutOfMemoryError("no room (a test)");
      });
      guard.run("sweep", failing);
      guard.run("sweep", () -> {
        throw new UnsupportedOperationException("another kind of failure (a test)");
      });
      guard.run("sweep", () -> {
        throw new OutOfMemoryError("an Error, whatever came before (a test)");
      });
      guard.run("sweep", () -> {
        throw new OutOfMemoryError("the same Error again (a test)");
      });
      guard.runOnce("repair after merge", failing);
      guard.runOnce("repair after merge", failing);
      guard.run("sweep", () -> { });          // nothing said since the last success: no INFO
      guard.run("sweep", failing);             // on and off: said within the minute, so at DEBUG
      guard.run("sweep", () -> { });
      assertEquals(List.of(Level.WARNING, Level.FINE, Level.FINE, Level.INFO, Level.SEVERE, Level.FINE, Level.WARNING,
          Level.SEVERE, Level.FINE, Level.WARNING, Level.WARNING, Level.INFO, Level.FINE),
          records.stream().map(LogRecord::getLevel).toList());
      assertEquals("a store that cannot be read (a test)", records.get(0).getThrown().getMessage());
      assertEquals("sweep failed (failures of this kind are logged at DEBUG for a minute)", records.get(0).getMessage());
      assertEquals("sweep failed", records.get(1).getMessage(), "at DEBUG: no more said");
      assertTrue(records.get(4).getMessage().startsWith("status failed"), records.get(4).getMessage());
      assertTrue(records.get(10).getMessage().startsWith("repair after merge failed"), records.get(10).getMessage());
    } finally {
      logger.removeHandler(handler);
      logger.setLevel(before);
    }
  }
}
