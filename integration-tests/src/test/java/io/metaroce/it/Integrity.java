package io.metaroce.it;

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

    static final Pattern OK = Pattern.compile(
            "(?m)^mrce_integrity: OK messages=(\\d+) bytes=(\\d+) checksum=(0x[0-9a-fA-F]+)\\s*$");

    private Integrity() {}

    record Side(String role, int exit, String output, boolean ok, long messages, long bytes, String checksum) {}

    record Result(Side server, Side client) {}

    static Path binary() {
        return Env.nativeDir().resolve("mrce_integrity");
    }

    static Result run(NetnsFabric f, int port, int messages, long seed, Duration timeout) {
        return start(f, port, messages, seed, timeout).finish();
    }

    /**
     * Starts a server/client pair and returns while they run (for faults injected mid-run);
     * {@link Running#finish} waits for both.
     */
    static Running start(NetnsFabric f, int port, int messages, long seed, Duration timeout) {
        if (!Files.isExecutable(binary())) {
            throw new AssertionError(binary() + " is missing: provider-c's make builds it");
        }
        List<String> cmd = new ArrayList<>(List.of(binary().toString(), "-d", "mrce0", "-g", "0",
                "-p", Integer.toString(port), "-n", Integer.toString(messages), "-S", Long.toString(seed),
                "-t", Long.toString(timeout.toSeconds())));
        Proc server = f.startApp(f.b(), "mrce_integrity-server", cmd);
        try {
            f.awaitTcpListening(f.b(), port, server, Duration.ofSeconds(20));
            List<String> clientCmd = new ArrayList<>(cmd);
            clientCmd.add(f.appServerAddr());
            return new Running(f, server, f.startApp(f.a(), "mrce_integrity-client", clientCmd), timeout);
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
    }

    /** A pair started by {@link #start}. */
    record Running(NetnsFabric fabric, Proc server, Proc client, Duration timeout) implements AutoCloseable {

        boolean clientAlive() {
            return client.isAlive();
        }

        /**
         * Waits for the client (it gives up on its own after its -t timeout), then the server. A
         * server left waiting by a failed client is killed after a few seconds and reported with
         * exit -1, so the failure shows the client's own error.
         */
        Result finish() {
            try (this) {
                AppPair.Exits exits = AppPair.await(fabric, server, client, timeout.plusSeconds(30));
                return new Result(parse("server", exits.server(), server.output()),
                        parse("client", exits.client(), client.output()));
            }
        }

        @Override
        public void close() {
            client.close();
            server.close();
        }
    }

    static Side parse(String role, int exit, String output) {
        Matcher m = OK.matcher(output);
        if (!m.find()) {
            return new Side(role, exit, output, false, -1, -1, null);
        }
        return new Side(role, exit, output, true, Long.parseLong(m.group(1)), Long.parseLong(m.group(2)),
                m.group(3).toLowerCase());
    }
}
