package io.ringmaster;

import java.lang.reflect.Field;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jgroups.JChannel;
import org.jgroups.annotations.Property;
import org.jgroups.conf.ProtocolConfiguration;
import org.jgroups.protocols.FD_SOCK2;
import org.jgroups.protocols.SHARED_LOOPBACK;
import org.jgroups.protocols.TP;
import org.jgroups.stack.Protocol;
import org.jgroups.util.StackType;
import org.jgroups.util.Util;

/**
 * The addresses of a node's stack: where its failure detector listens, and the checks that refuse
 * a stack whose addresses JGroups replaced without a word (measured on JGroups 5.5.7): an IPv4
 * address dropped in a JVM that prefers IPv6, an override that JGroups could not resolve, a
 * failure detector the other members could never reach.
 */
final class StackAddresses {
  private StackAddresses() {}

  /**
   * Sets every {@code FD_SOCK2}'s address: the other members connect to it at the transport's
   * address (plus an offset to its port), so it must listen there. JGroups also checks it while it
   * builds the stack: the stack's own value (a variable set elsewhere to an address this host
   * lacks) would fail the start.
   */
  static void failureDetectorsAt(List<ProtocolConfiguration> protocols, String address) {
    for (ProtocolConfiguration p : protocols) {
      if (Stacks.isProtocolClass(p.getProtocolName(), FD_SOCK2.class)) {
        p.getProperties().put("bind_addr", address);
      }
    }
  }

  /**
   * Moves every {@code FD_SOCK2} to JGroups' own override of the transport's address ({@code
   * jgroups.bind_addr}), if one is set: JGroups moves the transport there, but not a failure
   * detector whose stack gives it an address (the shipped stacks' 127.0.0.1), where the other
   * members would never reach it; it goes where the transport goes, as with {@code bindAddress}.
   */
  static void failureDetectorsFollowTheOverride(List<ProtocolConfiguration> protocols) {
    Field transportAddress = transportAddressField(protocols.get(0).getProtocolName());
    Map.Entry<String, String> override = transportAddress == null ? null
        : jgroupsOverride(transportAddress.getAnnotation(Property.class));
    if (override != null) {
      failureDetectorsAt(protocols, override.getValue().trim());
    }
  }

  /**
   * The field behind a transport's {@code bind_addr}, or null if the stack's first protocol is no
   * transport JGroups knows.
   */
  private static Field transportAddressField(String protocolName) {
    try {
      Class<?> type = Util.loadProtocolClass(protocolName.trim(), StackAddresses.class);
      return TP.class.isAssignableFrom(type) ? propertyField(type, "bind_addr") : null;
    } catch (Exception | LinkageError notAProtocol) {
      return null; // JGroups says what is wrong with it when it builds the stack
    }
  }

  /** The attributes whose addresses {@link #refuseReplaced} checks. */
  private static final List<String> ADDRESS_ATTRIBUTES = List.of("bind_addr", "mcast_addr");

  /** A protocol of a stack file, by name, and the addresses it gives for {@link #ADDRESS_ATTRIBUTES} (null: none). */
  record Named(String protocol, Map<String, String> addresses) {}

  /**
   * The addresses the stack file names for {@link #ADDRESS_ATTRIBUTES}, once its variables are
   * substituted ({@code ${ringmaster.bind_addr:127.0.0.1}} names 127.0.0.1 unless the property is
   * set), by protocol (the transport first).
   */
  static List<Named> named(List<ProtocolConfiguration> protocols) {
    List<Named> named = new ArrayList<>();
    for (ProtocolConfiguration p : protocols) {
      Map<String, String> addresses = new LinkedHashMap<>();
      for (String attribute : ADDRESS_ATTRIBUTES) {
        String raw = p.getProperties().get(attribute);
        String value = raw == null ? null : Util.substituteVariable(raw); // null: a variable unset, no default
        addresses.put(attribute, value == null ? null : value.trim());
      }
      named.add(new Named(p.getProtocolName(), addresses));
    }
    return named;
  }

