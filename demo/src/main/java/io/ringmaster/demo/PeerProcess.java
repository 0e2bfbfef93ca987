package io.ringmaster.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** A peer the launcher started: its id, HTTP port, process and log file. */
record PeerProcess(String id, int port, Process process, Path log) {

  /**
   * Starts a peer as a child process: this JVM's {@code java}, this class path (the jar), the
   * {@code peer} command, {@code --parent-pid} so that it leaves when the launcher is gone, and
   * {@code --fault-injection} for {@code split} and {@code heal}.
   * Output, appended, goes to {@code <logDir>/<id>.log}.
   */
  static PeerProcess start(String id, int port, ClusterOptions options, Path logDir) throws IOException {
    Path log = logDir.resolve(id + ".log");
    List<String> command = command(id, port, options);
    // A log dir may be used again: a line marks where this run of the peer starts.
    Files.writeString(log, RUN_MARK + id + " started " + Instant.now() + "\n",
        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    return new PeerProcess(id, port, process, log);
  }

  /** The command line of a peer started by this JVM, the launcher. */
  static List<String> command(String id, int port, ClusterOptions options) {
    List<String> command = new ArrayList<>();
    command.add(ProcessHandle.current().info().command().orElse(
        Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    // A peer that runs out of memory exits (the launcher reports it) rather than stay up half broken.
    command.addAll(List.of("-Djava.net.preferIPv4Stack=true", "-XX:+UseSerialGC", "-Xmx512m",
        "-XX:+ExitOnOutOfMemoryError"));
    // Let -Dringmaster.bind_port=... and the like given to the launcher reach the peers.
    System.getProperties().stringPropertyNames().stream()
        .filter(k -> k.startsWith("ringmaster.") || k.startsWith("jgroups."))
        .sorted()
        .forEach(k -> command.add("-D" + k + "=" + System.getProperty(k)));
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "peer",
        "--id", id, "--http-port", Integer.toString(port), "--replicas", Integer.toString(options.replicas()),
        "--cluster", options.cluster(), "--parent-pid", Long.toString(ProcessHandle.current().pid()),
        // For the launcher's split and heal: the peers are its own, on one machine.
        "--fault-injection"));
    return command;
  }

  /** How the line that starts a run in a peer's log begins. */
  static final String RUN_MARK = "--- ";

  String url() {
    return "http://127.0.0.1:" + port;
  }

  boolean isAlive() {
    return process.isAlive();
  }
}
