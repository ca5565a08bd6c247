package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 6's connection manager between two daemons (docs/spec/connection-manager.md), on the
 * two-namespace fabric:
 *
 * <ul>
 *   <li>every QP connection is set up by the handshake (both daemons log it; the transfers run);
 *   <li>packets crafted by an off-path sender with a wrong connection token, aimed at a live QP,
 *       are dropped and counted, and the transfer under attack completes with correct data;
 *   <li>the remote daemon SIGKILLed mid-transfer: the local QP goes to error (the daemon says
 *       why) within the peer timeout plus a heartbeat, and the application ends with an error;
 *   <li>the remote daemon restarted: new connections work at once;
 *   <li>the peer QP destroyed (its process killed): the local QP fails after the grace period, so
 *       an application waiting for messages ends with an error instead of waiting forever;
 *   <li>daemons with one cluster secret ({@code --cm-secret-file}, section 8) connect QPs; a daemon
 *       restarted with another secret is refused at both ends and its QPs fail.
 * </ul>
 */
@Timeout(600)
class ConnectionManagerIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The daemons' --cm-peer-timeout-ms here (the default is 3000). */
    private static final int PEER_TIMEOUT_MS = 1500;

    private static final int HEARTBEAT_MS = 250;

    @BeforeAll
    static void needsRoot() {
        Env.assumeNamespaces();
    }

    private static TwoHostFabric fabric(String name) {
        TwoHostFabric f = TwoHostFabric.direct(name, 1500);
        try {
            for (NetnsFabric.Host h : List.of(f.a(), f.b())) {
                f.startDaemon(h, "--cm-heartbeat-ms", "" + HEARTBEAT_MS, "--cm-peer-timeout-ms", "" + PEER_TIMEOUT_MS);
            }
            for (Daemon d : f.daemons()) {
                f.awaitReady(d);
            }
            return f;
        } catch (RuntimeException | Error e) {
            f.close();
            throw e;
        }
    }

    @Test
    void wrongTokensAreDroppedAndCountedWhileTheTransferIsUnharmed() {
        try (TwoHostFabric f = fabric("CmTokenIT")) {
            Integrity.Running run = Integrity.start(f, 19300, 3000, 0x70cL, Duration.ofSeconds(180));
            JsonNode qp = null;
            try {
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (qp == null && run.clientAlive() && System.nanoTime() < deadline) {
                    for (JsonNode q : ctl(f, f.b(), "qps").path("qps")) {
                        if (q.path("state").asInt() == 3 && q.path("destQpn").asInt() != 0) {
                            qp = q;
                        }
                    }
                }
                assertThat(qp).as("the server's QP in RTS").isNotNull();
                long before = ctl(f, f.b(), "counters")
                        .path("port")
                        .path("rxBadToken")
                        .asLong();
                Proc.Result inject = f.exec(
                        f.a(),
                        Duration.ofSeconds(30),
                        Env.bpfDir().resolve("mrce_inject").toString(),
                        f.b().addr(),
                        "4793",
                        qp.path("qpn").asText(),
                        qp.path("destQpn").asText(),
                        "0x12345678",
                        "5000");
                assertThat(inject.output()).contains("sent 5000");
                boolean counted = Wait.until(
                        Duration.ofSeconds(10),
                        () -> ctl(f, f.b(), "counters")
                                                .path("port")
                                                .path("rxBadToken")
                                                .asLong()
                                        - before
                                >= 5000);
                assertThat(counted)
                        .as("5000 bad-token packets counted: " + ctl(f, f.b(), "counters"))
                        .isTrue();
            } finally {
                Integrity.Result r = run.finish();
                assertThat(r.client().ok()).as("client\n" + r.client().output()).isTrue();
                assertThat(r.server().ok()).as("server\n" + r.server().output()).isTrue();
                assertThat(r.client().checksum()).isEqualTo(r.server().checksum());
            }
            for (Daemon d : f.daemons()) {
                assertThat(d.logText()).doesNotContain("handshake failed");
            }
        }
    }

    @Test
    void killedRemoteDaemonFailsTheLocalQpWithinTheBoundAndARestartedOneServesAgain() {
        try (TwoHostFabric f = fabric("CmKillIT")) {
            RcPingPong.run(f, 19400, Duration.ofSeconds(60), "-n", "200").assertCompleted(4096, 200, "before");
            RcPingPong.Running run = RcPingPong.start(f, 19401, "-n", "1000000");
            Daemon a = f.daemon(f.a());
            Daemon b = f.daemon(f.b());
            long logFrom = a.logSize();
            assertThat(Wait.until(
                            Duration.ofSeconds(30),
                            () -> ctl(f, f.a(), "qps").path("qps").size() > 0))
                    .isTrue();
            long t0 = System.nanoTime();
            b.proc().kill();
            long bound = PEER_TIMEOUT_MS + 2L * HEARTBEAT_MS + 1000;
            boolean lost = Wait.until(
                    Duration.ofMillis(bound),
                    () -> a.logSince(logFrom).contains("peer daemon " + f.b().addr() + " lost"));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(lost)
                    .as("daemon A declared B lost within %d ms (log:%n%s)", bound, a.logSince(logFrom))
                    .isTrue();
            // Its QP failed then (the manager) or already (retransmissions unanswered): the
            // application ends with an error either way, and soon.
            assertThat(run.client().waitFor(Duration.ofSeconds(20)))
                    .as("the client ends with an error")
                    .isNotZero();
            run.close();
            System.out.printf(
                    "peer lost %d ms after the remote daemon was killed (peer timeout %d ms)%n", ms, PEER_TIMEOUT_MS);

            Daemon b2 = f.startDaemon(
                    f.b(), "--cm-heartbeat-ms", "" + HEARTBEAT_MS, "--cm-peer-timeout-ms", "" + PEER_TIMEOUT_MS);
            f.awaitReady(b2);
            RcPingPong.run(f, 19402, Duration.ofSeconds(60), "-n", "500").assertCompleted(4096, 500, "after restart");
        }
    }

    @Test
    void aPeerQpDestroyedFailsTheLocalQpAfterTheGrace() {
        try (TwoHostFabric f = fabric("CmDestroyIT")) {
            RcPingPong.Running run = RcPingPong.start(f, 19500, "-n", "1000000");
            Daemon b = f.daemon(f.b());
            long logFrom = b.logSize();
            assertThat(Wait.until(
                            Duration.ofSeconds(30),
                            () -> ctl(f, f.b(), "qps").path("qps").size() > 0))
                    .isTrue();
            long t0 = System.nanoTime();
            run.client().kill(); // its daemon reclaims the QP and tells B's daemon
            // Without the manager the server would wait for its next message forever.
            int exit = run.server().waitFor(Duration.ofSeconds(15));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            run.close();
            assertThat(exit).as("the server ends with an error").isNotZero();
            // The manager's DISCONNECT fails it after the grace unless the transport already did
            // (the killed side's daemon answers late packets of a QP it tore down with a NAK).
            assertThat(ms)
                    .as("server failed %d ms after its peer was killed (grace 1000 ms)", ms)
                    .isLessThan(6000);
            System.out.printf(
                    "server QP failed %d ms after its peer process was killed (%s)%n",
                    ms, b.logSince(logFrom).contains("went away") ? "connection manager" : "transport");
        }
    }

    @Test
    void daemonsWithOneClusterSecretServeAndAnotherSecretIsRefused() throws IOException {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("mrce-cm-secret");
        try (TwoHostFabric f = TwoHostFabric.direct("CmSecretIT", 1500)) {
            java.nio.file.Path secret = secret(dir.resolve("cm.secret"), 1);
            java.nio.file.Path other = secret(dir.resolve("other.secret"), 2);
            String[] opts = {
                "--cm-heartbeat-ms",
                "" + HEARTBEAT_MS,
                "--cm-peer-timeout-ms",
                "" + PEER_TIMEOUT_MS,
                "--cm-connect-timeout-ms",
                "3000",
                "--cm-secret-file"
            };
            Daemon a = f.startDaemon(f.a(), with(opts, secret.toString()));
            Daemon b = f.startDaemon(f.b(), with(opts, secret.toString()));
            f.awaitReady(a);
            f.awaitReady(b);
            RcPingPong.run(f, 19600, Duration.ofSeconds(60), "-n", "200").assertCompleted(4096, 200, "one secret");
            for (Daemon d : List.of(a, b)) {
                assertThat(d.logText())
                        .contains("peers authenticated with the cluster secret")
                        .doesNotContain("connection refused");
            }

            b.proc().kill();
            Daemon b2 = f.startDaemon(f.b(), with(opts, other.toString()));
            f.awaitReady(b2);
            RcPingPong.Running run = RcPingPong.start(f, 19601, "-n", "200");
            try {
                assertThat(run.client().waitFor(Duration.ofSeconds(60)))
                        .as("the client ends with an error")
                        .isNotZero();
            } finally {
                run.close();
            }
            assertThat(a.logText()).contains("connection refused: wrong proof");
            assertThat(b2.logText()).contains("connection refused: wrong proof");
            assertThat(a.logText() + b2.logText())
                    .as("a QP's handshake failed, saying why")
                    .contains("connection manager handshake failed")
                    .contains("its connection was refused");
        } finally {
            try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(dir)) {
                for (java.nio.file.Path p : files.toList()) {
                    java.nio.file.Files.delete(p);
                }
            }
            java.nio.file.Files.delete(dir);
        }
    }

    /** A root-owned secret file of mode 0600 (the test runs as root), 32 bytes from {@code seed}. */
    private static java.nio.file.Path secret(java.nio.file.Path p, long seed) throws IOException {
        byte[] b = new byte[32];
        new java.util.SplittableRandom(seed).nextBytes(b);
        java.nio.file.Files.write(p, b);
        java.nio.file.Files.setPosixFilePermissions(
                p, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return p;
    }

    private static String[] with(String[] opts, String last) {
        String[] all = java.util.Arrays.copyOf(opts, opts.length + 1);
        all[opts.length] = last;
        return all;
    }

    private static JsonNode ctl(TwoHostFabric f, NetnsFabric.Host h, String what) {
        Proc.Result r = f.exec(h, Duration.ofSeconds(30), Env.bin("mrce-ctl").toString(), what, "--json");
        assertThat(r.ok()).as("mrce-ctl " + what + ": " + r.output()).isTrue();
        try {
            return JSON.readTree(r.output());
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + r.output(), e);
        }
    }
}
