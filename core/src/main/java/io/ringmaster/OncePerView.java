package io.ringmaster;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * Remembers the reports of the current view, so that one repeated in that view (a divergence
 * found again at each gossip round) is reported once. A report of a new view starts afresh; the
 * view before it stays remembered too, since reports made on several threads reach this one at a
 * time and not always in their order: one of the view before, handed on after one of the new
 * view, is not new again. Not thread-safe: its users call it one at a time.
 */
final class OncePerView {
  /**
   * Reports remembered per view; past it, each new report counts as new without being remembered.
   * A report a peer, so clusters of up to this many members keep the once-per-view promise.
   */
  static final int MAX_REMEMBERED = 4_096;

  private Set<Object> seen = new HashSet<>();
  private Object view;
  private Set<Object> seenBefore = new HashSet<>();
  private Object viewBefore;

  /**
   * Whether {@code report} is new in {@code view}: not seen since that view began here. Past
   * {@link #MAX_REMEMBERED} reports in one view, a report not remembered counts as new (so a peer
   * sending ever new checksums cannot grow the set, nor silence a report).
   */
  boolean first(Object view, Object report) {
    if (!Objects.equals(view, this.view)) {
      if (viewBefore != null && Objects.equals(view, viewBefore)) {
        return remember(seenBefore, report); // a late report of the view before: that view's memory
      }
      Set<Object> reused = seenBefore;
      reused.clear();
      seenBefore = seen;
      viewBefore = this.view;
      seen = reused;
      this.view = view;
    }
    return remember(seen, report);
  }

  private static boolean remember(Set<Object> seen, Object report) {
    return seen.size() >= MAX_REMEMBERED ? !seen.contains(report) : seen.add(report);
  }
}
