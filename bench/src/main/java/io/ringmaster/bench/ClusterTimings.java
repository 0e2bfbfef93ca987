package io.ringmaster.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Membership timings with separate processes on 127.0.0.1 and {@code config/jgroups/localhost-tcp.xml}:
 * how long until every member's ring reflects a join, a kill -9 and a graceful leave. Prints
 * min / median / max over the runs, in milliseconds, from the same machine clock.
 *
 * <pre>{@code java -cp bench/target/benchmarks.jar io.ringmaster.bench.ClusterTimings [runs] [members]}</pre>
 *
 * runs defaults to 5 and members to 4; members is 3 to 20 (a kill and a leave need two survivors;
 * the stack's TCP ports are 7800-7819).
 */
public final class ClusterTimings {
  private static final String JAVA = ProcessHandle.current().info().command().orElse("java");

  /** A child node and the lines it printed. */
  private static final class Child {
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();
    final Writer stdin;

    Child(String cluster, String id) throws IOException {
      process = new ProcessBuilder(JAVA, "-Djava.net.preferIPv4Stack=true", "-Xmx256m", "-cp",
          System.getProperty("java.class.path"), NodeProcess.class.getName(), cluster, id)
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
      stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
      Thread reader = new Thread(() -> {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
          for (String line; (line = r.readLine()) != null; ) {
            lines.add(line);
          }
        } catch (IOException ignored) {
          // the process ended
        }
      });
      reader.setDaemon(true);
      reader.start();
    }

    /** How many lines the child printed so far: {@link #await} after an event looks only past them. */
    int mark() {
      return lines.size();
    }

    /**
     * Time of the first line from line {@code from} on that starts with {@code prefix} and, for
     * VIEW lines, is of that size: a view of the same size printed before the event (a member that
     * saw three members while the others joined) does not count.
     */
    long await(String prefix, int members, int from, long timeoutMillis) throws InterruptedException {
      long deadline = System.currentTimeMillis() + timeoutMillis;
      while (System.currentTimeMillis() < deadline) {
        for (int j = from, n = lines.size(); j < n; j++) { // by index: the reader thread appends meanwhile
          String[] f = lines.get(j).split(" ");
          if (f[0].equals(prefix) && (members < 0 || Integer.parseInt(f[3]) == members)) {
            return Long.parseLong(f[1]);
          }
        }
        TimeUnit.MILLISECONDS.sleep(5); // polling a child's output in a benchmark driver, not a test
      }
      throw new IllegalStateException("no " + prefix + " " + members + " within " + timeoutMillis + " ms: " + lines);
    }

    void send(String command) throws IOException {
      stdin.write(command + "\n");
      stdin.flush();
    }
  }

  public static void main(String[] args) throws Exception {
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    int size = args.length > 1 ? Integer.parseInt(args[1]) : 4;
    if (runs < 1 || size < 3 || size > 20) {
      throw new IllegalArgumentException("usage: ClusterTimings [runs >= 1] [members 3..20]; got runs " + runs
          + ", members " + size);
    }
    List<Long> joins = new ArrayList<>();
    List<Long> kills = new ArrayList<>();
    List<Long> leaves = new ArrayList<>();
    for (int run = 0; run < runs; run++) {
      String cluster = "timings-" + ProcessHandle.current().pid() + "-" + run;
      List<Child> children = new ArrayList<>(); // the members of the cluster now
      List<Child> started = new ArrayList<>(); // every process of the run
      try {
        for (int i = 0; i < size; i++) {
          Child c = new Child(cluster, "node-" + i);
          children.add(c);
          started.add(c);
          long connecting = c.await("CONNECTING", -1, 0, 30_000);
          long all = 0;
          for (Child m : children) {
            all = Math.max(all, m.await("VIEW", i + 1, 0, 30_000)); // the first view of i + 1 members
          }
          if (i == size - 1) {
            joins.add(all - connecting);
          }
        }
        // kill -9 of a non-coordinator member (kept in "started", which the end of the run stops and waits for)
        Child victim = children.remove(1);
        int[] marks = children.stream().mapToInt(Child::mark).toArray();
        long killedAt = System.currentTimeMillis();
        victim.process.destroyForcibly();
        long seen = 0;
        for (int k = 0; k < children.size(); k++) {
          seen = Math.max(seen, children.get(k).await("VIEW", size - 1, marks[k], 30_000));
        }
        kills.add(seen - killedAt);
        // graceful leave of another non-coordinator member
        Child leaver = children.remove(1);
        marks = children.stream().mapToInt(Child::mark).toArray();
        leaver.send("leave");
        long leaving = leaver.await("LEAVING", -1, 0, 30_000);
        seen = 0;
        for (int k = 0; k < children.size(); k++) {
          seen = Math.max(seen, children.get(k).await("VIEW", size - 2, marks[k], 30_000));
        }
        leaves.add(seen - leaving);
        System.out.printf("run %d: join %d ms, kill -9 %d ms, leave %d ms%n", run, joins.get(run), kills.get(run),
            leaves.get(run));
      } finally {
        for (Child c : started) { // the killed and the leaving one too: a leaver stuck in close() would keep its port
          c.process.destroyForcibly();
        }
        for (Child c : started) {
          c.process.waitFor(10, TimeUnit.SECONDS);
        }
      }
    }
    System.out.println("| event | min | median | max |");
    System.out.println("|---|---|---|---|");
    print("join (connect -> every member has the new ring)", joins);
    print("kill -9 -> every survivor has the new ring", kills);
    print("graceful leave (close) -> every survivor has the new ring", leaves);
  }

  private static void print(String what, List<Long> values) {
    List<Long> v = new ArrayList<>(values);
    Collections.sort(v);
    System.out.printf("| %s | %d | %d | %d |%n", what, v.get(0), v.get(v.size() / 2), v.get(v.size() - 1));
  }
}
