package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jgroups.BytesMessage;
import org.jgroups.Message;
import org.jgroups.blocks.Response;
import org.junit.jupiter.api.Test;

/**
 * Which thread sends a reply: never the JGroups thread that delivered the request, unless the
 * reply is small and ready at once (sending can wait for flow-control credits).
 */
class RpcDispatchTest {

  /** Runs each task on a new "rpc-worker" thread and returns when it is done. */
  static final class FinishFirstWorkers extends AbstractExecutorService {
    @Override
    public void execute(Runnable r) {
      Thread t = new Thread(r, "rpc-worker");
      t.start();
      try {
        t.join();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void shutdown() {}

    @Override
    public List<Runnable> shutdownNow() {
      return List.of();
    }

    @Override
    public boolean isShutdown() {
      return false;
    }

    @Override
    public boolean isTerminated() {
      return false;
    }

    @Override
    public boolean awaitTermination(long t, TimeUnit u) {
      return true;
    }
  }

  @Test
  void workerHandler_doneBeforeTheDispatcherLooks_replyIsSentFromAWorker() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handle(Wire.OP_PUSH, in -> Wire.pushReply(1));
    assertNotEquals("jgroups-oob-1", sentOn(rpc, Wire.OP_PUSH));
  }

  @Test
  void quickHandler_largeReply_isSentFromAWorker_smallOneAtOnce() throws Exception {
    Rpc rpc = new Rpc(null, new FinishFirstWorkers(), null);
    rpc.handleQuickly(Wire.OP_GET, in -> CompletableFuture.completedFuture(new byte[Rpc.INLINE_REPLY_BYTES + 1]));
    rpc.handleQuickly(Wire.OP_WRITE, in -> CompletableFuture.completedFuture(new byte[16]));
    assertEquals("rpc-worker", sentOn(rpc, Wire.OP_GET));
    assertEquals("jgroups-oob-1", sentOn(rpc, Wire.OP_WRITE));
  }

  /** Dispatches a request for {@code op} on a thread named like JGroups'; the sending thread's name. */
  private static String sentOn(Rpc rpc, byte op) throws InterruptedException {
    AtomicReference<String> sentOn = new AtomicReference<>();
    Response response = new Response() {
      @Override
      public void send(Object reply, boolean exception) {
        sentOn.set(Thread.currentThread().getName());
      }

      @Override
      public void send(Message reply, boolean exception) {
        sentOn.set(Thread.currentThread().getName());
      }
    };
    Thread jgroups = new Thread(() -> rpc.dispatch(new BytesMessage(null, new byte[] {op}), response), "jgroups-oob-1");
    jgroups.start();
    jgroups.join();
    assertNotNull(sentOn.get(), "a reply was sent");
    return sentOn.get();
  }
}
