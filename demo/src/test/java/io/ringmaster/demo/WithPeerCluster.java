package io.ringmaster.demo;

import org.junit.jupiter.api.AfterEach;

/** A test that runs a {@link PeerCluster} and maybe a {@link KeyWriter}: both are closed after each test. */
abstract class WithPeerCluster {
  protected PeerCluster cluster;
  protected KeyWriter writer;

  /** Closes the peers even when the writer does not stop: their processes and ports must go. */
  @AfterEach
  void closeWriterAndPeers() {
    Steps steps = new Steps();
    if (writer != null) {
      steps.run(writer::close);
    }
    if (cluster != null) {
      steps.run(cluster::close);
    }
    steps.throwFirst();
  }
}
