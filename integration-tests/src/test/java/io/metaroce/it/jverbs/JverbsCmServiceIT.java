package io.metaroce.it.jverbs;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.it.Proc;
import io.metaroce.it.jverbs.apps.CmServiceApp;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Connection set-up through the daemons' rdma_cm-style service (DaemonConnectionService, ops
 * 20..25, CM messages 8..12) between two namespaces: accept with private data both ways and data
 * checked byte by byte; a reject whose private data reaches the client; a service nobody listens
 * on refused at once; a listener killed -9 while holding a request resets its requester and frees
 * the service; and rc-pingpong with {@code --cm daemon}.
 */
@Timeout(600)
class JverbsCmServiceIT extends JverbsFabricTest {

    private static String run(JverbsFabric.Host h, String name, String... args) {
        try (Proc p = fabric.start(h, name, JverbsFabric.javaApp(CmServiceApp.class, args))) {
            int exit = p.waitFor(Duration.ofSeconds(120));
            assertThat(exit)
                    .as("%s exit%n%s%n%s", name, p.output(), fabric.diagnostics())
                    .isZero();
            return p.output();
        }
    }

    @Test
    void acceptWithPrivateDataBothWaysThenData() {
        int n = 300;
        CRC32 crc = new CRC32();
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < CmServiceApp.size(i); j++) {
                crc.update(CmServiceApp.data(i, j));
            }
            bytes += CmServiceApp.size(i);
        }
        String expected = String.format("OK messages=%d bytes=%d crc=0x%08x", n, bytes, crc.getValue());
        try (Proc server = fabric.start(
                fabric.b(),
                "server",
                JverbsFabric.javaApp(CmServiceApp.class, "server", "7001", Integer.toString(n)))) {
            awaitLine(server, "LISTENING");
            String client = run(fabric.a(), "client", "client", fabric.b().addr(), "7001", Integer.toString(n));
            int se = server.waitFor(Duration.ofSeconds(60));
            String ctx = "--- server:\n" + server.output() + "\n--- client:\n" + client;
            assertThat(se).as(ctx).isZero();
            assertThat(server.output())
                    .as(ctx)
                    .contains("REQUEST private=hello from the client, CmServiceApp #1")
                    .contains(expected);
            assertThat(client)
                    .as(ctx)
                    .contains("ACCEPTED private=welcome from the server: private data both ways")
                    .contains(expected);
        }
    }

    @Test
    void aRejectCarriesItsPrivateDataToTheClient() {
        try (Proc server = fabric.start(
                fabric.b(), "reject-server", JverbsFabric.javaApp(CmServiceApp.class, "reject-server", "7002"))) {
            awaitLine(server, "LISTENING");
            String client =
                    run(fabric.a(), "reject-client", "reject-client", fabric.b().addr(), "7002");
            assertThat(server.waitFor(Duration.ofSeconds(60)))
                    .as(server.output())
                    .isZero();
            assertThat(server.output())
                    .contains("REQUEST private=hello from the client")
                    .contains("OK rejected");
            assertThat(client)
                    .contains("REJECTED private=go away: this server is full (code 503) message=connection to"
                            + " service 7002 at 198.18.0.2 rejected by its listener (39 bytes of private data)");
        }
    }

    @Test
    void aServiceNobodyListensOnIsRefusedAtOnce() {
        String client =
                run(fabric.a(), "refused-client", "refused-client", fabric.b().addr(), "7099");
        assertThat(client)
                .contains(
                        "message=connection refused: nobody listens on service 7099 at 198.18.0.2" + " (ECONNREFUSED)");
        Matcher m = Pattern.compile("REFUSED ms=(\\d+)").matcher(client);
        assertThat(m.find()).as(client).isTrue();
        // Refused by the peer daemon, not by the 30 s timeout the client asked for.
        System.out.println("JverbsCmServiceIT: refused after " + m.group(1) + " ms (timeout 30000 ms)");
        assertThat(Long.parseLong(m.group(1))).as(client).isLessThan(30_000);
    }

    @Test
    void aKilledListenerResetsItsRequesterAndFreesTheService() {
        try (Proc taker = fabric.start(
                fabric.b(), "take-server", JverbsFabric.javaApp(CmServiceApp.class, "take-server", "7003"))) {
            awaitLine(taker, "LISTENING");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "reset-client",
                    JverbsFabric.javaApp(
                            CmServiceApp.class, "reset-client", fabric.b().addr(), "7003"))) {
                awaitLine(taker, "TOOK request from 198.18.0.1 private=hello from the client");
                taker.close(); // SIGKILL: the daemon sees the connection close
                assertThat(client.waitFor(Duration.ofSeconds(60)))
                        .as(client.output())
                        .isZero();
                assertThat(client.output())
                        .contains("RESET message=connection to service 7003 at 198.18.0.2 reset:"
                                + " its listener or its daemon went away before answering (ECONNRESET)");
            }
        }
        // The service is free again, and works end to end.
        try (Proc server = fabric.start(
                fabric.b(), "server-again", JverbsFabric.javaApp(CmServiceApp.class, "server", "7003", "10"))) {
            awaitLine(server, "LISTENING");
            String client = run(fabric.a(), "client-again", "client", fabric.b().addr(), "7003", "10");
            assertThat(server.waitFor(Duration.ofSeconds(60)))
                    .as(server.output())
                    .isZero();
            assertThat(client).contains("OK messages=10");
            assertThat(server.output()).contains("OK messages=10");
        }
    }

    @Test
    void rcPingPongThroughTheDaemonService() {
        try (Proc server = fabric.start(
                fabric.b(),
                "pp-server",
                JverbsFabric.jverbs(
                        "rc-pingpong",
                        "-d",
                        "mrce0",
                        "-g",
                        "0",
                        "-n",
                        "200",
                        "-s",
                        "2048",
                        "-c",
                        "--cm",
                        "daemon",
                        "-p",
                        "7004"))) {
            awaitLine(server, "listening on service 7004");
            try (Proc client = fabric.start(
                    fabric.a(),
                    "pp-client",
                    JverbsFabric.jverbs(
                            "rc-pingpong",
                            "-d",
                            "mrce0",
                            "-g",
                            "0",
                            "-n",
                            "200",
                            "-s",
                            "2048",
                            "-c",
                            "--cm",
                            "daemon",
                            "-p",
                            "7004",
                            fabric.b().addr()))) {
                int ce = client.waitFor(Duration.ofSeconds(120));
                int se = server.waitFor(Duration.ofSeconds(60));
                String ctx = "--- server:\n" + server.output() + "\n--- client:\n" + client.output();
                assertThat(ce).as(ctx).isZero();
                assertThat(se).as(ctx).isZero();
                assertThat(server.output())
                        .as(ctx)
                        .contains("819200 bytes in")
                        .contains("200 iters in")
                        .doesNotContain("invalid data");
                assertThat(client.output()).as(ctx).contains("200 iters in");
            }
        }
    }
}
