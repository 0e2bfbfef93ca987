package io.ringmaster;

import java.time.Duration;
import java.util.Optional;

/**
 * The settings of one node, as {@link Ringmaster.Builder#buildConfig()} validated them and
 * {@link Ringmaster#config()} reports them. Set them on {@link Ringmaster#builder()}, or in a JSON
 * file read by {@link Ringmaster#fromConfig(java.nio.file.Path)} or
 * {@link Ringmaster.Builder#config(java.nio.file.Path)}, with the same keys except the three
 * durations, which are whole milliseconds there ({@code leaveTimeoutMillis},
 * {@code gossipIntervalMillis}, {@code startTimeoutMillis}). A value of this record is output
 * only: no method takes one, and constructing one checks nothing.
 *
 * @param clusterName    the JGroups cluster to join: 1 to 200 printable ASCII characters, no space at either end
 * @param nodeId         stable id of this member (at most 255 UTF-8 bytes)
 * @param weight         share of the keys relative to other members; 0 = member that owns nothing
 * @param zone           failure zone (rack, availability zone); replicas go to distinct zones first
 * @param virtualNodes   tokens per unit of weight; must be equal on every member
 * @param replicas       owners per key; must be equal on every member
 * @param applicationVersion what the application's members must share to work together ("" for
 *                       nothing); must be equal on every member
 * @param jgroupsConfig  JGroups stack: a file path or a classpath resource
 * @param endpoint       how applications reach this node (for example {@code http://127.0.0.1:8081}); may be empty
 * @param bindAddress    overrides the transport's bind address, if present
 * @param bindPort       overrides the transport's bind port, if present
 * @param initialHosts   overrides TCPPING's initial hosts ({@code 127.0.0.1[7800],127.0.0.1[7801]}), if present
 * @param secret         the shared secret for {@code secure-tcp.xml} as set on the builder or in the
 *                       file, in clear ({@link #toString()} masks it); empty when none was set, and
 *                       then the stack reads the system property {@code ringmaster.secret}, then the
 *                       environment variable {@code RINGMASTER_SECRET}, at {@link Ringmaster#start()}
 * @param leaveTimeout   how long {@link Ringmaster#close()} waits for listeners to hand off data
 * @param gossipInterval how often the ring checksum is compared with a random peer
 * @param startTimeout   how long {@link Ringmaster#start()} waits for the first ring
 */
public record RingmasterConfig(String clusterName, String nodeId, double weight, String zone, int virtualNodes,
                               int replicas, String applicationVersion, String jgroupsConfig, String endpoint,
                               Optional<String> bindAddress, Optional<Integer> bindPort, Optional<String> initialHosts, Optional<String> secret,
                               Duration leaveTimeout, Duration gossipInterval, Duration startTimeout) {

  /** The stack used when none is set: TCP on 127.0.0.1, ports 7800 and up. */
  public static final String DEFAULT_JGROUPS_CONFIG = "ringmaster/jgroups/localhost-tcp.xml";

  @Override
  public String toString() {
    return "RingmasterConfig[clusterName=" + clusterName + ", nodeId=" + nodeId + ", weight=" + weight
        + ", zone=" + zone + ", virtualNodes=" + virtualNodes + ", replicas=" + replicas + ", applicationVersion="
        + applicationVersion + ", jgroupsConfig="
        + jgroupsConfig + ", endpoint=" + endpoint + ", bindAddress=" + bindAddress + ", bindPort=" + bindPort
        + ", initialHosts=" + initialHosts + ", secret=" + secret.map(s -> "***") + ", leaveTimeout="
        + leaveTimeout + ", gossipInterval=" + gossipInterval + ", startTimeout=" + startTimeout + "]";
  }
}
