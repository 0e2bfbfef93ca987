package io.ringmaster;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** What the encryption ({@link SharedSecretEncrypt}) logs, every level, while open: each record as its level and message. */
final class EncryptionLog extends Handler implements AutoCloseable {
  private final Logger logger = Logger.getLogger(SharedSecretEncrypt.class.getName());
  private final Level levelBefore = logger.getLevel();
  final List<String> lines = new CopyOnWriteArrayList<>();

  EncryptionLog() {
    logger.addHandler(this);
    logger.setLevel(Level.ALL);
  }

  @Override
  public void publish(LogRecord r) {
    lines.add(r.getLevel() + " " + r.getMessage());
  }

  @Override
  public void flush() {
  }

  @Override
  public void close() {
    logger.removeHandler(this);
    logger.setLevel(levelBefore);
  }
}
