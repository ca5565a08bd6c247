package io.metaroce.it;

import java.util.List;
import java.util.Map;

/**
 * Two hosts with two NICs each, one per network plane (docs/multi-nic.md): plane 1 joins A's
 * {@code p1-a} to B's {@code p1-b}, plane 2 joins {@code p2-a} to {@code p2-b}, each a veth link of
 * its own with its own subnet of 198.18.0.0/15 and no route out, so traffic of one plane can only
 * leave by that plane's interface. Each host runs one mrce-nicd serving {@code mrce0} on plane 1
 * and {@code mrce1} on plane 2.
 *
 * <pre>
 *   plane 1:  A p1-a 198.18.1.1/24 ------------------ 198.18.1.2/24 p1-b B
 *   plane 2:  A p2-a 198.18.2.1/24 ------------------ 198.18.2.2/24 p2-b B
 * </pre>
 *
 * {@link #a()} and {@link #b()} are the hosts as seen on plane 1 (device mrce0); {@link #a2()} and
 * {@link #b2()} the same namespaces on plane 2 (device mrce1).
 */
final class TwoPlaneFabric extends NetnsFabric {

    private final int mtu;
    private final Host a2;
    private final Host b2;

    private TwoPlaneFabric(String testName, int mtu) {
        super(testName);
        this.mtu = mtu;
        this.a = new Host("A", ns("a"), "p1-a", "198.18.1.1");
        this.b = new Host("B", ns("b"), "p1-b", "198.18.1.2");
        this.a2 = new Host("A", a.ns(), "p2-a", "198.18.2.1");
        this.b2 = new Host("B", b.ns(), "p2-b", "198.18.2.2");
    }

    static TwoPlaneFabric create(String testName, int mtu) {
        TwoPlaneFabric f = new TwoPlaneFabric(testName, mtu);
        f.create();
        return f;
    }

    /** Host A on plane 2. */
    Host a2() {
        return a2;
    }

    /** Host B on plane 2. */
    Host b2() {
        return b2;
    }

    @Override
    protected void build() {
        addNamespace(a.ns());
        addNamespace(b.ns());
        for (Host[] pair : List.of(new Host[] {a, b}, new Host[] {a2, b2})) {
            Sh.check(
                    "ip",
                    "link",
                    "add",
                    pair[0].ifname(),
                    "netns",
                    pair[0].ns(),
                    "mtu",
                    str(mtu),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    pair[1].ifname(),
                    "netns",
                    pair[1].ns(),
                    "mtu",
                    str(mtu));
            for (Host h : pair) {
                addressUp(h, 24);
            }
        }
    }

    /**
     * Starts one mrce-nicd in A and one in B, each serving {@code mrce0} on plane 1 and
     * {@code mrce1} on plane 2, A with an engine thread per device and B with one engine thread
     * shared by both (so every test runs both threading modes), and waits until both devices of
     * both serve.
     */
    List<Daemon> startTwoDeviceDaemons() {
        List<String> argsA = new java.util.ArrayList<>(devices(a, a2));
        argsA.addAll(List.of("--threading", "dedicated"));
        List<String> argsB = new java.util.ArrayList<>(devices(b, b2));
        argsB.addAll(List.of("--threading", "shared"));
        Daemon da = startDaemonWith(a, Map.of(), argsA);
        Daemon db = startDaemonWith(b, Map.of(), argsB);
        for (Daemon d : List.of(da, db)) {
            boolean ready = Wait.until(
                    DAEMON_READY_TIMEOUT,
                    () -> !d.isAlive()
                            || d.logText()
                                            .lines()
                                            .filter(l -> l.contains(Daemon.READY))
                                            .count()
                                    == 2);
            if (!ready || !d.isAlive()) {
                throw new AssertionError("mrce-nicd in host " + d.host().name() + " does not serve both devices"
                        + " within " + DAEMON_READY_TIMEOUT + " (alive=" + d.isAlive() + "); its log:\n"
                        + d.logText());
            }
        }
        return List.of(da, db);
    }

    private static List<String> devices(Host plane1, Host plane2) {
        return List.of("--device", "mrce0=" + plane1.ifname(), "--device", "mrce1=" + plane2.ifname());
    }

    /**
     * Starts one mrce-nicd in A and one in B, each serving ONE multi-plane device {@code mrce0} over
     * both planes ({@code --device mrce0=p1-x+p2-x}, docs/multi-nic.md), plus {@code extraArgs};
     * waits until both serve.
     */
    List<Daemon> startMultiPlaneDaemons(String... extraArgs) {
        List<Daemon> ds = new java.util.ArrayList<>();
        for (Host[] h : List.of(new Host[] {a, a2}, new Host[] {b, b2})) {
            List<String> args =
                    new java.util.ArrayList<>(List.of("--device", "mrce0=" + h[0].ifname() + "+" + h[1].ifname()));
            args.addAll(List.of(extraArgs));
            ds.add(startDaemonWith(h[0], Map.of(), args));
        }
        for (Daemon d : ds) {
            awaitReady(d);
        }
        return ds;
    }

    /** Drops every MetaRoCE UDP packet leaving either end of plane 2 (a black-holed plane). */
    void blackholePlane2() {
        dropOnEgress(a2.ns(), a2.ifname(), Loss.PCT_100);
        dropOnEgress(b2.ns(), b2.ifname(), Loss.PCT_100);
    }

    /** Undoes {@link #blackholePlane2}. */
    void healPlane2() {
        clearEgress(a2.ns(), a2.ifname());
        clearEgress(b2.ns(), b2.ifname());
    }

    /** Sets A's plane-2 interface down (its peer in B loses its carrier) or up again. */
    void plane2Link(boolean up) {
        Sh.check("ip", "-n", a2.ns(), "link", "set", a2.ifname(), up ? "up" : "down");
    }

    /** Bytes the kernel counted leaving interface IFNAME of namespace NS. */
    long txBytes(Host h) {
        Proc.Result r = exec(
                h, java.time.Duration.ofSeconds(10), "cat", "/sys/class/net/" + h.ifname() + "/statistics/tx_bytes");
        if (!r.ok()) {
            throw new AssertionError("tx_bytes of " + h.ifname() + " in " + h.name() + ": " + r.output());
        }
        return Long.parseLong(r.output().strip());
    }
}
