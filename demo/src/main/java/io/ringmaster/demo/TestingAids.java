package io.ringmaster.demo;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Faults a process-level test can ask a peer for, by system property, so that it can watch the
 * retries that repair them, a switch that keeps reads from repairing anything, and the slow
 * destination and sequential hand-off that bench's {@code HandOffTimings} times the parallel
 * hand-off against; all off by default. A value a property does not take fails the peer's start,
 * naming the property and the value.
 */
final class TestingAids {
  /** How many pulls this peer refuses before it serves any: {@link PullRetries} then take over. */
  static final String REFUSE_PULLS = "ringmaster.demo.refuseFirstPulls";
  /**
   * How many hand-off pushes (a losing owner's migration push, a sweep's) this peer refuses before
   * it takes any: until then only its own pulls bring it the ranges it gains.
   */
  static final String REFUSE_HANDOFFS = "ringmaster.demo.refuseFirstHandoffs";
  /** How many repair pushes after a merge this peer refuses from each sender: {@link Sweeper#retryRepair}. */
  static final String REFUSE_REPAIRS = "ringmaster.demo.refuseFirstRepairs";
  /**
   * Milliseconds added to this peer's version clock (negative: behind), as on a host whose clock
   * is off, so that a test can watch a write restamped past a newer version ({@link KvService}).
   */
  static final String CLOCK_OFFSET = "ringmaster.demo.clockOffsetMillis";
  /**
   * {@code true}: reads repair nothing ({@link KvService#get}), so that a test that reads every key
   * and then counts the copies sees what the migrations did, not what its reads repaired.
   */
  static final String NO_READ_REPAIR = "ringmaster.demo.noReadRepair";
  /**
   * Milliseconds this peer holds back its answer to each page of a migration push it receives (a
   * leave's hand-off, a losing owner's), as a slow destination would: 0 to
   * {@value #MAX_PUSH_PAGE_DELAY_MILLIS}, under {@link Transfers#PUSH_TIMEOUT}, past which every
   * page would time out.
   */
  static final String PUSH_PAGE_DELAY = "ringmaster.demo.pushPageDelayMillis";
  /**
   * How many destinations this peer's hand-offs push to at once ({@link Transfers#pushThreads}): 1
   * to {@value #MAX_PUSH_THREADS}, {@link Transfers#PARALLEL_PUSHES} if unset; 1 pushes to one
   * destination after another.
   */
  static final String PUSH_THREADS = "ringmaster.demo.pushThreads";
  private static final long MAX_OFFSET_MILLIS = Duration.ofDays(1).toMillis();
  static final int MAX_PUSH_PAGE_DELAY_MILLIS = 1_000;
  static final int MAX_PUSH_THREADS = 16;

  private final AtomicInteger pullsToRefuse;
  private final AtomicInteger handoffsToRefuse;
  private final int repairsToRefuse;
  private final Map<String, AtomicInteger> repairsRefused = new ConcurrentHashMap<>();

  private final long clockOffsetMillis;
  private final boolean readRepair;
  private final int pushPageDelayMillis;
  private final int pushThreads;

  private TestingAids(int pullsToRefuse, int handoffsToRefuse, int repairsToRefuse, long clockOffsetMillis,
                      boolean readRepair, int pushPageDelayMillis, int pushThreads) {
    this.pullsToRefuse = new AtomicInteger(pullsToRefuse);
    this.handoffsToRefuse = new AtomicInteger(handoffsToRefuse);
    this.repairsToRefuse = repairsToRefuse;
    this.clockOffsetMillis = clockOffsetMillis;
    this.readRepair = readRepair;
    this.pushPageDelayMillis = pushPageDelayMillis;
    this.pushThreads = pushThreads;
  }

  /** Every {@code ringmaster.demo.*} property there is: any other name is a typo. */
  private static final List<String> NAMES = List.of(REFUSE_PULLS, REFUSE_HANDOFFS, REFUSE_REPAIRS, CLOCK_OFFSET,
      NO_READ_REPAIR, PUSH_PAGE_DELAY, PUSH_THREADS);

  /**
   * The aids the system properties ask for.
   *
   * @throws IllegalArgumentException naming the property and the value if one has a value it does not
   *                                  take, or naming a {@code ringmaster.demo.*} property there is not
   *                                  (a misspelt one would leave its aid off without a word)
   */
  static TestingAids fromSystemProperties() {
    for (String name : System.getProperties().stringPropertyNames()) {
      if (name.startsWith("ringmaster.demo.") && !NAMES.contains(name)) {
        throw new IllegalArgumentException("unknown system property " + name + "; the demo reads "
            + String.join(", ", NAMES));
      }
    }
    return new TestingAids(count(REFUSE_PULLS), count(REFUSE_HANDOFFS), count(REFUSE_REPAIRS), clockOffset(),
        !flag(NO_READ_REPAIR), between(PUSH_PAGE_DELAY, 0, MAX_PUSH_PAGE_DELAY_MILLIS, 0),
        between(PUSH_THREADS, 1, MAX_PUSH_THREADS, Transfers.PARALLEL_PUSHES));
  }

