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
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Test;
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
        try (Proc server = fabric.start(fabric.b(), "echo-server",
                JverbsFabric.javaApp(EndpointApp.class, "echo-server", "7201"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(fabric.a(), "echo-client",
                    JverbsFabric.javaApp(EndpointApp.class, "echo-client", fabric.b().addr(), "7201", "500"))) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output()).contains("OK messages=500").contains("closeFailedPendingReceive=true")
                        .contains("jfrConnect=1 jfrDisconnect=1");
                assertThat(server.output()).as(ctx(server, client))
                        .contains("ACCEPTED private=hello from the endpoint client remote=65536")
                        .contains("EXPOSED holds the client's RDMA WRITE")
                        .contains("OK echoed=500 DISCONNECTED local=false");
            }
        }
    }

    @Test
    void closingAnEndpointUnder64BusyVirtualThreadsEndsThemWithExceptionsNeverACrash() {
        try (Proc server = fabric.start(fabric.b(), "echo-server-2",
                JverbsFabric.javaApp(EndpointApp.class, "echo-server", "7206"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(fabric.a(), "close-during-use",
                    JverbsFabric.javaApp(EndpointApp.class, "close-during-use", fabric.b().addr(), "7206"))) {
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
        try (Proc server = fabric.start(fabric.b(), "hold-server",
                JverbsFabric.javaApp(EndpointApp.class, "hold-server", "7202"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(fabric.a(), "dead-peer-client",
                    JverbsFabric.javaApp(EndpointApp.class, "dead-peer-client", fabric.b().addr(), "7202"))) {
                awaitLine(client, "READY");
                server.close(); // SIGKILL: its daemon announces the QP's end to ours
                int ce = client.waitFor(Duration.ofSeconds(120));
                assertThat(ce).as(ctx(server, client)).isZero();
                Matcher m = Pattern.compile("DEAD ms=(\\d+) local=false").matcher(client.output());
                assertThat(m.find()).as(ctx(server, client)).isTrue();
                long ms = Long.parseLong(m.group(1));
                System.out.println("JverbsEndpointIT: the futures failed " + ms + " ms after READY: " + client.output());
                // the daemon's disconnect grace (1 s) plus the QP's retry budget, with margin for 2 busy cores
                assertThat(ms).as(client.output()).isLessThan(10_000);
            }
        }
    }

    /** Last (the others have the default order, Integer.MAX_VALUE / 2): it takes the link down and up again. */
    @Test
    @Order(Integer.MAX_VALUE)
    void aBlackholedPeerFailsThePendingFuturesWhenTheRetriesRunOut() throws Exception {
        java.nio.file.Path marker = java.nio.file.Files.createTempFile("jverbs-peer-gone", ".marker");
        java.nio.file.Files.delete(marker);
        try (Proc server = fabric.start(fabric.b(), "hold-server-2",
                JverbsFabric.javaApp(EndpointApp.class, "hold-server", "7205"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(fabric.a(), "dead-peer-client-2",
                    JverbsFabric.javaApp(EndpointApp.class, "dead-peer-client", fabric.b().addr(), "7205",
                            marker.toString()))) {
                awaitLine(client, "READY");
                // the peer host drops off the fabric: nothing announces it, only the client's send retries notice
                Sh.check("ip", "-n", fabric.b().ns(), "link", "set", fabric.b().ifname(), "down");
                try {
                    java.nio.file.Files.createFile(marker);
                    int ce = client.waitFor(Duration.ofSeconds(120));
                    assertThat(ce).as(ctx(server, client)).isZero();
                } finally {
                    Sh.check("ip", "-n", fabric.b().ns(), "link", "set", fabric.b().ifname(), "up");
                    java.nio.file.Files.deleteIfExists(marker);
                }
                Matcher m = Pattern.compile("DEAD ms=(\\d+) local=false").matcher(client.output());
                assertThat(m.find()).as(ctx(server, client)).isTrue();
                System.out.println("JverbsEndpointIT: blackholed peer: " + client.output());
                assertThat(Long.parseLong(m.group(1))).as(client.output()).isLessThan(10_000);
            }
        }
    }

    @Test
    void acceptTimesOutAndACloseWakesIt() {
        try (Proc p = fabric.start(fabric.b(), "accept-timeout",
                JverbsFabric.javaApp(EndpointApp.class, "accept-timeout", "7203"))) {
            int e = p.waitFor(Duration.ofSeconds(60));
            assertThat(e).as(p.output()).isZero();
            assertThat(p.output()).contains("TIMED OUT").contains("OK closeWokeAccept");
        }
    }

    @Test
    void rpcTenThousandVirtualThreadsOverAPoolOfEndpoints() {
        try (Proc server = fabric.start(fabric.b(), "rpc-server",
                JverbsFabric.jverbs("rpc-server", "-d", "mrce0", "-p", "7204", "-w", "16", "-s", "512", "-n", "10000"))) {
            awaitLine(server, "listening on service 7204");
            try (Proc client = fabric.start(fabric.a(), "rpc-client",
                    JverbsFabric.jverbs("rpc-client", "-d", "mrce0", "-p", "7204", "-w", "16", "-s", "512", "-t",
                            "10000", "-c", "1", "-e", "4", "--jfr", fabric.b().addr()))) {
                int ce = client.waitFor(Duration.ofSeconds(300));
                int se = server.waitFor(Duration.ofSeconds(60));
                System.out.println("JverbsEndpointIT rpc: " + client.output());
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output()).as(ctx(server, client)).contains("OK calls=10000 ").contains(" bad=0 ")
                        .contains("threads=10000 endpoints=4").contains("pinned=0");
                assertThat(server.output()).contains("OK served=10000");
            }
        }
    }
}