  /** An IPv4 literal of four numbers up to 255, or an IPv6 literal without a scope: parsed without a lookup. */
  static boolean isIpLiteral(String value) {
    if (value.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}")) {
      for (String part : value.split("\\.")) {
        if (Integer.parseInt(part) > 255) {
          return false;
        }
      }
      return true;
    }
    return value.matches("[0-9a-fA-F:]*:[0-9a-fA-F:.]*");
  }

  /**
   * Refuses a stack whose address, given as an IP literal, JGroups replaced with one nobody gave
   * it as it built the stack. A JVM that prefers IPv6 addresses ({@code
   * -Djava.net.preferIPv6Addresses=true}, without {@code -Djava.net.preferIPv4Stack=true}) makes
   * JGroups drop every IPv4 address it is given, without a word: it binds {@code
   * localhost-tcp.xml}'s transport to an IPv6 address of its choosing (another interface's,
   * reachable from the network) instead of 127.0.0.1, and moves {@code lan-udp.xml}'s group from
   * 239.8.8.9 to its own IPv6 default, so the node never finds its members and starts a cluster of
   * its own (measured on JGroups 5.5.7).
   *
   * <p>An address may be given by the stack (after Ringmaster's settings) and by JGroups' own
   * override, a system property or environment variable such as {@code jgroups.bind_addr}. For the
   * transport JGroups takes the override whenever it resolves in the family of the stack's own
   * address, and otherwise keeps the stack's without a word, so only the override is accepted
   * there; another protocol keeps the address its stack gives it ({@code FD_SOCK2}'s, which {@link
   * #failureDetectorsFollowTheOverride} sets), so either is accepted. A {@code bindAddress} that
   * the override displaces from the transport is refused: JGroups would ignore the setting.
   * Addresses given by keyword
   * ({@code site_local}, {@code match-interface:...}), name or list are JGroups' to resolve and
   * are not checked, nor is {@code SHARED_LOOPBACK}, which opens no socket.
   */
  static void refuseReplaced(JChannel channel, RingmasterConfig config, List<Named> named)
      throws UnknownHostException {
    List<Protocol> topDown = channel.getProtocolStack().getProtocols();
    if (topDown.size() != named.size()) {
      return; // not the stack the file made: nothing to compare with
    }
    for (int i = 0; i < named.size(); i++) {
      Protocol protocol = topDown.get(topDown.size() - 1 - i);
      if (protocol instanceof SHARED_LOOPBACK || !Stacks.isProtocol(named.get(i).protocol(), protocol.getName())) {
        continue;
      }
      for (String attribute : ADDRESS_ATTRIBUTES) {
        Field field = propertyField(protocol.getClass(), attribute);
        if (field == null) {
          continue;
        }
        Map<String, String> given = new LinkedHashMap<>(); // address -> where it came from
        Map.Entry<String, String> override = jgroupsOverride(field.getAnnotation(Property.class));
        if (override != null) {
          given.put(override.getValue().trim(), override.getKey());
        }
        String inStack = named.get(i).addresses().get(attribute);
        // JGroups binds the transport to its override whenever that resolves, in the family of the
        // stack's own address, and keeps the stack's only when it resolves to none there (an IPv6
        // override of 127.0.0.1): the override ignored, which is refused as a replacement is.
        boolean transportOverridden = i == 0 && override != null && attribute.equals("bind_addr");
        if (inStack != null && !transportOverridden) {
          given.putIfAbsent(inStack, attribute.equals("bind_addr") && config.bindAddress().isPresent()
              ? "bindAddress " + config.bindAddress().get() : null);
        }
        Object used = Util.getField(field, protocol);
        if (transportOverridden && config.bindAddress().isPresent()
            && !InetAddress.getByName(inStack).equals(used)) { // bindAddress: a literal
          throw new IllegalArgumentException("bindAddress " + config.bindAddress().get() + " is not the address"
              + " JGroups binds: " + override.getKey() + " is " + override.getValue().trim() + ", which JGroups"
              + " takes instead; unset it, or make the two agree");
        }
        if (given.isEmpty() || !given.keySet().stream().allMatch(StackAddresses::isIpLiteral)) {
          continue;
        }
        if (used != null && !(used instanceof InetAddress)) {
          continue; // not an address field: a protocol of its own kind
        }
        boolean givenBySomeone = false;
        for (String address : given.keySet()) {
          givenBySomeone |= InetAddress.getByName(address).equals(used); // a literal: no lookup
        }
        if (givenBySomeone) {
          continue;
        }
        Map.Entry<String, String> first = given.entrySet().iterator().next();
        String shown = used instanceof InetAddress address ? address.getHostAddress() : String.valueOf(used);
        String why;
        if (transportOverridden && !(InetAddress.getByName(first.getKey()) instanceof Inet4Address)
            && used instanceof Inet4Address) {
          why = ": JGroups resolves " + override.getKey() + " in the family of the address the stack gives its"
              + " transport (" + inStack + "), where it names none, and keeps the stack's; set bindAddress to "
              + first.getKey() + " instead";
        } else if (!(InetAddress.getByName(first.getKey()) instanceof Inet4Address) || used instanceof Inet4Address) {
          why = ": the node must use the address it is given";
        } else if (Util.getIpStackType() == StackType.IPv6 && Boolean.getBoolean(PREFER_IPV6)) {
          why = ": this JVM prefers IPv6 addresses (" + PREFER_IPV6 + "=true), and JGroups then drops the IPv4"
              + " addresses it is given, so the node would never find its members; run it with"
              + " -Djava.net.preferIPv4Stack=true (JGroups prefers IPv4 when both are set), or name IPv6 addresses";
        } else {
          // An IPv6 bindAddress with an IPv4 group, say: one family per stack.
          why = ": JGroups runs this stack on IPv6 (its transport's address is "
              + transportAddress(channel) + "), and drops the IPv4 addresses it is given; name an IPv6"
              + " address here (for lan-udp.xml's group, ringmaster.mcast_addr: ff0e::8:8:9, say)";
        }
        throw new IllegalArgumentException("jgroupsConfig " + config.jgroupsConfig() + ": " + protocol.getName()
            + "'s " + attribute + " is " + first.getKey() + (first.getValue() == null ? "" : " (from "
            + first.getValue() + ")") + ", but JGroups set it to " + shown + why
            + Stacks.variablesSet(config.jgroupsConfig()));
      }
    }
  }

  /**
   * Refuses a stack whose {@code FD_SOCK2} listens on another address than the transport's (one
   * of its own in the stack file, say, while {@code bindAddress} or {@code jgroups.bind_addr}
   * moved the transport): the other members connect to it at the transport's address, so they
   * could never watch this node, and its crash would be noticed only when the slower heartbeat
   * detector ({@code FD_ALL3}) times out. Measured on JGroups 5.5.7: the neighbour's connection
   * stays "DISCONNECTED", without a word in the log. Unless it has no address of its own (it then
   * listens on every address; JGroups refuses 0.0.0.0 as an address), or the transport advertises
   * an {@code external_addr}.
   */
  static void refuseUnreachableFailureDetector(JChannel channel, RingmasterConfig config) {
    TP transport = channel.getProtocolStack().getTransport();
    FD_SOCK2 detector = channel.getProtocolStack().findProtocol(FD_SOCK2.class);
    InetAddress listens = detector == null ? null : detector.getBindAddress();
    InetAddress bound = transport.getBindAddress();
    if (listens == null || bound == null || listens.equals(bound)
        || transport.getExternalAddr() != null) {
      return;
    }
    throw new IllegalArgumentException("jgroupsConfig " + config.jgroupsConfig() + ": FD_SOCK2's bind_addr is "
        + listens.getHostAddress() + ", but the transport is bound to " + bound.getHostAddress() + ", where the"
        + " other members look for it: they could not watch this node, and its crash would go unnoticed until"
        + " FD_ALL3's timeout; give both one address (bindAddress sets both)"
        + Stacks.variablesSet(config.jgroupsConfig()));
  }

  /** The JDK's system property for a preference of IPv6 addresses, which JGroups heeds too. */
  private static final String PREFER_IPV6 = "java.net.preferIPv6Addresses";

  private static String transportAddress(JChannel channel) {
    InetAddress bound = channel.getProtocolStack().getTransport().getBindAddress();
    return bound == null ? "not set" : bound.getHostAddress();
  }

  /**
   * The system property or environment variable, among those JGroups reads for an attribute
   * ({@link Property#systemProperty()}: {@code jgroups.bind_addr}, say), that is set, with its
   * value, looked up in JGroups' order: each name as a property, then as a variable; null if none.
   * One that a security manager will not let this code read is passed over, as JGroups does.
   */
  private static Map.Entry<String, String> jgroupsOverride(Property property) {
    for (String name : property.systemProperty()) {
      if (name == null || name.isEmpty()) {
        continue;
      }
      String value = readOrNull(() -> System.getProperty(name));
      if (value != null) {
        return Map.entry("the system property " + name, value);
      }
      value = readOrNull(() -> System.getenv(name));
      if (value != null) {
        return Map.entry("the environment variable " + name, value);
      }
    }
    return null;
  }

  private static String readOrNull(Supplier<String> read) {
    try {
      return read.get();
    } catch (SecurityException notAllowed) {
      return null;
    }
  }

  /**
   * The field behind a protocol's attribute: the field of that {@link Property} name, or of that
   * name with no name given ({@code UDP}'s {@code mcast_addr} is the field {@code
   * mcast_group_addr}); null if the protocol has none.
   */
  private static Field propertyField(Class<?> protocolType, String attribute) {
    for (Class<?> type = protocolType; type != null; type = type.getSuperclass()) {
      for (Field field : type.getDeclaredFields()) {
        Property property = field.getAnnotation(Property.class);
        if (property != null && (property.name().isEmpty() ? field.getName() : property.name()).equals(attribute)) {
          return field;
        }
      }
    }
    return null;
  }
}
