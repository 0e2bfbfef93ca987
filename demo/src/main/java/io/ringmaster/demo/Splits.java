package io.ringmaster.demo;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The launcher's {@code split} and {@code heal}: a network partition between its own peers on this
 * machine. Each peer of one side is told to stop hearing every peer of the other
 * ({@code POST /admin/split}, which its {@code --fault-injection} allows), so that neither side
 * hears the other; {@code heal} tells every peer to hear them all again, and the sides merge. One
 * split at a time. Commands run one at a time, on the launcher's command thread.
 */
final class Splits {
  /** The two sides of a split in force: the ids listed, and the launcher's other peers then live. */
  record Sides(List<String> listed, List<String> others) {}

  private final HttpClient http;
  private final PrintStream out;
  private Optional<Sides> sides = Optional.empty();

  Splits(HttpClient http, PrintStream out) {
    this.http = http;
    this.out = out;
  }

  /** The split in force, if any. */
  Optional<Sides> sides() {
    return sides;
  }

  /**
   * {@code split <id> [<id> ...]}: cuts the peers {@code args} lists off from the launcher's other
   * live peers. Refused while a split is in force, for an id that is no live peer of this launcher,
   * for a list that leaves no peer on the other side, and while the ring holds a member this
   * launcher did not start or that exited here (a peer started by hand, under its own id or an
   * exited peer's, would hear both sides). If a peer does not take it, those told before it are
   * healed, and so is that peer if it may have taken it without answering; if one of them does
   * not heal, the split stays in force, for {@code heal} again.
   *
   * @param live    the live peers this launcher started
   * @param started the ids of every peer this launcher started, live or exited
   */
  void split(String args, List<PeerProcess> live, Set<String> started) {
    if (args.isBlank()) {
      out.println("usage: split <id> [<id> ...]: cuts the peers listed off from the others; live: " + ids(live));
      return;
    }
    if (sides.isPresent()) {
      out.println("a split is in force (" + shown(sides.get()) + "); type heal first");
      return;
    }
    List<String> liveIds = ids(live);
    Set<String> listed = new LinkedHashSet<>();
    for (String id : args.strip().split("\\s+")) {
      if (!liveIds.contains(id)) {
        out.println("no live peer " + Flags.quoted(id) + "; live: " + liveIds);
        return;
      }
      listed.add(id);
    }
    List<String> others = liveIds.stream().filter(id -> !listed.contains(id)).toList();
    if (others.isEmpty()) {
      out.println("split needs a live peer on each side: " + List.copyOf(listed)
          + " is every live peer, which leaves the other side empty");
      return;
    }
    // Every ring member must be a live peer of this launcher: any other would hear both sides.
    Set<String> strangers = new TreeSet<>(new ClusterStatus(http, out).ringIds(live));
    strangers.removeAll(liveIds);
    Set<String> exited = new TreeSet<>(strangers);
    exited.retainAll(started);
    strangers.removeAll(started);
    if (!strangers.isEmpty()) {
      out.println("the ring also holds " + strangers + ", not started here: the launcher cannot cut "
          + them(strangers) + " off from either side; stop " + them(strangers) + " first");
      return;
    }
    if (!exited.isEmpty()) {
      out.println("the ring still holds " + exited + ", which exited here: not yet out of the ring, or started"
          + " again by hand under " + (exited.size() == 1 ? "its id" : "their ids") + "; the launcher cannot cut "
          + them(exited) + " off from either side: wait until " + (exited.size() == 1 ? "it is" : "they are")
          + " out of the ring (status), or stop " + them(exited));
      return;
    }
    Sides s = new Sides(List.copyOf(listed), others);
    List<PeerProcess> told = new ArrayList<>();
    for (PeerProcess p : live) {
      List<String> cutOff = s.listed().contains(p.id()) ? s.others() : s.listed();
      Optional<Failure> failure = post(p, "/admin/split", Json.string(new SplitRequest(cutOff)));
      if (failure.isPresent()) {
        // A peer that answered, or that the request never reached, cut nothing off; one that
        // took the request and did not answer in time may have.
        List<PeerProcess> undo = new ArrayList<>(told);
        if (failure.get().mayHaveActed()) {
          undo.add(p);
        }
        out.println("split failed at " + p.id() + ": " + failure.get() + (undo.isEmpty() ? ""
            : "; healing " + ids(undo) + " again"));
        if (!healAll(undo)) {
          sides = Optional.of(s); // so that heal can be typed again
        }
        return;
      }
      told.add(p);
    }
    sides = Optional.of(s);
    out.println("split: " + shown(s) + "; within a few seconds each side drops the other from its ring"
        + " (failure detection) and takes writes on its own; type status to watch, heal to end it");
  }

