package io.ringmaster;

import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jgroups.JChannel;
import org.jgroups.PhysicalAddress;
import org.jgroups.conf.ConfiguratorFactory;
import org.jgroups.conf.ProtocolConfiguration;
import org.jgroups.protocols.FD_SOCK2;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.TP;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.IpAddress;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.StackType;
import org.jgroups.util.Util;

/** Loads a JGroups stack and applies the node's network settings to it. */
final class Stacks {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  private Stacks() {}

  /** Fails naming the setting when the stack is neither a file nor a classpath resource. */
  static void checkExists(String jgroupsConfig) {
    if (Files.isRegularFile(Path.of(jgroupsConfig))) {
      return;
    }
    if (Stacks.class.getClassLoader().getResource(jgroupsConfig) == null) {
      throw new IllegalArgumentException("jgroupsConfig: no file or classpath resource \"" + jgroupsConfig
          + "\" (working directory " + Path.of("").toAbsolutePath() + ")");
    }
  }

  /**
   * Fails naming both settings when {@code initialHosts} is set for a stack without TCPPING, which
   * would ignore it. A stack that cannot be read is left for {@code start()} to report.
   */
  static void checkInitialHostsApply(String jgroupsConfig, String initialHosts) {
    List<ProtocolConfiguration> protocols = protocolsOf(jgroupsConfig);
    if (protocols != null && protocols.stream().map(ProtocolConfiguration::getProtocolName)
        .noneMatch(p -> isProtocol(p, "TCPPING"))) {
      throw new IllegalArgumentException("initialHosts is set (\"" + initialHosts + "\"), but jgroupsConfig "
          + jgroupsConfig + " has no TCPPING to give them to; its protocols: " + names(protocols));
    }
  }

  /**
   * Fails naming both settings when {@code secret} is set for a stack with no protocol that uses
   * it (neither {@link SharedSecretEncrypt} nor AUTH with {@link SharedSecretAuthToken}): the node
   * would join unauthenticated and send in the clear while its operator believes otherwise. A
   * stack that cannot be read is left for {@code start()} to report.
   */
  static void checkSecretApplies(String jgroupsConfig) {
    List<ProtocolConfiguration> protocols = protocolsOf(jgroupsConfig);
    if (protocols != null && protocols.stream().noneMatch(Stacks::usesSecret)) {
      throw new IllegalArgumentException("secret is set, but jgroupsConfig " + jgroupsConfig + " has no protocol"
          + " that uses it (" + SharedSecretEncrypt.class.getName() + ", or AUTH with auth_class="
          + SharedSecretAuthToken.class.getName() + "), so the cluster would be neither authenticated nor"
          + " encrypted: use secure-tcp.xml, or remove the secret; its protocols: " + names(protocols));
    }
  }

  private static boolean usesSecret(ProtocolConfiguration p) {
    String name = p.getProtocolName();
    if (isProtocol(name, "AUTH")) {
      String token = p.getProperties().get("auth_class");
      return token != null && isA(Util.substituteVariable(token), SharedSecretAuthToken.class);
    }
    return isA(name, SharedSecretEncrypt.class);
  }

  /** Whether a protocol name, short ({@code TCPPING}) or qualified, names the JGroups protocol {@code shortName}. */
  private static boolean isProtocol(String name, String shortName) {
    return name.equals(shortName) || name.endsWith("." + shortName);
  }

  /** Whether the class named (a subclass included) is {@code type}; false for JGroups' short names. */
  private static boolean isA(String className, Class<?> type) {
    try {
      return type.isAssignableFrom(Class.forName(className.trim(), false, Stacks.class.getClassLoader()));
    } catch (ClassNotFoundException | LinkageError notAClass) {
      return false;
    }
  }

  /** The stack's protocols, top of the XML first, or null if it cannot be read. */
  private static List<ProtocolConfiguration> protocolsOf(String jgroupsConfig) {
    try (InputStream in = open(jgroupsConfig)) {
      return ConfiguratorFactory.getStackConfigurator(in).getProtocolStack();
    } catch (Exception unreadable) {
      return null;
    }
  }

  private static String names(List<ProtocolConfiguration> protocols) {
    return String.join(", ", protocols.stream().map(ProtocolConfiguration::getProtocolName).toList());
  }

  /** The stack's XML: the file if there is one, else the classpath resource, else null. */
  private static InputStream open(String jgroupsConfig) throws java.io.IOException {
    Path file = Path.of(jgroupsConfig);
    return Files.isRegularFile(file) ? Files.newInputStream(file)
        : Stacks.class.getClassLoader().getResourceAsStream(jgroupsConfig);
  }

