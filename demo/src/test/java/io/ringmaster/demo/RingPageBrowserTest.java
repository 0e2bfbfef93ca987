package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.contains;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The live ring page in headless Chromium against a real 3-peer cluster: three members' arcs and
 * matching checksums; a peer killed with SIGKILL disappears without a reload; a key put from the
 * page shows its owners; a page whose event stream is refused comes live once places are free; a
 * hidden page gives its stream up; a slow reply does not overwrite a newer one; ids, zones, keys
 * and values that are HTML show as text; a peer's refusal shows its reason; a page whose peer stops
 * answering says so; a split made with {@code POST /admin/split} is said, naming the peers cut
 * off, until the heal; at 1200 and 800 px nothing scrolls sideways, long ids included. Screenshots
 * go to {@code target/screenshots/} for people to look at.
 *
 * <p>Uses Debian's {@code chromium} and {@code chromium-driver} ({@code .ci/run} installs them);
 * {@code -Dchrome.binary} and {@code -Dchromedriver} point elsewhere.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class RingPageBrowserTest extends WithPeerCluster {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private WebDriver browser;
  private Path screenshots;
  /** The browser's throw-away profile, deleted after the test. */
  private Path profile;

  @BeforeEach
  void startBrowser() throws IOException {
    Path chrome = Path.of(System.getProperty("chrome.binary", "/usr/bin/chromium"));
    Path driver = Path.of(System.getProperty("chromedriver", "/usr/bin/chromedriver"));
    assertTrue(Files.isExecutable(chrome) && Files.isExecutable(driver), "the browser test needs " + chrome + " and "
        + driver + ": apt-get install chromium chromium-driver (as .ci/run does)");
    screenshots = Files.createDirectories(Path.of("target", "screenshots"));
    profile = Files.createTempDirectory("ringmaster-chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chrome.toFile());
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--window-size=1440,900", "--user-data-dir=" + profile);
    // Not any free port the kernel hands out: an outgoing connection can take it before the driver binds it.
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(driver.toFile())
        .usingPort(PeerCluster.freePort()).build();
    // Selenium adds no hook of its own: a test JVM that is stopped (Ctrl-C, a surefire timeout)
    // would leave the driver and the browser running.
    Runtime.getRuntime().addShutdownHook(browserKiller);
    browser = new ChromeDriver(service, options);
    // Kept now: should the driver die, the browser it started is no longer this JVM's descendant.
    browserProcesses.addAll(ProcessHandle.current().descendants().filter(RingPageBrowserTest::isBrowser).toList());
  }

  /** The driver and browser processes, as they were once the browser started. */
  private final List<ProcessHandle> browserProcesses = new CopyOnWriteArrayList<>();
  /** Kills the chromedriver and browser processes this JVM started, if any are left. */
  private final Thread browserKiller = new Thread(this::killBrowserProcesses, "kill-browser");

  private static boolean isBrowser(ProcessHandle p) {
    return p.info().command().map(c -> Path.of(c).getFileName().toString().contains("chrom")).orElse(false);
  }

  /** A handle remembers its process's start time: a pid taken since by another process is left alone. */
  private void killBrowserProcesses() {
    browserProcesses.forEach(ProcessHandle::destroyForcibly);
    ProcessHandle.current().descendants().filter(RingPageBrowserTest::isBrowser).forEach(ProcessHandle::destroyForcibly);
  }

  /** Waits up to 10 s for every browser process started to exit (killed, or quit). */
  private void awaitBrowserExits() {
    List<ProcessHandle> all = new ArrayList<>(browserProcesses);
    ProcessHandle.current().descendants().filter(RingPageBrowserTest::isBrowser).forEach(all::add);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (ProcessHandle p : all) {
      try {
        p.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException | TimeoutException e) {
        // still running after 10 s, or gone in a way the handle cannot tell: the deletion below tries all the same
      }
    }
  }

  @AfterEach
  void stop() throws IOException {
    try {
      if (browser != null) {
        browser.quit(); // then WithPeerCluster closes the peers' processes, even if this throws
      }
    } finally {
      killBrowserProcesses(); // those quit() left behind (it failed, or timed out)
      awaitBrowserExits(); // before the profile they write to is deleted
      try {
        Runtime.getRuntime().removeShutdownHook(browserKiller); // false if the set-up failed before adding it
      } catch (IllegalStateException shuttingDown) {
        // the hook runs
      }
      if (profile != null) {
        try (Stream<Path> files = Files.walk(profile)) {
          for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
            Files.deleteIfExists(p);
          }
        }
      }
    }
  }

  @Test
  void ringPage_killAPeerAndPutAKey_updatesLiveWithoutReload() throws IOException, InterruptedException {
    cluster = new PeerCluster("browser", 2);
    cluster.startAll("peer-1", "peer-2", "peer-3");
    cluster.awaitSettled(List.of("peer-1", "peer-2", "peer-3"), WAIT);
    browser.get(cluster.peer("peer-1").url() + "/");
    JavascriptExecutor js = (JavascriptExecutor) browser;
    js.executeScript("window.__loadedOnce = 'yes';"); // gone if the page reloads

    await("three arcs and agreement").atMost(WAIT).ignoreExceptions().until(() ->
        arcs().size() == 3 && "agree".equals(badge().getAttribute("data-state")));
    String pageChecksum = browser.findElement(By.id("checksum")).getText();
    assertEquals(cluster.json("peer-2", "/ring").path("checksum").asText(), pageChecksum);
    await("every member's checksum shown and equal").atMost(WAIT).ignoreExceptions().until(() ->
        memberChecksums().equals(Set.of(pageChecksum)) && rows().size() == 3);
    shoot("ring-3-peers");
    // Nothing scrolls the page sideways, nor the members table or the log in their boxes, at 1200
    // and 800 px: with this cluster's members, then with long ids, a zone and large counts in the
    // table and the header, and an event the log shows as its JSON.
    for (int width : new int[] {1200, 800}) {
      browser.manage().window().setSize(new Dimension(width, 900));
      assertEquals(width, ((Number) js.executeScript("return window.innerWidth;")).intValue());
      assertEquals(List.of(), js.executeScript(OVERFLOWS), "overflow at " + width + " px, this cluster's members");
      assertEquals(List.of(), js.executeScript(LONG_TEXTS + OVERFLOWS_OF_LONG_TEXTS),
          "overflow at " + width + " px, long ids and an event's JSON");
      if (width == 800) {
        shoot("ring-800px");
      }
    }
    browser.manage().window().setSize(new Dimension(1440, 900));

    cluster.kill("peer-3");
    // Every state the badge shows meanwhile: the members report the new view within about a
    // second of each other, which is "settling", never a divergence.
    List<String> states = new CopyOnWriteArrayList<>();
    await("the killed peer leaves the page").atMost(WAIT).ignoreExceptions().until(() -> {
      String state = badge().getAttribute("data-state");
      states.add(state + ": " + badge().getText());
      return arcs().size() == 2 && rows().size() == 2 && "agree".equals(state);
    });
    // (A poll that times out on a loaded machine shows "does not answer" in the same red: not this.)
    assertTrue(states.stream().noneMatch(st -> st.contains("divergence:")), states::toString);
    assertEquals("yes", js.executeScript("return window.__loadedOnce;"), "the page was reloaded");
    assertTrue(arcs().stream().noneMatch(a -> "peer-3".equals(a.getAttribute("data-member"))));
    // The log says what each member took, not only what this page's peer did.
    await("the log names what each peer took from peer-3").atMost(WAIT).ignoreExceptions().until(() -> {
      List<String> moves = browser.findElements(By.cssSelector("#log .moves li")).stream()
          .map(WebElement::getText).toList();
      return moves.stream().anyMatch(m -> m.startsWith("peer-3 lost ") && m.endsWith(" to peer-1, peer-2"))
          && moves.stream().anyMatch(m -> m.startsWith("peer-1 gained ") && m.endsWith(" from peer-3"))
          && moves.stream().anyMatch(m -> m.startsWith("peer-2 gained ") && m.endsWith(" from peer-3"));
    });
    shoot("ring-after-kill");

    browser.findElement(By.id("key")).sendKeys("user:42");
    browser.findElement(By.id("value")).sendKeys("Ada");
    browser.findElement(By.id("put")).click();
    WebElement result = browser.findElement(By.id("kv-result"));
    await("the put's owners shown").atMost(WAIT)
        .until(() -> !Objects.toString(result.getAttribute("data-owners"), "").isEmpty());
    JsonNode stored = PeerCluster.parse(cluster.get("peer-2", "user:42").body());
    assertEquals("Ada", stored.path("value").asText());
    String owners = result.getAttribute("data-owners"); // from the put's reply, primary first
    Set<String> expected = new HashSet<>();
    stored.path("owners").forEach(o -> expected.add(o.isTextual() ? o.asText() : o.path("id").asText()));
    assertEquals(expected, Set.of(owners.split(",")));
    List<WebElement> highlighted = browser.findElements(By.cssSelector("#arcs path.owner"));
    assertEquals(expected, highlighted.stream().map(a -> a.getAttribute("data-member")).collect(Collectors.toSet()));
    assertEquals(1, browser.findElements(By.cssSelector("#key-marker circle")).size(), "the key's position is marked");
    shoot("ring-with-key");

    // Enter in the key field looks the key up: it must not put the value field, now empty.
    browser.findElement(By.id("value")).clear();
    WebElement keyField = browser.findElement(By.id("key"));
    keyField.clear();
    keyField.sendKeys("user:42", Keys.ENTER);
    await("Enter got the key").atMost(WAIT).until(() -> result.getText().startsWith("user:42 = Ada, held by "));
    assertEquals("Ada", PeerCluster.parse(cluster.get("peer-2", "user:42").body()).path("value").asText());

    // A range between two positions that doubles cannot tell apart (one apart, in the upper half
    // of the circle) is drawn as the sliver it is, not as the whole circle.
    String sliver = (String) js.executeScript("return arcPath('6917529027641081856', '6917529027641081857', 100);");
    assertTrue(sliver.startsWith("M ") && sliver.contains(" L ") && !sliver.contains(" A "), sliver);

    // The page hashes keys as the spec does (its golden hashes), to mark a key's position.
    JsonNode spec = PeerCluster.parse(goldenVectors());
    for (JsonNode h : spec.path("hashes")) {
      assertEquals(h.path("h1").asText(), js.executeScript("return position(arguments[0]).toString();",
          h.path("input").asText()), "the page's hash of \"" + h.path("input").asText() + "\"");
    }
    // Every text an event carries reaches the log escaped: ids, zones and reasons come from peers.
    String escaped = (String) js.executeScript("const t = '<img src=x onerror=\\'window.__xss=1\\'>';"
        + "const ev = (type) => ({type, id: t, reason: t, viewId: t, members: [t], joined: [t], left: [t],"
        + "  refused: [t], merge: true, moved: [{id: t, gainedRanges: t, lostRanges: t, from: [t], to: [t]}],"
        + "  gainedRanges: t, lostRanges: t, sources: [t], destinations: [t], roleChanges: t, direction: t,"
        + "  keys: t, ranges: t, peers: [t], millis: t, kind: t, peer: t, peerChecksum: t, localChecksum: t,"
        + "  from: t, missed: t});"
        + "return ['started', 'membership', 'ownership', 'migration', 'sweep', 'repair', 'divergence',"
        + "  'received', 'gap', 'leaving', t].map(type => describe(ev(type))).join('\\n');");
    assertTrue(escaped.contains("&lt;img") && !escaped.contains("<img"), escaped);
    // A refused peer's change says so, and does not read as if the peer handed its keys to itself.
    String refused = (String) js.executeScript("return describe({type: 'ownership', reason: 'view', viewId: 9,"
        + " self: 'peer-2', refused: true, lostRanges: 4, lostFraction: 0.25, destinations: ['peer-1', 'peer-2']});");
    assertEquals("this peer, view 9: <b>refused</b>, another peer holds its id; <span class=\"loss\">lost 4 ranges"
        + " (" + js.executeScript("return pct(0.25);") + ") to peer-1, peer-2 (the peer that kept the id)</span>", refused);
    // A pull tried again, and a pass of a leave's drain, say so (the retry for which view), after
    // what moved; a drain pass hands on entries, not ranges, and lists none.
    assertEquals("<span class=\"gain\">12 keys moved in</span> (3 ranges, peer-1) in 40 ms, the pull for view 7"
        + " tried again", js.executeScript("return describe({type: 'migration', direction: 'in', reason: 'retry',"
        + " viewId: 7, keys: 12, ranges: 3, peers: ['peer-1'], millis: 40, ok: true});"));
    assertEquals("<span class=\"loss\">5 keys moved out</span> (peer-1, peer-3) in 9 ms, a pass of the leave's"
        + " drain <b>incomplete</b>", js.executeScript("return describe({type: 'migration', direction: 'out',"
        + " reason: 'drain', viewId: 8, keys: 5, ranges: 0, peers: ['peer-1', 'peer-3'], millis: 9, ok: false});"));
    // The badge over time, for a member x that lags on view 3 while this peer is on view 4: settling,
    // then a divergence once that lasted 5 s; x catches up; a minute later the same pair of views
    // again (a cluster restarted while the page stayed open numbers its views again) settles
    // afresh, it is not a divergence counted from the first; then x's report grows old on view 3:
    // no recent report, not a divergence. One script: the page's own polls cannot run between.
    assertEquals(List.of("unknown", "diverge", "agree", "unknown", "unknown: 2 of 2 members reported (no recent"
        + " report from x)"), js.executeScript(""
        + "const ring = (xView, recent) => ({viewId: 4, checksum: 'c', members: [{id: 'a'}, {id: 'x'}],"
        + "  peers: [{id: 'a', viewId: 4, checksum: 'c', agrees: true, recent: true},"
        + "          {id: 'x', viewId: xView, checksum: 'c', agrees: xView === 4 && recent, recent}]});"
        + "const badge = document.getElementById('agreement');"
        + "const realNow = Date.now; let now = realNow(); Date.now = () => now;"
        + "const seen = [];"
        + "const show = (r) => { renderAgreement(r); seen.push(badge.dataset.state); };"
        + "try {"
        + "  show(ring(3, true)); now += 6000; show(ring(3, true)); show(ring(4, true));"
        + "  now += 60000; show(ring(3, true));"
        + "  now += 6000; renderAgreement(ring(3, false)); seen.push(badge.dataset.state + ': ' + badge.textContent);"
        + "} finally { Date.now = realNow; }"
        + "return seen;"));
    // Another checksum on the same view is a divergence at once: the same view cannot settle into another ring.
    assertEquals("diverge: divergence: x sees another ring", js.executeScript(""
        + "renderAgreement({viewId: 4, checksum: 'c', members: [{id: 'a'}, {id: 'x'}],"
        + "  peers: [{id: 'a', viewId: 4, checksum: 'c', agrees: true, recent: true},"
        + "          {id: 'x', viewId: 4, checksum: 'd', agrees: false, recent: true}]});"
        + "const badge = document.getElementById('agreement');"
        + "return badge.dataset.state + ': ' + badge.textContent;"));
    // A ring of one member has no other to agree with: said so, not "all 1 members agree".
    assertEquals("agree: 1 member, no other ring to compare with", js.executeScript(""
        + "renderAgreement({viewId: 2, checksum: 'c', members: [{id: 'a'}],"
        + "  peers: [{id: 'a', viewId: 2, checksum: 'c', agrees: true, recent: true}]});"
        + "const badge = document.getElementById('agreement');"
        + "return badge.dataset.state + ': ' + badge.textContent;"));

    // The key ".." cannot leave a browser as it is (it resolves /kv/.. to /): said so, not sent.
    WebElement key = browser.findElement(By.id("key"));
    key.clear();
    key.sendKeys("..");
    browser.findElement(By.id("get")).click();
    await("the key .. refused on the page").atMost(WAIT).until(() ->
        result.getText().equals("get ..: the keys . and .. cannot be sent from a browser; use curl --path-as-is"));

    // A key the peer refuses: the page says why, with the peer's own reason.
    String tooLong = "k".repeat(257);
    key.clear();
    key.sendKeys(tooLong);
    browser.findElement(By.id("put")).click();
    await("the peer's reason shown").atMost(WAIT).until(() ->
        result.getText().equals("put " + tooLong + ": 400 key too long: 257 UTF-8 bytes, at most 256"));

    // A key and a value that are HTML come back as the text they are, and nothing in them runs.
    String html = "<img src=x onerror=window.__xss=1>";
    key.clear();
    key.sendKeys(html);
    WebElement value = browser.findElement(By.id("value"));
    value.clear();
    value.sendKeys(html);
    browser.findElement(By.id("put")).click();
    await("the HTML key stored").atMost(WAIT).until(() -> result.getText().startsWith("stored " + html + " on "));
    value.clear();
    browser.findElement(By.id("get")).click();
    await("the HTML key read back").atMost(WAIT).until(() ->
        result.getText().startsWith(html + " = " + html + ", held by "));
    assertNull(js.executeScript("return window.__xss;"), "an onerror in a key or a value ran");

    // A page whose event stream is refused (every place taken: 503, which ends an EventSource for
    // good) comes live by itself once places are free again.
    List<Socket> streams = new ArrayList<>();
    try {
      for (int i = 0; i < EventLog.MAX_SUBSCRIBERS; i++) {
        streams.add(cluster.openEvents("peer-2"));
      }
      await("every place on peer-2 taken").atMost(WAIT).ignoreExceptions().until(() ->
          cluster.json("peer-2", "/stats").path("eventSubscribers").asInt() == EventLog.MAX_SUBSCRIBERS);
      browser.get(cluster.peer("peer-2").url() + "/");
      await("the page's stream refused").atMost(WAIT).ignoreExceptions().until(() ->
          browser.findElement(By.id("live")).getText().startsWith("(reconnecting"));
    } finally {
      for (Socket stream : streams) {
        stream.close();
      }
    }
    await("the page live again, with its log").atMost(WAIT).ignoreExceptions().until(() ->
        browser.findElement(By.id("live")).getText().equals("(live)")
            && !browser.findElements(By.cssSelector("#log li")).isEmpty());

    // A hidden tab gives its stream's place back (a browser allows six connections to one peer,
    // and an open stream holds one), and takes a place again when it shows.
    await("only the page's stream on peer-2").atMost(WAIT).ignoreExceptions().until(() ->
        cluster.json("peer-2", "/stats").path("eventSubscribers").asInt() == 1);
    // A line the peer never sent: a stream that started the log over (the peer's buffer sent again,
    // every line shown twice or the lines that left the buffer lost) would take it away.
    js.executeScript("const li = document.createElement('li'); li.id = 'shown-before'; li.textContent = 'shown before';"
        + "document.getElementById('log').prepend(li);");
    List<String> shownBefore = logLines();
    js.executeScript(VISIBILITY, true);
    await("the hidden page's stream closed").atMost(WAIT).ignoreExceptions().until(() ->
        browser.findElement(By.id("live")).getText().equals("(paused while the tab is hidden)")
            && cluster.json("peer-2", "/stats").path("eventSubscribers").asInt() == 0);
    js.executeScript(VISIBILITY, false);
    await("the shown page live again").atMost(WAIT).ignoreExceptions().until(() ->
        browser.findElement(By.id("live")).getText().equals("(live)")
            && cluster.json("peer-2", "/stats").path("eventSubscribers").asInt() == 1);
    // Its new stream named the last event shown, and got only newer ones (if any came meanwhile).
    // (The log keeps 200 lines: compared from the line added above, which newer events come before.)
    List<String> shownAfter = logLines();
    int at = shownAfter.indexOf("shown before");
    assertTrue(at >= 0, () -> shownBefore + " became " + shownAfter);
    int compared = Math.min(6, shownBefore.size());
    assertEquals(shownBefore.subList(0, compared), shownAfter.subList(at, Math.min(shownAfter.size(), at + compared)));

    // A reply that comes after a newer request's does not overwrite it: the read of "slow-key" is
    // held in the page until the read of user:42 has been shown.
    js.executeScript("const f = window.fetch; window.__slowDone = false;"
        + "window.fetch = (url, o) => !String(url).includes('slow') ? f(url, o) : f(url, o).then(r =>"
        + "  new Promise(res => { window.__release = () => {"
        + "    const json = r.json.bind(r);"
        + "    r.json = () => json().then(v => { setTimeout(() => { window.__slowDone = true; }, 0); return v; });"
        + "    res(r); }; }));");
    WebElement keyOnPeer2 = browser.findElement(By.id("key"));
    WebElement resultOnPeer2 = browser.findElement(By.id("kv-result"));
    keyOnPeer2.clear();
    keyOnPeer2.sendKeys("slow-key");
    browser.findElement(By.id("get")).click();
    await("the slow read held").atMost(WAIT).until(() ->
        (Boolean) js.executeScript("return typeof window.__release === 'function';"));
    keyOnPeer2.clear();
    keyOnPeer2.sendKeys("user:42");
    browser.findElement(By.id("get")).click();
    await("the newer read shown").atMost(WAIT).until(() -> resultOnPeer2.getText().startsWith("user:42 = Ada, held by "));
    String shownOwners = resultOnPeer2.getAttribute("data-owners");
    js.executeScript("window.__release();");
    await("the older reply handled").atMost(WAIT).until(() -> (Boolean) js.executeScript("return window.__slowDone;"));
    assertTrue(resultOnPeer2.getText().startsWith("user:42 = Ada, held by "), resultOnPeer2.getText());
    assertEquals(shownOwners, resultOnPeer2.getAttribute("data-owners"));

    // A member whose id and zone are HTML (both come from the peers): its row, its arc's title, the
    // log and, on its own page, the header show them as the text they are, and nothing in them runs.
    String id = "\"><img src=x onerror=window.__xss=1>";
    String zone = "<b id=injected>z</b>";
    cluster.awaitReady(cluster.start("html", id, Map.of(), "--zone", zone));
    browser.get(cluster.peer("peer-2").url() + "/");
    await("the member shown as text").atMost(WAIT).ignoreExceptions().until(() -> js.executeScript(""
            + "const id = arguments[0];"
            + "const row = [...document.querySelectorAll('#members tbody tr')].find(tr => tr.dataset.member === id);"
            + "const arc = [...document.querySelectorAll('#arcs path')].find(p => p.dataset.member === id);"
            + "const title = arc.querySelector('title').textContent;"
            + "return [row.cells[1].textContent, row.cells[3].textContent, title.slice(0, id.length + 2),"
            + "  [...document.querySelectorAll('#log li')].some(li => li.textContent.includes('joined ' + id))];", id),
        equalTo(List.of(id, zone, id + ": ", true)));
    assertEquals(List.of(0L, true), js.executeScript(INJECTED));
    browser.get(cluster.peer("html").url() + "/");
    await("its own page's header").atMost(WAIT).ignoreExceptions().until(() ->
        ("\u2013 peer " + id).equals(browser.findElement(By.id("local")).getAttribute("textContent"))
            && rows().size() == 3);
    assertEquals(List.of(0L, true), js.executeScript(INJECTED));

    // A reply that is not the ring shows as the peer's answer, its reason included, and what the page
    // shows is dimmed as old (the answer stands in for a peer starting up or stopping).
    js.executeScript("const f = window.fetch; window.__fetch = f;"
        + "window.fetch = (url, o) => !String(url).startsWith('/ring') ? f(url, o) : Promise.resolve(new Response("
        + "  JSON.stringify({error: 'the peer is starting'}),"
        + "  {status: 503, headers: {'Content-Type': 'application/json'}}));");
    await("the peer's answer shown").atMost(WAIT).until(() ->
        badge().getText().equals("this peer answered GET /ring: 503, the peer is starting")
            && "diverge".equals(badge().getAttribute("data-state"))
            && browser.findElement(By.tagName("main")).getAttribute("class").contains("stale"));
    js.executeScript("window.fetch = window.__fetch;");
    await("the ring again").atMost(WAIT).until(() -> "agree".equals(badge().getAttribute("data-state"))
        && !browser.findElement(By.tagName("main")).getAttribute("class").contains("stale"));
    // The page's own peer paused (SIGSTOP): its event stream stays open but brings nothing, so the
    // log is not said to be live either; it is again once the peer answers.
    long pid = cluster.peer("html").process().pid();
    try {
      signal("STOP", pid);
      await("the paused peer said so").atMost(WAIT).until(() ->
          List.of(badge().getText(), browser.findElement(By.id("live")).getText()),
          contains(startsWith("this peer does not answer ("), equalTo("(this peer does not answer)")));
    } finally {
      signal("CONT", pid);
    }
    await("live again").atMost(WAIT).until(() -> "agree".equals(badge().getAttribute("data-state"))
        && browser.findElement(By.id("live")).getText().equals("(live)"));
    // The page's own peer killed: it says the peer does not answer, not that its last ring is current.
    cluster.kill("html");
    await("the silent peer said so").atMost(WAIT).until(() ->
        badge().getText().startsWith("this peer does not answer (")
            && "diverge".equals(badge().getAttribute("data-state"))
            && browser.findElement(By.tagName("main")).getAttribute("class").contains("stale"));
  }

  /**
   * A split made with {@code POST /admin/split} on each side (peer-1 alone on one): the page of
   * peer-1 says a split is in force and names exactly the peers it drops, an id that is HTML as
   * the text it is, and rewrites nothing of it while nothing changes; after the heal it says
   * nothing of a split, without a reload.
   */
  @Test
  void ringPage_splitThenHeal_namesThePeersCutOff_untilTheHeal() throws IOException {
    String html = "<img src=x onerror=window.__xss=1>";
    cluster = new PeerCluster("browser-split", 2);
    cluster.awaitReady(cluster.start("peer-1", "--fault-injection"));
    List<PeerCluster.TestPeer> others = List.of(cluster.start("peer-2", "--fault-injection"),
        cluster.start("html", html, Map.of(), "--fault-injection"));
    others.forEach(cluster::awaitReady);
    cluster.awaitSettled(List.of("peer-1", "peer-2", "html"), WAIT);
    browser.get(cluster.peer("peer-1").url() + "/");
    JavascriptExecutor js = (JavascriptExecutor) browser;
    js.executeScript("window.__loadedOnce = 'yes';"); // gone if the page reloads
    await("the ring of three").atMost(WAIT).ignoreExceptions().until(() ->
        rows().size() == 3 && "agree".equals(badge().getAttribute("data-state")));
    assertFalse(splitLine().isDisplayed(), "no split yet: " + splitLine().getAttribute("textContent"));

    split("peer-1", "peer-2", html);
    split("peer-2", "peer-1");
    split("html", "peer-1");
    assertEquals(List.of(html, "peer-2"), cutOffFrom("peer-1"));
    assertEquals(List.of("peer-1"), cutOffFrom("peer-2"));
    String said = "Split in force: this peer drops every message from " + html + ", peer-2 (the launcher\u2019s"
        + " heal ends it, or POST /admin/heal on each peer of the split)";
    await("the page says whom peer-1 drops").atMost(WAIT).ignoreExceptions().until(() ->
        splitLine().isDisplayed() && splitLine().getText().equals(said));
    assertEquals(List.of(html, "peer-2"), js.executeScript(
        "return [...document.querySelectorAll('#split-ids b')].map(b => b.textContent);"), "one name each");
    // Each side's failure detector drops the other (the patient one of these peers: about 11 s).
    await("peer-1's ring of itself alone").atMost(Duration.ofSeconds(90)).ignoreExceptions().until(() ->
        rows().size() == 1 && arcs().size() == 1);
    assertEquals(said, splitLine().getText());
    assertEquals(List.of(0L, true), js.executeScript(INJECTED));
    for (int width : new int[] {1200, 800}) {
      browser.manage().window().setSize(new Dimension(width, 900));
      assertEquals(List.of(), js.executeScript(OVERFLOWS), "overflow at " + width + " px, a split in force");
      shoot("ring-split-" + width + "px");
    }
    browser.manage().window().setSize(new Dimension(1440, 900));
    // Polls that bring the same split rewrite nothing of its line (a screen reader would announce each write).
    js.executeScript("window.__splitWrites = 0; window.__polls = 0;"
        + "new MutationObserver((records) => { window.__splitWrites += records.length; }).observe("
        + "  document.getElementById('split'), {subtree: true, childList: true, characterData: true, attributes: true});"
        + "const f = window.fetch;"
        + "window.fetch = (url, o) => { if (String(url).startsWith('/ring')) window.__polls++; return f(url, o); };");
    await("three more polls").atMost(WAIT).until(() ->
        ((Number) js.executeScript("return window.__polls;")).intValue() >= 3);
    assertEquals(0L, js.executeScript("return window.__splitWrites;"), "the split's line rewritten");

    for (String name : List.of("peer-1", "peer-2", "html")) {
      HttpResponse<String> healed = cluster.send(name, HttpRequest.newBuilder(cluster.uri(name, "/admin/heal"))
          .POST(HttpRequest.BodyPublishers.noBody()));
      assertEquals(200, healed.statusCode(), () -> name + ": " + healed.body());
    }
    assertEquals(List.of(), cutOffFrom("peer-1"));
    await("the split no longer said").atMost(WAIT).ignoreExceptions().until(() -> !splitLine().isDisplayed());
    assertEquals("yes", js.executeScript("return window.__loadedOnce;"), "the page was reloaded");
  }

  /** {@code POST /admin/split} on the peer {@code name}, cutting it off from {@code ids}; asserts a 200. */
  private void split(String name, String... ids) {
    HttpResponse<String> r = cluster.send(name, HttpRequest.newBuilder(cluster.uri(name, "/admin/split"))
        .POST(HttpRequest.BodyPublishers.ofString(Json.string(Map.of("ids", List.of(ids))))));
    assertEquals(200, r.statusCode(), () -> name + ": " + r.body());
  }

  /** {@code cutOffFrom} of the peer's {@code GET /ring}. */
  private List<String> cutOffFrom(String name) {
    List<String> ids = new ArrayList<>();
    cluster.json(name, "/ring?ranges=false").path("cutOffFrom").forEach(id -> ids.add(id.asText()));
    return ids;
  }

  private WebElement splitLine() {
    return browser.findElement(By.id("split"));
  }

  /** Sends a signal ({@code STOP}, {@code CONT}) to a peer's process, and waits for kill(1) to have sent it. */
  private static void signal(String name, long pid) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).inheritIO().start();
    assertEquals(0, kill.waitFor(), "kill -" + name + " " + pid);
  }

  /** How many elements the page holds that came from markup in a text, and whether no script in it ran. */
  private static final String INJECTED = "return [document.querySelectorAll('img, #injected').length,"
      + " window.__xss === undefined];";

  /**
   * What scrolls sideways: the page, and each box of it (the header, the ring's panel, the side
   * panel, the members table's box and the log, which scroll by themselves when they must), each
   * as "name scrollWidth > clientWidth"; empty if nothing does.
   */
  private static final String OVERFLOWS = "const boxes = {page: document.documentElement,"
      + " header: document.querySelector('header'), ring: document.querySelector('.ring-panel'),"
      + " side: document.querySelector('.side'), table: document.querySelector('.table-scroll'),"
      + " log: document.getElementById('log')};"
      + "return Object.entries(boxes).filter(([, b]) => b.scrollWidth > b.clientWidth)"
      + "  .map(([name, b]) => `${name} ${b.scrollWidth} > ${b.clientWidth}`);";

  /**
   * Shows the page's ring (as last polled) with members named as a launcher on another host
   * might name them and this peer's id of 255 characters, the most a member may have; a zone and
   * counts in the millions; a split cutting this peer off from the others and from a peer of 255
   * characters; and a line in the log with an event's JSON. {@link #OVERFLOWS_OF_LONG_TEXTS}
   * measures it and shows the polled ring again.
   */
  private static final String LONG_TEXTS = "const real = state.ring; const colours = new Map(state.colours);"
      + "const ids = real.members.map((m, i) => i === 0 ? 'p'.repeat(255) : `peer-${i + 7}-127.0.0.1:${7801 + i}`);"
      + "const rename = (id) => ids[real.members.findIndex(m => m.id === id)];"
      + "const long = {...real, local: ids[0],"
      + "  members: real.members.map(m => ({...m, id: rename(m.id), zone: 'eu-central-1-az3',"
      + "    primaryKeys: 12345678, backupKeys: 23456789})),"
      + "  peers: real.peers.map(p => ({...p, id: rename(p.id)}))};"
      + "const line = document.createElement('li');"
      + "line.innerHTML = describe({type: 'unknown', members: ids, detail: 'x'.repeat(300)});"
      + "document.getElementById('log').prepend(line);"
      + "renderHeader(long); renderSplit({cutOffFrom: ['q'.repeat(255), ...ids.slice(1)]});"
      + "renderTable(long); renderAgreement(long);";

  private static final String OVERFLOWS_OF_LONG_TEXTS = "const overflows = (() => {" + OVERFLOWS + "})();"
      + "line.remove(); state.colours = colours; renderHeader(real); renderSplit(real); renderTable(real);"
      + "renderAgreement(real); return overflows;";

  /** Makes the page see itself hidden (argument true) or shown, as a browser does when its tab is. */
  private static final String VISIBILITY = "const hidden = arguments[0];"
      + "Object.defineProperty(document, 'hidden', { configurable: true, get: () => hidden });"
      + "document.dispatchEvent(new Event('visibilitychange'));";

  /** The log's lines as shown, newest first. */
  private List<String> logLines() {
    return browser.findElements(By.cssSelector("#log li")).stream().map(WebElement::getText).toList();
  }

  private List<WebElement> arcs() {
    return browser.findElements(By.cssSelector("#arcs path"));
  }

  private List<WebElement> rows() {
    return browser.findElements(By.cssSelector("#members tbody tr"));
  }

  private WebElement badge() {
    return browser.findElement(By.id("agreement"));
  }

  private Set<String> memberChecksums() {
    Set<String> sums = new HashSet<>();
    for (WebElement cell : browser.findElements(By.cssSelector("#members td[data-checksum]"))) {
      sums.add(cell.getAttribute("data-checksum"));
    }
    return sums;
  }

  /** The JSON block of golden vectors in docs/ring-spec.md. */
  private static String goldenVectors() throws IOException {
    String text = Files.readString(Path.of(System.getProperty("basedir", "."), "..", "docs", "ring-spec.md"));
    int begin = text.indexOf("```json", text.indexOf("<!-- vectors:begin -->")) + "```json".length();
    return text.substring(begin, text.indexOf("```", begin));
  }

  private void shoot(String name) throws IOException {
    byte[] png = ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES);
    Files.write(screenshots.resolve(name + ".png"), png);
  }
}
