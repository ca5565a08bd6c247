package io.metaroce.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs provider-c/build/mrce_integrity (server in B, client in A). Its last line is
 * {@code mrce_integrity: OK messages=N bytes=B checksum=0x...} or {@code mrce_integrity: FAIL ...}.
 */
final class Integrity {

    static final Pattern OK =
            Pattern.compile("(?m)^mrce_integrity: OK messages=(\\d+) bytes=(\\d+) checksum=(0x[0-9a-fA-F]+)\\s*$");

    private Integrity() {}

    record Side(String role, int exit, String output, boolean ok, long messages, long bytes, String checksum) {}

    record Result(Side server, Side client) {}

    static Path binary() {
        return Env.nativeDir().resolve("mrce_integrity");
    }

    static Result run(NetnsFabric f, int port, int messages, long seed, Duration timeout) {
        return start(f, port, messages, seed, timeout).finish();
    }

    /** {@link #run} with {@code env} ("NAME=VALUE") in both programs' environment. */
    static Result run(NetnsFabric f, int port, int messages, long seed, Duration timeout, List<String> env) {
        return start(f, port, messages, seed, timeout, new int[0], env).finish();
    }

    /**
     * Starts a server/client pair and returns while they run (for faults injected mid-run);
     * {@link Running#finish} waits for both.
     */
    static Running start(NetnsFabric f, int port, int messages, long seed, Duration timeout) {
        return start(f, port, messages, seed, timeout, -1);
    }

    /**
     * {@link #start} with the client paused after {@code pauseAt} completed messages
     * ({@code mrce_integrity -P}) until {@link Running#resume()}: a fault applied while it waits
     * meets the rest of the run, however fast the machine.
     */
    static Running startPaused(NetnsFabric f, int port, int messages, int pauseAt, long seed, Duration timeout) {
        return start(f, port, messages, seed, timeout, pauseAt);
    }

    /**
     * {@link #startPaused} with a pause after each of {@code pauseAts} (increasing) completed
     * messages; {@link Running#awaitPaused(Duration, int)} and {@link Running#resume(int)} name the
     * pause by its index.
     */
    static Running startPaused(NetnsFabric f, int port, int messages, int[] pauseAts, long seed, Duration timeout) {
        return start(f, port, messages, seed, timeout, pauseAts);
    }

    private static Running start(NetnsFabric f, int port, int messages, long seed, Duration timeout, int pauseAt) {
        return start(f, port, messages, seed, timeout, pauseAt < 0 ? new int[0] : new int[] {pauseAt});
    }

    private static Running start(NetnsFabric f, int port, int messages, long seed, Duration timeout, int[] pauseAts) {
        return start(f, port, messages, seed, timeout, pauseAts, List.of());
    }

    private static Running start(
            NetnsFabric f, int port, int messages, long seed, Duration timeout, int[] pauseAts, List<String> env) {
        if (!Files.isExecutable(binary())) {
            throw new AssertionError(binary() + " is missing: provider-c's make builds it");
        }
        List<String> cmd = new ArrayList<>();
        if (!env.isEmpty()) {
            cmd.add("env");
            cmd.addAll(env);
        }
        cmd.addAll(List.of(
                binary().toString(),
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
                Long.toString(timeout.toSeconds())));
        Path goFile = null;
        Proc server = f.startApp(f.b(), "mrce_integrity-server", cmd);
        try {
            f.awaitTcpListening(f.b(), port, server, Duration.ofSeconds(20));
            List<String> clientCmd = new ArrayList<>(cmd);
            if (pauseAts.length > 0) {
                goFile = Files.createTempDirectory("mrceit-integrity-").resolve("go");
                for (int k = 0; k < pauseAts.length; k++) {
                    clientCmd.addAll(List.of("-P", pauseAts[k] + ":" + goFileOf(goFile, k)));
                }
            }
            clientCmd.add(f.appServerAddr());
            return new Running(f, server, f.startApp(f.a(), "mrce_integrity-client", clientCmd), timeout, goFile);
        } catch (IOException e) {
            server.close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
    }

    /** mrce_integrity's line when a client started with {@code -P N:FILE} waits for FILE. */
    private static final Pattern PAUSED = Pattern.compile("(?m)^mrce_integrity: PAUSED after \\d+ messages$");

    /** The go file of pause {@code k} (0: {@code first} itself). */
    static Path goFileOf(Path first, int k) {
        return k == 0 ? first : first.resolveSibling("go" + k);
    }

    /** A pair started by {@link #start} or {@link #startPaused} ({@code goFile} null: not paused). */
    record Running(NetnsFabric fabric, Proc server, Proc client, Duration timeout, Path goFile)
            implements AutoCloseable {

        boolean clientAlive() {
            return client.isAlive();
        }

        /** Waits until the client says it paused; fails with both outputs if it died instead. */
        void awaitPaused(Duration within) {
            boolean paused =
                    Wait.until(within, () -> PAUSED.matcher(client.output()).find() || !client.isAlive());
            if (!paused || !client.isAlive()) {
                throw new AssertionError("mrce_integrity's client did not pause (alive=" + client.isAlive()
                        + ")\n--- client:\n" + client.output() + "\n--- server:\n" + server.output() + "\n"
                        + fabric.diagnostics());
            }
        }

        /** Lets a paused client go on. */
        void resume() {
            resume(0);
        }

        /** Waits until the client says it paused for the {@code count}-th time (from 1). */
        void awaitPaused(Duration within, int count) {
            boolean paused = Wait.until(
                    within, () -> PAUSED.matcher(client.output()).results().count() >= count || !client.isAlive());
            if (!paused || !client.isAlive()) {
                throw new AssertionError("mrce_integrity's client did not pause " + count + " times (alive="
                        + client.isAlive() + ")\n--- client:\n" + client.output() + "\n--- server:\n"
                        + server.output() + "\n" + fabric.diagnostics());
            }
        }

        /** Lets a client paused at its pause {@code k} (from 0) go on. */
        void resume(int k) {
            Path go = goFileOf(goFile, k);
            try {
                Files.writeString(go, "go\n");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create " + go, e);
            }
        }

        /**
         * Waits for the client (it gives up on its own after its -t timeout), then the server. A
         * server left waiting by a failed client is killed after a few seconds and reported with
         * exit -1, so the failure shows the client's own error.
         */
        Result finish() {
            try (this) {
                AppPair.Exits exits = AppPair.await(fabric, server, client, timeout.plusSeconds(30));
                return new Result(
                        parse("server", exits.server(), server.output()),
                        parse("client", exits.client(), client.output()));
            }
        }

        @Override
        public void close() {
            client.close();
            server.close();
            if (goFile != null) {
                try {
                    for (int k = 0; k < 4; k++) {
                        Files.deleteIfExists(goFileOf(goFile, k));
                    }
                    Files.deleteIfExists(goFile.getParent());
                } catch (IOException e) {
                    // a leftover empty temp directory; nothing to fail for
                }
            }
        }
    }

    static Side parse(String role, int exit, String output) {
        Matcher m = OK.matcher(output);
        if (!m.find()) {
            return new Side(role, exit, output, false, -1, -1, null);
        }
        return new Side(
                role,
                exit,
                output,
                true,
                Long.parseLong(m.group(1)),
                Long.parseLong(m.group(2)),
                m.group(3).toLowerCase());
    }
}
