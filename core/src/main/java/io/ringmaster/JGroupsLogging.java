package io.ringmaster;

import java.io.IOException;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.NameCache;

/**
 * Keeps JGroups' own logging out of the way unless the application configured it: without log4j2
 * or SLF4J on the class path JGroups logs INFO lines to stderr through java.util.logging, so we
 * raise {@code org.jgroups} to WARNING when nothing set its level. In that case it also drops the
 * two records JGroups' TCP transport logs in a normal shutdown when both ends of a connection close
 * it at once: the error "failed sending graceful close" and the warning "failed handling message"
 * with a stack trace of "Stream closed" or "Socket closed". Also makes member addresses print as
 * their node id rather than all their metadata.
 */
final class JGroupsLogging {
  /** Held so the level is not lost when java.util.logging drops an unreferenced logger. */
  private static final Logger JGROUPS = Logger.getLogger("org.jgroups");
  /** Where TCP's connections log (each logs through its server's or its protocol's logger). */
  private static final List<Logger> TCP = Stream.of("org.jgroups.protocols.TCP", "org.jgroups.blocks.cs.TcpServer",
      "org.jgroups.blocks.cs.TcpConnection").map(Logger::getLogger).toList();
  /**
   * Where the node's channel logs JChannel's own lines ("local_addr: ..., name: ..." at each
   * connect): JGroups names a channel's logger after its class, here a subclass outside
   * org.jgroups ({@link Stacks}), so it gets org.jgroups' level from here, unless the application
   * gave it one (in logging.properties or in code).
   */
  private static final Logger CHANNEL = Logger.getLogger(Stacks.channelLoggerName());

  private JGroupsLogging() {}

  /** A record of the shutdown race described above. */
  static boolean closeRace(LogRecord r) {
    String message = String.valueOf(r.getMessage());
    if (message.contains("failed sending graceful close")) {
      return true;
    }
    Throwable t = r.getThrown();
    return message.contains("failed handling message") && t instanceof IOException
        && ("Stream closed".equals(t.getMessage()) || "Socket closed".equals(t.getMessage()));
  }

  static void quietByDefault() {
    if (LogManager.getLogManager().getProperty("org.jgroups.level") == null && JGROUPS.getLevel() == null) {
      JGROUPS.setLevel(Level.WARNING);
      TCP.stream().filter(l -> l.getFilter() == null).forEach(l -> l.setFilter(r -> !closeRace(r)));
    }
    if (LogManager.getLogManager().getProperty(CHANNEL.getName() + ".level") == null && CHANNEL.getLevel() == null) {
      CHANNEL.setLevel(JGROUPS.getLevel());
    }
    ExtendedUUID.setPrintFunction(u -> {
      String name = NameCache.get(u);
      return name != null ? name : u.toStringLong();
    });
  }
}
