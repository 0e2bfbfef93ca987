package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the launcher quotes from a peer's log: the latest run's last line with a prefix. */
class LauncherLastLineTest {

  @Test
  void lastLine_ofTheLatestRun_evenPastBytesThatAreNotUtf8(@TempDir Path dir) throws IOException {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    log.writeBytes((PeerProcess.RUN_MARK + " first run\nerror: from the first run\n").getBytes(StandardCharsets.UTF_8));
    log.writeBytes((PeerProcess.RUN_MARK + " second run\nerror: an early one\n").getBytes(StandardCharsets.UTF_8));
    log.writeBytes(new byte[] {'n', 'o', 'i', 's', 'e', ' ', (byte) 0xC3, (byte) 0x28, '\n'}); // not UTF-8
    log.writeBytes("error: the last one\nbye\n".getBytes(StandardCharsets.UTF_8));
    Path file = Files.write(dir.resolve("peer-1.log"), log.toByteArray());

    assertEquals(Optional.of("error: the last one"), Launcher.lastLine(file, "error:"));
    assertEquals(Optional.empty(), Launcher.lastLine(file, "peer-1 left the cluster"), "not in the latest run");
    Files.writeString(file, PeerProcess.RUN_MARK + " third run\n", StandardOpenOption.APPEND);
    assertEquals(Optional.empty(), Launcher.lastLine(file, "error:"), "the third run wrote no error yet");
    assertEquals(Optional.empty(), Launcher.lastLine(dir.resolve("absent.log"), "error:"));
  }

  /** A peer that exited after SIGTERM left gracefully only if its log says it left. */
  @Test
  void stopVerdict_gracefulOnlyWithThePeersOwnWordForIt() {
    PeerProcess p = new PeerProcess("peer-3", 8083, null, Path.of("logs", "peer-3.log"));
    assertEquals("peer-3 left gracefully in 812 ms: keys handed off in total: 10; all handed off",
        Launcher.stopVerdict(p, 812, Optional.of("peer-3 left the cluster in 800 ms; keys handed off in total: 10;"
            + " all handed off")));
    assertEquals("peer-3 stopped after 812 ms without reporting a finished leave: its keys may not have been"
        + " handed off; see " + p.log(), Launcher.stopVerdict(p, 812, Optional.empty()));
  }
}
