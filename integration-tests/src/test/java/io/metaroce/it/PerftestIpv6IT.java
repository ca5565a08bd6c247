package io.metaroce.it;

import org.junit.jupiter.api.BeforeAll;

/**
 * Every test of {@link PerftestIT} (rdma-core's pingpong examples, RC and UD, and perftest) between
 * two IPv6-only hosts ({@link TwoHostFabric#directIpv6}): the daemons serve 2001:db8::1 and ::2,
 * GID index 0 is that address, and the tools' own exchange uses the management link.
 */
class PerftestIpv6IT extends PerftestIT {

    /** Hides {@link PerftestIT}'s: JUnit runs only this one for this class. */
    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = TwoHostFabric.directIpv6("PerftestIpv6IT", 1500);
        fabric.startDaemons();
    }
}
