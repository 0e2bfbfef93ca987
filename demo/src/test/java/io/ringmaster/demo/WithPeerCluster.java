package io.ringmaster.demo;

import org.junit.jupiter.api.AfterEach;

/** A test that runs a {@link PeerCluster} and maybe a {@link KeyWriter}: both are closed after each test. */
abstract class WithPeerCluster {
  protected PeerCluster cluster;
  protected KeyWriter writer;

  @AfterEach
  void closeWriterAndPeers() throws Exception {
    if (writer != null) {
      writer.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }
}
