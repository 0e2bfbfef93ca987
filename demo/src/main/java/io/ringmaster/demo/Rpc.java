package io.ringmaster.demo;

import io.ringmaster.Ringmaster;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import org.jgroups.Address;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.SuspectedException;
import org.jgroups.blocks.MessageDispatcher;
import org.jgroups.blocks.RequestHandler;
import org.jgroups.blocks.RequestOptions;
import org.jgroups.blocks.Response;
import org.jgroups.fork.ForkChannel;
import org.jgroups.protocols.FRAG2;
import org.jgroups.stack.ProtocolStack;

/**
 * Requests between peers on a fork of the node's JGroups channel: a {@link MessageDispatcher}
 * correlates replies, fails a request at once when its target leaves the view, and our timer
 * bounds every request. A handler that may wait (a pull waiting for a view, a push merging a
 * page) runs on {@code workers}; a quick one runs on the JGroups thread and never blocks: it
 * returns a future, completed later if it must ask other peers (a forwarded write, sent with
 * {@link #callFromWorker}). A reply that is not ready at once is sent from a worker too. A large
 * reply waits for flow-control credits, and JGroups threads must not: it is only ever sent from a
 * worker. A small one (every error is one) goes past flow control ({@link #reply}), so it may be
 * sent from any thread. With every worker busy, a large reply is answered "busy or stopping"
 * instead: writes and transfers retry, a read takes the other owners' copies.
 */
