package io.ringmaster.demo;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The launcher's {@code load}: writes n new keys through all live peers in turn from
 * {@value #THREADS} threads, with a progress bar and the rate. Blocking {@link HttpURLConnection}s
 * with keep-alive: on a 2-core machine that runs the peers too, it costs a third of the CPU that
 * {@code java.net.http.HttpClient}'s asynchronous sends did, and the peers get the rest.
 */
final class LoadGenerator {
  static final int THREADS = 32;
  private static final int BAR = 30;

  private final List<String> urls;
  private final PrintStream out;

  LoadGenerator(List<String> urls, PrintStream out) {
    this.urls = urls;
    this.out = out;
  }

  void run(int n) {
    String run = Long.toString(System.currentTimeMillis() % 1_000_000, 36);
    AtomicInteger next = new AtomicInteger();
    AtomicLong done = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    CountDownLatch finished = new CountDownLatch(THREADS);
    long started = System.nanoTime();
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(OwnThreads.daemons("progress"));
    ExecutorService writers = Executors.newFixedThreadPool(THREADS, OwnThreads.daemons("load"));
    ticker.scheduleAtFixedRate(() -> progress(done.get(), n, started), 0, 200, TimeUnit.MILLISECONDS);
    try {
      for (int t = 0; t < THREADS; t++) {
        writers.execute(() -> {
          try {
            for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
              if (!put(urls.get(i % urls.size()) + "/kv/load-" + run + "-" + i, "value-" + i)) {
                failed.incrementAndGet();
              }
              done.incrementAndGet();
            }
          } finally {
            finished.countDown();
          }
        });
      }
      finished.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      ticker.shutdownNow();
      writers.shutdownNow();
    }
    try { // a tick under way would print a stale bar after the last one
      ticker.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    progress(done.get(), n, started);
    out.printf("%nwrote %d keys (load-%s-0..%d) in %.2f s: %.0f keys/s; %d failed%n", n - failed.get(), run, n - 1,
        seconds, (n - failed.get()) / seconds, failed.get()); // the rate of writes that succeeded
  }

  private static boolean put(String url, String value) {
    try {
      HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
      c.setConnectTimeout(2_000);
      c.setReadTimeout(15_000);
      c.setRequestMethod("PUT");
      c.setDoOutput(true);
      byte[] body = value.getBytes(StandardCharsets.UTF_8);
      c.setFixedLengthStreamingMode(body.length);
      try (OutputStream o = c.getOutputStream()) {
        o.write(body);
      }
      int status = c.getResponseCode();
      // Read the reply to the end so the connection goes back to the keep-alive pool.
      try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
        if (in != null) {
          in.readAllBytes();
        }
      }
      return status == 200;
    } catch (IOException e) {
      return false;
    }
  }

  private void progress(long done, int n, long started) {
    int filled = (int) (BAR * done / n);
    double seconds = Math.max(1e-3, (System.nanoTime() - started) / 1e9);
    out.printf("\r[%s%s] %d/%d  %.0f keys/s", "#".repeat(filled), ".".repeat(BAR - filled), done, n, done / seconds);
    out.flush();
  }
}
