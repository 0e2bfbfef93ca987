package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link OncePerView}: a report repeated in one view counts once, for as many distinct reports as
 * a cluster of {@link OncePerView#MAX_REMEMBERED} members gives (one a peer); a new view starts
 * afresh, and the view before it stays remembered; past the bound, a new report counts as new
 * each time rather than being silenced.
 */
class OncePerViewTest {
  @Test
  void eachReportCountsOncePerView_upToTheBound_andANewViewStartsAfresh() {
    OncePerView once = new OncePerView();
    int bound = OncePerView.MAX_REMEMBERED;
    for (int peer = 0; peer < bound; peer++) {
      assertTrue(once.first(7L, "peer-" + peer), "peer-" + peer);
    }
    for (int peer = 0; peer < bound; peer++) {
      assertFalse(once.first(7L, "peer-" + peer), "peer-" + peer + " again, in the same view");
    }
    assertTrue(once.first(7L, "one more"), "past the bound: new");
    assertTrue(once.first(7L, "one more"), "past the bound: not remembered, so never silenced");
    assertFalse(once.first(7L, "peer-" + (bound - 1)), "those remembered stay remembered");

    assertTrue(once.first(8L, "peer-0"), "a new view starts afresh");
    assertFalse(once.first(8L, "peer-0"));
    // Reports of two views, handed on out of order (made on two threads): the view before is remembered.
    assertFalse(once.first(7L, "peer-0"), "a late report of the view before is not new again");
    assertTrue(once.first(7L, "late but new"), "a report new in the view before is new");
    assertFalse(once.first(8L, "peer-0"), "and the current view's memory stays");
    assertTrue(once.first(9L, "peer-0"));
    assertTrue(once.first(7L, "peer-0"), "two views back: afresh");
  }

  /**
   * A report new in the view before, handed on late, is remembered for that view: not reported
   * again there, and not taken for one of the current view, where it is still new.
   */
  @Test
  void aLateReportNewInTheViewBefore_isRememberedForThatViewOnly() {
    OncePerView once = new OncePerView();
    assertTrue(once.first(7L, "x"));
    assertTrue(once.first(8L, "b"));
    assertTrue(once.first(7L, "a"), "late, and new in view 7");
    assertFalse(once.first(7L, "a"), "late again: reported once");
    assertTrue(once.first(8L, "a"), "new in view 8");
  }
}
