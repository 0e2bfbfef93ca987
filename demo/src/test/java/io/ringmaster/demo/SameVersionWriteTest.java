package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A write stamped with the very version an owner already holds for its key, under another value:
 * what a peer restarted under its id writes when its clock gives the microsecond its earlier
 * process stamped (that process had been dragged ahead by a peer's clock). The entry already held
 * wins the tie on every owner ({@link Entry#supersedes}), so the write was not kept: the owners say
 * so, and the writer stamps it again, rather than acknowledge a value no owner holds.
 */
class SameVersionWriteTest {
  private final List<InJvmPeer> peers = new ArrayList<>();

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  @Test
  void aWriteWhoseVersionAnOwnerHoldsUnderAnotherValue_isStampedAgain_andKept() throws Exception {
    String cluster = InJvmPeer.clusterName("same-version-write");
    for (String id : List.of("a", "b", "c")) {
      peers.add(InJvmPeer.start(cluster, id, TestingAids.fromSystemProperties()));
    }
    InJvmPeer.awaitOneRing(peers);
    InJvmPeer a = peers.get(0);
    String key = a.keyOwnedBy(Set.of("b", "c"));
    long ahead = VersionClock.systemMicros() + 60_000_000L; // a minute ahead: a's next stamp is ahead + 1
    a.kv().clock().observe(ahead);
    Version taken = new Version(ahead + 1, "a");
    Entry earlier = Entry.of(key, "zebra", taken); // what a's earlier process stored at that version
    peers.get(1).store().merge(earlier);
    peers.get(2).store().merge(earlier);

    KvService.Written written = a.kv().put(key, "apple"); // "zebra" wins a tie with "apple"

    assertEquals(new Version(ahead + 2, "a"), written.version(), "stamped again, past the version taken");
    for (InJvmPeer owner : peers.subList(1, 3)) {
      assertEquals(Optional.of(Entry.of(key, "apple", written.version())), owner.store().get(key),
          "the acknowledged value is the one " + owner.routing().self() + " holds");
    }
  }

  /**
   * A write that an owner answers, round after round, with a newer version than the one just
   * stamped fails at its deadline saying so ("superseded by" that version).
   */
  @Test
  void aWriteSupersededAtEveryRound_failsAtItsDeadline_sayingItWasSuperseded() throws Exception {
    String cluster = InJvmPeer.clusterName("same-version-superseded");
    KvService.Timeouts short_ = new KvService.Timeouts(Duration.ofSeconds(2),
        Duration.ofMillis(500));
    // b stores nothing and always claims a version one microsecond past the write's.
    InJvmPeer a = startAAndB(cluster, short_, in -> {
      Wire.WriteRequest r = Wire.readWrite(in);
      Version past = new Version(r.entry().version().stamp() + 1, "z");
      return CompletableFuture.completedFuture(Wire.writeReply(new Wire.WriteReply(Map.of(), past, false)));
    });

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class,
        () -> a.kv().put("k", "v"));

    assertTrue(failed.getMessage().contains("last error: superseded by "),
        failed.getMessage());
  }

  /**
   * A write superseded in its first round, whose owner then never answers: the round after it runs
   * into the deadline. Its 503 says both, in that order: the owner superseded it, then gave no
   * reply in the time the deadline left that round (not the timeout alone, which would hide why
   * the write was not stored before).
   */
  @Test
  void aWriteSupersededOnce_thenUnansweredUntilItsDeadline_saysBoth() throws Exception {
    String cluster = InJvmPeer.clusterName("same-version-then-silent");
    KvService.Timeouts short_ = new KvService.Timeouts(Duration.ofSeconds(2), Duration.ofMillis(800));
    AtomicInteger requests = new AtomicInteger();
    // b claims a version one microsecond past the first write it is sent, and never answers again.
    InJvmPeer a = startAAndB(cluster, short_, in -> {
      Wire.WriteRequest r = Wire.readWrite(in);
      if (requests.getAndIncrement() > 0) {
        return new CompletableFuture<>();
      }
      Version past = new Version(r.entry().version().stamp() + 1, "z");
      return CompletableFuture.completedFuture(Wire.writeReply(new Wire.WriteReply(Map.of(), past, false)));
    });

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> a.kv().put("k", "v"));

    String message = failed.getMessage();
    assertTrue(message.matches("(?s).*last error: superseded by .*; then b: no reply .*"
        + " \\(the write's deadline cut that call short\\)"), message);
    assertEquals(2, requests.get(), message);
  }

  /**
   * A write refused once, whose owner then gives no reply within a call's whole time (a round the
   * deadline did not cut short), fails saying that it got no reply: the refusal before it is
   * replaced, not kept with the timeout said after it as a call the deadline cut short.
   */
  @Test
  void aWriteRefusedOnce_thenUnansweredInAWholeCall_saysTheTimeoutAlone() throws Exception {
    String cluster = InJvmPeer.clusterName("same-version-refused-then-silent");
    KvService.Timeouts short_ = new KvService.Timeouts(Duration.ofMillis(300), Duration.ofSeconds(2));
    AtomicInteger requests = new AtomicInteger();
    // b refuses the first write it is sent, and never answers again.
    InJvmPeer a = startAAndB(cluster, short_, in -> requests.getAndIncrement() > 0 ? new CompletableFuture<>()
        : CompletableFuture.failedFuture(new Rpc.Declined("not now")));

    KvService.Unavailable failed = assertThrows(KvService.Unavailable.class, () -> a.kv().put("k", "v"));

    String message = failed.getMessage();
    assertTrue(message.contains("last error: b: no reply "), message);
    assertFalse(message.contains("not now"), message);
    assertTrue(requests.get() >= 2, message);
  }

  /**
   * Starts a, whose writes run with {@code timeouts}, and b, which answers every write sent to it
   * with {@code bAnswers}, and waits until both are in one ring; returns a.
   */
  private InJvmPeer startAAndB(String cluster, KvService.Timeouts timeouts, Rpc.QuickHandler bAnswers)
      throws Exception {
    peers.add(InJvmPeer.start(cluster, "a", TestingAids.fromSystemProperties(), builder -> builder, timeouts,
        kv -> kv::handleWrite));
    peers.add(InJvmPeer.start(cluster, "b", TestingAids.fromSystemProperties(), builder -> builder,
        KvService.Timeouts.DEFAULT, kv -> bAnswers));
    InJvmPeer.awaitOneRing(peers);
    return peers.get(0);
  }
}