  static JChannel create(RingmasterConfig config) throws Exception {
    JChannel channel;
    try (InputStream in = open(config.jgroupsConfig())) {
      if (in == null) {
        checkExists(config.jgroupsConfig());
      }
      SharedSecret.forNextStack(config.secret());
      try {
        channel = new JChannel(in);
      } finally {
        SharedSecret.forNextStack(java.util.Optional.empty());
      }
    }
    try {
      configure(channel, config);
    } catch (Exception | Error e) {
      channel.close();
      throw e;
    }
    return channel;
  }

  private static void configure(JChannel channel, RingmasterConfig config) throws Exception {
    ProtocolStack stack = channel.getProtocolStack();
    GMS gms = stack.findProtocol(GMS.class);
    if (gms != null && !(gms.getMembershipChangePolicy() instanceof RingmasterMembershipPolicy)) {
      // Every member must choose coordinators alike, so the stack's own choice cannot be kept.
      Class<?> configured = gms.getMembershipChangePolicy().getClass();
      if (configured != GMS.DefaultMembershipPolicy.class) {
        LOG.log(Level.WARNING, "stack {0} sets GMS.membership_change_policy {1}; Ringmaster replaces it with"
            + " RingmasterMembershipPolicy, which every member of the cluster must use", config.jgroupsConfig(),
            configured.getName());
      }
      gms.setMembershipChangePolicy(new RingmasterMembershipPolicy());
    }
    if (gms != null) {
      // Full views, not deltas: a member rebuilds a delta view from its own last view with its own
      // copy of the policy, so a member whose last view differs from the coordinator's (one view id
      // with two member lists, after a crash mid-install) or that runs another Ringmaster version
      // would install a list no one else has, under the same id, for good. A full view replaces it.
      gms.useDeltaViews(false);
    }
    TP transport = stack.getTransport();
    if (config.bindAddress().isPresent()) {
      InetAddress address = InetAddress.getByName(config.bindAddress().get());
      transport.setBindAddress(address);
      FD_SOCK2 fd = stack.findProtocol(FD_SOCK2.class);
      if (fd != null) {
        fd.setBindAddress(address);
      }
    }
    config.bindPort().ifPresent(transport::setBindPort);
    if (config.initialHosts().isPresent()) {
      TCPPING ping = stack.findProtocol(TCPPING.class);
      if (ping == null) {
        throw new IllegalArgumentException("initialHosts is set but stack " + config.jgroupsConfig()
            + " has no TCPPING");
      }
      // TCPPING expanded its own initial_hosts when the channel was built; a list set now is
      // taken as it is, so it gets the same expansion here.
      ping.setInitialHosts2(expand(config.initialHosts().get(), ping.getPortRange(), transport.getBindAddr()));
    }
  }

  /**
   * {@code hosts} as TCPPING expands the {@code initial_hosts} of a stack file: every address of
   * each host of the bind address's family, each port with the {@code portRange} ports after it,
   * each also at the bind address (JGroups' JGRP-2910).
   */
  static List<PhysicalAddress> expand(String hosts, int portRange, InetAddress bindAddress) {
    StackType family = bindAddress == null ? Util.getIpStackType()
        : bindAddress instanceof Inet6Address ? StackType.IPv6 : StackType.IPv4;
    List<PhysicalAddress> listed = new ArrayList<>();
    List<String> unresolved = new ArrayList<>();
    if (!Util.parseCommaDelimitedHostsInto(listed, unresolved, hosts, 0, portRange, family)) {
      LOG.log(Level.WARNING, "initialHosts: cannot resolve {0} now; discovery goes on without them", unresolved);
    }
    Set<PhysicalAddress> out = new LinkedHashSet<>(listed);
    if (bindAddress != null) {
      listed.forEach(a -> out.add(new IpAddress(bindAddress, ((IpAddress) a).getPort())));
    }
    return new ArrayList<>(out);
  }

  /** Parses {@code host[port],host[port]}; fails naming the setting and the bad entry. */
  static List<InetSocketAddress> parseHosts(String hosts) {
    List<InetSocketAddress> out = new ArrayList<>();
    for (String entry : hosts.split(",")) {
      String e = entry.trim();
      int open = e.indexOf('[');
      if (open <= 0 || !e.endsWith("]")) {
        throw new IllegalArgumentException("initialHosts entry must look like 127.0.0.1[7800]: \"" + e + "\"");
      }
      try {
        int port = Integer.parseInt(e.substring(open + 1, e.length() - 1));
        out.add(new InetSocketAddress(InetAddress.getByName(e.substring(0, open)), port));
      } catch (UnknownHostException | IllegalArgumentException bad) {
        throw new IllegalArgumentException("initialHosts entry is not host[port]: \"" + e + "\" (" + bad.getMessage() + ")");
      }
    }
    return out;
  }
}
