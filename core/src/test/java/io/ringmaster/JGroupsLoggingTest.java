package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import io.ringmaster.testing.LocalCluster;
import org.jgroups.JChannel;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.NameCache;
import org.junit.jupiter.api.Test;

/** Which of JGroups' TCP records the default logging drops: only the shutdown race, nothing else. */
class JGroupsLoggingTest {

  private static LogRecord record(Level level, String message, Throwable thrown) {
    LogRecord r = new LogRecord(level, message);
    r.setThrown(thrown);
    return r;
  }

  @Test
  void closeRace_dropsOnlyTheTwoShutdownRecords() {
    assertTrue(JGroupsLogging.closeRace(record(Level.SEVERE,
        "127.0.0.1:7802: failed sending graceful close to 127.0.0.1:7800: Socket closed", null)));
    assertTrue(JGroupsLogging.closeRace(record(Level.WARNING, "127.0.0.1:7802: failed handling message",
        new IOException("Stream closed"))));
    assertTrue(JGroupsLogging.closeRace(record(Level.WARNING, "127.0.0.1:7802: failed handling message",
        new IOException("Socket closed"))));

    assertFalse(JGroupsLogging.closeRace(record(Level.WARNING, "127.0.0.1:7802: failed handling message",
        new IOException("Connection reset"))), "a reset mid-run is worth seeing");
    assertFalse(JGroupsLogging.closeRace(record(Level.WARNING, "127.0.0.1:7802: failed handling message",
        new IllegalStateException("Stream closed"))), "only I/O failures");
    assertFalse(JGroupsLogging.closeRace(record(Level.WARNING, "127.0.0.1:7802: failed handling message", null)));
    assertFalse(JGroupsLogging.closeRace(record(Level.WARNING,
        "JGRP000012: discarded message from different cluster other (our cluster is orders)", null)));
    assertFalse(JGroupsLogging.closeRace(record(Level.SEVERE, null, null)));
  }

  /** A level the application gave org.jgroups is its own: a node's start does not raise it. */
  @Test
  void quietByDefault_leavesALevelTheApplicationSetAlone() {
    Logger jgroups = Logger.getLogger("org.jgroups");
    Logger channel = Logger.getLogger(Stacks.channelLoggerName());
    Level before = jgroups.getLevel();
    Level channelBefore = channel.getLevel();
    try {
      jgroups.setLevel(Level.FINE);
      channel.setLevel(null); // as in a JVM that loads Ringmaster first: none set for the channel yet
      JGroupsLogging.quietByDefault();
      assertEquals(Level.FINE, jgroups.getLevel());
      assertEquals(Level.FINE, channel.getLevel(), "the node's channel follows it");
    } finally {
      jgroups.setLevel(before);
      channel.setLevel(channelBefore);
    }
  }

  /**
   * A level the application gave the node's channel logger itself, in code before the first node,
   * is its own too, as one set in logging.properties is: not replaced by org.jgroups' level.
   */
  @Test
  void quietByDefault_leavesALevelTheApplicationGaveTheChannelAlone() {
    Logger jgroups = Logger.getLogger("org.jgroups");
    Logger channel = Logger.getLogger(Stacks.channelLoggerName());
    Level before = jgroups.getLevel();
    Level channelBefore = channel.getLevel();
    try {
      jgroups.setLevel(null); // the default applies to org.jgroups: WARNING
      channel.setLevel(Level.INFO);
      JGroupsLogging.quietByDefault();
      assertEquals(Level.WARNING, jgroups.getLevel());
      assertEquals(Level.INFO, channel.getLevel(), "the level the application gave the channel");
    } finally {
      jgroups.setLevel(before);
      channel.setLevel(channelBefore);
    }
  }

