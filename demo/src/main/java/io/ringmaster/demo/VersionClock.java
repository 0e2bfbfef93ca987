package io.ringmaster.demo;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Hands out strictly increasing write versions: the wall clock in microseconds since the epoch,
 * plus one on a collision. The stamp never goes back, even if the clock does, and it moves past
 * any stamp a write here has found on the key's owners ({@link #observe}): a write is stamped
 * again past a newer version an owner holds, so the write acknowledged is newer than every
 * version its owners hold. (Entries that arrive by pull or push move the clock only once a
 * write finds them.)
 *
 * <p>Why microseconds: a client that writes a key through one peer and, once acknowledged,
 * again through another, needs the second stamp to be higher. An acknowledgement takes far more
 * than a microsecond, so on one host (the demo's case) the wall clock orders them. With
 * milliseconds both could share a stamp and the tie-break by peer id could keep the first; the
 * peers of another host would need synchronised clocks either way (last writer wins).
 * Microseconds since 1970 stay below 2<sup>53</sup>, so JavaScript reads them exactly.
 */
final class VersionClock {
  private final String writer;
  private final LongSupplier micros;
  private final AtomicLong last = new AtomicLong();

  VersionClock(String writer, LongSupplier micros) {
    this.writer = writer;
    this.micros = micros;
  }

  /** A clock on the system's wall clock. */
  static VersionClock system(String writer) {
    return new VersionClock(writer, VersionClock::systemMicros);
  }

  /** Microseconds since the epoch on the wall clock: the unit of {@link Version#stamp()}. */
  static long systemMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
  }

  /**
   * The next version.
   *
   * @throws IllegalStateException if the clock reached {@link Version#MAX_STAMP}, which only a
   *                               stamp from a broken or hostile peer (or a clock set two centuries
   *                               ahead) can do
   */
  Version next() {
    long now = micros.getAsLong();
    long stamp = last.updateAndGet(l -> Math.max(now, l + 1));
    if (!Version.isValidStamp(stamp)) {
      throw new IllegalStateException("the version clock of " + writer + " is at " + stamp + ", past the last stamp, "
          + Version.MAX_STAMP + " (a peer sent a stamp two centuries ahead, or the wall clock is set there)");
    }
    return new Version(stamp, writer);
  }

  /**
   * Remembers a stamp written elsewhere, so later local writes order after it: a peer whose clock
   * runs ahead drags this one along (last writer wins across hosts). Not past {@link #MAX_AHEAD} of
   * this clock: a broken or hostile peer's stamp (the year 2255, say) would otherwise take every
   * later stamp here to the end of the range. Writes to a key holding such a version fail instead
   * ({@link KvService}).
   */
  void observe(long stamp) {
    if (Version.isValidStamp(stamp) && stamp - micros.getAsLong() <= MAX_AHEAD_MICROS) {
      last.accumulateAndGet(stamp, Math::max);
    }
  }

  /** How far ahead of this clock an observed stamp may be: a year; a clock further off is broken. */
  static final Duration MAX_AHEAD = Duration.ofDays(365);
  private static final long MAX_AHEAD_MICROS = MAX_AHEAD.toNanos() / 1_000;
}
