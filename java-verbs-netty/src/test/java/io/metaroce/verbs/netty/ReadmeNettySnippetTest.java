package io.metaroce.verbs.netty;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Netty transport's snippet in java-verbs/README.md (the {@code <!-- netty-snippet -->}
 * block) compiles against this module, as the body of a {@code main} with the binding's, the
 * transport's and Netty's packages imported. ({@code JverbsReadmeIT} runs it over mrce0.)
 */
class ReadmeNettySnippetTest {

    static final Pattern SNIPPET = Pattern.compile("<!-- netty-snippet: run -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

    static final String IMPORTS = """
            import io.metaroce.verbs.endpoint.*;
            import io.metaroce.verbs.netty.*;
            import io.netty.bootstrap.*;
            import io.netty.buffer.*;
            import io.netty.channel.*;
            import java.net.*;
            import java.nio.charset.*;
            """;

    @Test
    void theNettySnippetCompiles(@TempDir Path dir) throws Exception {
        Matcher m = SNIPPET.matcher(Files.readString(Path.of("../java-verbs/README.md")));
        assertThat(m.find()).as("a netty-snippet block in java-verbs/README.md").isTrue();
        Path src = dir.resolve("ReadmeNettySnippet.java");
        Files.writeString(
                src,
                IMPORTS + "public class ReadmeNettySnippet {\n"
                        + "    public static void main(String[] args) throws Exception {\n" + m.group(1)
                        + "    }\n}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter err = new StringWriter();
        PrintStream errors = new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                err.write(b);
            }
        });
        int rc = javac.run(
                null,
                new PrintStream(OutputStream.nullOutputStream()),
                errors,
                List.of(
                                "-d",
                                dir.toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                "-Xlint:none",
                                src.toString())
                        .toArray(String[]::new));
        assertThat(rc).as("javac on the README's Netty snippet:%n%s", err).isZero();
        assertThat(dir.resolve("ReadmeNettySnippet.class")).exists();
    }
}
