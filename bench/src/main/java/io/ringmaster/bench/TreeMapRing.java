package io.ringmaster.bench;

import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The textbook consistent-hash ring, written here as a rival: a {@code TreeMap<Long, Member>} from
 * token position to member, looked up with {@code ceilingEntry} and wrapping to
 * {@code firstEntry}. Tokens are placed with the same function as {@link HashRing}
 * ({@code HashRing.position(id + "#" + i)}, {@code virtualNodes} per member, every member of
 * weight 1), so both rings own every key identically (up to 64-bit token collisions, where a
 * {@code put} keeps the last member instead of the lowest id).
 *
 * <p>Changes copy the map ({@code new TreeMap<>(sorted)} is linear), because the ring it rivals is
 * an immutable snapshot that readers use without a lock.
 */
final class TreeMapRing {
  private final TreeMap<Long, Member> tokens;
  private final int virtualNodes;

  TreeMapRing(Collection<Member> members, int virtualNodes) {
    this.tokens = new TreeMap<>();
    this.virtualNodes = virtualNodes;
    for (Member m : members) {
      addTokens(tokens, m, virtualNodes);
    }
  }

  private TreeMapRing(TreeMap<Long, Member> tokens, int virtualNodes) {
    this.tokens = tokens;
    this.virtualNodes = virtualNodes;
  }

  private static void addTokens(TreeMap<Long, Member> map, Member m, int virtualNodes) {
    for (int i = 0; i < virtualNodes; i++) {
      map.put(HashRing.position(m.id() + "#" + i), m);
    }
  }

  Member ownerOf(long position) {
    Map.Entry<Long, Member> e = tokens.ceilingEntry(position);
    if (e == null) {
      e = tokens.firstEntry();
    }
    return e.getValue();
  }

  Member ownerOf(String key) {
    return ownerOf(HashRing.position(key));
  }

  Member ownerOf(byte[] key) {
    return ownerOf(HashRing.position(key));
  }

  /** The first {@code n} distinct members clockwise from the key (no zones). */
  List<Member> owners(String key, int n) {
    long p = HashRing.position(key);
    List<Member> out = new ArrayList<>(n);
    collect(tokens.tailMap(p, true).values(), out, n);
    if (out.size() < n) {
      collect(tokens.headMap(p, false).values(), out, n);
    }
    return out;
  }

  private static void collect(Collection<Member> walk, List<Member> out, int n) {
    for (Member m : walk) {
      if (!out.contains(m)) {
        out.add(m);
        if (out.size() == n) {
          return;
        }
      }
    }
  }

  TreeMapRing with(Member member) {
    TreeMap<Long, Member> next = new TreeMap<>(tokens);
    addTokens(next, member, virtualNodes);
    return new TreeMapRing(next, virtualNodes);
  }

  TreeMapRing without(String memberId) {
    TreeMap<Long, Member> next = new TreeMap<>(tokens);
    for (int i = 0; i < virtualNodes; i++) {
      next.remove(HashRing.position(memberId + "#" + i));
    }
    return new TreeMapRing(next, virtualNodes);
  }

  int tokenCount() {
    return tokens.size();
  }
}
