package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.ObjectMessage;
import org.jgroups.SuspectedException;
import org.jgroups.blocks.Response;
import org.jgroups.util.Util;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Which thread sends a reply: never the JGroups thread that delivered the request, unless the
 * reply is small and ready at once (sending can wait for flow-control credits); small replies go
 * past flow control, large ones wait for credits.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RpcDispatchTest {

  @Test
  void workerHandler_doneBeforeTheDispatcherLooks_replyIsSentFromAWorker() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handle(Wire.OP_PUSH, in -> Wire.pushReply(1));
    assertEquals("rpc-worker", sentOn(rpc, Wire.OP_PUSH));
  }

  @Test
  void quickHandler_largeReply_isSentFromAWorker_smallOneAtOnce() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.completedFuture(new byte[Rpc.INLINE_REPLY_BYTES + 1]));
    rpc.handleQuickly(Wire.OP_WRITE, in -> CompletableFuture.completedFuture(new byte[16]));
    Sent large = dispatchThen(rpc, Wire.OP_GET, () -> { });
    Sent small = dispatchThen(rpc, Wire.OP_WRITE, () -> { });
    assertEquals("rpc-worker", large.thread());
    assertEquals("jgroups-oob-1", small.thread());
    // Unicast flow control would park the JGroups thread for credits (it ignores DONT_BLOCK): the
    // small reply goes past it; the large one, from a worker, waits for credits like any page.
    assertTrue(small.pastFlowControl());
    assertFalse(large.pastFlowControl());
  }

  @Test
  void aHandlersUnexpectedFailure_isAnsweredWithItsClassOnly_expectedOnesWithTheirReason() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handleQuickly(Wire.OP_WRITE, in -> {
      throw new NullPointerException("Cannot invoke \"io.ringmaster.demo.Store.get\" because \"this.store\" is null");
    });
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.failedFuture(new Rpc.Declined("owner c did not answer")));
    assertEquals("unexpected NullPointerException", errorText(dispatchThen(rpc, Wire.OP_WRITE, () -> { })));
    assertEquals("owner c did not answer", errorText(dispatchThen(rpc, Wire.OP_GET, () -> { })));
    // What a caller makes of failures, for the reasons it gives its HTTP clients.
    assertEquals("no reply from b in PT2S", Rpc.describe(new ExecutionException(
        new TimeoutException("no reply from b in PT2S"))));
    assertEquals("b: busy or stopping", Rpc.describe(new CompletionException(
        new Rpc.RemoteError("b", "busy or stopping"))));
    assertEquals("busy or stopping", Rpc.describe(new RejectedExecutionException("pool java.util.concurrent.X@1f")));
    assertEquals("unexpected ArithmeticException", Rpc.describe(new ArithmeticException("/ by zero")));
    assertEquals("TimeoutException", Rpc.describe(new TimeoutException()), "no message: the class");
  }

  /**
   * A handler's failure of a kind that requests meet in a cluster's normal life
   * ({@link Rpc#isExpected}) is logged at DEBUG, with its reason; any other, a bug, at WARNING with
   * its stack trace.
   */
  @Test
  void aHandlersFailure_isLoggedAtDebugIfExpected_atWarningWithItsTraceIfNot() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    NullPointerException bug = new NullPointerException("a bug (a test)");
    rpc.handleQuickly(Wire.OP_WRITE, in -> {
      throw bug;
    });
    Rpc.Declined declined = new Rpc.Declined("owner c did not answer");
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.failedFuture(declined));

    List<LogRecord> logged = Logged.by(Rpc.class, () -> {
      dispatchThen(rpc, Wire.OP_WRITE, () -> { });
      dispatchThen(rpc, Wire.OP_GET, () -> { });
    });

    assertEquals(List.of(Level.WARNING, Level.FINE), logged.stream().map(LogRecord::getLevel).toList());
    assertEquals("request W from null failed", text(logged.get(0)));
    assertSame(bug, logged.get(0).getThrown());
    assertEquals("request G from null failed: " + declined, text(logged.get(1)));
  }

  /** A reply of exactly {@link Rpc#INLINE_REPLY_BYTES} is still a small one: sent at once, past flow control. */
  @Test
  void quickHandler_replyOfExactlyTheInlineSize_isSentAtOnce_pastFlowControl() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.completedFuture(new byte[Rpc.INLINE_REPLY_BYTES]));
    Sent sent = dispatchThen(rpc, Wire.OP_GET, () -> { });
    assertEquals("jgroups-oob-1", sent.thread());
    assertTrue(sent.pastFlowControl());
    assertEquals(Rpc.INLINE_REPLY_BYTES, sent.reply().length);
  }

  /**
   * A quick handler's failure, ready at once, is a small answer: sent at once with its reason,
   * every worker busy or not.
   */
  @Test
  void everyWorkerBusy_aQuickHandlersFailureReadyAtOnce_isAnsweredAtOnceWithItsReason() throws Exception {
    Rpc rpc = new Rpc(null, new BusyWorkers(), null);
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.failedFuture(new Rpc.Declined("owner c did not answer")));
    Sent sent = dispatchThen(rpc, Wire.OP_GET, () -> { });
    assertEquals("jgroups-oob-1", sent.thread());
    assertEquals("owner c did not answer", errorText(sent), "its own reason, not \"busy\"");
  }

  /** A broadcast that cannot go out (here, before start: no channel) throws nothing, and says why at DEBUG. */
  @Test
  void broadcast_thatFails_throwsNothing_andSaysWhyAtDebug() throws Exception {
    Rpc rpc = new Rpc(null, null, null);
    List<LogRecord> logged =
        Logged.by(Rpc.class, () -> rpc.broadcast(Wire.status(new Wire.PeerStatus("a", 1, 0, 0, 0, 0, 0, 1))));
    assertEquals(List.of(Level.FINE), logged.stream().map(LogRecord::getLevel).toList());
    assertTrue(text(logged.get(0)).startsWith("broadcast failed: java.lang.NullPointerException"), text(logged.get(0)));
  }

  private static String text(LogRecord r) {
    return new SimpleFormatter().formatMessage(r);
  }

  private static String errorText(Sent sent) throws IOException {
    assertEquals(Wire.ERROR, sent.reply()[0]);
    return Wire.open(sent.reply(), 0, sent.reply().length).readUTF();
  }

  @Test
  void errorReplies_goPastFlowControl_toTheRequester() throws Exception {
    Rpc rpc = new Rpc(null, new BusyWorkers(), null);
    Address requester = Util.createRandomAddress("requester");
    // Empty, an unknown operation, and a foreign dispatcher's ObjectMessage on this fork (whose
    // getArray() throws): each answered with an error, none throwing on the JGroups thread.
    for (Message msg : List.<Message>of(new BytesMessage(null, new byte[0]), new BytesMessage(null, new byte[] {(byte) 0xEE}),
        new ObjectMessage(null, "a foreign request"))) {
      AtomicReference<Message> reply = new AtomicReference<>();
      msg.setSrc(requester);
      rpc.dispatch(msg, new Response() {
        @Override
        public void send(Object r, boolean exception) {
          throw new AssertionError("replies are sent as messages, with their flags");
        }

        @Override
        public void send(Message r, boolean exception) {
          reply.set(r);
        }
      });
      assertEquals(Wire.ERROR, reply.get().getArray()[0]);
      assertEquals(requester, reply.get().getDest());
      assertTrue(reply.get().isFlagSet(Message.Flag.NO_FC));
      assertTrue(reply.get().isFlagSet(Message.Flag.OOB));
    }
  }

  /** Why a call failed, for a peer that left before it answered and for a message that could not be read. */
  @Test
  void describe_aPeerThatLeft_andAMalformedMessage_sayWhatHappened() {
    assertEquals("left the view before it answered", Rpc.describe(new ExecutionException(new SuspectedException("b"))));
    assertEquals("malformed message (EOFException)", Rpc.describe(new CompletionException(new EOFException())));
    assertEquals("malformed message (UncheckedIOException)",
        Rpc.describe(new UncheckedIOException(new IOException("bad entry count"))));
  }

  /**
   * {@link Rpc#await} returns what the call gave, and gives up on one that never ends
   * {@link Rpc#AWAIT_MARGIN} after its timeout, saying so.
   */
  @Test
  void await_returnsTheCallsOutcome_orGivesUpAMarginAfterItsTimeout() throws Exception {
    assertEquals("reply", Rpc.await(CompletableFuture.completedFuture("reply"), Duration.ofMillis(1)));
    long start = System.nanoTime();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> Rpc.await(new CompletableFuture<>(), Duration.ofMillis(100)));
    assertTrue(System.nanoTime() - start >= Duration.ofMillis(100).plus(Rpc.AWAIT_MARGIN).toNanos(), "not before");
    assertInstanceOf(TimeoutException.class, e.getCause());
    assertEquals("no reply in PT0.1S, nor PT1S after that", e.getCause().getMessage());
  }

  /**
   * A one-way message is a status report, handed to the status listener with its sender; one that
   * cannot be read is dropped, said at DEBUG; any other one-way message is ignored.
   */
  @Test
  void oneWayMessages_aStatusReportReachesTheListener_aMalformedOrOtherOneIsDropped() throws Exception {
    Rpc rpc = new Rpc(null, new BusyWorkers(), null);
    List<String> heard = new CopyOnWriteArrayList<>();
    rpc.onStatus((from, status) -> heard.add(from + " " + status.id() + " " + status.viewId()));
    Address b = Util.createRandomAddress("b");
    byte[] report = Wire.status(new Wire.PeerStatus("b", 7, 0, 0, 0, 0, 0, 1));

    rpc.dispatch(new BytesMessage(null, report).setSrc(b), null);
    assertEquals(List.of(b + " b 7"), heard);

    byte[] cut = Arrays.copyOf(report, 3);
    List<LogRecord> logged = Logged.by(Rpc.class, () -> {
      rpc.dispatch(new BytesMessage(null, cut).setSrc(b), null);
      rpc.dispatch(new BytesMessage(null, new byte[] {Wire.OP_GET}).setSrc(b), null); // no reply wanted: ignored
    });
    assertEquals(List.of(b + " b 7"), heard, "nothing more heard");
    assertEquals(List.of(Level.FINE), logged.stream().map(LogRecord::getLevel).toList());
    assertTrue(text(logged.get(0)).startsWith("bad status message from " + b + ": java.io.IOException: malformed message: a string of 1 bytes with 0 bytes left"),
        text(logged.get(0)));
  }

  /** An RPC closed before it started (a peer whose start failed earlier) has nothing to close, and throws nothing. */
  @Test
  void close_beforeStart_throwsNothing() {
    assertDoesNotThrow(() -> new Rpc(null, null, null).close());
  }

  /** Every worker busy: the executor refuses each task. */
  static final class BusyWorkers extends FinishFirstWorkers {
    @Override
    public void execute(Runnable r) {
      throw new RejectedExecutionException("every worker is busy");
    }
  }

  @Test
  void everyWorkerBusy_smallReplyGoesAtOnce_largeOneIsRefusedAsBusy_nothingLargeFromTheJGroupsThread()
      throws Exception {
    Rpc rpc = new Rpc(null, new BusyWorkers(), null);
    byte[] small = Wire.pushReply(1);
    CompletableFuture<byte[]> smallLater = new CompletableFuture<>();
    CompletableFuture<byte[]> largeLater = new CompletableFuture<>();
    rpc.handleQuickly(Wire.OP_WRITE, in -> smallLater);
    rpc.handleQuickly(Wire.OP_GET, in -> largeLater);
    rpc.handle(Wire.OP_PUSH, in -> small);

    // Completed later on a JGroups thread (another peer's reply), with no worker to send from.
    Sent sentSmall = dispatchThen(rpc, Wire.OP_WRITE, () -> smallLater.complete(small));
    assertEquals("jgroups-oob-1", sentSmall.thread());
    assertTrue(sentSmall.pastFlowControl());
    assertArrayEquals(small, sentSmall.reply());
    Sent sentLarge = dispatchThen(rpc, Wire.OP_GET, () -> largeLater.complete(new byte[Rpc.INLINE_REPLY_BYTES + 1]));
    assertEquals(Wire.ERROR, sentLarge.reply()[0]);
    assertTrue(new String(sentLarge.reply(), StandardCharsets.UTF_8).contains("busy or stopping"));
    // A handler that may block cannot run at all: refused as busy.
    Sent refused = dispatchThen(rpc, Wire.OP_PUSH, () -> { });
    assertEquals(Wire.ERROR, refused.reply()[0]);
  }

  /** Runs the first task on a new "rpc-worker" thread, without waiting for it; refuses every later one. */
  static final class OneWorkerThenBusy extends FinishFirstWorkers {
    final CompletableFuture<Thread> worker = new CompletableFuture<>();

    @Override
    public void execute(Runnable r) {
      if (worker.isDone()) {
        throw new RejectedExecutionException("every worker is busy");
      }
      Thread t = new Thread(r, "rpc-worker");
      worker.complete(t);
      t.start();
    }
  }

  @Test
  void everyWorkerBusy_largeReplyOfAWorkerHandler_isSentFromTheWorkerThatMadeIt() throws Exception {
    OneWorkerThenBusy workers = new OneWorkerThenBusy();
    Rpc rpc = new Rpc(null, workers, null);
    CountDownLatch dispatched = new CountDownLatch(1);
    byte[] page = new byte[Rpc.INLINE_REPLY_BYTES + 1];
    rpc.handle(Wire.OP_PUSH, in -> {
      // Done after the dispatcher has returned: completed on this worker.
      if (!dispatched.await(10, TimeUnit.SECONDS)) {
        throw new AssertionError("the dispatcher never returned");
      }
      return page;
    });
    Sent sent = dispatchThen(rpc, Wire.OP_PUSH, dispatched::countDown, () -> workers.worker.join().join());
    assertEquals("rpc-worker", sent.thread());
    assertArrayEquals(page, sent.reply());
    assertFalse(sent.pastFlowControl());
  }

  @Test
  void callFromWorker_everyWorkerBusy_failsAtOnceAsBusy_withoutSending() {
    Rpc rpc = new Rpc(null, new BusyWorkers(), null); // no node: a send would fail otherwise
    CompletableFuture<?> call = rpc.callFromWorker("b", new byte[] {Wire.OP_WRITE}, Duration.ofSeconds(1));
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(0, TimeUnit.SECONDS));
    assertInstanceOf(RejectedExecutionException.class, e.getCause());
  }

  /** A reply, the thread that sent it, and whether it went past flow control. */
  private record Sent(String thread, byte[] reply, boolean pastFlowControl) {}

  /**
   * Dispatches a request for {@code op} on a thread named like JGroups', then runs {@code then}
   * on it; the reply sent, and the sending thread's name.
   */
  private static Sent dispatchThen(Rpc rpc, byte op, Runnable then) throws InterruptedException {
    return dispatchThen(rpc, op, then, () -> { });
  }

  /** As above, then waits with {@code await} (on the test's thread) before looking at the reply. */
  private static Sent dispatchThen(Rpc rpc, byte op, Runnable then, Interruptible await) throws InterruptedException {
    AtomicReference<Sent> sent = new AtomicReference<>();
    Response response = new Response() {
      @Override
      public void send(Object reply, boolean exception) {
        sent.set(new Sent(Thread.currentThread().getName(), (byte[]) reply, false));
      }

      @Override
      public void send(Message reply, boolean exception) {
        sent.set(new Sent(Thread.currentThread().getName(), reply.getArray(), reply.isFlagSet(Message.Flag.NO_FC)));
      }
    };
    Thread jgroups = new Thread(() -> {
      rpc.dispatch(new BytesMessage(null, new byte[] {op}), response);
      then.run();
    }, "jgroups-oob-1");
    jgroups.start();
    jgroups.join();
    await.run();
    assertNotNull(sent.get(), "a reply was sent");
    return sent.get();
  }

  @FunctionalInterface
  private interface Interruptible {
    void run() throws InterruptedException;
  }

  /** Dispatches a request for {@code op} on a thread named like JGroups'; the sending thread's name. */
  private static String sentOn(Rpc rpc, byte op) throws InterruptedException {
    return dispatchThen(rpc, op, () -> { }).thread();
  }
}
