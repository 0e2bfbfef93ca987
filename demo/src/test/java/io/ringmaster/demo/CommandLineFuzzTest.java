package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The demo's command lines, fuzzed from a fixed seed in this JVM: the flags of {@code peer} and
 * {@code cluster} ({@link PeerOptions#parse}, {@link ClusterOptions#parse}, then {@link Main#run}
 * for a sample of those refused) and the launcher's commands ({@link Launcher#command}).
 *
 * <p>A valid flag set, in any order, with values at the edges of their ranges, parses to the values
 * given. A set with one defect (a misspelt flag, {@code --flag=value}, a flag without its value,
 * one given twice, a stray word, a value of the wrong type, out of range, empty, blank, badly
 * formed or very long) is refused with a {@link UsageException} (or, for an id or zone only the
 * node's builder checks, an {@link IllegalArgumentException} from {@link PeerOptions#builder})
 * whose message is one line of visible characters that names the flag and shows the value: as it
 * is when every character is visible, else in quotes with Java escapes. {@link Main#run} prints
 * that line, then the usage, and exits 2. Sets of random tokens are refused the same way or parse;
 * nothing else escapes. Each launcher command that is not understood gets one such line, and the
 * launcher goes on, starting nothing.
 *
 * <p>No peer or process starts: a command line goes to {@code Main.run} only once its parse was seen
 * to fail, and the launcher's ports for peers are all cluster ports, so that an {@code add} it
 * takes fails before it starts anything.
 *
 * <p>Paths are drawn from the characters this JVM can name a file with, which its locale decides
 * (the system property {@code sun.jnu.encoding}: ASCII alone under a POSIX locale), so one seed
 * gives other cases under another locale: replay a failure under the locale it failed in.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CommandLineFuzzTest {
  private static final long SEED = 0x424;
  private static final int CASES = 2_000;
  private static final List<String> USAGE = Main.USAGE.lines().toList();
  private static final String NL = System.lineSeparator();

  private enum Kind { WHOLE, PID, WEIGHT, TEXT, CLUSTER, PATH }

  /** A flag a command takes; {@code min} and {@code max} bound a whole number. */
  private record Flag(String name, Kind kind, long min, long max) {
    static Flag of(String name, Kind kind) {
      return new Flag(name, kind, 0, 0);
    }
  }

  private static final List<Flag> PEER_FLAGS = List.of(Flag.of("--id", Kind.TEXT),
      new Flag("--http-port", Kind.WHOLE, 1, 65535), new Flag("--replicas", Kind.WHOLE, 1, 255),
      Flag.of("--zone", Kind.TEXT), Flag.of("--weight", Kind.WEIGHT), Flag.of("--config", Kind.PATH),
      Flag.of("--cluster", Kind.CLUSTER), new Flag("--parent-pid", Kind.PID, 1, Long.MAX_VALUE),
      new Flag("--tombstone-grace", Kind.WHOLE, 1, PeerOptions.MAX_TOMBSTONE_GRACE_SECONDS));
  private static final List<Flag> CLUSTER_FLAGS = List.of(new Flag("--peers", Kind.WHOLE, 1, ClusterOptions.MAX_PEERS),
      new Flag("--replicas", Kind.WHOLE, 1, 255), new Flag("--base-port", Kind.WHOLE, 1, 65535 - ClusterOptions.MAX_PEERS),
      Flag.of("--cluster", Kind.CLUSTER), Flag.of("--log-dir", Kind.PATH));

  /** The localhost stack's cluster ports, 7800-7922, and the base ports whose 20 HTTP ports would reach them. */
  private static final long FIRST_CLUSTER_PORT = 7800;
  private static final long LAST_CLUSTER_PORT = 7922;
  private static final long FIRST_BAD_BASE_PORT = FIRST_CLUSTER_PORT - ClusterOptions.MAX_PEERS + 1;

  /** Characters a valid text value is made of: ASCII, letters of other scripts, and a pair outside the BMP. */
  private static final List<String> LETTERS = List.of("a", "b", "Z", "0", "7", "-", "_", ".", ":", "é", "ß", "中",
      "ж", "\uD83D\uDE00", "\"", "\\");
  /**
   * Characters a valid path is made of: those of {@link #LETTERS} that this JVM can name a file with
   * (under a POSIX locale, whose file names are ASCII, neither "é" nor "中" can be).
   */
  private static final List<String> PATH_LETTERS = LETTERS.stream().filter(CommandLineFuzzTest::nameable).toList();
  /** Characters a message must never hold raw: each is invisible, or breaks or rewrites a terminal line. */
  private static final List<String> INVISIBLE = List.of("\u0000", "\u0007", "\u001b[2J", "\n", "\r", "\t",
      "\u000b", "\u00a0", "\u2003", "\u200b", "\u00ad", "\ufeff", "\u2028", "\u0085", "\uD800", "\uDC00", " ");

  private final SplittableRandom random = new SplittableRandom(SEED);

  // ---- peer ----

  @Test
  void peerCommandLines_validSetsParseToWhatWasGiven_oneDefectIsRefusedNamingTheFlagAndShowingTheValue() {
    int mainRuns = 0;
    for (int i = 0; i < CASES; i++) {
      Map<Flag, String> given = validPeerSet();
      assertEquals(expectedPeer(given), PeerOptions.parse(tokens(given).toArray(String[]::new), 0),
          () -> "valid: " + shownArgs(tokens(given)));
      Case c = defective(given, PEER_FLAGS, true);
      String[] args = c.args().toArray(String[]::new);
      RuntimeException e = refusal(() -> PeerOptions.parse(args, 0).builder(), c);
      assertMessage(c, e);
      if (i % 8 == 0) {
        assertMainExits2(prefixed("peer", args), e.getMessage());
        mainRuns++;
      }
    }
    assertTrue(mainRuns > 200, "Main.run was given enough refused lines: " + mainRuns);
  }

  @Test
  void clusterCommandLines_validSetsParseToWhatWasGiven_oneDefectIsRefusedNamingTheFlagAndShowingTheValue() {
    for (int i = 0; i < CASES / 2; i++) {
      Map<Flag, String> given = validClusterSet();
      assertEquals(expectedCluster(given), ClusterOptions.parse(tokens(given).toArray(String[]::new), 0),
          () -> "valid: " + shownArgs(tokens(given)));
      Case c = defective(given, CLUSTER_FLAGS, false);
      String[] args = c.args().toArray(String[]::new);
      RuntimeException e = refusal(() -> ClusterOptions.parse(args, 0), c);
      assertInstanceOf(UsageException.class, e, c::toString);
      assertMessage(c, e);
      if (i % 8 == 0) { // refused above: the launcher starts nothing
        assertMainExits2(prefixed("cluster", args), e.getMessage());
      }
    }
  }

  /** Random tokens, flags and values of both commands, good and bad: each list parses, or is refused in one line. */
  @Test
  void randomTokenLists_parseOrAreRefusedInOneLine_andNothingElseEscapes() {
    List<String> pool = new ArrayList<>();
    for (Flag f : PEER_FLAGS) {
      pool.add(f.name());
      pool.add(misspelt(f.name()));
      pool.add(validValue(f));
      pool.add(badValue(f).value());
    }
    for (Flag f : CLUSTER_FLAGS) {
      pool.add(f.name());
      pool.add(validValue(f));
      pool.add(badValue(f).value());
    }
    pool.addAll(List.of("--", "-", "--help=no", "--id=p", "peer", "cluster", ""));
    for (int i = 0; i < CASES; i++) {
      List<String> args = new ArrayList<>();
      for (int n = random.nextInt(9); n > 0; n--) {
        args.add(random.nextInt(10) == 0 ? randomText(INVISIBLE, 1 + random.nextInt(4)) : pick(pool));
      }
      args.remove("--help"); // a request for the usage, not a command line
      String[] a = args.toArray(String[]::new);
      for (boolean peer : new boolean[] {true, false}) {
        try {
          if (peer) {
            PeerOptions.parse(a, 0).builder();
          } else {
            ClusterOptions.parse(a, 0);
          }
        } catch (UsageException e) {
          assertOneVisibleLine(e.getMessage(), () -> shownArgs(args));
        } catch (IllegalArgumentException e) { // the node's builder: a setting under its flag, or the config file
          assertTrue(peer && !(e instanceof InvalidPathException)
              && e.getMessage().matches("(?s)(--(id|zone|weight): |config file ).*"),
              () -> "the builder's refusals only, naming the flag or the file: " + e + " for " + shownArgs(args));
        } catch (RuntimeException e) {
          fail((peer ? "peer " : "cluster ") + shownArgs(args) + " threw " + e, e);
        }
      }
    }
  }

  // ---- the launcher's commands ----

  /**
   * Lines typed at the prompt of a launcher with no live peer: each gets its one line (the refusal,
   * naming the command and showing what it did not take, or "no live peers"), the launcher goes on
   * unless told to quit, and no peer is started: an {@code add} it takes fails at once, since every
   * port from its base port is a cluster port.
   */
  @Test
  void launcherCommands_notUnderstood_getOneClearLine_andStartNothing() {
    KeptProperties.keeping(() -> {
      System.setProperty("ringmaster.bind_port", "65413"); // cluster ports 65413-65535: no port for a peer
      ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
      ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
      Launcher launcher = new Launcher(new ClusterOptions(1, 2, 65535 - ClusterOptions.MAX_PEERS, "fuzz",
          Optional.empty()), new PrintStream(outBytes, true, StandardCharsets.UTF_8),
          new PrintStream(errBytes, true, StandardCharsets.UTF_8));
      int addsTaken = 0;
      for (int i = 0; i < CASES; i++) {
        Typed t = typedLine();
        boolean goesOn = launcher.command(t.line().strip()); // as run() hands it a line
        String said = outBytes.toString(StandardCharsets.UTF_8);
        String errors = errBytes.toString(StandardCharsets.UTF_8);
        outBytes.reset();
        errBytes.reset();
        String where = "line " + shownArgs(List.of(t.line()));
        assertEquals(!t.quits(), goesOn, where);
        assertTrue(launcher.peers.isEmpty(), where + ": nothing started");
        if (t.startsAPeer()) {
          addsTaken++;
          assertEquals("", said, where);
          assertEquals("error: cannot start a peer: java.io.IOException: no free port on 127.0.0.1 from --base-port 65515"
              + " to 65535" + NL, errors, where + ": the add was taken, and its start tried");
          continue;
        }
        assertEquals("", errors, where);
        if (t.said().equals(Launcher.HELP) || t.said().isEmpty()) {
          assertEquals(t.said().isEmpty() ? "" : t.said() + NL, said, where);
          continue;
        }
        assertTrue(said.endsWith(NL) && said.indexOf(NL) == said.length() - NL.length(), where + ": one line: " + said);
        String line = said.substring(0, said.length() - NL.length());
        assertOneVisibleLine(line, () -> where);
        assertTrue(line.startsWith(t.said()) && line.endsWith(t.saidLast()), where + ": " + line);
        if (t.shows() == null) {
          assertEquals(t.said(), line, where);
        } else {
          String between = line.substring(t.said().length(), line.length() - t.saidLast().length());
          assertShows(between, t.shows(), () -> where + ": " + line);
        }
      }
      assertTrue(addsTaken > 20, "adds taken: " + addsTaken);
    }, "ringmaster.bind_port");
  }

  /** A line typed, and what the launcher must say to it: {@code said}, the value shown, then {@code saidLast}. */
  private record Typed(String line, String said, String shows, String saidLast, boolean quits, boolean startsAPeer) {
    static Typed says(String line, String said) {
      return new Typed(line, said, null, "", false, false);
    }

    static Typed shows(String line, String said, String value, String saidLast) {
      return new Typed(line, said, value, saidLast, false, false);
    }
  }

  private static final List<String> COMMANDS = List.of("add", "stop", "kill", "put", "get", "load", "status", "help",
      "quit", "exit");

  private Typed typedLine() {
    String pad = pick(List.of("", "", " ", "\t", "\u2003", "  \u3000")); // strip() takes every Unicode space off the ends
    String command = random.nextInt(6) == 0 ? wordNot(COMMANDS) : pick(COMMANDS);
    List<String> args = new ArrayList<>();
    for (int n = random.nextInt(4); n > 0; n--) {
      args.add(argument());
    }
    StringBuilder line = new StringBuilder(pad).append(command);
    List<Integer> starts = new ArrayList<>(); // where each argument starts, once the line is stripped
    for (String a : args) {
      line.append(pick(List.of(" ", "  ", "\t", " \t ")));
      starts.add(line.length() - pad.length());
      line.append(a);
    }
    line.append(pick(List.of("", " ", "\u2003")));
    String typed = line.toString();
    Function<Integer, String> restFrom = k -> typed.strip().substring(starts.get(k));
    String arg = args.isEmpty() ? "" : args.get(0);
    if (!COMMANDS.contains(command)) {
      return Typed.shows(typed, "unknown command ", command, "; type help");
    }
    int takes = switch (command) {
      case "status", "help", "quit", "exit" -> 0;
      case "put" -> 2;
      default -> 1;
    };
    if (takes < 2 && args.size() > takes) {
      return Typed.shows(typed, "\"" + command + "\" takes " + (takes == 0 ? "no argument" : "one argument")
          + "; not understood: ", restFrom.apply(takes), "; type help");
    }
    return switch (command) {
      case "status" -> Typed.says(typed, "no live peers");
      case "help" -> Typed.says(typed, Launcher.HELP);
      case "quit", "exit" -> new Typed(typed, "", null, "", true, false);
      case "put" -> Typed.says(typed, args.size() < 2 ? "usage: put <key> <value>" : "no live peers; add one");
      case "get" -> Typed.says(typed, arg.isEmpty() ? "usage: get <key>" : "no live peers; add one");
      case "stop", "kill" -> arg.isEmpty() ? Typed.says(typed, "which peer? live: []")
          : Typed.shows(typed, "no live peer ", arg, "; live: []");
      case "load" -> wholeNumberIn(arg, 1, Launcher.MAX_LOAD) ? Typed.says(typed, "no live peers; add one")
          : Typed.shows(typed, "load takes a whole number of keys from 1 to " + Launcher.MAX_LOAD + ": ", arg, "");
      case "add" -> arg.isEmpty() || wholeNumberIn(arg, 1, ClusterOptions.MAX_PEERS)
          ? new Typed(typed, "", null, "", false, true)
          : Typed.shows(typed, "add takes a whole number of peers from 1 to " + ClusterOptions.MAX_PEERS + " (at most "
              + ClusterOptions.MAX_PEERS + " run at once): ", arg, "");
      default -> throw new AssertionError(command);
    };
  }

  /** An argument typed: no ASCII space inside (it would be two), and no Unicode space at its ends (strip takes those off). */
  private String argument() {
    String a = switch (random.nextInt(8)) {
      case 0, 1 -> Long.toString(pick(List.of(0L, 1L, 2L, 19L, 20L, 21L, -1L, 999_999L, 1_000_000L, 1_000_001L,
          (long) Integer.MAX_VALUE + 1, random.nextLong(-100, 2_000_000))));
      case 2 -> pick(List.of("1.5", "1e3", "0x10", "+5", "٣", "５", "two", "peer-1", "", "--5"));
      case 3 -> "9".repeat(100 + random.nextInt(3_000));
      case 4, 5 -> randomText(LETTERS, 1 + random.nextInt(12));
      default -> randomText(LETTERS, 1 + random.nextInt(3)) + pick(INVISIBLE) + randomText(LETTERS, random.nextInt(3));
    };
    a = a.replaceAll("[ \\t\\n\\x0B\\f\\r]", "\u0007");
    boolean strippedAway = !a.isEmpty() && (Character.isWhitespace(a.charAt(0))
        || Character.isWhitespace(a.charAt(a.length() - 1)));
    return a.isEmpty() || strippedAway ? "x" + a + "x" : a;
  }

  private String wordNot(List<String> known) {
    String w;
    do {
      w = random.nextBoolean() ? misspelt(pick(known)) : argument();
      w = w.replaceAll("[ \\t\\n\\x0B\\f\\r]", "_");
    } while (known.contains(w) || w.isEmpty() || !w.strip().equals(w));
    return w;
  }

  // ---- generators ----

  private Map<Flag, String> validPeerSet() {
    Map<Flag, String> given = new LinkedHashMap<>();
    boolean config = random.nextInt(5) == 0;
    for (Flag f : PEER_FLAGS) {
      boolean required = f.name().equals("--http-port") || f.name().equals("--id") && !config;
      if (f.name().equals("--config") ? config : required || random.nextBoolean()) {
        given.put(f, validValue(f));
      }
    }
    return shuffled(given);
  }

  private Map<Flag, String> validClusterSet() {
    Map<Flag, String> given = new LinkedHashMap<>();
    for (Flag f : CLUSTER_FLAGS) {
      if (random.nextBoolean()) {
        given.put(f, validValue(f));
      }
    }
    return shuffled(given);
  }

  private Map<Flag, String> shuffled(Map<Flag, String> given) {
    List<Flag> order = new ArrayList<>(given.keySet());
    for (int i = order.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      order.set(j, order.set(i, order.get(j)));
    }
    Map<Flag, String> out = new LinkedHashMap<>();
    order.forEach(f -> out.put(f, given.get(f)));
    return out;
  }

  private String validValue(Flag f) {
    return switch (f.kind()) {
      case WHOLE -> {
        long n = pick(List.of(f.min(), f.max(), f.min() + 1, f.max() - 1, random.nextLong(f.min(), f.max() + 1)));
        if (f.name().equals("--http-port") && n >= FIRST_CLUSTER_PORT && n <= LAST_CLUSTER_PORT) {
          n = pick(List.of(FIRST_CLUSTER_PORT - 1, LAST_CLUSTER_PORT + 1));
        }
        if (f.name().equals("--base-port") && n >= FIRST_BAD_BASE_PORT && n <= LAST_CLUSTER_PORT) {
          n = pick(List.of(FIRST_BAD_BASE_PORT - 1, LAST_CLUSTER_PORT + 1));
        }
        yield pick(List.of(Long.toString(n), Long.toString(n), "0" + n, "+" + n));
      }
      case PID -> Long.toString(pick(List.of(1L, 2L, Long.MAX_VALUE, random.nextLong(1, Long.MAX_VALUE))));
      case WEIGHT -> {
        double d = pick(List.of(0.0, 1.0, Double.MIN_VALUE, Double.MAX_VALUE, random.nextDouble() * 100,
            random.nextDouble() / 1e6));
        yield random.nextBoolean() ? Double.toString(d) : new BigDecimal(d).toPlainString();
      }
      case TEXT, PATH -> {
        String v = randomText(f.kind() == Kind.PATH ? PATH_LETTERS : LETTERS, 1 + random.nextInt(30));
        yield v.startsWith("--") ? "x" + v : v;
      }
      case CLUSTER -> {
        StringBuilder b = new StringBuilder();
        int length = pick(List.of(1, 200, 1 + random.nextInt(200)));
        for (int i = 0; i < length; i++) {
          b.append((char) random.nextInt(0x21, 0x7f));
        }
        if (length > 2 && random.nextBoolean()) {
          b.setCharAt(1, ' '); // a space inside is fine
        }
        yield b.charAt(0) == '-' ? "c" + b.substring(1) : b.toString();
      }
    };
  }

  /** A bad value of a flag's kind, and what the refusal must say besides the flag and the value. */
  private record Bad(String value, String says) {
  }

  private Bad badValue(Flag f) {
    if (random.nextInt(8) == 0) {
      return new Bad(pick(List.of("", " ", "\t", "\u2003", "  \n ")), "must not be empty");
    }
    String whole = random.nextBoolean() ? Long.toString(f.min()) : "7";
    return switch (f.kind()) {
      case WHOLE -> {
        String v;
        do { // 65536 is a tombstone grace
          v = pick(List.of(Long.toString(f.min() - 1), Long.toString(f.max() + 1), "-1", "65536", "4294967296",
              "99999999999999999999", "1.5", whole + ".0", "1e3", "0x10", "1_000", "1,000", "one", "-", "+",
              whole + "abc", " " + whole, whole + " ", "\u00a0" + whole, whole + "\n", whole + "\u200b", "\uD800",
              "\uDC00" + whole, "五", "9".repeat(100 + random.nextInt(5_000))));
        } while (wholeNumberIn(v, f.min(), f.max()));
        yield new Bad(v, "must be a whole number in " + f.min() + ".." + f.max());
      }
      case PID -> new Bad(pick(List.of("0", "-1", "-9223372036854775808", "9223372036854775808", "1.0", "1e3", " 7",
          "7\u00a0", "\uD800", "x", "9".repeat(100 + random.nextInt(5_000)))), "must be a whole number >= 1");
      case WEIGHT -> new Bad(pick(List.of("-1", "-0.5", "-4.9E-324", "NaN", "-NaN", "Infinity", "-Infinity", "1e309",
          "1e-400", "0x1p-2000", "-1e-400", "1,5", "one", "\u00a01", "1\u00a0", "1\n2", "\uD800", "1e", "0x", ".",
          "e5", "1" + "0".repeat(400 + random.nextInt(2_000)), "0." + "0".repeat(400 + random.nextInt(2_000)) + "1")),
          "");
      case CLUSTER -> new Bad(pick(List.of(" c", "c ", "caf\u00e9", "a".repeat(201), "a\u0000b", "a\tb", "\uD800",
          "日本", "x".repeat(300 + random.nextInt(5_000)), "a\u00a0")), "clusterName must be");
      case PATH -> new Bad(pick(UNNAMEABLE_PATHS), "");
      case TEXT -> new Bad(pick(List.of("a\u0000", "\u0007bell", "x\uD800", "\uDC00", " a", "a ", "\u00a0a", "a\u00a0",
          "\ufeffa", "a\u001b[2J", "é".repeat(200), "x".repeat(300 + random.nextInt(5_000)), "中".repeat(100))), "");
    };
  }

  /** Whether this JVM can name a file {@code text}, as its file system's encoding holds every character. */
  private static boolean nameable(String text) {
    try {
      Path.of(text);
      return true;
    } catch (InvalidPathException e) {
      return false;
    }
  }

  /** Paths no file system takes, and where its encoding is ASCII alone, one of other scripts too. */
  private static final List<String> UNNAMEABLE_PATHS = Stream.concat(
          Stream.of("a\u0000b", "\u0000", "logs\uD800", "\uDC00"), Stream.of("caf\u00e9", "\u65e5\u672c"))
      .filter(path -> !nameable(path)).toList();

  /** A command line with one defect, and what its refusal must say. */
  private record Case(List<String> args, String flag, String value, String says, boolean late) {
    @Override
    public String toString() {
      return shownArgs(args) + " (" + flag + ", " + (value == null ? "no value" : shownArgs(List.of(value))) + ")";
    }
  }

  private Case defective(Map<Flag, String> valid, List<Flag> flags, boolean peer) {
    Map<Flag, String> given = new LinkedHashMap<>(valid);
    List<String> args = tokens(given);
    Set<String> known = flags.stream().map(Flag::name).collect(Collectors.toSet());
    int defect = random.nextInt(peer ? 9 : 8);
    if (given.isEmpty() && defect < 3) {
      defect = 3; // nothing to misspell or leave without its value
    }
    switch (defect) {
      case 0 -> { // a misspelt flag, or --flag=value
        int at = 2 * random.nextInt(given.size());
        String flag = args.get(at);
        String wrong;
        if (random.nextInt(4) == 0) {
          wrong = flag + "=" + args.remove(at + 1);
        } else {
          do {
            wrong = misspelt(flag);
          } while (known.contains(wrong) || wrong.equals("--help"));
        }
        args.set(at, wrong);
        return wrong.startsWith("--") ? new Case(args, null, wrong, "unknown flag", false)
            : new Case(args, null, wrong, "unexpected argument", false);
      }
      case 1 -> { // a flag's value left out: the next flag, or the end, follows it
        int at = 2 * random.nextInt(given.size());
        String flag = args.get(at);
        args.remove(at + 1);
        if (at + 1 < args.size() && random.nextBoolean()) {
          args.add(at + 1, pick(List.of("--", "---", "--5", "--" + randomText(LETTERS, 3))));
        }
        return new Case(args, flag, null, flag + " needs a value", false);
      }
      case 2 -> { // given twice
        Flag f = pick(new ArrayList<>(given.keySet()));
        args.addAll(List.of(f.name(), validValue(f)));
        return new Case(args, f.name(), null, f.name() + " is given twice", false);
      }
      case 3 -> { // a flag at the end without its value
        String flag = pick(flags).name();
        args.add(flag);
        return new Case(args, flag, null, flag + " needs a value", false);
      }
      case 4 -> { // a stray word where a flag goes
        String word = pick(List.of("extra", "8081", "-h", "-", "", "\u2014id", "peer", randomText(LETTERS, 4),
            randomText(INVISIBLE, 2)));
        word = word.equals("-h") && given.isEmpty() ? "-H" : word; // "cluster -h" asks for the usage
        args.add(2 * random.nextInt(given.size() + 1), word);
        return new Case(args, null, word, "unexpected argument", false);
      }
      case 5 -> { // the HTTP ports on the cluster ports
        long port = pick(List.of(FIRST_CLUSTER_PORT, LAST_CLUSTER_PORT, random.nextLong(FIRST_CLUSTER_PORT,
            LAST_CLUSTER_PORT + 1)));
        Flag f = flags.stream().filter(x -> x.name().equals(peer ? "--http-port" : "--base-port")).findFirst().orElseThrow();
        if (!peer) {
          port = pick(List.of(FIRST_BAD_BASE_PORT, port));
        }
        given.put(f, Long.toString(port));
        if (peer) {
          noConfig(given);
        }
        return new Case(tokens(given), f.name(), Long.toString(port), peer ? "is in the range the peers' cluster ports use"
            : "would overlap their cluster ports", false);
      }
      case 8 -> { // a required flag missing
        if (random.nextBoolean()) {
          given.keySet().removeIf(f -> f.name().equals("--http-port"));
          return new Case(tokens(given), "--http-port", null, "--http-port is required", false);
        }
        given.keySet().removeIf(f -> f.name().equals("--id") || f.name().equals("--config"));
        return new Case(tokens(given), "--id", null, "--id is required (or a --config that sets nodeId)", false);
      }
      default -> { // a bad value, of a flag given or not
        Flag f = pick(flags);
        Bad bad = badValue(f);
        given.put(f, bad.value());
        // What only the node's builder checks is checked after any --config file is read: none here.
        boolean late = f.kind() == Kind.TEXT && !bad.value().isBlank();
        if (late) {
          noConfig(given);
        }
        return new Case(tokens(shuffled(given)), f.name(), bad.value(), bad.says(), late);
      }
    }
  }

  /** Takes out --config, which makes --id optional: --id stays, valid if it was not. */
  private void noConfig(Map<Flag, String> given) {
    given.keySet().removeIf(f -> f.name().equals("--config"));
    if (given.keySet().stream().noneMatch(f -> f.name().equals("--id"))) {
      given.put(PEER_FLAGS.get(0), validValue(PEER_FLAGS.get(0)));
    }
  }

  private String misspelt(String name) {
    int at = 2 + random.nextInt(name.length() - 2);
    return switch (random.nextInt(8)) {
      case 0 -> name.substring(0, at) + name.substring(at + 1);
      case 1 -> name.substring(0, at) + name.charAt(at) + name.substring(at);
      case 2 -> name.toUpperCase(Locale.ROOT);
      case 3 -> name.substring(1); // one dash
      case 4 -> "\u2014" + name.substring(2); // an em dash, as some editors write "--"
      case 5 -> name + pick(INVISIBLE);
      case 6 -> name.replace('-', '_');
      default -> pick(List.of("--port", "--replica", "--peers", "--http-port", "--base-port", "--log-dir", "--ID"));
    };
  }

  private String randomText(List<String> alphabet, int length) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < length; i++) {
      b.append(pick(alphabet));
    }
    return b.toString();
  }

  private <T> T pick(List<T> from) {
    return from.get(random.nextInt(from.size()));
  }

  private static List<String> tokens(Map<Flag, String> given) {
    List<String> args = new ArrayList<>();
    given.forEach((f, v) -> args.addAll(List.of(f.name(), v)));
    return args;
  }

  // ---- expectations ----

  private static PeerOptions expectedPeer(Map<Flag, String> given) {
    Map<String, String> v = byName(given);
    return new PeerOptions(Optional.ofNullable(v.get("--id")), whole(v.get("--http-port")),
        Optional.ofNullable(v.get("--replicas")).map(CommandLineFuzzTest::whole), Optional.ofNullable(v.get("--zone")),
        Optional.ofNullable(v.get("--weight")).map(w -> new BigDecimal(w).doubleValue()),
        Optional.ofNullable(v.get("--config")).map(Path::of), Optional.ofNullable(v.get("--cluster")),
        Optional.ofNullable(v.get("--parent-pid")).map(n -> new BigInteger(n).longValueExact()),
        Optional.ofNullable(v.get("--tombstone-grace")).map(CommandLineFuzzTest::whole), false);
  }

  private static ClusterOptions expectedCluster(Map<Flag, String> given) {
    Map<String, String> v = byName(given);
    return new ClusterOptions(whole(v.getOrDefault("--peers", "3")), whole(v.getOrDefault("--replicas", "2")),
        whole(v.getOrDefault("--base-port", "8081")),
        v.getOrDefault("--cluster", "ringmaster-demo"), Optional.ofNullable(v.get("--log-dir")).map(Path::of));
  }

  /** The number a value given as valid spells (leading zeros and a plus sign included). */
  private static int whole(String v) {
    return new BigInteger(v).intValueExact();
  }

  private static Map<String, String> byName(Map<Flag, String> given) {
    Map<String, String> v = new LinkedHashMap<>();
    given.forEach((f, value) -> v.put(f.name(), value));
    return v;
  }

  /** Whether {@code arg} is a whole number in {@code min..max}, in any digits Java reads as decimal ones. */
  private static boolean wholeNumberIn(String arg, long min, long max) {
    try {
      long n = Integer.parseInt(arg);
      return n >= min && n <= max;
    } catch (NumberFormatException no) {
      return false;
    }
  }

  /** The refusal of a defective command line: at parse, or (for a value only the node checks) at the builder. */
  private static RuntimeException refusal(Runnable parse, Case c) {
    try {
      parse.run();
    } catch (UsageException e) {
      assertTrue(!c.late(), () -> "refused at parse, not by the node's builder: " + c + ": " + e.getMessage());
      return e;
    } catch (IllegalArgumentException e) {
      assertTrue(c.late(), () -> c + ": " + e);
      return e;
    } catch (RuntimeException e) {
      throw new AssertionError(c + " threw " + e, e);
    }
    throw new AssertionError("taken: " + c);
  }

  private static void assertMessage(Case c, RuntimeException e) {
    String message = e.getMessage();
    assertOneVisibleLine(message, c::toString);
    if (c.flag() != null) {
      assertTrue(message.startsWith(c.flag() + " ") || message.startsWith(c.flag() + ":"),
          () -> "names the flag first: " + message + " for " + c);
    }
    assertTrue(message.contains(c.says()), () -> "says \"" + c.says() + "\": " + message + " for " + c);
    if (c.value() != null) {
      assertShows(message, c.value(), () -> message + " for " + c);
    }
  }

  /** {@code Main.run} prints the refusal as its one error line, then the usage, and exits 2. */
  private static void assertMainExits2(String[] args, String message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8), InputStream.nullInputStream(), Peer::close);
    List<String> lines = err.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(2, code, () -> shownArgs(List.of(args)));
    assertEquals("", out.toString(StandardCharsets.UTF_8), () -> shownArgs(List.of(args)));
    List<String> expected = new ArrayList<>(List.of("error: " + message));
    expected.addAll(USAGE);
    assertEquals(expected, lines, () -> shownArgs(List.of(args)));
  }

  private static final Pattern QUOTED = Pattern.compile("\"((?:[^\"\\\\]|\\\\u[0-9a-fA-F]{4}|\\\\[\"\\\\])*)\"");
  private static final Pattern ESCAPE = Pattern.compile("\\\\u([0-9a-fA-F]{4})|\\\\([\"\\\\])");

  /**
   * Whether {@code text} shows {@code value}: as it is, when every character of it is visible and
   * it is short; else in double quotes where {@code \\uXXXX} stands for a character and a backslash
   * comes before each {@code "} and {@code \}, whole, or cut after at least 40 characters with the
   * value's length said (in characters, or bytes of UTF-8).
   */
  private static void assertShows(String text, String value, Supplier<String> where) {
    if (plain(value) && text.contains(value)) {
      return;
    }
    Matcher m = QUOTED.matcher(text);
    while (m.find()) {
      String shown = ESCAPE.matcher(m.group(1)).replaceAll(e -> Matcher.quoteReplacement(e.group(1) == null
          ? e.group(2) : Character.toString(Integer.parseInt(e.group(1), 16))));
      if (shown.equals(value)) {
        return;
      }
      String cut = shown.endsWith("...") ? shown.substring(0, shown.length() - 3) : shown;
      boolean lengthSaid = text.contains(value.length() + " chars")
          || text.contains(value.getBytes(StandardCharsets.UTF_8).length + " bytes");
      if (cut.length() >= 40 && cut.length() < value.length() && value.startsWith(cut) && lengthSaid) {
        return;
      }
    }
    fail("does not show " + shownArgs(List.of(value)) + ": " + where.get());
  }

  /** A value a message may show as it is: short, and every character of it visible. */
  private static boolean plain(String value) {
    return !value.isEmpty() && value.length() <= 120 && value.codePoints().noneMatch(c -> c == ' ' || invisible(c));
  }

  /** A character that does not show, or breaks or rewrites a terminal line: no message holds one raw. */
  private static boolean invisible(int c) {
    return Character.isISOControl(c) || Character.getType(c) == Character.FORMAT
        || Character.getType(c) == Character.SURROGATE || c != ' ' && (Character.isWhitespace(c)
        || Character.isSpaceChar(c));
  }

  private static void assertOneVisibleLine(String message, Supplier<String> where) {
    assertTrue(message != null && !message.isEmpty() && message.length() <= 1_000
        && message.codePoints().noneMatch(CommandLineFuzzTest::invisible),
        () -> "not one short line of visible characters: " + shownArgs(List.of(String.valueOf(message))) + " for "
            + where.get());
  }

  private static String[] prefixed(String command, String[] args) {
    String[] all = new String[args.length + 1];
    all[0] = command;
    System.arraycopy(args, 0, all, 1, args.length);
    return all;
  }

  /** Arguments as a failure message shows them: each quoted, invisible characters escaped, long ones cut. */
  private static String shownArgs(List<String> args) {
    return args.stream().map(a -> {
      StringBuilder b = new StringBuilder("\"");
      a.chars().limit(60).forEach(c -> b.append(invisible(c) || c == '"' ? String.format("\\u%04x", c)
          : Character.toString(c)));
      return b.append(a.length() > 60 ? "\"...(" + a.length() + ")" : "\"").toString();
    }).collect(Collectors.joining(" "));
  }
}
