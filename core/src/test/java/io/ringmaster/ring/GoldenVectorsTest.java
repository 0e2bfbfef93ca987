package io.ringmaster.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Checks the golden vectors in {@code docs/ring-spec.md} against this implementation and, for the
 * hashes and owners, against the literal reference ring built on Guava's MurmurHash3.
 */
class GoldenVectorsTest {
  private static JsonNode vectors;

  @BeforeAll
  static void readSpec() throws IOException {
    Path spec = Path.of(System.getProperty("basedir", "."), "..", "docs", "ring-spec.md");
    String text = Files.readString(spec);
    int begin = text.indexOf("```json", text.indexOf("<!-- vectors:begin -->")) + "```json".length();
    int end = text.indexOf("```", begin);
    vectors = new ObjectMapper().readTree(text.substring(begin, end));
  }

  @Test
  void hashes_matchTheSpecAndGuava() {
    for (JsonNode h : vectors.get("hashes")) {
      String input = h.get("input").asText();
      long expected = Long.parseLong(h.get("h1").asText());
      assertEquals(expected, HashRing.position(input), input);
      assertEquals(expected, ReferenceRing.hash(input), input);
      assertEquals(String.format("%016x", expected), h.get("hex").asText());
    }
  }

  @Test
  void firstTokens_matchTheSpec() {
    String member = vectors.get("tokens").get("member").asText();
    JsonNode first = vectors.get("tokens").get("first");
    for (int i = 0; i < first.size(); i++) {
      assertEquals(Long.parseLong(first.get(i).asText()), HashRing.SPEC_TOKENS.token(Member.of(member), i));
      assertEquals(Long.parseLong(first.get(i).asText()), ReferenceRing.hash(member + "#" + i), "token " + i);
    }
  }

  @Test
  void ringOwnersAndChecksum_matchTheSpec() {
    assertRing(vectors.get("ring"), 3);
  }

  /**
   * Rounding half up, and a product just below one half, weight 0, the empty zone, ids in UTF-8
   * order, the walk's second turn, lone surrogates.
   */
  @Test
  void edgeRingOwnersAndChecksum_matchTheSpec() {
    JsonNode spec = vectors.get("edgeRing");
    assertRing(spec, 6);
    HashRing ring = HashRing.builder().virtualNodes(16).add(new Member("bravo", 0.15625, "zone-b")).build();
    assertEquals(3, ring.tokenCount(), "16 x 0.15625 = 2.5 rounds up");
    JsonNode echo = spec.get("members").get(6);
    assertEquals("echo", echo.get("id").asText());
    double x = 16 * echo.get("weight").asDouble();
    assertEquals(Math.nextDown(0.5), x, "the largest double below one half");
    assertEquals(1.0, Math.floor(x + 0.5), "which floor(x + 0.5) rounds up: a port doing so fails tokenCount");
    assertEquals(0, HashRing.builder().virtualNodes(16).add(new Member("echo", echo.get("weight").asDouble(), ""))
        .build().tokenCount());
    JsonNode loneSurrogate = spec.get("keys").get(10);
    JsonNode questionMark = spec.get("keys").get(11);
    assertEquals("\uD800x", loneSurrogate.get("key").asText());
    assertEquals("?x", questionMark.get("key").asText());
    assertEquals(questionMark.get("owners"), loneSurrogate.get("owners"), "a lone surrogate hashes as ?");
  }

  /**
   * The ownership changes of section 6, as the spec lists them, from this implementation; and each
   * listed range checked against the literal reference ring at both its ends, with every position
   * where the reference sees a change (each token of either ring, and one past it) inside a listed
   * range of that kind: the vectors are what the spec's words give, not only what this code does.
   */
  @Test
  void diffs_matchTheSpec_andTheReferenceRing() {
    JsonNode spec = vectors.get("diffs");
    int v = spec.get("virtualNodes").asInt();
    for (JsonNode change : spec.get("changes")) {
      List<Member> before = members(change.get("before"));
      List<Member> after = members(change.get("after"));
      HashRing b = HashRing.builder().virtualNodes(v).addAll(before).build();
      HashRing a = HashRing.builder().virtualNodes(v).addAll(after).build();
      ReferenceRing rb = new ReferenceRing(v, before);
      ReferenceRing ra = new ReferenceRing(v, after);
      for (JsonNode d : change.get("diffs")) {
        String member = d.get("member").asText();
        int n = d.get("replicas").asInt();
        String what = change.get("what").asText() + ", " + member + ", n=" + n;
        RingDiff diff = RingDiff.compute(b, a, member, n);
        assertEquals(listed(d.get("gained"), "sources", "role", null), diff.gained().stream()
            .map(g -> entry(g.range(), ids(g.sources()), g.role().name(), null)).toList(), what + ": gained");
        assertEquals(listed(d.get("lost"), "destinations", "role", null), diff.lost().stream()
            .map(l -> entry(l.range(), ids(l.destinations()), l.role().name(), null)).toList(), what + ": lost");
        assertEquals(listed(d.get("roleChanges"), null, "before", "after"), diff.roleChanges().stream()
            .map(r -> entry(r.range(), List.of(), r.before().name(), r.after().name())).toList(), what + ": roles");

        // The same, from the reference ring and the words of section 6.
        List<Long> probes = new ArrayList<>();
        for (long t : rb.positions()) {
          probes.add(t);
          probes.add(t + 1);
        }
        for (long t : ra.positions()) {
          probes.add(t);
          probes.add(t + 1);
        }
        for (long p : probes) {
          List<String> ob = rb.tokenCount() == 0 ? List.of() : ids(rb.ownersOfPosition(p, n));
          List<String> oa = ra.tokenCount() == 0 ? List.of() : ids(ra.ownersOfPosition(p, n));
          int ib = ob.indexOf(member);
          int ia = oa.indexOf(member);
          String expected = ib < 0 && ia >= 0 ? "gained " + ob + " " + role(ia)
              : ib >= 0 && ia < 0 ? "lost " + oa + " " + role(ib)
              : ib >= 0 && (ib == 0) != (ia == 0) ? "role " + role(ib) + " " + role(ia) : "none";
          assertEquals(expected, at(d, p), what + " at " + p);
        }
      }
    }
  }