final class Rpc implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Rpc.class.getName());
  static final String FORK_STACK = "ringmaster-demo";
  static final String FORK_CHANNEL = "kv";
  /** Replies up to this size may go out on the JGroups thread that made them: a few packets at most. */
  static final int INLINE_REPLY_BYTES = 16 * 1024;
  /** How much longer than a call's timeout {@link #await} waits for it. */
  static final Duration AWAIT_MARGIN = Duration.ofSeconds(1);

  /**
   * Waits for the outcome of a call made with {@code timeout}. The call's own expiry, on the timer
   * thread, normally ends it; the wait is bounded here too ({@link #AWAIT_MARGIN} longer), so that
   * a caller keeps its deadline even if the timer is held up (it may run the steps that follow a
   * call's failure, a small reply among them).
   *
   * @throws ExecutionException with the call's failure, or a {@link TimeoutException} if it did not end in time
   */
  static <T> T await(CompletableFuture<T> call, Duration timeout) throws InterruptedException, ExecutionException {
    try {
      return call.get(timeout.plus(AWAIT_MARGIN).toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException late) {
      throw noReply(timeout);
    }
  }

  /** What {@link #await} throws for a call that did not end within {@code timeout} and the margin after it. */
  static ExecutionException noReply(Duration timeout) {
    return new ExecutionException(new TimeoutException("no reply in " + timeout + ", nor " + AWAIT_MARGIN
        + " after that"));
  }

  /** Handles one request; returns the reply, which starts with {@link Wire#OK} or {@link Wire#ERROR}. */
  @FunctionalInterface
  interface Handler {
    byte[] handle(DataInputStream in) throws Exception;
  }

  /** Handles one request without blocking; the future completes with the reply. */
  @FunctionalInterface
  interface QuickHandler {
    CompletableFuture<byte[]> handle(DataInputStream in) throws Exception;
  }

  /** The request failed on the remote peer, which said why. */
  static final class RemoteError extends Exception {
    RemoteError(String peer, String message) {
      super(peer + ": " + message, null, false, false);
    }
  }

  /**
   * A request a handler declines for a reason its caller acts on (a peer that is leaving, say):
   * the error reply carries the message alone, so the caller can match it exactly.
   */
  static final class Declined extends RuntimeException {
    Declined(String message) {
      super(message, null, false, false);
    }
  }

  private final Ringmaster node;
  private final ExecutorService workers;
  private final ScheduledExecutorService timer;
  private final QuickHandler[] handlers = new QuickHandler[256];
  /** Whether an operation's handler runs on the workers; its reply is sent from one too. */
  private final boolean[] repliesOnWorker = new boolean[256];
  private volatile BiConsumer<Address, Wire.PeerStatus> statusListener = (from, s) -> { };
  private ForkChannel fork;
  private MessageDispatcher dispatcher;

  Rpc(Ringmaster node, ExecutorService workers, ScheduledExecutorService timer) {
    this.node = node;
    this.workers = workers;
    this.timer = timer;
  }

  /** Registers a handler that may block, run on the workers; call before {@link #start()}. */
  void handle(byte op, Handler handler) {
    repliesOnWorker[op & 0xff] = true;
    handlers[op & 0xff] = in -> CompletableFuture.supplyAsync(() -> {
      try {
        return handler.handle(in);
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    }, workers);
  }

  /** Registers a handler that never blocks, run on the JGroups thread; call before {@link #start()}. */
  void handleQuickly(byte op, QuickHandler handler) {
    handlers[op & 0xff] = handler;
  }

  /** Takes the status reports peers broadcast, each with the address it came from. */
  void onStatus(BiConsumer<Address, Wire.PeerStatus> listener) {
    this.statusListener = listener;
  }

  /** Creates the fork channel on the node's (connected) channel and starts serving. */
  void start() throws Exception {
    fork = new ForkChannel(node.channel(), FORK_STACK, FORK_CHANNEL, true, ProtocolStack.Position.ABOVE, FRAG2.class);
    dispatcher = new MessageDispatcher(fork, new RequestHandler() {
      @Override
      public Object handle(Message msg) {
        throw new UnsupportedOperationException("dispatching is asynchronous");
      }

      @Override
      public void handle(Message msg, Response response) {
        dispatch(msg, response);
      }
    }).asyncDispatching(true);
    fork.connect(FORK_CHANNEL);
  }

  /** Serves one request; package-private for tests. */
  void dispatch(Message msg, Response response) {
    // hasArray first: an ObjectMessage (a foreign dispatcher's, on this fork) throws on getArray()
    if (!msg.hasArray() || msg.getArray() == null || msg.getLength() == 0) {
      if (response != null) {
        reply(msg, response, Wire.error("empty request"));
      }
      return;
    }
    byte[] body = Arrays.copyOfRange(msg.getArray(), msg.getOffset(), msg.getOffset() + msg.getLength());
    byte op = body[0];
    if (response == null) { // one-way: only status reports, cheap enough for the JGroups thread
      if (op == Wire.OP_STATUS) {
        try {
          statusListener.accept(msg.getSrc(), Wire.readStatus(Wire.open(body, 0, body.length)));
        } catch (IOException | RuntimeException e) {
          LOG.log(Level.DEBUG, "bad status message from {0}: {1}", msg.getSrc(), e);
        }
      }
      return;
    }
    QuickHandler handler = handlers[op & 0xff];
    if (handler == null) {
      reply(msg, response, Wire.error("unknown operation " + op));
      return;
    }
    CompletableFuture<byte[]> reply = handle(handler, body);
    BiConsumer<byte[], Throwable> send = (bytes, error) -> {
      if (error == null) {
        reply(msg, response, bytes);
      } else {
        Throwable cause = unwrap(error);
        if (isExpected(cause)) {
          LOG.log(Level.DEBUG, "request {0} from {1} failed: {2}", (char) op, msg.getSrc(), cause);
        } else {
          LOG.log(Level.WARNING, "request " + (char) op + " from " + msg.getSrc() + " failed", cause);
        }
        reply(msg, response, Wire.error(describe(cause)));
      }
    };
    if (!repliesOnWorker[op & 0xff] && reply.isDone() && small(reply)) {
      reply.whenComplete(send); // a quick handler's small answer: here and now
    } else {
      // A large answer, a worker handler's (which may be done already, and whenComplete would
      // then run here), or one completed later by another peer's reply (on a JGroups thread) or
      // by our timer: sent from a worker, so that no JGroups thread waits for flow-control
      // credits. With every worker busy, a small answer goes from here, as a quick handler's
      // does, and so does a worker handler's answer completed on the worker that made it; any
      // other large one is answered "busy" instead, since this may be a JGroups thread.
      Thread dispatcher = Thread.currentThread();
      boolean madeOnWorker = repliesOnWorker[op & 0xff];
      reply.whenCompleteAsync(send, task -> {
        try {
          workers.execute(task);
        } catch (RejectedExecutionException busy) {
          if (small(reply) || madeOnWorker && Thread.currentThread() != dispatcher) {
            task.run();
          } else {
            send.accept(null, busy);
          }
        }
      });
    }
  }

  /**
   * Sends a reply to {@code request}. One of at most {@link #INLINE_REPLY_BYTES} (every error is
   * one) may go out on a JGroups thread or our timer, so it is sent past flow control: unicast flow
   * control would park that thread until the requester returns credits, and the {@code DONT_BLOCK}
   * mark that JGroups gives its own replies is honoured by multicast flow control only. What such
   * replies can put in flight is bounded by the calls a requester has open at once (its HTTP
   * threads' requests and its workers', each answered once): a few MiB at most. A larger reply is
   * sent from a worker and waits for credits like any page.
   */
  static void reply(Message request, Response response, byte[] bytes) {
    Message reply = new BytesMessage(request.getSrc(), bytes).setFlag(Message.Flag.OOB)
        .setFlag(Message.TransientFlag.DONT_BLOCK);
    if (bytes == null || bytes.length <= INLINE_REPLY_BYTES) {
      reply.setFlag(Message.Flag.NO_FC);
    }
    response.send(reply, false);
  }

  private static CompletableFuture<byte[]> handle(QuickHandler handler, byte[] body) {
    try {
      return handler.handle(Wire.open(body, 0, body.length));
    } catch (Exception | Error e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** Whether a completed reply is an error or at most {@link #INLINE_REPLY_BYTES}. */
  private static boolean small(CompletableFuture<byte[]> done) {
    if (done.isCompletedExceptionally()) {
      return true;
    }
    byte[] bytes = done.join();
    return bytes == null || bytes.length <= INLINE_REPLY_BYTES;
  }

  /**
   * {@link #call} from a worker thread: for a quick handler, which runs on a JGroups thread and
   * must not wait there for flow-control credits to send. With every worker busy it fails at once
   * with {@link RejectedExecutionException} (answered "busy or stopping"), rather than send from
   * the JGroups thread.
   */
  CompletableFuture<DataInputStream> callFromWorker(String memberId, byte[] request, Duration timeout) {
    try {
      return CompletableFuture.supplyAsync(() -> call(memberId, request, timeout), workers).thenCompose(f -> f);
    } catch (RejectedExecutionException busy) {
      return CompletableFuture.failedFuture(busy);
    }
  }

  /**
   * Sends a request to a member by id. Fails with {@link TimeoutException} after {@code timeout},
   * with {@link RemoteError} when the peer answered with an error, and at once when the member is
   * not in the view (or leaves it while we wait).
   *
   * <p>The future completes on the thread the reply came in on: a JGroups thread, or, for replies
   * that came in a batch on Java 17 (no virtual threads), the JVM's common pool, whose one worker
   * on 2 cores serves every such reply in the JVM. So a stage added without an executor must not
   * block: every stage here parses a reply or reads the store.
   *
   * @return the reply after its {@link Wire#OK} byte
   */
  CompletableFuture<DataInputStream> call(String memberId, byte[] request, Duration timeout) {
    Optional<Address> target = node.addressOf(memberId);
    if (target.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException(memberId + " is not in the view"));
    }
    return call(memberId, target.get(), request, timeout);
  }

  /**
   * As {@link #call(String, byte[], Duration)}, to one process of the member: fails at once if
   * another process holds its id now (restarted under it).
   */
  CompletableFuture<DataInputStream> call(String memberId, Address process, byte[] request, Duration timeout) {
    if (!node.addressOf(memberId).equals(Optional.of(process))) {
      return CompletableFuture.failedFuture(new IllegalStateException(memberId + " is not in the view as " + process));
    }
    CompletableFuture<DataInputStream> result = new CompletableFuture<>();
    CompletableFuture<Object> request0;
    try {
      Message msg = new BytesMessage(process, request).setFlag(Message.Flag.OOB);
      request0 = dispatcher.sendMessageWithFuture(msg, RequestOptions.SYNC().timeout(timeout.toMillis()));
    } catch (Exception e) {
      return CompletableFuture.failedFuture(e);
    }
    request0.whenComplete((reply, error) -> {
      if (error != null) {
        result.completeExceptionally(unwrap(error));
      } else if (!(reply instanceof byte[] bytes) || bytes.length == 0) {
        result.completeExceptionally(new IllegalStateException("empty reply from " + memberId));
      } else if (bytes[0] == Wire.OK) {
        result.complete(Wire.open(bytes, 0, bytes.length));
      } else {
        try {
          result.completeExceptionally(new RemoteError(memberId, Wire.open(bytes, 0, bytes.length).readUTF()));
        } catch (IOException e) {
          result.completeExceptionally(e);
        }
      }
    });
    // The dispatcher's own timeout only bounds blocking calls: bound the future here, and cancel the
    // request so the correlator forgets it.
    ScheduledFuture<?> expiry = timer.schedule(() -> {
      if (result.completeExceptionally(new TimeoutException("no reply from " + memberId + " in " + timeout))) {
        request0.cancel(false);
      }
    }, timeout.toMillis(), TimeUnit.MILLISECONDS);
    result.whenComplete((r, e) -> expiry.cancel(false));
    return result;
  }

  /**
   * Sends a small message to every member of the view, this one included; no reply. It goes past
   * flow control, so that one slow member never holds up the thread that sends it.
   */
  void broadcast(byte[] message) {
    try {
      dispatcher.castMessage(null, new BytesMessage(null, message).setFlag(Message.Flag.OOB, Message.Flag.NO_FC),
          RequestOptions.ASYNC());
    } catch (Exception e) {
      LOG.log(Level.DEBUG, "broadcast failed: {0}", e.toString());
    }
  }

  /**
   * Why a call failed, in words fit for an HTTP client: the reason for the failures we expect
   * (timeouts, peers not in the view, refusals, malformed requests), only the class of any other:
   * a peer logs the whole story of such a failure of a request it served.
   */
  static String describe(Throwable failure) {
    Throwable t = unwrap(failure);
    if (t instanceof RejectedExecutionException) {
      return "busy or stopping";
    }
    if (t instanceof SuspectedException) {
      return "left the view before it answered";
    }
    if (t instanceof IOException || t instanceof UncheckedIOException) {
      return "malformed message (" + t.getClass().getSimpleName() + ")";
    }
    if (isExpected(t) && t.getMessage() != null) {
      return t.getMessage();
    }
    return (isExpected(t) ? "" : "unexpected ") + t.getClass().getSimpleName();
  }

  /**
   * Whether a failure is one that requests meet in the normal course of a cluster's life (a peer
   * slow, gone or busy, a refusal, a malformed message, a peer not in the view, the hop limit),
   * rather than a bug: those are logged at DEBUG where they happen, the others at WARNING.
   */
  static boolean isExpected(Throwable t) {
    return t instanceof RejectedExecutionException || t instanceof Declined || t instanceof RemoteError
        || t instanceof TimeoutException || t instanceof SuspectedException || t instanceof IllegalStateException
        || t instanceof IOException || t instanceof UncheckedIOException;
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  @Override
  public void close() {
    if (dispatcher != null) {
      dispatcher.stop();
    }
    if (fork != null) {
      fork.close();
    }
  }
}
