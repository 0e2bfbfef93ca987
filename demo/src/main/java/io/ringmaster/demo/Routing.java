package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * Which ring this peer routes by: the node's current ring, or, once it has started to leave, the
 * ring without it, so that writes reaching a leaving peer after it handed its data off go on to
 * the new owners instead of staying behind.
 */
final class Routing {
  private final Ringmaster node;
  private final String self;
  private final int replicas;
  private volatile HashRing leavingRing;

  Routing(Ringmaster node) {
    this.node = node;
    this.self = node.localMember().id();
    this.replicas = node.config().replicas();
  }

  String self() {
    return self;
  }

  int replicas() {
    return replicas;
  }

  HashRing ring() {
    HashRing leaving = leavingRing;
    return leaving != null ? leaving : node.ring();
  }

  /**
   * From now on route by {@code without}, the ring this peer leaves behind. The caller scans the
   * store next; a write stores and then reads the ring ({@link #storedThenRoute()}). The fences on
   * both sides make sure at least one of them sees the other: the scan sees the write, or the
   * write sees the leaving ring and is forwarded.
   */
  void startLeaving(HashRing without) {
    this.leavingRing = without;
    VarHandle.fullFence();
  }

  /** Called after storing an entry and before reading the ring to route it: see {@link #startLeaving}. */
  static void storedThenRoute() {
    VarHandle.fullFence();
  }

  boolean isLeaving() {
    return leavingRing != null;
  }

  /** The key's owners' ids, primary first; empty if the ring has no tokens. */
  List<String> owners(String key) {
    return owners(ring(), key);
  }

  List<String> owners(HashRing ring, String key) {
    if (ring.isEmpty()) {
      return List.of();
    }
    List<Member> owners = ring.owners(key, replicas);
    List<String> ids = new ArrayList<>(owners.size());
    for (Member m : owners) {
      ids.add(m.id());
    }
    return ids;
  }

  boolean isOwner(String key) {
    return owners(key).contains(self);
  }

  /** Whether a member is in the ring this peer routes by, hence worth sending to. */
  boolean isLive(String memberId) {
    return ring().contains(memberId);
  }
}
