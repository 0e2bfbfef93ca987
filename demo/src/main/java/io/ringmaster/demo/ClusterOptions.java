package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

/** The command line of {@code cluster}. */
record ClusterOptions(int peers, int replicas, int basePort, String cluster, Optional<Path> logDir) {
  static final int MAX_PEERS = 20; // the localhost stack's TCP port range: 7800-7819

  static final String USAGE = "cluster [--peers 3] [--replicas 2] [--base-port 8081] [--cluster ringmaster-demo]"
      + " [--log-dir <dir>]";

  private static final Set<String> FLAGS = Set.of("--peers", "--replicas", "--base-port", "--cluster", "--log-dir");

  /**
   * The peers' cluster ports on the localhost stack: TCP from 7800 (one of 20), failure detection
   * from 7900 (a peer's TCP port plus 100, or one of the 3 after it); from {@code first} instead
   * when {@code -Dringmaster.bind_port} moves them ({@link #clusterPorts}). The base port must leave
   * them clear, and the launcher skips them when it looks for a free HTTP port.
   */
  record ClusterPorts(int first, int last) {
    boolean contains(int port) {
      return port >= first && port <= last;
    }

    @Override
    public String toString() {
      return first + "-" + last;
    }
  }

  /** The stack's own first TCP port. */
  static final int DEFAULT_CLUSTER_PORT = 7800;

  /** The highest {@code ringmaster.bind_port} whose cluster ports (TCP and failure detection) all stay under 65536. */
  static final int MAX_CLUSTER_PORT = 65535 - 100 - MAX_PEERS - 2;

  /**
   * The cluster ports of peers started with these system properties: from {@code ringmaster.bind_port}
   * if it is a port up to {@link #MAX_CLUSTER_PORT} ({@link #checkBindPort} refuses a higher one, and
   * the peers' stack a value that is no port), else from {@value #DEFAULT_CLUSTER_PORT}.
   */
  static ClusterPorts clusterPorts(Properties properties) {
    int first = DEFAULT_CLUSTER_PORT;
    String moved = properties.getProperty("ringmaster.bind_port");
    if (moved != null && moved.strip().matches("[0-9]{1,5}")) {
      int port = Integer.parseInt(moved.strip());
      if (port >= 1 && port <= MAX_CLUSTER_PORT) {
        first = port;
      }
    }
    return new ClusterPorts(first, first + 100 + MAX_PEERS - 1 + 3);
  }

  /**
   * The launcher hands its {@code -Dringmaster.*} and {@code -Djgroups.*} properties on to the
   * peers ({@link PeerProcess}).
   * One that moves their cluster port or address, without saying where they are to look for each
   * other, would leave each peer in a cluster of its own: the localhost stack's
   * {@code initial_hosts} stays at 127.0.0.1[7800]. (JGroups' own {@code -Djgroups.bind_addr},
   * which moves the transport and the failure detector, is not checked here: a peer given an
   * address other hosts reach warns that its hosts are all on the loopback interface, as for
   * {@code ringmaster.bind_addr}.)
   *
   * An empty one is refused here too, as every peer would refuse it (exit status 2).
   *
   * @throws UsageException naming the properties
   */
  static void checkForwarded(Properties properties) {
    for (String name : List.of("ringmaster.initial_hosts", "ringmaster.bind_port", "ringmaster.bind_addr")) {
      String value = properties.getProperty(name);
      if (value != null && value.isBlank()) {
        throw new UsageException("-D" + name + " is set but empty: every peer would refuse it; unset it, or give it a"
            + " value");
      }
    }
    checkBindPort(properties);
    if (properties.getProperty("ringmaster.initial_hosts") != null) {
      return;
    }
    // The stack's own values move nothing.
    String port = moved(properties.getProperty("ringmaster.bind_port"), "7800");
    String address = moved(properties.getProperty("ringmaster.bind_addr"), "127.0.0.1");
    if (port != null || address != null) {
      String moved = port != null ? "-Dringmaster.bind_port=" + port : "-Dringmaster.bind_addr=" + address;
      throw new UsageException(moved + " moves the peers' cluster " + (port != null ? "ports" : "address")
          + ", but they look for each other at 127.0.0.1[7800] unless -Dringmaster.initial_hosts says otherwise:"
          + " set it too (for example -Dringmaster.initial_hosts=" + (address != null ? address : "127.0.0.1")
          + "[" + (port != null ? port : "7800") + "])");
    }
  }

  /**
   * Refuses a {@code ringmaster.bind_port} above {@link #MAX_CLUSTER_PORT}, for the launcher and for
   * a peer alike: JGroups takes it, but the failure detector's ports (100 above) wrap past 65535
   * to just over 1024, and the ports kept clear of the peers' HTTP ports would be the wrong ones.
   *
   * @throws UsageException naming the property and the highest port it takes
   */
  static void checkBindPort(Properties properties) {
    String bindPort = properties.getProperty("ringmaster.bind_port");
    if (bindPort != null && bindPort.strip().matches("[0-9]{1,9}") && Integer.parseInt(bindPort.strip()) > MAX_CLUSTER_PORT) {
      throw new UsageException("-Dringmaster.bind_port=" + bindPort.strip() + ": the peers' cluster ports (that port,"
          + " the " + (MAX_PEERS - 1) + " after it and their failure detection's, 100 above) would run past 65535;"
          + " choose one up to " + MAX_CLUSTER_PORT);
    }
  }

  /** {@code value}, or null if it is unset or the stack's own {@code unmoved}. */
  private static String moved(String value, String unmoved) {
    return value == null || value.strip().equals(unmoved) ? null : value;
  }

  static ClusterOptions parse(String[] args, int from) {
    Flags f = Flags.parse(args, from, FLAGS);
    int basePort = f.integer("--base-port", 1, 65535 - MAX_PEERS).orElse(8081);
    checkForwarded(System.getProperties());
    ClusterPorts cluster = clusterPorts(System.getProperties());
    if (basePort <= cluster.last() && basePort + MAX_PEERS - 1 >= cluster.first()) {
      throw new UsageException("--base-port " + basePort + ": the peers' HTTP ports (" + basePort + "-"
          + (basePort + MAX_PEERS - 1) + ") would overlap their cluster ports (" + cluster + "); choose one below "
          + (cluster.first() - MAX_PEERS + 1) + " or above " + cluster.last());
    }
    try {
      TestingAids.fromSystemProperties(); // handed on to every peer: refused here, once, rather than by each
      // The stack's variables too (ringmaster.initial_hosts=host:port, say), as each peer's node reads them.
      Ringmaster.builder().nodeId("launcher").buildConfig();
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
    return new ClusterOptions(f.integer("--peers", 1, MAX_PEERS).orElse(3),
        f.integer("--replicas", 1, 255).orElse(PeerOptions.DEFAULT_REPLICAS), basePort,
        f.clusterName("--cluster").orElse(PeerOptions.DEFAULT_CLUSTER), f.path("--log-dir"));
  }
}
