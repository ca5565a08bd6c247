package io.metaroce.verbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code <!-- snippet: ... -->} Java block of java-verbs/README.md compiles against the
 * binding, as the body of a {@code main} with the binding's packages and the usual JDK ones
 * imported (JverbsReadmeIT runs the {@code run} one between two namespaces).
 */
class ReadmeSnippetTest {

    static final Pattern SNIPPET = Pattern.compile("<!-- snippet: (\\w+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

    static final String IMPORTS = """
            import io.metaroce.verbs.*;
            import io.metaroce.verbs.cm.*;
            import io.metaroce.verbs.endpoint.*;
            import java.lang.foreign.*;
            import java.net.*;
            import java.nio.charset.*;
            import java.time.*;
            import java.util.concurrent.*;
            """;

    /** The snippets, in order: {kind, code}. */
    static List<String[]> snippets(Path readme) throws Exception {
        Matcher m = SNIPPET.matcher(Files.readString(readme));
        List<String[]> out = new ArrayList<>();
        while (m.find()) {
            out.add(new String[] {m.group(1), m.group(2)});
        }
        return out;
    }

    @Test
    void everySnippetCompiles(@TempDir Path dir) throws Exception {
        List<String[]> snippets = snippets(Path.of("README.md"));
        assertThat(snippets).as("snippets in README.md").hasSizeGreaterThanOrEqualTo(2);
        assertThat(snippets.get(0)[0]).isEqualTo("run");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<String> files = new ArrayList<>();
        for (int i = 0; i < snippets.size(); i++) {
            String name = "ReadmeSnippet" + i;
            Path src = dir.resolve(name + ".java");
            Files.writeString(
                    src,
                    IMPORTS + "public class " + name + " {\n"
                            + "    public static void main(String[] args) throws Exception {\n" + snippets.get(i)[1]
                            + "    }\n}\n");
            files.add(src.toString());
        }
        List<String> args = new ArrayList<>(
                List.of("-d", dir.toString(), "-cp", System.getProperty("java.class.path"), "-Xlint:none"));
        args.addAll(files);
        StringWriter err = new StringWriter();
        int rc = javac.run(
                null,
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream()),
                new java.io.PrintStream(new java.io.OutputStream() {
                    @Override
                    public void write(int b) {
                        err.write(b);
                    }
                }),
                args.toArray(String[]::new));
        assertThat(rc).as("javac on the README's snippets:%n%s", err).isZero();
        assertThat(dir.resolve("ReadmeSnippet0.class")).exists();
    }
}
