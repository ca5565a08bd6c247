package io.metaroce.it;

import java.util.List;

/**
 * Two hosts joined by one veth link (A - B) or through a router namespace (A - R - B), addressed
 * from 198.18.0.0/15 with no route out. Daemons, applications, drop programs and teardown come
 * from {@link NetnsFabric}.
 *
 * <pre>
 *   direct:  A veth-a 198.18.0.1/24 ------------------------- 198.18.0.2/24 veth-b B
 *   router:  A veth-a 198.18.1.1/24 -- rt-a 198.18.1.254 R rt-b 198.18.2.254 -- 198.18.2.1/24 veth-b B
 * </pre>
 *
 * The IPv6-only variants ({@link #directIpv6}, {@link #routedIpv6}) give the fabric interfaces
 * addresses from 2001:db8::/32 (the documentation prefix, no route out) and no IPv4 address; the
 * daemons serve those. The applications' own exchange (QP numbers, GIDs: rdma-core's examples
 * and perftest listen on the first address getaddrinfo gives a passive socket, 0.0.0.0) goes
 * over a separate management link, {@code mgmt-a 198.18.255.1/30 -- 198.18.255.2/30 mgmt-b}, as
 * on a cluster whose back-end fabric is IPv6-only and whose front-end network is not:
 *
 * <pre>
 *   direct:  A veth-a 2001:db8::1/64 ---------------------------- 2001:db8::2/64 veth-b B
 *   router:  A veth-a 2001:db8:1::1/64 -- rt-a 2001:db8:1::fe R rt-b 2001:db8:2::fe -- 2001:db8:2::1/64 veth-b B
 * </pre>
 */
final class TwoHostFabric extends NetnsFabric {

    private final boolean viaRouter;
    private final boolean ipv6;
    private final int mtu;
    /** TX and RX queues of each end of a direct link (veth's default: 1). */
    private int queues = 1;

    private final String routerNs;

    private TwoHostFabric(String testName, boolean viaRouter, int mtu) {
        this(testName, viaRouter, false, mtu);
    }

    private TwoHostFabric(String testName, boolean viaRouter, boolean ipv6, int mtu) {
        super(testName);
        this.viaRouter = viaRouter;
        this.ipv6 = ipv6;
        this.mtu = mtu;
        if (ipv6) {
            this.a = new Host("A", ns("a"), "veth-a", viaRouter ? "2001:db8:1::1" : "2001:db8::1");
            this.b = new Host("B", ns("b"), "veth-b", viaRouter ? "2001:db8:2::1" : "2001:db8::2");
        } else {
            this.a = new Host("A", ns("a"), "veth-a", viaRouter ? "198.18.1.1" : "198.18.0.1");
            this.b = new Host("B", ns("b"), "veth-b", viaRouter ? "198.18.2.1" : "198.18.0.2");
        }
        this.routerNs = viaRouter ? ns("r") : null;
    }

    /** A direct veth link between A and B with the given MTU (9000 lets -m 4096 be active). */
    static TwoHostFabric direct(String testName, int mtu) {
        TwoHostFabric f = new TwoHostFabric(testName, false, mtu);
        f.create();
        return f;
    }

    /**
     * A direct veth link whose ends have {@code queues} TX and RX queues each: traffic the kernel
     * sends on TX queue q of one end arrives on queue q of the other in driver-mode XDP.
     */
    static TwoHostFabric direct(String testName, int mtu, int queues) {
        TwoHostFabric f = new TwoHostFabric(testName, false, mtu);
        f.queues = queues;
        f.create();
        return f;
    }

    /** A and B each linked to a router namespace that forwards between them. */
    static TwoHostFabric routed(String testName, int mtu) {
        TwoHostFabric f = new TwoHostFabric(testName, true, mtu);
        f.create();
        return f;
    }

    /** {@link #direct(String, int)} with IPv6 addresses only. */
    static TwoHostFabric directIpv6(String testName, int mtu) {
        TwoHostFabric f = new TwoHostFabric(testName, false, true, mtu);
        f.create();
        return f;
    }

    /** {@link #routed(String, int)} with IPv6 addresses only (the router forwards IPv6). */
    static TwoHostFabric routedIpv6(String testName, int mtu) {
        TwoHostFabric f = new TwoHostFabric(testName, true, true, mtu);
        f.create();
        return f;
    }

    /** In the IPv6 variants, B's management address: the applications' exchange only. */
    @Override
    String appServerAddr() {
        return ipv6 ? MGMT_B : super.appServerAddr();
    }

    private static final String MGMT_A = "198.18.255.1";
    private static final String MGMT_B = "198.18.255.2";

