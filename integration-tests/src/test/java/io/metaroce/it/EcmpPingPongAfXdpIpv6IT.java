package io.metaroce.it;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * {@link EcmpPingPongIT} (5 % loss on the busiest spine link, the busiest link black-holed mid-run,
 * data checked) on the IPv6-only leaf-spine fabric ({@link EcmpFabric#createIpv6}) with the
 * daemons on the AF_XDP port ({@code --port xdp}): the paths the port's IPv6 frames take are
 * picked by the entropy's source port, and the transport recovers on them as over IPv4.
 */
@Tag("multipath")
class EcmpPingPongAfXdpIpv6IT extends EcmpPingPongIT {

    /** Hides {@link EcmpPingPongIT}'s: JUnit runs only this one for this class. */
    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = EcmpFabric.createIpv6("EcmpPingPongAfXdpIpv6IT", EcmpFabric.DEFAULT_LINKS, 1500);
        fabric.startDaemons("--port", "xdp");
    }
}
