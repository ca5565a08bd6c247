package io.metaroce.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A small leaf-spine fabric: host A and host B, each behind a leaf router, the two leaves joined
 * by N parallel "spine" links (4 by default). The leaves are namespaces that forward
 * ({@code ip_forward=1}) with an equal-cost multipath route over every spine link in each
 * direction and {@code fib_multipath_hash_policy=1}, so the kernel picks a link per flow from the
 * 5-tuple: the UDP source port chooses the spine.
 *
 * <pre>
 *                            la-s0 198.18.10.1 ===== 198.18.10.2 lb-s0
 *   A veth-a 198.18.1.1 -- la-h   la-s1 198.18.11.1 ===== 198.18.11.2 lb-s1   lb-h -- 198.18.2.1 veth-b B
 *            /24   198.18.1.254 LA la-s2 198.18.12.1 ===== 198.18.12.2 lb-s2 LB 198.18.2.254  /24
 *                            la-s3 198.18.13.1 ===== 198.18.13.2 lb-s3
 * </pre>
 *
 * The applications' own TCP exchange (rc_pingpong's QP numbers, mrce_integrity's credits) does
 * not cross the spine: A and B also share a direct management link ({@code mgmt-a} 198.19.0.1 =
 * {@code mgmt-b} 198.19.0.2, {@link #appServerAddr()}), so the spine counters see MetaRoCE's UDP
 * packets and a few ARP packets, nothing else.
 *
 * <p>Every veth has one queue (AF_XDP binds a queue; kernel traffic on another would miss it), one
 * MTU, IPv6 off; the hosts route 198.18.0.0/15 to their leaf and nothing goes out. Spine link
 * {@code i} is observable and breakable at run time: its packet counters per direction
 * ({@code tx_packets} of {@code la-si} for A to B, of {@code lb-si} for B to A: packets that really
 * crossed it, since the drop program discards before the count), loss or a blackhole for MetaRoCE's
 * UDP packets (the tc-BPF drop program on both ends' egress), and link down/up. The leaves set
 * {@code ignore_routes_with_linkdown=1}, so when one end of a spine link goes down both leaves stop
 * using it: the downed end's next hop is dead, the far end's has lost its carrier.
 *
 * <p>{@link #createIpv6} builds the same shape with IPv6 only on the data side (2001:db8::/32:
 * A 2001:db8:1::1, B 2001:db8:2::1, leaves at ::fe of those /64s, spine link {@code i}
 * 2001:db8:1{i}::1 = ::2 as 2001:db8:10+i::/64; {@code net.ipv6.fib_multipath_hash_policy=1}), the
 * management link staying IPv4: the daemons serve the IPv6 addresses.
 */
final class EcmpFabric extends NetnsFabric {

    static final int DEFAULT_LINKS = 4;
    private static final String MGMT_B = "198.19.0.2";
    private static final Duration ROUTE_SETTLE_TIMEOUT = Duration.ofSeconds(10);
    private static final Pattern FLOW = Pattern.compile("(?m)^flow (\\d+) (\\d+)$");
    private static final Pattern RECEIVED = Pattern.compile("(?m)^received (\\d+)$");

    /** Which way packets cross the spine. */
    enum Direction {
        A_TO_B,
        B_TO_A
    }

    /** Packets that crossed each spine link, per direction (index = link). */
    record Counters(long[] aToB, long[] bToA) {

        long[] of(Direction d) {
            return d == Direction.A_TO_B ? aToB : bToA;
        }

        Counters minus(Counters before) {
            return new Counters(diff(aToB, before.aToB), diff(bToA, before.bToA));
        }

        long total(Direction d) {
            return Arrays.stream(of(d)).sum();
        }

        @Override
        public String toString() {
            return "A->B " + Arrays.toString(aToB) + ", B->A " + Arrays.toString(bToA);
        }

        private static long[] diff(long[] after, long[] before) {
            long[] d = new long[after.length];
            for (int i = 0; i < d.length; i++) {
                d[i] = after[i] - before[i];
            }
            return d;
        }
    }

    private final int links;
    private final int mtu;
    private final boolean ipv6;
    private final String leafA;
    private final String leafB;

    private EcmpFabric(String testName, int links, int mtu) {
        this(testName, links, mtu, false);
    }

    private EcmpFabric(String testName, int links, int mtu, boolean ipv6) {
        super(testName);
        this.ipv6 = ipv6;
        if (links < 2 || links > 64) {
            throw new IllegalArgumentException("spine links: 2 to 64, not " + links);
        }
        this.links = links;
        this.mtu = mtu;
        this.a = new Host("A", ns("a"), "veth-a", ipv6 ? "2001:db8:1::1" : "198.18.1.1");
        this.b = new Host("B", ns("b"), "veth-b", ipv6 ? "2001:db8:2::1" : "198.18.2.1");
        this.leafA = ns("la");
        this.leafB = ns("lb");
    }

    /** A - leaf A - {@code links} spine links - leaf B - B, every link with the given MTU. */
    static EcmpFabric create(String testName, int links, int mtu) {
        EcmpFabric f = new EcmpFabric(testName, links, mtu);
        f.create();
        return f;
    }

    /** {@link #create} with IPv6 addresses only on the hosts' data interfaces and the spine. */
    static EcmpFabric createIpv6(String testName, int links, int mtu) {
        EcmpFabric f = new EcmpFabric(testName, links, mtu, true);
        f.create();
        return f;
    }

    int links() {
        return links;
    }

    String leafA() {
        return leafA;
    }

    String leafB() {
        return leafB;
    }

    /** The spine link's interface in leaf A (A to B leaves by it). */
    static String spineIfA(int link) {
        return "la-s" + link;
    }

    /** The spine link's interface in leaf B (B to A leaves by it). */
    static String spineIfB(int link) {
        return "lb-s" + link;
    }

    @Override
    protected void build() {
        for (String ns : List.of(a.ns(), leafA, leafB, b.ns())) {
            addNamespace(ns);
        }
        if (ipv6) {
            buildIpv6();
            return;
        }
        for (String leaf : List.of(leafA, leafB)) {
            ecmpRouter(leaf);
        }
        veth(a.ns(), a.ifname(), leafA, "la-h");
        veth(b.ns(), b.ifname(), leafB, "lb-h");
        address(a.ns(), a.ifname(), a.addr() + "/24");
        address(leafA, "la-h", "198.18.1.254/24");
        address(b.ns(), b.ifname(), b.addr() + "/24");
        address(leafB, "lb-h", "198.18.2.254/24");
        List<String> towardB = new ArrayList<>(List.of("ip", "-n", leafA, "route", "add", "198.18.2.0/24"));
        List<String> towardA = new ArrayList<>(List.of("ip", "-n", leafB, "route", "add", "198.18.1.0/24"));
        for (int i = 0; i < links; i++) {
            veth(leafA, spineIfA(i), leafB, spineIfB(i));
            address(leafA, spineIfA(i), spineAddrA(i) + "/24");
            address(leafB, spineIfB(i), spineAddrB(i) + "/24");
            towardB.addAll(List.of("nexthop", "via", spineAddrB(i), "dev", spineIfA(i)));
            towardA.addAll(List.of("nexthop", "via", spineAddrA(i), "dev", spineIfB(i)));
        }
        Sh.check(towardB.toArray(String[]::new));
        Sh.check(towardA.toArray(String[]::new));
        Sh.check("ip", "-n", a.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.1.254");
        Sh.check("ip", "-n", b.ns(), "route", "add", "198.18.0.0/15", "via", "198.18.2.254");
        veth(a.ns(), "mgmt-a", b.ns(), "mgmt-b");
        address(a.ns(), "mgmt-a", "198.19.0.1/24");
        address(b.ns(), "mgmt-b", MGMT_B + "/24");
    }

    private void buildIpv6() {
        for (String ns : List.of(a.ns(), leafA, leafB, b.ns())) {
            enableIpv6(ns);
        }
        for (String leaf : List.of(leafA, leafB)) {
            Sh.check(
                    "ip",
                    "netns",
                    "exec",
                    leaf,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.forwarding=1",
                    "net.ipv6.fib_multipath_hash_policy=1",
                    "net.ipv6.conf.all.ignore_routes_with_linkdown=1",
                    "net.ipv6.conf.default.ignore_routes_with_linkdown=1");
        }
        veth(a.ns(), a.ifname(), leafA, "la-h");
        veth(b.ns(), b.ifname(), leafB, "lb-h");
        address6(a.ns(), a.ifname(), a.addr() + "/64");
        address6(leafA, "la-h", "2001:db8:1::fe/64");
        address6(b.ns(), b.ifname(), b.addr() + "/64");
        address6(leafB, "lb-h", "2001:db8:2::fe/64");
        List<String> towardB = new ArrayList<>(List.of("ip", "-6", "-n", leafA, "route", "add", "2001:db8:2::/64"));
        List<String> towardA = new ArrayList<>(List.of("ip", "-6", "-n", leafB, "route", "add", "2001:db8:1::/64"));
        for (int i = 0; i < links; i++) {
            veth(leafA, spineIfA(i), leafB, spineIfB(i));
            String net = "2001:db8:" + Integer.toHexString(0x10 + i) + "::";
            address6(leafA, spineIfA(i), net + "1/64");
            address6(leafB, spineIfB(i), net + "2/64");
            towardB.addAll(List.of("nexthop", "via", net + "2", "dev", spineIfA(i)));
            towardA.addAll(List.of("nexthop", "via", net + "1", "dev", spineIfB(i)));
        }
        Sh.check(towardB.toArray(String[]::new));
        Sh.check(towardA.toArray(String[]::new));
        Sh.check("ip", "-6", "-n", a.ns(), "route", "add", "2001:db8::/32", "via", "2001:db8:1::fe");
        Sh.check("ip", "-6", "-n", b.ns(), "route", "add", "2001:db8::/32", "via", "2001:db8:2::fe");
        veth(a.ns(), "mgmt-a", b.ns(), "mgmt-b");
        address(a.ns(), "mgmt-a", "198.19.0.1/24");
        address(b.ns(), "mgmt-b", MGMT_B + "/24");
    }

    /** An IPv6 address, usable at once (no duplicate detection on these private links). */
    private static void address6(String ns, String ifname, String cidr) {
        Sh.check("ip", "-n", ns, "addr", "add", cidr, "dev", ifname, "nodad");
        Sh.check("ip", "-n", ns, "link", "set", ifname, "up");
    }

    /** B's management address: the applications' TCP exchange goes there, off the spine. */
    @Override
    String appServerAddr() {
        return MGMT_B;
    }

    private void veth(String ns1, String if1, String ns2, String if2) {
        Sh.check(
                "ip",
                "link",
                "add",
                if1,
                "netns",
                ns1,
                "mtu",
                str(mtu),
                "numtxqueues",
                "1",
                "numrxqueues",
                "1",
                "type",
                "veth",
                "peer",
                "name",
                if2,
                "netns",
                ns2,
                "mtu",
                str(mtu),
                "numtxqueues",
                "1",
                "numrxqueues",
                "1");
    }

    private static void address(String ns, String ifname, String cidr) {
        Sh.check("ip", "-n", ns, "addr", "add", cidr, "dev", ifname);
        Sh.check("ip", "-n", ns, "link", "set", ifname, "up");
    }

    private static String spineAddrA(int link) {
        return "198.18." + (10 + link) + ".1";
    }

    private static String spineAddrB(int link) {
        return "198.18." + (10 + link) + ".2";
    }

    // --- observing the spine ---

    /** The packets each spine link has carried so far, both directions. */
    Counters counters() {
        return new Counters(txPackets(leafA, "la-s"), txPackets(leafB, "lb-s"));
    }

    private long[] txPackets(String leaf, String ifPrefix) {
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", leaf, "cat"));
        for (int i = 0; i < links; i++) {
            cmd.add("/sys/class/net/" + ifPrefix + i + "/statistics/tx_packets");
        }
        String out = Sh.check(cmd.toArray(String[]::new));
        long[] counts = out.lines().mapToLong(l -> Long.parseLong(l.strip())).toArray();
        if (counts.length != links) {
            throw new IllegalStateException("expected " + links + " counters from " + leaf + ", got: " + out);
        }
        return counts;
    }

    // --- breaking the spine ---

    /** Drops MetaRoCE's UDP packets (port 4793) on spine link {@code link} at {@code loss.rate}, both ways. */
    void dropOnSpine(int link, Loss loss) {
        dropOnEgress(leafA, spineIfA(link), loss);
        dropOnEgress(leafB, spineIfB(link), loss);
    }

    /**
     * Limits spine link {@code link} to {@code mbit} Mbit/s each way: a token bucket (burst 32 KiB,
     * 10 ms of queue) as the root qdisc of both ends; {@link #clearRate} undoes it.
     */
    void rateLimitSpine(int link, int mbit) {
        for (String[] end : new String[][] {{leafA, spineIfA(link)}, {leafB, spineIfB(link)}}) {
            Sh.check(
                    "ip",
                    "netns",
                    "exec",
                    end[0],
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    end[1],
                    "root",
                    "tbf",
                    "rate",
                    mbit + "mbit",
                    "burst",
                    "32kb",
                    "latency",
                    "10ms");
        }
    }

    /** Removes a rate limit of spine link {@code link}, if any. */
    void clearRate(int link) {
        Sh.run("ip", "netns", "exec", leafA, "tc", "qdisc", "del", "dev", spineIfA(link), "root");
        Sh.run("ip", "netns", "exec", leafB, "tc", "qdisc", "del", "dev", spineIfB(link), "root");
    }

    /** Removes loss or blackhole from spine link {@code link}. */
    void clearSpine(int link) {
        clearEgress(leafA, spineIfA(link));
        clearEgress(leafB, spineIfB(link));
    }

    /**
     * Takes spine link {@code link} down at leaf A's end (leaf B's end loses its carrier) and waits
     * until both leaves' multipath routes no longer use it.
     */
    void linkDown(int link) {
        Sh.check("ip", "-n", leafA, "link", "set", spineIfA(link), "down");
        awaitNexthop(link, false);
    }

    /** Brings spine link {@code link} back and waits until both leaves use it again. */
    void linkUp(int link) {
        Sh.check("ip", "-n", leafA, "link", "set", spineIfA(link), "up");
        awaitNexthop(link, true);
    }

    /** Whether both leaves' routes use spine link {@code link} (neither next hop dead nor linkdown). */
    boolean nexthopUsable(int link) {
        return usable(leafA, "198.18.2.0/24", spineIfA(link)) && usable(leafB, "198.18.1.0/24", spineIfB(link));
    }

    private boolean nexthopUnusable(int link) {
        return !usable(leafA, "198.18.2.0/24", spineIfA(link)) && !usable(leafB, "198.18.1.0/24", spineIfB(link));
    }

    private void awaitNexthop(int link, boolean usable) {
        // Carrier changes reach the far leaf's routes through linkwatch, a moment later.
        boolean settled = Wait.until(ROUTE_SETTLE_TIMEOUT, () -> usable ? nexthopUsable(link) : nexthopUnusable(link));
        if (!settled) {
            throw new AssertionError("spine link " + link + " did not become " + (usable ? "usable" : "unusable")
                    + " within " + ROUTE_SETTLE_TIMEOUT + ":\n" + routes());
        }
    }

    private static boolean usable(String leaf, String prefix, String dev) {
        for (String line :
                Sh.check("ip", "-n", leaf, "route", "show", prefix).lines().toList()) {
            if (line.contains(" dev " + dev + " ")) {
                return !line.contains(" dead") && !line.contains(" linkdown");
            }
        }
        throw new IllegalStateException("no next hop via " + dev + " in " + leaf + "'s route to " + prefix);
    }

    /** Both leaves' routes, for failure messages. */
    String routes() {
        return "leaf A: " + Sh.check("ip", "-n", leafA, "route", "show", "198.18.2.0/24") + "leaf B: "
                + Sh.check("ip", "-n", leafB, "route", "show", "198.18.1.0/24");
    }

    // --- plain UDP flows (udp_flows) ---

    /**
     * Sends {@code count} datagrams on each of {@code flows} UDP flows from {@code from} to port
     * {@code port} on {@code to}, flow {@code i} from source port {@code firstSourcePort + i}, and
     * returns what arrived per source port (flows that lost everything are absent).
     */
    Map<Integer, Long> sendFlows(Host from, Host to, int port, int firstSourcePort, int flows, int count) {
        String tool = Env.bpfDir().resolve("udp_flows").toString();
        long expected = (long) flows * count;
        Proc rx = start(to, "udp-flows-rx", List.of(tool, "recv", str(port), Long.toString(expected), "1000"));
        try {
            if (!Wait.until(Duration.ofSeconds(10), () -> rx.output().contains("listening") || !rx.isAlive())) {
                throw new AssertionError("udp_flows receiver did not start: " + rx.output());
            }
            Proc.Result tx = exec(
                    from,
                    Duration.ofSeconds(120),
                    tool,
                    "send",
                    to.addr(),
                    str(port),
                    str(firstSourcePort),
                    str(flows),
                    str(count));
            if (!tx.ok() || !tx.output().contains("sent " + expected)) {
                throw new AssertionError("udp_flows send failed: " + tx.output());
            }
            int exit = rx.waitFor(Duration.ofSeconds(60));
            String out = rx.output();
            Matcher total = RECEIVED.matcher(out);
            if (exit != 0 || !total.find()) {
                throw new AssertionError("udp_flows receive failed: " + out);
            }
            Map<Integer, Long> perFlow = new TreeMap<>();
            Matcher m = FLOW.matcher(out);
            while (m.find()) {
                perFlow.put(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
            }
            return perFlow;
        } finally {
            rx.close();
        }
    }

    /**
     * Finds the spine link of each flow: sends {@code probes} datagrams on one flow at a time and
     * sees which link's counter (in the direction from {@code from}) moved by that much. Flow
     * {@code i} has source port {@code firstSourcePort + i}; the result's element {@code i} is its
     * link. Fails if a flow's datagrams did not all cross exactly one link.
     */
    int[] mapFlows(Host from, Host to, int port, int firstSourcePort, int flows) {
        final int probes = 8;
        Direction dir = from.equals(a) ? Direction.A_TO_B : Direction.B_TO_A;
        String tool = Env.bpfDir().resolve("udp_flows").toString();
        int[] linkOf = new int[flows];
        for (int i = 0; i < flows; i++) {
            Counters before = counters();
            Proc.Result tx = exec(
                    from,
                    Duration.ofSeconds(20),
                    tool,
                    "send",
                    to.addr(),
                    str(port),
                    str(firstSourcePort + i),
                    "1",
                    str(probes));
            if (!tx.ok()) {
                throw new AssertionError("udp_flows send failed: " + tx.output());
            }
            // Forwarding runs in softirq context, a moment after the sender returns.
            long[][] delta = new long[1][];
            Wait.until(Duration.ofSeconds(5), () -> {
                delta[0] = counters().minus(before).of(dir);
                return Arrays.stream(delta[0]).sum() >= probes;
            });
            int link = -1;
            for (int l = 0; l < links; l++) {
                if (delta[0][l] >= probes) {
                    if (link >= 0) {
                        link = -2; // more than one link: not pinned
                        break;
                    }
                    link = l;
                }
            }
            if (link < 0) {
                throw new AssertionError("flow from source port " + (firstSourcePort + i) + " (" + dir
                        + ") did not cross exactly one spine link with all " + probes + " datagrams: "
                        + Arrays.toString(delta[0]) + "\n" + routes());
            }
            linkOf[i] = link;
        }
        return linkOf;
    }

    /** How many flows each link got, from {@link #mapFlows}. */
    int[] flowsPerLink(int[] linkOf) {
        int[] perLink = new int[links];
        for (int l : linkOf) {
            perLink[l]++;
        }
        return perLink;
    }
}
