package io.ringmaster.bench;

import io.ringmaster.Ringmaster;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * One Ringmaster node in its own JVM, driven by {@link ClusterTimings}: prints a timestamped line
 * for each event on stdout and leaves gracefully when it reads {@code leave} on stdin.
 *
 * <pre>{@code java -cp bench/target/benchmarks.jar io.ringmaster.bench.NodeProcess <cluster> <id>}</pre>
 */
public final class NodeProcess {
  private NodeProcess() {}

  public static void main(String[] args) throws Exception {
    String cluster = args[0];
    String id = args[1];
    Ringmaster node = Ringmaster.builder().clusterName(cluster).nodeId(id).virtualNodes(256)
        .jgroupsConfig("ringmaster/jgroups/localhost-tcp.xml").build();
    node.addMembershipListener(change -> System.out.println("VIEW " + System.currentTimeMillis() + " "
        + change.viewId() + " " + change.members().size() + " " + Long.toHexString(node.ring().checksum())));
    System.out.println("CONNECTING " + System.currentTimeMillis());
    node.start();
    System.out.println("STARTED " + System.currentTimeMillis());
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.equals("leave")) {
        System.out.println("LEAVING " + System.currentTimeMillis());
        node.close();
        System.out.println("LEFT " + System.currentTimeMillis());
        System.exit(0);
      }
    }
    node.close(); // stdin closed: the driver went away
  }
}
