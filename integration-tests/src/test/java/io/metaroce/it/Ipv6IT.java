package io.metaroce.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * IPv6-only hosts (docs/spec/transport.md T-1.3): two namespaces with addresses from
 * 2001:db8::/32 and no IPv4 address, each with its own mrce-nicd on the UDP port, which then
 * serves the interface's IPv6 address. GID index 0 is that address, so the unmodified
 * {@code ibv_rc_pingpong -g 0} connects RC QPs across, the daemons' connection manager runs over
 * IPv6 TCP (the applications' own exchange uses the fabric's management link, {@link
 * TwoHostFabric}). Each run checks the bytes received ({@code -c}), the counts both sides print
 * and that both sides named IPv6 GIDs.
 */
@Timeout(900)
class Ipv6IT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final AtomicInteger PORT = new AtomicInteger(19515);
    private static TwoHostFabric fabric;

    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.directIpv6("Ipv6IT", 1500);
        fabric.startDaemons();
    }

    @AfterAll
    static void teardown() {
        if (fabric != null) {
            fabric.close();
        }
    }

    @Test
    void hostsHaveNoIpv4Address() {
        for (NetnsFabric.Host h : java.util.List.of(fabric.a(), fabric.b())) {
            Proc.Result r = fabric.exec(h, Duration.ofSeconds(10), "ip", "-4", "-o", "addr", "show", "dev", h.ifname());
            assertThat(r.output().strip()).as("IPv4 addresses of %s", h.name()).isEmpty();
        }
    }

    /** rc_pingpong prints "local address: LID .., QPN .., PSN .., GID g" and the same for the remote. */
    private static void assertIpv6Gids(RcPingPong.Result r, TwoHostFabric f) {
        assertThat(r.client().output()).contains("GID " + f.a().addr()).contains("GID " + f.b().addr());
        assertThat(r.server().output()).contains("GID " + f.b().addr()).contains("GID " + f.a().addr());
    }

    @Test
    void rcPingPongWithDataChecked() {
        RcPingPong.Result r = RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c");
        r.assertCompleted(4096, 1000, fabric.diagnostics());
        assertIpv6Gids(r, fabric);
        // The daemons' connection manager ran over IPv6 TCP between the served addresses.
        Proc.Result ss = fabric.exec(
                fabric.a(),
                Duration.ofSeconds(10),
                "ss",
                "-Htn",
                "state",
                "established",
                "( sport = :4792 or dport = :4792 )");
        // (whichever side dialled, one end is port 4792)
        assertThat(ss.output())
                .as("connection-manager connections in A")
                .contains("[" + fabric.a().addr() + "]:")
                .contains("[" + fabric.b().addr() + "]:")
                .contains("]:4792");
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "200")
                .assertCompleted(65536, 200, fabric.diagnostics());
    }

    /** ibv_ud_pingpong -c: UD sends to an IPv6 address handle, the reply AH from the GRH's IPv6 sgid. */
    @Test
    void udPingPongWithDataChecked() {
        java.util.List<String> cmd =
                java.util.List.of("ibv_ud_pingpong", "-d", "mrce0", "-g", "0", "-s", "512", "-n", "500", "-c");
        int port = PORT.getAndIncrement();
        java.util.List<String> server = new java.util.ArrayList<>(cmd);
        server.addAll(java.util.List.of("-p", Integer.toString(port)));
        Proc s = fabric.startApp(fabric.b(), "ud_pingpong-server", server);
        Proc c = null;
        try {
            fabric.awaitTcpListening(fabric.b(), port, s, Duration.ofSeconds(20));
            java.util.List<String> client = new java.util.ArrayList<>(server);
            client.add(fabric.appServerAddr());
            c = fabric.startApp(fabric.a(), "ud_pingpong-client", client);
            AppPair.Exits exits = AppPair.await(fabric, s, c, RUN_TIMEOUT);
            String context =
                    "\n--- server:\n" + s.output() + "\n--- client:\n" + c.output() + "\n" + fabric.diagnostics();
            RcPingPong.parse("server", exits.server(), s.output()).assertCompleted(512, 500, context);
            RcPingPong.parse("client", exits.client(), c.output()).assertCompleted(512, 500, context);
            assertThat(c.output())
                    .contains("GID " + fabric.a().addr())
                    .contains("GID " + fabric.b().addr());
        } finally {
            s.close();
            if (c != null) {
                c.close();
            }
        }
    }

    /**
     * mrce_integrity: 2000 messages of edge-case and random sizes, every byte, length and immediate
     * checked by the server, the checksums of both sides equal.
     */
    @Test
    void integrityOverIpv6() {
        int messages = 2000;
        Integrity.Result r = Integrity.run(fabric, PORT.getAndIncrement(), messages, 0x5eed0006L, RUN_TIMEOUT);
        String context = "\n--- server:\n" + r.server().output() + "\n--- client:\n"
                + r.client().output() + "\n" + fabric.diagnostics();
        assertThat(r.server().ok()).as("server reports OK" + context).isTrue();
        assertThat(r.client().ok()).as("client reports OK" + context).isTrue();
        assertThat(r.client().messages()).isEqualTo(messages);
        assertThat(r.server().messages()).isEqualTo(messages);
        assertThat(r.server().bytes()).isEqualTo(r.client().bytes()).isPositive();
        assertThat(r.server().checksum()).isEqualTo(r.client().checksum());
    }

    /**
     * 5 % loss each way on the IPv6 link (the drop program reads IPv6 UDP too; the loss measured
     * with a UDP probe first): mrce_integrity still delivers every message intact.
     */
    @Test
    void integrityWithFivePercentLossOverIpv6() {
        try (TwoHostFabric f = TwoHostFabric.directIpv6("Ipv6IT-loss", 1500)) {
            f.dropOnLink(TwoHostFabric.Loss.PCT_5);
            // A first probe only resolves the neighbours (NDP), so none of the measured probes waits
            // in the kernel's queue of packets to an unresolved address.
            f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, 20);
            int probes = 4000;
            long got = f.udpProbe(f.a(), f.b(), TwoHostFabric.MRCE_UDP_PORT, 0, probes);
            double measured = 1.0 - (double) got / probes;
            assertThat(measured).as("measured loss on the IPv6 link").isBetween(0.05 * 0.4, 0.05 * 1.8);
            f.startDaemons();
            int messages = 1000;
            Integrity.Result r = Integrity.run(f, PORT.getAndIncrement(), messages, 0x5eed0007L, RUN_TIMEOUT);
            String context = "\n--- server:\n" + r.server().output() + "\n--- client:\n"
                    + r.client().output() + "\n" + f.diagnostics();
            assertThat(r.server().ok()).as("server reports OK" + context).isTrue();
            assertThat(r.client().ok()).as("client reports OK" + context).isTrue();
            assertThat(r.server().messages()).isEqualTo(messages);
            assertThat(r.server().checksum()).isEqualTo(r.client().checksum());
        }
    }

    @Test
    void rcPingPongThroughAnIpv6Router() {
        try (TwoHostFabric routed = TwoHostFabric.routedIpv6("Ipv6IT-routed", 1500)) {
            routed.startDaemons();
            RcPingPong.Result r = RcPingPong.run(routed, PORT.getAndIncrement(), RUN_TIMEOUT, "-c");
            r.assertCompleted(4096, 1000, routed.diagnostics());
            assertIpv6Gids(r, routed);
        }
    }
}
