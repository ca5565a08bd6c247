package io.metaroce.nic.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.metaroce.abi.IpAddr;
import io.metaroce.nic.net.NeighbourCache.Pending;
import io.metaroce.nic.net.NeighbourCache.Resolution;
import io.metaroce.nic.net.NeighbourCache.Resolved;
import io.metaroce.nic.sys.Inet4;
import java.util.HexFormat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Netlink route and neighbour resolution against real kernel tables, in namespaces this test
 * creates: the MACs resolved are those in /sys/class/net, an unknown neighbour is pending until
 * its ARP reply, a gateway's MAC is used for an off-link destination, a route change is seen on
 * refresh.
 */
class NeighbourCacheTest {
    private static final long REFRESH_NS = 1_000_000_000L;
    private static final long WAIT_NS = 5_000_000_000L;

    private NetNs netns;

    @BeforeEach
    void setUp() {
        String missing = NetNs.missingCapability();
        assumeTrue(missing == null, missing);
        netns = new NetNs();
    }

    @AfterEach
    void tearDown() {
        if (netns != null) {
            netns.close();
        }
    }

    @Test
    void resolvesAnOnLinkHostAfterItsArpReply() throws Exception {
        String a = netns.add("a");
        String b = netns.add("b");
        netns.veth(a, "a0", "198.18.60.1/24", b, "b0", "198.18.60.2/24");

        Resolution[] seen = NetNs.call(a, () -> {
            try (NeighbourCache cache = new NeighbourCache(Netlink.open(), REFRESH_NS)) {
                Resolution first = cache.resolve(Inet4.parse("198.18.60.2"), 0);
                Resolution nobody = cache.resolve(Inet4.parse("198.18.60.77"), 0);
                return new Resolution[] {first, nobody, awaitResolved(cache, Inet4.parse("198.18.60.2"), 0)};
            }
        });

        assertThat(seen[0]).isInstanceOf(Pending.class);
        assertThat(seen[1]).isInstanceOf(Pending.class);
        Resolved r = (Resolved) seen[2];
        assertThat(r.ifindex()).isEqualTo(Integer.parseInt(NetNs.sys(a, "a0", "ifindex")));
        assertThat(Inet4.toString(r.srcIp())).isEqualTo("198.18.60.1");
        assertThat(Inet4.toString(r.nextHopIp())).isEqualTo("198.18.60.2");
        assertThat(mac(r.srcMac())).isEqualTo(NetNs.sys(a, "a0", "address"));
        assertThat(mac(r.dstMac())).isEqualTo(NetNs.sys(b, "b0", "address"));
        assertThat(r.mtu()).isEqualTo(1500);
    }

    @Test
    void usesTheGatewayAndFollowsARouteChangeOnRefresh() throws Exception {
        String a = netns.add("a");
        String r = netns.add("r");
        String b = netns.add("b");
        netns.veth(a, "a0", "198.18.61.1/24", r, "r0", "198.18.61.254/24");
        netns.veth(a, "a1", "198.18.63.1/24", r, "r1", "198.18.63.254/24");
        netns.veth(r, "r2", "198.18.62.254/24", b, "b0", "198.18.62.1/24");
        NetNs.ip("-n", a, "route", "add", "198.18.62.0/24", "via", "198.18.61.254");
        int dst = Inet4.parse("198.18.62.1");

        Resolution[] seen = NetNs.call(a, () -> {
            try (NeighbourCache cache = new NeighbourCache(Netlink.open(), REFRESH_NS)) {
                Resolution before = awaitResolved(cache, dst, 0);
                NetNs.ip("-n", a, "route", "replace", "198.18.62.0/24", "via", "198.18.63.254");
                Resolution cached = cache.resolve(dst, 1);
                int changed = cache.refresh(REFRESH_NS + 1);
                Resolution after = awaitResolved(cache, dst, REFRESH_NS + 1);
                return new Resolution[] {before, cached, after, new Pending("changed " + changed)};
            }
        });

        Resolved before = (Resolved) seen[0];
        assertThat(before.ifindex()).isEqualTo(Integer.parseInt(NetNs.sys(a, "a0", "ifindex")));
        assertThat(Inet4.toString(before.srcIp())).isEqualTo("198.18.61.1");
        assertThat(Inet4.toString(before.nextHopIp())).isEqualTo("198.18.61.254");
        assertThat(mac(before.srcMac())).isEqualTo(NetNs.sys(a, "a0", "address"));
        assertThat(mac(before.dstMac())).isEqualTo(NetNs.sys(r, "r0", "address"));
        assertThat(seen[1]).as("cached until the refresh").isEqualTo(before);
        assertThat(((Pending) seen[3]).reason()).isEqualTo("changed 1");
        Resolved after = (Resolved) seen[2];
        assertThat(after.ifindex()).isEqualTo(Integer.parseInt(NetNs.sys(a, "a1", "ifindex")));
        assertThat(Inet4.toString(after.srcIp())).isEqualTo("198.18.63.1");
        assertThat(Inet4.toString(after.nextHopIp())).isEqualTo("198.18.63.254");
        assertThat(mac(after.srcMac())).isEqualTo(NetNs.sys(a, "a1", "address"));
        assertThat(mac(after.dstMac())).isEqualTo(NetNs.sys(r, "r1", "address"));
    }

