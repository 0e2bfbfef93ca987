package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The launcher's {@code status} against two stand-in peers on 127.0.0.1 that report the same view
 * and checksum, one of them refused (not in the ring, as when another peer holds its id): status
 * must not say the peers agree, as its agreement check does not.
 */
class ClusterStatusTest {
  private final List<HttpServer> servers = new ArrayList<>();

  @AfterEach
  void stop() {
    servers.forEach(s -> s.stop(0));
  }

  private PeerProcess peer(String id, boolean inRing) throws Exception {
    return peer(id, inRing, 200);
  }

  /** A stand-in peer whose {@code /stats} answers {@code status} (a refusal's JSON reason unless 200). */
  private PeerProcess peer(String id, boolean inRing, int status) throws Exception {
    return peer(id, inRing, status, "ab12", "{\"error\":\"the peer is starting\"}");
  }

  /**
   * A stand-in peer reporting view 3 with {@code checksum}, whose {@code /stats} answers
   * {@code status}, with {@code refusal} as its body unless 200.
   */
  private PeerProcess peer(String id, boolean inRing, int status, String checksum, String refusal) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    byte[] stats = ("{\"id\":\"" + id + "\",\"viewId\":3,\"checksum\":\"" + checksum + "\",\"members\":2,"
        + "\"inRing\":" + inRing + ",\"primaryKeys\":0,\"backupKeys\":0,\"strayKeys\":0}")
        .getBytes(StandardCharsets.UTF_8);
    // The ring as both peers report it: both members, so that only inRing can tell them apart.
    byte[] ring = "{\"viewId\":3,\"members\":[{\"id\":\"peer-1\"},{\"id\":\"peer-2\"}]}"
        .getBytes(StandardCharsets.UTF_8);
    if (status != 200) {
      stats = refusal.getBytes(StandardCharsets.UTF_8);
    }
    for (Map.Entry<String, byte[]> reply : Map.of("/stats", stats, "/ring", ring).entrySet()) {
      int code = reply.getKey().equals("/stats") ? status : 200;
      server.createContext(reply.getKey(), ex -> {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, reply.getValue().length);
        ex.getResponseBody().write(reply.getValue());
        ex.close();
      });
    }
    server.start();
    servers.add(server);
    return new PeerProcess(id, server.getAddress().getPort(), null, null);
  }

  /** A status that prints to {@code out}. */
  private static ClusterStatus status(ByteArrayOutputStream out) {
    return new ClusterStatus(HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build(),
        new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  /** What status prints for these peers, once its agreement check said they do not agree; never "agree (". */
  private static String printedDisagreeing(List<PeerProcess> peers) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ClusterStatus status = status(bytes);
    assertFalse(status.agree(peers, Set.of()));
    status.print(peers, Set.of());
    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertFalse(printed.contains("agree ("), printed);
    return printed;
  }

  @Test
  void aPeerNotInTheRing_isNamed_andTheRingIsNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", false)));
    assertTrue(printed.contains("ring: not in the ring: peer-2 (refused, as when another peer holds its id, or"
        + " rejoining"), printed);

    List<PeerProcess> both = List.of(peer("peer-1", true), peer("peer-2", true));
    assertTrue(status(new ByteArrayOutputStream()).agree(both, Set.of()), "the same stand-ins, both in the ring, agree");
  }

  /**
   * A ring that still holds a peer that exited (killed, not yet out of the view) is no agreement;
   * one that holds a peer started by hand, which this launcher never ran, is.
   */
  @Test
  void aRingStillHoldingAPeerThatExited_isNotSaidToAgree() throws Exception {
    List<PeerProcess> one = List.of(peer("peer-1", true)); // its ring holds peer-1 and peer-2
    ClusterStatus status = status(new ByteArrayOutputStream());
    assertTrue(status.agree(one, Set.of()), "peer-2, started by hand");
    assertFalse(status.agree(one, Set.of("peer-2")), "peer-2 exited, and no process answers for it");
  }

  /** A peer that answers with a refusal is named with its reason, and the ring is not said to agree. */
  @Test
  void aPeerThatDoesNotServeYet_isNamedWithItsReason_andTheRingIsNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", true, 503)));
    assertTrue(printed.contains("(the peer is starting)"), printed);
    assertTrue(printed.contains("ring: peers DISAGREE or did not answer"), printed);
  }
  /** Peers in the ring, all answering, but on two rings (other checksums of one view): no agreement. */
  @Test
  void peersOnTwoRings_areNotSaidToAgree() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true, 200, "ab12", ""),
        peer("peer-2", true, 200, "cd34", "")));
    assertTrue(printed.contains("ring: peers DISAGREE or did not answer: [3/ab12, 3/cd34]"), printed);
  }

  /**
   * Two rings whose checksums differ only past the 120 characters a value is shown with (an
   * answer no peer gives, from something else on a peer's port): told apart by what they are, not
   * by how they are shown, as the agreement check tells them apart.
   */
  @Test
  void peersOnTwoRings_whoseChecksumsDifferPastWhatIsShown_areNotSaidToAgree() throws Exception {
    String common = "ab12".repeat(40);
    String printed = printedDisagreeing(List.of(peer("peer-1", true, 200, common + "1", ""),
        peer("peer-2", true, 200, common + "2", "")));
    assertTrue(printed.contains("ring: peers DISAGREE or did not answer"), printed);
  }

  /**
   * A checksum with a line break, from a peer started here (something else answering on its
   * port): the ring's line, which names it, stays one line, in agreement as in disagreement.
   */
  @Test
  void print_aChecksumWithALineBreak_leavesTheRingsLineOneLine() throws Exception {
    String forged = "ab12\\nring: all 9 peers agree"; // in JSON: a line break
    List<String> lines = printed(List.of(peer("peer-1", true, 200, forged, "")), Set.of());
    assertEquals(4, lines.size(), "a header, its row, ring, keys: " + lines);
    assertTrue(lines.get(2).startsWith("ring: peer-1 is in the ring (view/checksum \"3/ab12\\u000aring: all"),
        lines.toString());

    lines = printed(List.of(peer("peer-1", true, 200, "ab12", ""), peer("peer-2", true, 200, forged, "")), Set.of());
    assertEquals(5, lines.size(), "a header, two rows, ring, keys: " + lines);
    assertTrue(lines.get(3).startsWith("ring: peers DISAGREE or did not answer: [3/ab12, \"3/ab12\\u000aring: all"),
        lines.toString());
  }

  /**
   * Something else on a peer's port, answering with a page that is no JSON (a 404 of another
   * server): the peer is named as having answered that status, not as silent.
   */
  @Test
  void aPeerAnsweringWithAPageThatIsNoJson_isNamedWithTheStatus() throws Exception {
    String printed = printedDisagreeing(List.of(peer("peer-1", true), peer("peer-2", true, 404, "ab12",
        "<h1>Not Found</h1>")));
    assertTrue(printed.contains("(answered 404)"), printed);
    PeerProcess page = peer("peer-3", true);
    servers.get(servers.size() - 1).removeContext("/stats");
    servers.get(servers.size() - 1).createContext("/stats", ex -> {
      byte[] html = "<h1>Hello</h1>".getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(200, html.length);
      ex.getResponseBody().write(html);
      ex.close();
    });
    printed = printedDisagreeing(List.of(peer("peer-1", true), page));
    assertTrue(printed.contains("(answered 200, not with a peer's JSON)"), printed);
  }

  /**
   * Something else on a peer's port answering 200 with a body that parses but is no JSON object
   * (nothing at all, an array, a string): not a peer's {@code /stats}, so no row of zeros, and the
   * peer is not said to be out of the ring (refused) but named as answering with no peer's JSON.
   */
  @Test
  void aPeerAnswering200WithNoJsonObject_isNamedAsSuch_notAsOutOfTheRing() throws Exception {
    for (String body : List.of("", "[1]", "\"ok\"")) {
      HttpServer other = server();
      answer(other, "/stats", body);
      PeerProcess notAPeer = new PeerProcess("peer-2", other.getAddress().getPort(), null, null);
      List<PeerProcess> peers = List.of(peer("peer-1", true), notAPeer);

      String printed = printedDisagreeing(peers);

      assertTrue(printed.lines().anyMatch(line -> line.matches("peer-2 +" + Pattern.quote(notAPeer.url())
          + " +\\(answered 200, not with a peer's JSON\\)")), "for [" + body + "]: " + printed);
      assertFalse(printed.contains("not in the ring"), "for [" + body + "]: " + printed);
    }
  }

  /** A stand-in peer's server, listening on 127.0.0.1; its replies are set with {@link #answer}. */
  private HttpServer server() throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.start();
    servers.add(server);
    return server;
  }

  private static void answer(HttpServer server, String path, String json) {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    server.createContext(path, ex -> {
      ex.getResponseHeaders().set("Content-Type", "application/json");
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
  }

  /** The {@code /stats} of a member in the ring of view 3, checksum ab12, with these counts. */
  private static String stats(String id, long primary, long backup, int migrating, int queued) {
    return "{\"id\":\"" + id + "\",\"viewId\":3,\"checksum\":\"ab12\",\"members\":2,\"inRing\":true,"
        + "\"primaryKeys\":" + primary + ",\"backupKeys\":" + backup + ",\"strayKeys\":0,\"migrationsInProgress\":"
        + migrating + ",\"pendingCallbacks\":" + queued + ",\"keysMigratedIn\":0,\"keysMigratedOut\":0}";
  }

  /** The {@code /ring} of view 3 with these members, each with the endpoint it announced. */
  private static String ring(Map<String, String> endpoints) {
    return endpoints.entrySet().stream()
        .map(m -> "{\"id\":\"" + m.getKey() + "\",\"endpoint\":\"" + m.getValue() + "\"}")
        .collect(Collectors.joining(",", "{\"viewId\":3,\"members\":[", "]}"));
  }

  private static String url(HttpServer server) {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /**
   * The table and the totals: a peer's "migrating" column counts the changes it is handling and
   * those queued; the keys line adds up every peer's primary copies, and its backup copies.
   */
  @Test
  void print_agreeingPeers_rowPerPeer_andTotalsOfTheirKeys() throws Exception {
    HttpServer one = server();
    HttpServer two = server();
    Map<String, String> members = new LinkedHashMap<>();
    members.put("peer-1", url(one));
    members.put("peer-2", url(two));
    answer(one, "/stats", stats("peer-1", 5, 2, 1, 2));
    answer(two, "/stats", stats("peer-2", 3, 4, 0, 0));
    answer(one, "/ring", ring(members));
    answer(two, "/ring", ring(members));
    List<PeerProcess> peers = List.of(new PeerProcess("peer-1", one.getAddress().getPort(), null, null),
        new PeerProcess("peer-2", two.getAddress().getPort(), null, null));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    status(bytes).print(peers, Set.of());

    String printed = bytes.toString(StandardCharsets.UTF_8);
    List<String> row = printed.lines().filter(l -> l.startsWith("peer-1 ")).map(l -> Arrays.asList(l.trim().split(" +")))
        .findFirst().orElseThrow(() -> new AssertionError(printed));
    assertEquals(List.of("peer-1", url(one), "3", "ab12", "2", "5", "2", "0", "3", "0", "0"), row,
        "id url view checksum members primary backup stray migrating movedIn movedOut");
    assertTrue(printed.contains("ring: all 2 peers agree (view/checksum 3/ab12)"), printed);
    assertTrue(printed.contains("keys: 8 primary copies, 6 backup copies"), printed);
  }

  /** A port on 127.0.0.1 that nothing listens on: a peer that has gone, or not bound yet. */
  private static int silentPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** The lines {@code status} prints for {@code peers} of which {@code gone} exited. */
  private static List<String> printed(List<PeerProcess> peers, Set<String> gone) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    status(bytes).print(peers, gone);
    return bytes.toString(StandardCharsets.UTF_8).lines().toList();
  }

  @Test
  void print_noLivePeers_saysSo() {
    assertEquals(List.of("no live peers"), printed(List.of(), Set.of()));
  }

  /**
   * What a user reads for a peer that does not answer at all: its row gives its id, its URL and
   * "no answer", the ring is not said to agree, and the totals are those of the peers that
   * answered.
   */
  @Test
  void print_aPeerThatDoesNotAnswer_isNamedAsSilent_andOnlyTheOthersCount() throws Exception {
    PeerProcess silent = new PeerProcess("peer-2", silentPort(), null, null);
    HttpServer one = server();
    answer(one, "/stats", stats("peer-1", 5, 2, 0, 0));
    List<PeerProcess> peers = List.of(new PeerProcess("peer-1", one.getAddress().getPort(), null, null), silent);

    List<String> lines = printed(peers, Set.of());

    assertEquals(5, lines.size(), lines.toString());
    assertTrue(lines.get(0).matches("id +url +view +checksum +members +primary +backup +stray +migrating +movedIn"
        + " +movedOut"), lines.get(0));
    assertTrue(lines.get(1).startsWith("peer-1 "), lines.toString());
    assertEquals(List.of("peer-2", silent.url(), "(no", "answer)"), Arrays.asList(lines.get(2).split(" +")));
    assertEquals("ring: peers DISAGREE or did not answer: [3/ab12] (rings settle within a second or two)", lines.get(3));
    assertEquals("keys: 5 primary copies, 2 backup copies", lines.get(4));
    assertFalse(status(new ByteArrayOutputStream()).agree(peers, Set.of()));
  }

  /**
   * The other members of a ring the peers agree on, when they do not answer: one that this
   * launcher started and that exited is "exited, not yet out of the ring"; any other is "not
   * started here", with the endpoint it was asked at, if it announced one.
   */
  @Test
  void print_ringMembersThatDoNotAnswer_areNamedAsExitedOrNotStartedHere() throws Exception {
    HttpServer one = server();
    Map<String, String> members = new LinkedHashMap<>();
    members.put("peer-1", url(one));
    members.put("peer-2", "");
    members.put("peer-3", "");
    members.put("peer-4", "http://127.0.0.1:" + silentPort());
    answer(one, "/stats", stats("peer-1", 1, 0, 0, 0));
    answer(one, "/ring", ring(members));
    List<PeerProcess> peers = List.of(new PeerProcess("peer-1", one.getAddress().getPort(), null, null));

    List<String> lines = printed(peers, Set.of("peer-2"));

    assertEquals("ring: peer-1 is in the ring (view/checksum 3/ab12); also in it: peer-2 (exited, not yet out of the"
        + " ring), peer-3 (not started here, no answer), peer-4 (not started here, no answer at " + members.get("peer-4")
        + ")", lines.get(lines.size() - 2), lines.toString());
    assertEquals("keys: 1 primary copies, 0 backup copies", lines.get(lines.size() - 1));
  }

  /**
   * Agreement needs a ring that holds every peer this launcher started, from a peer that gives
   * its ring: here the one peer is in its ring by its own word, but the ring it gives holds two
   * others, or it gives none.
   */
  @Test
  void agree_aRingWithoutALaunchedPeer_orNoRingAtAll_isNoAgreement() throws Exception {
    ClusterStatus status = status(new ByteArrayOutputStream());
    assertFalse(status.agree(List.of(peer("peer-3", true)), Set.of()), "its ring holds peer-1 and peer-2 only");

    PeerProcess noRing = peer("peer-1", true);
    servers.get(servers.size() - 1).removeContext("/ring");
    assertFalse(status.agree(List.of(noRing), Set.of()), "no ring given");
    assertTrue(status.agree(List.of(peer("peer-1", true)), Set.of()), "the same stand-in, giving its ring");
  }

  /** The ids {@code add} must skip: the ring of the first peer that answers; none when none does. */
  @Test
  void ringIds_ofTheFirstPeerThatAnswers_orNone() throws Exception {
    ClusterStatus status = status(new ByteArrayOutputStream());
    PeerProcess silent = new PeerProcess("peer-9", silentPort(), null, null);
    assertEquals(Set.of("peer-1", "peer-2"), status.ringIds(List.of(silent, peer("peer-1", true))));
    assertEquals(Set.of(), status.ringIds(List.of(silent)));
  }

  /**
   * A status asked from an interrupted thread (a launcher being stopped) asks no peer and keeps
   * the interrupt for its caller; the peer is named as silent.
   */
  @Test
  void print_onAnInterruptedThread_keepsTheInterrupt() throws Exception {
    PeerProcess p = peer("peer-1", true);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Thread.currentThread().interrupt();
    boolean kept;
    try {
      status(bytes).print(List.of(p), Set.of());
    } finally {
      kept = Thread.interrupted(); // cleared either way: the next test runs on this thread
    }
    assertTrue(kept, "the interrupt was swallowed");
    assertTrue(bytes.toString(StandardCharsets.UTF_8).contains("(no answer)"), bytes::toString);
  }

  /**
   * Ring members this launcher did not start are asked at the endpoint they announced, http or
   * https (here through a client that takes the https one to its stand-in as a TLS proxy would);
   * one whose endpoint is no URL is not asked. One that answers under the id of a peer that exited
   * stands for it: its row is printed and its keys count. An answer at a member's endpoint from
   * another peer, or from one out of the ring, is none.
   */
  @Test
  void membersStartedByHand_areAskedAtTheirHttpOrHttpsEndpoint_andCountWhenTheyAnswer() throws Exception {
    HttpServer one = server();
    HttpServer plain = server();
    HttpServer tls = server();
    HttpServer noUrl = server();
    HttpServer outOfRing = server();
    String tlsEndpoint = "https://127.0.0.1:" + tls.getAddress().getPort();
    String noUrlEndpoint = "127.0.0.1:" + noUrl.getAddress().getPort();
    Map<String, String> members = new LinkedHashMap<>();
    members.put("peer-1", url(one));
    members.put("peer-2", url(plain).replace("http://", "HTTP://")); // a scheme is read in any case
    members.put("peer-3", tlsEndpoint);
    members.put("peer-4", noUrlEndpoint);
    members.put("peer-5", url(one)); // where peer-1 answers
    members.put("peer-6", url(outOfRing));
    Map<String, HttpServer> byId = Map.of("peer-1", one, "peer-2", plain, "peer-3", tls, "peer-4", noUrl,
        "peer-6", outOfRing);
    byId.forEach((id, server) -> {
      String inRing = "\"inRing\":" + !id.equals("peer-6");
      answer(server, "/stats", stats(id, 1, 0, 0, 0).replace("\"inRing\":true", inRing));
      answer(server, "/ring", ring(members));
    });
    List<PeerProcess> launched = List.of(new PeerProcess("peer-1", one.getAddress().getPort(), null, null));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ClusterStatus status = new ClusterStatus(new HttpsAsHttp(), new PrintStream(bytes, true, StandardCharsets.UTF_8));

    assertTrue(status.agree(launched, Set.of("peer-2", "peer-3")),
        "the peers answering hold the ids of those that exited");
    assertFalse(status.agree(launched, Set.of("peer-4")), "peer-4 exited, and an endpoint that is no URL is not asked");
    assertFalse(status.agree(launched, Set.of("peer-5")), "peer-5 exited; peer-1 answers at its endpoint");
    assertFalse(status.agree(launched, Set.of("peer-6")), "peer-6 exited; the one answering as it is out of the ring");
    status.print(launched, Set.of("peer-2", "peer-3"));

    String printed = bytes.toString(StandardCharsets.UTF_8);
    assertTrue(printed.contains("also in it: peer-2 (started by hand), peer-3 (started by hand), peer-4 (not started"
        + " here, no answer at " + noUrlEndpoint + "), peer-5 (not started here, no answer at " + url(one) + "), peer-6"
        + " (not started here, no answer at " + url(outOfRing) + ")"), printed);
    assertTrue(printed.lines().anyMatch(l -> l.startsWith("peer-3 ") && l.contains(tlsEndpoint)), printed);
    assertTrue(printed.contains("keys: 3 primary copies"), "peer-1, peer-2 and peer-3: " + printed);
  }

  /**
   * What other members say of themselves (an id, an endpoint, a checksum; a peer's reason for
   * not serving) is shown as the launcher shows any value: a line break in it leaves the status
   * one line a peer, so a member whose id holds one cannot add a line that reads as the launcher's.
   */
  @Test
  void print_idsAndWordsOfOtherPeersWithLineBreaks_areShownEscaped_eachOnItsLine() throws Exception {
    HttpServer one = server();
    HttpServer byHand = server();
    String forged = "\\nring: all 9 peers agree (view/checksum 3/ab12)\\n"; // in JSON: line breaks
    Map<String, String> members = new LinkedHashMap<>();
    members.put("peer-1", url(one));
    members.put("by-hand" + forged, url(byHand));
    members.put("silent" + forged, "http://127.0.0.1:" + silentPort() + forged);
    answer(one, "/stats", stats("peer-1", 1, 0, 0, 0));
    answer(byHand, "/stats", stats("by-hand" + forged, 1, 0, 0, 0).replace("\"ab12\"", "\"ab12" + forged + "\""));
    for (HttpServer s : List.of(one, byHand)) {
      answer(s, "/ring", ring(members));
    }
    List<PeerProcess> peers = List.of(new PeerProcess("peer-1", one.getAddress().getPort(), null, null));

    List<String> lines = printed(peers, Set.of());

    assertEquals(5, lines.size(), "a header, a row for each peer that answered, ring, keys: " + lines);
    assertTrue(lines.get(2).startsWith("\"by-hand\\u000aring: all 9 peers agree (view/checksum 3/ab12)\\u000a\" "),
        lines.toString());
    assertTrue(lines.get(2).contains(" \"ab12\\u000aring: all"), lines.toString());
    assertTrue(lines.get(3).startsWith("ring: peer-1 is in the ring (view/checksum 3/ab12); also in it: \"by-hand"),
        lines.toString());
    assertTrue(lines.get(3).contains("\"silent\\u000aring: all"), lines.toString());

    HttpServer starting = server();
    starting.createContext("/stats", ex -> {
      byte[] body = ("{\"error\":\"starting" + forged + "\"}").getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(503, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    lines = printed(List.of(new PeerProcess("peer-2", starting.getAddress().getPort(), null, null)), Set.of());
    assertEquals(4, lines.size(), lines.toString());
    assertTrue(lines.get(1).endsWith("(\"starting\\u000aring: all 9 peers agree (view/checksum 3/ab12)\\u000a\")"),
        lines.toString());
  }

  /**
   * A client that sends a request for {@code https://host:port/...} to {@code http://host:port/...},
   * as a TLS proxy in front of a peer would.
   */
  private static final class HttpsAsHttp extends HttpClient {
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private static HttpRequest plain(HttpRequest request) {
      String uri = request.uri().toString();
      if (!uri.startsWith("https://")) {
        return request;
      }
      HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + uri.substring("https://".length())))
          .method(request.method(), request.bodyPublisher().orElse(HttpRequest.BodyPublishers.noBody()));
      request.timeout().ifPresent(b::timeout);
      return b.build();
    }

    @Override
    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
        throws IOException, InterruptedException {
      return http.send(plain(request), handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
      return http.sendAsync(plain(request), handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler,
                                                            HttpResponse.PushPromiseHandler<T> pushes) {
      return http.sendAsync(plain(request), handler, pushes);
    }

    @Override
    public Optional<CookieHandler> cookieHandler() {
      return http.cookieHandler();
    }

    @Override
    public Optional<Duration> connectTimeout() {
      return http.connectTimeout();
    }

    @Override
    public Redirect followRedirects() {
      return http.followRedirects();
    }

    @Override
    public Optional<ProxySelector> proxy() {
      return http.proxy();
    }

    @Override
    public SSLContext sslContext() {
      return http.sslContext();
    }

    @Override
    public SSLParameters sslParameters() {
      return http.sslParameters();
    }

    @Override
    public Optional<Authenticator> authenticator() {
      return http.authenticator();
    }

    @Override
    public Version version() {
      return http.version();
    }

    @Override
    public Optional<Executor> executor() {
      return http.executor();
    }
  }
}
