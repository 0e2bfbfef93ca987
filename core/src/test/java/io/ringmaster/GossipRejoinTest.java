package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.junit.jupiter.api.Test;

/**
 * The checksum gossip around a rejoin: between the channel's reconnect (a new address) and the
 * first view under that address, the node's ring is still the old view's, which does not hold the
 * new address. A checksum sent then would make a peer still in the old view report a divergence
 * that is none, so the node sends none until its new view is installed. Real channels on the
 * in-JVM stack; the node's view handling is fed the views.
 */
class GossipRejoinTest {

  @Test
  void round_afterTheChannelRejoined_sendsNothingUntilTheNewViewIsInstalled() throws Exception {
    Address b = meta("b").newAddress();
    ScheduledExecutorService background = Executors.newSingleThreadScheduledExecutor();
    try (FedNode a = new FedNode(meta("a"));
         JChannel channelA = new JChannel(TestCluster.STACK);
         JChannel channelB = new JChannel(TestCluster.STACK)) {
      Address rejoined = a.metadata.newAddress();
      Deque<Address> addressesOfA = new ArrayDeque<>(List.of(a.self, rejoined));
      channelA.addAddressGenerator(addressesOfA::poll);
      channelB.addAddressGenerator(() -> b);
      channelA.connect("gossip-rejoin");
      channelB.connect("gossip-rejoin");
      a.view(1, a.self);
      a.view(2, a.self, b); // b joins a: a has nothing to wait for
      Gossip gossip = new Gossip("a", channelA, a.node, d -> { }, background, v -> { });

      gossip.round();
      assertEquals(1, gossip.sent.get(), "in its own view: a checksum to b");

      channelA.disconnect(); // what a rejoin does: leave, then join again under a new address
      channelA.connect("gossip-rejoin");
      assertEquals(rejoined, channelA.getAddress());
      gossip.round();
      assertEquals(1, gossip.sent.get(), "the ring is still view 2's, which does not hold the new address");

      a.node.setLocalAddress(rejoined);
      a.view(3, b, rejoined);
      gossip.round();
      assertEquals(2, gossip.sent.get(), "the new view installed: gossip again");
    } finally {
      background.shutdownNow();
    }
  }
}
