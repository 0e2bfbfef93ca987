package io.ringmaster;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The one place that knows Jackson: reading node configs, writing the ring and stats as JSON. */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);

  /**
   * Config files: a key given twice, or anything after the object, is a mistake to report. Numbers
   * with a fraction or exponent are read exactly, so that one a double cannot hold is reported too,
   * and kept as written (7800.0 stays 7800.0 in a message, not 7.8E+3).
   */
  private static final ObjectMapper STRICT = new ObjectMapper()
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false);

  /** Every key a config file may set. */
  static final Set<String> KNOWN = Set.of("clusterName", "nodeId", "weight", "zone", "virtualNodes",
      "replicas", "applicationVersion", "jgroupsConfig", "endpoint", "bindAddress", "bindPort", "initialHosts",
      "secret", "leaveTimeoutMillis", "gossipIntervalMillis", "startTimeoutMillis");

  /** Jackson's message for a key given twice in one object. */
  private static final Pattern DUPLICATE = Pattern.compile("Duplicate field '(\\w+)'");

  private Json() {}

  /**
   * Applies a JSON config file to a builder; fails naming the file and the key, and then leaves the
   * builder as it was: every setting is tried on a builder of its own first.
   */
  static void readConfig(Path file, Ringmaster.Builder builder) {
    JsonNode root = read(file);
    applyAll(root, file, Ringmaster.builder());
    applyAll(root, file, builder);
  }

  private static JsonNode read(Path file) {
    JsonNode root;
    try {
      String text = Files.readString(file);
      // Some editors start UTF-8 files with a byte order mark; it is not JSON, but not a mistake either.
      root = STRICT.readTree(text.startsWith("\uFEFF") ? text.substring(1) : text);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("config file not found: " + file.toAbsolutePath());
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("config file " + file + " is not UTF-8 text (" + e + ")");
    } catch (StreamConstraintsException e) {
      // Valid JSON past a limit of the parser (a number's length, nesting depth); no location.
      throw new IllegalArgumentException("config file " + file + " exceeds a limit of the JSON parser: "
          + e.getOriginalMessage());
    } catch (JsonProcessingException e) {
      String where = e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ", column "
          + e.getLocation().getColumnNr() + ")";
      // The parser quotes the text it choked on, which in a file with a secret may be the secret,
      // written without its quotes: then only where.
      // A bare token quoted back ("Unrecognized token 'hunter2'") may be the value of a key whose
      // name is misspelled: never repeated.
      // A setting given twice is named all the same: the name is one of ours, not a value.
      Matcher twice = DUPLICATE.matcher(String.valueOf(e.getOriginalMessage()));
      String why = twice.matches() && KNOWN.contains(twice.group(1)) ? "setting \"" + twice.group(1)
          + "\" is given twice (Duplicate field '" + twice.group(1) + "')"
          : mentionsSecret(file) ? "the parser's message is left out, since the file sets a secret"
          : e.getOriginalMessage().replaceAll("Unrecognized token '[^']*'", "Unrecognized token");
      throw new IllegalArgumentException("config file " + file + " is not valid JSON" + where + ": " + why);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read config file " + file + ": " + e);
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("config file " + file + " must hold a JSON object");
    }
    return root;
  }

  private static boolean mentionsSecret(Path file) {
    try {
      return Files.readString(file, StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT)
          .contains("secret");
    } catch (IOException | RuntimeException unreadable) {
      return true;
    }
  }

  private static void applyAll(JsonNode root, Path file, Ringmaster.Builder builder) {
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String key = e.getKey();
      JsonNode v = e.getValue();
      if (!KNOWN.contains(key)) {
        throw new IllegalArgumentException("unknown setting " + SettingChecks.shown(key) + " in " + file
            + "; known settings: " + KNOWN.stream().sorted().toList());
      }
      try {
        apply(builder, key, v, file);
      } catch (IllegalArgumentException bad) {
        throw new IllegalArgumentException("setting \"" + key + "\" in " + file + ": " + bad.getMessage(), bad);
      }
    }
  }

  private static void apply(Ringmaster.Builder b, String key, JsonNode v, Path file) {
    switch (key) {
      case "clusterName" -> b.clusterName(text(v));
      case "nodeId" -> b.nodeId(text(v));
      case "weight" -> b.weight(number(v));
      case "zone" -> b.zone(text(v));
      case "virtualNodes" -> b.virtualNodes(integer(v, "1.." + HashRing.MAX_TOKENS_PER_MEMBER));
      case "replicas" -> b.replicas(integer(v, "1.." + Ringmaster.Builder.MAX_REPLICAS));
      case "applicationVersion" -> b.applicationVersion(text(v));
      case "jgroupsConfig" -> {
        String stack = text(v);
        Path beside = file.toAbsolutePath().getParent().resolve(stack);
        String resolved = Files.isRegularFile(beside) ? beside.toString() : stack;
        Stacks.checkExists(resolved); // fails here, where the message can name this file
        b.jgroupsConfig(resolved);
      }
      case "endpoint" -> b.endpoint(text(v));
      case "bindAddress" -> b.bindAddress(text(v));
      case "bindPort" -> b.bindPort(integer(v, "0.." + Ringmaster.Builder.MAX_PORT));
      case "initialHosts" -> b.initialHosts(text(v));
      case "secret" -> {
        if (!v.isTextual()) { // its value is not shown: it may be the secret, typed without quotes
          throw new IllegalArgumentException("must be a string, not a JSON " + v.getNodeType().name().toLowerCase(
              Locale.ROOT) + " (its value is not shown here)");
        }
        b.secret(v.asText());
      }
      case "leaveTimeoutMillis" -> b.leaveTimeout(Duration.ofMillis(wholeNumber(v)));
      case "gossipIntervalMillis" -> b.gossipInterval(Duration.ofMillis(wholeNumber(v)));
      case "startTimeoutMillis" -> b.startTimeout(Duration.ofMillis(wholeNumber(v)));
      default -> throw new IllegalStateException(key);
    }
  }

  private static String text(JsonNode v) {
    if (!v.isTextual()) {
      throw new IllegalArgumentException("must be a string, not " + shown(v));
    }
    return v.asText();
  }

  private static double number(JsonNode v) {
    if (!v.isNumber()) {
      throw new IllegalArgumentException("must be a number, not " + shown(v));
    }
    double d = v.asDouble();
    if (Double.isInfinite(d)) {
      throw new IllegalArgumentException("is too large for a double: " + shown(v));
    }
    if (d == 0 && v.decimalValue().signum() != 0) {
      // 1e-400 is 0 as a double: a weight that asked for a share would silently own nothing.
      throw new IllegalArgumentException("is too small to tell from 0 as a double: " + shown(v));
    }
    return d;
  }

  /** A whole number for a setting whose builder checks {@code range}, which an int may overflow. */
  private static int integer(JsonNode v, String range) {
    long n = wholeNumber(v);
    if (n != (int) n) {
      throw new IllegalArgumentException("must be in " + range + ": " + shown(v));
    }
    return (int) n;
  }

  private static long wholeNumber(JsonNode v) {
    if (!v.isIntegralNumber()) {
      throw new IllegalArgumentException("must be a whole number, not " + shown(v));
    }
    if (!v.canConvertToLong()) {
      throw new IllegalArgumentException("is too large: " + shown(v));
    }
    return v.asLong();
  }

  /**
   * A value for a message, as JSON: whole up to 120 characters, else its first ones and its length
   * (a long string or array typed into a setting is not repeated into the log).
   */
  private static String shown(JsonNode v) {
    String json = v.toString();
    if (json.length() <= 120) {
      return json;
    }
    int end = Character.isHighSurrogate(json.charAt(119)) ? 119 : 120;
    return json.substring(0, end) + "... (" + json.length() + " chars)";
  }

  /** The ring as members with shares, checksum and view id. */
  static ObjectNode ring(HashRing ring, long viewId, String localId, Map<String, String> endpoints) {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("viewId", viewId);
    root.put("checksum", Long.toHexString(ring.checksum()));
    root.put("virtualNodes", ring.virtualNodes());
    root.put("tokens", ring.tokenCount());
    root.put("local", localId);
    ArrayNode members = root.putArray("members");
    for (Member m : ring.members()) {
      ObjectNode o = members.addObject();
      o.put("id", m.id());
      o.put("weight", m.weight());
      o.put("zone", m.zone());
      o.put("share", ring.share(m.id()));
      o.put("endpoint", endpoints.getOrDefault(m.id(), ""));
    }
    return root;
  }

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }
}