  private static String role(int index) {
    return index == 0 ? "PRIMARY" : "BACKUP";
  }

  /** What the vector lists at position {@code p}, in the words of the reference check. */
  private static String at(JsonNode d, long p) {
    for (JsonNode g : d.get("gained")) {
      if (range(g).contains(p)) {
        return "gained " + texts(g.get("sources")) + " " + g.get("role").asText();
      }
    }
    for (JsonNode l : d.get("lost")) {
      if (range(l).contains(p)) {
        return "lost " + texts(l.get("destinations")) + " " + l.get("role").asText();
      }
    }
    for (JsonNode r : d.get("roleChanges")) {
      if (range(r).contains(p)) {
        return "role " + r.get("before").asText() + " " + r.get("after").asText();
      }
    }
    return "none";
  }

  private static KeyRange range(JsonNode entry) {
    JsonNode r = entry.get("range");
    return new KeyRange(Long.parseLong(r.get(0).asText()), Long.parseLong(r.get(1).asText()));
  }

  /** A listed range: a whole circle only as such, since its (x, x] may name any x. */
  private static List<Object> entry(KeyRange r, List<String> members, String role, String role2) {
    Object range = r.start() == r.end() ? "whole circle" : List.of(r.start(), r.end());
    return List.of(range, members, role, String.valueOf(role2));
  }

  private static List<List<Object>> listed(JsonNode entries, String membersField, String roleField,
                                           String role2Field) {
    List<List<Object>> out = new ArrayList<>();
    for (JsonNode e : entries) {
      out.add(entry(range(e), membersField == null ? List.of() : texts(e.get(membersField)),
          e.get(roleField).asText(), role2Field == null ? null : e.get(role2Field).asText()));
    }
    return out;
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(x -> out.add(x.asText()));
    return out;
  }

  private static List<String> ids(List<Member> members) {
    return members.stream().map(Member::id).toList();
  }

  private static List<Member> members(JsonNode list) {
    List<Member> out = new ArrayList<>();
    for (JsonNode m : list) {
      out.add(new Member(m.get("id").asText(), m.get("weight").asDouble(), m.get("zone").asText()));
    }
    return out;
  }

  private static void assertRing(JsonNode spec, int maxN) {
    int v = spec.get("virtualNodes").asInt();
    List<Member> members = new ArrayList<>();
    for (JsonNode m : spec.get("members")) {
      members.add(new Member(m.get("id").asText(), m.get("weight").asDouble(), m.get("zone").asText()));
    }
    HashRing ring = HashRing.builder().virtualNodes(v).addAll(members).build();
    ReferenceRing reference = new ReferenceRing(v, members);
    assertEquals(spec.get("tokenCount").asInt(), ring.tokenCount());
    assertEquals(spec.get("tokenCount").asInt(), reference.tokenCount());
    assertEquals(Long.parseLong(spec.get("checksum").asText()), ring.checksum());
    assertEquals(Long.parseLong(spec.get("checksum").asText()), reference.checksum(), "section 7, byte by byte");
    assertEquals(HashRing.SPEC_VERSION, vectors.get("specVersion").asInt());
    for (JsonNode k : spec.get("keys")) {
      String key = k.get("key").asText();
      assertEquals(maxN, k.get("owners").size(), key);
      for (int n = 1; n <= maxN; n++) {
        List<String> expected = new ArrayList<>();
        k.get("owners").get(n - 1).forEach(id -> expected.add(id.asText()));
        assertEquals(expected, ring.owners(key, n).stream().map(Member::id).toList(), key + " n=" + n);
        assertEquals(expected, reference.owners(key, n).stream().map(Member::id).toList(), key + " n=" + n);
      }
    }
  }
}
