package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

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
 * The daemons on the AF_XDP port ({@code --port xdp}, SKB mode) across a direct veth link with
 * MTU 9000 (a 4 KiB packet and its headers leave as two UMEM chunks): unmodified
 * {@code ibv_rc_pingpong -c} passes, ARP and TCP keep working on the same interfaces, IPv6 to
 * MetaRoCE's UDP port reaches the kernel untouched, and no XDP program stays attached after the
 * daemon exits or after a SIGKILL and a restart. Driver mode ({@code --port xdp-native}) on the
 * same MTU (the program handles multi-buffer frames), and a four-queue link where frames arriving
 * on queues above 0 wake a sleeping daemon.
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
            boolean sent = Wait.until(
                    Duration.ofSeconds(30),
                    () -> Sh.run(
                                            Duration.ofSeconds(20),
                                            List.of(
                                                    "ip", "netns", "exec", a.ns(), "iperf3", "-c", b.addr(), "-n",
                                                    "8M"))
                                    .exit()
                            == 0);
            assertThat(sent)
                    .as("iperf3 TCP from A to B while the daemons run; server:%n%s", server.output())
                    .isTrue();
        } finally {
            server.stop(STOP_GRACE);
        }
        String bMac = macOf(b);
        assertThat(Sh.check("ip", "-n", a.ns(), "neigh", "show", b.addr(), "dev", a.ifname()))
                .as("A's neighbour entry for B")
                .contains(bMac);
    }

    private static String macOf(NetnsFabric.Host h) {
        return Sh.check("ip", "netns", "exec", h.ns(), "cat", "/sys/class/net/" + h.ifname() + "/address")
                .trim();
    }

    @Test
    void noProgramLeftAfterExitOrAfterKillAndRestart() {
        try (TwoHostFabric f = TwoHostFabric.direct("AfXdpIT-lifecycle", 9000)) {
            NetnsFabric.Host a = f.a();
            Daemon d = f.startDaemon(a, "--port", "xdp");
            f.awaitReady(d);
            assertThat(xdpOf(a)).contains("mrce_steer");
            assertThat(d.stop(STOP_GRACE))
                    .as("exit on SIGTERM; log:%n%s", d.logText())
                    .isZero();
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

    @Test
    void nativeModeCarriesMultiBufferFramesAndDetaches() {
        try (TwoHostFabric f = TwoHostFabric.direct("AfXdpIT-native", 9000)) {
            Daemon da = f.startDaemon(f.a(), "--port", "xdp-native");
            Daemon db = f.startDaemon(f.b(), "--port", "xdp-native");
            f.awaitReady(da);
            f.awaitReady(db);
            for (NetnsFabric.Host h : List.of(f.a(), f.b())) {
                // ip link names a driver-mode program "xdp" (SKB mode: "xdpgeneric"); JSON mode 1 = DRV
                assertThat(Sh.check("ip", "-n", h.ns(), "link", "show", "dev", h.ifname()))
                        .as("driver-mode program on %s", h.name())
                        .contains(" xdp ")
                        .doesNotContain("xdpgeneric");
                assertThat(xdpOf(h)).contains("mrce_steer").contains("\"mode\":1");
            }
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "300")
                    .assertCompleted(4096, 300, f.diagnostics());
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "100")
                    .assertCompleted(65536, 100, f.diagnostics());
            assertThat(da.stop(STOP_GRACE))
                    .as("exit on SIGTERM; log:%n%s", da.logText())
                    .isZero();
            assertThat(db.stop(STOP_GRACE))
                    .as("exit on SIGTERM; log:%n%s", db.logText())
                    .isZero();
            for (NetnsFabric.Host h : List.of(f.a(), f.b())) {
                assertThat(xdpOf(h))
                        .as("after the daemon on %s exited", h.name())
                        .doesNotContain("\"xdp\"");
                assertThat(Sh.check("ip", "-n", h.ns(), "link", "show", "dev", h.ifname()))
                        .doesNotContain("xdp");
            }
        }
    }

    private static final Pattern QUEUE_RX = Pattern.compile("queue (\\d+): rx_frames (\\d+)");
    private static final Pattern QUEUE_WAKEUPS = Pattern.compile("by frames on queues \\[([0-9, ]*)\\]");

    /**
     * Four queues per end. A sends through the kernel (--port udp: its 64 entropy sockets hash onto
     * veth's four TX queues, and a driver-mode program sees TX queue q arrive on RX queue q). B runs
     * the AF_XDP port in driver mode with one socket per queue and sleeps as soon as it is idle; the
     * event-driven ping-pong only progresses if frames on queues 1..3 wake it (with only queue 0
     * watched they would wait for the 100 ms timeout or a retransmission).
     */
    @Test
    void framesOnEveryQueueWakeASleepingDaemon() {
        try (TwoHostFabric f = TwoHostFabric.direct("AfXdpIT-mq", 9000, 4)) {
            Daemon da = f.startDaemon(f.a(), "--port", "udp");
            Daemon db = f.startDaemon(f.b(), "--port", "xdp-native", "--idle-spins", "0", "--idle-yields", "0");
            f.awaitReady(da);
            f.awaitReady(db);
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-e", "-n", "300")
                    .assertCompleted(4096, 300, f.diagnostics());
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-e", "-s", "65536", "-n", "50")
                    .assertCompleted(65536, 50, f.diagnostics());
            assertThat(db.stop(STOP_GRACE))
                    .as("exit on SIGTERM; log:%n%s", db.logText())
                    .isZero();
            String log = db.logText();
            long[] rx = new long[4];
            Matcher m = QUEUE_RX.matcher(log);
            int sockets = 0;
            while (m.find()) {
                rx[Integer.parseInt(m.group(1))] = Long.parseLong(m.group(2));
                sockets++;
            }
            assertThat(sockets).as("one AF_XDP socket per queue; log:%n%s", log).isEqualTo(4);
            assertThat(rx[1] + rx[2] + rx[3])
                    .as("frames received on queues 1..3 %s; log:%n%s", java.util.Arrays.toString(rx), log)
                    .isPositive();
            Matcher w = QUEUE_WAKEUPS.matcher(log);
            assertThat(w.find()).as("duty-cycle line; log:%n%s", log).isTrue();
            long[] wakeups = java.util.Arrays.stream(w.group(1).split(",\\s*"))
                    .mapToLong(Long::parseLong)
                    .toArray();
            assertThat(wakeups).hasSize(4);
            assertThat(wakeups[1] + wakeups[2] + wakeups[3])
                    .as("sleeps ended by frames on queues 1..3 %s; log:%n%s", java.util.Arrays.toString(wakeups), log)
                    .isPositive();
            assertThat(da.stop(STOP_GRACE)).isZero();
            assertThat(xdpOf(f.b())).doesNotContain("\"xdp\"");
        }
    }

    /**
     * A daemon serving IPv4 steers IPv4 only: its steering program passes IPv6, even to MetaRoCE's
     * UDP port, to the kernel ({@link AfXdpIpv6IT} serves IPv6). With IPv6 enabled on the link (addresses from 2001:2::/48, the IPv6 benchmarking
     * range), a datagram from A to B's port 4793 reaches a kernel UDP socket in B.
     */
    @Test
    void ipv6ToTheDataPortReachesTheKernel() {
        NetnsFabric.Host a = fabric.a();
        NetnsFabric.Host b = fabric.b();
        for (NetnsFabric.Host h : List.of(a, b)) {
            Sh.check("ip", "netns", "exec", h.ns(), "sysctl", "-qw", "net.ipv6.conf." + h.ifname() + ".disable_ipv6=0");
        }
        Sh.check("ip", "-n", a.ns(), "addr", "add", "2001:2::1/64", "dev", a.ifname(), "nodad");
        Sh.check("ip", "-n", b.ns(), "addr", "add", "2001:2::2/64", "dev", b.ifname(), "nodad");
        String token = "mrce-ipv6-" + System.nanoTime();
        Proc server = fabric.start(
                b,
                "udp6-server",
                List.of(
                        "python3",
                        "-c",
                        String.join(
                                "\n",
                                "import socket",
                                "s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
                                "s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)",
                                "s.bind(('2001:2::2', 4793))",
                                "s.settimeout(60)",
                                "print('listening', flush=True)",
                                "data, peer = s.recvfrom(2048)",
                                "print('got', data.decode(), flush=True)")));
        try {
            assertThat(Wait.until(Duration.ofSeconds(20), () -> server.output().contains("listening")))
                    .as("udp6 server: %s", server.output())
                    .isTrue();
            boolean got = Wait.until(Duration.ofSeconds(30), () -> {
                Sh.run(
                        "ip",
                        "netns",
                        "exec",
                        a.ns(),
                        "python3",
                        "-c",
                        String.join(
                                "\n",
                                "import socket",
                                "s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
                                "s.sendto(b'" + token + "', ('2001:2::2', 4793))"));
                return server.output().contains("got " + token);
            });
            assertThat(got)
                    .as("IPv6 UDP to port 4793 reached B's kernel socket; server:%n%s", server.output())
                    .isTrue();
        } finally {
            server.stop(STOP_GRACE);
            Sh.run("ip", "-n", a.ns(), "addr", "del", "2001:2::1/64", "dev", a.ifname());
            Sh.run("ip", "-n", b.ns(), "addr", "del", "2001:2::2/64", "dev", b.ifname());
        }
        assertThat(xdpOf(b)).as("the daemon still serves").contains("mrce_steer");
    }
}