    @Override
    protected void build() {
        addNamespace(a.ns());
        addNamespace(b.ns());
        if (viaRouter) {
            addNamespace(routerNs);
        }
        if (ipv6) {
            for (String ns : viaRouter ? List.of(a.ns(), b.ns(), routerNs) : List.of(a.ns(), b.ns())) {
                enableIpv6(ns);
            }
        }
        if (viaRouter) {
            Sh.check(
                    "ip",
                    "link",
                    "add",
                    a.ifname(),
                    "netns",
                    a.ns(),
                    "mtu",
                    str(mtu),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "rt-a",
                    "netns",
                    routerNs,
                    "mtu",
                    str(mtu));
            Sh.check(
                    "ip",
                    "link",
                    "add",
                    b.ifname(),
                    "netns",
                    b.ns(),
                    "mtu",
                    str(mtu),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "rt-b",
                    "netns",
                    routerNs,
                    "mtu",
                    str(mtu));
            if (ipv6) {
                Sh.check("ip", "netns", "exec", routerNs, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1");
                Sh.check("ip", "-n", routerNs, "addr", "add", "2001:db8:1::fe/64", "dev", "rt-a", "nodad");
                Sh.check("ip", "-n", routerNs, "addr", "add", "2001:db8:2::fe/64", "dev", "rt-b", "nodad");
            } else {
                Sh.check("ip", "netns", "exec", routerNs, "sysctl", "-qw", "net.ipv4.ip_forward=1");
                Sh.check("ip", "-n", routerNs, "addr", "add", "198.18.1.254/24", "dev", "rt-a");
                Sh.check("ip", "-n", routerNs, "addr", "add", "198.18.2.254/24", "dev", "rt-b");
            }
            Sh.check("ip", "-n", routerNs, "link", "set", "rt-a", "up");
            Sh.check("ip", "-n", routerNs, "link", "set", "rt-b", "up");
        } else {
            String q = str(queues);
            Sh.check(
                    "ip",
                    "link",
                    "add",
                    a.ifname(),
                    "netns",
                    a.ns(),
                    "mtu",
                    str(mtu),
                    "numtxqueues",
                    q,
                    "numrxqueues",
                    q,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    b.ifname(),
                    "netns",
                    b.ns(),
                    "mtu",
                    str(mtu),
                    "numtxqueues",
                    q,
                    "numrxqueues",
                    q);
        }
        for (Host h : List.of(a, b)) {
            if (ipv6) {
                // nodad: the address is usable at once (no duplicate detection on a private link)
                Sh.check("ip", "-n", h.ns(), "addr", "add", h.addr() + "/64", "dev", h.ifname(), "nodad");
            } else {
                Sh.check("ip", "-n", h.ns(), "addr", "add", h.addr() + "/24", "dev", h.ifname());
            }
            Sh.check("ip", "-n", h.ns(), "link", "set", h.ifname(), "up");
        }
        if (ipv6) {
            Sh.check(
                    "ip", "link", "add", "mgmt-a", "netns", a.ns(), "type", "veth", "peer", "name", "mgmt-b", "netns",
                    b.ns());
            Sh.check("ip", "-n", a.ns(), "addr", "add", MGMT_A + "/30", "dev", "mgmt-a");
            Sh.check("ip", "-n", b.ns(), "addr", "add", MGMT_B + "/30", "dev", "mgmt-b");
            Sh.check("ip", "-n", a.ns(), "link", "set", "mgmt-a", "up");
            Sh.check("ip", "-n", b.ns(), "link", "set", "mgmt-b", "up");
        }
        if (viaRouter && ipv6) {
            Sh.check("ip", "-n", a.ns(), "-6", "route", "add", "2001:db8::/32", "via", "2001:db8:1::fe");
            Sh.check("ip", "-n", b.ns(), "-6", "route", "add", "2001:db8::/32", "via", "2001:db8:2::fe");
        } else if (viaRouter) {
            Sh.check("ip", "-n", a.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.1.254");
            Sh.check("ip", "-n", b.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.2.254");
        }
    }

    /**
     * Makes the link lossy: attaches the drop program to the egress of both hosts' interfaces, so
     * MetaRoCE's UDP packets (port 4793) are dropped at {@code loss.rate} in each direction.
     */
    void dropOnLink(Loss loss) {
        dropOnEgress(a, loss);
        dropOnEgress(b, loss);
    }

    void dropOnEgress(Host h, Loss loss) {
        dropOnEgress(h.ns(), h.ifname(), loss);
    }

    void clearDrops() {
        for (Host h : List.of(a, b)) {
            clearEgress(h.ns(), h.ifname());
        }
    }
}