  /** How many destinations a hand-off pushes to at once: {@value #PUSH_THREADS}, else {@link Transfers#PARALLEL_PUSHES}. */
  int pushThreads() {
    return pushThreads;
  }

  /** How long each answer to a migration push page is held back: {@value #PUSH_PAGE_DELAY}, else 0. */
  int pushPageDelayMillis() {
    return pushPageDelayMillis;
  }

  /**
   * Holds the answer to a page of a {@code kind} push back by {@value #PUSH_PAGE_DELAY}, if set and
   * the push is a migration's.
   *
   * @throws InterruptedException if the peer stops meanwhile: the page is then answered with an error
   */
  void holdPushPage(Wire.PushKind kind) throws InterruptedException {
    if (kind == Wire.PushKind.MIGRATION && pushPageDelayMillis > 0) {
      pushPagesHeld.incrementAndGet();
      TimeUnit.MILLISECONDS.sleep(pushPageDelayMillis);
    }
  }

  /** How many push pages' answers {@link #holdPushPage} held back (for tests). */
  final AtomicInteger pushPagesHeld = new AtomicInteger();

  /** Whether reads send the newest copy to the owners they found behind: unless {@value #NO_READ_REPAIR}=true. */
  boolean readRepair() {
    return readRepair;
  }

  /** This peer's version clock: the wall clock, moved by {@value #CLOCK_OFFSET} if set. */
  VersionClock clock(String writer) {
    if (clockOffsetMillis == 0) {
      return VersionClock.system(writer);
    }
    long offsetMicros = clockOffsetMillis * 1_000;
    return new VersionClock(writer, () -> VersionClock.systemMicros() + offsetMicros);
  }

  /** Whether to refuse this pull. */
  boolean refusePull() {
    return takeOne(pullsToRefuse);
  }

  /** Whether to refuse this hand-off push. */
  boolean refuseHandoff() {
    return takeOne(handoffsToRefuse);
  }

  /** How many hand-off pushes this peer will still refuse: for tests that count the pushes it refused. */
  int handoffsLeftToRefuse() {
    return Math.max(0, handoffsToRefuse.get());
  }

  /** Takes one refusal from those left, if any are. */
  private static boolean takeOne(AtomicInteger left) {
    return left.get() > 0 && left.getAndDecrement() > 0;
  }

  /** Whether to refuse this repair push from {@code sender}. */
  boolean refuseRepair(String sender) {
    return repairsToRefuse > 0
        && repairsRefused.computeIfAbsent(sender, k -> new AtomicInteger()).getAndIncrement() < repairsToRefuse;
  }

  /** {@value #CLOCK_OFFSET}: 0 if unset, else whole milliseconds within a day either way. */
  static long clockOffset() {
    String value = System.getProperty(CLOCK_OFFSET);
    if (value == null) {
      return 0;
    }
    try {
      long n = Long.parseLong(value.strip());
      if (n >= -MAX_OFFSET_MILLIS && n <= MAX_OFFSET_MILLIS) { // not Math.abs: it leaves Long.MIN_VALUE negative
        return n;
      }
    } catch (NumberFormatException notANumber) {
      // refused below
    }
    throw new IllegalArgumentException("system property " + CLOCK_OFFSET + " must be whole milliseconds within "
        + MAX_OFFSET_MILLIS + " either way: \"" + value + "\"");
  }

  /** A system property that is {@code true} or {@code false}: false if unset. */
  static boolean flag(String property) {
    String value = System.getProperty(property, "false");
    return switch (value.strip()) {
      case "false" -> false;
      case "true" -> true;
      default -> throw new IllegalArgumentException(
          "system property " + property + " must be true or false: \"" + value + "\"");
    };
  }

  /** A system property that is a whole number from {@code min} to {@code max}: {@code unset} if unset. */
  static int between(String property, int min, int max, int unset) {
    String value = System.getProperty(property);
    if (value == null) {
      return unset;
    }
    try {
      int n = Integer.parseInt(value.strip());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException notANumber) {
      // refused below
    }
    throw new IllegalArgumentException("system property " + property + " must be a whole number from " + min
        + " to " + max + ": \"" + value + "\"");
  }

  /** A system property that counts something: 0 if unset. */
  static int count(String property) {
    String value = System.getProperty(property);
    if (value == null) {
      return 0;
    }
    try {
      int n = Integer.parseInt(value.strip());
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException notANumber) {
      // refused below
    }
    throw new IllegalArgumentException("system property " + property + " must be a whole number from 0: \""
        + value + "\"");
  }
}
