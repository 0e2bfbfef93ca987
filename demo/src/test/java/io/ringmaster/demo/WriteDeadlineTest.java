package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A write whose owners never answer is a 503 at its deadline (10 s by default), not later: each
 * call to an owner, and each wait for an owner to serve requests, gets the time the write has
 * left, not a wait of its own that can run past the deadline. Writer a, three owners b, c and d
 * that take every write and never answer; a's deadline is far shorter than its call timeout here,
 * so that a call given its own full timeout is plain to see, however slow the machine.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class WriteDeadlineTest {
  /** Far past the deadlines below: a write that gives a call all of it ends a minute late. */
  private static final Duration CALL = Duration.ofMinutes(1);
  private static final Pattern CALL_TIMEOUT = Pattern.compile("no reply from [bcd] in (PT[0-9.]+S)");
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers); // a's calls still waiting, if any, fail as its RPC closes
  }

  @Test
  void aWriteWhoseOwnersNeverAnswer_failsAtItsDeadline_itsCallsGivenOnlyTheTimeLeft() throws Exception {
    Duration deadline = Duration.ofSeconds(1);
    InJvmPeer a = startWriterAndSilentOwners("write-deadline", deadline, owner -> true);
    String key = a.keyOwnedBy(Set.of("b", "c", "d"));

    long start = System.nanoTime();
    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v"));
    ExecutionException failed = assertThrows(ExecutionException.class, () -> write.get(30, TimeUnit.SECONDS),
        "a 503, not a minute later at the calls' own timeout");
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    String reason = assertInstanceOf(KvService.Unavailable.class, failed.getCause()).getMessage();
    assertTrue(reason.contains(" of \"" + key + "\" did not store the write within 1 s; last error: "), reason);
    Matcher timedOut = CALL_TIMEOUT.matcher(reason);
    assertTrue(timedOut.find(), reason);
    Duration given = Duration.parse(timedOut.group(1));
    assertTrue(given.compareTo(deadline) <= 0, "the call was given " + given + ", past the deadline: " + reason);
    assertTrue(tookMillis >= deadline.toMillis(), "not before its deadline: " + tookMillis + " ms");
  }

  /**
   * Owners that have not said they serve requests (just joined, say) are each waited for up to
   * {@link KvService#READY_WAIT} before the write is sent to them, but only within the time the
   * write has left: three such waits one after the other would take 3 s, six times this write's
   * deadline.
   */
  @Test
  void aWriteToOwnersNotServingYet_failsAtItsDeadline_notAfterAWaitForEach() throws Exception {
    Duration deadline = Duration.ofMillis(500);
    InJvmPeer a = startWriterAndSilentOwners("write-deadline-not-ready", deadline, owner -> owner.equals("a"));
    String key = a.keyOwnedBy(Set.of("b", "c", "d"));

    long start = System.nanoTime();
    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v"));
    ExecutionException failed = assertThrows(ExecutionException.class, () -> write.get(30, TimeUnit.SECONDS));
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

    assertInstanceOf(KvService.Unavailable.class, failed.getCause());
    long waitsInTurn = KvService.READY_WAIT.multipliedBy(3).toMillis();
    // Over 2 s of the machine's own delays allowed before a write that kept its deadline looks late.
    assertTrue(tookMillis < waitsInTurn - 500, "took " + tookMillis + " ms, the owners' waits in turn "
        + waitsInTurn + " ms, the deadline " + deadline.toMillis() + " ms");
  }

  /**
   * With a's timer held up (it ends each call at its timeout, and may be busy with the steps that
   * follow a call's failure), the write still ends about {@link Rpc#AWAIT_MARGIN} past its
   * deadline: one margin for all its owners' replies, not one for each, waited in turn.
   */
  @Test
  void aWriteWhoseOwnersNeverAnswer_withItsTimerHeldUp_failsOneMarginPastItsDeadline_notOneAnOwner()
      throws Exception {
    Duration deadline = Duration.ofMillis(500);
    InJvmPeer a = startWriterAndSilentOwners("write-deadline-timer-held", deadline, owner -> true);
    String key = a.keyOwnedBy(Set.of("b", "c", "d"));
    CountDownLatch timerHeld = new CountDownLatch(1);
    CompletableFuture<Void> timerFree = new CompletableFuture<>();
    a.timer().execute(() -> {
      timerHeld.countDown();
      timerFree.join();
    });
    try {
      assertTrue(timerHeld.await(20, TimeUnit.SECONDS), "a's timer is held");

      long start = System.nanoTime();
      CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v"));
      ExecutionException failed = assertThrows(ExecutionException.class, () -> write.get(30, TimeUnit.SECONDS));
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

      assertInstanceOf(KvService.Unavailable.class, failed.getCause());
      long marginEach = deadline.plus(Rpc.AWAIT_MARGIN.multipliedBy(3)).toMillis();
      // Over 1.5 s of the machine's own delays allowed past the one margin.
      assertTrue(tookMillis < marginEach - 500, "took " + tookMillis + " ms; the deadline and a margin for each owner: "
          + marginEach + " ms");
    } finally {
      timerFree.complete(null);
    }
  }

  /**
   * A writer that owns the key stores it itself, then asks the key's previous owners which copy they
   * hold while the key is still coming in to it: that check, and the forwards its own store makes,
   * get the time the write has left too, not the 1.6 s a first hop's calls have of their own (more
   * than this write's deadline and the margin after it). Writer a alone owns the key (one
   * copy a key) and takes b for its previous owner, which never answers a read.
   */
  @Test
  void aWriteToThisPeerWhosePreviousOwnerNeverAnswers_failsAtItsDeadline_itsCheckGivenOnlyTheTimeLeft()
      throws Exception {
    Duration deadline = Duration.ofMillis(500);
    String cluster = InJvmPeer.clusterName("write-deadline-own-check");
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), builder -> builder.replicas(1),
        new KvService.Timeouts(CALL, deadline), kv -> kv::handleWrite, key -> List.of("b"));
    peers.add(a);
    InJvmPeer b = InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), builder -> builder.replicas(1));
    peers.add(b);
    b.rpc().handleQuickly(Wire.OP_GET, in -> new CompletableFuture<>());
    InJvmPeer.awaitOneRing(peers);
    String key = a.keyOwnedBy(Set.of("a"));

    CompletableFuture<KvService.Written> write = CompletableFuture.supplyAsync(() -> a.kv().put(key, "v"));
    ExecutionException failed = assertThrows(ExecutionException.class, () -> write.get(30, TimeUnit.SECONDS));

    String reason = assertInstanceOf(KvService.Unavailable.class, failed.getCause()).getMessage();
    assertTrue(reason.contains("owners [a] of \"" + key + "\" did not store the write within 0 s; last error: a: "
        + "previous owner b of \"" + key + "\", which is still coming in to a, did not say which version it holds: "),
        reason);
    Matcher timedOut = Pattern.compile("no reply from b in (PT[0-9.]+S)").matcher(reason);
    assertTrue(timedOut.find(), reason);
    Duration given = Duration.parse(timedOut.group(1));
    assertTrue(given.compareTo(deadline) <= 0, "the check was given " + given + ", past the deadline: " + reason);
  }

  /**
   * Starts writer a, with {@code deadline} for its writes and {@code ready} for the owners it
   * counts as serving requests, and owners b, c and d (three copies of each key) that store no
   * write and never answer one; waits until they share a ring.
   */
  private InJvmPeer startWriterAndSilentOwners(String test, Duration deadline, Predicate<String> ready)
      throws Exception {
    String cluster = InJvmPeer.clusterName(test);
    InJvmPeer a = InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), b -> b.replicas(3),
        new KvService.Timeouts(CALL, deadline), kv -> kv::handleWrite, key -> List.of(), ready);
    peers.add(a);
    for (String id : List.of("b", "c", "d")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties(), b -> b.replicas(3),
          KvService.Timeouts.DEFAULT, kv -> in -> new CompletableFuture<>()));
    }
    InJvmPeer.awaitOneRing(peers);
    assertEquals(4, a.node().ring().members().size());
    return a;
  }
}
