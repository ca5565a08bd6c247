package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The daemon survives misbehaving clients: an app killed mid-run, garbage and oversized frames on
 * the control socket. After each, a fresh rc_pingpong must pass. Also runs the provider's own
 * error-path test program (mrce_verbs_errors) against a daemon.
 */
@Timeout(300)
class BadInputIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(18700);
    /**
     * The line the daemon logs when it drops a control connection for bad input
     * ({@code ChannelSession.close}); group 1 is the reason.
     */
    private static final Pattern CLOSE_LOG =
            Pattern.compile(".*closing local control connection \\d+ of pid \\d+: protocol error: (.+)$");
    /** The first case of each group of mrce_verbs_errors (queries, MRs, CQs, QP limits and states, ...). */
    private static final String[] VERBS_ERROR_CASES = {
        "query_port_bad_port",
        "reg_mr_remote_write_without_local_write",
        "create_cq_cqe_over_max",
        "create_qp_send_wr_over_max",
        "create_qp",
        "post_send_atomic_two_sges",
        "query_device_ex",
        "create_ah_not_global",
        "create_srq_sge_over_max",
        "create_srq",
        "close_device"
    };

    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("BadInputIT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    private static void assertStillServes() {
        for (Daemon d : fabric.daemons()) {
            assertThat(d.isAlive())
                    .as("mrce-nicd in host %s alive%n%s", d.host().name(), fabric.diagnostics())
                    .isTrue();
        }
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT).assertCompleted(4096, 1000, fabric.diagnostics());
    }

    @Test
    void clientKilledMidRun() {
        int port = PORT.getAndIncrement();
        List<String> cmd =
                List.of("ibv_rc_pingpong", "-d", "mrce0", "-g", "0", "-p", Integer.toString(port), "-n", "100000000");
        Proc server = fabric.startApp(fabric.b(), "rc_pingpong-long-server", cmd);
        try (server) {
            fabric.awaitTcpListening(fabric.b(), port, server, Duration.ofSeconds(20));
            // stdbuf: the client's "remote address" line shows when the QPs are connected and data flows.
            Proc client = fabric.start(
                    fabric.a(),
                    "rc_pingpong-long-client",
                    List.of(
                            "stdbuf",
                            "-oL",
                            Env.bin("mrce-run").toString(),
                            "ibv_rc_pingpong",
                            "-d",
                            "mrce0",
                            "-g",
                            "0",
                            "-p",
                            Integer.toString(port),
                            "-n",
                            "100000000",
                            fabric.b().addr()));
            try (client) {
                boolean connected = Wait.until(
                        Duration.ofSeconds(30), () -> client.output().contains("remote address") || !client.isAlive());
                assertThat(connected && client.isAlive())
                        .as("client connected and running; output:%n%s%n%s", client.output(), fabric.diagnostics())
                        .isTrue();
                Wait.let(Duration.ofMillis(500)); // traffic in flight when it dies
                client.kill();
                assertThat(client.isAlive()).isFalse();
            }
            server.kill(); // its peer is gone; it would wait forever
        }
        assertStillServes();
    }

    @Test
    void garbageOnControlSocket() throws IOException {
        Daemon d = fabric.daemon(fabric.b());
        long logMark = d.logSize();
        try (ControlSocket s = ControlSocket.connect(d.socket())) {
            // len 3 is shorter than the header itself, then bytes that are no frame at all.
            ByteBuffer junk = ByteBuffer.allocate(256);
            for (int i = 0; i < junk.capacity(); i++) {
                junk.put((byte) (i * 37 + 11));
            }
            s.write(ControlSocket.header(3, 0x7777, 1), junk.flip());
            assertThat(s.closedByPeerWithin(Duration.ofSeconds(10)))
                    .as("daemon closes the connection on garbage")
                    .isTrue();
        }
        assertLoggedSince(d, logMark, "(frame len 3 is shorter than the 16-byte header|.*frame length \\(3\\).*)");
        assertStillServes();
    }

    @Test
    void unknownOpOnControlSocket() throws IOException {
        Daemon d = fabric.daemon(fabric.b());
        long logMark = d.logSize();
        try (ControlSocket s = ControlSocket.connect(d.socket())) {
            s.write(ControlSocket.header(ControlSocket.HDR_SIZE + 8, 999, 1), ByteBuffer.allocate(8));
            assertThat(s.closedByPeerWithin(Duration.ofSeconds(10)))
                    .as("daemon closes the connection on an unknown op")
                    .isTrue();
        }
        assertLoggedSince(d, logMark, "unknown op 999 \\(seq 1\\)");
        assertStillServes();
    }

    @Test
    void oversizedFrameOnControlSocket() throws IOException {
        Daemon d = fabric.daemon(fabric.a());
        long logMark = d.logSize();
        try (ControlSocket s = ControlSocket.connect(d.socket())) {
            // A HELLO that claims 1 MiB, far above MRCE_CTRL_MAX_FRAME (4096), and sends 64 KiB of it.
            s.write(ControlSocket.header(1 << 20, ControlSocket.OP_HELLO, 1), ByteBuffer.allocate(64 * 1024));
            assertThat(s.closedByPeerWithin(Duration.ofSeconds(10)))
                    .as("daemon closes the connection on an oversized frame")
                    .isTrue();
        }
        assertLoggedSince(d, logMark, "(?i).*frame length exceeds 4096.*");
        assertStillServes();
    }

    @Test
    void verbsErrorPaths() {
        Path prog = Env.nativeDir().resolve("mrce_verbs_errors");
        assertThat(Files.isExecutable(prog))
                .as("%s built by provider-c's make", prog)
                .isTrue();
        Proc.Result r = fabric.runApp(fabric.a(), "mrce_verbs_errors", RUN_TIMEOUT, List.of(prog.toString()));
        var m = Pattern.compile("(?m)^(\\d+) passed, (\\d+) failed\\s*$").matcher(r.output());
        String context = "output:\n" + r.output() + "\n" + fabric.diagnostics();
        assertThat(m.find()).as("summary line; " + context).isTrue();
        String last = r.output().strip().lines().reduce((x, y) -> y).orElse("");
        assertThat(last)
                .as("the summary is the final line")
                .isEqualTo(m.group(0).strip());
        assertThat(Integer.parseInt(m.group(2))).as("failed; " + context).isZero();
        // Every group of cases ran (the first case of each), and the count is the PASS lines'.
        List<String> passedCases = r.output()
                .lines()
                .filter(l -> l.startsWith("PASS "))
                .map(l -> l.substring(5))
                .toList();
        assertThat(passedCases)
                .as("cases passed; " + context)
                .contains(VERBS_ERROR_CASES)
                .hasSize(Integer.parseInt(m.group(1)));
        assertThat(r.output()).as("no case failed; " + context).doesNotContain("\nFAIL ");
        assertThat(r.exit()).as("exit; " + context).isZero();
        assertStillServes();
    }

    /** The daemon logged, since {@code mark}, that it closed a control connection for {@code reason} (a regex). */
    private static void assertLoggedSince(Daemon d, long mark, String reason) {
        Pattern why = Pattern.compile(reason);
        boolean logged = Wait.until(
                Duration.ofSeconds(5),
                () -> d.logSince(mark).lines().anyMatch(l -> {
                    Matcher m = CLOSE_LOG.matcher(l);
                    return m.matches() && why.matcher(m.group(1)).matches();
                }));
        assertThat(logged)
                .as("mrce-nicd logs that it closed the connection for /%s/; new log:%n%s", reason, d.logSince(mark))
                .isTrue();
    }
}
