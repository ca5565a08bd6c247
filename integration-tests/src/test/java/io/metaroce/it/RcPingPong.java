package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs the unmodified {@code ibv_rc_pingpong -d mrce0 -g 0} with the server in host B and the client
 * in host A, and reads what both print:
 *
 * <pre>
 *   8192000 bytes in 0.05 seconds = 1310.72 Mbit/sec
 *   1000 iters in 0.05 seconds = 50.00 usec/iter
 * </pre>
 *
 * (rc_pingpong: bytes = size * iters * 2, Mbit/sec = bytes * 8 / usec, usec/iter = usec / iters.)
 */
final class RcPingPong {

    static final Pattern BYTES =
            Pattern.compile("(?m)^(\\d+) bytes in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) Mbit/sec$");
    static final Pattern ITERS =
            Pattern.compile("(?m)^(\\d+) iters in (\\d+\\.\\d+) seconds = (\\d+\\.\\d+) usec/iter$");

    private RcPingPong() {}

    /** What one side printed. */
    record Side(
            String role,
            int exit,
            String output,
            long bytes,
            double seconds,
            double mbitPerSec,
            long iters,
            double itersSeconds,
            double usecPerIter) {

        /** Asserts this side exchanged size * iters * 2 bytes in iters iterations, with sane numbers. */
        void assertCompleted(int size, int iters, String context) {
            assertThat(exit)
                    .as("%s exit status; output:%n%s%n%s", role, output, context)
                    .isZero();
            // -c makes rc_pingpong check the received buffer and print "invalid data" on a mismatch.
            assertThat(output).as("%s output", role).doesNotContain("invalid data");
            assertThat(this.iters).as("%s iters", role).isEqualTo(iters);
            assertThat(bytes).as("%s bytes = size * iters * 2", role).isEqualTo((long) size * iters * 2);
            // Printed with two decimals: a tiny rate (1-byte messages) shows as 0.00.
            assertThat(mbitPerSec).as("%s Mbit/sec", role).isNotNegative();
            assertThat(usecPerIter).as("%s usec/iter", role).isPositive();
            assertThat(itersSeconds)
                    .as("%s: both lines report the same elapsed time", role)
                    .isEqualTo(seconds);
            // Both rates come from the same elapsed time: Mbit/sec * usec/iter * iters = bytes * 8,
            // up to the printed rounding (two decimals).
            if (mbitPerSec >= 1 && usecPerIter >= 1) {
                double product = mbitPerSec * usecPerIter * iters;
                assertThat(product)
                        .as("%s: Mbit/sec * usec/iter * iters vs bytes * 8", role)
                        .isCloseTo(bytes * 8.0, org.assertj.core.data.Percentage.withPercentage(3));
            }
        }
    }

    record Result(Side server, Side client) {
        void assertCompleted(int size, int iters, String context) {
            server.assertCompleted(size, iters, context);
            client.assertCompleted(size, iters, context);
        }
    }

    /** Runs one server/client pair on tcp port {@code port} with the given extra options. */
    static Result run(NetnsFabric f, int port, Duration timeout, String... options) {
        return start(f, port, options).finish(timeout);
    }

    /**
     * Starts a server/client pair on tcp port {@code port} and returns while they run (for faults
     * injected mid-run); {@link Running#finish} waits for both.
     */
    static Running start(NetnsFabric f, int port, String... options) {
        List<String> cmd =
                new ArrayList<>(List.of("ibv_rc_pingpong", "-d", "mrce0", "-g", "0", "-p", Integer.toString(port)));
        cmd.addAll(List.of(options));
        Proc server = f.startApp(f.b(), "rc_pingpong-server", cmd);
        try {
            f.awaitTcpListening(f.b(), port, server, Duration.ofSeconds(20));
            List<String> clientCmd = new ArrayList<>(cmd);
            clientCmd.add(f.appServerAddr());
            return new Running(f, server, f.startApp(f.a(), "rc_pingpong-client", clientCmd));
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
    }

    /** A pair started by {@link #start}. */
    record Running(NetnsFabric fabric, Proc server, Proc client) implements AutoCloseable {

        boolean clientAlive() {
            return client.isAlive();
        }

        /**
         * Waits for the client (up to {@code timeout}), then the server. A server left waiting by a
         * failed client is killed after a few seconds and reported with exit -1, so the failure
         * shows the client's own error.
         */
        Result finish(Duration timeout) {
            try (this) {
                AppPair.Exits exits = AppPair.await(fabric, server, client, timeout);
                return new Result(
                        parse("server", exits.server(), server.output()),
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
        Matcher b = BYTES.matcher(output);
        Matcher i = ITERS.matcher(output);
        if (!b.find() || !i.find()) {
            return new Side(role, exit, output, -1, -1, -1, -1, -1, -1);
        }
        return new Side(
                role,
                exit,
                output,
                Long.parseLong(b.group(1)),
                Double.parseDouble(b.group(2)),
                Double.parseDouble(b.group(3)),
                Long.parseLong(i.group(1)),
                Double.parseDouble(i.group(2)),
                Double.parseDouble(i.group(3)));
    }
}
