package io.ringmaster;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/** System properties set (or cleared) for the length of one call, each given back its value from before. */
final class SystemProperties {
  private SystemProperties() {}

  /** A call that may throw. */
  interface Call<T> {
    T call() throws Exception;
  }

  /**
   * Runs {@code call} with the properties {@code cleared} unset and then {@code set} set, and puts
   * back afterwards what each of them was before, unset or not.
   */
  static <T> T with(Map<String, String> set, Collection<String> cleared, Call<T> call) throws Exception {
    Map<String, String> before = new HashMap<>();
    cleared.forEach(n -> before.put(n, System.clearProperty(n)));
    set.forEach((n, v) -> before.putIfAbsent(n, System.setProperty(n, v)));
    try {
      return call.call();
    } finally {
      before.forEach((n, v) -> {
        if (v == null) {
          System.clearProperty(n);
        } else {
          System.setProperty(n, v);
        }
      });
    }
  }
}
