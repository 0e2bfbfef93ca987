package io.ringmaster.demo;

import io.ringmaster.RingmasterConfig;
import io.ringmaster.RingmasterException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.LogManager;

/**
 * The demo's command line: {@code peer} runs one key-value peer in this process; {@code cluster}
 * starts several as child processes and reads commands from stdin.
 *
 * <p>Exit codes: 0 after a normal stop ({@code quit}, the end of input, or a peer leaving because
 * its launcher is gone), 1 if the peer or launcher could not start, 2 for a bad command line (a
 * one-line error naming the flag and value, then usage, on stderr). Stopped by a signal, the JVM
 * exits with 128 plus the signal's number (143 for SIGTERM, 130 for Ctrl-C's SIGINT), after the
 * graceful leave. A peer the launcher started runs with {@code -XX:+ExitOnOutOfMemoryError}
 * ({@link PeerProcess}), so out of memory it exits with the JVM's 3.
 */
public final class Main {
  static final String USAGE = String.join("\n",
      "usage: java -jar ringmaster-demo.jar <command> [flags]",
      "  " + PeerOptions.USAGE,
      "      run one peer in this process; HTTP on 127.0.0.1:<port>, peers found on 127.0.0.1 TCP 7800-7819",
      "  " + ClusterOptions.USAGE,
      "      start peers as child processes (HTTP ports from 8081) and read commands from stdin; type help",
      "  help");

  private Main() {}

  public static void main(String[] args) {
    // Before anything logs: the manager is chosen when logging starts (see LeaveLogManager).
    if (System.getProperty("java.util.logging.manager") == null) {
      System.setProperty("java.util.logging.manager", LeaveLogManager.class.getName());
    }
    // Started now, while no leave is pending: its first reset() (reading the configuration) must
    // not come during a shutdown, where it would wait for a leave that waits for this thread.
    LogManager.getLogManager();
    int code = run(args, System.out, System.err);
    System.exit(code);
  }

  /** A tombstone grace under this is warned about: fine for a test, risky for data. */
  static final Duration SHORT_TOMBSTONE_GRACE = Duration.ofMinutes(5);

  /** Runs a command; returns the exit code. {@code peer} and {@code cluster} return only when stopped. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    return run(args, out, err, System.in, peer -> { });
  }

  /**
   * {@link #run(String[], PrintStream, PrintStream)} with the launcher's commands read from
   * {@code in}, and {@code started} told of a peer once it serves, before this waits for it to
   * stop: a test that expects no peer to start closes it there, and gets a wrong exit code rather
   * than a run that never returns.
   */
  static int run(String[] args, PrintStream out, PrintStream err, InputStream in,
      Consumer<Peer> started) {
    if (args.length == 0) {
      err.println("error: a command is required");
      err.println(USAGE);
      return 2;
    }
    // "--help" anywhere after "peer" or "cluster" (even where a flag's value goes: no id, path or
    // number is "--help"), or "-h" as the command's one argument: a request for the usage.
    boolean command = args[0].equals("peer") || args[0].equals("cluster");
    if (command && (args.length == 2 && args[1].equals("-h")
        || Arrays.asList(args).subList(1, args.length).contains("--help"))) {
      out.println(USAGE); // "peer --help": a request for the flags, not a bad flag
      return 0;
    }
    try {
      switch (args[0]) {
        case "peer" -> {
          return peer(PeerOptions.parse(args, 1), out, err, started);
        }
        case "cluster" -> {
          return new Launcher(ClusterOptions.parse(args, 1), out, err).run(in);
        }
        case "help", "--help", "-h" -> {
          out.println(USAGE);
          return 0;
        }
        default -> throw new UsageException("unknown command \"" + args[0] + "\"");
      }
    } catch (UsageException e) {
      err.println("error: " + e.getMessage());
      err.println(USAGE);
      return 2;
    }
  }

