package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.node.TextNode;
import io.ringmaster.ring.HashRing;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The settings' promise, checked on a few thousand values drawn with a fixed seed: a wrong setting,
 * in a JSON file or on the builder, fails with an {@link IllegalArgumentException} (never a
 * parser's or the JDK's exception on its own) whose message names the setting and shows the value,
 * cut for a long one, never the secret's; a file refused leaves the builder as it was; nothing is
 * started; and values at the edges of each range are taken. {@code RefusalAndConfigTest} has the
 * documented examples one by one, and their exact messages.
 */
class SettingsFuzzTest {
  private static final long SEED = 0x5e771465L;

  /**
   * The longest message a refusal gives: a value is shown cut ({@link SettingChecks#shown}), so a
   * megabyte typed into a setting is not repeated into the log.
   */
  private static final int LONGEST_MESSAGE = 2_000;

  /** How many characters of a long value a message must show at least. */
  private static final int SHOWN_PREFIX = 30;

  private enum Kind { TEXT, NUMBER, INTEGER, MILLIS }

  /** A key of the config file, the builder's name for it, and the range of a number. */
  private record Setting(String key, String builderName, Kind kind, long min, long max) {
    static Setting text(String key) {
      return new Setting(key, key, Kind.TEXT, 0, 0);
    }
  }

  private static final List<Setting> SETTINGS = List.of(
      Setting.text("clusterName"), Setting.text("nodeId"), Setting.text("zone"), Setting.text("applicationVersion"),
      Setting.text("jgroupsConfig"), Setting.text("endpoint"), Setting.text("bindAddress"),
      Setting.text("initialHosts"), Setting.text("secret"),
      new Setting("weight", "weight", Kind.NUMBER, 0, 0),
      new Setting("virtualNodes", "virtualNodes", Kind.INTEGER, 1, HashRing.MAX_TOKENS_PER_MEMBER),
      new Setting("replicas", "replicas", Kind.INTEGER, 1, 255),
      new Setting("bindPort", "bindPort", Kind.INTEGER, 0, 65_535),
      new Setting("leaveTimeoutMillis", "leaveTimeout", Kind.MILLIS, 0, 86_400_000),
      new Setting("gossipIntervalMillis", "gossipInterval", Kind.MILLIS, 1, 86_400_000),
      new Setting("startTimeoutMillis", "startTimeout", Kind.MILLIS, 1, 86_400_000));

  /** What a character slipped into a file may become. */
  private static final String SLIPS = " \"{}[],:0a-.\\e\t\n";

  /**
   * The settings whose values are checked at build (whether the stack can be read, the weight's
   * tokens with virtualNodes); every other is refused as the file is read, or the setter called.
   */
  private static final Set<String> BUILD_CHECKED = Set.of("jgroupsConfig", "weight");

  /** A bad value for a setting: as written in the file, and the text of a JSON string. */
  private record Bad(Setting setting, String literal, String text) {}

  /** Every key a file may set is fuzzed here: a key added later without a case here fails this. */
  @Test
  void theFuzzedSettings_areEveryKeyAFileMaySet() {
    assertEquals(new TreeSet<>(Json.KNOWN),
        SETTINGS.stream().map(Setting::key).collect(Collectors.toCollection(TreeSet::new)));
  }

  /**
   * Each setting given a value of the wrong JSON type, out of its range, or a string the setter
   * refuses: the file fails naming the setting and showing the value (its first characters, for a
   * long one; never the secret), and a builder it was read into keeps what it had.
   */
  @Test
  void configFile_everyBadValueOfEverySetting_failsNamingTheSettingAndTheValue_andKeepsTheBuilder(
      @TempDir Path dir) throws Exception {
    Random random = new Random(SEED);
    List<Bad> cases = new ArrayList<>();
    for (Setting s : SETTINGS) {
      wrongTypes(s, random, cases);
      switch (s.kind()) {
        case TEXT -> badTexts(s, random, dir, cases);
        case NUMBER -> badWeights(s, random, cases);
        case INTEGER, MILLIS -> badWholeNumbers(s, random, cases);
      }
    }
    List<String> problems = new ArrayList<>();
    Path file = dir.resolve("node.json");
    startsNoThread(() -> {
      for (Bad bad : cases) {
        String other = bad.setting().key().equals("nodeId") ? "" : "\"nodeId\": \"from-file\", ";
        Files.writeString(file, "{" + other + "\"" + bad.setting().key() + "\": " + bad.literal() + "}");
        checkRefused(file, bad, problems);
      }
    });
    assertTrue(cases.size() > 1_500, "cases: " + cases.size());
    assertNoProblems(problems, cases.size());
  }

