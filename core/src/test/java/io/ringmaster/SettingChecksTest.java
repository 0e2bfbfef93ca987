package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ringmaster.ring.HashRing;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The edges of {@link SettingChecks}: the first and last value each check takes or refuses, and how
 * a refused value is shown. ({@code RefusalAndConfigTest} checks the settings through the builder.)
 */
class SettingChecksTest {

  /** Both ends of the surrogate block are unpaired surrogates; the characters either side of it are not. */
  @Test
  void wellFormed_refusesALoneSurrogateAtEitherEndOfTheBlock_andTakesItsNeighbours() {
    for (String lone : new String[] {"a\uD800", "a\uDFFF"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> SettingChecks.wellFormed("nodeId", lone));
      assertTrue(e.getMessage().startsWith("nodeId has an unpaired surrogate"), e.getMessage());
    }
    assertEquals("a\uD7FF\uE000", SettingChecks.wellFormed("nodeId", "a\uD7FF\uE000"));
    assertEquals("a\uD83D\uDE00", SettingChecks.wellFormed("nodeId", "a\uD83D\uDE00"), "a pair is one code point");
  }

  /** A space and a tilde are printable ASCII as they are; DEL and the last control character are escaped. */
  @Test
  void shown_printsPrintableAsciiAsIs_andEscapesTheRest() {
    assertEquals("\" ~\\u007f\\u001f\\u00e9\"", SettingChecks.shown(" ~\u007f\u001f\u00e9"));
  }

  /** Up to 120 characters are shown whole; past that, the first 120 and the length. */
  @Test
  void shown_cutsAValueOnlyPast120Characters() {
    String max = "x".repeat(120);
    assertEquals("\"" + max + "\"", SettingChecks.shown(max));
    assertEquals("\"" + max + "\"... (121 chars)", SettingChecks.shown(max + "y"));
  }

  /** The least duration allowed and a whole day are taken; a millisecond either side is refused, naming both. */
  @Test
  void duration_takesBothEnds_andRefusesAMillisecondPastEither() {
    Duration min = Duration.ofMillis(10);
    assertSame(min, SettingChecks.duration("leaveTimeout", min, min));
    Duration day = Duration.ofHours(24);
    assertSame(day, SettingChecks.duration("leaveTimeout", day, min));
    for (Duration refused : new Duration[] {Duration.ofMillis(9), day.plusMillis(1)}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> SettingChecks.duration("leaveTimeout", refused, min));
      assertEquals("leaveTimeout must be between 10 ms and 24 hours: " + refused.toMillis() + " ms (" + refused + ")",
          e.getMessage());
    }
  }

  /** A member may have exactly as many tokens as a ring allows a member; one more is refused. */
  @Test
  void checkTokens_takesTheMostTokensAMemberMayHave_andRefusesOneMore() {
    SettingChecks.checkTokens(HashRing.MAX_TOKENS_PER_MEMBER, 1.0);
    SettingChecks.checkTokens(HashRing.MAX_TOKENS_PER_MEMBER / 2, 2.0);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SettingChecks.checkTokens(HashRing.MAX_TOKENS_PER_MEMBER, 1.0 + 1.0 / HashRing.MAX_TOKENS_PER_MEMBER));
    assertTrue(e.getMessage().contains(Long.toString(HashRing.MAX_TOKENS_PER_MEMBER + 1L)), e.getMessage());
  }
}
