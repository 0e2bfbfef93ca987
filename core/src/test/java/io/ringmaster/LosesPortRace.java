package io.ringmaster;

import java.io.IOException;
import java.net.BindException;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.util.concurrent.atomic.AtomicInteger;
import org.jgroups.stack.Protocol;
import org.jgroups.util.DefaultSocketFactory;

/**
 * Makes the transport below it lose the race for a port that JGroups' TCP loses when several
 * processes on one host start at once: its server socket binds a free port, then listening fails
 * ("Address already in use": another process, bound to the same port by SO_REUSEADDR, listened
 * first). Only that failed listen is staged, after a real bind; the rest is the JDK's and
 * JGroups' own: the socket stays bound, so binding it to every later port of the range fails
 * ("Already bound") and the stack cannot start. Used by {@code port-race-tcp.xml}, above TCP.
 */
public class LosesPortRace extends Protocol {
  private static final AtomicInteger RACES_TO_LOSE = new AtomicInteger();
  private static final AtomicInteger LOST = new AtomicInteger();

  /** The next {@code n} server sockets bound by stacks with this protocol lose the race. */
  static void loseNext(int n) {
    RACES_TO_LOSE.set(n);
    LOST.set(0);
  }

  /** How many server sockets lost the race since {@link #loseNext}. */
  static int lost() {
    return LOST.get();
  }

  @Override
  public void init() throws Exception {
    super.init();
    setSocketFactory(new DefaultSocketFactory() {
      @Override
      public ServerSocket createServerSocket(String serviceName) throws IOException {
        return new ServerSocket() {
          @Override
          public void bind(SocketAddress endpoint, int backlog) throws IOException {
            super.bind(endpoint, backlog);
            if (RACES_TO_LOSE.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
              LOST.incrementAndGet();
              throw new BindException("Address already in use (listen failed: another process listened on "
                  + endpoint + " first)");
            }
          }
        };
      }
    });
  }
}
