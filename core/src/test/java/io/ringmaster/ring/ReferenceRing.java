package io.ringmaster.ring;

import com.google.common.hash.Hashing;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
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
  private final int virtualNodes;
  private final List<Member> members;

  ReferenceRing(int virtualNodes, List<Member> members) {
    this.virtualNodes = virtualNodes;
    this.members = List.copyOf(members);
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

  /** The checksum as the spec's section 7 spells it out, byte by byte. */
  long checksum() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      writeString(out, "ringmaster-ring");
      out.writeInt(1);
      out.writeInt(virtualNodes);
      out.writeInt(members.size());
      List<Member> inIdOrder = new ArrayList<>(members);
      inIdOrder.sort((a, b) -> Arrays.compareUnsigned(a.id().getBytes(StandardCharsets.UTF_8),
          b.id().getBytes(StandardCharsets.UTF_8)));
      for (Member m : inIdOrder) {
        writeString(out, m.id());
        out.writeLong(Double.doubleToLongBits(m.weight() == 0 ? 0.0 : m.weight()));
        writeString(out, m.zone());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Hashing.murmur3_128().hashBytes(bytes.toByteArray()).asLong();
  }

  private static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  int tokenCount() {
    return tokens.size();
  }

  List<Long> positions() {
    return tokens.stream().map(Token::position).toList();
  }
}
