package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** The launcher's {@code status}: one line per live peer from its {@code /stats}, and ring agreement. */
final class ClusterStatus {
  private final HttpClient http;
  private final PrintStream out;

  ClusterStatus(HttpClient http, PrintStream out) {
    this.http = http;
    this.out = out;
  }

  /**
   * Prints the table and whether the peers agree. Other ring members that answer at the endpoint
   * they announced (peers started by hand, or one restarted by hand under the id of a peer this
   * launcher started) get a row too, and their keys count in the totals.
   *
   * @param peers the live peers this launcher started
   * @param gone  the ids of peers it started that have exited
   */
  void print(List<PeerProcess> peers, Set<String> gone) {
    if (peers.isEmpty()) {
      out.println("no live peers");
      return;
    }
    out.printf("%-10s %-24s %5s %-17s %7s %8s %8s %6s %9s %8s %8s%n", "id", "url", "view", "checksum", "members",
        "primary", "backup", "stray", "migrating", "movedIn", "movedOut");
    TreeSet<String> rings = new TreeSet<>();
    long[] keys = new long[2];
    int answered = 0;
    List<String> outOfRing = new ArrayList<>();
    for (PeerProcess p : peers) {
      String[] why = {"no answer"};
      Optional<JsonNode> s = get(p.url() + "/stats", why);
      if (s.isEmpty()) {
        out.printf("%-10s %-24s (%s)%n", p.id(), p.url(), oneLine(why[0]));
        continue;
      }
      answered++;
      rings.add(row(p.id(), p.url(), s.get(), keys));
      if (!s.get().path("inRing").asBoolean()) {
        outOfRing.add(p.id());
      }
    }
    if (!outOfRing.isEmpty()) {
      out.println("ring: not in the ring: " + String.join(", ", outOfRing) + " (refused, as when another peer holds"
          + " its id, or rejoining; see its log)");
    } else if (rings.size() == 1 && answered == peers.size()) {
      Map<String, String> others = new TreeMap<>(ringEndpoints(peers.get(0)).orElse(Map.of()));
      peers.forEach(p -> others.remove(p.id()));
      List<String> notes = new ArrayList<>();
      others.forEach((id, endpoint) -> {
        Optional<JsonNode> s = answering(id, endpoint);
        if (s.isPresent()) {
          row(id, endpoint, s.get(), keys);
          notes.add(Flags.shown(id) + " (started by hand)");
        } else {
          notes.add(Flags.shown(id) + (gone.contains(id) ? " (exited, not yet out of the ring)"
              : " (not started here, no answer" + (endpoint.isEmpty() ? "" : " at " + Flags.shown(endpoint)) + ")"));
        }
      });
      out.println((answered == 1 ? "ring: " + peers.get(0).id() + " is in the ring" : "ring: all " + answered
          + " peers agree") + " (view/checksum " + Flags.shown(rings.first()) + ")"
          + (notes.isEmpty() ? "" : "; also in it: " + String.join(", ", notes)));
    } else {
      out.println("ring: peers DISAGREE or did not answer: " + rings.stream().map(Flags::shown).toList()
          + " (rings settle within a second or two)");
    }
    out.println("keys: " + keys[0] + " primary copies, " + keys[1] + " backup copies");
  }

  /**
   * Prints one peer's row and adds its keys to {@code keys}; returns its view id and checksum, as
   * they are (rings are told apart by those, not by how they are shown). What a peer says of itself
   * is shown as the launcher shows any value ({@link Flags#shown}): a line break in a member's id
   * cannot add a line that reads as the launcher's own.
   */
  private String row(String id, String url, JsonNode j, long[] keys) {
    keys[0] += j.path("primaryKeys").asLong();
    keys[1] += j.path("backupKeys").asLong();
    String checksum = j.path("checksum").asText();
    out.printf("%-10s %-24s %5d %-17s %7d %8d %8d %6d %9d %8d %8d%n", Flags.shown(id), Flags.shown(url),
        j.path("viewId").asLong(), Flags.shown(checksum), j.path("members").asInt(), j.path("primaryKeys").asLong(),
        j.path("backupKeys").asLong(), j.path("strayKeys").asLong(),
        j.path("migrationsInProgress").asInt() + j.path("pendingCallbacks").asInt(),
        j.path("keysMigratedIn").asLong(), j.path("keysMigratedOut").asLong());
    return j.path("viewId").asLong() + "/" + checksum;
  }

