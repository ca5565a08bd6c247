package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code jverbs rc-pingpong} (Java, FFM) against the unmodified C {@code ibv_rc_pingpong}, both
 * ways, and against itself, over mrce0 between two namespaces: both sides must print
 * size * iters * 2 bytes in iters iterations, and with -c the server checks the data.
 */
@Timeout(900)
class JverbsPingPongIT extends JverbsFabricTest {

    private static final Duration RUN = Duration.ofSeconds(180);
    private static final AtomicInteger PORT = new AtomicInteger(18715);

    private static List<String> args(int port, int size, int iters, String... extra) {
        List<String> a = new ArrayList<>(List.of(
                "-d",
                "mrce0",
                "-g",
                "0",
                "-p",
                Integer.toString(port),
                "-s",
                Integer.toString(size),
                "-n",
                Integer.toString(iters)));
        a.addAll(List.of(extra));
        return a;
    }

    private static List<String> java(List<String> args, String server) {
        List<String> a = new ArrayList<>(List.of("rc-pingpong"));
        a.addAll(args);
        if (server != null) {
            a.add(server);
        }
        return JverbsFabric.jverbs(a.toArray(String[]::new));
    }

    private static List<String> c(List<String> args, String server) {
        List<String> a = new ArrayList<>(List.of("ibv_rc_pingpong"));
        a.addAll(args);
        if (server != null) {
            a.add(server);
        }
        return JverbsFabric.cProgram(a.toArray(String[]::new));
    }

    private static void run(boolean javaServer, boolean javaClient, int size, int iters, String... extra) {
        int port = PORT.getAndIncrement();
        List<String> a = args(port, size, iters, extra);
        String serverAddr = fabric.b().addr();
        JverbsFabric.Outcome o = fabric.runPair(
                port,
                javaServer ? java(a, null) : c(a, null),
                javaClient ? java(a, serverAddr) : c(a, serverAddr),
                RUN);
        String ctx = o.both() + "\n" + fabric.diagnostics();
        assertThat(o.clientExit()).as("client exit%n%s", ctx).isZero();
        assertThat(o.serverExit()).as("server exit%n%s", ctx).isZero();
        PingPongResult.check("server", o.serverOutput(), size, iters, ctx);
        PingPongResult.check("client", o.clientOutput(), size, iters, ctx);
    }

    @Test
    void javaClientAgainstCServer() {
        run(false, true, 4096, 1000, "-c");
    }

    @Test
    void cClientAgainstJavaServer() {
        run(true, false, 4096, 1000, "-c");
    }

    @Test
    void javaAgainstJavaWithCompletionEvents() {
        run(true, true, 4096, 500, "-e");
    }

    @Test
    void javaAgainstCWithLargeMessagesAndEvents() {
        run(false, true, 65536, 200, "-e", "-c");
    }

    @Test
    void oneByteMessagesJavaServer() {
        run(true, false, 1, 500);
    }
}
