package io.ringmaster;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jgroups.Address;
import org.jgroups.util.ExtendedUUID;
import org.jgroups.util.UUID;

/**
 * What a node tells the cluster about itself, carried in its JGroups address
 * ({@link ExtendedUUID}) so that every member reads the same metadata from the same view.
 * Keys are short because the address travels with every message; each value is at most 255 bytes.
 * A later {@link Ringmaster#PROTOCOL_VERSION} may add keys, and bytes after the parameters, but
 * must keep {@code rm.i}, {@code rm.w} and the parameters' first 12 bytes as they are: a member
 * whose metadata this build cannot read is left out of its ring and reported as refused (by the id
 * it announces), where one it reads is refused naming both versions, and its own start fails.
 */
record NodeMetadata(String id, double weight, String zone, int specVersion, int protocolVersion, int virtualNodes,
                    int replicas, String applicationVersion, String endpoint) {
  static final int MAX_VALUE_BYTES = 255;
  private static final String ID = "rm.i";
  private static final String WEIGHT = "rm.w";
  private static final String ZONE = "rm.z";
  private static final String PARAMS = "rm.p";
  private static final String ENDPOINT = "rm.e";
  private static final String APPLICATION_VERSION = "rm.a";

  static NodeMetadata of(RingmasterConfig c) {
    return new NodeMetadata(c.nodeId(), c.weight(), c.zone(), HashRing.SPEC_VERSION, Ringmaster.PROTOCOL_VERSION,
        c.virtualNodes(), c.replicas(), c.applicationVersion(), c.endpoint());
  }

  Member member() {
    return new Member(id, weight, zone);
  }

  ExtendedUUID newAddress() {
    ExtendedUUID address = ExtendedUUID.randomUUID(id);
    address.put(ID, id.getBytes(StandardCharsets.UTF_8));
    address.put(WEIGHT, ByteBuffer.allocate(8).putDouble(weight).array());
    address.put(ZONE, zone.getBytes(StandardCharsets.UTF_8));
    // The protocol version in the spec version's high 16 bits: builds from before it, which read
    // the whole int as the spec version, see another one (65,537 for spec 1, protocol 1) and refuse
    // this node as this build refuses them, both ways.
    address.put(PARAMS, ByteBuffer.allocate(12).putInt(specVersion | protocolVersion << 16).putInt(virtualNodes)
        .putInt(replicas).array());
    if (!applicationVersion.isEmpty()) { // absent reads as "": a node that sets none costs no bytes
      address.put(APPLICATION_VERSION, applicationVersion.getBytes(StandardCharsets.UTF_8));
    }
    if (!endpoint.isEmpty()) {
      address.put(ENDPOINT, endpoint.getBytes(StandardCharsets.UTF_8));
    }
    return address;
  }

  /** Whether a member's address carries Ringmaster metadata: checked without decoding it. */
  static boolean isRingmasterNode(Address address) {
    return address instanceof ExtendedUUID u && u.keyExists(ID) && u.keyExists(PARAMS);
  }

  /** The metadata of a member, or empty for a JGroups member that is not a Ringmaster node. */
  static Optional<NodeMetadata> from(Address address) {
    if (!isRingmasterNode(address)) {
      return Optional.empty();
    }
    ExtendedUUID u = (ExtendedUUID) address;
    try {
      ByteBuffer p = ByteBuffer.wrap(u.get(PARAMS));
      byte[] zone = u.get(ZONE);
      byte[] applicationVersion = u.get(APPLICATION_VERSION);
      byte[] endpoint = u.get(ENDPOINT);
      int versions = p.getInt();
      int specVersion = versions & 0xFFFF;
      int protocolVersion = versions >>> 16; // 0: a build from before the protocol version
      int virtualNodes = p.getInt();
      int replicas = p.getInt();
      NodeMetadata m = new NodeMetadata(utf8(u.get(ID)),
          ByteBuffer.wrap(u.get(WEIGHT)).getDouble(),
          zone == null ? "" : utf8(zone),
          specVersion, protocolVersion, virtualNodes, replicas,
          applicationVersion == null ? "" : utf8(applicationVersion),
          endpoint == null ? "" : utf8(endpoint));
      m.checkBuildable();
      return Optional.of(m);
    } catch (RuntimeException malformed) {
      // Not a member any ring could hold (an empty id, a NaN weight, no virtual nodes: a foreign
      // or broken peer): every member reads the same bytes the same way, so all leave it out alike,
      // where building a ring with it would fail on every member and freeze every ring.
      return Optional.empty();
    }
  }

  /**
   * A value as every writer sends it: UTF-8 of at most {@link #MAX_VALUE_BYTES} bytes. Other bytes
   * (a foreign or broken writer's) are refused rather than read with U+FFFD for each bad byte: that
   * would make an id of up to three times the bytes any member can announce, and one id of many
   * different values.
   */
  private static String utf8(byte[] bytes) {
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("a value that is not UTF-8: " + e, e);
    }
  }

  /** Throws if a ring could not be built with this member and these parameters. */
  private void checkBuildable() {
    Member member = member(); // checks the id, the weight and the zone
    if (virtualNodes < 1 || virtualNodes > HashRing.MAX_TOKENS_PER_MEMBER || replicas < 1
        || Member.tokenCount(virtualNodes, member.weight()) > HashRing.MAX_TOKENS_PER_MEMBER) {
      throw new IllegalArgumentException("parameters no ring can use: " + this);
    }
  }

  /** The parameters every member of a ring must share. */
  record RingParameters(int specVersion, int protocolVersion, int virtualNodes, int replicas,
                        String applicationVersion) {}

  RingParameters parameters() {
    return new RingParameters(specVersion, protocolVersion, virtualNodes, replicas, applicationVersion);
  }

  /** Each ring parameter that differs from {@code other}'s, with both values. Empty if they agree. */
  List<String> parameterDifferences(NodeMetadata other) {
    List<String> out = new ArrayList<>();
    if (virtualNodes != other.virtualNodes) {
      out.add("virtualNodes: " + virtualNodes + " on " + id + ", " + other.virtualNodes + " on " + other.id);
    }
    if (replicas != other.replicas) {
      out.add("replicas: " + replicas + " on " + id + ", " + other.replicas + " on " + other.id);
    }
    if (!applicationVersion.equals(other.applicationVersion)) {
      out.add("applicationVersion: \"" + applicationVersion + "\" on " + id + ", \"" + other.applicationVersion
          + "\" on " + other.id);
    }
    if (specVersion != other.specVersion) {
      out.add("ring spec version: " + specVersion + " on " + id + ", " + other.specVersion + " on " + other.id);
    }
    if (protocolVersion != other.protocolVersion) {
      out.add("membership protocol: " + protocolName(protocolVersion) + " on " + id + ", "
          + protocolName(other.protocolVersion) + " on " + other.id);
    }
    return out;
  }

  private static String protocolName(int version) {
    return version == 0 ? "0 (a build from before protocol versions)" : Integer.toString(version);
  }

  /** Fails with the setting's name if a value would not fit in the address. */
  static void checkFits(String setting, String value) {
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_VALUE_BYTES) {
      throw new IllegalArgumentException(setting + " is " + bytes + " bytes in UTF-8; at most "
          + MAX_VALUE_BYTES + " fit in the JGroups address: \"" + value.substring(0, value.offsetByCodePoints(0, 40))
          + "...\"");
    }
  }

  /**
   * The id a member announces, read alone (the rest of its metadata may be unreadable), or "?" for
   * none: JGroups reads a key sent with an empty value back as a key without one (null).
   */
  static String announcedId(Address a) {
    byte[] id = a instanceof ExtendedUUID u ? u.get(ID) : null;
    return id == null || id.length == 0 ? "?" : new String(id, StandardCharsets.UTF_8);
  }

  /** A member as its node id and JGroups UUID, which tells apart two members with one id. */
  static String describe(Address a) {
    return announcedId(a) + " ("
        + (a instanceof UUID u ? u.toStringLong() : String.valueOf(a)) + ")";
  }
}
