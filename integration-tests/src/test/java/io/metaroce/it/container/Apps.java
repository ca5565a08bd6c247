package io.metaroce.it.container;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Wait;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Client/server applications across a {@link ContainerFabric}, each side in its own container
 * with the provider preloaded: the unmodified {@code ibv_rc_pingpong} and the provider's
 * {@code mrce_integrity}. The server listens on its host's management address; the client is
 * given it. Any other pair runs the same way through {@link #start(ContainerFabric, Node, Node,
 * int, List, List)}.
 */
final class Apps {

    static final Pattern PINGPONG_BYTES =
            Pattern.compile("(?m)^(\\d+) bytes in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) Mbit/sec$");
    static final Pattern PINGPONG_ITERS =
            Pattern.compile("(?m)^(\\d+) iters in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) usec/iter$");
    static final Pattern INTEGRITY_OK =
            Pattern.compile("(?m)^mrce_integrity: OK messages=(\\d+) bytes=(\\d+) checksum=(0x[0-9a-fA-F]+)\\s*$");

    private Apps() {}

    /** A server and its client, running. */
    record Pair(ContainerFabric fabric, NodeProc server, NodeProc client) implements AutoCloseable {

        boolean clientAlive() {
            return client.isAlive();
        }

        /**
         * Waits for the client (up to {@code timeout}), then the server; a server left waiting by a
         * failed client is killed after a few seconds and reported with exit -1.
         */
        Exits finish(Duration timeout) {
            try (this) {
                int clientExit = waitOrExplain(client, server, timeout);
                int serverExit;
                if (clientExit == 0) {
                    serverExit = waitOrExplain(server, client, Duration.ofSeconds(30));
                } else {
                    Integer e = server.tryWait(Duration.ofSeconds(5));
                    serverExit = e == null ? -1 : e;
                }
                return new Exits(serverExit, server.output(), clientExit, client.output());
            }
        }

        private int waitOrExplain(NodeProc p, NodeProc other, Duration timeout) {
            try {
                return p.waitFor(timeout);
            } catch (AssertionError e) {
                throw new AssertionError(
                        e.getMessage() + "\n--- " + other.name() + " output:\n" + other.output() + "\n"
                                + fabric.diagnostics(),
                        e);
            }
        }

        @Override
        public void close() {
            client.close();
            server.close();
        }
    }

    record Exits(int serverExit, String serverOutput, int clientExit, String clientOutput) {
        String context() {
            return "\n--- server (exit " + serverExit + "):\n" + serverOutput + "\n--- client (exit " + clientExit
                    + "):\n" + clientOutput;
        }
    }

