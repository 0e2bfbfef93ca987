package io.ringmaster;

import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.Logger;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.NameCache;

/**
 * Keeps JGroups' own logging out of the way unless the application configured it: without log4j2
 * or SLF4J on the class path JGroups logs INFO lines to stderr through java.util.logging, so we
 * raise {@code org.jgroups} to WARNING when nothing set its level. Also makes member addresses
 * print as their node id rather than all their metadata.
 */
final class JGroupsLogging {
  /** Held so the level is not lost when java.util.logging drops an unreferenced logger. */
  private static final Logger JGROUPS = Logger.getLogger("org.jgroups");

  private JGroupsLogging() {}

  static void quietByDefault() {
    if (LogManager.getLogManager().getProperty("org.jgroups.level") == null && JGROUPS.getLevel() == null) {
      JGROUPS.setLevel(Level.WARNING);
    }
    ExtendedUUID.setPrintFunction(u -> {
      String name = NameCache.get(u);
      return name != null ? name : u.toStringLong();
    });
  }
}
