package io.ringmaster;

import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jgroups.JChannel;
import org.jgroups.annotations.Property;
import org.jgroups.conf.AttributeType;
import org.jgroups.conf.ConfiguratorFactory;
import org.jgroups.conf.ProtocolConfiguration;
import org.jgroups.conf.ProtocolStackConfigurator;
import org.jgroups.protocols.Encrypt;
import org.jgroups.protocols.FD_SOCK2;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.TP;
import org.jgroups.protocols.UDP;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.ProtocolStack;
import org.jgroups.util.Util;

/** Loads a JGroups stack and applies the node's network settings to it. */
final class Stacks {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());
  /** Where the jar holds the stacks of {@code config/jgroups}. */
  private static final String SHIPPED = "ringmaster/jgroups/";

  private Stacks() {}

  /** Fails naming the setting when the stack is neither a file nor a classpath resource. */
  static void checkExists(String jgroupsConfig) {
    Path file;
    try {
      file = Path.of(jgroupsConfig);
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException("jgroupsConfig is not a path: " + e.getMessage());
    }
    if (Files.isRegularFile(file)) {
      return;
    }
    if (Files.isDirectory(file)) {
      throw new IllegalArgumentException("jgroupsConfig " + SettingChecks.shown(jgroupsConfig)
          + " is a directory, not a stack file");
    }
    if (Stacks.class.getClassLoader().getResource(jgroupsConfig) == null) {
      throw new IllegalArgumentException("jgroupsConfig: no file or classpath resource "
          + SettingChecks.shown(jgroupsConfig) + " (working directory " + Path.of("").toAbsolutePath() + ")"
          + shippedUnderThatName(file));
    }
  }

  /**
   * For a stack not found whose file name is that of a stack shipped in the jar ({@code
   * "localhost-tcp.xml"}, or {@code "config/jgroups/localhost-tcp.xml"} run from elsewhere), the
   * name that finds it; otherwise nothing. Only an {@code .xml} name, as the shipped stacks are:
   * a path ending in {@code "."} or {@code ".."} would name the resource directory itself, which a
   * class path of directories (an IDE's, a test run's) finds.
   */
  private static String shippedUnderThatName(Path missing) {
    Path name = missing.getFileName();
    if (name == null || !name.toString().endsWith(".xml")
        || Stacks.class.getClassLoader().getResource(SHIPPED + name) == null) {
      return "";
    }
    return "; the jar ships a stack of that name as " + SettingChecks.shown(SHIPPED + name);
  }

  /**
   * Fails naming the setting when the stack file is not a JGroups configuration that can be read
   * (one JGroups' parser refuses, with no {@code <config>} element, or no protocols), so that a
   * broken file shows when the node is built rather than when it starts; also one without GMS, with
   * which a node would never get a view. A stack without MERGE3, without a failure detector, or
   * checking joins with the shared secret without encrypting gets a WARNING. The protocols' classes
   * and settings are checked by JGroups when {@code start()} builds the stack.
   */
  static void checkReadable(String jgroupsConfig) {
    List<ProtocolConfiguration> protocols;
    try {
      protocols = protocolsOf(jgroupsConfig);
    } catch (Exception unreadable) {
      // The exception itself, not its message: an AccessDeniedException's message is the path alone.
      throw new IllegalArgumentException("jgroupsConfig " + jgroupsConfig + " cannot be read as a JGroups stack: "
          + (unreadable instanceof IOException ? unreadable.toString() : unreadable.getMessage()), unreadable);
    }
    if (protocols.isEmpty()) {
      throw new IllegalArgumentException("jgroupsConfig " + jgroupsConfig + " lists no protocols");
    }
    List<String> names = protocols.stream().map(ProtocolConfiguration::getProtocolName).toList();
    if (names.stream().noneMatch(n -> isProtocol(n, "GMS") || isProtocolClass(n, GMS.class))) {
      throw new IllegalArgumentException("jgroupsConfig " + jgroupsConfig + " has no pbcast.GMS: without it a node"
          + " never gets a view, so it would never have a ring; its protocols: " + names(protocols));
    }
    if (names.stream().noneMatch(n -> isProtocol(n, "MERGE3"))) {
      LOG.log(Level.WARNING, "jgroupsConfig {0} has no MERGE3: after a partition, the two sides never merge and"
          + " each keeps a ring of its own; its protocols: {1}", jgroupsConfig, names(protocols));
    }
    if (names.stream().noneMatch(n -> n.substring(n.lastIndexOf('.') + 1).startsWith("FD"))) {
      LOG.log(Level.WARNING, "jgroupsConfig {0} has no failure detector (FD_ALL3, FD_SOCK2, ...): a member that"
          + " crashes stays in the view, owning its keys, until someone notices otherwise; its protocols: {1}",
          jgroupsConfig, names(protocols));
    }
    boolean authToken = protocols.stream().anyMatch(p -> isProtocol(p.getProtocolName(), "AUTH") && usesSecret(p));
    if (authToken && names.stream().noneMatch(n -> isProtocolClass(n, Encrypt.class))) {
      LOG.log(Level.WARNING, "jgroupsConfig {0} checks joins with the shared secret (AUTH) but does not encrypt"
          + " (no {1}): every message travels in clear, and a join proof seen on the wire can be replayed from the"
          + " same address; secure-tcp.xml does both", jgroupsConfig, SharedSecretEncrypt.class.getSimpleName());
    }
  }

  /** A {@code ${name,other:default}} in a stack file's attribute. */
  private static final Pattern VARIABLE = Pattern.compile("\\$\\{([^}]*)}");

  /**
   * Fails naming the variable when a {@code ${...}} of the stack is set to an empty value, as a
   * system property or an environment variable (JGroups looks each name up in that order, the first
   * one set winning), and the attribute then comes out empty: JGroups takes the empty value as set,
   * drops the attribute, and the protocol falls back to its own default rather than the stack's (for
   * a transport's {@code bind_addr}, an address other hosts can reach; for TCPPING's
   * {@code initial_hosts}, none). A stack whose own default is empty is left alone, and so are the
   * attributes whose value a node setting replaces (the three flags).
   *
   * <p>Fails too when such a variable gives a duration (an attribute JGroups declares as a time in
   * milliseconds) as a bare number under {@link #SHORTEST_BARE_MILLIS}: JGroups would read
   * {@code RINGMASTER_FD_TIMEOUT=15} as 15 ms, and the node would either fail when it starts, with
   * a message naming neither the variable nor its value, or run with heartbeats a thousand times too
   * often. The stack file's own defaults are not checked.
   */
  static void checkVariables(String jgroupsConfig, boolean initialHostsSet, boolean bindAddressSet,
                             boolean bindPortSet) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols == null) {
      return;
    }
    for (int i = 0; i < protocols.size(); i++) {
      ProtocolConfiguration p = protocols.get(i);
      String protocol = p.getProtocolName();
      boolean tcpping = isProtocol(protocol, "TCPPING");
      for (Map.Entry<String, String> attribute : p.getProperties().entrySet()) {
        String name = attribute.getKey();
        String raw = attribute.getValue();
        if (raw == null || !raw.contains("${")
            || tcpping && name.startsWith("initial_hosts") && initialHostsSet
            || name.equals("bind_addr") && bindAddressSet && (i == 0 || isProtocol(protocol, "FD_SOCK2"))
            || name.equals("bind_port") && bindPortSet && i == 0) {
          continue;
        }
        String substituted = Util.substituteVariable(raw);
        if (substituted != null && !substituted.isEmpty()) { // JGroups keeps the attribute
          checkDuration(jgroupsConfig, protocol, name, raw, substituted);
          if (tcpping && name.equals("initial_hosts")) {
            checkVariableHosts(jgroupsConfig, raw, substituted);
          }
          continue;
        }
        List<String> empty = setVariables(raw).entrySet().stream().filter(v -> v.getValue().isEmpty())
            .map(Map.Entry::getKey).toList();
        if (!empty.isEmpty()) {
          throw new IllegalArgumentException(String.join(" and ", empty) + " is set but empty (" + protocol + "."
              + name + " in jgroupsConfig " + jgroupsConfig + "): JGroups would drop the attribute and use its own"
              + " default, not the stack's; unset it, or give it a value");
        }
      }
    }
  }

  /**
   * Fails naming the variable when TCPPING's {@code initial_hosts}, taken from one, has an entry
   * JGroups would misread: {@code host:port} (JGroups takes the whole entry for a host name, which
   * never resolves: it logs that at each discovery and the node starts a cluster of its own), a
   * bracket not closed at the entry's end, or a port that is not a number in 1..65535 (JGroups
   * would fail with a bare NumberFormatException). A host without a port ({@code db-1}, which
   * JGroups gives the transport's port) and IPv6 literals ({@code ::1[7800]}) pass.
   */
  private static void checkVariableHosts(String jgroupsConfig, String raw, String hosts) {
    Map<String, String> variables = setVariables(raw);
    if (variables.isEmpty()) {
      return; // the stack's own default
    }
    for (String entry : hosts.split("[,\\s]+")) {
      if (entry.isEmpty()) {
        continue;
      }
      int open = entry.indexOf('[');
      String host = open >= 0 ? entry.substring(0, open) : entry;
      String problem = null;
      if (open >= 0 && (entry.indexOf(']') != entry.length() - 1 || open == 0)) {
        problem = "must look like host[port] or host";
      } else if (open >= 0 && !validPort(entry.substring(open + 1, entry.length() - 1))) {
        problem = "has a port that is not a number in 1.." + Ringmaster.Builder.MAX_PORT;
      } else if (host.indexOf(':') >= 0 && host.indexOf(':') == host.lastIndexOf(':')) {
        String before = host.substring(0, host.indexOf(':'));
        String after = host.substring(host.indexOf(':') + 1);
        problem = validPort(after) ? "gives its port after a colon, which JGroups reads as part of the host name;"
            + " write " + (before.isEmpty() ? "host" : before) + "[" + after + "]" : "must look like host[port] or host";
      } else if (open < 0 && host.indexOf(']') >= 0) {
        problem = "must look like host[port] or host";
      }
      if (problem != null) {
        throw new IllegalArgumentException(String.join(" and ", variables.keySet()) + " (TCPPING.initial_hosts"
            + " in jgroupsConfig " + jgroupsConfig + "): entry \"" + entry + "\" " + problem);
      }
    }
  }

  /** Whether {@code port} is one, read as JGroups reads an {@code initial_hosts} port ({@code Integer.parseInt}). */
  private static boolean validPort(String port) {
    try {
      int p = Integer.parseInt(port);
      return p >= 1 && p <= Ringmaster.Builder.MAX_PORT;
    } catch (NumberFormatException notANumber) {
      return false;
    }
  }

  /**
   * The stack's {@code ${...}} variables that are set here, as " (the stack's variables set here:
   * system property ringmaster.merge.min=5s)", or "" if none is: JGroups' own message for a value
   * it refuses while it starts the stack ("interval needs to be smaller than timeout") names
   * neither. A value is shown only for a duration and for an address or port
   * ({@link #SHOWN_ATTRIBUTES}); any other variable is named without it, since it may fill a
   * password (a keystore's {@code store_password}, say).
   */
  static String variablesSet(String jgroupsConfig) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols == null) {
      return "";
    }
    Set<String> set = new LinkedHashSet<>();
    for (ProtocolConfiguration p : protocols) {
      for (Map.Entry<String, String> attribute : p.getProperties().entrySet()) {
        String raw = attribute.getValue();
        if (raw != null && raw.contains("${")) {
          boolean shown = SHOWN_ATTRIBUTES.matcher(attribute.getKey()).matches()
              || isTime(p.getProtocolName(), attribute.getKey());
          setVariables(raw).forEach((source, value) -> set.add(shown ? source + "=" + value : source));
        }
      }
    }
    return set.isEmpty() ? "" : " (the stack's variables set here: " + String.join(", ", set) + ")";
  }

  /** Attributes whose values the failures of a stack's start show: addresses, ports, hosts, a TTL. */
  private static final Pattern SHOWN_ATTRIBUTES =
      Pattern.compile("bind_addr|bind_port|port_range|initial_hosts|mcast_addr|mcast_port|ip_ttl");

  /**
   * A bare number of milliseconds below this, given by a variable for a duration, is refused as a
   * slip: {@code RINGMASTER_FD_TIMEOUT=15} meant 15 s. 0 (which disables some timers) and larger
   * numbers are taken as milliseconds, as JGroups reads them.
   */
  static final long SHORTEST_BARE_MILLIS = 100;

  /**
   * Fails naming the variable and its value when it gives {@code protocol.attribute}, a time in
   * milliseconds, as a bare number from 1 to {@link #SHORTEST_BARE_MILLIS} - 1 ({@link #checkVariables}).
   */
  private static void checkDuration(String jgroupsConfig, String protocol, String attribute, String raw,
                                    String substituted) {
    if (!substituted.trim().matches("[0-9]{1,18}")
        || timeUnit(protocol, attribute).filter(TimeUnit.MILLISECONDS::equals).isEmpty()) {
      return;
    }
    for (Map.Entry<String, String> variable : setVariables(raw).entrySet()) {
      String n = variable.getValue().trim();
      if (n.matches("[0-9]{1,18}") && Long.parseLong(n) > 0 && Long.parseLong(n) < SHORTEST_BARE_MILLIS) {
        throw new IllegalArgumentException(variable.getKey() + " is \"" + variable.getValue() + "\" (" + protocol + "."
            + attribute + " in jgroupsConfig " + jgroupsConfig + "), a duration without a unit, which JGroups"
            + " would read as " + n + " ms: give the unit, as " + n + "s or " + n + "ms");
      }
    }
  }

  /**
   * Whether JGroups declares {@code attribute} of the protocol named (short or qualified) a time
   * ({@link AttributeType#TIME}), on a field or a setter of the protocol's class or its superclasses.
   */
  static boolean isTime(String protocolName, String attribute) {
    return timeUnit(protocolName, attribute).isPresent();
  }

  /** The unit of {@code attribute} of the protocol named if JGroups declares it a time ({@link #isTime}). */
  private static Optional<TimeUnit> timeUnit(String protocolName, String attribute) {
    Class<?> type;
    try {
      type = Util.loadProtocolClass(protocolName.trim(), Stacks.class);
    } catch (Exception | LinkageError unknown) {
      return Optional.empty(); // JGroups refuses the stack when the node starts, naming the protocol
    }
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (isTime(f.getAnnotation(Property.class), f.getName(), attribute)) {
          return Optional.of(f.getAnnotation(Property.class).unit());
        }
      }
      for (Method m : c.getDeclaredMethods()) {
        if (isTime(m.getAnnotation(Property.class), Util.methodNameToAttributeName(m.getName()), attribute)) {
          return Optional.of(m.getAnnotation(Property.class).unit());
        }
      }
    }
    return Optional.empty();
  }

  private static boolean isTime(Property property, String implicitName, String attribute) {
    return property != null && property.type() == AttributeType.TIME
        && (property.name().isEmpty() ? implicitName : property.name()).equals(attribute);
  }

  /**
   * The variables of an attribute's {@code ${...}} that JGroups reads, the first one set of each
   * {@code ${...}}, as "system property x" or "environment variable X", with their values.
   */
  private static Map<String, String> setVariables(String attribute) {
    Map<String, String> set = new LinkedHashMap<>();
    Matcher m = VARIABLE.matcher(attribute);
    while (m.find()) {
      String spec = m.group(1);
      int colon = spec.indexOf(':');
      for (String variable : (colon >= 0 ? spec.substring(0, colon) : spec).split(",")) {
        String var = variable.trim();
        if (var.isEmpty() || var.contains("${")) {
          continue; // JGroups skips an empty name; a nested ${ is not named here
        }
        String value = System.getProperty(var);
        String source = "system property " + var;
        if (value == null) {
          value = System.getenv(var);
          source = "environment variable " + var;
        }
        if (value != null) {
          set.put(source, value);
          break; // the first one set is the one JGroups reads
        }
      }
    }
    return set;
  }

  /**
   * Fails naming both settings when {@code initialHosts} is set for a stack without TCPPING, which
   * would ignore it. A stack that cannot be read is reported by {@link #checkReadable}, which the
   * builder runs first.
   */
  static void checkInitialHostsApply(String jgroupsConfig, String initialHosts) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols != null && protocols.stream().map(ProtocolConfiguration::getProtocolName)
        .noneMatch(p -> isProtocol(p, "TCPPING"))) {
      throw new IllegalArgumentException("initialHosts is set (" + SettingChecks.shown(initialHosts)
          + "), but jgroupsConfig " + jgroupsConfig + " has no TCPPING to give them to; its protocols: "
          + names(protocols));
    }
  }

  /**
   * Fails naming the setting when {@code bindPort} or {@code bindAddress} is set for a stack whose
   * transport is {@code SHARED_LOOPBACK}, which binds no socket and would ignore it: an operator
   * who set a port expects the node to listen there. A stack that cannot be read is reported by
   * {@link #checkReadable}, which the builder runs first.
   *
   * @param setting the setting and its value, as {@code bindPort 7800}
   */
  static void checkBindApplies(String jgroupsConfig, String setting) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols != null && isProtocol(protocols.get(0).getProtocolName(), "SHARED_LOOPBACK")) {
      throw new IllegalArgumentException(setting + " is set, but jgroupsConfig " + jgroupsConfig + " has the"
          + " in-JVM transport SHARED_LOOPBACK, which binds no socket: remove it, or use a stack with a network"
          + " transport, such as ringmaster/jgroups/localhost-tcp.xml");
    }
  }

  /**
   * Fails naming both settings when {@code secret} is set for a stack with no protocol that uses
   * it (neither {@link SharedSecretEncrypt} nor AUTH with {@link SharedSecretAuthToken}): the node
   * would join unauthenticated and send in the clear while its operator believes otherwise. A
   * stack that cannot be read is reported by {@link #checkReadable}, which the builder runs first.
   */
  static void checkSecretApplies(String jgroupsConfig) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols != null && protocols.stream().noneMatch(Stacks::usesSecret)) {
      throw new IllegalArgumentException("secret is set, but jgroupsConfig " + jgroupsConfig + " has no protocol"
          + " that uses it (" + SharedSecretEncrypt.class.getName() + ", or AUTH with auth_class="
          + SharedSecretAuthToken.class.getName() + "; a " + SharedSecretEncrypt.class.getSimpleName()
          + " with keystore_name takes its key from the keystore), so the secret would secure nothing: use"
          + " secure-tcp.xml, or remove the secret; its protocols: " + names(protocols));
    }
  }

  /**
   * Fails naming the setting when the stack needs a shared secret ({@link #usesSecret}) and none is
   * set: not the {@code secret} setting (the caller's case), nor the system property, nor the
   * environment variable. Without this the node would fail only when it starts. Warns, the other
   * way round, when the system property or the environment variable gives a secret and the stack
   * uses none: whoever set it may believe that joins are checked and messages encrypted with it (a
   * warning, not a failure, since such a variable is often set for a whole host or image).
   */
  static void checkSecretAvailable(String jgroupsConfig) {
    List<ProtocolConfiguration> protocols = protocolsOrNull(jgroupsConfig);
    if (protocols == null) {
      return;
    }
    if (protocols.stream().anyMatch(Stacks::usesSecret)) {
      if (!SharedSecret.available()) {
        throw new IllegalArgumentException("jgroupsConfig " + jgroupsConfig + " needs a shared secret: set the"
            + " \"secret\" setting, the system property " + SharedSecret.PROPERTY + " or the environment variable "
            + SharedSecret.ENVIRONMENT);
      }
    } else {
      SharedSecret.source().ifPresent(source -> LOG.log(Level.WARNING, "{0} is set, but jgroupsConfig {1} does not"
          + " use the shared secret, so it neither checks joins with it nor encrypts with it (use secure-tcp.xml for"
          + " that), or unset it; its protocols: {2}", source, jgroupsConfig, names(protocols)));
    }
  }

  /**
   * Whether a protocol reads the shared secret: AUTH with {@link SharedSecretAuthToken}, or
   * {@link SharedSecretEncrypt} without a {@code keystore_name} (which takes its key from the
   * keystore instead).
   */
  private static boolean usesSecret(ProtocolConfiguration p) {
    String name = p.getProtocolName();
    if (isProtocol(name, "AUTH")) {
      String token = p.getProperties().get("auth_class");
      return token != null && isA(Util.substituteVariable(token), SharedSecretAuthToken.class);
    }
    String keystore = p.getProperties().get("keystore_name");
    String keystoreName = keystore == null ? null : Util.substituteVariable(keystore);
    return isA(name, SharedSecretEncrypt.class) && (keystoreName == null || keystoreName.isEmpty());
  }

  /** Whether a protocol name, short ({@code TCPPING}) or qualified, names the JGroups protocol {@code shortName}. */
  static boolean isProtocol(String name, String shortName) {
    return name.equals(shortName) || name.endsWith("." + shortName);
  }

  /** Whether a protocol of the stack, named as JGroups names them (short names too), is a {@code type}. */
  static boolean isProtocolClass(String protocolName, Class<?> type) {
    try {
      return type.isAssignableFrom(Util.loadProtocolClass(protocolName.trim(), Stacks.class));
    } catch (Exception | LinkageError notAProtocol) {
      return false;
    }
  }

  /** Whether the class named (a subclass included) is {@code type}; false for JGroups' short names. */
  private static boolean isA(String className, Class<?> type) {
    if (className == null) { // a ${variable} that is not set: JGroups refuses the stack when the node starts
      return false;
    }
    try {
      return type.isAssignableFrom(Class.forName(className.trim(), false, Stacks.class.getClassLoader()));
    } catch (ClassNotFoundException | LinkageError notAClass) {
      return false;
    }
  }

  /** The stack's protocols, top of the XML first. */
  private static List<ProtocolConfiguration> protocolsOf(String jgroupsConfig) throws Exception {
    try (InputStream in = open(jgroupsConfig)) {
      return ConfiguratorFactory.getStackConfigurator(in).getProtocolStack();
    }
  }

  /** The stack's protocols, top of the XML first, or null if it cannot be read. */
  private static List<ProtocolConfiguration> protocolsOrNull(String jgroupsConfig) {
    try {
      return protocolsOf(jgroupsConfig);
    } catch (Exception unreadable) {
      return null;
    }
  }

  private static String names(List<ProtocolConfiguration> protocols) {
    return String.join(", ", protocols.stream().map(ProtocolConfiguration::getProtocolName).toList());
  }

  /** The stack's XML: the file if there is one, else the classpath resource, else null. */
  private static InputStream open(String jgroupsConfig) throws IOException {
    Path file = Path.of(jgroupsConfig);
    return Files.isRegularFile(file) ? Files.newInputStream(file)
        : Stacks.class.getClassLoader().getResourceAsStream(jgroupsConfig);
  }

  /**
   * The name of the logger JGroups gives the node's channel, after its class ({@link JGroupsLogging}
   * gives it org.jgroups' level).
   */
  static String channelLoggerName() {
    return Channel.class.getName();
  }

  /** A channel that tells whether a protocol of its stack gave it an address generator when it was built. */
  private static final class Channel extends JChannel {
    Channel(ProtocolStackConfigurator stack) throws Exception {
      super(stack);
    }

    boolean hasAddressGenerators() {
      return address_generators != null && !address_generators.isEmpty();
    }
  }

  static JChannel create(RingmasterConfig config) throws Exception {
    ProtocolStackConfigurator stack;
    try (InputStream in = open(config.jgroupsConfig())) {
      if (in == null) {
        checkExists(config.jgroupsConfig());
      }
      stack = ConfiguratorFactory.getStackConfigurator(in);
    }
    configureBeforeInit(stack.getProtocolStack(), config);
    String hosts = initialHosts(stack.getProtocolStack());
    List<StackAddresses.Named> named = StackAddresses.named(stack.getProtocolStack());
    Channel channel;
    SharedSecret.forNextStack(config.secret());
    try {
      channel = new Channel(stack);
    } catch (IOException | RingmasterException notASetting) {
      throw notASetting; // an address no interface has, say: start() names the setting behind it
    } catch (IllegalArgumentException refused) {
      // A value JGroups refuses when it initializes the stack: its message names the attribute,
      // not where the value came from.
      String variables = variablesSet(config.jgroupsConfig());
      if (variables.isEmpty()) {
        throw refused;
      }
      throw new IllegalArgumentException("jgroupsConfig " + config.jgroupsConfig() + ": " + refused.getMessage()
          + variables, refused);
    } catch (Exception refused) {
      if (StartFailures.anyCause(refused, t -> t instanceof IOException)) {
        throw refused; // an address that does not resolve yet, an interface not up yet: may pass later
      }
      // Refused all the same, as another type: FD_ALL3's interval not below its timeout
      // (IllegalStateException), a value JGroups cannot convert (a plain Exception).
      throw new IllegalArgumentException("jgroupsConfig " + config.jgroupsConfig() + ": " + refused
          + variablesSet(config.jgroupsConfig()), refused);
    } finally {
      SharedSecret.forNextStack(Optional.empty());
    }
    try {
      if (channel.hasAddressGenerators()) {
        // JGroups would take the first generator's address and only copy this node's metadata into
        // it: no view would list the node by the address it knows, and start() would wait out its
        // startTimeout and blame it.
        throw new IllegalArgumentException("jgroupsConfig " + config.jgroupsConfig() + ": a protocol of the stack"
            + " makes the node's address (RELAY2 with enable_address_tagging, or RELAY3, say), which Ringmaster"
            + " does not support: it makes the address itself, carrying the node's id and ring parameters");
      }
      StackAddresses.refuseReplaced(channel, config, named);
      StackAddresses.refuseUnreachableFailureDetector(channel, config);
      configure(channel, config);
      warnIfOnlyLoopbackHosts(channel, config, hosts);
    } catch (Exception | Error e) {
      closeKeepingTheInterrupt(channel, config.nodeId());
      throw e;
    }
    return channel;
  }

  /**
   * Closes {@code channel} and returns once it is closed, keeping the calling thread's interrupt:
   * a flag set on entry, or an interrupt that comes while the channel closes, is set when this
   * returns. JGroups' own close swallows interrupts in some of its waits (its view handler's, its
   * timer's and its thread pool's catch {@code InterruptedException} and go on), so it runs on a
   * thread of its own ({@code ringmaster-close-<nodeId>-1}), with a clear flag, which this thread
   * waits for, through interrupts, until it has ended; if no thread can be started, it runs on
   * this one.
   */
  static void closeKeepingTheInterrupt(JChannel channel, String nodeId) {
    boolean interrupted = Thread.interrupted();
    try {
      AtomicReference<Throwable> failed = new AtomicReference<>();
      Runnable close = () -> {
        try {
          channel.close();
          stopLateSenders(channel);
        } catch (RuntimeException | Error e) {
          failed.set(e);
        }
      };
      Thread closer = null;
      try {
        closer = new Thread(close, "ringmaster-close-" + nodeId + "-1");
        closer.setDaemon(true);
        closer.start();
      } catch (RuntimeException | Error noThread) {
        closer = null;
        close.run(); // here, then
      }
      while (closer != null) {
        try {
          closer.join();
          closer = null;
        } catch (InterruptedException e) {
          interrupted = true; // the channel is closing: wait for it all the same
        }
      }
      Throwable failure = failed.get();
      if (failure instanceof Error error) {
        throw error;
      }
      if (failure != null) {
        throw (RuntimeException) failure;
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Stops the transport's bundler again, the channel closed. JGroups stops it before the
   * transport's thread pool: a message that pool handles in between (FD_SOCK2 suspecting a member
   * that closes at the same time, VERIFY_SUSPECT2 probing it) makes a per-destination bundler with
   * a sender thread per destination, as the shipped TCP stacks have, start a thread that nothing
   * would stop, and that is no daemon: the JVM would not exit.
   */
  private static void stopLateSenders(JChannel channel) {
    TP transport = channel.getProtocolStack().getTransport();
    if (transport != null && transport.getBundler() != null) {
      transport.getBundler().stop();
    }
  }

  /**
   * The settings a protocol reads while the stack is initialized, written into the stack's
   * configuration as if they were in the stack file. TCPPING's {@code initial_hosts}: it resolves
   * them then and, while a host does not resolve (a peer whose DNS name does not exist yet), again
   * at each discovery; it also probes each port at the transport's bind address (JGroups'
   * JGRP-2910), so that is set here too. A list handed to TCPPING after it was initialized would be
   * taken as it is, never resolved again.
   */
  private static void configureBeforeInit(List<ProtocolConfiguration> protocols, RingmasterConfig config)
      throws UnknownHostException {
    for (ProtocolConfiguration p : protocols) {
      if (config.initialHosts().isPresent() && isProtocol(p.getProtocolName(), "TCPPING")) {
        p.getProperties().put("initial_hosts", config.initialHosts().get());
        p.getProperties().remove("initial_hosts_file"); // TCPPING would read the file instead
      }
    }
    // TCPPING probes a host without [port] at the transport's port, read while it initializes.
    config.bindPort().ifPresent(port -> protocols.get(0).getProperties().put("bind_port", Integer.toString(port)));
    if (config.bindAddress().isPresent()) {
      // The transport is the stack file's first protocol. An address, not the name: JGroups reads
      // some names as keywords (site_local, match-...), and keeps only one family's addresses.
      String address = InetAddress.getByName(config.bindAddress().get()).getHostAddress();
      protocols.get(0).getProperties().put("bind_addr", address);
      StackAddresses.failureDetectorsAt(protocols, address);
    } else {
      StackAddresses.failureDetectorsFollowTheOverride(protocols);
    }
  }

  /** TCPPING's {@code initial_hosts} as JGroups reads them, or null: no TCPPING, or its hosts come from a file. */
  private static String initialHosts(List<ProtocolConfiguration> protocols) {
    for (ProtocolConfiguration p : protocols) {
      if (isProtocol(p.getProtocolName(), "TCPPING") && p.getProperties().get("initial_hosts_file") == null) {
        String hosts = p.getProperties().get("initial_hosts");
        return hosts == null ? null : Util.substituteVariable(hosts);
      }
    }
    return null;
  }

  /**
   * Warns when the node is bound to an address other hosts can reach but TCPPING's hosts are all
   * loopback addresses (a stack's {@code 127.0.0.1[7950]} left as it is while {@code bindAddress}
   * was set): the node then finds only the members on its own host, so each host forms a cluster
   * of its own, each owning every key. A node that lists only itself by its own address (the
   * first of several, which the others list) is not warned about.
   */
  private static void warnIfOnlyLoopbackHosts(JChannel channel, RingmasterConfig config, String hosts) {
    InetAddress bound = channel.getProtocolStack().getTransport().getBindAddress();
    if (!onlyLoopbackHosts(bound, hosts)) {
      return;
    }
    LOG.log(Level.WARNING, "{0}: stack {1} is bound to {2}, but TCPPING''s initial_hosts ({3}) are all on the loopback"
        + " interface, so this node finds only the members on this host and each host forms a cluster of its own;"
        + " set initialHosts (or ringmaster.initial_hosts, or RINGMASTER_INITIAL_HOSTS with secure-tcp.xml) to the"
        + " members'' addresses", config.nodeId(), config.jgroupsConfig(), bound.getHostAddress(), hosts);
  }

  /**
   * Whether a node bound to {@code bound} (null: the stack gives no address) would find only the
   * members on its own host through TCPPING's {@code hosts} (null: no TCPPING, or a hosts file):
   * it is bound to an address other hosts reach, and every host listed is a loopback address.
   */
  static boolean onlyLoopbackHosts(InetAddress bound, String hosts) {
    if (hosts == null || hosts.isBlank() || bound == null || bound.isLoopbackAddress() || bound.isAnyLocalAddress()) {
      return false;
    }
    for (String entry : hosts.split("[,\\s]+")) {
      int open = entry.indexOf('[');
      String host = (open >= 0 ? entry.substring(0, open) : entry).trim();
      if (!host.isEmpty() && !isLoopback(host)) {
        return false;
      }
    }
    return true;
  }

  /** Digits and dots that may be an IPv4 literal: one to four decimal numbers (checked below). */
  private static final Pattern IPV4_LIKE = Pattern.compile("[0-9]{1,10}(\\.[0-9]{1,10}){0,3}");

  /**
   * Whether a host of {@code initial_hosts} is a loopback address: {@code localhost}, or a literal
   * (IPv4 in any form the JDK, and so JGroups, reads without a lookup: {@code 127.0.0.1}, or
   * {@code 127.1}, whose last number fills the bytes left; or an IPv6 literal). Nothing is looked
   * up: a name, or digits and dots that make no address ({@code 999.1.1.1}, which
   * {@link InetAddress#getByName} would send to the resolver), count as not loopback.
   */
  static boolean isLoopback(String host) {
    if (host.equalsIgnoreCase("localhost")) {
      return true;
    }
    if (IPV4_LIKE.matcher(host).matches()) {
      String[] parts = host.split("\\.");
      long last = Long.parseLong(parts[parts.length - 1]);
      if (last >= 1L << (8 * (5 - parts.length))) {
        return false; // more than the bytes left
      }
      for (int i = 0; i < parts.length - 1; i++) {
        if (Long.parseLong(parts[i]) > 255) {
          return false;
        }
      }
      long firstByte = parts.length == 1 ? last >>> 24 : Long.parseLong(parts[0]);
      return firstByte == 127;
    }
    if (!host.matches("[0-9a-fA-F:]*:[0-9a-fA-F:.]*")) {
      return false; // a name, or digits and dots that make no address: not resolved here
    }
    try {
      return InetAddress.getByName(host).isLoopbackAddress(); // with a colon, a literal: no lookup
    } catch (UnknownHostException malformed) {
      return false;
    }
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
    // bindAddress and bindPort are in place already, written into the stack before it was
    // initialized (configureBeforeInit).
    InetAddress bound = transport.getBindAddress();
    if (stack.findProtocol(SharedSecretEncrypt.class) != null && bound != null && bound.isLoopbackAddress()) {
      // A stack meant for hosts others reach, left at its defaults: members on other hosts would
      // each start a cluster of their own, and nothing else would say why.
      LOG.log(Level.WARNING, "{0}: stack {1} is bound to {2}, so only members on this host can join; for a"
          + " cluster across hosts set bindAddress and initialHosts (or ringmaster.bind_addr and"
          + " ringmaster.initial_hosts, as system properties or as the environment variables RINGMASTER_BIND_ADDR"
          + " and RINGMASTER_INITIAL_HOSTS)", config.nodeId(), config.jgroupsConfig(), bound.getHostAddress());
    }
    if (transport instanceof UDP && bound != null) {
      reportMulticastInterface(config, bound);
    }
    if (config.initialHosts().isPresent() && stack.findProtocol(TCPPING.class) == null) {
      // The builder checks this first; a stack whose protocols resolve differently at start comes here.
      throw new IllegalArgumentException("initialHosts is set (\"" + config.initialHosts().get()
          + "\"), but jgroupsConfig " + config.jgroupsConfig() + " has no TCPPING");
    }
  }

  /**
   * Says where a multicast stack ({@code lan-udp.xml}) sends and listens, since its default
   * ({@code site_local,loopback}) picks an interface without saying which: a WARNING when that is
   * the loopback interface (no site-local address here, or one set so), where only this host's
   * members find each other and members on other hosts each start a cluster of their own; otherwise
   * an INFO line naming the interface, so that a bridge picked instead of the LAN shows in the log.
   */
  private static void reportMulticastInterface(RingmasterConfig config, InetAddress bound) {
    if (bound.isLoopbackAddress()) {
      LOG.log(Level.WARNING, "{0}: stack {1} multicasts on the loopback interface ({2}), so only members on this"
          + " host can join; for a cluster across hosts set bindAddress (or ringmaster.bind_addr) to this host''s"
          + " address on the LAN", config.nodeId(), config.jgroupsConfig(), bound.getHostAddress());
      return;
    }
    String name;
    try {
      NetworkInterface nic = NetworkInterface.getByInetAddress(bound);
      name = nic == null ? "no interface" : "interface " + nic.getName();
    } catch (SocketException unreadable) {
      name = "interface unknown: " + unreadable.getMessage();
    }
    LOG.log(Level.INFO, "{0}: stack {1} multicasts on {2} ({3}); set bindAddress (or ringmaster.bind_addr) to"
        + " choose another", config.nodeId(), config.jgroupsConfig(), bound.getHostAddress(), name);
  }

  /**
   * Checks the form of {@code host[port],host[port]}, failing with the setting and the bad entry. The
   * hosts are not resolved here: TCPPING resolves them when the node starts, and a host that does
   * not resolve yet is tried again at each discovery, as in a stack file.
   */
  static void checkHosts(String hosts) {
    if (hosts.isBlank()) { // no entry at all, rather than an empty one between commas
      throw new IllegalArgumentException("initialHosts is blank: " + SettingChecks.shown(hosts));
    }
    for (String entry : hosts.split(",", -1)) {
      String e = entry.trim();
      if (e.isEmpty()) {
        throw new IllegalArgumentException("initialHosts entry \"\" is empty (a comma at an end, or two in a row): "
            + SettingChecks.shown(hosts));
      }
      int open = e.indexOf('[');
      // JGroups splits the list at whitespace too, reads the port up to the first ']', and
      // substitutes ${...} in a stack's values.
      if (open <= 0 || e.indexOf(']') != e.length() - 1
          || e.chars().anyMatch(c -> Character.isWhitespace(c) || c == '$' || c == '{' || c == '}')) {
        throw new IllegalArgumentException("initialHosts entry must look like 127.0.0.1[7800]: "
            + SettingChecks.shown(e));
      }
      String port = e.substring(open + 1, e.length() - 1);
      if (!validPort(port)) {
        throw new IllegalArgumentException("initialHosts entry " + SettingChecks.shown(e) + ": the port must be a"
            + " number in 1.." + Ringmaster.Builder.MAX_PORT + ", not " + SettingChecks.shown(port));
      }
    }
  }
}
