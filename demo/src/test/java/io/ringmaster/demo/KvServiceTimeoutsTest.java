package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The waits a key service is built with ({@link KvService.Timeouts}): each wither changes its own wait alone. */
class KvServiceTimeoutsTest {
  private static final Duration CALL = Duration.ofMillis(300);
  private static final Duration DEADLINE = Duration.ofSeconds(7);

  @Test
  void aWritesOwnWaits_keepTheDefaultGraces() {
    KvService.Timeouts write = new KvService.Timeouts(CALL, DEADLINE);

    assertEquals(new KvService.Timeouts(CALL, DEADLINE, KvService.READ_GRACE, KvService.REPLY_AFTER_STOP), write);
  }

  @Test
  void theDefaults_areTheServicesConstants() {
    assertEquals(new KvService.Timeouts(KvService.CALL_TIMEOUT, KvService.WRITE_DEADLINE, KvService.READ_GRACE,
        KvService.REPLY_AFTER_STOP), KvService.Timeouts.DEFAULT);
  }

  @Test
  void withReadGrace_changesTheReadGraceAlone() {
    Duration grace = Duration.ofMillis(1234);

    assertEquals(new KvService.Timeouts(CALL, DEADLINE, grace, KvService.REPLY_AFTER_STOP),
        new KvService.Timeouts(CALL, DEADLINE).withReadGrace(grace));
  }

  @Test
  void withReplyAfterStop_changesTheReplyGraceAlone() {
    Duration grace = Duration.ofMillis(4321);

    assertEquals(new KvService.Timeouts(CALL, DEADLINE, KvService.READ_GRACE, grace),
        new KvService.Timeouts(CALL, DEADLINE).withReplyAfterStop(grace));
  }
}
