package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.Sh;
import io.metaroce.it.jverbs.apps.EndpointApp;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * java-verbs endpoints (io.metaroce.verbs.endpoint) between two namespaces over mrce0: an echo with
 * private data, the remote buffer and the peer-gone event; futures failing when the peer is killed;
 * accept timeout and a listener close that wakes accept; and the RPC example with 10^4 virtual
 * threads over a pool of endpoints, every response checked, with no jdk.VirtualThreadPinned event.
 */
@Timeout(600)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JverbsEndpointIT extends JverbsFabricTest {

    private static String ctx(Proc server, Proc client) {
        return "--- server:\n" + server.output() + "\n--- client:\n" + client.output();
    }

    @Test
    void echoWithPrivateDataRemoteBufferAndThePeerGoneEvent() {
        try (Proc server = fabric.start(
                fabric.b(), "echo-server", JverbsFabric.javaApp(EndpointApp.class, "echo-server", "7201"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "echo-client",
                    JverbsFabric.javaApp(
                            EndpointApp.class, "echo-client", fabric.b().addr(), "7201", "500"))) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output())
                        .contains("OK messages=500")
                        .contains("closeFailedPendingReceive=true")
                        .contains("jfrConnect=1 jfrDisconnect=1");
                assertThat(server.output())
                        .as(ctx(server, client))
                        .contains("ACCEPTED private=hello from the endpoint client remote=65536")
                        .contains("EXPOSED holds the client's RDMA WRITE")
                        .contains("OK echoed=500 DISCONNECTED local=false");
            }
        }
    }

    @Test
    void closingAnEndpointUnder64BusyVirtualThreadsEndsThemWithExceptionsNeverACrash() {
        try (Proc server = fabric.start(
                fabric.b(), "echo-server-2", JverbsFabric.javaApp(EndpointApp.class, "echo-server", "7206"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "close-during-use",
                    JverbsFabric.javaApp(
                            EndpointApp.class, "close-during-use", fabric.b().addr(), "7206"))) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output()).as(ctx(server, client)).contains("OK closedUnder=64");
                assertThat(server.output()).contains("DISCONNECTED local=false");
                System.out.println("JverbsEndpointIT: " + client.output().strip());
            }
        }
    }

    @Test
    void aKilledPeerFailsThePendingFutures() {
        try (Proc server = fabric.start(
                fabric.b(), "hold-server", JverbsFabric.javaApp(EndpointApp.class, "hold-server", "7202"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "dead-peer-client",
                    JverbsFabric.javaApp(
                            EndpointApp.class, "dead-peer-client", fabric.b().addr(), "7202"))) {
                awaitLine(client, "READY");
                server.close(); // SIGKILL: its daemon announces the QP's end to ours
                int ce = client.waitFor(Duration.ofSeconds(120));
                assertThat(ce).as(ctx(server, client)).isZero();
                Matcher m = Pattern.compile("DEAD ms=(\\d+) local=false").matcher(client.output());
                assertThat(m.find()).as(ctx(server, client)).isTrue();
                long ms = Long.parseLong(m.group(1));
                System.out.println(
                        "JverbsEndpointIT: the futures failed " + ms + " ms after READY: " + client.output());
                // the daemon's disconnect grace (1 s) plus the QP's retry budget, with margin for 2 busy cores
                assertThat(ms).as(client.output()).isLessThan(10_000);
            }
        }
    }

    /** The client's RC attributes in the blackhole case: ack timeout 17 (4.096 us * 2^17 = 537 ms), retry_cnt 1. */
    static final int BLACKHOLE_TIMEOUT = 17;

    static final int BLACKHOLE_RETRY = 1;
    /**
     * The daemon's own QP timer: its QP RTO never exceeds twice the largest path RTO, and path
     * RTOs stop doubling at rto_max (200 ms, docs/spec/transport.md section 8).
     */
    static final long DAEMON_QP_RTO_MAX_MS = 2 * 200;
    /** Scheduling margin for a loaded 2-core CI host (JVM, daemon and poller threads). */
    static final long SCHEDULING_MARGIN_MS = 300;

    /**
     * The QP's local ACK timeout as the application set it: (retry_cnt + 1) * 4.096 us * 2^timeout.
     * The daemon fails a QP with IBV_WC_RETRY_EXC_ERR when more than retry_cnt of its own QP
     * timeouts found no progress and this much time went without progress (T-8.4): at the first
     * of its QP timeouts past both. With retry_cnt + 1 QP timeouts (each at most
     * {@link #DAEMON_QP_RTO_MAX_MS}) shorter than the ACK timeout bound, the bound decides, and
     * the daemon's slack is at most one QP timeout more; then the poller wakes (within 1 ms) and
     * fails the futures.
     */
    static long localAckTimeoutMs(int timeout, int retry) {
        return (retry + 1L) * (4096L << timeout) / 1_000_000L;
    }

    /** Last (the others have the default order, Integer.MAX_VALUE / 2): it takes the link down and up again. */
    @Test
    @Order(Integer.MAX_VALUE)
    void aBlackholedPeerFailsThePendingFuturesWithinTheQpsTimeout() throws Exception {
        long ackBoundMs = localAckTimeoutMs(BLACKHOLE_TIMEOUT, BLACKHOLE_RETRY);
        assertThat((BLACKHOLE_RETRY + 1) * DAEMON_QP_RTO_MAX_MS)
                .as("the daemon's timers run out before the ACK bound")
                .isLessThanOrEqualTo(ackBoundMs);
        long limitMs = ackBoundMs + DAEMON_QP_RTO_MAX_MS + SCHEDULING_MARGIN_MS;
        java.nio.file.Path marker = java.nio.file.Files.createTempFile("jverbs-peer-gone", ".marker");
        java.nio.file.Files.delete(marker);
        try (Proc server = fabric.start(
                fabric.b(), "hold-server-2", JverbsFabric.javaApp(EndpointApp.class, "hold-server", "7205"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "dead-peer-client-2",
                    JverbsFabric.javaApp(
                            EndpointApp.class,
                            "dead-peer-client",
                            fabric.b().addr(),
                            "7205",
                            marker.toString(),
                            Integer.toString(BLACKHOLE_TIMEOUT),
                            Integer.toString(BLACKHOLE_RETRY)))) {
                awaitLine(client, "READY");
                // the endpoint's QP got the attributes the bound is computed from
                Matcher rc = Pattern.compile("RC timeout=(\\d+) retry=(\\d+)").matcher(client.output());
                assertThat(rc.find()).as(client.output()).isTrue();
                long configuredMs = localAckTimeoutMs(Integer.parseInt(rc.group(1)), Integer.parseInt(rc.group(2)));
                assertThat(configuredMs).as(client.output()).isEqualTo(ackBoundMs);
                // the peer host drops off the fabric: nothing announces it, only the client's send retries notice
                Sh.check("ip", "-n", fabric.b().ns(), "link", "set", fabric.b().ifname(), "down");
                try {
                    java.nio.file.Files.createFile(marker);
                    int ce = client.waitFor(Duration.ofSeconds(120));
                    assertThat(ce).as(ctx(server, client)).isZero();
                } finally {
                    Sh.check(
                            "ip",
                            "-n",
                            fabric.b().ns(),
                            "link",
                            "set",
                            fabric.b().ifname(),
                            "up");
                    java.nio.file.Files.deleteIfExists(marker);
                }
                Matcher m = Pattern.compile("DEAD ms=(\\d+) local=false").matcher(client.output());
                assertThat(m.find()).as(ctx(server, client)).isTrue();
                long ms = Long.parseLong(m.group(1));
                System.out.println("JverbsEndpointIT: blackholed peer: futures failed " + ms + " ms after the send;"
                        + " local ACK timeout " + ackBoundMs + " ms, limit " + limitMs + " ms: " + client.output());
                assertThat(ms)
                        .as(
                                "ms from the send to the futures' failure; the QP's local ACK timeout is %d ms"
                                        + " (+ %d ms daemon QP timer + %d ms scheduling)%n%s",
                                ackBoundMs, DAEMON_QP_RTO_MAX_MS, SCHEDULING_MARGIN_MS, client.output())
                        .isLessThanOrEqualTo(limitMs);
            }
        }
    }

    @Test
    void acceptTimesOutAndACloseWakesIt() {
        try (Proc p = fabric.start(
                fabric.b(), "accept-timeout", JverbsFabric.javaApp(EndpointApp.class, "accept-timeout", "7203"))) {
            int e = p.waitFor(Duration.ofSeconds(60));
            assertThat(e).as(p.output()).isZero();
            assertThat(p.output()).contains("TIMED OUT").contains("OK closeWokeAccept");
        }
    }

    @Test
    void rpcTenThousandVirtualThreadsOverAPoolOfEndpoints() {
        try (Proc server = fabric.start(
                fabric.b(),
                "rpc-server",
                JverbsFabric.jverbs(
                        "rpc-server", "-d", "mrce0", "-p", "7204", "-w", "16", "-s", "512", "-n", "10008"))) {
            awaitLine(server, "listening on service 7204");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "rpc-client",
                    JverbsFabric.jverbs(
                            "rpc-client",
                            "-d",
                            "mrce0",
                            "-p",
                            "7204",
                            "-w",
                            "16",
                            "-s",
                            "512",
                            "-t",
                            "10000",
                            "-c",
                            "1",
                            "-e",
                            "4",
                            "--warmup",
                            "8",
                            "--jfr",
                            fabric.b().addr()))) {
                int ce = client.waitFor(Duration.ofSeconds(300));
                int se = server.waitFor(Duration.ofSeconds(60));
                System.out.println("JverbsEndpointIT rpc: " + client.output());
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output())
                        .as(ctx(server, client))
                        .contains("OK calls=10000 ")
                        .contains(" bad=0 ")
                        .contains("threads=10000 endpoints=4")
                        .contains("pinned=0");
                // the 8 warm-up calls (made before the JFR recording starts) are served too
                assertThat(server.output()).contains("OK served=10008");
            }
        }
    }
}