    /**
     * Starts {@code serverCmd} in {@code server}, waits until it listens on tcp {@code port}, then
     * starts {@code clientCmd} + the server's management address in {@code client}; both with the
     * provider preloaded.
     */
    static Pair start(
            ContainerFabric f, Node server, Node client, int port, List<String> serverCmd, List<String> clientCmd) {
        NodeProc s = server.startApp(serverCmd.getFirst() + "-server", serverCmd);
        try {
            boolean up = Wait.until(Duration.ofSeconds(20), () -> server.tcpListening(port) || !s.isAlive());
            if (!up || !s.isAlive()) {
                throw new AssertionError(s.name() + " is not listening on tcp " + port + " (alive=" + s.isAlive()
                        + "); its output:\n" + s.output() + "\n" + f.diagnostics());
            }
            List<String> full = new ArrayList<>(clientCmd);
            full.add(server.mgmtAddr());
            return new Pair(f, s, client.startApp(clientCmd.getFirst() + "-client", full));
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
    }

    // --- ibv_rc_pingpong ---

    static List<String> pingPongCmd(int port, String... options) {
        List<String> cmd =
                new ArrayList<>(List.of("ibv_rc_pingpong", "-d", "mrce0", "-g", "0", "-p", Integer.toString(port)));
        cmd.addAll(List.of(options));
        return cmd;
    }

    static Pair startPingPong(ContainerFabric f, Node server, Node client, int port, String... options) {
        List<String> cmd = pingPongCmd(port, options);
        return start(f, server, client, port, cmd, cmd);
    }

    /**
     * Asserts both sides of an rc_pingpong exchanged size * iters * 2 bytes in iters iterations
     * (with -c each side checked the data it received: "invalid data" otherwise).
     */
    static void assertPingPong(Exits e, int size, int iters, String what) {
        assertPingPongSide("server", e.serverExit(), e.serverOutput(), size, iters, what + e.context());
        assertPingPongSide("client", e.clientExit(), e.clientOutput(), size, iters, what + e.context());
    }

    private static void assertPingPongSide(String role, int exit, String out, int size, int iters, String context) {
        assertThat(exit).as("%s exit: %s", role, context).isZero();
        assertThat(out).as("%s output", role).doesNotContain("invalid data");
        Matcher b = PINGPONG_BYTES.matcher(out);
        Matcher i = PINGPONG_ITERS.matcher(out);
        assertThat(b.find() && i.find())
                .as("%s printed its result lines: %s", role, context)
                .isTrue();
        assertThat(Long.parseLong(b.group(1)))
                .as("%s bytes = size * iters * 2", role)
                .isEqualTo((long) size * iters * 2);
        assertThat(Long.parseLong(i.group(1))).as("%s iters", role).isEqualTo(iters);
        assertThat(Double.parseDouble(i.group(3))).as("%s usec/iter", role).isPositive();
    }

    // --- mrce_integrity ---

    /** What one side of mrce_integrity reported: messages, bytes, checksum of every byte. */
    record Integrity(long messages, long bytes, String checksum) {}

    static Pair startIntegrity(
            ContainerFabric f, Node server, Node client, int port, int messages, long seed, Duration timeout) {
        List<String> cmd = integrityCmd(port, messages, seed, timeout);
        return start(f, server, client, port, cmd, cmd);
    }

    private static List<String> integrityCmd(int port, int messages, long seed, Duration timeout) {
        return List.of(
                "mrce_integrity",
                "-d",
                "mrce0",
                "-g",
                "0",
                "-p",
                Integer.toString(port),
                "-n",
                Integer.toString(messages),
                "-S",
                Long.toString(seed),
                "-t",
                Long.toString(timeout.toSeconds()));
    }

    /** mrce_integrity's line when a client started with {@code -P N:FILE} waits for FILE. */
    static final Pattern INTEGRITY_PAUSED = Pattern.compile("(?m)^mrce_integrity: PAUSED after (\\d+) messages$");

    /**
     * A run of mrce_integrity whose client stops after {@code pauseAt} messages (all completed)
     * until {@link #resume()}: a test applies a fault at that point of the application's own
     * progress, never at a wall-clock moment the run may already have passed.
     */
    record PausedRun(Pair pair, Node client, String goFile) {

        /** Waits until the client says it paused; fails with both outputs if it died instead. */
        void awaitPaused(Duration timeout) {
            boolean paused = Wait.until(
                    timeout,
                    () -> INTEGRITY_PAUSED.matcher(pair.client().output()).find()
                            || !pair.client().isAlive());
            if (!paused || !pair.client().isAlive()) {
                throw new AssertionError("mrce_integrity's client did not pause (alive="
                        + pair.client().isAlive()
                        + ")\n--- client:\n" + pair.client().output() + "\n--- server:\n"
                        + pair.server().output()
                        + "\n" + pair.fabric().diagnostics());
            }
        }

        /** Lets the paused client go on (creates its go file in its container). */
        void resume() {
            resume(0);
        }

        /**
         * Waits until the client says it paused for the {@code count}-th time (from 1), with
         * {@link #startIntegrityPaused(ContainerFabric, Node, Node, int, int, int[], long, Duration)}.
         */
        void awaitPaused(Duration timeout, int count) {
            boolean paused = Wait.until(
                    timeout,
                    () -> INTEGRITY_PAUSED
                                            .matcher(pair.client().output())
                                            .results()
                                            .count()
                                    >= count
                            || !pair.client().isAlive());
            if (!paused || !pair.client().isAlive()) {
                throw new AssertionError("mrce_integrity's client did not pause " + count + " times (alive="
                        + pair.client().isAlive()
                        + ")\n--- client:\n" + pair.client().output() + "\n--- server:\n"
                        + pair.server().output()
                        + "\n" + pair.fabric().diagnostics());
            }
        }

        /** Lets the client go on from pause {@code k} (from 0). */
        void resume(int k) {
            String file = goFileOf(goFile, k);
            try {
                Files.writeString(client.file(file), "go\n");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create " + file + " in " + client.name(), e);
            }
        }
    }

    /** The go file of pause {@code k}: {@code first} itself for pause 0. */
    private static String goFileOf(String first, int k) {
        return k == 0 ? first : first + "-" + k;
    }

    /**
     * {@link #startIntegrityPaused(ContainerFabric, Node, Node, int, int, int, long, Duration)}
     * with a pause after each of {@code pauseAts} (increasing) completed messages: a fault at one
     * point of the run, its repair at a later one. {@link PausedRun#awaitPaused(Duration, int)}
     * and {@link PausedRun#resume(int)} name the pauses.
     */
    static PausedRun startIntegrityPaused(
            ContainerFabric f,
            Node server,
            Node client,
            int port,
            int messages,
            int[] pauseAts,
            long seed,
            Duration timeout) {
        String goFile = "/tmp/mrce-integrity-go-" + port;
        List<String> serverCmd = integrityCmd(port, messages, seed, timeout);
        List<String> clientCmd = new ArrayList<>(serverCmd);
        for (int k = 0; k < pauseAts.length; k++) {
            clientCmd.addAll(List.of("-P", pauseAts[k] + ":" + goFileOf(goFile, k)));
        }
        return new PausedRun(start(f, server, client, port, serverCmd, clientCmd), client, goFile);
    }

    /** A run whose client pauses once, after {@code pauseAt} completed messages, until resumed. */
    static PausedRun startIntegrityPaused(
            ContainerFabric f,
            Node server,
            Node client,
            int port,
            int messages,
            int pauseAt,
            long seed,
            Duration timeout) {
        return startIntegrityPaused(f, server, client, port, messages, new int[] {pauseAt}, seed, timeout);
    }

    /**
     * Asserts both sides said OK with {@code messages} messages and equal byte counts and
     * checksums (the server checked every byte against the pattern; the checksum covers them all).
     */
    static Integrity assertIntegrity(Exits e, int messages, String what) {
        Integrity server = parseIntegrity("server", e.serverExit(), e.serverOutput(), what + e.context());
        Integrity client = parseIntegrity("client", e.clientExit(), e.clientOutput(), what + e.context());
        assertThat(server.messages()).as("server messages (%s)", what).isEqualTo(messages);
        assertThat(client.messages()).as("client messages (%s)", what).isEqualTo(messages);
        assertThat(server.bytes())
                .as("server bytes = client bytes (%s)", what)
                .isEqualTo(client.bytes())
                .isPositive();
        assertThat(server.checksum())
                .as("server checksum = client checksum (%s)", what)
                .isEqualTo(client.checksum());
        return server;
    }

    private static Integrity parseIntegrity(String role, int exit, String out, String context) {
        Matcher m = INTEGRITY_OK.matcher(out);
        assertThat(m.find()).as("%s reports OK: %s", role, context).isTrue();
        assertThat(exit).as("%s exit: %s", role, context).isZero();
        return new Integrity(
                Long.parseLong(m.group(1)),
                Long.parseLong(m.group(2)),
                m.group(3).toLowerCase());
    }
}
