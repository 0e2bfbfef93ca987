package io.ringmaster.demo;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * An executor that runs each task on a new "rpc-worker" thread and returns when it is done: for a
 * test that needs a task finished before the code that submitted it goes on (a reply sent before
 * the RPC dispatcher looks, a fan-out's task run before its caller waits). A submitter that comes
 * interrupted keeps its interrupt, set aside while it waits for the task.
 */
class FinishFirstWorkers extends AbstractExecutorService {
  @Override
  public void execute(Runnable r) {
    boolean interrupted = Thread.interrupted();
    Thread t = new Thread(r, "rpc-worker");
    t.start();
    try {
      t.join();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
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
