package io.ringmaster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java example that README.md, docs/recipes.md, docs/api.md and the public classes' javadoc show an
 * application developer compiles against the API as it is: a method renamed, an argument reordered or a type changed
 * breaks this test, not the first user who copies the example.
 *
 * <p>Each example is compiled in a class of its own, with the project's packages, {@code java.util},
 * {@code java.util.concurrent}, {@code java.time} and JUnit's assertions imported, and with
 * stand-ins for the names the examples take from the application around them: an application's
 * {@code store} and its {@code peers}, their {@code fetch}, {@code handOff}, {@code push} and
 * {@code copyFrom}, a {@code retryLater} and an {@code alert}, a running {@code node}, a
 * {@code change}, a {@code diff}, and a JGroups {@code requestHandler}, with the JGroups types a
 * fork channel takes imported.
 * An example that starts with an annotation is a method of that class; any other is the body of
 * one.
 */
class DocumentedExamplesTest {
  /** Where the examples are, and how many each holds: an example dropped or not found fails too. */
  private static final List<Source> SOURCES = List.of(
      new Source("README.md", 3),
      new Source("docs/recipes.md", 1),
      new Source("docs/api.md", 2),
      new Source("core/src/main/java/io/ringmaster/Ringmaster.java", 1),
      new Source("core/src/main/java/io/ringmaster/OwnershipChange.java", 3),
      new Source("core/src/main/java/io/ringmaster/RingmasterException.java", 1),
      new Source("core/src/main/java/io/ringmaster/ring/HashRing.java", 1),
      new Source("core/src/main/java/io/ringmaster/ring/KeyRange.java", 2),
      new Source("core/src/main/java/io/ringmaster/testing/LocalCluster.java", 1));

  private static final Pattern MARKDOWN_BLOCK = Pattern.compile("(?ms)^```java\\n(.*?)^```$");
  private static final Pattern JAVADOC_BLOCK = Pattern.compile("(?s)<pre>\\{@code\\n(.*?)\\n\\s*\\*\\s*}</pre>");

  private static final String IMPORTS = """
      import static org.junit.jupiter.api.Assertions.*;

      import io.ringmaster.*;
      import io.ringmaster.ring.*;
      import io.ringmaster.testing.*;
      import java.nio.file.*;
      import java.time.*;
      import java.util.*;
      import java.util.concurrent.*;
      import org.jgroups.blocks.MessageDispatcher;
      import org.jgroups.blocks.RequestHandler;
      import org.jgroups.fork.ForkChannel;
      import org.jgroups.stack.ProtocolStack;
      import org.junit.jupiter.api.Test;
      """;

  private static final String STAND_INS = """
        interface Store {
          void fetch(KeyRange range, List<Member> sources);
          void handOff(KeyRange range, List<Member> destinations);
          void fetch(Member source, List<KeyRange> ranges);
          void copyFrom(Member source, List<String> keys);
          void push(List<String> keys, List<Member> destinations);
          Iterable<String> keys();
          Iterable<byte[]> rawKeys();
        }
        Store store;
        Map<String, Store> peers;
        OwnershipChange change;
        Ringmaster node;
        RingDiff diff;
        RequestHandler requestHandler;
        void fetch(KeyRange range, List<Member> sources) {}
        void handOff(KeyRange range, List<Member> destinations) {}
        void retryLater() {}
        void alert(String message) {}
      """;

  private record Source(String path, int examples) {}

  /** One example: where it is shown (file and line, for the failure message) and its code. */
  private record Example(String origin, String code) {}

