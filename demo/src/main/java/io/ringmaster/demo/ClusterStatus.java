package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/** The launcher's {@code status}: one line per live peer from its {@code /stats}, and ring agreement. */
final class ClusterStatus {
  private final HttpClient http;
  private final PrintStream out;

  ClusterStatus(HttpClient http, PrintStream out) {
    this.http = http;
    this.out = out;
  }

  /**
   * Prints the table and whether the peers agree.
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
    long primary = 0;
    long backup = 0;
    int answered = 0;
    for (PeerProcess p : peers) {
      Optional<JsonNode> s = get(p.url() + "/stats");
      if (s.isEmpty()) {
        out.printf("%-10s %-24s (no answer)%n", p.id(), p.url());
        continue;
      }
      JsonNode j = s.get();
      answered++;
      rings.add(j.path("viewId").asLong() + "/" + j.path("checksum").asText());
      primary += j.path("primaryKeys").asLong();
      backup += j.path("backupKeys").asLong();
      out.printf("%-10s %-24s %5d %-17s %7d %8d %8d %6d %9d %8d %8d%n", p.id(), p.url(), j.path("viewId").asLong(),
          j.path("checksum").asText(), j.path("members").asInt(), j.path("primaryKeys").asLong(),
          j.path("backupKeys").asLong(), j.path("strayKeys").asLong(),
          j.path("migrationsInProgress").asInt() + j.path("pendingCallbacks").asInt(),
          j.path("keysMigratedIn").asLong(), j.path("keysMigratedOut").asLong());
    }
    if (rings.size() == 1 && answered == peers.size()) {
      Set<String> others = new TreeSet<>(ringIds(peers.get(0)).orElse(Set.of()));
      peers.forEach(p -> others.remove(p.id()));
      out.println("ring: all " + answered + " peers agree (view/checksum " + rings.first() + ")"
          + (others.isEmpty() ? "" : "; also in it: " + others.stream()
              .map(id -> id + (gone.contains(id) ? " (exited, not yet out of the ring)" : " (not started here)"))
              .collect(Collectors.joining(", "))));
    } else {
      out.println("ring: peers DISAGREE or did not answer: " + rings + " (rings settle within a second or two)");
    }
    out.println("keys: " + primary + " primary copies, " + backup + " backup copies");
  }

  /**
   * Whether every live peer answers from one ring (the same view and checksum) that holds all of
   * them and none of the peers that exited; it may hold peers started by hand.
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
    Optional<Set<String>> ids = ringIds(peers.get(0));
    return ids.isPresent() && ids.get().containsAll(peers.stream().map(PeerProcess::id).toList())
        && Collections.disjoint(ids.get(), gone);
  }

  /** The ids of the members of a peer's ring. */
  private Optional<Set<String>> ringIds(PeerProcess p) {
    return get(p.url() + "/ring?ranges=false").map(ring -> {
      Set<String> ids = new TreeSet<>();
      ring.path("members").forEach(m -> ids.add(m.path("id").asText()));
      return ids;
    });
  }

  private Optional<JsonNode> get(String url) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(3)).build(),
          HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? Optional.of(Json.tree(r.body())) : Optional.empty();
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }
}
