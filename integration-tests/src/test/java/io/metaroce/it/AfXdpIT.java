package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The daemons on the AF_XDP port ({@code --port xdp}, SKB mode) across a direct veth link with
 * two queues per end and MTU 9000 (a 4 KiB packet and its headers leave as two UMEM chunks):
 * unmodified {@code ibv_rc_pingpong -c} passes, ARP and TCP keep working on the same interfaces,
 * and no XDP program stays attached after the daemon exits or after a SIGKILL and a restart.
 */
@Timeout(600)
class AfXdpIT {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration STOP_GRACE = Duration.ofSeconds(15);
    private static final AtomicInteger PORT = new AtomicInteger(18715);
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.direct("AfXdpIT", 9000);
        Daemon da = fabric.startDaemon(fabric.a(), "--port", "xdp");
        Daemon db = fabric.startDaemon(fabric.b(), "--port", "xdp");
        fabric.awaitReady(da);
        fabric.awaitReady(db);
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    private static String xdpOf(NetnsFabric.Host h) {
        return Sh.check("ip", "-n", h.ns(), "-j", "link", "show", "dev", h.ifname());
    }

    @Test
    void steeringProgramAttachedWhileServing() {
        assertThat(xdpOf(fabric.a())).contains("\"xdp\"").contains("mrce_steer");
        assertThat(xdpOf(fabric.b())).contains("\"xdp\"").contains("mrce_steer");
    }

    @Test
    void rcPingPongValidatesReceivedBuffers() {
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "500")
                .assertCompleted(4096, 500, fabric.diagnostics());
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "200")
                .assertCompleted(65536, 200, fabric.diagnostics());
    }

    @Test
    void arpAndTcpStillReachTheKernel() {
        NetnsFabric.Host a = fabric.a();
        NetnsFabric.Host b = fabric.b();
        // ARP: forget B, then TCP must resolve it again through the kernel (XDP_PASS for ARP).
        Sh.check("ip", "-n", a.ns(), "neigh", "flush", "dev", a.ifname());
        Proc server = fabric.start(b, "iperf3-server", List.of("iperf3", "-s", "-1", "-B", b.addr()));
        try {
            boolean sent = Wait.until(Duration.ofSeconds(30), () -> Sh.run(Duration.ofSeconds(20), List.of(
                    "ip", "netns", "exec", a.ns(), "iperf3", "-c", b.addr(), "-n", "8M")).exit() == 0);
            assertThat(sent).as("iperf3 TCP from A to B while the daemons run; server:%n%s",
                    server.output()).isTrue();
        } finally {
            server.stop(STOP_GRACE);
        }
        String bMac = macOf(b);
        assertThat(Sh.check("ip", "-n", a.ns(), "neigh", "show", b.addr(), "dev", a.ifname()))
                .as("A's neighbour entry for B").contains(bMac);
    }

    private static String macOf(NetnsFabric.Host h) {
        return Sh.check("ip", "netns", "exec", h.ns(), "cat", "/sys/class/net/" + h.ifname() + "/address").trim();
    }

    @Test
    void noProgramLeftAfterExitOrAfterKillAndRestart() {
        try (TwoHostFabric f = TwoHostFabric.direct("AfXdpIT-lifecycle", 9000)) {
            NetnsFabric.Host a = f.a();
            Daemon d = f.startDaemon(a, "--port", "xdp");
            f.awaitReady(d);
            assertThat(xdpOf(a)).contains("mrce_steer");
            assertThat(d.stop(STOP_GRACE)).as("exit on SIGTERM; log:%n%s", d.logText()).isZero();
            assertThat(xdpOf(a)).as("after a clean exit").doesNotContain("\"xdp\"");

            Daemon killed = f.startDaemon(a, "--port", "xdp");
            f.awaitReady(killed);
            killed.proc().kill();
            assertThat(xdpOf(a)).as("a SIGKILLed daemon leaves its program").contains("mrce_steer");

            Daemon restarted = f.startDaemon(a, "--port", "xdp");
            f.awaitReady(restarted);
            assertThat(restarted.logText()).contains("replacing stale XDP program mrce_steer");
            Daemon peer = f.startDaemon(f.b(), "--port", "xdp");
            f.awaitReady(peer);
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "200")
                    .assertCompleted(4096, 200, f.diagnostics());
            assertThat(restarted.stop(STOP_GRACE)).isZero();
            assertThat(peer.stop(STOP_GRACE)).isZero();
            assertThat(xdpOf(a)).as("after the restarted daemon exits").doesNotContain("\"xdp\"");
            assertThat(xdpOf(f.b())).doesNotContain("\"xdp\"");
        }
    }
}