    /**
     * IPv6: an on-link neighbour is pending until its NDP advertisement (the cache's solicit makes
     * the kernel send a neighbour solicitation), then resolves to its MAC from the served address;
     * an off-link destination resolves to its gateway's MAC.
     */
    @Test
    void resolvesIpv6NeighboursThroughNdpAndTheGateway() throws Exception {
        String a = netns.add("a");
        String b = netns.add("b");
        for (String ns : new String[] {a, b}) {
            NetNs.sh(
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=0",
                    "net.ipv6.conf.default.disable_ipv6=0");
        }
        NetNs.ip("link", "add", "a0", "netns", a, "type", "veth", "peer", "name", "b0", "netns", b);
        NetNs.ip("-n", a, "addr", "add", "2001:db8:60::1/64", "dev", "a0", "nodad");
        NetNs.ip("-n", b, "addr", "add", "2001:db8:60::2/64", "dev", "b0", "nodad");
        NetNs.ip("-n", a, "link", "set", "a0", "up");
        NetNs.ip("-n", b, "link", "set", "b0", "up");
        NetNs.ip("-n", a, "-6", "route", "add", "2001:db8:62::/64", "via", "2001:db8:60::2");
        int peer = IpAddr.parse("2001:db8:60::2");
        int offLink = IpAddr.parse("2001:db8:62::1");

        Resolution[] seen = NetNs.call(a, () -> {
            try (NeighbourCache cache = new NeighbourCache(Netlink.open(), REFRESH_NS)) {
                Resolution first = cache.resolve(peer, 0);
                return new Resolution[] {first, awaitResolved(cache, peer, 0), awaitResolved(cache, offLink, 0)};
            }
        });

        assertThat(seen[0]).isInstanceOf(Pending.class);
        Resolved r = (Resolved) seen[1];
        assertThat(r.ifindex()).isEqualTo(Integer.parseInt(NetNs.sys(a, "a0", "ifindex")));
        assertThat(IpAddr.isV6(r.srcIp())).isTrue();
        assertThat(IpAddr.toString(r.srcIp())).isEqualTo("2001:db8:60:0:0:0:0:1");
        assertThat(r.nextHopIp()).isEqualTo(peer);
        assertThat(mac(r.srcMac())).isEqualTo(NetNs.sys(a, "a0", "address"));
        assertThat(mac(r.dstMac())).isEqualTo(NetNs.sys(b, "b0", "address"));
        Resolved routed = (Resolved) seen[2];
        assertThat(routed.nextHopIp()).as("the gateway").isEqualTo(peer);
        assertThat(mac(routed.dstMac())).isEqualTo(NetNs.sys(b, "b0", "address"));
    }

    @Test
    void aDestinationWithoutARouteIsPendingWithTheReason() throws Exception {
        String a = netns.add("a");
        Resolution r = NetNs.call(a, () -> {
            try (NeighbourCache cache = new NeighbourCache(Netlink.open(), REFRESH_NS)) {
                return cache.resolve(Inet4.parse("198.18.99.1"), 0);
            }
        });
        assertThat(r).isInstanceOf(Pending.class);
        assertThat(((Pending) r).reason()).contains("RTM_GETROUTE 198.18.99.1").contains("errno 101"); // ENETUNREACH
    }

    /** Polls resolve (bounded by a deadline) until the kernel has the neighbour's MAC. */
    private static Resolution awaitResolved(NeighbourCache cache, int dstIp, long nowNs) {
        long deadline = System.nanoTime() + WAIT_NS;
        Resolution r = cache.resolve(dstIp, nowNs);
        while (!(r instanceof Resolved) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            r = cache.resolve(dstIp, nowNs);
        }
        assertThat(r).as("resolved within %d ms", WAIT_NS / 1_000_000).isInstanceOf(Resolved.class);
        return r;
    }

    private static String mac(byte[] mac) {
        return HexFormat.ofDelimiter(":").formatHex(mac);
    }
}
