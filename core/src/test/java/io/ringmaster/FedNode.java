package io.ringmaster;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.View;

/**
 * A node's view handling without a channel, for views that a real cluster produces only by a race
 * or a partition: the test builds them by hand and feeds them in. The views are handled on a
 * thread of their own, as a node does, and a recorder of each kind of listener keeps what it hears.
 */
class FedNode implements AutoCloseable {
  final NodeMetadata metadata;
  final Address self;
  final ExecutorService viewThread = Executors.newSingleThreadExecutor();
  final ClusterNode node;
  final List<OwnershipChange> ownership = new CopyOnWriteArrayList<>();
  final List<MembershipChange> memberships = new CopyOnWriteArrayList<>();

  FedNode(NodeMetadata metadata) {
    this(metadata, metadata.newAddress(), Duration.ofSeconds(10));
  }

  /** A node at the address given, waiting up to {@code ringBeforeTimeout} for the ring before its first view. */
  FedNode(NodeMetadata metadata, Address self, Duration ringBeforeTimeout) {
    this.metadata = metadata;
    this.self = self;
    this.node = new ClusterNode(metadata, viewThread, ringBeforeTimeout);
    node.setLocalAddress(self);
    node.addOwnershipListener(new SerialDelivery<>("ownership", ownership::add, Runnable::run, this, () -> { }));
    node.addMembershipListener(new SerialDelivery<>("members", memberships::add, Runnable::run, this, () -> { }));
  }

  /** Feeds a view created by its first member and waits until the view thread has handled it. */
  void view(long id, Address... members) throws Exception {
    install(View.create(members[0], id, members));
  }

  /** Feeds a view and waits until the view thread has handled it. */
  void install(View view) throws Exception {
    node.onView(view);
    installed();
  }

  /** Waits until the view thread has handled every view fed so far. */
  void installed() throws Exception {
    viewThread.submit(() -> { }).get(10, TimeUnit.SECONDS);
  }

  MembershipChange lastMembership() {
    return memberships.get(memberships.size() - 1);
  }

  OwnershipChange lastOwnership() {
    return ownership.get(ownership.size() - 1);
  }

  @Override
  public void close() {
    viewThread.shutdownNow();
  }

  /** A member of the in-JVM stack with 64 virtual nodes and 2 replicas. */
  static NodeMetadata meta(String id, double weight, String zone) {
    return NodeMetadata.of(Ringmaster.builder().nodeId(id).weight(weight).zone(zone).jgroupsConfig(TestCluster.STACK)
        .virtualNodes(64).replicas(2).buildConfig());
  }

  static NodeMetadata meta(String id) {
    return meta(id, 1.0, "");
  }
}