  private static int peer(PeerOptions options, PrintStream out, PrintStream err,
      Consumer<Peer> whenStarted) {
    RingmasterConfig config;
    try {
      config = options.builder().buildConfig();
      TestingAids.fromSystemProperties(); // a bad -Dringmaster.demo.* is a bad command line too
    } catch (IllegalArgumentException e) { // a setting the node refuses, from a flag or the --config file
      err.println("error: " + e.getMessage());
      err.println(USAGE);
      return 2;
    }
    if (options.tombstoneGrace().compareTo(SHORT_TOMBSTONE_GRACE) < 0) { // allowed, for tests and demos
      err.println("warning: --tombstone-grace " + options.tombstoneGrace().toSeconds() + " is under "
          + SHORT_TOMBSTONE_GRACE.toMinutes() + " minutes: a delete can come back if a copy of the key that"
          + " missed it (a partition, a peer that was down) turns up after its tombstone is dropped");
    }
    // The graceful leave is hooked before the peer starts: once its node has joined, old owners may
    // hand it ranges and drop their copies, so a SIGTERM (or a Ctrl-C in the launcher's terminal)
    // during the start must still hand them on. The hook waits for the start to end first.
    CompletableFuture<Peer> started = new CompletableFuture<>();
    CompletableFuture<Void> left = new CompletableFuture<>();
    LeaveLogManager.holdUntil(left); // what the hand-off logs reaches the log
    // What the hook may wait: the start, then close(): a rejoin under way and the hand-off (up to
    // leaveTimeout each), then the node's own stop.
    LeaveLogManager.holdAtMost(config.startTimeout().plus(config.leaveTimeout().multipliedBy(2)).plusSeconds(30));
    Thread hook = new Thread(() -> {
      try {
        Peer p = started.join(); // null if the start failed: nothing to hand off
        if (p != null) {
          p.close();
        }
      } finally {
        left.complete(null);
      }
    }, "graceful-leave");
    try {
      Runtime.getRuntime().addShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) { // a signal before the start: nothing to hand off
      left.complete(null); // the log waits for no leave
      err.println("error: stopped before the peer started");
      return 1;
    }
    boolean over = false; // the peer failed to start, or stopped: nothing left for the hook to do
    ScheduledExecutorService watch = null;
    try {
      // Watched from before the start, which can take a while (joining, pulling ranges): a launcher
      // gone meanwhile is seen at once, and its pid is not yet free for another process to take.
      watch = options.parentPid().map(pid -> exitWithParent(pid, err)).orElse(null);
      Peer peer = null;
      try {
        peer = Peer.start(options);
      } catch (RuntimeException | IOException e) {
        // The settings were fine; the start was not (a stack protocol refusing its settings, say, or
        // anything unforeseen: a line that names it, not a stack trace).
        boolean said = e instanceof IllegalArgumentException || e instanceof RingmasterException
            || e instanceof IOException;
        err.println("error: cannot start peer: " + (said ? e.getMessage() : e.toString()));
        over = true;
        return 1;
      } finally {
        started.complete(peer); // on every way out: the hook must never wait for good
      }
      out.println(peer.describe());
      out.flush();
      whenStarted.accept(peer);
      try {
        peer.awaitStop();
        over = true;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the peer still runs: the hook stays, for its graceful leave
      }
      return 0;
    } finally {
      if (over) {
        unhook(hook, left);
        if (watch != null) { // as the hook: a JVM running peers one after another gathers no watchers
          watch.shutdownNow();
        }
      }
    }
  }

  /**
   * Takes the graceful-leave hook back once the peer has stopped or failed to start, so that a JVM
   * running peers one after another (a test's) does not gather hooks; nothing if the JVM is
   * already shutting down, which is what stopped the peer.
   */
  private static void unhook(Thread hook, CompletableFuture<Void> left) {
    try {
      if (Runtime.getRuntime().removeShutdownHook(hook)) {
        left.complete(null); // the hook will not run: the log has nothing more to wait for
      }
    } catch (IllegalStateException shuttingDown) {
      // the hook runs, or has run, and completes it
    }
  }

  /**
   * Exits (through the shutdown hook's graceful leave) once the launcher is gone, even if it was
   * killed with SIGKILL and could not stop its children itself.
   *
   * @return the watch, to stop once the peer has stopped
   */
  private static ScheduledExecutorService exitWithParent(long pid, PrintStream err) {
    // One handle, taken now: it remembers the process's start time, so a new process that later
    // gets the same pid does not pass for the launcher (a handle taken afresh each time would).
    Optional<ProcessHandle> parent = launcher(pid, ProcessHandle.current());
    ScheduledExecutorService watch = Executors.newSingleThreadScheduledExecutor(OwnThreads.daemons("parent-watch"));
    watch.scheduleWithFixedDelay(() -> {
      if (parent.isEmpty() || !parent.get().isAlive() || exitedUnreaped(pid)) {
        err.println("launcher process " + pid + " is gone; leaving");
        System.exit(0);
      }
    }, 1, 1, TimeUnit.SECONDS);
    return watch;
  }

  /**
   * The process {@code pid} if it can be the launcher that started {@code self}; empty if there is
   * none, or if a process that took the pid after the launcher died holds it now (it started after
   * {@code self}).
   */
  static Optional<ProcessHandle> launcher(long pid, ProcessHandle self) {
    return ProcessHandle.of(pid).filter(p -> startedNoLaterThan(p, self));
  }

  /**
   * Whether {@code candidate} can be the process that started {@code self}: it started no later.
   * The launcher starts before the peers it starts, and a process that takes the launcher's pid
   * after it died starts after them. True when the system gives no start time (the check is then
   * the pid alone).
   */
  static boolean startedNoLaterThan(ProcessHandle candidate, ProcessHandle self) {
    Optional<Instant> started = candidate.info().startInstant();
    Optional<Instant> selfStarted = self.info().startInstant();
    return started.isEmpty() || selfStarted.isEmpty() || !started.get().isAfter(selfStarted.get());
  }

  /**
   * Whether process {@code pid} has exited but its parent has not collected it yet (a zombie,
   * state {@code Z} in {@code /proc/<pid>/stat}): a launcher started by a program that never waits
   * for its children stays one after a {@code kill -9}, and {@link ProcessHandle#isAlive()} takes a
   * zombie for alive. False where there is no {@code /proc}.
   */
  static boolean exitedUnreaped(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      int name = stat.lastIndexOf(')'); // "pid (command name) state ...": the name may hold spaces and ')'
      return name > 0 && name + 2 < stat.length() && "ZX".indexOf(stat.charAt(name + 2)) >= 0;
    } catch (IOException | RuntimeException noProc) {
      return false;
    }
  }
}