  /** A peer's reason for not serving as it is, or quoted with escapes if not one line of visible text. */
  private static String oneLine(String words) {
    return words.codePoints().anyMatch(Flags::invisible) ? Flags.quoted(words) : words;
  }

  /**
   * Whether every live peer answers from one ring (the same view and checksum) that holds all of
   * them and none of the peers that exited, unless a peer restarted by hand under that id answers
   * for it; the ring may hold peers started by hand.
   */
  boolean agree(List<PeerProcess> peers, Set<String> gone) {
    TreeSet<String> rings = new TreeSet<>();
    for (PeerProcess p : peers) {
      Optional<JsonNode> s = get(p.url() + "/stats");
      if (s.isEmpty() || !s.get().path("inRing").asBoolean()) {
        return false;
      }
      rings.add(s.get().path("viewId").asLong() + "/" + s.get().path("checksum").asText());
    }
    if (rings.size() != 1) {
      return false;
    }
    Optional<Map<String, String>> members = ringEndpoints(peers.get(0));
    if (members.isEmpty() || !members.get().keySet().containsAll(peers.stream().map(PeerProcess::id).toList())) {
      return false;
    }
    return gone.stream().filter(members.get()::containsKey)
        .allMatch(id -> answering(id, members.get().get(id)).isPresent());
  }

  /** The member ids of the ring of the first of {@code peers} that answers; none if none does. */
  Set<String> ringIds(List<PeerProcess> peers) {
    for (PeerProcess p : peers) {
      Optional<Map<String, String>> members = ringEndpoints(p);
      if (members.isPresent()) {
        return members.get().keySet();
      }
    }
    return Set.of();
  }

  /** The members of a peer's ring, each with the endpoint it announced ("" for none). */
  private Optional<Map<String, String>> ringEndpoints(PeerProcess p) {
    return get(p.url() + "/ring?ranges=false").map(ring -> {
      Map<String, String> members = new TreeMap<>();
      ring.path("members").forEach(m -> members.put(m.path("id").asText(), m.path("endpoint").asText()));
      return members;
    });
  }

  /** The {@code /stats} of ring member {@code id}, if a peer with that id, in the ring, answers at {@code endpoint}. */
  private Optional<JsonNode> answering(String id, String endpoint) {
    String scheme = endpoint.toLowerCase(Locale.ROOT); // a URL's scheme is read in any case
    if (!scheme.startsWith("http://") && !scheme.startsWith("https://")) {
      return Optional.empty();
    }
    return get(endpoint + "/stats").filter(s -> s.path("id").asText().equals(id) && s.path("inRing").asBoolean());
  }

  private Optional<JsonNode> get(String url) {
    return get(url, new String[1]);
  }

  /**
   * The JSON of a 200 reply to a GET, or empty; for any other reply, {@code why[0]} becomes the
   * peer's reason when it gave one ("the peer is starting"), else "answered" and the status (a page
   * that is no JSON, from something else on the port, say); for a 200 that is no JSON object, says so.
   */
  private Optional<JsonNode> get(String url, String[] why) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(3)).build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        why[0] = "answered " + r.statusCode(); // unless the body is a peer's JSON reason
        String reason = Json.tree(r.body()).path("error").asText("");
        why[0] = reason.isEmpty() ? why[0] : reason;
        return Optional.empty();
      }
      why[0] = "answered 200, not with a peer's JSON"; // said only if it is no JSON object
      // An empty body or a JSON array, string or number parses too, as a node whose every field
      // reads as missing: a row of zeros, "not in the ring", for what is not a peer at all.
      return Optional.of(Json.tree(r.body())).filter(JsonNode::isObject);
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }
}
