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
    JsonNode spec = vectors.get("ring");
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
      for (int n = 1; n <= 3; n++) {
        List<String> expected = new ArrayList<>();
        k.get("owners").get(n - 1).forEach(id -> expected.add(id.asText()));
        assertEquals(expected, ring.owners(key, n).stream().map(Member::id).toList(), key + " n=" + n);
        assertEquals(expected, reference.owners(key, n).stream().map(Member::id).toList(), key + " n=" + n);
      }
    }
  }
}
