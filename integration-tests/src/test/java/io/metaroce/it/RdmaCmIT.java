package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * Unmodified rdma_cm applications across the two namespaces (server in B, client in A, each with
 * its own mrce-nicd), with librdmacm's functions served by libmetaroce-rdmacm.so (preloaded by
 * bin/mrce-run) over the daemons' connection service: rdmacm-utils' {@code rping} (its data
 * checked line by line), {@code ucmatose} with 4 connections, {@code udaddy},
 * {@code rdma_server}/{@code rdma_client} and {@code cmtime}; perftest with {@code -R};
 * {@code qperf -cm1}; and the error paths with the provider's {@code mrce_rdmacm_check} (no
 * listener, a reject with private data, the peer killed after ESTABLISHED, no daemon at the
 * address), the local daemon killed (DEVICE_REMOVAL), 1000 cmtime cycles leaving nothing in
 * either daemon, and rsockets refused cleanly. A server counts as listening once the library
 * reports the daemon's answer to its CM_LISTEN (in the file {@code MRCE_RDMACM_DEBUG=FILE} names),
 * so no test waits on the clock.
 * rping runs under {@code stdbuf -oL}: its stderr lines would otherwise cut its buffered stdout.
 */
@Timeout(900)
class RdmaCmIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(7700);
    private static final Pattern LISTEN_OK = Pattern.compile("listen on service 0x[0-9a-f]+: Success");
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("RdmaCmIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    /** What both sides printed, and how they ended. */
    record Run(String name, int serverExit, int clientExit, String server, String client) {
        String context() {
            return name + "\n--- server:\n" + server + "\n--- client:\n" + client + "\n" + fabric.diagnostics();
        }

        Run assertExitedCleanly() {
            assertThat(clientExit).as("client exit of %s", context()).isZero();
            assertThat(serverExit).as("server exit of %s", context()).isZero();
            return this;
        }
    }

    /** SERVER with the library's debug lines going to FILE (not into the application's output). */
    private static List<String> debug(Path file, List<String> cmd) {
        List<String> full = new ArrayList<>(List.of("env", "MRCE_RDMACM_DEBUG=" + file));
        full.addAll(cmd);
        return full;
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts SERVER in B and waits until its rdma_cm listen is in place (or it died). */
    private static Proc startServer(String name, List<String> server) {
        Path dbg = fabric.logDir().resolve(name + "-" + PORT.get() + "-rdmacm-debug.log");
        Proc p = fabric.startApp(fabric.b(), name + "-server", debug(dbg, server));
        boolean up = Wait.until(Duration.ofSeconds(30),
                () -> LISTEN_OK.matcher(read(dbg)).find() || !p.isAlive());
        if (!up || !p.isAlive()) {
            String out = p.output();
            p.close();
            throw new AssertionError(name + " server not listening (alive=" + p.isAlive() + "):\n" + out + "\n"
                    + read(dbg) + "\n" + fabric.diagnostics());
        }
        return p;
    }

    /** Runs SERVER in B, then CLIENT in A once the server listens; both to completion. */
    private static Run run(String name, List<String> server, List<String> client) {
        Proc s = startServer(name, server);
        Proc c;
        try {
            c = fabric.startApp(fabric.a(), name + "-client", client);
        } catch (RuntimeException | Error e) {
            s.close();
            throw e;
        }
        try (s; c) {
            AppPair.Exits exits = AppPair.await(fabric, s, c, RUN_TIMEOUT);
            return new Run(name, exits.server(), exits.client(), s.output(), c.output());
        }
    }

    private static String port() {
        return Integer.toString(PORT.getAndIncrement());
    }

    private static String serverAddr() {
        return fabric.b().addr();
    }

    /** The text rping puts in ping number {@code n} of its default 64-byte buffer. */
    static String rpingData(int n) {
        StringBuilder sb = new StringBuilder("rdma-ping-" + n + ": ");
        int c = 'A' + n % ('z' - 'A' + 1);
        while (sb.length() < 63) {
            sb.append((char) c);
            c = c == 'z' ? 'A' : c + 1;
        }
        return sb.toString();
    }

    @Test
    void rpingVerifiesThousandPings() {
        String port = port();
        int count = 1000;
        Run r = run("rping",
                List.of("stdbuf", "-oL", "rping", "-s", "-a", serverAddr(), "-p", port, "-v", "-C",
                        Integer.toString(count)),
                List.of("stdbuf", "-oL", "rping", "-c", "-a", serverAddr(), "-p", port, "-v", "-C",
                        Integer.toString(count)))
                .assertExitedCleanly();
        List<String> client = r.client().lines().filter(l -> l.startsWith("ping data: ")).toList();
        List<String> server = r.server().lines().filter(l -> l.startsWith("server ping data: ")).toList();
        assertThat(client).as("client pings of %s", r.context()).hasSize(count);
        assertThat(server).as("server pings of %s", r.context()).hasSize(count);
        for (int i = 0; i < count; i++) {
            assertThat(client.get(i)).as("client ping %d", i).isEqualTo("ping data: " + rpingData(i));
            assertThat(server.get(i)).as("server ping %d", i).isEqualTo("server ping data: " + rpingData(i));
        }
    }

    @Test
    void ucmatoseFourConnections() {
        String port = port();
        Run r = run("ucmatose", List.of("ucmatose", "-c", "4", "-p", port),
                List.of("ucmatose", "-c", "4", "-p", port, "-s", serverAddr())).assertExitedCleanly();
        for (String out : List.of(r.server(), r.client())) {
            assertThat(out).as(r.context()).contains("data transfers complete", "test complete", "return status 0");
        }
        assertThat(r.server()).as(r.context()).contains("disconnected");
    }

    @Test
    void udaddy() {
        // udaddy's -p is the port space: it always uses port 7174
        Run r = run("udaddy", List.of("udaddy"), List.of("udaddy", "-s", serverAddr()))
                .assertExitedCleanly();
        for (String out : List.of(r.server(), r.client())) {
            assertThat(out).as(r.context()).contains("data transfers complete", "return status 0");
        }
    }

    @Test
    void rdmaServerAndClient() {
        String port = port();
        Run r = run("rdma_server", List.of("rdma_server", "-p", port),
                List.of("rdma_client", "-s", serverAddr(), "-p", port)).assertExitedCleanly();
        assertThat(r.server()).as(r.context()).contains("rdma_server: end 0");
        assertThat(r.client()).as(r.context()).contains("rdma_client: end 0");
    }

    @Test
    void cmtime() {
        // cmtime's server serves client after client until stopped
        String port = port();
        Proc server = startServer("cmtime", List.of("cmtime", "-c", "20", "-p", port));
        try (server) {
            Proc.Result c = fabric.runApp(fabric.a(), "cmtime-client", RUN_TIMEOUT,
                    List.of("cmtime", "-s", serverAddr(), "-c", "20", "-p", port));
            String context = c.output() + "\n--- server:\n" + server.output() + "\n" + fabric.diagnostics();
            assertThat(c.exit()).as(context).isZero();
            assertThat(c.output()).as(context).containsPattern("(?m)^connect\\s+:\\s+\\d+\\.\\d+")
                    .containsPattern("(?m)^disconnect\\s+:\\s+\\d+\\.\\d+");
            assertThat(server.isAlive()).as(context).isTrue();
        }
    }

    // ---- perftest -R

    private static final Pattern BW_ROW = Pattern.compile(
            "(?m)^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s+(\\d+\\.\\d+)\\s*$");
    private static final Pattern LAT_ROW = Pattern.compile("(?m)^\\s*2\\s+(\\d+)\\s+(\\d+\\.\\d+)\\s+");

    private static Run perftest(String tool, String... extra) {
        String port = port();
        List<String> cmd = new ArrayList<>(List.of(tool, "-R", "-d", "mrce0", "-x", "0", "-F", "-n", "200", "-p", port));
        cmd.addAll(List.of(extra));
        List<String> client = new ArrayList<>(cmd);
        client.add(serverAddr());
        return run(tool, cmd, client).assertExitedCleanly();
    }

    private static void assertBandwidth(Run r, long iterations) {
        for (String out : List.of(r.client(), r.server())) {
            Matcher m = BW_ROW.matcher(out);
            assertThat(m.find()).as("a bandwidth row in %s", r.context()).isTrue();
            assertThat(Long.parseLong(m.group(2))).as(r.context()).isEqualTo(iterations);
            assertThat(Double.parseDouble(m.group(4))).as(r.context()).isPositive();
        }
    }

    @Test
    void perftestWriteBw() {
        assertBandwidth(perftest("ib_write_bw"), 200);
    }

    @Test
    void perftestSendBwFourQps() {
        assertBandwidth(perftest("ib_send_bw", "-q", "4"), 800);
    }

    @Test
    void perftestReadLat() {
        Run r = perftest("ib_read_lat");
        Matcher m = LAT_ROW.matcher(r.client());
        assertThat(m.find()).as("a latency row in %s", r.context()).isTrue();
        assertThat(Long.parseLong(m.group(1))).as(r.context()).isEqualTo(200);
    }

    /**
     * qperf -cm1 rc_bw and rc_lat. Nothing here may hang on the clock: rc_bw runs a message count
     * ({@code -n}), not a duration, because with {@code -t} each side stops on its own timer and a
     * client whose timer fires later than the server's keeps sending into receives no longer
     * posted (an RNR or retry error fails qperf); rc_lat (whose loop only ends on the timer) keeps
     * {@code -t 1}, harmless there since a ping is only sent once the previous one was answered.
     * qperf's own 5 s timeout for its TCP exchanges becomes 60 s ({@code -to}) for a loaded machine.
     */
    @Test
    void qperfCm() {
        Proc server = fabric.startApp(fabric.b(), "qperf-server", List.of("qperf", "-lto", "60"));
        try (server) {
            fabric.awaitTcpListening(fabric.b(), 19765, server, Duration.ofSeconds(20));
            Proc.Result bw = fabric.runApp(fabric.a(), "qperf-client-bw", RUN_TIMEOUT,
                    List.of("qperf", serverAddr(), "-to", "60", "-n", "1000", "-cm1", "rc_bw"));
            String context = bw.output() + "\n--- server:\n" + server.output() + "\n" + fabric.diagnostics();
            assertThat(bw.exit()).as(context).isZero();
            assertThat(bw.output()).as(context).containsPattern("bw\\s+=\\s+[1-9][0-9.]*\\s+[KMG]B/sec");
            Proc.Result lat = fabric.runApp(fabric.a(), "qperf-client-lat", RUN_TIMEOUT,
                    List.of("qperf", serverAddr(), "-to", "60", "-t", "1", "-cm1", "rc_lat"));
            context = lat.output() + "\n--- server:\n" + server.output() + "\n" + fabric.diagnostics();
            assertThat(lat.exit()).as(context).isZero();
            assertThat(lat.output()).as(context).containsPattern("latency\\s+=\\s+[1-9][0-9.]*\\s+[mun]?s");
        }
    }

    @Test
    void rsocketsFailCleanly() {
        // rsockets are not served: rstream must say so and exit, not crash in librdmacm's internals
        Proc.Result c = fabric.runApp(fabric.a(), "rstream", RUN_TIMEOUT, List.of("rstream", "-s", serverAddr()));
        assertThat(c.exit()).as(c.output()).isNotIn(0, 134, 139);
        assertThat(c.output()).contains("rsockets are not served", "Function not implemented");
    }

    // ---- error paths (mrce_rdmacm_check)

    private static List<String> check(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Env.nativeDir().resolve("mrce_rdmacm_check").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test
    void connectWithoutListenerIsRejected() {
        Proc.Result c = fabric.runApp(fabric.a(), "check-nolistener", RUN_TIMEOUT,
                check("client", serverAddr(), port()));
        assertThat(c.exit()).as(c.output()).isZero();
        // the IB CM's REJ reason "invalid service id", as on RoCE hardware
        assertThat(c.output()).contains("EVENT RDMA_CM_EVENT_REJECTED status 8 ");
    }

    @Test
    void connectWithoutDaemonIsUnreachable() {
        // 198.18.0.3 is on B's link but nobody answers there: the daemon's connect timeout
        Proc.Result c = fabric.runApp(fabric.a(), "check-nodaemon", RUN_TIMEOUT,
                check("client", "198.18.0.3", port()));
        assertThat(c.exit()).as(c.output()).isZero();
        assertThat(c.output()).containsPattern("EVENT RDMA_CM_EVENT_UNREACHABLE status -\\d+");
    }

    @Test
    void noRouteIsAddrError() {
        // 203.0.113.0/24 (TEST-NET-3): no route from A's address in its namespace
        Proc.Result c = fabric.runApp(fabric.a(), "check-noroute", RUN_TIMEOUT, check("client", "203.0.113.9", port()));
        assertThat(c.exit()).as(c.output()).isZero();
        assertThat(c.output()).contains("EVENT RDMA_CM_EVENT_ADDR_ERROR status -101 ", "no route to 203.0.113.9");
    }

    @Test
    void rejectCarriesPrivateData() {
        String port = port();
        Run r = run("check-reject", check("server", port, "reject"), check("client", serverAddr(), port))
                .assertExitedCleanly();
        assertThat(r.server()).as(r.context()).contains("EVENT RDMA_CM_EVENT_CONNECT_REQUEST status 0 pdata hello",
                "REJECTED-SENT");
        assertThat(r.client()).as(r.context()).contains("EVENT RDMA_CM_EVENT_REJECTED status 28 pdata go-away");
    }

    @Test
    void acceptCarriesPrivateDataAndDisconnectReachesThePeer() {
        String port = port();
        Run r = run("check-accept", check("server", port, "accept"), check("client", serverAddr(), port))
                .assertExitedCleanly();
        assertThat(r.server()).as(r.context()).containsSubsequence(
                "EVENT RDMA_CM_EVENT_CONNECT_REQUEST status 0 pdata hello", "EVENT RDMA_CM_EVENT_ESTABLISHED",
                "EVENT RDMA_CM_EVENT_DISCONNECTED status 0", "DONE");
        assertThat(r.client()).as(r.context()).containsSubsequence("EVENT RDMA_CM_EVENT_ADDR_RESOLVED",
                "EVENT RDMA_CM_EVENT_ROUTE_RESOLVED", "EVENT RDMA_CM_EVENT_ESTABLISHED status 0 pdata welcome",
                "EVENT RDMA_CM_EVENT_DISCONNECTED status 0", "DONE");
    }

    @Test
    void peerKilledAfterEstablishedIsDisconnected() {
        String port = port();
        Proc s = startServer("check-kill", check("server", port, "accept"));
        try (s) {
            Proc c = fabric.startApp(fabric.a(), "check-kill-client", check("client", serverAddr(), port, "hold"));
            try (c) {
                boolean holding = Wait.until(Duration.ofSeconds(30),
                        () -> c.output().contains("HOLDING") || !c.isAlive());
                assertThat(holding && c.isAlive()).as("client holding: %s\n--- server:\n%s", c.output(), s.output())
                        .isTrue();
                c.kill();
            }
            int exit = s.waitFor(Duration.ofSeconds(60));
            assertThat(exit).as(s.output()).isZero();
            assertThat(s.output()).containsSubsequence("EVENT RDMA_CM_EVENT_ESTABLISHED",
                    "EVENT RDMA_CM_EVENT_DISCONNECTED status 0", "DONE");
        }
    }

    @Test
    void localDaemonKilledIsDeviceRemovalAndPeerDisconnected() {
        // a fabric of its own: its daemon in A is killed
        try (TwoHostFabric f = TwoHostFabric.direct("RdmaCmIT-daemonkill", 1500)) {
            List<Daemon> daemons = f.startDaemons();
            String port = port();
            Path dbg = f.logDir().resolve("check-daemonkill-rdmacm-debug.log");
            Proc s = f.startApp(f.b(), "check-daemonkill-server", debug(dbg, check("server", port, "accept")));
            try (s) {
                boolean up = Wait.until(Duration.ofSeconds(30), () -> s.output().contains("LISTENING") || !s.isAlive());
                assertThat(up && s.isAlive()).as(s.output()).isTrue();
                Proc c = f.startApp(f.a(), "check-daemonkill-client", check("client", f.b().addr(), port, "hold"));
                try (c) {
                    boolean holding = Wait.until(Duration.ofSeconds(30),
                            () -> c.output().contains("HOLDING") || !c.isAlive());
                    assertThat(holding && c.isAlive()).as("client holding: %s", c.output()).isTrue();
                    daemons.get(0).proc().kill();
                    int exit = c.waitFor(Duration.ofSeconds(60));
                    assertThat(exit).as(c.output()).isZero();
                    assertThat(c.output()).containsSubsequence("HOLDING", "EVENT RDMA_CM_EVENT_DEVICE_REMOVAL", "DONE");
                }
                // B's daemon loses A's (the connection manager's peer timeout): the watch ends
                int exit = s.waitFor(Duration.ofSeconds(60));
                assertThat(exit).as(s.output()).isZero();
                assertThat(s.output()).containsSubsequence("EVENT RDMA_CM_EVENT_ESTABLISHED",
                        "EVENT RDMA_CM_EVENT_DISCONNECTED status 0", "DONE");
            }
        }
    }

    // ---- churn: 1000 connect/disconnect cycles leave nothing in either daemon

    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode objects(NetnsFabric.Host h) {
        Proc.Result r = fabric.exec(h, Duration.ofSeconds(30), Env.bin("mrce-ctl").toString(), "objects", "--json");
        assertThat(r.ok()).as("mrce-ctl objects: " + r.output()).isTrue();
        try {
            return JSON.readTree(r.output());
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + r.output(), e);
        }
    }

    @Test
    void thousandCmtimeCyclesLeaveNothingBehind() {
        List<NetnsFabric.Host> hosts = List.of(fabric.a(), fabric.b());
        long[] fdsBefore = new long[2];
        for (int k = 0; k < 2; k++) {
            fdsBefore[k] = objects(hosts.get(k)).path("daemon").path("openFds").asLong();
        }
        String port = port();
        Proc server = startServer("cmtime-churn", List.of("cmtime", "-c", "250", "-p", port));
        try (server) {
            for (int round = 0; round < 4; round++) {
                Proc.Result c = fabric.runApp(fabric.a(), "cmtime-churn-client", RUN_TIMEOUT,
                        List.of("cmtime", "-s", serverAddr(), "-c", "250", "-p", port));
                assertThat(c.exit()).as("round %d: %s\n--- server:\n%s", round, c.output(), server.output()).isZero();
                assertThat(c.output()).containsPattern("(?m)^connect\\s+:");
            }
            server.stop(Duration.ofSeconds(10));
        }
        for (int k = 0; k < 2; k++) {
            NetnsFabric.Host h = hosts.get(k);
            boolean none = Wait.until(Duration.ofSeconds(30), () -> objects(h).path("sessions").asInt() == 0);
            JsonNode o = objects(h);
            assertThat(none).as("daemon of %s reclaimed every session: %s", h.name(), o).isTrue();
            assertThat(o.path("totals").path("qps").asInt()).as(h.name() + " QPs").isZero();
            assertThat(o.path("totals").path("cqs").asInt()).as(h.name() + " CQs").isZero();
            assertThat(o.path("totals").path("pds").asInt()).as(h.name() + " PDs").isZero();
            // a few fds of the daemon's own may come and go (logs, timers)
            assertThat(o.path("daemon").path("openFds").asLong()).as(h.name() + " daemon fds")
                    .isLessThanOrEqualTo(fdsBefore[k] + 8);
        }
    }
}
