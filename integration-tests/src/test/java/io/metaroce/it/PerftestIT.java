package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Unmodified verbs applications across the two namespaces (server in B, client in A, each with its
 * own mrce-nicd): the rdma-core examples {@code ibv_rc_pingpong}, {@code ibv_ud_pingpong} and
 * {@code ibv_srq_pingpong}, and perftest's {@code ib_write_bw}, {@code ib_read_bw},
 * {@code ib_send_bw}, {@code ib_atomic_bw}, {@code ib_write_lat}, {@code ib_read_lat} and
 * {@code ib_send_lat} with {@code -d mrce0 -x 0}: each plain, with {@code -a} (every size from 2
 * B to 8 MiB) where the tool has it, the bandwidth tools with {@code -q 4}, and with {@code -e}
 * (completion events) where the tool has it. Every run must exit 0 and print its result lines
 * with the sizes and iteration counts asked for and a non-zero rate. Iteration counts are small
 * (perftest's minimum of 5 with {@code -a}) to keep the class within a few minutes.
 */
@Timeout(1800)
class PerftestIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(180);
    private static final AtomicInteger PORT = new AtomicInteger(19100);
    private static final int ITERS = 200;
    private static final int ITERS_ALL_SIZES = 5;
    /** Package-private: {@link PerftestIpv6IT} runs the same tests on its own fabric. */
    static TwoHostFabric fabric;

    /** A perftest bandwidth row: #bytes #iterations BW peak BW average MsgRate. */
    private static final Pattern BW_ROW =
            Pattern.compile("(?m)^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s*$");
    /**
     * A perftest latency row: #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9
     * (perftest prints t_stdev as -nan now and then with few iterations).
     */
    private static final Pattern LAT_ROW =
            Pattern.compile("(?m)^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d+|inf)\\s+(\\d+\\.\\d+|inf)\\s+(\\d+\\.\\d+|inf)"
                    + "\\s+(\\d+\\.\\d+|inf)\\s+\\S+\\s+(\\d+\\.\\d+|inf)\\s+(\\d+\\.\\d+|inf)\\s*$");
    /**
     * perftest's warning that it could not calibrate its clock (a loaded machine): an "inf"
     * latency or a 0 rate is then the tool's failure, not the transfer's ({@link PerftestClock}).
     */
    private static final String CLOCK_WARNING = PerftestClock.WARNING;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("PerftestIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    /** What both sides of one run printed, and how they ended. */
    record Run(String tool, List<String> options, int serverExit, int clientExit, String server, String client) {
        String context() {
            return tool + " " + String.join(" ", options) + "\n--- server:\n" + server + "\n--- client:\n" + client
                    + "\n" + fabric.diagnostics();
        }

        void assertExitedCleanly() {
            assertThat(clientExit).as("client exit of %s", context()).isZero();
            assertThat(serverExit).as("server exit of %s", context()).isZero();
        }
    }

    /** Runs TOOL with OPTIONS as server in B and client in A on a fresh TCP port. */
    private static Run run(String tool, List<String> options) {
        int port = PORT.getAndIncrement();
        List<String> cmd = new ArrayList<>();
        cmd.add(tool);
        cmd.addAll(options);
        cmd.addAll(List.of("-p", Integer.toString(port)));
        Proc server = fabric.startApp(fabric.b(), tool + "-server", cmd);
        Proc client;
        try {
            fabric.awaitTcpListening(fabric.b(), port, server, Duration.ofSeconds(20));
            List<String> clientCmd = new ArrayList<>(cmd);
            clientCmd.add(fabric.appServerAddr());
            client = fabric.startApp(fabric.a(), tool + "-client", clientCmd);
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
        try (server;
                client) {
            AppPair.Exits exits = AppPair.await(fabric, server, client, RUN_TIMEOUT);
            return new Run(tool, options, exits.server(), exits.client(), server.output(), client.output());
        }
    }

    // ---- rdma-core examples: "N bytes in S seconds = R Mbit/sec", "I iters in S seconds = U usec/iter"

    private static void pingPong(String tool, int size, int iters, String... extra) {
        List<String> options = new ArrayList<>(
                List.of("-d", "mrce0", "-g", "0", "-s", Integer.toString(size), "-n", Integer.toString(iters)));
        options.addAll(List.of(extra));
        Run r = run(tool, options);
        RcPingPong.parse("server", r.serverExit(), r.server()).assertCompleted(size, iters, r.context());
        RcPingPong.parse("client", r.clientExit(), r.client()).assertCompleted(size, iters, r.context());
    }

    @Test
    void rcPingPong() {
        pingPong("ibv_rc_pingpong", 4096, ITERS);
        pingPong("ibv_rc_pingpong", 4096, ITERS, "-e");
    }

    @Test
    void udPingPong() {
        // UD messages fit the path MTU (1024 on a 1500-byte link).
        pingPong("ibv_ud_pingpong", 512, ITERS);
        pingPong("ibv_ud_pingpong", 512, ITERS, "-e");
    }

    @Test
    void srqPingPong() {
        pingPong("ibv_srq_pingpong", 4096, 50, "-q", "4");
        pingPong("ibv_srq_pingpong", 4096, 50, "-q", "4", "-e");
    }

    // ---- perftest

    private static List<String> perftest(int iters, String... extra) {
        List<String> o = new ArrayList<>(List.of("-d", "mrce0", "-x", "0", "-F", "-n", Integer.toString(iters)));
        o.addAll(List.of(extra));
        return o;
    }

    /** Sizes perftest's -a runs: 2, 4, ..., 8 MiB. */
    private static List<Long> allSizes() {
        List<Long> sizes = new ArrayList<>();
        for (long s = 2; s <= 1L << 23; s <<= 1) {
            sizes.add(s);
        }
        return sizes;
    }

    /**
     * A bandwidth run: the client's rows have the sizes asked for, the iterations asked for (times
     * the number of QPs: perftest counts them all) and a non-zero message rate (the byte rate of the
     * big sizes is non-zero too) unless perftest said it could not calibrate its clock; server
     * rows, where the tool prints them, have the same iteration count.
     */
    private static void bw(String tool, List<Long> sizes, int perQp, String... extra) {
        List<String> options = List.of(extra);
        int qps = options.contains("-q") ? Integer.parseInt(options.get(options.indexOf("-q") + 1)) : 1;
        int iters = perQp * qps;
        Run r = run(tool, perftest(perQp, extra));
        r.assertExitedCleanly();
        List<Long> seen = new ArrayList<>();
        Matcher m = BW_ROW.matcher(r.client());
        while (m.find()) {
            long bytes = Long.parseLong(m.group(1));
            seen.add(bytes);
            assertThat(Long.parseLong(m.group(2)))
                    .as("iterations of the %d-byte row; %s", bytes, r.context())
                    .isEqualTo(iters);
            double rate = Double.parseDouble(m.group(5));
            if (PerftestClock.unmeasured(rate, r.client())) {
                continue; // perftest had no clock rate to turn its cycle counts into rates
            }
            assertThat(rate)
                    .as("message rate of the %d-byte row; %s", bytes, r.context())
                    .isPositive();
            if (bytes >= 65536) {
                assertThat(Double.parseDouble(m.group(4)))
                        .as("average BW of the %d-byte row; %s", bytes, r.context())
                        .isPositive();
            }
        }
        assertThat(seen).as("sizes reported; %s", r.context()).containsExactlyElementsOf(sizes);
        Matcher s = BW_ROW.matcher(r.server());
        while (s.find()) {
            assertThat(Long.parseLong(s.group(2)))
                    .as("server iterations; %s", r.context())
                    .isEqualTo(iters);
        }
    }

    /**
     * A latency run: the client reports the sizes asked for, ITERS iterations, 0 < t_min <= t_avg;
     * so does the server where the tool has it print results (READ's passive side does not).
     */
    private static void lat(String tool, List<Long> sizes, int iters, String... extra) {
        Run r = run(tool, perftest(iters, extra));
        r.assertExitedCleanly();
        for (String side : List.of(r.client(), r.server())) {
            if (side == r.server() && !LAT_ROW.matcher(side).find()) {
                continue;
            }
            List<Long> seen = new ArrayList<>();
            Matcher m = LAT_ROW.matcher(side);
            while (m.find()) {
                long bytes = Long.parseLong(m.group(1));
                seen.add(bytes);
                assertThat(Long.parseLong(m.group(2)))
                        .as("iterations of the %d-byte row; %s", bytes, r.context())
                        .isEqualTo(iters);
                if (m.group(3).equals("inf") || m.group(6).equals("inf")) {
                    assertThat(side)
                            .as(
                                    "an 'inf' time in the %d-byte row comes with perftest's clock warning; %s",
                                    bytes, r.context())
                            .contains(CLOCK_WARNING);
                    continue;
                }
                double tMin = Double.parseDouble(m.group(3));
                double tAvg = Double.parseDouble(m.group(6));
                assertThat(tMin)
                        .as("t_min of the %d-byte row; %s", bytes, r.context())
                        .isPositive();
                assertThat(tAvg)
                        .as("t_avg of the %d-byte row; %s", bytes, r.context())
                        .isGreaterThanOrEqualTo(tMin);
            }
            assertThat(seen).as("sizes reported; %s", r.context()).containsExactlyElementsOf(sizes);
        }
    }

    @Test
    void writeBw() {
        bw("ib_write_bw", List.of(65536L), ITERS);
        bw("ib_write_bw", List.of(65536L), ITERS, "-q", "4");
        bw("ib_write_bw", allSizes(), ITERS_ALL_SIZES, "-a");
    }

    @Test
    void readBw() {
        bw("ib_read_bw", List.of(65536L), ITERS);
        bw("ib_read_bw", List.of(65536L), ITERS, "-q", "4");
        bw("ib_read_bw", List.of(65536L), ITERS, "-e");
        bw("ib_read_bw", allSizes(), ITERS_ALL_SIZES, "-a");
    }

    @Test
    void sendBw() {
        bw("ib_send_bw", List.of(65536L), ITERS);
        bw("ib_send_bw", List.of(65536L), ITERS, "-q", "4");
        bw("ib_send_bw", List.of(65536L), ITERS, "-e");
        bw("ib_send_bw", allSizes(), ITERS_ALL_SIZES, "-a");
    }

    @Test
    void atomicBw() {
        // 8-byte atomics: no -a; the default is FETCH_AND_ADD, -A CMP_AND_SWAP the other one.
        bw("ib_atomic_bw", List.of(8L), ITERS);
        bw("ib_atomic_bw", List.of(8L), ITERS, "-A", "CMP_AND_SWAP");
        bw("ib_atomic_bw", List.of(8L), ITERS, "-q", "4");
        bw("ib_atomic_bw", List.of(8L), ITERS, "-e");
    }

    @Test
    void writeLat() {
        lat("ib_write_lat", List.of(2L), ITERS);
        lat("ib_write_lat", allSizes(), ITERS_ALL_SIZES, "-a");
    }

    @Test
    void readLat() {
        lat("ib_read_lat", List.of(2L), ITERS);
        lat("ib_read_lat", List.of(2L), ITERS, "-e");
        lat("ib_read_lat", allSizes(), ITERS_ALL_SIZES, "-a");
    }

    @Test
    void sendLat() {
        lat("ib_send_lat", List.of(2L), ITERS);
        lat("ib_send_lat", List.of(2L), ITERS, "-e");
        lat("ib_send_lat", allSizes(), ITERS_ALL_SIZES, "-a");
    }
}
