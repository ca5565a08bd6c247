package io.metaroce.it;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * {@link EcmpSpreadIT} on the IPv6-only leaf-spine fabric ({@link EcmpFabric#createIpv6}) with the
 * daemons on the AF_XDP port ({@code --port xdp}): the frames the port builds carry the entropy's
 * UDP source port (and a flow label derived from it), so the leaves' IPv6 5-tuple hash
 * ({@code net.ipv6.fib_multipath_hash_policy=1}) spreads a QP's paths over the four spine links;
 * each link must carry at least {@value EcmpSpreadIT#MIN_LINK_SHARE_PCT} % of the packets each
 * way, with the data checked.
 */
@Tag("multipath")
class EcmpSpreadAfXdpIpv6IT extends EcmpSpreadIT {

    /** Hides {@link EcmpSpreadIT}'s: JUnit runs only this one for this class. */
    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = EcmpFabric.createIpv6("EcmpSpreadAfXdpIpv6IT", EcmpFabric.DEFAULT_LINKS, 1500);
        String[] args = java.util.Arrays.copyOf(DAEMON_ARGS, DAEMON_ARGS.length + 2);
        args[DAEMON_ARGS.length] = "--port";
        args[DAEMON_ARGS.length + 1] = "xdp";
        fabric.startDaemons(args);
    }
}
