package io.ringmaster.ring;

import com.google.common.hash.Hashing;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The ring specification read literally, with Guava's MurmurHash3 and no cleverness: a list of
 * tokens sorted by the spec's order and a linear search. Slow, obviously right, and independent of
 * the production code it checks.
 */
final class ReferenceRing {
  private record Token(long position, Member member, byte[] id, int index) {}

  private static final Comparator<Token> SPEC_ORDER = Comparator
      .comparingLong(Token::position)
      .thenComparing(Token::id, Arrays::compareUnsigned)
      .thenComparingInt(Token::index);

  private final List<Token> tokens = new ArrayList<>();

  ReferenceRing(int virtualNodes, List<Member> members) {
    for (Member m : members) {
      double x = virtualNodes * m.weight();
      long count = (long) Math.floor(x) + (x - Math.floor(x) >= 0.5 ? 1 : 0); // the spec's words, not Math.round
      byte[] id = m.id().getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < count; i++) {
        tokens.add(new Token(hash(m.id() + "#" + i), m, id, i));
      }
    }
    tokens.sort(SPEC_ORDER);
  }

  static long hash(String s) {
    return Hashing.murmur3_128().hashBytes(s.getBytes(StandardCharsets.UTF_8)).asLong();
  }

  List<Member> owners(String key, int n) {
    return ownersOfPosition(hash(key), n);
  }

  List<Member> ownersOfPosition(long p, int n) {
    int start = 0;
    while (start < tokens.size() && tokens.get(start).position() < p) {
      start++;
    }
    if (start == tokens.size()) {
      start = 0;
    }
    List<Member> taken = new ArrayList<>();
    Set<String> zones = new HashSet<>();
    for (int s = 0; s < tokens.size() && taken.size() < n; s++) {
      Member m = tokens.get((start + s) % tokens.size()).member();
      if (!taken.contains(m) && zones.add(m.zone())) {
        taken.add(m);
      }
    }
    for (int s = 0; s < tokens.size() && taken.size() < n; s++) {
      Member m = tokens.get((start + s) % tokens.size()).member();
      if (!taken.contains(m)) {
        taken.add(m);
      }
    }
    return taken;
  }

  int tokenCount() {
    return tokens.size();
  }

  List<Long> positions() {
    return tokens.stream().map(Token::position).toList();
  }
}
