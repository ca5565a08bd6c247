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
 * The AF_XDP port ({@code --port xdp}) between IPv6-only hosts ({@link TwoHostFabric#directIpv6}:
 * 2001:db8::1 and ::2, no IPv4 address on the fabric link): the steering program redirects IPv6
 * UDP to MetaRoCE's ports and passes neighbour discovery and ICMPv6, the port builds and parses
 * Ethernet/IPv6/UDP frames and resolves next hops through the kernel's NDP table. Unmodified
 * {@code ibv_rc_pingpong -c} and {@code ibv_ud_pingpong -c} check every byte received,
 * mrce_integrity checks 1000 messages end to end. Against a peer on the UDP port the peer's kernel
 * validates every UDP checksum the AF_XDP port computed (RFC 8200: it drops a bad or zero one),
 * and the AF_XDP port parses the kernel's frames; through an IPv6 router the next hop is the
 * router's NDP entry; at MTU 9000 in driver mode packets travel as multi-buffer IPv6 frames. ({@link AfXdpPerftestIpv6IT} runs perftest on this port and family.)
 */
@Timeout(900)
class AfXdpIpv6IT {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration STOP_GRACE = Duration.ofSeconds(15);
    private static final AtomicInteger PORT = new AtomicInteger(19615);
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.directIpv6("AfXdpIpv6IT", 1500);
        fabric.startDaemons("--port", "xdp");
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

    /** rc_pingpong prints "local address: LID .., QPN .., PSN .., GID g" and the same for the remote. */
    private static void assertGids(RcPingPong.Result r, String aGid, String bGid) {
        assertThat(r.client().output()).contains("GID " + aGid).contains("GID " + bGid);
        assertThat(r.server().output()).contains("GID " + bGid).contains("GID " + aGid);
    }

    @Test
    void servesIpv6OnTheAfXdpPort() {
        for (NetnsFabric.Host h : List.of(fabric.a(), fabric.b())) {
            assertThat(xdpOf(h)).as("steering program on %s", h.name()).contains("mrce_steer");
            Proc.Result r = fabric.exec(h, Duration.ofSeconds(10), "ip", "-4", "-o", "addr", "show", "dev", h.ifname());
            assertThat(r.output().strip()).as("IPv4 addresses of %s", h.name()).isEmpty();
        }
    }

    @Test
    void rcPingPongWithDataChecked() {
        RcPingPong.Result r = RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "500");
        r.assertCompleted(4096, 500, fabric.diagnostics());
        assertGids(r, fabric.a().addr(), fabric.b().addr());
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "200")
                .assertCompleted(65536, 200, fabric.diagnostics());
    }

    /** ibv_ud_pingpong -c: UD sends to an IPv6 address handle over the AF_XDP port. */
    @Test
    void udPingPongWithDataChecked() {
        List<String> cmd = List.of(
                "ibv_ud_pingpong",
                "-d",
                "mrce0",
                "-g",
                "0",
                "-s",
                "512",
                "-n",
                "300",
                "-c",
                "-p",
                Integer.toString(PORT.getAndIncrement()));
        int port = Integer.parseInt(cmd.get(cmd.size() - 1));
        Proc s = fabric.startApp(fabric.b(), "ud_pingpong-server", cmd);
        Proc c = null;
        try {
            fabric.awaitTcpListening(fabric.b(), port, s, Duration.ofSeconds(20));
            List<String> client = new java.util.ArrayList<>(cmd);
            client.add(fabric.appServerAddr());
            c = fabric.startApp(fabric.a(), "ud_pingpong-client", client);
            AppPair.Exits exits = AppPair.await(fabric, s, c, RUN_TIMEOUT);
            String context =
                    "\n--- server:\n" + s.output() + "\n--- client:\n" + c.output() + "\n" + fabric.diagnostics();
            RcPingPong.parse("server", exits.server(), s.output()).assertCompleted(512, 300, context);
            RcPingPong.parse("client", exits.client(), c.output()).assertCompleted(512, 300, context);
        } finally {
            s.close();
            if (c != null) {
                c.close();
            }
        }
    }

    /** mrce_integrity: 1000 messages of edge-case and random sizes, every byte checked. */
    @Test
    void integrityOverIpv6() {
        int messages = 1000;
        Integrity.Result r = Integrity.run(fabric, PORT.getAndIncrement(), messages, 0x5eed0016L, RUN_TIMEOUT);
        String context = "\n--- server:\n" + r.server().output() + "\n--- client:\n"
                + r.client().output() + "\n" + fabric.diagnostics();
        assertThat(r.server().ok()).as("server reports OK" + context).isTrue();
        assertThat(r.client().ok()).as("client reports OK" + context).isTrue();
        assertThat(r.server().messages()).isEqualTo(messages);
        assertThat(r.server().checksum()).isEqualTo(r.client().checksum());
    }

    /**
     * Neighbour discovery and ICMPv6 pass to the kernel while the daemons serve: after A forgets
     * B's neighbour entry an ICMPv6 echo resolves it again (and is answered), and the daemons'
     * traffic keeps flowing.
     */
    @Test
    void neighbourDiscoveryAndIcmpv6StillReachTheKernel() {
        NetnsFabric.Host a = fabric.a();
        NetnsFabric.Host b = fabric.b();
        Sh.check("ip", "-n", a.ns(), "-6", "neigh", "flush", "dev", a.ifname());
        // ICMPv6 echo from a raw socket (the kernel fills in the checksum); no ping binary needed
        Proc.Result ping = fabric.exec(
                a,
                Duration.ofSeconds(30),
                "python3",
                "-c",
                String.join(
                        "\n",
                        "import socket, struct",
                        "s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)",
                        "s.settimeout(5)",
                        "for i in range(3):",
                        "    s.sendto(struct.pack('!BBHHH', 128, 0, 0, 0x4d52, i) + b'mrce', ('" + b.addr() + "', 0))",
                        "    while True:",
                        "        d, peer = s.recvfrom(1500)",
                        "        if d[0] == 129 and d[4:8] == struct.pack('!HH', 0x4d52, i):",
                        "            print('echo reply', i, flush=True)",
                        "            break"));
        assertThat(ping.exit())
                .as("ICMPv6 echo from A to B while the daemons run:%n%s", ping.output())
                .isZero();
        assertThat(ping.output()).contains("echo reply 2");
        String bMac = Sh.check("ip", "netns", "exec", b.ns(), "cat", "/sys/class/net/" + b.ifname() + "/address")
                .trim();
        assertThat(Sh.check("ip", "-n", a.ns(), "-6", "neigh", "show", b.addr(), "dev", a.ifname()))
                .as("A's NDP entry for B")
                .contains(bMac);
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "200")
                .assertCompleted(4096, 200, fabric.diagnostics());
    }

    /**
     * A on the AF_XDP port serving a second address given with {@code --addr}, B on the UDP port:
     * B's kernel accepts A's datagrams only with a valid UDP checksum, and A parses what B's kernel
     * built (its own flow label, its checksum). A sends from the --addr address, its GID index 0.
     * A's log then reports no frame dropped for its checksum or its lengths.
     */
    @Test
    void interoperatesWithTheUdpPortAndServesAnAddrOption() {
        try (TwoHostFabric f = TwoHostFabric.directIpv6("AfXdpIpv6IT-mixed", 1500)) {
            String served = "2001:db8::11";
            Sh.check("ip", "-n", f.a().ns(), "addr", "add", served + "/64", "dev", f.a().ifname(), "nodad");
            Daemon da = f.startDaemon(f.a(), "--port", "xdp", "--addr", served);
            Daemon db = f.startDaemon(f.b(), "--port", "udp");
            f.awaitReady(da);
            f.awaitReady(db);
            assertThat(xdpOf(f.a())).contains("mrce_steer");
            RcPingPong.Result r = RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "300");
            r.assertCompleted(4096, 300, f.diagnostics());
            assertGids(r, served, f.b().addr());
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "100")
                    .assertCompleted(65536, 100, f.diagnostics());
            assertThat(da.stop(STOP_GRACE))
                    .as("exit on SIGTERM; log:%n%s", da.logText())
                    .isZero();
            String log = da.logText();
            assertThat(log)
                    .as("A's port counters; log:%n%s", log)
                    .contains(" badChecksum 0 ")
                    .contains(" short 0 ");
            assertThat(db.stop(STOP_GRACE)).isZero();
            assertThat(xdpOf(f.a())).doesNotContain("\"xdp\"");
        }
    }

    /**
     * MTU 9000 in driver mode ({@code --port xdp-native}): over IPv6 two UMEM chunks hold at most
     * 8130 bytes of UDP payload, so the daemons count link MTU 8158 (not 9000 - 20); 4 KiB and
     * larger packets leave and arrive as multi-buffer frames.
     */
    @Test
    void jumboFramesInDriverMode() {
        try (TwoHostFabric f = TwoHostFabric.directIpv6("AfXdpIpv6IT-jumbo", 9000)) {
            List<Daemon> ds = f.startDaemons("--port", "xdp-native");
            assertThat(xdpOf(f.a())).contains("mrce_steer").contains("\"mode\":1");
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "300")
                    .assertCompleted(4096, 300, f.diagnostics());
            RcPingPong.run(f, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "100")
                    .assertCompleted(65536, 100, f.diagnostics());
            for (Daemon d : ds) {
                assertThat(d.stop(STOP_GRACE))
                        .as("exit on SIGTERM; log:%n%s", d.logText())
                        .isZero();
                assertThat(d.logText())
                        .as("port counters; log:%n%s", d.logText())
                        .contains(" truncated 0 short 0 ")
                        .contains(" badChecksum 0 ");
            }
        }
    }

    /** Through an IPv6 router: the AF_XDP port's next hop is the router, from the NDP table. */
    @Test
    void rcPingPongThroughAnIpv6Router() {
        try (TwoHostFabric routed = TwoHostFabric.routedIpv6("AfXdpIpv6IT-routed", 1500)) {
            routed.startDaemons("--port", "xdp");
            RcPingPong.Result r = RcPingPong.run(routed, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-n", "300");
            r.assertCompleted(4096, 300, routed.diagnostics());
            assertGids(r, routed.a().addr(), routed.b().addr());
        }
    }
}
