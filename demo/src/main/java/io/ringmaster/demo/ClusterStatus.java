package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/** The launcher's {@code status}: one line per live peer from its {@code /stats}, and ring agreement. */
final class ClusterStatus {
  private final HttpClient http;
  private final PrintStream out;

  ClusterStatus(HttpClient http, PrintStream out) {
    this.http = http;
    this.out = out;
  }

  void print(List<PeerProcess> peers) {
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
    int members = 0;
    for (PeerProcess p : peers) {
      Optional<JsonNode> s = get(p.url() + "/stats");
      if (s.isEmpty()) {
        out.printf("%-10s %-24s (no answer)%n", p.id(), p.url());
        continue;
      }
      JsonNode j = s.get();
      answered++;
      members = j.path("members").asInt();
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
      out.println("ring: all " + answered + " peers agree (view/checksum " + rings.first() + ")"
          + (members > answered ? "; its " + members + " members include " + (members - answered)
              + " not started by this launcher, not listed above" : ""));
    } else {
      out.println("ring: peers DISAGREE or did not answer: " + rings + " (rings settle within a second or two)");
    }
    out.println("keys: " + primary + " primary copies, " + backup + " backup copies");
  }

  /**
   * Whether every peer answers with one ring (the same view and checksum) of at least these peers:
   * more when peers started by hand joined the cluster too.
   */
  boolean agree(List<PeerProcess> peers) {
    TreeSet<String> rings = new TreeSet<>();
    for (PeerProcess p : peers) {
      Optional<JsonNode> s = get(p.url() + "/stats");
      if (s.isEmpty() || s.get().path("members").asInt() < peers.size()) {
        return false;
      }
      rings.add(s.get().path("viewId").asLong() + "/" + s.get().path("checksum").asText());
    }
    return rings.size() == 1;
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
