package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import io.ringmaster.RingmasterConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The command line of {@code peer}. Precedence: the demo's defaults, then {@code --config}, then
 * the other flags. {@code --parent-pid} is for the launcher: the peer exits when that process dies.
 * {@code --fault-injection} opens {@code POST /admin/split} and {@code /admin/heal} (see {@link Faults}),
 * which cut this peer off from others: for trying partitions out on one machine, off unless given.
 */
record PeerOptions(Optional<String> id, int httpPort, Optional<Integer> replicas, Optional<String> zone,
                   Optional<Double> weight, Optional<Path> config, Optional<String> cluster,
                   Optional<Long> parentPid, Optional<Integer> tombstoneGraceSeconds, boolean faultInjection) {

  static final String DEFAULT_CLUSTER = "ringmaster-demo";
  static final int DEFAULT_VIRTUAL_NODES = 256;
  static final int DEFAULT_REPLICAS = 2;
  /**
   * How long a delete's tombstone is kept: longer than any partition or unswept copy that could
   * still hold the deleted value, which would otherwise come back once the tombstone is gone.
   */
  static final Duration DEFAULT_TOMBSTONE_GRACE = Duration.ofHours(1);
  /** Ten years: {@code --tombstone-grace} is in seconds. */
  static final int MAX_TOMBSTONE_GRACE_SECONDS = 10 * 365 * 86_400;
  /** Long enough to hand off a few hundred thousand small entries on localhost. */
  static final Duration LEAVE_TIMEOUT = Duration.ofSeconds(20);
  /** How long a peer waits for its first ring (the node's own default, stated so the launcher can count on it). */
  static final Duration START_TIMEOUT = Duration.ofSeconds(30);

  static final String USAGE = "peer (--id <id> | --config <node.json> with a nodeId) --http-port <port> [--replicas 2] [--zone z] [--weight w]"
      + " [--config <node.json>] [--cluster ringmaster-demo] [--tombstone-grace <seconds, 3600>]"
      + " [--fault-injection]";

  private static final Set<String> FLAGS = Set.of("--id", "--http-port", "--replicas", "--zone", "--weight",
      "--config", "--cluster", "--parent-pid", "--tombstone-grace");
  /** The flags that take no value. */
  private static final Set<String> SWITCHES = Set.of("--fault-injection");

  static PeerOptions parse(String[] args, int from) {
    Flags f = Flags.parse(args, from, FLAGS, SWITCHES);
    ClusterOptions.checkBindPort(System.getProperties());
    PeerOptions o = new PeerOptions(f.string("--id"), f.port("--http-port"), f.integer("--replicas", 1, 255),
        f.string("--zone"), f.nonNegative("--weight"), f.path("--config"), f.clusterName("--cluster"),
        f.longValue("--parent-pid", 1), f.integer("--tombstone-grace", 1, MAX_TOMBSTONE_GRACE_SECONDS),
        f.on("--fault-injection"));
    if (o.id().isEmpty() && o.config().isEmpty()) {
      throw new UsageException("--id is required (or a --config that sets nodeId)");
    }
    if (o.config().isEmpty() && inClusterPorts(o.httpPort())) {
      // The localhost stack would move to another port, where the other peers may not look.
      throw new UsageException(clusterPortsClash(o.httpPort()));
    }
    return o;
  }

  private static boolean inClusterPorts(int port) {
    return ClusterOptions.clusterPorts(System.getProperties()).contains(port);
  }

  private static String clusterPortsClash(int port) {
    return "--http-port " + port + " is in the range the peers' cluster ports use ("
        + ClusterOptions.clusterPorts(System.getProperties()) + "); choose another";
  }

  Duration tombstoneGrace() {
    return tombstoneGraceSeconds.map(Duration::ofSeconds).orElse(DEFAULT_TOMBSTONE_GRACE);
  }

  String endpoint() {
    return "http://127.0.0.1:" + httpPort;
  }

  /**
   * The node's settings.
   *
   * @throws IllegalArgumentException from the builder, naming the setting (a bad config file, say)
   */
  Ringmaster.Builder builder() {
    Ringmaster.Builder b = Ringmaster.builder()
        .clusterName(DEFAULT_CLUSTER)
        .virtualNodes(DEFAULT_VIRTUAL_NODES)
        .replicas(DEFAULT_REPLICAS)
        .leaveTimeout(LEAVE_TIMEOUT)
        .startTimeout(START_TIMEOUT);
    config.ifPresent(b::config);
    id.ifPresent(v -> flag("--id", () -> b.nodeId(v)));
    cluster.ifPresent(v -> flag("--cluster", () -> b.clusterName(v)));
    replicas.ifPresent(v -> flag("--replicas", () -> b.replicas(v)));
    zone.ifPresent(v -> flag("--zone", () -> b.zone(v)));
    weight.ifPresent(v -> flag("--weight", () -> b.weight(v)));
    // Over any config file: the peer's own API, and the messages this build speaks.
    b.endpoint(endpoint()).applicationVersion(Wire.APPLICATION_VERSION);
    boolean portToCheck = config.isPresent() && inClusterPorts(httpPort);
    if (portToCheck || weight.isPresent()) {
      RingmasterConfig settings;
      try {
        settings = b.buildConfig();
      } catch (IllegalArgumentException e) {
        // A weight that gives no token is refused only with the other settings (virtualNodes):
        // under the flag's name, not only the config file's. Anything else is reported where the
        // node is built.
        if (weight.isPresent() && e.getMessage().startsWith("weight ")) {
          throw new IllegalArgumentException("--weight: " + e.getMessage(), e);
        }
        return b;
      }
      // parse() let the port pass, since a config file may name another stack or bind port; this
      // one keeps the localhost stack, at its own ports.
      if (portToCheck && isLocalhostStack(settings.jgroupsConfig())
          && settings.bindPort().isEmpty() && settings.bindAddress().isEmpty()) {
        throw new IllegalArgumentException(clusterPortsClash(httpPort) + " (" + config.get() + " keeps the stack "
            + settings.jgroupsConfig() + ")");
      }
    }
    return b;
  }

  /**
   * Whether {@code jgroupsConfig} is the localhost stack: by its name in the jar (as
   * {@code config/node.example.json} names it), or a file with the same bytes (such as the copy in
   * {@code config/jgroups/}). A file that differs may bind other ports, and is left to JGroups.
   */
  private static boolean isLocalhostStack(String jgroupsConfig) {
    if (jgroupsConfig.equals(RingmasterConfig.DEFAULT_JGROUPS_CONFIG)) {
      return true;
    }
    try (InputStream shipped = PeerOptions.class.getClassLoader()
        .getResourceAsStream(RingmasterConfig.DEFAULT_JGROUPS_CONFIG)) {
      Path file = Path.of(jgroupsConfig);
      return shipped != null && Files.isRegularFile(file)
          && Arrays.equals(shipped.readAllBytes(), Files.readAllBytes(file));
    } catch (IOException | RuntimeException unreadable) { // reported where the node is built, if at all
      return false;
    }
  }

  /** Applies a flag's value to the builder; a value it refuses is reported under the flag's name. */
  private static void flag(String name, Runnable apply) {
    try {
      apply.run();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(name + ": " + e.getMessage(), e);
    }
  }
}
