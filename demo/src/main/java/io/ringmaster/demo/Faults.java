package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.ringmaster.Ringmaster;
import io.ringmaster.ring.Member;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.protocols.DISCARD;
import org.jgroups.protocols.TP;
import org.jgroups.stack.ProtocolStack;

/**
 * {@code POST /admin/split} and {@code /admin/heal}: this peer stops hearing the peers named, then
 * hears them again, through a JGroups {@code DISCARD} put above the transport of the node's channel
 * (put in at the first split, and left there: with no member to ignore it drops nothing). A peer drops what the others send it, and each of
 * them must drop what it sends: a real partition needs the call on both sides, which the launcher's
 * {@code split} makes. The peers are fixed by their addresses at the split: one that rejoins
 * meanwhile (a new address) is heard again. Only for trying partitions out on one machine: off
 * unless the peer was started with {@code --fault-injection}.
 */
final class Faults {
  /** The most bytes of a split's body read: far more than 20 ids take. */
  static final int MAX_BODY_BYTES = 64 * 1024;

  record SplitReply(String local, List<String> cutOffFrom) {}

  record HealReply(String local, List<String> healed) {}

  private final boolean enabled;
  private final Ringmaster node;
  /** The peers this one is cut off from, by id, with the address each had at the split; guarded by this. */
  private final Map<String, Address> cut = new LinkedHashMap<>();
  /** The DISCARD of the node's stack, once the first split put it in; guarded by this. */
  private DISCARD discard;

  private Faults(boolean enabled, Ringmaster node) {
    this.enabled = enabled;
    this.node = node;
  }

  /** Fault injection off: every request is refused with a 403. */
  static Faults off() {
    return new Faults(false, null);
  }

  /** For {@code node}, on if {@code enabled}. */
  static Faults of(boolean enabled, Ringmaster node) {
    return new Faults(enabled, node);
  }

  /**
   * Cuts this peer off from the peers whose ids {@code body} lists, {@code {"ids": [...]}}, each a
   * member of its current view other than itself.
   *
   * @throws HttpError 403 if fault injection is off; 400 for a body that is not such an object, an
   *                   empty list, this peer's own id or an id not in its view; 409 while a split is
   *                   in force
   */
  synchronized SplitReply split(String body) {
    requireEnabled();
    List<String> ids = ids(body);
    if (!cut.isEmpty()) {
      throw new HttpError(409, "already cut off from " + cut.keySet() + "; POST /admin/heal first");
    }
    String self = node.localMember().id();
    Map<String, Address> addresses = new LinkedHashMap<>();
    for (String id : ids) {
      if (id.equals(self)) {
        throw new HttpError(400, "a peer cannot be cut off from itself: " + Flags.quoted(id));
      }
      Optional<Address> address = node.addressOf(id);
      if (address.isEmpty()) {
        throw new HttpError(400, "no member " + Flags.quoted(id) + " in this peer's view; members: "
            + node.members().stream().map(Member::id).sorted().toList());
      }
      addresses.put(id, address.get());
    }
    discard().addIgnoredMembers(addresses.values().toArray(Address[]::new));
    cut.putAll(addresses);
    return new SplitReply(self, cutOffFrom());
  }

  /**
   * Hears every peer again; the sides merge within seconds.
   *
   * @throws HttpError 403 if fault injection is off
   */
  synchronized HealReply heal() {
    requireEnabled();
    List<String> healed = cutOffFrom();
    if (!cut.isEmpty()) {
      discard.resetIgnoredMembers(); // put in by the split that cut them off
      cut.clear();
    }
    return new HealReply(node.localMember().id(), healed);
  }

  /**
   * The node's DISCARD, put above its transport on first use (the shipped stacks have none).
   *
   * @throws HttpError 500 if the stack does not take it
   */
  private DISCARD discard() {
    if (discard == null) {
      JChannel channel = node.channel();
      DISCARD d = new DISCARD();
      d.setAddress(channel.getAddress());
      try {
        channel.getProtocolStack().insertProtocol(d, ProtocolStack.Position.ABOVE, TP.class);
        d.init();
        d.start();
      } catch (Exception e) {
        throw new HttpError(500, "cannot put JGroups' DISCARD into this peer's stack: " + e);
      }
      discard = d;
    }
    return discard;
  }

  /** The ids this peer is cut off from, sorted; empty unless a split is in force. */
  synchronized List<String> cutOffFrom() {
    return List.copyOf(new TreeSet<>(cut.keySet()));
  }

  /** @throws HttpError 403, naming the flag, if fault injection is off */
  void requireEnabled() {
    if (!enabled) {
      throw new HttpError(403, "fault injection is off: start the peer with --fault-injection to use"
          + " /admin/split and /admin/heal (only for trying partitions out on one machine)");
    }
  }

  /** The ids of {@code {"ids": ["peer-2", ...]}}: at least one, each a non-empty string, no other field. */
  static List<String> ids(String body) {
    JsonNode tree;
    try {
      tree = Json.tree(body);
    } catch (UncheckedIOException e) {
      throw new HttpError(400, "the body must be JSON, {\"ids\": [\"peer-2\", ...]}: " + Flags.quoted(body));
    }
    if (tree == null || !tree.isObject()) {
      throw new HttpError(400, "the body must be a JSON object, {\"ids\": [\"peer-2\", ...]}: " + Flags.quoted(body));
    }
    for (Iterator<String> names = tree.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!name.equals("ids")) {
        throw new HttpError(400, "unknown field " + Flags.quoted(name) + "; the body takes only \"ids\"");
      }
    }
    JsonNode ids = tree.path("ids");
    if (!ids.isArray() || ids.isEmpty()) {
      throw new HttpError(400, "\"ids\" must be a non-empty array of peer ids: " + Flags.quoted(body));
    }
    List<String> out = new ArrayList<>();
    for (JsonNode id : ids) {
      if (!id.isTextual() || id.asText().isEmpty()) {
        throw new HttpError(400, "each of \"ids\" must be a non-empty string: " + id);
      }
      if (!out.contains(id.asText())) {
        out.add(id.asText());
      }
    }
    return out;
  }
}
