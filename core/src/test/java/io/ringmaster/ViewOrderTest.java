package io.ringmaster;

import static io.ringmaster.FedNode.meta;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.testing.OwnershipFold;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import org.jgroups.Address;
import org.jgroups.View;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Views that reach the channel out of order. JGroups installs only a view newer than its last,
 * but hands each one up after releasing its lock, so a coordinator's late view and its
 * successor's can arrive at the node in the wrong order. The views are built by hand and fed to
 * node "a"'s view handling, in the order the race leaves them.
 */
class ViewOrderTest {

  /**
   * A listener added while a view is being installed (its ring built from the ring before, nothing
   * published yet) starts from the ring before, then hears the view: it misses nothing and hears
   * nothing twice. Its first change is made under the lock the publication takes.
   */
  @Test
  void aListenerAddedWhileAViewIsInstalled_startsFromTheRingBefore_andHearsTheView() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      n.view(1, n.self); // alone: a first view with others would wait for the ring before it
      CountDownLatch building = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      n.node.beforeBuild = view -> {
        if (view.getViewId().getId() == 2) {
          building.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      };
      n.node.onView(View.create(n.self, 2, n.self, b, c));
      assertTrue(building.await(10, TimeUnit.SECONDS), "view 2 reached its build");
      OwnershipFold fold = new OwnershipFold();
      n.node.addOwnershipListener(new SerialDelivery<>("fold", fold::onOwnershipChange, Runnable::run, n, () -> { }));
      release.countDown();
      n.installed();

      assertEquals(List.of(OwnershipChange.Reason.INITIAL, OwnershipChange.Reason.VIEW),
          fold.changes().stream().map(OwnershipChange::reason).toList());
      assertEquals(List.of(1L, 2L), fold.changes().stream().map(OwnershipChange::viewId).toList());
      assertEquals(List.of(), fold.violations());
      assertEquals(Optional.empty(), fold.disagreement(n.node.state().ring(), "a", 2));
    }
  }

  @Test
  void aViewOlderThanTheLastOne_isSkipped_andTheNextNewerOneFollowsTheLast() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      n.view(1, n.self);
      n.view(2, n.self, b);
      n.view(3, n.self, b, c);
      int ownership = n.ownership.size();
      int memberships = n.memberships.size();
      long checksum = n.node.state().ring().checksum();

      n.install(View.create(b, 2, n.self, b)); // view 2 again, from another coordinator, late
      n.install(View.create(n.self, 3, n.self, b)); // and one with view 3's id but not its members

      assertEquals(3, n.node.state().viewId(), "the newest view stays installed");
      assertEquals(checksum, n.node.state().ring().checksum(), "with its ring: c is still in it");
      assertEquals(ownership, n.ownership.size(), "listeners hear nothing of the late views");
      assertEquals(memberships, n.memberships.size());

      n.view(4, n.self, b); // c leaves: from view 3, the last one installed
      assertEquals(4, n.node.state().viewId());
      assertEquals(3, n.lastMembership().previousViewId());
      assertEquals(List.of("c"), n.lastMembership().left().stream().map(m -> m.id()).toList());
      assertEquals(3, n.lastOwnership().previousViewId());
      for (OwnershipChange change : n.ownership) {
        assertTrue(change.previousViewId() < change.viewId(), change.toString());
      }
    }
  }

  /**
   * A logger that throws on the WARNING for a late view (a filter's bug, or an Error from its
   * backend) does not make that view a failed one: tried again, it would skip the order check and
   * take the ring back.
   */
  @ParameterizedTest(name = "the logger throws an Error: {0}")
  @ValueSource(booleans = {false, true})
  void aLateView_whoseWarningThrows_isStillSkipped_andNeverTriedAgain(boolean loggerThrowsAnError) throws Exception {
    try (ThrowingLog log = new ThrowingLog(ThrowingLog.messageContains("which is newer; skipped"), loggerThrowsAnError);
         FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.view(2, n.self, b);
      int ownership = n.ownership.size();

      n.install(View.create(n.self, 1, n.self)); // view 1 again, late
      n.installed();
      assertEquals(1, log.thrown(), "the late view was logged, and the logger threw");
      n.node.retryFailedView();
      n.installed();
      assertEquals(2, n.node.state().viewId(), "the newest view stays installed");
      assertEquals(List.of("a", "b"), n.node.state().ring().members().stream().map(m -> m.id()).sorted().toList());
      assertEquals(ownership, n.ownership.size(), "listeners hear nothing of the late view");
    }
  }

  /**
   * stats().ringBuilds() counts the rings published, and lastChange() moves with what listeners
   * are told: a view with the members of the ring before it builds nothing new and moves nothing,
   * and a view handled after the node closed (its ring built, then dropped) counts neither.
   */
  @Test
  void ringBuildsAndLastChange_countWhatWasPublishedAndTold() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      n.view(1, n.self);
      assertEquals(1, n.node.ringBuilds.get());
      n.view(2, n.self, b);
      assertEquals(2, n.node.ringBuilds.get());
      long changed = n.node.lastChangeMillis.get();
      assertTrue(changed > 0);
      n.node.lastChangeMillis.set(1); // a mark no clock reading equals: a view that sets it again shows
      n.view(3, n.self, b); // the same members: the same ring
      assertEquals(2, n.node.ringBuilds.get());
      assertEquals(3, n.node.state().viewId());
      assertEquals(1, n.node.lastChangeMillis.get(), "view 3 told the listeners nothing: lastChange stays");
      n.node.close();
      n.view(4, n.self, b, c); // built, but dropped: the node is closed
      assertEquals(2, n.node.ringBuilds.get(), "a ring never published");
      assertEquals(1, n.node.lastChangeMillis.get(), "nothing told");
    }
  }

  /**
   * A view whose install fails before its ring is published (a ring too large for this node's
   * heap, say) is tried again at the next gossip round, so that the node catches up with its
   * peers, which installed it, rather than keep the ring before it until a later view comes; its
   * listeners hear it once, from the ring before it.
   */
  @Test
  void aViewThatFailedToInstall_isTriedAgain_andHeardOnce() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      n.view(1, n.self);
      n.view(2, n.self, b);
      AtomicInteger failures = new AtomicInteger(1);
      n.node.beforeBuild = v -> {
        if (v.getViewId().getId() == 3 && failures.getAndDecrement() > 0) {
          throw new OutOfMemoryError("a ring too large for this heap (a test)");
        }
      };
      int heard = n.ownership.size();
      n.view(3, n.self, b, c);
      assertEquals(2, n.node.state().viewId(), "view 3 failed: the ring of view 2 stays");
      assertEquals(heard, n.ownership.size());

      n.node.retryFailedView();
      n.installed();
      assertEquals(3, n.node.state().viewId(), "tried again, and installed");
      assertEquals(List.of("a", "b", "c"), n.node.state().ring().members().stream().map(m -> m.id()).sorted().toList());
      assertEquals(heard + 1, n.ownership.size(), "one change for view 3");
      assertEquals(2, n.lastOwnership().previousViewId());
      n.node.retryFailedView();
      n.installed();
      assertEquals(heard + 1, n.ownership.size(), "installed once");
    }
  }

  /**
   * A view that keeps failing (a ring too large for this heap) is tried again after 1 s, then after
   * twice as long each time, up to a minute: not at every gossip round, each try a large allocation
   * on a node already short of heap. The rounds' clock is the test's.
   */
  @Test
  void aViewThatKeepsFailing_isTriedAgainAfterDelaysThatDouble_upToAMinute() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      AtomicInteger builds = new AtomicInteger();
      n.node.beforeBuild = v -> {
        if (v.getViewId().getId() == 2) {
          builds.incrementAndGet();
          throw new OutOfMemoryError("a ring too large for this heap (a test)");
        }
      };
      n.view(2, n.self, b);
      assertEquals(1, builds.get());
      long second = TimeUnit.SECONDS.toNanos(1);
      long t0 = 1_000 * second; // any nanoTime value: only differences count
      List<Long> triedAt = new ArrayList<>();
      for (long t = t0; t <= t0 + 200 * second; t += second / 2) { // a round every half second
        int before = builds.get();
        n.node.retryFailedView(t);
        n.installed();
        if (builds.get() > before) {
          triedAt.add((t - t0) / (second / 2));
        }
      }
      // In half seconds after the first round: at once, then 1, 2, 4, 8, 16, 32 and 60 s apart.
      assertEquals(List.of(0L, 2L, 6L, 14L, 30L, 62L, 126L, 246L, 366L), triedAt);
      assertEquals(1, n.node.state().viewId(), "the ring of view 1 stays");
      assertEquals(2, n.node.viewsSeen.get(), "views 1 and 2: a retry is no view seen");
    }
  }

  /**
   * A late view older than the one that failed is skipped as any late view is (the ring never goes
   * back), and the failed one is still tried again; a member first refused in the failed view is
   * reported when it is installed.
   */
  @Test
  void aLateOlderView_afterOneThatFailed_isSkipped_andTheFailedOneIsInstalledWithItsRefusals() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      Address twin = meta("b").newAddress(); // a second member with b's id: refused
      n.view(1, n.self);
      n.view(2, n.self, b);
      AtomicInteger failures = new AtomicInteger(1);
      n.node.beforeBuild = v -> {
        if (v.getViewId().getId() == 4 && failures.getAndDecrement() > 0) {
          throw new OutOfMemoryError("a ring too large for this heap (a test)");
        }
      };
      int memberships = n.memberships.size();
      n.view(4, n.self, b, c, twin);
      n.install(View.create(n.self, 3, n.self, b)); // late, and older than view 4
      assertEquals(2, n.node.state().viewId(), "neither view 4 (failed) nor the late view 3 installed");
      assertEquals(memberships, n.memberships.size());

      n.node.retryFailedView();
      n.installed();
      assertEquals(4, n.node.state().viewId());
      MembershipChange change = n.lastMembership();
      assertEquals(2, change.previousViewId());
      assertEquals(List.of("c"), change.joined().stream().map(m -> m.id()).toList());
      assertEquals(List.of("b"), change.refused().stream().map(MembershipChange.Refusal::nodeId).toList(),
          "the twin's refusal, first seen in the view that failed, reported when it is installed");
    }
  }

  /** Views 1 (n alone) and 2 (n, b) installed, then view 3 (n, b, c) failing to install. */
  private static void installViews1And2_thenView3Fails(FedNode n, Address b, Address c) throws Exception {
    n.view(1, n.self);
    n.view(2, n.self, b);
    n.node.beforeBuild = v -> {
      if (v.getViewId().getId() == 3) {
        throw new IllegalStateException("view 3 fails (a test)");
      }
    };
    n.view(3, n.self, b, c);
  }

  /** A failed view that a later one replaces is not tried again: the later one follows the last installed. */
  @Test
  void aViewThatFailedToInstall_andALaterOneCame_isNotTriedAgain() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      installViews1And2_thenView3Fails(n, b, c);
      n.view(4, n.self, c);
      assertEquals(4, n.node.state().viewId());
      assertEquals(2, n.lastOwnership().previousViewId(), "from the last ring installed");
      int heard = n.ownership.size();
      n.node.retryFailedView();
      n.installed();
      assertEquals(4, n.node.state().viewId());
      assertEquals(heard, n.ownership.size());
    }
  }

  /**
   * A retry of a failed view, queued on the view thread behind a later view (the gossip thread read
   * the failed view before the later one was installed): the retry finds a later view installed and
   * is dropped, so the ring never goes back to the failed view's members.
   */
  @Test
  void aRetryQueuedBehindALaterView_isDropped_andTheRingNeverGoesBack() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      Address c = meta("c").newAddress();
      installViews1And2_thenView3Fails(n, b, c);
      n.node.beforeBuild = v -> { }; // tried again, view 3 would install now
      CountDownLatch held = new CountDownLatch(1);
      n.viewThread.execute(() -> {
        try {
          held.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      n.node.onView(View.create(n.self, 4, n.self, c)); // queued behind the held task
      n.node.retryFailedView(); // view 3 is still the failed one: its retry is queued after view 4
      held.countDown();
      n.installed();
      assertEquals(4, n.node.state().viewId());
      assertFalse(n.node.state().ring().contains("b"));
      for (OwnershipChange change : n.ownership) {
        assertTrue(change.previousViewId() < change.viewId(), "a change back: " + change);
      }
    }
  }

  @Test
  void afterARejoin_viewIdsStartAgain_andTheNewViewsAreInstalled() throws Exception {
    try (FedNode n = new FedNode(meta("a"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.view(5, n.self, b);

      // This node rejoins as a new JGroups member, into a cluster whose views count from 2.
      Address rejoined = n.metadata.newAddress();
      n.node.setLocalAddress(rejoined);
      Address d = meta("d").newAddress();
      n.install(View.create(d, 2, d, rejoined));

      assertEquals(2, n.node.state().viewId(), "another member, another sequence of views");
      assertTrue(n.node.state().ring().contains("d"));
      assertFalse(n.node.state().ring().contains("b"));
    }
  }

  /**
   * A view that fails to install on a running node is an ERROR once, "view ... could not be
   * installed on a", saying that it is tried again (docs/operations.md tells operators to watch for
   * that ERROR); a retry that fails again is a WARNING naming the failure, not another ERROR.
   */
  @Test
  void aViewThatFailsAgain_isAnErrorOnce_thenAWarningForTheRetry() throws Exception {
    try (FedNode n = new FedNode(meta("a"));
         NodeLog log = new NodeLog(r -> String.valueOf(r.getMessage()).contains("could not be installed"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.node.beforeBuild = v -> {
        if (v.getViewId().getId() == 2) {
          throw new OutOfMemoryError("a ring too large for this heap (a test)");
        }
      };
      View two = View.create(n.self, 2, n.self, b);
      n.install(two);
      n.node.retryFailedView(); // the first retry comes at once, and fails again
      n.installed();

      assertEquals(OptionalLong.of(2), n.node.failedViewId(), "still to be tried again");
      assertEquals(List.of(Level.SEVERE, Level.WARNING), log.levels(), "an ERROR, then a WARNING: " + log.messages());
      assertEquals("view " + two.getViewId() + " could not be installed on a; it is tried again (at once, then"
          + " after 1 s and twice as long each time, up to a minute) until it or a later view is installed;"
          + " failures of those tries are logged at WARNING", log.messages().get(0));
      assertEquals("a ring too large for this heap (a test)", log.records().get(0).getThrown().getMessage(),
          "the ERROR carries the failure");
      assertEquals("view " + two.getViewId() + " could not be installed on a again: java.lang.OutOfMemoryError: a ring"
          + " too large for this heap (a test)", log.messages().get(1));
    }
  }

  /**
   * A failure after a view's ring is published (here the message that tells a newcomer the ring
   * before the view throws) is an ERROR saying that the view was installed and what follows it
   * failed: the ring stays published, the listeners hear it, and the view is not tried again.
   */
  @Test
  void aFailureAfterTheRingIsPublished_isAnErrorSayingTheViewWasInstalled_andNothingIsTriedAgain()
      throws Exception {
    try (FedNode n = new FedNode(meta("a"));
         NodeLog log = new NodeLog(r -> String.valueOf(r.getMessage()).contains(" was installed on "))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.node.setRingBeforeSender((viewId, creator, before, gone, newcomers) -> {
        throw new IllegalStateException("telling the newcomer failed (a test)");
      });
      View two = View.create(n.self, 2, n.self, b); // b is new: a, an old member, tells it the ring before
      n.install(two);

      assertEquals(2, n.node.state().viewId(), "the ring of view 2 is published");
      assertEquals(2, n.lastOwnership().viewId(), "and its listeners hear it");
      assertEquals(OptionalLong.empty(), n.node.failedViewId(), "nothing to try again");
      assertEquals(List.of("view " + two.getViewId() + " was installed on a, but what follows it failed"),
          log.messages());
      assertEquals(List.of(Level.SEVERE), log.levels());
      assertEquals("telling the newcomer failed (a test)", log.records().get(0).getThrown().getMessage());
    }
  }

  /**
   * Once the view thread is shut down (the node closing), a view that arrives, and the retry of a
   * view that failed, are dropped without an exception on the JGroups or gossip thread, each said
   * at DEBUG with its view id.
   */
  @Test
  void aViewOrARetry_afterTheViewThreadStopped_isDroppedAtDebug() throws Exception {
    try (FedNode n = new FedNode(meta("a"));
         NodeLog log = new NodeLog(r -> String.valueOf(r.getMessage()).startsWith("view {0} ")
             && String.valueOf(r.getMessage()).contains("closing"))) {
      Address b = meta("b").newAddress();
      n.view(1, n.self);
      n.node.beforeBuild = v -> {
        throw new IllegalStateException("view 2 fails (a test)");
      };
      n.view(2, n.self, b);
      n.viewThread.shutdown();
      assertTrue(n.viewThread.awaitTermination(10, TimeUnit.SECONDS), "the view thread stopped");

      n.node.onView(View.create(n.self, 3, n.self, b));
      n.node.retryFailedView();

      assertEquals(List.of("view " + View.create(n.self, 3, n.self, b).getViewId() + " arrived while closing",
          "view " + View.create(n.self, 2, n.self, b).getViewId() + " not tried again: closing"), log.messages());
      assertEquals(List.of(Level.FINE, Level.FINE), log.levels(), "at DEBUG");
      assertEquals(1, n.node.state().viewId());
    }
  }
}
