package io.ringmaster.demo;

import org.junit.jupiter.api.AfterEach;

/** A test that runs a {@link PeerCluster} and maybe a {@link KeyWriter}: both are closed after each test. */
abstract class WithPeerCluster {
  protected PeerCluster cluster;
  protected KeyWriter writer;

  @AfterEach
  void closeWriterAndPeers() throws Exception {
    try {
      if (writer != null) {
        writer.close();
      }
    } finally {
      if (cluster != null) {
        cluster.close(); // even when the writer did not stop: the peers' processes and ports go
      }
    }
  }
}
