package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/** What a class logs while a step of a test runs, DEBUG included, kept from the handlers (nothing is printed). */
final class Logged {
  /** A step of a test, which may throw what its test throws. */
  interface Step<E extends Exception> {
    void run() throws E;
  }

  private Logged() {
  }

  /** The records {@code source}'s logger takes while {@code step} runs, every level, in order. */
  static <E extends Exception> List<LogRecord> by(Class<?> source, Step<E> step) throws E {
    return until(source, logged -> true, step);
  }

  /**
   * As {@link #by}, the step then waiting (20 s at most) until the records taken satisfy
   * {@code done}: for what {@code source} logs on another thread once the step set it going.
   */
  static <E extends Exception> List<LogRecord> until(Class<?> source, Predicate<List<LogRecord>> done,
                                                     Step<E> step) throws E {
    Logger logger = Logger.getLogger(source.getName());
    List<LogRecord> logged = new CopyOnWriteArrayList<>();
    Level level = logger.getLevel();
    Filter filter = logger.getFilter();
    logger.setLevel(Level.ALL);
    logger.setFilter(r -> {
      logged.add(r);
      return false;
    });
    try {
      step.run();
      if (!done.test(logged)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> done.test(logged));
      }
    } finally {
      logger.setFilter(filter);
      logger.setLevel(level);
    }
    return logged;
  }

  /** The messages of the records at {@code level}, formatted as a handler formats them, in order. */
  static List<String> messages(List<LogRecord> logged, Level level) {
    SimpleFormatter formatter = new SimpleFormatter();
    return logged.stream().filter(r -> r.getLevel() == level).map(formatter::formatMessage).toList();
  }
}
