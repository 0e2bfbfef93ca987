package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;

/**
 * What a closed node or peer may leave behind, for the leak checks of core and the demo: threads
 * still alive, and objects still reachable. Waits poll on the calling thread: Awaitility's own
 * poller would be a thread started since, and would hold what it polls.
 */
public final class LeftBehind {
  private LeftBehind() {}

  /**
   * The threads alive now, each by identity, but the common pool's workers: they serve the whole
   * JVM, start when the pool first has work and end only after a minute idle, longer than a check
   * waits. JGroups hands a batch of responses to that pool where it has no virtual threads (Java 17):
   * a demo peer's calls may start a worker that is no peer's. A task of a closed node or peer still
   * running there holds it, which the reachability check sees.
   */
  public static Set<Thread> liveThreads() {
    Set<Thread> threads = Collections.newSetFromMap(new IdentityHashMap<>());
    Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && !inCommonPool(t)).forEach(threads::add);
    return threads;
  }

  private static boolean inCommonPool(Thread t) {
    return t instanceof ForkJoinWorkerThread w && w.getPool() == ForkJoinPool.commonPool();
  }

  /** Waits until no thread is alive but those in {@code before}, naming, with its state, each one left. */
  public static void awaitNoThreadBut(Set<Thread> before, Duration wait) {
    await("threads started since").atMost(wait).pollInSameThread().untilAsserted(() -> assertEquals(List.of(),
        liveThreads().stream().filter(t -> !before.contains(t)).map(t -> t.getName() + " (" + t.getState() + ")")
            .sorted().toList(), "threads left running"));
  }

  /**
   * Collects garbage until nothing in {@code weakly} is reachable (each name with the references
   * to what it names), naming those that still are; {@code when} says when, for the failure.
   */
  public static void awaitCollected(Map<String, List<WeakReference<?>>> weakly, String when, Duration wait) {
    await("closed ones collected " + when).atMost(wait).pollInSameThread().untilAsserted(() -> {
      System.gc();
      List<String> reachable = weakly.entrySet().stream()
          .filter(e -> e.getValue().stream().anyMatch(r -> r.get() != null)).map(Map.Entry::getKey).toList();
      assertEquals(List.of(), reachable, reachable.size() + " of " + weakly.size() + " still reachable " + when);
    });
  }
}
