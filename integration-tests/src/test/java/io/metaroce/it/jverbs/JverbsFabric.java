package io.metaroce.it.jverbs;

import io.metaroce.it.Env;
import io.metaroce.it.NetnsFabric;
import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Two hosts for the java-verbs tests: namespaces A and B (named, reaped and torn down by
 * {@link NetnsFabric}) joined by a veth link (198.18.0.1/24 - 198.18.0.2/24, no route out), an
 * mrce-nicd in each, and the processes the test starts there (C programs through
 * {@code bin/mrce-run}, Java ones through {@code bin/jverbs} or the provider-preloaded JVM of
 * {@link #javaApp}).
 */
final class JverbsFabric extends NetnsFabric {

    private static final Duration LISTEN_TIMEOUT = Duration.ofSeconds(30);

    private final int mtu;

    /** Builds the two namespaces and the link (MTU {@code mtu}); does not start daemons. */
    private JverbsFabric(String testName, int mtu) {
        super(testName);
        this.mtu = mtu;
        this.a = new Host("A", ns("a"), "veth-a", "198.18.0.1");
        this.b = new Host("B", ns("b"), "veth-b", "198.18.0.2");
        create();
    }

    /** The fabric with mrce-nicd serving in both hosts. */
    static JverbsFabric withDaemons(String testName, int mtu) {
        JverbsFabric f = new JverbsFabric(testName, mtu);
        try {
            f.startDaemons();
        } catch (RuntimeException | Error e) {
            f.close();
            throw e;
        }
        return f;
    }

    @Override
    protected void build() {
        addNamespace(a.ns());
        addNamespace(b.ns());
        Sh.check(
                "ip",
                "link",
                "add",
                a.ifname(),
                "netns",
                a.ns(),
                "mtu",
                str(mtu),
                "type",
                "veth",
                "peer",
                "name",
                b.ifname(),
                "netns",
                b.ns(),
                "mtu",
                str(mtu));
        addressUp(a, 24);
        addressUp(b, 24);
    }

    /** {@code bin/jverbs ARGS}: a java-verbs example with the provider preloaded. */
    static List<String> jverbs(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Env.bin("jverbs").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** {@code bin/mrce-run ARGS}: an unmodified C program with the provider preloaded. */
    static List<String> cProgram(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Env.bin("mrce-run").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /**
     * A test program of this folder (a class with a main) in a JVM with the provider preloaded,
     * on java-verbs' classes and these tests' classes.
     */
    static List<String> javaApp(Class<?> main, String... args) {
        Path r = Env.root();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = r.resolve("java-verbs/target/classes") + ":" + r.resolve("integration-tests/target/test-classes");
        List<String> cmd = new ArrayList<>(List.of(
                Env.bin("mrce-run").toString(),
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-XX:+UseSerialGC",
                "-cp",
                cp,
                main.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Exit statuses and outputs of a server/client pair. */
    record Outcome(int serverExit, String serverOutput, int clientExit, String clientOutput) {
        String both() {
            return "--- server (exit " + serverExit + "):\n" + serverOutput + "\n--- client (exit " + clientExit
                    + "):\n" + clientOutput;
        }
    }

    /**
     * Starts {@code serverCmd} in B, waits until it listens on TCP {@code port}, runs
     * {@code clientCmd} in A to completion, then waits for the server (a server left behind by a
     * failed client is killed after 10 s and reported with exit -1).
     */
    Outcome runPair(int port, List<String> serverCmd, List<String> clientCmd, Duration timeout) {
        try (Proc server = start(b, "server", serverCmd)) {
            awaitTcpListening(b, port, server, LISTEN_TIMEOUT);
            try (Proc client = start(a, "client", clientCmd)) {
                int ce = client.waitFor(timeout);
                int se;
                try {
                    se = server.waitFor(ce == 0 ? Duration.ofSeconds(60) : Duration.ofSeconds(10));
                } catch (AssertionError e) {
                    se = -1;
                }
                return new Outcome(se, server.output(), ce, client.output());
            }
        }
    }
}
