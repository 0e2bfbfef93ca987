package io.ringmaster;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jgroups.Address;
import org.jgroups.View;

/**
 * Says when a node's view thread holds its ring back: a listener on a same-thread executor in a
 * long hand-off, or an executor that blocks in {@code execute()}, keeps the view thread from
 * building the rings of the views JGroups installs meanwhile, so lookups route by an older ring
 * than the peers', which gossip cannot see (it compares equal view ids only). Looked at once a
 * gossip round, on the gossip thread, which alone reads and writes its state.
 */
final class ViewThreadWatch {
  private static final System.Logger LOG = System.getLogger(Ringmaster.class.getName());

  /** How long the channel's view may be ahead of the ring before the watch says so. */
  static final Duration HELD_AFTER = Duration.ofSeconds(10);

  private final String nodeId;
  /** When the channel's view was first seen ahead of the ring (0: it is not). */
  private long behindSince;
  /** Whether the watch has said so for this stretch. */
  private boolean heldSaid;

  ViewThreadWatch(String nodeId) {
    this.nodeId = nodeId;
  }

  /**
   * Says at WARNING, once, when the channel's view has been ahead of the ring for
   * {@link #HELD_AFTER}; once the ring has caught up, says so at INFO. A failed view has lines of
   * its own, and a rejoin (no view meanwhile) starts the count over. Ahead means newer while the
   * ring's view holds the channel's address, and any view while it does not: after a rejoin (a new
   * address) into a cluster whose views are numbered below the ring's, the ring is behind until it
   * has a view of the node's new self. A view numbered below the ring's under the same address (the
   * channel's last view handed up out of order, as JGroups before 5.5.7 could) is not ahead: the
   * ring rightly skipped it.
   *
   * @param channelView the view JGroups installed, or null while the node rejoins
   * @param self        the channel's address now
   * @param ringView    the view of the ring the node routes by (null before the first)
   * @param viewFailed  whether a view failed to install, and waits to be tried again
   * @param nowNanos    {@link System#nanoTime()}
   */
  void check(View channelView, Address self, View ringView, boolean viewFailed, long nowNanos) {
    if (channelView == null) {
      behindSince = 0; // rejoining: no view to compare with; a stretch behind starts over after it
      return;
    }
    long ringViewId = ringView == null ? -1 : ringView.getViewId().getId();
    boolean caughtUp = ringView != null && ringView.containsMember(self)
        && channelView.getViewId().getId() <= ringViewId;
    if (caughtUp) {
      if (heldSaid) {
        Logs.quietly(() -> LOG.log(Level.INFO, "{0}: the ring has caught up with the channel''s view (view"
            + " {1})", nodeId, Long.toString(ringViewId)));
      }
      behindSince = 0;
      heldSaid = false;
      return;
    }
    if (viewFailed) {
      behindSince = 0; // behind because a view failed: said by its own lines, and tried again
      return;
    }
    if (behindSince == 0) {
      behindSince = nowNanos == 0 ? 1 : nowNanos;
    } else if (!heldSaid && nowNanos - behindSince >= HELD_AFTER.toNanos()) {
      heldSaid = true;
      long seconds = TimeUnit.NANOSECONDS.toSeconds(nowNanos - behindSince);
      Logs.quietly(() -> LOG.log(Level.WARNING, "{0}: the channel''s view (now {1}) has been ahead of the"
          + " ring for {2} s, and the ring is still at view {3}: the node''s view thread is held (a listener on a"
          + " same-thread executor in a long callback?), and lookups route by the older ring meanwhile",
          nodeId, channelView.getViewId(), Long.toString(seconds), Long.toString(ringViewId)));
    }
  }
}
