package io.metaroce.it.container;

import io.metaroce.it.Env;
import io.metaroce.it.NetnsFabric;
import io.metaroce.it.Sh;
import io.metaroce.it.Wait;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A leaf-spine fabric whose hosts are containers of the node image ({@code docker/build-image}):
 * hosts on leaf A, hosts on leaf B, the two leaves joined by N parallel spine links (4 by
 * default), plus a management bridge that every host is on. The standard shape is
 * {@code builder(..).leafA("A").leafB("B")}: hostA - leafA - 4 spine links - leafB - hostB.
 *
 * <pre>
 *   A fab0 198.18.64.1 -- la-hA  LA  la-s0 198.18.10.1 ===== 198.18.10.2 lb-s0  LB  lb-hB -- 198.18.96.1 fab0 B
 *   C fab0 198.18.65.1 -- la-hC      la-s1 198.18.11.1 ===== 198.18.11.2 lb-s1
 *                                    ...                                               (leaf B's hosts:
 *   every host: mgmt0 198.19.0.K/24 on the bridge br0 in the management namespace       198.18.(96+k).1)
 * </pre>
 *
 * <p>Hosts are containers (Testcontainers, network mode none, capabilities instead of
 * {@code --privileged}, labelled with the owning JVM's pid); leaves and the management bridge
 * are network namespaces on the host ({@code mrcect-<jvm pid>-<random>-la|lb|mg}). The test plumbs
 * veths into each container's namespace by its pid. Leaves forward with an equal-cost multipath
 * route over the spine links and {@code fib_multipath_hash_policy=1}, so the UDP source port
 * picks the spine (the recipe of the namespace {@code EcmpFabric}); leaf A's hosts are
 * 198.18.(64+k).1/24, leaf B's 198.18.(96+k).1/24, each behind its leaf's .254. Applications'
 * own TCP exchange (QP numbers, credits) uses the management addresses, so the spine carries
 * MetaRoCE's UDP and ARP only. Every link has one queue per direction, one MTU, IPv6 off.
 *
 * <p>With {@code planes(2)} every host also has {@code fab1} on a second, separate plane: its own
 * leaves ({@code ...-la2}, {@code ...-lb2}) and spine links (198.18.(200+i).1 = .2), each host's
 * plane-2 address its plane-1 address plus 64 in the third octet (leaf A's hosts
 * 198.18.(128+k).1, leaf B's 198.18.(160+k).1), so hosts are numbered alike on both planes, as a
 * multi-plane device ({@code mrce-nicd --device mrce0=fab0+fab1}, {@link #startMultiPlaneDaemons})
 * needs. Each host routes 198.18.128.0/18 by {@code fab1}, the rest of 198.18.0.0/15 by {@code fab0}.
 *
 * <p>{@link #close()} (or a shutdown hook when the JVM exits first) kills what runs in the
 * containers, removes them (and with them their veths) and deletes the namespaces; containers
 * and namespaces left by a killed JVM are reaped when the next fabric is built.
 */
final class ContainerFabric implements AutoCloseable {

    static final int DEFAULT_SPINES = 4;
    private static final Duration ROUTE_SETTLE_TIMEOUT = Duration.ofSeconds(10);

    /** Packets that crossed each spine link, per direction (index = link). */
    record Counters(long[] aToB, long[] bToA) {

        Counters minus(Counters before) {
            return new Counters(diff(aToB, before.aToB), diff(bToA, before.bToA));
        }

        long totalAtoB() {
            return Arrays.stream(aToB).sum();
        }

        long totalBtoA() {
            return Arrays.stream(bToA).sum();
        }

        /** Both directions of link {@code i}. */
        long both(int i) {
            return aToB[i] + bToA[i];
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

    static Builder builder(String testName) {
        return new Builder(testName);
    }

    static final class Builder {
        private final String testName;
        private List<String> leafA = List.of("A");
        private List<String> leafB = List.of("B");
        private int spines = DEFAULT_SPINES;
        private int mtu = 1500;
        private int planes = 1;

        private Builder(String testName) {
            this.testName = testName;
        }

        /** The hosts behind leaf A (names, used for containers and logs). */
        Builder leafA(String... hosts) {
            this.leafA = List.of(hosts);
            return this;
        }

        Builder leafB(String... hosts) {
            this.leafB = List.of(hosts);
            return this;
        }

        Builder spines(int n) {
            if (n < 1 || n > 32) {
                throw new IllegalArgumentException("spine links: 1 to 32, not " + n);
            }
            this.spines = n;
            return this;
        }

        Builder mtu(int mtu) {
            this.mtu = mtu;
            return this;
        }

        /** 1 (default) or 2: a second, separate plane (fab1 in every host, its own leaves and spines). */
        Builder planes(int n) {
            if (n < 1 || n > 2) {
                throw new IllegalArgumentException("planes: 1 or 2, not " + n);
            }
            this.planes = n;
            return this;
        }

        /** Builds the image if needed, reaps leftovers, starts the containers and plumbs the fabric. */
        ContainerFabric build() {
            ContainerFabric f = new ContainerFabric(this);
            try {
                f.create();
            } catch (RuntimeException | Error e) {
                f.close();
                throw e;
            }
            return f;
        }
    }

    private final String id;
    private final int mtu;
    private final String leafA;
    private final String leafB;
    private final String mgmt;
    private final Map<String, Node> hosts = new LinkedHashMap<>();
    private final Map<String, Link> hostLinks = new LinkedHashMap<>();
    private final List<String> leafAHosts;
    private final List<String> leafBHosts;
    private final List<Link> spines = new ArrayList<>();
    private final int spineCount;
    private final int planes;
    private final String leafA2;
    private final String leafB2;
    private final List<Link> spines2 = new ArrayList<>();
    private final List<String> namespaces = new ArrayList<>();
    private final Thread shutdownHook;
    private final String testName;
    private boolean closed;

    private ContainerFabric(Builder b) {
        this.testName = b.testName;
        this.id = ContainerEnv.NS_PREFIX + NetnsFabric.newTag();
        this.mtu = b.mtu;
        this.leafA = id + "-la";
        this.leafB = id + "-lb";
        this.mgmt = id + "-mg";
        this.leafAHosts = b.leafA;
        this.leafBHosts = b.leafB;
        this.spineCount = b.spines;
        this.planes = b.planes;
        this.leafA2 = id + "-la2";
        this.leafB2 = id + "-lb2";
        this.shutdownHook = new Thread(this::teardown, "container-fabric-teardown-" + id);
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    private void create() {
        ContainerEnv.reapLeftovers();
        String image = ContainerEnv.image();
        var logDir = Env.logDir(testName + "/" + id);
        int k = 1;
        for (String name : leafAHosts) {
            hosts.put(
                    name,
                    new Node(
                            name,
                            "198.18." + (64 + leafAHosts.indexOf(name)) + ".1",
                            "198.19.0." + k++,
                            image,
                            id,
                            logDir));
        }
        for (String name : leafBHosts) {
            hosts.put(
                    name,
                    new Node(
                            name,
                            "198.18." + (96 + leafBHosts.indexOf(name)) + ".1",
                            "198.19.0." + k++,
                            image,
                            id,
                            logDir));
        }
        for (Node n : hosts.values()) {
            n.startContainer();
        }
        for (String ns : List.of(leafA, leafB, mgmt)) {
            NetnsFabric.addNamespace(ns, namespaces);
        }
        for (String leaf : List.of(leafA, leafB)) {
            NetnsFabric.ecmpRouter(leaf);
        }
        Sh.check("ip", "-n", mgmt, "link", "add", "br0", "type", "bridge");
        Sh.check("ip", "-n", mgmt, "link", "set", "br0", "up");
        for (Node n : hosts.values()) {
            plumbHost(
                    n, leafAHosts.contains(n.name()) ? leafA : leafB, leafAHosts.contains(n.name()) ? "la-h" : "lb-h");
        }
        List<String> towardB = new ArrayList<>(List.of("ip", "-n", leafA, "route", "add", "198.18.96.0/19"));
        List<String> towardA = new ArrayList<>(List.of("ip", "-n", leafB, "route", "add", "198.18.64.0/19"));
        for (int i = 0; i < spineCount; i++) {
            Link.End a = new Link.End("leaf A", List.of("ip", "netns", "exec", leafA), spineIfA(i));
            Link.End b = new Link.End("leaf B", List.of("ip", "netns", "exec", leafB), spineIfB(i));
            veth(leafA, spineIfA(i), leafB, spineIfB(i));
            address(a, spineAddrA(i) + "/24");
            address(b, spineAddrB(i) + "/24");
            spines.add(new Link("spine " + i, a, b));
            towardB.addAll(List.of("nexthop", "via", spineAddrB(i), "dev", spineIfA(i)));
            towardA.addAll(List.of("nexthop", "via", spineAddrA(i), "dev", spineIfB(i)));
        }
        Sh.check(towardB.toArray(String[]::new));
        Sh.check(towardA.toArray(String[]::new));
        if (planes == 2) {
            createPlane2();
        }
    }

    /** The second plane: leaves la2/lb2, fab1 in every host, spine links 198.18.(200+i).0/24. */
    private void createPlane2() {
        for (String leaf : List.of(leafA2, leafB2)) {
            NetnsFabric.addNamespace(leaf, namespaces);
            NetnsFabric.ecmpRouter(leaf);
        }
        for (Node n : hosts.values()) {
            boolean onA = leafAHosts.contains(n.name());
            String leaf = onA ? leafA2 : leafB2;
            String subnet = plane2Subnet(n);
            Link.End host = new Link.End("host " + n.name(), n.inNetns(), Node.FABRIC_IF2);
            Link.End leafEnd = new Link.End(
                    onA ? "leaf A2" : "leaf B2",
                    List.of("ip", "netns", "exec", leaf),
                    (onA ? "la-h" : "lb-h") + n.name());
            veth(leaf, leafEnd.ifname(), Long.toString(n.pid()), Node.FABRIC_IF2);
            address(host, subnet + ".1/24");
            address(leafEnd, subnet + ".254/24");
            Sh.check(n.inNetns("ip", "route", "add", "198.18.128.0/18", "via", subnet + ".254", "dev", Node.FABRIC_IF2)
                    .toArray(String[]::new));
        }
        List<String> towardB = new ArrayList<>(List.of("ip", "-n", leafA2, "route", "add", "198.18.160.0/19"));
        List<String> towardA = new ArrayList<>(List.of("ip", "-n", leafB2, "route", "add", "198.18.128.0/19"));
        for (int i = 0; i < spineCount; i++) {
            String addrA = "198.18." + (200 + i) + ".1";
            String addrB = "198.18." + (200 + i) + ".2";
            Link.End a = new Link.End("leaf A2", List.of("ip", "netns", "exec", leafA2), spineIfA(i));
            Link.End b = new Link.End("leaf B2", List.of("ip", "netns", "exec", leafB2), spineIfB(i));
            veth(leafA2, spineIfA(i), leafB2, spineIfB(i));
            address(a, addrA + "/24");
            address(b, addrB + "/24");
            spines2.add(new Link("plane 2 spine " + i, a, b));
            towardB.addAll(List.of("nexthop", "via", addrB, "dev", spineIfA(i)));
            towardA.addAll(List.of("nexthop", "via", addrA, "dev", spineIfB(i)));
        }
        Sh.check(towardB.toArray(String[]::new));
        Sh.check(towardA.toArray(String[]::new));
    }

    /** A host's plane-2 /24 (without the last octet): its plane-1 one plus 64 in the third octet. */
    private static String plane2Subnet(Node n) {
        String[] o = n.addr().split("\\.");
        return o[0] + "." + o[1] + "." + (Integer.parseInt(o[2]) + 64);
    }

    /** fab0 to its leaf (a routed /24), mgmt0 to the management bridge; IPv6 off; no route out. */
    private void plumbHost(Node n, String leaf, String leafIfPrefix) {
        String pid = Long.toString(n.pid());
        Link.End host = new Link.End("host " + n.name(), n.inNetns(), Node.FABRIC_IF);
        Link.End leafEnd = new Link.End(
                leaf.equals(leafA) ? "leaf A" : "leaf B",
                List.of("ip", "netns", "exec", leaf),
                leafIfPrefix + n.name());
        Sh.check(n.inNetns("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
                .toArray(String[]::new));
        veth(leaf, leafEnd.ifname(), pid, Node.FABRIC_IF);
        String subnet = n.addr().substring(0, n.addr().lastIndexOf('.'));
        address(host, n.addr() + "/24");
        address(leafEnd, subnet + ".254/24");
        Sh.check(n.inNetns("ip", "route", "add", "198.18.0.0/15", "via", subnet + ".254")
                .toArray(String[]::new));
        hostLinks.put(n.name(), new Link("host link " + n.name(), host, leafEnd));
        String bridgePort = "mg-" + n.name();
        veth(mgmt, bridgePort, pid, Node.MGMT_IF);
        Sh.check("ip", "-n", mgmt, "link", "set", bridgePort, "master", "br0", "up");
        address(new Link.End("host " + n.name(), n.inNetns(), Node.MGMT_IF), n.mgmtAddr() + "/24");
    }

    /** A veth pair, each end created straight in its namespace (a name in /run/netns, or a pid). */
    private void veth(String ns1, String if1, String ns2, String if2) {
        Sh.check(
                "ip",
                "link",
                "add",
                if1,
                "netns",
                ns1,
                "mtu",
                Integer.toString(mtu),
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
                Integer.toString(mtu),
                "numtxqueues",
                "1",
                "numrxqueues",
                "1");
    }

    private static void address(Link.End e, String cidr) {
        Sh.check(e.cmd("ip", "addr", "add", cidr, "dev", e.ifname()));
        Sh.check(e.cmd("ip", "link", "set", e.ifname(), "up"));
    }

    static String spineIfA(int link) {
        return "la-s" + link;
    }

    static String spineIfB(int link) {
        return "lb-s" + link;
    }

    private static String spineAddrA(int link) {
        return "198.18." + (10 + link) + ".1";
    }

    private static String spineAddrB(int link) {
        return "198.18." + (10 + link) + ".2";
    }

    // --- what a test uses ---

    Node host(String name) {
        Node n = hosts.get(name);
        if (n == null) {
            throw new IllegalArgumentException("no host " + name + " in " + hosts.keySet());
        }
        return n;
    }

    List<Node> hosts() {
        return List.copyOf(hosts.values());
    }

    /** Spine link {@code i}: end A in leaf A, end B in leaf B. */
    Link spine(int i) {
        return spines.get(i);
    }

    /** Spine link {@code i} of plane {@code plane} (1 or 2; 2 only with {@code planes(2)}). */
    Link spine(int plane, int i) {
        return plane == 1 ? spines.get(i) : plane2().get(i);
    }

    int planes() {
        return planes;
    }

    private List<Link> plane2() {
        if (planes < 2) {
            throw new IllegalStateException("this fabric has one plane");
        }
        return spines2;
    }

    /** A host's address on plane 2 ({@code fab1}). */
    String plane2Addr(Node n) {
        plane2();
        return plane2Subnet(n) + ".1";
    }

    /** Starts a multi-plane daemon (one device over fab0 and fab1) in every host and waits until all serve. */
    void startMultiPlaneDaemons(String... extraArgs) {
        plane2();
        for (Node n : hosts.values()) {
            n.startMultiPlaneDaemon(extraArgs);
        }
        for (Node n : hosts.values()) {
            n.awaitDaemonReady();
        }
    }

    int spineCount() {
        return spineCount;
    }

    /** A host's link to its leaf: end A in the host, end B in the leaf. */
    Link hostLink(String name) {
        Link l = hostLinks.get(name);
        if (l == null) {
            throw new IllegalArgumentException("no host " + name);
        }
        return l;
    }

    /** Starts the daemon in every host (their JVM start-ups overlap) and waits until all serve. */
    void startDaemons(String... extraArgs) {
        for (Node n : hosts.values()) {
            n.startDaemon(extraArgs);
        }
        for (Node n : hosts.values()) {
            n.awaitDaemonReady();
        }
    }

    /** The packets each spine link has carried so far, both directions (one read per leaf). */
    Counters spineCounters() {
        return spineCounters(1);
    }

    /** {@link #spineCounters()} of plane {@code plane} (1 or 2). */
    Counters spineCounters(int plane) {
        if (plane == 2) {
            plane2();
        }
        String devA = Sh.check("ip", "netns", "exec", plane == 1 ? leafA : leafA2, "cat", "/proc/net/dev");
        String devB = Sh.check("ip", "netns", "exec", plane == 1 ? leafB : leafB2, "cat", "/proc/net/dev");
        long[] aToB = new long[spineCount];
        long[] bToA = new long[spineCount];
        for (int i = 0; i < spineCount; i++) {
            aToB[i] = Link.txPackets(devA, spineIfA(i));
            bToA[i] = Link.txPackets(devB, spineIfB(i));
        }
        return new Counters(aToB, bToA);
    }

    /** Takes spine link {@code i} down and waits until neither leaf routes over it. */
    void spineDown(int i) {
        spines.get(i).down();
        awaitNexthop(i, false);
    }

    /** Brings spine link {@code i} up and waits until both leaves route over it again. */
    void spineUp(int i) {
        spines.get(i).up();
        awaitNexthop(i, true);
    }

    private void awaitNexthop(int link, boolean usable) {
        boolean settled = Wait.until(ROUTE_SETTLE_TIMEOUT, () -> {
            boolean ua = usable(leafA, "198.18.96.0/19", spineIfA(link));
            boolean ub = usable(leafB, "198.18.64.0/19", spineIfB(link));
            return usable ? ua && ub : !ua && !ub;
        });
        if (!settled) {
            throw new AssertionError("spine link " + link + " did not become " + (usable ? "usable" : "unusable")
                    + " within " + ROUTE_SETTLE_TIMEOUT);
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

    /** The daemons' last log lines, for failure messages. */
    String diagnostics() {
        StringBuilder sb = new StringBuilder();
        for (Node n : hosts.values()) {
            sb.append("--- mrce-nicd in ")
                    .append(n.name())
                    .append(":\n")
                    .append(n.daemonLogTail(20))
                    .append('\n');
        }
        return sb.toString();
    }

    String id() {
        return id;
    }

    /** The namespaces this fabric made (leaves and management), for checks that nothing is left. */
    List<String> namespaces() {
        return planes == 1 ? List.of(leafA, leafB, mgmt) : List.of(leafA, leafB, mgmt, leafA2, leafB2);
    }

    @Override
    public void close() {
        teardown();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException | IllegalArgumentException ignored) {
            // the JVM is already shutting down
        }
    }

    private synchronized void teardown() {
        if (closed) {
            return;
        }
        closed = true;
        for (Node n : hosts.values()) {
            try {
                n.stop();
            } catch (RuntimeException e) {
                System.err.println("container fabric " + id + ": stopping " + n.name() + ": " + e);
                forceRemove(n);
            }
        }
        for (String ns : namespaces) {
            Sh.runOrKill("ip", "netns", "del", ns);
        }
    }

    private static void forceRemove(Node n) {
        String cid = n.containerId();
        if (cid != null) {
            try {
                ContainerEnv.client().removeContainerCmd(cid).withForce(true).exec();
            } catch (RuntimeException ignored) {
                // gone already
            }
        }
    }
}