  @Test
  void everyDocumentedExample_compilesAgainstTheApi(@TempDir Path dir) throws IOException {
    List<Example> examples = new ArrayList<>();
    for (Source source : SOURCES) {
      List<Example> found = examplesIn(source.path());
      assertEquals(source.examples(), found.size(), "Java examples in " + source.path());
      examples.addAll(found);
    }
    List<Path> files = new ArrayList<>();
    for (int i = 0; i < examples.size(); i++) {
      files.add(write(dir, "Example" + i, examples.get(i)));
    }

    JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
    assertNotNull(compiler, "a JDK's compiler (the tests run on a JDK, not a JRE)");
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    boolean compiled;
    try (StandardJavaFileManager fileManager = compiler.getStandardFileManager(diagnostics, Locale.ROOT, null)) {
      Path out = Files.createDirectory(dir.resolve("classes"));
      List<String> options = List.of("-classpath", testClassPath(), "-d", out.toString(), "-proc:none",
          "--release", "17");
      compiled = compiler.getTask(null, fileManager, diagnostics, options, null,
          fileManager.getJavaFileObjectsFromPaths(files)).call();
    }
    String errors = diagnostics.getDiagnostics().stream()
        .filter(d -> d.getKind() == Diagnostic.Kind.ERROR)
        .map(d -> describe(d, examples))
        .collect(Collectors.joining("\n"));
    assertTrue(compiled && errors.isEmpty(), "documented examples that do not compile:\n" + errors);
  }

  /**
   * No doc comment is followed by another before its declaration: javadoc keeps only the nearer
   * one, so the first would be lost for readers of the API (as close()'s was, once, when a helper
   * with its own comment went in between). JDK 17's javac does not say so.
   */
  @Test
  void noDocCommentIsLeftWithoutItsDeclaration() throws IOException {
    Pattern dangling = Pattern.compile("\\*/\\s*/\\*\\*");
    List<String> found = new ArrayList<>();
    for (String module : List.of("core", "demo", "bench")) {
      try (var files = Files.walk(Path.of("..", module, "src", "main", "java"))) {
        for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
          String text = Files.readString(file);
          Matcher m = dangling.matcher(text);
          while (m.find()) {
            found.add(file + ":" + (text.substring(0, m.start()).chars().filter(c -> c == '\n').count() + 1));
          }
        }
      }
    }
    assertEquals(List.of(), found, "doc comments followed by another doc comment");
  }

  private static List<Example> examplesIn(String path) throws IOException {
    String text = Files.readString(Path.of("..").resolve(path));
    boolean markdown = path.endsWith(".md");
    Matcher m = (markdown ? MARKDOWN_BLOCK : JAVADOC_BLOCK).matcher(text);
    List<Example> found = new ArrayList<>();
    while (m.find()) {
      int line = (int) text.substring(0, m.start(1)).chars().filter(c -> c == '\n').count() + 1;
      String code = markdown ? m.group(1) : m.group(1).replaceAll("(?m)^\\s*\\* ?", "");
      found.add(new Example(path + ":" + line, code));
    }
    return found;
  }

  private static Path write(Path dir, String name, Example example) throws IOException {
    String code = example.code().strip();
    String body = code.startsWith("@") ? code : "void run() throws Exception {\n" + code + "\n}";
    String unit = IMPORTS + "\n// " + example.origin() + "\nabstract class " + name + " {\n"
        + STAND_INS + body + "\n}\n";
    return Files.writeString(dir.resolve(name + ".java"), unit);
  }

  private static String describe(Diagnostic<? extends JavaFileObject> d, List<Example> examples) {
    String file = d.getSource() == null ? "" : Path.of(d.getSource().toUri()).getFileName().toString();
    String origin = file.startsWith("Example")
        ? examples.get(Integer.parseInt(file.substring("Example".length(), file.length() - ".java".length())))
            .origin()
        : file;
    return origin + ": " + d.getMessage(Locale.ROOT).lines().findFirst().orElse("") + lineOf(d);
  }

  /** The line the compiler points at, as the example shows it. */
  private static String lineOf(Diagnostic<? extends JavaFileObject> d) {
    if (d.getSource() == null || d.getLineNumber() < 1) {
      return "";
    }
    try {
      return ", at: " + d.getSource().getCharContent(true).toString().lines()
          .skip(d.getLineNumber() - 1).findFirst().orElse("").strip();
    } catch (IOException e) {
      return "";
    }
  }

  /** The classes the tests see: surefire names them in a property, as its own class path is a jar. */
  private static String testClassPath() {
    return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
  }
}
