package io.ringmaster;

import java.text.MessageFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * What a node logs (its {@code System.Logger}, which the JDK hands to java.util.logging), every
 * level, recorded while open: the records that {@code keep} accepts, in order.
 */
final class NodeLog implements AutoCloseable {
  private final Logger logger = Logger.getLogger(Ringmaster.class.getName());
  private final Level levelBefore = logger.getLevel();
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Handler handler;

  NodeLog(Predicate<LogRecord> keep) {
    handler = new Handler() {
      @Override
      public void publish(LogRecord record) {
        if (keep.test(record)) {
          records.add(record);
        }
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    logger.setLevel(Level.ALL);
    logger.addHandler(handler);
  }

  /** The records kept so far. */
  List<LogRecord> records() {
    return List.copyOf(records);
  }

  /** The messages of the records kept so far, formatted with their parameters. */
  List<String> messages() {
    return records.stream().map(r -> MessageFormat.format(r.getMessage(), r.getParameters())).toList();
  }

  /** The levels of the records kept so far. */
  List<Level> levels() {
    return records.stream().map(LogRecord::getLevel).toList();
  }

  @Override
  public void close() {
    logger.removeHandler(handler);
    logger.setLevel(levelBefore);
  }
}