  /**
   * Files that are no config at all, or not JSON: empty, another JSON type, a key given twice, text
   * after the object, NaN and comments, nesting past the parser's limit, non-UTF-8 bytes, every
   * prefix of a whole file and thousands of one-character slips in it. Each is either a file the
   * builder takes, or fails naming the file, never showing the secret it sets, and keeping the
   * builder as it was.
   */
  @Test
  void configFile_malformed_failsNamingTheFile_neverTheSecret_andKeepsTheBuilder(@TempDir Path dir) throws Exception {
    Random random = new Random(SEED + 1);
    String secret = "S3cr" + randomAlnum(random, 20);
    String whole = validFile(secret);
    List<byte[]> refused = new ArrayList<>();
    for (String text : List.of("", " ", "\n", "null", "[]", "\"a\"", "1", "true", "\uFEFF", "\uFEFF\uFEFF" + whole,
        whole + "x", whole + "}", whole + "{}", whole + ",", whole + " // end", whole + "\u0000",
        "{\"nodeId\": NaN}", "{\"weight\": NaN, \"nodeId\": \"a\"}", "{\"weight\": Infinity, \"nodeId\": \"a\"}",
        "{\"weight\": -Infinity, \"nodeId\": \"a\"}", "{\"replicas\": 01, \"nodeId\": \"a\"}",
        "{\"replicas\": 0x10, \"nodeId\": \"a\"}", "{\"replicas\": +1, \"nodeId\": \"a\"}",
        "{\"weight\": .5, \"nodeId\": \"a\"}", "{\"weight\": 1., \"nodeId\": \"a\"}",
        "{'nodeId': 'a'}", "{nodeId: \"a\"}", "/* c */ {\"nodeId\": \"a\"}", "{\"nodeId\": \"a\",}",
        "{\"nodeId\": \"a\" \"zone\": \"z\"}", "{\"nodeId\": \"a\"", "{\"nodeId\": \"a\\q\"}",
        "{\"nodeId\": \"a\nb\"}", "{\"nodeId\": \"" + "[".repeat(1001) + "\"}",
        "{\"nodeId\": \"a\", \"zone\": " + "[".repeat(1001) + "]".repeat(1001) + "}",
        "{\"nodeId\": \"a\", \"weight\": " + "9".repeat(1001) + "}")) {
      refused.add(text.getBytes(StandardCharsets.UTF_8));
    }
    // Each key twice, with the secret among the other settings or not.
    for (Setting s : SETTINGS) {
      String twice = "\"" + s.key() + "\": " + goodLiteral(s, secret) + ", ";
      refused.add(("{" + twice + twice + "\"nodeId\": \"a\"}").getBytes(StandardCharsets.UTF_8));
      refused.add(("{\"secret\": \"" + secret + "\", " + twice + twice.replace(secret, "x" + secret)
          + "\"nodeId\": \"a\"}").getBytes(StandardCharsets.UTF_8));
    }
    // Every prefix of a whole file: none is a JSON object.
    for (int end = 0; end < whole.length(); end++) {
      refused.add(whole.substring(0, end).getBytes(StandardCharsets.UTF_8));
    }
    // Bytes that are not UTF-8, and UTF-16 with its byte order mark.
    for (int i = 0; i < 200; i++) {
      byte[] bytes = whole.getBytes(StandardCharsets.UTF_8);
      bytes[random.nextInt(bytes.length)] = (byte) (0x80 + random.nextInt(0x80)); // a lone continuation or lead byte
      if (!new String(bytes, StandardCharsets.UTF_8).contains("\uFFFD")) {
        continue; // decoded after all: two bytes that happen to be a character
      }
      refused.add(bytes);
    }
    refused.add(("\uFEFF" + whole).getBytes(StandardCharsets.UTF_16));
    refused.add(whole.getBytes(StandardCharsets.UTF_16LE));
    List<String> problems = new ArrayList<>();
    int[] count = {0};
    startsNoThread(() -> {
      for (byte[] bytes : refused) {
        Path file = Files.write(dir.resolve("bad-" + count[0]++ + ".json"), bytes);
        checkFileRefused(file, secret, true, problems);
      }
      // One-character slips: a character dropped, doubled or replaced. A slip can still be a good
      // file (a digit changed); otherwise it fails as any other.
      for (int i = 0; i < 200; i++) {
        StringBuilder slip = new StringBuilder(whole);
        int at = random.nextInt(whole.length());
        switch (random.nextInt(3)) {
          case 0 -> slip.deleteCharAt(at);
          case 1 -> slip.insert(at, whole.charAt(at));
          default -> slip.setCharAt(at, SLIPS.charAt(random.nextInt(SLIPS.length())));
        }
        Path file = Files.writeString(dir.resolve("slip-" + count[0]++ + ".json"), slip);
        checkFileRefused(file, secret, false, problems);
      }
      // A directory, a missing file.
      checkFileRefused(Files.createDirectory(dir.resolve("a-directory.json")), secret, true, problems);
      checkFileRefused(dir.resolve("no-such-file.json"), secret, true, problems);
    });
    assertNoProblems(problems, count[0]);
  }

  /**
   * A key misspelled (a letter dropped, doubled, swapped or in the other case, a space or an
   * invisible character added): the file fails naming the key, shown as for a value, with the
   * list of the settings there are; its value, which may be a secret, is not shown.
   */
  @Test
  void configFile_misspelledKeys_failNamingTheKey_notItsValue(@TempDir Path dir) throws Exception {
    Random random = new Random(SEED + 2);
    Set<String> keys = new HashSet<>();
    for (String key : Json.KNOWN) {
      for (int i = 0; i < key.length(); i++) {
        keys.add(key.substring(0, i) + key.substring(i + 1));
        keys.add(key.substring(0, i) + key.charAt(i) + key.substring(i));
        if (i + 1 < key.length()) {
          keys.add(key.substring(0, i) + key.charAt(i + 1) + key.charAt(i) + key.substring(i + 2));
        }
        char c = key.charAt(i);
        keys.add(key.substring(0, i) + (Character.isUpperCase(c) ? Character.toLowerCase(c) : Character.toUpperCase(c))
            + key.substring(i + 1));
      }
      for (String around : List.of(" ", "\t", "\u00a0", "\u200b", "\uFEFF", "\u0000", "\n", "\ud800", "\u00e9")) {
        keys.add(around + key);
        keys.add(key + around);
      }
    }
    keys.add("");
    keys.add("x".repeat(20_000));
    keys.removeAll(Json.KNOWN);
    List<String> problems = new ArrayList<>();
    Path file = dir.resolve("node.json");
    startsNoThread(() -> {
      for (String key : new TreeSet<>(keys)) {
        String value = "V" + randomAlnum(random, 15);
        Files.writeString(file,
            "{\"nodeId\": \"a\", \"" + jsonEscaped(key, random.nextBoolean()) + "\": \"" + value + "\"}");
        Ringmaster.Builder builder = keeper();
        RingmasterConfig before = KEPT;
        Throwable t = thrown(() -> builder.config(file));
        String where = "key " + SettingChecks.shown(key);
        if (!checkType(t, where, problems)) {
          continue;
        }
        String m = t.getMessage();
        if (key.contains("\ud800") && m.startsWith("config file " + file + " is not valid JSON (line 1, column ")) {
          continue; // the parser refuses an unpaired surrogate in a name, where it takes one in a value
        }
        if (!m.contains("unknown setting ") || !m.contains("known settings: [applicationVersion, ")
            || !m.contains(file.toString())) {
          problems.add(where + ": not named as an unknown setting in the file: " + cut(m));
        } else if (!shows(m, key)) {
          problems.add(where + ": the key is not shown: " + cut(m));
        }
        if (m.contains(value)) {
          problems.add(where + ": its value is shown: " + cut(m));
        }
        checkLength(m, where, problems);
        checkKept(builder, before, where, problems);
      }
    });
    assertNoProblems(problems, keys.size());
  }

