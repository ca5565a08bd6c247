package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Env;
import io.metaroce.it.Proc;
import io.metaroce.it.Wait;
import io.metaroce.it.jverbs.apps.EndpointApp;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * java-verbs/README.md's first snippet ({@code <!-- snippet: run -->}) compiled as the body of a
 * main and run in namespace A against an echo endpoint on service 7000 of B (198.18.0.2, the
 * address the snippet names): it prints the echoed "ping" and the server's exposed buffer. And
 * its Netty snippet ({@code <!-- netty-snippet: run -->}), an echo server and its client in one
 * process, run in namespace B (the client connects to 198.18.0.2, its own daemon): it prints the
 * echoed "ping" and ends by itself (the client closes on the echo, the loops shut down).
 */
@Timeout(300)
class JverbsReadmeIT extends JverbsFabricTest {

    @Test
    void theReadmeSnippetRunsAgainstAnEchoEndpoint(@TempDir Path dir) throws Exception {
        String classes = Env.root().resolve("java-verbs/target/classes").toString();
        List<String> cmd = compiledSnippet(dir, "snippet", "ReadmeSnippet", classes, """
                import io.metaroce.verbs.*;
                import io.metaroce.verbs.cm.*;
                import io.metaroce.verbs.endpoint.*;
                import java.lang.foreign.*;
                import java.net.*;
                import java.nio.charset.*;
                import java.time.*;
                import java.util.concurrent.*;
                """, "");
        try (Proc server = fabric.start(
                fabric.b(), "echo-server", JverbsFabric.javaApp(EndpointApp.class, "echo-server", "7000"))) {
            boolean listening = Wait.until(
                    Duration.ofSeconds(60), () -> server.output().contains("LISTENING") || !server.isAlive());
            assertThat(listening && server.output().contains("LISTENING"))
                    .as(server.output())
                    .isTrue();
            try (Proc client = fabric.start(fabric.a(), "readme-snippet", cmd)) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                String ctx = "--- server:\n" + server.output() + "\n--- snippet:\n" + client.output();
                assertThat(ce).as(ctx).isZero();
                assertThat(se).as(ctx).isZero();
                assertThat(client.output())
                        .as(ctx)
                        .contains("reply: ping")
                        .contains("the server exposes RemoteBuffer[0x")
                        .contains("65536 bytes");
                assertThat(server.output()).as(ctx).contains("OK echoed=1 DISCONNECTED local=false");
            }
        }
    }

    @Test
    void theNettyReadmeSnippetRunsAnEchoOverMrce0(@TempDir Path dir) throws Exception {
        // this test's class path holds java-verbs, java-verbs-netty and Netty (through java-verbs-examples)
        List<String> cmd = compiledSnippet(
                dir,
                "netty-snippet",
                "ReadmeNettySnippet",
                System.getProperty("java.class.path"),
                """
                import io.metaroce.verbs.endpoint.*;
                import io.metaroce.verbs.netty.*;
                import io.netty.bootstrap.*;
                import io.netty.buffer.*;
                import io.netty.channel.*;
                import java.net.*;
                import java.nio.charset.*;
                """,
                "        System.out.println(\"SNIPPET DONE\");\n");
        try (Proc p = fabric.start(fabric.b(), "readme-netty-snippet", cmd)) {
            int e = p.waitFor(Duration.ofSeconds(120));
            assertThat(e).as(p.output()).isZero();
            assertThat(p.output()).as(p.output()).contains("echo: ping").contains("SNIPPET DONE");
        }
    }

    /**
     * The README block marked {@code <!-- MARKER: run -->} compiled, after {@code imports}, as the
     * body of {@code main} of class {@code name} (then {@code tail}) against {@code classPath};
     * returns the command that runs it under {@code bin/mrce-run}.
     */
    private static List<String> compiledSnippet(
            Path dir, String marker, String name, String classPath, String imports, String tail) throws Exception {
        Matcher m = Pattern.compile("<!-- " + marker + ": run -->\\s*```java\\n(.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(Env.root().resolve("java-verbs/README.md")));
        assertThat(m.find())
                .as("a %s run block in java-verbs/README.md", marker)
                .isTrue();
        Path src = dir.resolve(name + ".java");
        Files.writeString(
                src,
                imports + "public class " + name + " {\n"
                        + "    public static void main(String[] args) throws Exception {\n" + m.group(1) + tail
                        + "    }\n}\n");
        int rc = ToolProvider.getSystemJavaCompiler()
                .run(
                        null,
                        new PrintStream(OutputStream.nullOutputStream()),
                        System.err,
                        "-d",
                        dir.toString(),
                        "-cp",
                        classPath,
                        src.toString());
        assertThat(rc).as("javac of the README's %s block", marker).isZero();
        return new ArrayList<>(List.of(
                Env.bin("mrce-run").toString(),
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                dir + ":" + classPath,
                name));
    }
}
