package io.ringmaster.demo;

import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;

/** The command line of {@code cluster}. */
record ClusterOptions(int peers, int replicas, int basePort, String cluster, Optional<Path> logDir) {
  static final int MAX_PEERS = 20; // the localhost stack's TCP port range: 7800-7819

  static final String USAGE = "cluster --peers 3 [--replicas 2] [--base-port 8081] [--cluster ringmaster-demo]"
      + " [--log-dir <dir>]";

  private static final Set<String> FLAGS = Set.of("--peers", "--replicas", "--base-port", "--cluster", "--log-dir");

  static ClusterOptions parse(String[] args, int from) {
    Flags f = Flags.parse(args, from, FLAGS);
    return new ClusterOptions(f.integer("--peers", 1, MAX_PEERS).orElse(3),
        f.integer("--replicas", 1, 255).orElse(PeerOptions.DEFAULT_REPLICAS),
        f.integer("--base-port", 1, 65535 - MAX_PEERS).orElse(8081),
        f.clusterName("--cluster").orElse(PeerOptions.DEFAULT_CLUSTER), f.path("--log-dir"));
  }
}