  /** A filter the application put on the TCP transport's logger is its own too: not replaced. */
  @Test
  void quietByDefault_leavesAFilterTheApplicationSetAlone() {
    Logger jgroups = Logger.getLogger("org.jgroups");
    Logger tcp = Logger.getLogger("org.jgroups.protocols.TCP");
    List<Logger> connections = Stream.of("org.jgroups.blocks.cs.TcpServer",
        "org.jgroups.blocks.cs.TcpConnection").map(Logger::getLogger).toList();
    List<Filter> connectionFilters = connections.stream().map(Logger::getFilter).toList();
    Level levelBefore = jgroups.getLevel();
    Filter before = tcp.getFilter();
    Filter own = r -> true;
    try {
      jgroups.setLevel(null); // as in a JVM that loads Ringmaster first: the default applies
      tcp.setFilter(own);
      JGroupsLogging.quietByDefault();
      assertEquals(Level.WARNING, jgroups.getLevel(), "the default applied");
      assertSame(own, tcp.getFilter(), "but not over the application's filter");
    } finally {
      tcp.setFilter(before);
      for (int i = 0; i < connections.size(); i++) {
        connections.get(i).setFilter(connectionFilters.get(i));
      }
      jgroups.setLevel(levelBefore);
    }
  }

  @Test
  void quietByDefault_filtersTheLoggerTcpConnectionsLogThrough() {
    JGroupsLogging.quietByDefault();
    // Nothing in the test run configures org.jgroups, so the default applies.
    Logger tcp = Logger.getLogger("org.jgroups.protocols.TCP");
    assertFalse(tcp.getFilter().isLoggable(record(Level.SEVERE,
        "127.0.0.1:7802: failed sending graceful close to 127.0.0.1:7800: Socket closed", null)));
    assertTrue(tcp.getFilter().isLoggable(record(Level.WARNING, "JGRP000029: failed sending message", null)));
    assertEquals(Level.WARNING, Logger.getLogger("org.jgroups").getLevel());
  }

  /**
   * Member addresses print as their node's name (the node id, which JGroups' name cache holds), not
   * with all the metadata they carry; one without a name prints as its UUID.
   */
  @Test
  void quietByDefault_makesAddressesPrintAsTheirName() {
    ExtendedUUID named = new ExtendedUUID(7, 11)
        .put("metadata", "a node's settings".getBytes(StandardCharsets.UTF_8));
    ExtendedUUID unnamed = new ExtendedUUID(13, 17)
        .put("metadata", "a node's settings".getBytes(StandardCharsets.UTF_8));
    ExtendedUUID.setPrintFunction(ExtendedUUID::print); // as JGroups prints them
    NameCache.add(named, "node-7");
    try {
      JGroupsLogging.quietByDefault();
      assertEquals("node-7", named.toString());
      assertEquals(unnamed.toStringLong(), unnamed.toString());
    } finally {
      NameCache.remove(named);
    }
  }

  /**
   * The node's channel logs JGroups' JChannel lines under a logger of its own class's name, outside
   * org.jgroups: the default quiets it all the same, so a start logs no INFO line of JGroups'
   * ("local_addr: ..., name: ...").
   */
  @Test
  void quietByDefault_quietsTheNodesOwnChannelToo() throws Exception {
    Logger jgroups = Logger.getLogger("org.jgroups");
    Level levelBefore = jgroups.getLevel();
    List<LogRecord> below = new CopyOnWriteArrayList<>();
    Handler handler = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() < Level.WARNING.intValue() && r.getSourceClassName() != null
            && r.getSourceClassName().equals(JChannel.class.getName())) {
          below.add(r);
        }
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    Logger root = Logger.getLogger("");
    try (LocalCluster cluster = new LocalCluster("quiet channel")) {
      jgroups.setLevel(null); // as in a JVM that loads Ringmaster first: the default applies
      JGroupsLogging.quietByDefault();
      root.addHandler(handler);
      cluster.start("a");
      assertEquals(List.of(), below.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList());
    } finally {
      root.removeHandler(handler);
      jgroups.setLevel(levelBefore);
    }
  }
}
