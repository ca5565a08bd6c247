package io.metaroce.it;

import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link PerftestIT} (rdma-core's pingpong examples, RC and UD, and perftest) between
 * two IPv6-only hosts ({@link TwoHostFabric#directIpv6}) whose daemons run the AF_XDP port
 * ({@code --port xdp}): IPv6 frames built, steered and parsed by the daemons, not the kernel.
 */
class AfXdpPerftestIpv6IT extends PerftestIT {

    /** Hides {@link PerftestIT}'s: JUnit runs only this one for this class. */
    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.directIpv6("AfXdpPerftestIpv6IT", 1500);
        fabric.startDaemons("--port", "xdp");
    }
}
