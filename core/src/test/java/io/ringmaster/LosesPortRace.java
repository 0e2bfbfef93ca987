package io.ringmaster;

import java.io.IOException;
import java.net.BindException;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jgroups.JChannel;
import org.jgroups.stack.Protocol;
import org.jgroups.util.DefaultSocketFactory;

/**
 * Makes the transport below it lose the race for a port that JGroups' TCP loses when several
 * processes on one host start at once: two bind the same free port (SO_REUSEADDR lets both while
 * neither listens), the other one listens first, and this one's listen fails with "Address
 * already in use". Only that failure is staged: the server socket really binds (and listens,
 * which a lost race would not) and then reports it. The rest is the JDK's and JGroups' own: the
 * socket stays bound, so binding it to every later port of the range fails ("Already bound"),
 * and JGroups closes it and reports "No available port to bind to in range". Used by
 * {@code port-race-tcp.xml}, above TCP; JGroups inits protocols bottom-up, so this replaces the
 * transport's socket factory after the transport's own init and before it starts.
 */
public class LosesPortRace extends Protocol {
  private static final AtomicInteger RACES_TO_LOSE = new AtomicInteger();
  private static final List<JChannel> LOSERS = new CopyOnWriteArrayList<>();
  private static final AtomicInteger STACKS = new AtomicInteger();
  private static volatile boolean interruptTheLoser;
  private static volatile boolean failToStart;

  /** The next {@code n} server sockets bound by stacks with this protocol lose the race. */
  static void loseNext(int n) {
    loseNext(n, false);
  }

  /**
   * As {@link #loseNext(int)}; with {@code interrupt}, each race lost also interrupts the thread
   * that lost it (the one starting the node), as if its caller gave up on the start just then.
   */
  static void loseNext(int n, boolean interrupt) {
    interruptTheLoser = interrupt;
    failToStart = false;
    RACES_TO_LOSE.set(n);
    LOSERS.clear();
    STACKS.set(0);
  }

  /**
   * Makes every stack with this protocol fail as it starts, after its transport bound its port, for
   * a reason that is no lost race (until the next {@link #loseNext}).
   */
  static void failToStart() {
    loseNext(0);
    failToStart = true;
  }

  /** How many stacks with this protocol were built since {@link #loseNext}. */
  static int stacksBuilt() {
    return STACKS.get();
  }

  /** The channels whose stack lost a race since {@link #loseNext}, one entry per race lost. */
  static List<JChannel> losers() {
    return List.copyOf(LOSERS);
  }

  @Override
  public void init() throws Exception {
    super.init();
    STACKS.incrementAndGet();
    JChannel channel = getProtocolStack().getChannel();
    setSocketFactory(new DefaultSocketFactory() {
      @Override
      public ServerSocket createServerSocket(String serviceName) throws IOException {
        return new ServerSocket() {
          @Override
          public void bind(SocketAddress endpoint, int backlog) throws IOException {
            super.bind(endpoint, backlog);
            if (RACES_TO_LOSE.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
              LOSERS.add(channel);
              if (interruptTheLoser) {
                Thread.currentThread().interrupt();
              }
              throw new BindException("Address already in use (listen failed: another process listened on "
                  + endpoint + " first)");
            }
          }
        };
      }
    });
  }

  @Override
  public void start() throws Exception {
    super.start();
    if (failToStart) {
      throw new IllegalStateException("a protocol that fails to start (a test)");
    }
  }
}
