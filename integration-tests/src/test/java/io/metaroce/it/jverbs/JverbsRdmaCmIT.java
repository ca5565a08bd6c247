package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.Wait;
import io.metaroce.it.jverbs.apps.EndpointApp;
import io.metaroce.it.jverbs.apps.RdmaCmClientApp;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * java-verbs over rdma_cm (io.metaroce.verbs.cm.RdmaCmConnectionService, bound with FFM to
 * libmetaroce-rdmacm.so, which bin/mrce-run preloads) between two namespaces: a Java endpoint
 * server accepts and a Java endpoint client connects (the endpoint echo of JverbsEndpointIT:
 * private data, remote buffer, 200 messages checked, the peer-gone event); accept times out and a
 * close wakes it; nobody listening is refused and a request without the endpoint header is
 * rejected with its reason; and a Java client with its own QP against rdmacm-utils' C
 * {@code rdma_server}.
 */
@Timeout(300)
class JverbsRdmaCmIT extends JverbsFabricTest {

    private static String ctx(Proc server, Proc client) {
        return "--- server:\n" + server.output() + "\n--- client:\n" + client.output() + "\n" + fabric.diagnostics();
    }

    @Test
    void javaServerAndJavaClientEchoOverRdmaCm() {
        try (Proc server = fabric.start(
                fabric.b(), "cm-echo-server", JverbsFabric.javaApp(EndpointApp.class, "rdmacm:echo-server", "7301"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "cm-echo-client",
                    JverbsFabric.javaApp(
                            EndpointApp.class, "rdmacm:echo-client", fabric.b().addr(), "7301", "200"))) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output())
                        .contains("libmetaroce-rdmacm.so")
                        .contains("OK messages=200")
                        .contains("closeFailedPendingReceive=true");
                assertThat(server.output())
                        .as(ctx(server, client))
                        .contains("ACCEPTED private=hello from the endpoint client remote=65536")
                        .contains("EXPOSED holds the client's RDMA WRITE")
                        .contains("OK echoed=200 DISCONNECTED local=false");
            }
        }
    }

    @Test
    void acceptTimesOutAndACloseWakesItOverRdmaCm() {
        try (Proc p = fabric.start(
                fabric.b(),
                "cm-accept-timeout",
                JverbsFabric.javaApp(EndpointApp.class, "rdmacm:accept-timeout", "7302"))) {
            int e = p.waitFor(Duration.ofSeconds(60));
            assertThat(e).as(p.output()).isZero();
            assertThat(p.output()).contains("TIMED OUT").contains("OK closeWokeAccept");
        }
    }

    @Test
    void nobodyListeningIsRefusedAndAForeignRequestIsRejected() {
        try (Proc server = fabric.start(
                fabric.b(),
                "cm-reject-server",
                JverbsFabric.javaApp(EndpointApp.class, "rdmacm:reject-foreign", "7304"))) {
            awaitLine(server, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "cm-reject-client",
                    JverbsFabric.javaApp(
                            RdmaCmClientApp.class,
                            "refused-and-rejected",
                            fabric.b().addr(),
                            "7399",
                            "7304"))) {
                int ce = client.waitFor(Duration.ofSeconds(60));
                int se = server.waitFor(Duration.ofSeconds(30));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output())
                        .contains("REFUSED")
                        .contains("REJECTED not an endpoint request")
                        .contains("OK");
                assertThat(server.output())
                        .contains("OK rejected a request of " + fabric.a().addr());
            }
        }
    }

    @Test
    void javaClientToTheCRdmaServer() throws IOException {
        Path dbg = Files.createTempFile("jverbs-rdma-server", ".log");
        try (Proc server = fabric.start(
                fabric.b(),
                "rdma_server",
                List.of(
                        "env",
                        "MRCE_RDMACM_DEBUG=" + dbg,
                        JverbsFabric.cProgram().get(0),
                        "rdma_server",
                        "-p",
                        "7303"))) {
            boolean up = Wait.until(
                    Duration.ofSeconds(30), () -> read(dbg).contains("listen on service") || !server.isAlive());
            assertThat(up && server.isAlive()).as(server.output() + read(dbg)).isTrue();
            try (Proc client = fabric.start(
                    fabric.a(),
                    "cm-c-client",
                    JverbsFabric.javaApp(RdmaCmClientApp.class, fabric.b().addr(), "7303"))) {
                int ce = client.waitFor(Duration.ofSeconds(60));
                int se = server.waitFor(Duration.ofSeconds(30));
                assertThat(ce).as(ctx(server, client)).isZero();
                assertThat(se).as(ctx(server, client)).isZero();
                assertThat(client.output()).contains("ANSWER 16 bytes").contains("OK disconnect flushed the receive");
                assertThat(server.output()).as(ctx(server, client)).contains("rdma_server: end 0");
            }
        } finally {
            Files.deleteIfExists(dbg);
        }
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