  /**
   * The builder's setters given null, empty, blank, a space or control character, an unpaired
   * surrogate, or too many characters, and numbers out of their ranges: each fails in the setter
   * (or, for the stack, at build) naming the setting first and showing the value, never the
   * secret; the builder keeps what it had.
   */
  @Test
  void builder_badValues_failNamingTheSettingAndTheValue_andKeepWhatItHad(@TempDir Path dir) throws Exception {
    Random random = new Random(SEED + 3);
    record Call(String setting, String value, Consumer<Ringmaster.Builder> set, List<String> shown) {}
    List<Call> calls = new ArrayList<>();
    for (String setting : List.of("clusterName", "nodeId", "zone", "applicationVersion", "endpoint", "jgroupsConfig",
        "initialHosts", "bindAddress", "secret")) {
      List<Bad> bad = new ArrayList<>();
      badTexts(Setting.text(setting), random, dir, bad);
      for (Bad b : bad) {
        calls.add(new Call(setting, b.text(), builder -> textSetter(builder, setting, b.text()), shownForms(b.text())));
      }
    }
    for (String setting : List.of("nodeId", "clusterName", "jgroupsConfig", "initialHosts", "bindAddress", "secret",
        "zone", "applicationVersion", "endpoint")) {
      calls.add(new Call(setting, null, builder -> textSetter(builder, setting, null), List.of("null")));
    }
    for (int i = 0; i < 50; i++) {
      int below = random.nextBoolean() ? -random.nextInt(1_000) : Integer.MIN_VALUE + random.nextInt(1_000);
      int above = random.nextBoolean() ? 65_536 + random.nextInt(1_000_000) : Integer.MAX_VALUE - random.nextInt(1_000);
      calls.add(new Call("replicas", "" + (below), b -> b.replicas(below), List.of("" + below)));
      calls.add(new Call("replicas", "" + above, b -> b.replicas(above), List.of("" + above)));
      calls.add(new Call("virtualNodes", "" + below, b -> b.virtualNodes(below), List.of("" + below)));
      int tooMany = HashRing.MAX_TOKENS_PER_MEMBER + 1
          + random.nextInt(Integer.MAX_VALUE - HashRing.MAX_TOKENS_PER_MEMBER);
      calls.add(new Call("virtualNodes", "" + tooMany, b -> b.virtualNodes(tooMany), List.of("" + tooMany)));
      calls.add(new Call("bindPort", "" + (below - 1), b -> b.bindPort(below - 1), List.of("" + (below - 1))));
      calls.add(new Call("bindPort", "" + above, b -> b.bindPort(above), List.of("" + above)));
      double negative = -Math.abs(random.nextGaussian()) * Math.pow(10, random.nextInt(40) - 20) - Double.MIN_VALUE;
      calls.add(new Call("weight", "" + negative, b -> b.weight(negative), List.of("" + negative)));
      long outside = random.nextBoolean() ? -1 - random.nextInt(Integer.MAX_VALUE)
          : 86_400_001 + (long) (random.nextDouble() * (Long.MAX_VALUE - 86_400_001));
      Duration d = Duration.ofMillis(outside);
      for (String setting : List.of("leaveTimeout", "gossipInterval", "startTimeout")) {
        calls.add(new Call(setting, d.toString(), b -> durationSetter(b, setting, d), List.of(outside + " ms")));
      }
      Duration nanos = Duration.ofNanos(1 + random.nextInt(999_999));
      for (String setting : List.of("gossipInterval", "startTimeout")) {
        calls.add(new Call(setting, nanos.toString(), b -> durationSetter(b, setting, nanos),
            List.of(nanos.toString())));
      }
      Duration huge = Duration.ofSeconds(Long.MAX_VALUE / 1_000 + 1 + random.nextInt(1_000_000));
      calls.add(new Call("startTimeout", huge.toString(), b -> b.startTimeout(huge), List.of(huge.toString())));
    }
    for (double w : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -Double.MIN_VALUE}) {
      calls.add(new Call("weight", "" + w, b -> b.weight(w), List.of("" + w)));
    }
    for (String setting : List.of("leaveTimeout", "gossipInterval", "startTimeout")) {
      calls.add(new Call(setting, null, b -> durationSetter(b, setting, null), List.of("null")));
    }
    List<String> problems = new ArrayList<>();
    startsNoThread(() -> {
      for (Call call : calls) {
        Ringmaster.Builder builder = keeper();
        RingmasterConfig before = KEPT;
        String where = call.setting() + "(" + (call.value() == null ? "null" : SettingChecks.shown(call.value())) + ")";
        Throwable t = thrown(() -> call.set().accept(builder));
        boolean inSetter = t != null;
        if (t == null) {
          t = thrown(builder::buildConfig);
        }
        if (!checkType(t, where, problems)) {
          continue;
        }
        String m = t.getMessage();
        if (!inSetter && !BUILD_CHECKED.contains(call.setting())) {
          problems.add(where + ": refused only at build: " + cut(m));
        }
        if (!m.startsWith(call.setting())) {
          problems.add(where + ": does not start with the setting: " + cut(m));
        }
        if (call.setting().equals("secret")) {
          if (call.value() != null && call.value().strip().length() >= 6 && m.contains(call.value().strip())) {
            problems.add(where + ": shows the secret: " + cut(m));
          }
        } else if (call.shown().stream().noneMatch(m::contains)) {
          problems.add(where + ": the value is not shown: " + cut(m));
        }
        checkLength(m, where, problems);
        if (inSetter) {
          checkKept(builder, before, where, problems);
        }
      }
    });
    assertTrue(calls.size() > 1_000, "calls: " + calls.size());
    assertNoProblems(problems, calls.size());
  }

  /**
   * Values at and near the edges of each range, and strings of any well-formed characters up to
   * the longest allowed, are taken, on the builder and in a file alike, and read back unchanged.
   */
  @Test
  void edges_goodValuesNearEveryLimit_areTaken_onTheBuilderAndInAFile(@TempDir Path dir) throws Exception {
    Random random = new Random(SEED + 4);
    List<String> problems = new ArrayList<>();
    int[] count = {0};
    startsNoThread(() -> {
      for (int i = 0; i < 200; i++) {
        String nodeId = goodMetadata(random);
        String zone = random.nextInt(5) == 0 ? "" : goodMetadata(random);
        String version = random.nextInt(5) == 0 ? "" : goodMetadata(random);
        String endpoint = random.nextInt(5) == 0 ? "" : goodMetadata(random);
        String cluster = goodClusterName(random);
        int virtualNodes = edgeOr(random, 1, HashRing.MAX_TOKENS_PER_MEMBER);
        // A weight from the smallest that gives one token to the largest that gives the most tokens.
        double weight = switch (random.nextInt(4)) {
          case 0 -> 0.0;
          case 1 -> SettingChecks.smallestWeight(virtualNodes);
          case 2 -> (double) HashRing.MAX_TOKENS_PER_MEMBER / virtualNodes;
          default -> (double) edgeOr(random, 1, HashRing.MAX_TOKENS_PER_MEMBER) / virtualNodes;
        };
        int replicas = edgeOr(random, 1, 255);
        int bindPort = edgeOr(random, 0, 65_535);
        String hosts = goodHosts(random);
        long leave = edgeOr(random, 0, 86_400_000);
        long gossip = edgeOr(random, 1, 86_400_000);
        long start = edgeOr(random, 1, 86_400_000);
        String secret = "S" + randomAlnum(random, 1 + random.nextInt(40)) + (random.nextBoolean() ? " inside!" : "")
            + "x";
        RingmasterConfig expected = new RingmasterConfig(cluster, nodeId, weight, zone, virtualNodes, replicas, version,
            "ringmaster/jgroups/secure-tcp.xml", endpoint, Optional.of("127.0.0.1"), Optional.of(bindPort),
            Optional.of(hosts), Optional.of(secret), Duration.ofMillis(leave), Duration.ofMillis(gossip),
            Duration.ofMillis(start));
        String where = expected.toString();
        count[0]++;
        try {
          RingmasterConfig built = Ringmaster.builder().clusterName(cluster).nodeId(nodeId).weight(weight).zone(zone)
              .virtualNodes(virtualNodes).replicas(replicas).applicationVersion(version)
              .jgroupsConfig("ringmaster/jgroups/secure-tcp.xml").endpoint(endpoint).bindAddress("127.0.0.1")
              .bindPort(bindPort).initialHosts(hosts).secret(secret).leaveTimeout(Duration.ofMillis(leave))
              .gossipInterval(Duration.ofMillis(gossip)).startTimeout(Duration.ofMillis(start)).buildConfig();
          if (!expected.equals(built) || !secret.equals(built.secret().orElseThrow())) {
            problems.add("builder read back " + built + " for " + where);
          }
          boolean escaped = random.nextBoolean();
          String json = "{\"clusterName\": \"" + jsonEscaped(cluster, escaped) + "\", \"nodeId\": \""
              + jsonEscaped(nodeId, escaped) + "\", \"weight\": " + weight + ", \"zone\": \""
              + jsonEscaped(zone, escaped) + "\", \"virtualNodes\": " + virtualNodes + ", \"replicas\": " + replicas
              + ", \"applicationVersion\": \""
              + jsonEscaped(version, escaped) + "\", \"jgroupsConfig\": \"ringmaster/jgroups/secure-tcp.xml\","
              + " \"endpoint\": \"" + jsonEscaped(endpoint, escaped) + "\", \"bindAddress\": \"127.0.0.1\","
              + " \"bindPort\": " + bindPort + ", \"initialHosts\": \"" + hosts + "\", \"secret\": \"" + secret + "\","
              + " \"leaveTimeoutMillis\": " + leave + ", \"gossipIntervalMillis\": " + gossip
              + ", \"startTimeoutMillis\": " + start + "}";
          Path file = Files.writeString(dir.resolve("good.json"), (random.nextInt(4) == 0 ? "\uFEFF" : "") + json);
          RingmasterConfig read = Ringmaster.builder().config(file).buildConfig();
          if (!expected.equals(read) || !secret.equals(read.secret().orElseThrow())) {
            problems.add("file read back " + read + " for " + where);
          }
        } catch (RuntimeException refused) {
          problems.add("refused " + where + ": " + refused);
        }
      }
    });
    assertNoProblems(problems, count[0]);
  }

  /**
   * The settings read from system properties (a seam the tests may use; environment variables are
   * read the same way, and never set here): the secret with whitespace at an end is refused naming
   * the property, never the secret; a stack's duration given as a bare number under 100 is refused
   * naming the variable and the value, while one with a unit, 0 and 100 up are taken.
   */
  @Test
  void systemProperties_badValues_failNamingTheProperty_goodOnesAreTaken() throws Exception {
    Random random = new Random(SEED + 5);
    List<String> problems = new ArrayList<>();
    int[] count = {0};
    startsNoThread(() -> {
      for (int i = 0; i < 40; i++) {
        String secret = "S" + randomAlnum(random, 12 + random.nextInt(20));
        String ends = List.of(" ", "\n", "\t", "\r\n", "\u00a0", "\u2003").get(random.nextInt(6));
        String value = random.nextBoolean() ? secret + ends : ends + secret;
        count[0]++;
        RefusalAndConfigTest.withProperty(SharedSecret.PROPERTY, value, () -> {
          Throwable t = thrown(() -> Ringmaster.builder().nodeId("a").jgroupsConfig("ringmaster/jgroups/secure-tcp.xml")
              .buildConfig());
          String where = "ringmaster.secret=" + SettingChecks.shown(value);
          if (checkType(t, where, problems)) {
            if (!t.getMessage().startsWith("system property ringmaster.secret: ")) {
              problems.add(where + ": does not name the property: " + t.getMessage());
            }
            if (t.getMessage().contains(secret)) {
              problems.add(where + ": shows the secret: " + t.getMessage());
            }
          }
        });
      }
      for (int i = 0; i < 60; i++) {
        int bare = 1 + random.nextInt(99);
        String value = " ".repeat(random.nextInt(2)) + bare + " ".repeat(random.nextInt(2));
        count[0]++;
        RefusalAndConfigTest.withProperty("ringmaster.fd.timeout", value, () -> {
          Throwable t = thrown(() -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).buildConfig());
          String where = "ringmaster.fd.timeout=\"" + value + "\"";
          if (checkType(t, where, problems) && !t.getMessage().startsWith("system property ringmaster.fd.timeout is \""
              + value + "\" (FD_ALL3.timeout")) {
            problems.add(where + ": does not name the property and the value: " + t.getMessage());
          }
        });
        String good = List.of("0", "" + (100 + random.nextInt(100_000)), bare + "s", bare + "ms", bare + "m")
            .get(random.nextInt(5));
        count[0]++;
        RefusalAndConfigTest.withProperty("ringmaster.fd.timeout", good, () -> {
          Throwable t = thrown(() -> Ringmaster.builder().nodeId("a").jgroupsConfig(TestCluster.STACK).buildConfig());
          if (t != null) {
            problems.add("ringmaster.fd.timeout=" + good + " refused: " + t);
          }
        });
      }
    });
    assertNoProblems(problems, count[0]);
  }

  // ---- the bad values ----

  /** Values of the other JSON types: strings for numbers, numbers for strings; null, true, arrays, objects for all. */
  private static void wrongTypes(Setting s, Random random, List<Bad> cases) {
    List<String> literals = new ArrayList<>(List.of("null", "true", "false", "[]", "{}", "[1, 2]",
        "{\"" + s.key() + "\": 1}", "[\"" + randomAlnum(random, 8) + "\"]",
        "[".repeat(200) + "]".repeat(200), // nested deep, within the parser's limit
        "[" + "1234567, ".repeat(5_000) + "1]")); // long
    if (s.kind() == Kind.TEXT) {
      for (int i = 0; i < 10; i++) {
        literals.add(Long.toString(10_000_000L + random.nextInt(90_000_000)));
        literals.add((random.nextInt(2_000) - 1_000) + "." + (1 + random.nextInt(999)));
      }
      literals.add("1e999");
      literals.add("-0");
    } else {
      for (String quoted : List.of("5", "NaN", "Infinity", "-Infinity", "1e999", "0x10", " 7", "", "one",
          "x".repeat(100_000))) {
        literals.add("\"" + quoted + "\"");
      }
      for (int i = 0; i < 10; i++) {
        literals.add("\"" + (1 + random.nextInt(1_000)) + "\"");
      }
    }
    for (String literal : literals) {
      cases.add(new Bad(s, literal, null));
    }
  }

  /** Numbers out of a whole-number setting's range, too large for a long, or with a fraction or exponent. */
  private static void badWholeNumbers(Setting s, Random random, List<Bad> cases) {
    List<String> literals = new ArrayList<>(List.of("2147483648", "-2147483649", "4294967296", "-9223372036854775808",
        "9223372036854775807", "9223372036854775808", "18446744073709551616", "-18446744073709551617",
        "1e999", "-1e999", "1e-999", "0.5", "-0.5", "1E2", "100e-2", "" + (s.min() - 1), "" + (s.max() + 1),
        "1" + "0".repeat(400)));
    for (int i = 0; i < 15; i++) {
      literals.add("" + (s.min() - 1 - random.nextInt(Integer.MAX_VALUE)));
      literals.add("" + (s.max() + 1 + (long) (random.nextDouble() * (Long.MAX_VALUE - s.max() - 1))));
      long inside = s.min() + (long) (random.nextDouble() * (s.max() - s.min()));
      literals.add(inside + "." + random.nextInt(10)); // 7800.0 too: whole numbers only, written as such
      literals.add(inside + "e0");
    }
    for (String literal : literals) {
      cases.add(new Bad(s, literal, null));
    }
  }

  /** Weights below 0, too large for a double, too small to tell from 0, or giving no token or too many. */
  private static void badWeights(Setting s, Random random, List<Bad> cases) {
    List<String> literals = new ArrayList<>(List.of("-1", "-0.5", "-1e-300", "-4.9e-324", "1e309", "-1e309", "1e999",
        "1e-400", "-1e-400", "1" + "0".repeat(400), "-1" + "0".repeat(400), "1e-10", "4.9e-324",
        "16777217", "9223372036854775808", "1e300"));
    for (int i = 0; i < 20; i++) {
      literals.add("-" + random.nextInt(1_000_000) + "." + (1 + random.nextInt(999)));
      literals.add("-" + (1 + random.nextInt(9)) + "e" + (random.nextInt(600) - 300));
      literals.add((1 + random.nextInt(9)) + "e" + (309 + random.nextInt(2_000)));
      literals.add((1 + random.nextInt(9)) + "e-" + (325 + random.nextInt(2_000)));
    }
    for (String literal : literals) {
      cases.add(new Bad(s, literal, null));
    }
  }

  /** Strings a text setting refuses. */
  private static void badTexts(Setting s, Random random, Path dir, List<Bad> cases) {
    List<String> texts = new ArrayList<>();
    String key = s.key();
    switch (key) {
      case "nodeId", "zone", "applicationVersion", "endpoint" -> {
        if (key.equals("nodeId")) {
          texts.add("");
        }
        for (int i = 0; i < 20; i++) {
          String word = goodWord(random);
          String space = List.of(" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u3000", "\uFEFF", "\u2028", "\u000b")
              .get(random.nextInt(10));
          texts.add(random.nextBoolean() ? space + word : word + space);
          int control = random.nextBoolean() ? random.nextInt(0x20) : 0x7f + random.nextInt(0x21);
          texts.add(insert(random, word, Character.toString(control)));
          char surrogate = (char) (Character.MIN_SURROGATE + random.nextInt(0x800));
          texts.add(insert(random, word, Character.toString(surrogate)));
          String long_ = goodWord(random);
          texts.add(long_.repeat(1 + 255 / long_.length()) + "\u00e9".repeat(random.nextInt(200)));
        }
        texts.add("x".repeat(100_000));
        texts.add("\ud83d\ude00".repeat(64)); // 256 bytes
        texts.add("\u00e9".repeat(128));
        texts.add(" ");
      }
      case "clusterName" -> {
        texts.addAll(List.of("", " ", "  ", "a ", " a", "x".repeat(201), "x".repeat(100_000), "\u00e9t\u00e9",
            "a\u007fb"));
        for (int i = 0; i < 40; i++) {
          String word = goodClusterName(random).strip() + "x";
          texts.add(insert(random, word, Character.toString(random.nextBoolean() ? random.nextInt(0x20)
              : 0x7f + random.nextInt(0x800))));
          texts.add(random.nextBoolean() ? " " + word : word + " ");
          texts.add(word.repeat(1 + 200 / word.length()) + "y");
        }
      }
      case "jgroupsConfig" -> {
        texts.addAll(List.of("", "stack\u0000.xml", ".", dir.toString(), "ringmaster", "ringmaster/jgroups",
            "ringmaster/jgroups/", "io/ringmaster/Json.class", "x".repeat(100_000) + ".xml", "no such stack.xml"));
        for (int i = 0; i < 20; i++) {
          texts.add("nowhere-" + randomAlnum(random, 10) + ".xml");
          texts.add("ringmaster/jgroups/" + randomAlnum(random, 6) + ".xml");
        }
      }
      case "initialHosts" -> {
        texts.addAll(List.of("", " ", "127.0.0.1", "127.0.0.1:7800", "[7800]", "a[7800", "a[7800]]", "a[]", "a[0]",
            "a[65536]", "a[-1]", "a[${p}]", "a b[1]", "a[1],", ",a[1]", "a[1],,b[2]", "a[7800] x",
            "h".repeat(100_000) + ":1"));
        for (int i = 0; i < 30; i++) {
          int port = random.nextBoolean() ? 65_536 + random.nextInt(1_000_000) : -random.nextInt(1_000);
          texts.add("db-" + random.nextInt(100) + "[" + port + "]");
          texts.add("db-" + random.nextInt(100) + ":" + (1 + random.nextInt(65_535)));
          texts.add("db-1[7800]," + "db-" + random.nextInt(100) + "[" + randomAlnum(random, 3) + "x]");
        }
      }
      case "bindAddress" -> // literals only: a name would be looked up in DNS
          texts.addAll(List.of("", "0.0.0.0", "::", "0:0:0:0:0:0:0:0", "[::zz]", "[::1", "[" + "1:".repeat(9) + "]"));
      case "secret" -> {
        texts.addAll(List.of("", " ", "   ", "\t\n", "\u00a0"));
        for (int i = 0; i < 40; i++) {
          String secret = "S" + randomAlnum(random, 12 + random.nextInt(30));
          String space = List.of(" ", "\n", "\r\n", "\t", "\u00a0", "\u2003").get(random.nextInt(6));
          texts.add(random.nextBoolean() ? secret + space : space + secret);
        }
      }
      default -> throw new IllegalStateException(key);
    }
    for (String text : texts) {
      cases.add(new Bad(s, "\"" + jsonEscaped(text, random.nextBoolean()) + "\"", text));
    }
  }

  // ---- checks ----

  /** Reads a file with one bad setting into a builder that has every setting, then builds. */
  private static void checkRefused(Path file, Bad bad, List<String> problems) {
    Setting s = bad.setting();
    String where = s.key() + ": " + cut(bad.literal());
    Ringmaster.Builder builder = keeper();
    RingmasterConfig before = KEPT;
    Throwable t = thrown(() -> builder.config(file));
    boolean atConfig = t != null;
    if (t == null) {
      t = thrown(builder::buildConfig);
    }
    if (!checkType(t, where, problems)) {
      return;
    }
    String m = t.getMessage();
    if (!atConfig && !BUILD_CHECKED.contains(s.key())) {
      problems.add(where + ": refused only at build: " + cut(m));
    }
    if (atConfig ? !m.startsWith("setting \"" + s.key() + "\" in " + file + ": ") : !m.contains(s.builderName())) {
      problems.add(where + ": the setting is not named" + (atConfig ? " (file)" : " (build)") + ": " + cut(m));
    }
    if (s.key().equals("secret")) {
      String secret = bad.text() == null ? bad.literal() : bad.text().strip();
      if (secret.length() >= 6 && m.contains(secret)) {
        problems.add(where + ": the secret is shown: " + cut(m));
      }
    } else if (!showsValue(m, bad)) {
      problems.add(where + ": the value is not shown: " + cut(m));
    }
    checkLength(m, where, problems);
    if (atConfig) {
      checkKept(builder, before, where, problems);
    }
  }

  /**
   * A file that is no good config: refused naming the file, or (for a slip that leaves a good
   * file) taken; never showing the secret.
   */
  private static void checkFileRefused(Path file, String secret, boolean mustFail, List<String> problems) {
    Ringmaster.Builder builder = keeper();
    RingmasterConfig before = KEPT;
    Throwable t = thrown(() -> builder.config(file));
    String where = file.getFileName() + " " + cut(readable(file));
    if (t == null) {
      t = thrown(builder::buildConfig);
      if (t == null) {
        if (mustFail) {
          problems.add(where + ": taken");
        }
        return;
      }
    } else {
      checkKept(builder, before, where, problems);
    }
    if (!checkType(t, where, problems)) {
      return;
    }
    String m = t.getMessage();
    if (!m.contains(file.getFileName().toString())) { // at build too: "(settings from config file ...)"
      problems.add(where + ": the file is not named: " + cut(m));
    }
    for (int i = 0; i + 8 <= secret.length(); i++) {
      if (m.contains(secret.substring(i, i + 8))) {
        problems.add(where + ": shows the secret: " + cut(m));
        break;
      }
    }
    checkLength(m, where, problems);
  }

  /** An {@link IllegalArgumentException} itself, with a message: not a JDK's or a parser's exception leaking out. */
  private static boolean checkType(Throwable t, String where, List<String> problems) {
    if (t == null) {
      problems.add(where + ": taken");
      return false;
    }
    if (t.getClass() != IllegalArgumentException.class || t.getMessage() == null) {
      problems.add(where + ": " + t.getClass().getName() + ": " + cut(String.valueOf(t.getMessage())));
      return false;
    }
    return true;
  }

  private static void checkLength(String m, String where, List<String> problems) {
    if (m.length() > LONGEST_MESSAGE) {
      problems.add(where + ": a message of " + m.length() + " characters: " + cut(m));
    }
  }

  private static void checkKept(Ringmaster.Builder builder, RingmasterConfig before, String where,
                                List<String> problems) {
    RingmasterConfig after;
    try {
      after = builder.buildConfig();
    } catch (RuntimeException changed) { // part of the file applied, and the mix refused
      problems.add(where + ": the builder changed, and no longer builds: " + cut(String.valueOf(changed)));
      return;
    }
    if (!before.equals(after)) {
      problems.add(where + ": the builder changed: " + before + " -> " + after);
    }
  }

  /** Numbers read as {@link Json} reads a config file's. */
  private static final ObjectMapper AS_READ = new ObjectMapper()
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false);

  /** Whether the message shows a bad value in any of the forms a message gives it. */
  private static boolean showsValue(String m, Bad bad) {
    if (bad.text() != null) {
      return shows(m, bad.text());
    }
    String literal = bad.literal();
    List<String> forms = new ArrayList<>(List.of(literal));
    try {
      JsonNode node = AS_READ.readTree(literal);
      forms.add(node.toString());
      if (node.isNumber()) {
        forms.add(Double.toString(node.asDouble())); // a weight the builder refused, as it took it
        forms.add(node.asLong() + " ms");
      }
      if (node.isTextual()) {
        forms.addAll(shownForms(node.asText()));
      }
    } catch (IOException unreadable) {
      // a literal the parser refuses is shown as written
    }
    return forms.stream().anyMatch(f -> m.contains(f)
        || f.length() > 120 && m.contains(f.substring(0, SHOWN_PREFIX)));
  }

  private static boolean shows(String m, String text) {
    return shownForms(text).stream().anyMatch(m::contains);
  }

  /**
   * The forms in which a message may show a string: as it is, quoted as a JSON string, escaped by
   * {@link SettingChecks#shown}; a long one by its first characters; for a list of hosts, the entry
   * at fault.
   */
  private static List<String> shownForms(String text) {
    List<String> forms = new ArrayList<>();
    if (text.length() > 120) {
      String head = text.substring(0, SHOWN_PREFIX);
      forms.add(head);
      forms.add(SettingChecks.shown(head).substring(0, SettingChecks.shown(head).length() - 1));
    } else {
      forms.add(text);
      forms.add(SettingChecks.shown(text));
      forms.add(TextNode.valueOf(text).toString());
      for (String entry : text.split(",", -1)) {
        if (!entry.strip().isEmpty() && !text.equals(entry)) {
          forms.add("\"" + entry.strip() + "\"");
        }
      }
      if (text.isEmpty()) {
        forms.add("\"\"");
      }
      if (text.isBlank() && !text.isEmpty()) {
        forms.add("blank");
      }
    }
    return forms;
  }

  private static void assertNoProblems(List<String> problems, int cases) {
    if (!problems.isEmpty()) {
      fail(problems.size() + " of " + cases + " cases broke the promise; the first ones:\n"
          + String.join("\n", problems.subList(0, Math.min(15, problems.size()))));
    }
  }

  /** Runs the body and fails if a thread it started is still alive: a refused setting starts nothing. */
  private static void startsNoThread(Executable body) throws Exception {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    try {
      body.execute();
    } catch (Exception | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new AssertionError(t);
    }
    // The common pool's workers come and go with whatever else runs in this JVM; settings never use it.
    List<String> started = Thread.getAllStackTraces().keySet().stream().filter(t -> !before.contains(t))
        .filter(Thread::isAlive).map(Thread::getName).filter(n -> !n.startsWith("ForkJoinPool.commonPool-worker"))
        .toList();
    assertEquals(List.of(), started, "threads started by settings alone");
  }

  private static Throwable thrown(Executable e) {
    try {
      e.execute();
      return null;
    } catch (Throwable t) {
      return t;
    }
  }


  private static void textSetter(Ringmaster.Builder b, String setting, String value) {
    switch (setting) {
      case "clusterName" -> b.clusterName(value);
      case "nodeId" -> b.nodeId(value);
      case "zone" -> b.zone(value);
      case "applicationVersion" -> b.applicationVersion(value);
      case "endpoint" -> b.endpoint(value);
      case "jgroupsConfig" -> b.jgroupsConfig(value);
      case "initialHosts" -> b.initialHosts(value);
      case "bindAddress" -> b.bindAddress(value);
      case "secret" -> b.secret(value);
      default -> throw new IllegalStateException(setting);
    }
  }

  private static void durationSetter(Ringmaster.Builder b, String setting, Duration value) {
    switch (setting) {
      case "leaveTimeout" -> b.leaveTimeout(value);
      case "gossipInterval" -> b.gossipInterval(value);
      case "startTimeout" -> b.startTimeout(value);
      default -> throw new IllegalStateException(setting);
    }
  }

  // ---- the good values ----

  /**
   * A builder with the settings off their defaults (but those its in-JVM stack does not take: the
   * secret, the address, port and hosts).
   */
  private static Ringmaster.Builder keeper() {
    return Ringmaster.builder().clusterName("kept-cluster").nodeId("kept").weight(2).zone("kept-zone").virtualNodes(64)
        .replicas(3).applicationVersion("kept/1").jgroupsConfig(TestCluster.STACK).endpoint("http://kept")
        .leaveTimeout(Duration.ofMillis(11)).gossipInterval(Duration.ofMillis(12)).startTimeout(Duration.ofMillis(13));
  }

  /** What {@link #keeper()} builds. */
  private static final RingmasterConfig KEPT = keeper().buildConfig();

  /** A whole file setting every key but bindAddress (a slip in it would be looked up in DNS). */
  private static String validFile(String secret) {
    return "{\"clusterName\": \"fuzz\", \"nodeId\": \"n-1\", \"weight\": 1.5, \"zone\": \"z\", \"virtualNodes\": 64,"
        + " \"replicas\": 2, \"applicationVersion\": \"v1\", \"jgroupsConfig\": \"ringmaster/jgroups/secure-tcp.xml\","
        + " \"endpoint\": \"http://127.0.0.1:1\", \"bindPort\": 7990, \"initialHosts\": \"127.0.0.1[7990]\","
        + " \"secret\": \"" + secret + "\", \"leaveTimeoutMillis\": 10, \"gossipIntervalMillis\": 20,"
        + " \"startTimeoutMillis\": 30}";
  }

  private static String goodLiteral(Setting s, String secret) {
    return switch (s.kind()) {
      case TEXT -> s.key().equals("secret") ? "\"" + secret + "\"" : s.key().equals("jgroupsConfig")
          ? "\"" + TestCluster.STACK + "\"" : s.key().equals("bindAddress") ? "\"127.0.0.1\""
          : s.key().equals("initialHosts") ? "\"127.0.0.1[7800]\"" : "\"x\"";
      case NUMBER -> "1";
      case INTEGER, MILLIS -> Long.toString(Math.max(1, s.min()));
    };
  }

  /** The least or the greatest value, one next to them, or any between. */
  private static int edgeOr(Random random, int min, int max) {
    return (int) edgeOr(random, min, (long) max);
  }

  private static long edgeOr(Random random, long min, long max) {
    return switch (random.nextInt(5)) {
      case 0 -> min;
      case 1 -> max;
      case 2 -> min + 1;
      case 3 -> max - 1;
      default -> min + (long) (random.nextDouble() * (max - min));
    };
  }

  /** Metadata of any characters but control characters and lone surrogates, no space at an end, 1 to 255 bytes. */
  private static String goodMetadata(Random random) {
    int budget = random.nextBoolean() ? 255 : 1 + random.nextInt(255);
    StringBuilder b = new StringBuilder();
    int bytes = 0;
    while (true) {
      int c = switch (random.nextInt(4)) {
        case 0 -> 0x21 + random.nextInt(0x5e);
        case 1 -> 0xa0 + random.nextInt(0x700);
        case 2 -> 0x1f600 + random.nextInt(0x50);
        default -> 0x20 + random.nextInt(0xd7e0);
      };
      if (Character.isISOControl(c)) {
        continue;
      }
      int size = new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8).length;
      if (bytes + size > budget) {
        break;
      }
      b.appendCodePoint(c);
      bytes += size;
    }
    String s = b.toString();
    while (!s.isEmpty() && (isSpace(s.codePointAt(0)) || isSpace(s.codePointBefore(s.length())))) {
      s = s.substring(Character.charCount(s.codePointAt(0))); // then at the end, if still
      if (!s.isEmpty() && isSpace(s.codePointBefore(s.length()))) {
        s = s.substring(0, s.length() - Character.charCount(s.codePointBefore(s.length())));
      }
    }
    return s.isEmpty() ? "m" : s;
  }

  private static boolean isSpace(int c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\uFEFF';
  }

  /** 1 to 200 printable ASCII characters, no space at an end. */
  private static String goodClusterName(Random random) {
    int length = random.nextBoolean() ? 200 : 1 + random.nextInt(200);
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < length; i++) {
      b.append((char) (i == 0 || i == length - 1 ? 0x21 + random.nextInt(0x5e) : 0x20 + random.nextInt(0x5f)));
    }
    return b.toString();
  }

  /** One to five {@code host[port]} entries, with ports at the ends of their range. */
  private static String goodHosts(Random random) {
    List<String> entries = new ArrayList<>();
    for (int i = 0, n = 1 + random.nextInt(5); i < n; i++) {
      entries.add(List.of("127.0.0.1", "10.0.0." + random.nextInt(256), "db-" + random.nextInt(100) + ".example.com")
          .get(random.nextInt(3)) + "[" + edgeOr(random, 1, 65_535) + "]");
    }
    return String.join(",", entries);
  }

  private static String goodWord(Random random) {
    return "w" + randomAlnum(random, 1 + random.nextInt(10));
  }

  private static String randomAlnum(Random random, int length) {
    String chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < length; i++) {
      b.append(chars.charAt(random.nextInt(chars.length())));
    }
    return b.toString();
  }

  private static String insert(Random random, String word, String c) {
    int at = random.nextInt(word.length() + 1);
    return word.substring(0, at) + c + word.substring(at);
  }

  /**
   * A string as a JSON string's content: quotes, backslashes, control characters and unpaired
   * surrogates escaped (a file cannot hold the last as UTF-8), and every other non-ASCII character
   * too when {@code escapeAll}.
   */
  private static String jsonEscaped(String s, boolean escapeAll) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean paired = Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))
          || Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20 || Character.isSurrogate(c) && !paired || escapeAll && c > 0x7e) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  private static String readable(Path file) {
    try {
      return Files.isRegularFile(file) ? new String(Files.readAllBytes(file), StandardCharsets.UTF_8) : file.toString();
    } catch (IOException e) {
      return e.toString();
    }
  }

  private static String cut(String s) {
    return s.length() > 300 ? s.substring(0, 300) + "... (" + s.length() + " chars)" : s;
  }
}
