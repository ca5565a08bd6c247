package io.metaroce.nic.net;

import io.metaroce.abi.IpAddr;
import io.metaroce.nic.sys.NativeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Where to send frames for a destination IPv4 or IPv6 address ({@link IpAddr} int), from the kernel's routing and neighbour
 * tables: egress interface, source address, source and destination MAC. The AF_XDP port asks on
 * the control path (when a connection is set up, when a path fails, on its periodic tick), never
 * per packet; the answer goes into the port's pre-built header templates.
 *
 * <p>A resolved answer is kept for {@code refreshIntervalNs} and looked up again by
 * {@link #refresh}; a pending one is looked up again on every {@link #resolve}. When the next
 * hop has no usable neighbour entry the cache asks the kernel to resolve it ({@link
 * Netlink#solicit}) and answers {@link Pending}; a stale entry is used and revalidated, since
 * frames sent by AF_XDP never confirm it in the kernel. Callers pass the clock ({@code nowNs}).
 * Synchronized: the control path is the only caller and may sit on more than one thread.
 */
public final class NeighbourCache implements AutoCloseable {
    /** The answer for a destination. */
    public sealed interface Resolution permits Resolved, Pending {}

    /** Frames to the destination leave by {@code ifindex} with these addresses. */
    public record Resolved(int ifindex, int srcIp, byte[] srcMac, byte[] dstMac, int nextHopIp, int mtu)
            implements Resolution {
        @Override
        public String toString() {
            HexFormat hex = HexFormat.ofDelimiter(":");
            return "dev " + ifindex + " src " + IpAddr.toString(srcIp) + " " + hex.formatHex(srcMac)
                    + " -> " + hex.formatHex(dstMac) + " (next hop " + IpAddr.toString(nextHopIp)
                    + ", mtu " + mtu + ")";
        }
    }

    /** Not resolvable yet: the reason (no route, neighbour being resolved, failed). */
    public record Pending(String reason) implements Resolution {}

    private record Entry(Resolution resolution, long resolvedAtNs) {}

    private final Netlink netlink;
    private final long refreshIntervalNs;
    private final Map<Integer, Entry> entries = new HashMap<>();

    public NeighbourCache(Netlink netlink, long refreshIntervalNs) {
        this.netlink = netlink;
        this.refreshIntervalNs = refreshIntervalNs;
    }

    /** The cached answer for {@code dstIp} (host order), looked up if absent or pending. */
    public synchronized Resolution resolve(int dstIp, long nowNs) {
        Entry e = entries.get(dstIp);
        if (e != null && e.resolution instanceof Resolved) {
            return e.resolution;
        }
        return lookup(dstIp, nowNs);
    }

    /**
     * Looks up again every destination resolved more than the refresh interval ago, and every
     * pending one; returns how many answers changed. Call it from the port's periodic tick.
     */
    public synchronized int refresh(long nowNs) {
        List<Integer> due = new ArrayList<>();
        for (Map.Entry<Integer, Entry> e : entries.entrySet()) {
            if (!(e.getValue().resolution instanceof Resolved)
                    || nowNs - e.getValue().resolvedAtNs >= refreshIntervalNs) {
                due.add(e.getKey());
            }
        }
        int changed = 0;
        for (int dstIp : due) {
            Resolution before = entries.get(dstIp).resolution;
            if (!same(before, lookup(dstIp, nowNs))) {
                changed++;
            }
        }
        return changed;
    }

    @Override
    public synchronized void close() {
        entries.clear();
        netlink.close();
    }

    private Resolution lookup(int dstIp, long nowNs) {
        Resolution r;
        try {
            r = lookupOnce(dstIp);
        } catch (NativeException e) {
            r = new Pending(e.getMessage());
        }
        entries.put(dstIp, new Entry(r, nowNs));
        return r;
    }

    private Resolution lookupOnce(int dstIp) throws NativeException {
        Netlink.Route route = netlink.route(dstIp);
        int nextHop = route.nextHop(dstIp);
        Netlink.Neighbour n = netlink.neighbour(route.ifindex(), nextHop);
        if (n == null || !n.usable()) {
            // An INCOMPLETE entry is being resolved already; anything else needs a nudge.
            if (n == null || (n.state() & Netlink.NUD_INCOMPLETE) == 0) {
                netlink.solicit(route.ifindex(), nextHop);
            }
            return new Pending("neighbour " + IpAddr.toString(nextHop) + " on dev " + route.ifindex()
                    + (n == null ? " unknown" : " in state 0x" + Integer.toHexString(n.state()))
                    + ": resolving");
        }
        if ((n.state() & Netlink.NUD_STALE) != 0) {
            netlink.solicit(route.ifindex(), nextHop);
        }
        Netlink.Link link = netlink.link(route.ifindex());
        if (link.mac() == null || link.mac().length != 6) {
            return new Pending("dev " + route.ifindex() + " has no Ethernet address");
        }
        return new Resolved(route.ifindex(), route.srcIp(), link.mac(), n.mac(), nextHop, link.mtu());
    }

    private static boolean same(Resolution a, Resolution b) {
        if (a instanceof Resolved x && b instanceof Resolved y) {
            return x.ifindex == y.ifindex
                    && x.srcIp == y.srcIp
                    && x.nextHopIp == y.nextHopIp
                    && x.mtu == y.mtu
                    && Arrays.equals(x.srcMac, y.srcMac)
                    && Arrays.equals(x.dstMac, y.dstMac);
        }
        return a instanceof Pending && b instanceof Pending;
    }
}
