package io.ringmaster.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jgroups.Address;
import org.jgroups.protocols.FORK;
import org.jgroups.stack.DiagnosticsHandler;
import org.jgroups.stack.Protocol;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link Rpc}'s calls between two real peers in this JVM (the in-memory JGroups stack): what a
 * caller is told when the peer never answers, is not in the view as the process asked for, or is
 * sent a request it cannot read, and the status reports each peer broadcasts.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RpcCallTest {
  private final List<InJvmPeer> peers = new ArrayList<>();
  private InJvmPeer a;
  private InJvmPeer b;

  @BeforeEach
  void startTwoPeers() throws Exception {
    InJvmPeer.startAll(peers, "rpc-call", List.of("a", "b"));
    a = peers.get(0);
    b = peers.get(1);
  }

  @AfterEach
  void closePeers() {
    InJvmPeer.closeAll(peers);
  }

  /**
   * A call the peer never answers fails at its timeout, naming the peer and the timeout, and its
   * request is cancelled: the dispatcher forgets it then, rather than when the peer leaves the view.
   */
  @Test
  void call_thePeerNeverAnswers_failsAtItsTimeout_andTheRequestIsForgotten() throws Exception {
    b.rpc().handleQuickly(Wire.OP_GET, in -> new CompletableFuture<>()); // never answered
    CompletableFuture<DataInputStream> held = a.rpc().call("b", new byte[] {Wire.OP_GET}, Duration.ofMinutes(5));
    await("the held request is waiting").atMost(Duration.ofSeconds(20)).until(() -> requestsWaiting(a) == 1);

    Duration timeout = Duration.ofMillis(300);
    long start = System.nanoTime();
    CompletableFuture<DataInputStream> call = a.rpc().call("b", new byte[] {Wire.OP_GET}, timeout);
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - start >= timeout.toNanos(), "not before its timeout");
    assertInstanceOf(TimeoutException.class, e.getCause());
    assertEquals("no reply from b in PT0.3S", e.getCause().getMessage());
    await("the timed-out request is forgotten, the held one kept").atMost(Duration.ofSeconds(10))
        .until(() -> requestsWaiting(a) == 1);
    assertFalse(held.isDone(), "the other call still waits");
  }

  /** A call to an id no member holds, or to a process that no longer holds the id, fails at once without sending. */
  @Test
  void call_toAnIdNotInTheView_orToAProcessNotHoldingIt_failsAtOnce_namingIt() throws Exception {
    CompletableFuture<DataInputStream> nobody = a.rpc().call("nobody", new byte[] {Wire.OP_GET}, Duration.ofMinutes(1));
    Throwable notInView = assertThrows(ExecutionException.class, () -> nobody.get(0, TimeUnit.SECONDS)).getCause();
    assertInstanceOf(IllegalStateException.class, notInView);
    assertEquals("nobody is not in the view", notInView.getMessage());

    Address former = org.jgroups.util.UUID.randomUUID(); // b's process before a restart, say
    CompletableFuture<DataInputStream> old = a.rpc().call("b", former, new byte[] {Wire.OP_GET}, Duration.ofMinutes(1));
    Throwable notThatProcess = assertThrows(ExecutionException.class, () -> old.get(0, TimeUnit.SECONDS)).getCause();
    assertInstanceOf(IllegalStateException.class, notThatProcess);
    assertEquals("b is not in the view as " + former, notThatProcess.getMessage());
    assertEquals(0, requestsWaiting(a), "nothing sent");
  }

  /**
   * A request its handler cannot read (here, a read or a push with no body) is answered with an
   * error saying so, whether its handler runs on the JGroups thread or on a worker.
   */
  @Test
  void call_aMalformedRequest_isAnsweredWithAnErrorSayingSo() {
    for (byte op : new byte[] {Wire.OP_GET, Wire.OP_PUSH}) {
      CompletableFuture<DataInputStream> call = a.rpc().call("b", new byte[] {op}, Duration.ofSeconds(20));
      Throwable failure = assertThrows(ExecutionException.class, () -> call.get(30, TimeUnit.SECONDS)).getCause();
      assertInstanceOf(Rpc.RemoteError.class, failure, failure::toString);
      assertEquals("b: malformed message (EOFException)", failure.getMessage(), "op " + (char) op);
    }
  }

  /** A status report that one peer's directory publishes reaches the other's, from the process that sent it. */
  @Test
  void publish_aPeersStatusReport_reachesTheOtherPeersDirectory() {
    PeerDirectory atA = directory(a);
    PeerDirectory atB = directory(b);
    b.rpc().onStatus(atB::accept);
    atA.publish(id -> true, () -> true);
    await("b has a's report").atMost(Duration.ofSeconds(20)).until(() -> atB.hasReported("a"));
    assertEquals(a.node().viewId(), atB.report("a").orElseThrow().status().viewId());
  }

  /**
   * Closing a peer's RPC takes its fork channel off the node's channel (the node may stay on a
   * while it leaves); a call made after that fails, rather than throw or wait for a reply.
   */
  @Test
  void close_takesTheForkChannelOffTheNode_andALaterCallFails() throws Exception {
    assertTrue(hasForkChannel(a), "open while the RPC serves");
    a.rpc().close();
    assertFalse(hasForkChannel(a));
    CompletableFuture<DataInputStream> late = a.rpc().call("b", new byte[] {Wire.OP_GET}, Duration.ofMinutes(1));
    Throwable failure = assertThrows(ExecutionException.class, () -> late.get(20, TimeUnit.SECONDS)).getCause();
    assertInstanceOf(IllegalStateException.class, failure, failure::toString);
  }

  /**
   * A call still waiting for its reply when the peer closes its RPC (a stop's last step) fails at
   * once as JGroups 5.5.7 fails a stopped dispatcher's requests: with an {@link IllegalStateException}
   * ("transport was closed"), which {@link Rpc#await} reports as the call's failure, one we expect.
   * Not with a {@link java.util.concurrent.CancellationException}: {@code get()} throws that one as
   * it is, past every catch of {@link ExecutionException} (a push's, say).
   */
  @Test
  void close_failsTheCallsWaitingForAReply_asTransportClosed_notAsCancelled() throws Exception {
    b.rpc().handleQuickly(Wire.OP_GET, in -> new CompletableFuture<>()); // never answered
    CompletableFuture<DataInputStream> call = a.rpc().call("b", new byte[] {Wire.OP_GET}, Duration.ofMinutes(5));
    await("the request is waiting").atMost(Duration.ofSeconds(20)).until(() -> requestsWaiting(a) == 1);

    a.rpc().close();

    ExecutionException e = assertThrows(ExecutionException.class, () -> Rpc.await(call, Duration.ofSeconds(20)));
    assertInstanceOf(IllegalStateException.class, e.getCause(), e.getCause()::toString);
    assertEquals("transport was closed", Rpc.describe(e));
    assertEquals(0, requestsWaiting(a), "forgotten");
  }

  private static boolean hasForkChannel(InJvmPeer p) {
    FORK fork = p.node().channel().getProtocolStack().findProtocol(FORK.class);
    Protocol top = fork == null ? null : fork.get(Rpc.FORK_STACK);
    return top != null && FORK.getForkStack(top).get(Rpc.FORK_CHANNEL) != null;
  }

  private static PeerDirectory directory(InJvmPeer p) {
    return new PeerDirectory(sequence -> new Wire.PeerStatus(p.id(), p.node().viewId(), 0, 0, 0, 0, 0, sequence),
        p.rpc(), p.routing()::processOf, p.routing()::ownProcess);
  }

  /** The requests the peer's dispatcher waits on replies for, as JGroups' diagnostics list them. */
  private static int requestsWaiting(InJvmPeer p) {
    int waiting = 0;
    DiagnosticsHandler diagnostics = p.node().channel().getProtocolStack().getTransport().getDiagnosticsHandler();
    for (DiagnosticsHandler.ProbeHandler h : diagnostics.getProbeHandlers()) {
      Map<String, String> answer = h.handleProbe("requests"); // null, or no "requests", from other handlers
      String listed = answer == null ? null : answer.get("requests");
      if (listed != null) {
        waiting += (int) listed.lines().filter(line -> !line.isBlank()).count();
      }
    }
    return waiting;
  }
}