  /** The body of {@code POST /admin/split}. */
  record SplitRequest(List<String> ids) {}

  /**
   * {@code heal}: tells every live peer to hear all the others again. False, saying so, if no split
   * is in force, or if a peer did not heal: the split then stays in force, so that {@code heal}
   * can be typed again (once a paused peer runs again, say, or has been stopped).
   */
  boolean heal(List<PeerProcess> live) {
    if (sides.isEmpty()) {
      out.println("no split in force");
      return false;
    }
    if (!healAll(live)) {
      return false;
    }
    Sides s = sides.get();
    sides = Optional.empty();
    List<String> liveIds = ids(live);
    Optional<List<String>> empty = Stream.of(s.listed(), s.others())
        .filter(side -> side.stream().noneMatch(liveIds::contains)).findFirst();
    out.println(empty.map(side -> "healed: no peer of " + side + " is live, so there is no other side to merge with")
        .orElse("healed: the sides merge within seconds (a membership event with \"merge\": true in /events)"));
    return true;
  }

  /**
   * Tells each of {@code peers} to hear all the others again; false, saying which did not, if one
   * did not answer that it did.
   */
  private boolean healAll(List<PeerProcess> peers) {
    List<String> failed = new ArrayList<>();
    for (PeerProcess p : peers) {
      post(p, "/admin/heal", "").ifPresent(f -> {
        out.println("heal failed at " + p.id() + ": " + f);
        failed.add(p.id());
      });
    }
    if (!failed.isEmpty()) {
      out.println("the split stays in force: " + failed + " may still be cut off; type heal again");
    }
    return failed.isEmpty();
  }

  /** For {@code status}: the sides of the split in force, each with its live peers' ring. */
  void printSides(List<PeerProcess> live) {
    if (sides.isEmpty()) {
      return;
    }
    List<String> parts = new ArrayList<>();
    for (List<String> side : List.of(sides.get().listed(), sides.get().others())) {
      List<PeerProcess> up = live.stream().filter(p -> side.contains(p.id())).toList();
      String ring = up.stream().map(this::ringMembers).flatMap(Optional::stream).findFirst()
          .map(m -> "its ring " + m).orElse(up.isEmpty() ? "no live peer" : "its ring unknown (no answer)");
      parts.add(ids(up) + ": " + ring);
    }
    out.println("split in force: " + String.join("; ", parts) + "; type heal to end it");
  }

  private Optional<List<String>> ringMembers(PeerProcess p) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(p.url() + "/ring?ranges=false"))
          .timeout(Duration.ofSeconds(3)).build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      if (r.statusCode() != 200) {
        return Optional.empty();
      }
      List<String> members = new ArrayList<>();
      Json.tree(r.body()).path("members").forEach(m -> members.add(m.path("id").asText()));
      return Optional.of(members);
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  /**
   * Why a POST to a peer failed: its answer's status (0 for none) and reason, or the exception;
   * {@code mayHaveActed} if the peer may have done what was asked all the same (the request sent,
   * no answer in time).
   */
  private record Failure(int status, String reason, boolean mayHaveActed) {
    @Override
    public String toString() {
      return status > 0 ? status + " " + reason : reason;
    }
  }

  /** POSTs {@code body} to the peer; empty if it answered 200, else why not. */
  private Optional<Failure> post(PeerProcess p, String path, String body) {
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(p.url() + path))
          .timeout(Duration.ofSeconds(5)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build(),
          HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      if (r.statusCode() == 200) {
        return Optional.empty();
      }
      String reason;
      try {
        JsonNode error = Json.tree(r.body()).path("error");
        reason = error.isTextual() ? error.asText() : r.body();
      } catch (RuntimeException notJson) {
        reason = r.body();
      }
      return Optional.of(new Failure(r.statusCode(), reason, false));
    } catch (ConnectException | HttpConnectTimeoutException notConnected) {
      return Optional.of(new Failure(0, notConnected.toString(), false));
    } catch (IOException | RuntimeException e) {
      return Optional.of(new Failure(0, e.toString(), true));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.of(new Failure(0, "interrupted", true));
    }
  }

  private static String them(Set<String> ids) {
    return ids.size() == 1 ? "it" : "them";
  }

  private static String shown(Sides s) {
    return s.listed() + " | " + s.others();
  }

  private static List<String> ids(List<PeerProcess> ps) {
    return ps.stream().map(PeerProcess::id).toList();
  }
}
