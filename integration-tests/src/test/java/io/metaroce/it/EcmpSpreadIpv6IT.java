package io.metaroce.it;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;

/**
 * {@link EcmpSpreadIT} on an IPv6-only leaf-spine fabric ({@link EcmpFabric#createIpv6}): the
 * leaves hash the IPv6 5-tuple ({@code net.ipv6.fib_multipath_hash_policy=1}), so the entropy's
 * UDP source port spreads a QP's paths over the four spine links as it does over IPv4; each link
 * must carry at least {@value EcmpSpreadIT#MIN_LINK_SHARE_PCT} % of the packets each way, with
 * the data checked (rc_pingpong -c, mrce_integrity).
 */
@Tag("multipath")
class EcmpSpreadIpv6IT extends EcmpSpreadIT {

    /** Hides {@link EcmpSpreadIT}'s: JUnit runs only this one for this class. */
    @BeforeAll
    static void fabric() {
        Env.assumeNamespaces();
        fabric = EcmpFabric.createIpv6("EcmpSpreadIpv6IT", EcmpFabric.DEFAULT_LINKS, 1500);
        fabric.startDaemons(DAEMON_ARGS);
    }
}
