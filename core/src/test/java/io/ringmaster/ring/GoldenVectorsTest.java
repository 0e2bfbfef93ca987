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
