package io.ringmaster.demo;

import java.util.HashMap;
import java.util.Map;

/** Runs a test body that may set system properties, and puts those named back as they were, whatever happens. */
final class KeptProperties {
  private KeptProperties() {}

  static void keeping(Runnable body, String... properties) {
    Map<String, String> before = new HashMap<>();
    for (String p : properties) {
      before.put(p, System.getProperty(p));
    }
    try {
      body.run();
    } finally {
      before.forEach((p, value) -> {
        if (value == null) {
          System.clearProperty(p);
        } else {
          System.setProperty(p, value);
        }
      });
    }
  }
}
