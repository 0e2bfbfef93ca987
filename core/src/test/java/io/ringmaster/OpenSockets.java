package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

/**
 * The network sockets this process holds, as Linux lists them: each file descriptor of
 * /proc/self/fd that is a socket, looked up by its inode in /proc/self/net/tcp, tcp6, udp and udp6
 * (which list every socket of the network namespace, other processes' too, hence the inodes). The
 * demo's tests use it too, from core's test jar.
 */
public final class OpenSockets {
  private static final List<String> TABLES = List.of("tcp", "tcp6", "udp", "udp6");
  /** A TCP socket's state in the tables: listening. */
  private static final int LISTEN = 0x0A;

  private OpenSockets() {}

  /** One socket: the table it is listed in, its local and remote address, and its state. */
  public record Socket(long inode, String table, InetSocketAddress local, InetSocketAddress remote, int state) {
    public boolean tcp() {
      return table.startsWith("tcp");
    }

    public boolean listening() {
      return tcp() && state == LISTEN;
    }

    @Override
    public String toString() {
      return table + " " + local + (listening() ? " listening" : " -> " + remote) + " (inode " + inode + ")";
    }
  }

  /**
   * The inodes of the sockets this process holds now, network or not. The tables are read first:
   * the JDK opens a Unix socket of its own the first time it opens a file channel (reading a file
   * with {@link Files}), and keeps it for good, which would otherwise count as opened later.
   */
  public static Set<Long> inodes() throws IOException {
    listed();
    Set<Long> inodes = new HashSet<>();
    try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
      for (Path fd : fds) {
        String target;
        try {
          target = Files.readSymbolicLink(fd).toString();
        } catch (IOException closedMeanwhile) {
          continue;
        }
        if (target.startsWith("socket:[")) {
          inodes.add(Long.parseLong(target.substring("socket:[".length(), target.length() - 1)));
        }
      }
    }
    return inodes;
  }

  /**
   * The sockets this process opened since {@code before} was read ({@link #inodes}) and still holds.
   * Waits up to 10 s for a moment when each of them is listed in a table, since a socket is listed
   * nowhere between its creation and its bind or connect; one never listed (a Unix socket, say)
   * fails, named.
   */
  public static List<Socket> openedSince(Set<Long> before) {
    AtomicReference<List<Socket>> opened = new AtomicReference<>();
    await("every socket opened listed in /proc/self/net").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
          Set<Long> open = inodes();
          Map<Long, Socket> listed = listed();
          open.retainAll(inodes()); // one closed meanwhile has left the tables too
          open.removeAll(before);
          List<Long> unlisted = open.stream().filter(inode -> !listed.containsKey(inode)).sorted().toList();
          assertEquals(List.of(), unlisted, "sockets of this process (inodes) in no table of /proc/self/net");
          opened.set(open.stream().map(listed::get).sorted(Comparator.comparing(Socket::toString)).toList());
        });
    return opened.get();
  }

  /** Every socket of the network namespace listed in the tables, by inode. */
  private static Map<Long, Socket> listed() throws IOException {
    Map<Long, Socket> sockets = new HashMap<>();
    for (String table : TABLES) {
      Path file = Path.of("/proc/self/net", table);
      if (!Files.exists(file)) {
        continue; // a kernel without IPv6
      }
      List<String> lines = Files.readAllLines(file);
      for (String line : lines.subList(1, lines.size())) {
        String[] fields = line.trim().split("\\s+");
        long inode = Long.parseLong(fields[9]);
        if (inode != 0) { // 0: a connection no socket holds any more (TIME_WAIT)
          sockets.put(inode, new Socket(inode, table, address(fields[1]), address(fields[2]),
              Integer.parseInt(fields[3], 16)));
        }
      }
    }
    return sockets;
  }

  /**
   * An address as the tables write it, {@code 0100007F:1E78}: the address in hex, in 32-bit words
   * each in the host's byte order (little-endian on the machines this runs on), then the port.
   */
  public static InetSocketAddress address(String hex) throws UnknownHostException {
    String[] parts = hex.split(":");
    byte[] bytes = new byte[parts[0].length() / 2];
    for (int word = 0; word < bytes.length / 4; word++) {
      for (int i = 0; i < 4; i++) {
        int at = (word * 4 + 3 - i) * 2;
        bytes[word * 4 + i] = (byte) Integer.parseInt(parts[0].substring(at, at + 2), 16);
      }
    }
    return new InetSocketAddress(InetAddress.getByAddress(bytes), Integer.parseInt(parts[1], 16));
  }

  /**
   * The multicast groups joined on each interface of the network namespace, as "interface group"
   * with the number of sockets that joined it, from /proc/self/net/igmp (IPv4).
   */
  public static Map<String, Integer> multicastGroups() throws IOException {
    Map<String, Integer> groups = new HashMap<>();
    String device = null;
    for (String line : Files.readAllLines(Path.of("/proc/self/net/igmp"))) {
      String[] fields = line.trim().split("\\s+");
      if (!line.startsWith("\t") && fields.length > 2 && fields[2].equals(":")) {
        device = fields[1]; // "1	lo        :     2      V3"
      } else if (line.startsWith("\t") && device != null) {
        groups.put(device + " " + address(fields[0] + ":0").getAddress().getHostAddress(), Integer.parseInt(fields[1]));
      }
    }
    return groups;
  }

  /** The groups of {@link #multicastGroups} that more sockets joined than in {@code before}. */
  public static Set<String> joinedSince(Map<String, Integer> before) throws IOException {
    Set<String> joined = new TreeSet<>();
    multicastGroups().forEach((group, users) -> {
      if (users > before.getOrDefault(group, 0)) {
        joined.add(group);
      }
    });
    return joined;
  }

  /** Fails naming the socket unless every socket in {@code sockets} is one {@code allowed} accepts. */
  public static void assertEach(List<Socket> sockets, Predicate<Socket> allowed, String what) {
    assertEquals(List.of(), sockets.stream().filter(allowed.negate()).toList(), what + "; all opened: " + sockets);
  }
}
