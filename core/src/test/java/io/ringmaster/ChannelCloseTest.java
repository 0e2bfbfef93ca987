package io.ringmaster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jgroups.EmptyMessage;
import org.jgroups.Event;
import org.jgroups.JChannel;
import org.jgroups.protocols.SHARED_LOOPBACK;
import org.jgroups.protocols.SHARED_LOOPBACK_PING;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.NAKACK2;
import org.jgroups.protocols.pbcast.STABLE;
import org.jgroups.stack.Protocol;
import org.jgroups.stack.ProtocolStack;
import org.junit.jupiter.api.Test;

/**
 * {@link Stacks#closeKeepingTheInterrupt}: JGroups' own close swallows an interrupt in some of its
 * waits, so a thread interrupted while it closes a channel would get back with its flag clear.
 * Here a protocol holds the channel's leave (as GMS's leave waits for the coordinator), the
 * closing thread is interrupted meanwhile, and must come back with its flag set, the channel
 * closed. And a closed channel leaves no sender thread of its transport behind.
 */
class ChannelCloseTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** Holds the DISCONNECT on its way down until released, through interrupts (setting the flag again, as JGroups' waits do). */
  private static final class HoldsTheLeave extends Protocol {
    final CountDownLatch entered = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public Object down(Event evt) {
      if (evt.getType() == Event.DISCONNECT) {
        entered.countDown();
        boolean interrupted = false;
        while (release.getCount() > 0) {
          try {
            release.await();
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
      return down_prot.down(evt);
    }
  }

  /**
   * Sends a message while its stack is destroyed, once the transport has stopped: as a message that
   * the transport's thread pool handles while the channel closes makes a protocol send (FD_SOCK2
   * suspecting a member that closes at the same time, then VERIFY_SUSPECT2 probing it).
   */
  private static final class SendsWhileClosing extends Protocol {
    @Override
    public void destroy() {
      down_prot.down(new EmptyMessage(null));
      super.destroy();
    }
  }

  /** The live threads, named by JGroups' thread factory, of the member {@code a} of {@code cluster}. */
  private static List<String> threadsOf(String cluster) {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
        .filter(name -> name.endsWith("," + cluster + ",a")).toList();
  }

  private static JChannel connected(HoldsTheLeave hold) throws Exception {
    JChannel channel = new JChannel(new SHARED_LOOPBACK(), new SHARED_LOOPBACK_PING(), new NAKACK2(), new UNICAST3(),
        new STABLE(), hold, new GMS().setJoinTimeout(1000).setLeaveTimeout(1000)).name("a");
    channel.connect("channel-close-" + UUID.randomUUID());
    return channel;
  }

  @Test
  void anInterruptWhileTheChannelCloses_isKept_andTheChannelIsClosed() throws Exception {
    HoldsTheLeave hold = new HoldsTheLeave();
    JChannel channel = connected(hold);
    try {
      CompletableFuture<Boolean> flagAfter = new CompletableFuture<>();
      Thread closer = new Thread(() -> {
        Stacks.closeKeepingTheInterrupt(channel, "a");
        flagAfter.complete(Thread.currentThread().isInterrupted());
      }, "closer");
      closer.start();
      assertTrue(hold.entered.await(WAIT.toSeconds(), TimeUnit.SECONDS), "the leave began");
      await("the closer waits").atMost(WAIT).until(() -> closer.getState() == Thread.State.WAITING);
      closer.interrupt();
      // Taken (join() threw, clearing it) and waiting again: only then is the leave let go, so that
      // the close's end cannot race the interrupt.
      await("the interrupt taken").atMost(WAIT).until(() -> !closer.isInterrupted()
          && closer.getState() == Thread.State.WAITING);
      hold.release.countDown();

      assertTrue(flagAfter.get(WAIT.toSeconds(), TimeUnit.SECONDS), "the closer got its interrupt back");
      assertTrue(channel.isClosed(), "and the channel is closed");
    } finally {
      hold.release.countDown();
      channel.close();
    }
  }

  @Test
  void aFlagSetBeforeTheClose_isKept_andTheChannelIsClosed() throws Exception {
    HoldsTheLeave hold = new HoldsTheLeave();
    hold.release.countDown();
    JChannel channel = connected(hold);
    boolean flagAfter;
    try {
      Thread.currentThread().interrupt();
      Stacks.closeKeepingTheInterrupt(channel, "a");
    } finally {
      flagAfter = Thread.interrupted(); // and cleared: later tests run on this thread
      channel.close();
    }
    assertTrue(flagAfter, "the flag is set again");
    assertTrue(channel.isClosed());
    assertFalse(Thread.currentThread().isInterrupted());
  }

  /**
   * The transport's per-destination bundler (the shipped TCP stacks' one sender thread per
   * destination) stops its senders before the transport's thread pool has ended: a message sent
   * in between starts a sender thread that JGroups never stops, and that is no daemon, so a JVM
   * whose node was closed would not exit. The close stops it. Platform threads, as in the shipped
   * stacks: on Java 21 and later JGroups would otherwise take virtual ones, which no thread list
   * shows.
   */
  @Test
  void aMessageSentOnceTheTransportStopped_leavesNoSenderThreadAfterTheClose() throws Exception {
    String stack = """
        <config xmlns="urn:org:jgroups">
          <SHARED_LOOPBACK bind_addr="127.0.0.1" bundler.use_single_sender_thread="false"
                           use_virtual_threads="false"/>
          <SHARED_LOOPBACK_PING/>
          <pbcast.NAKACK2/>
          <UNICAST3/>
          <pbcast.GMS join_timeout="1000" leave_timeout="1000"/>
        </config>""";
    JChannel channel = new JChannel(new ByteArrayInputStream(stack.getBytes(StandardCharsets.UTF_8))).name("a");
    channel.getProtocolStack().insertProtocol(new SendsWhileClosing(), ProtocolStack.Position.ABOVE,
        SHARED_LOOPBACK.class);
    String cluster = "channel-close-" + UUID.randomUUID();
    try {
      channel.connect(cluster);
      assertFalse(threadsOf(cluster).isEmpty(), "the member's threads are named by its cluster");
      Stacks.closeKeepingTheInterrupt(channel, "a");
    } finally {
      channel.close();
    }
    await("every thread of the closed channel ends").atMost(WAIT).until(() -> threadsOf(cluster), List::isEmpty);
  }
}
