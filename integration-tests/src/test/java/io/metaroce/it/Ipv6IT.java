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
        Proc.Result ss = fabric.exec(fabric.a(), Duration.ofSeconds(10), "ss", "-Htn", "state", "established",
                "( sport = :4792 or dport = :4792 )");
        // (whichever side dialled, one end is port 4792)
        assertThat(ss.output()).as("connection-manager connections in A").contains("[" + fabric.a().addr() + "]:")
                .contains("[" + fabric.b().addr() + "]:").contains("]:4792");
        RcPingPong.run(fabric, PORT.getAndIncrement(), RUN_TIMEOUT, "-c", "-s", "65536", "-n", "200")
                .assertCompleted(65536, 200, fabric.diagnostics());
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
