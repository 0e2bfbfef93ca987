package io.ringmaster;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jgroups.Address;
import org.jgroups.Message;
import org.jgroups.stack.Protocol;
import org.jgroups.util.MessageBatch;

/**
 * A partition that can exist before a member joins, which DISCARD cannot arrange: each member
 * lives on an island and hears only the members on its own. A member starts on the island set
 * for the thread that connects it ({@link #startOn}: {@code Ringmaster.start()} connects on the
 * calling thread, where JGroups sets the address); moving every member to one island heals.
 * Used by {@code islands.xml}, whose discovery (PING) goes through this protocol, so that a
 * member started on an empty island forms a cluster of its own.
 */
public class Islands extends Protocol {
  private static final Map<Address, Integer> ISLAND = new ConcurrentHashMap<>();
  private static final ThreadLocal<Integer> NEXT = ThreadLocal.withInitial(() -> 0);

  /** The island of the members this thread connects until the returned handle is closed. */
  static AutoCloseable startOn(int island) {
    NEXT.set(island);
    return () -> NEXT.set(0);
  }

  static void move(Address member, int island) {
    ISLAND.put(member, island);
  }

  static void forget(Address member) {
    ISLAND.remove(member);
  }

  @Override
  public <T extends Protocol> T setAddress(Address addr) {
    if (addr != null) {
      ISLAND.putIfAbsent(addr, NEXT.get());
    }
    return super.setAddress(addr);
  }

  private boolean apart(Address other) {
    Integer mine = local_addr == null ? null : ISLAND.get(local_addr);
    Integer theirs = other == null ? null : ISLAND.get(other);
    return mine != null && theirs != null && !mine.equals(theirs);
  }

  @Override
  public Object down(Message msg) {
    return apart(msg.getDest()) ? null : down_prot.down(msg);
  }

  @Override
  public Object up(Message msg) {
    return apart(msg.getSrc()) ? null : up_prot.up(msg);
  }

  @Override
  public void up(MessageBatch batch) {
    if (!apart(batch.sender())) {
      up_prot.up(batch);
    }
  }
}
