package io.ringmaster;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * Remembers the reports of the current view, so that one repeated in that view (a divergence
 * found again at each gossip round) is reported once. A report of a new view starts afresh. Not
 * thread-safe: its users call it one at a time.
 */
final class OncePerView {
  /**
   * Reports remembered per view; past it, each new report counts as new without being remembered.
   * A report a peer, so clusters of up to this many members keep the once-per-view promise.
   */
  static final int MAX_REMEMBERED = 4_096;

  private final Set<Object> seen = new HashSet<>();
  private Object view;

  /**
   * Whether {@code report} is new in {@code view}: not seen since that view began here. Past
   * {@link #MAX_REMEMBERED} reports in one view, a report not remembered counts as new (so a peer
   * sending ever new checksums cannot grow the set, nor silence a report).
   */
  boolean first(Object view, Object report) {
    if (!Objects.equals(view, this.view)) {
      seen.clear();
      this.view = view;
    }
    return seen.size() >= MAX_REMEMBERED ? !seen.contains(report) : seen.add(report);
  }
}
