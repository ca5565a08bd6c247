package io.metaroce.nic.port.xdp;

import io.metaroce.nic.net.NeighbourCache;
import io.metaroce.nic.net.Netlink;
import io.metaroce.nic.sys.NativeException;

/**
 * The daemon's resolver: answers from its own small table (no allocation, no system call) and
 * asks the kernel's routing and neighbour tables through {@link NeighbourCache} (netlink) only on
 * a miss, at most every {@link #RETRY_NS}, and to refresh what it knows every {@link #REFRESH_NS}.
 * Routed destinations get the gateway's MAC. Engine thread only.
 */
public final class NetlinkL2Resolver implements L2Resolver, AutoCloseable {
    static final long RETRY_NS = 5_000_000L;
    static final long REFRESH_NS = 1_000_000_000L;

    private final NeighbourCache cache;
    private static final int CAPACITY = 256;
    private final int[] ips = new int[CAPACITY];
    private final L2Header[] headers = new L2Header[CAPACITY];
    private int count;
    private long lastMissNs = Long.MIN_VALUE / 2;
    private long lastRefreshNs;
    private long generation;

    public NetlinkL2Resolver() throws NativeException {
        this.cache = new NeighbourCache(Netlink.open(), REFRESH_NS);
        this.lastRefreshNs = System.nanoTime();
    }

    @Override
    public boolean resolve(int dstIp, L2Header out) {
        long now = System.nanoTime();
        if (now - lastRefreshNs >= REFRESH_NS) {
            refresh(now);
        }
        for (int i = 0; i < count; i++) {
            if (ips[i] == dstIp) {
                L2Header h = headers[i];
                out.set(h.ifindex, h.srcIp, h.srcMac, h.dstMac);
                return true;
            }
        }
        if (now - lastMissNs < RETRY_NS || count == CAPACITY) {
            return false;
        }
        lastMissNs = now;
        if (cache.resolve(dstIp, now) instanceof NeighbourCache.Resolved r) {
            ips[count] = dstIp;
            headers[count] = new L2Header().set(r.ifindex(), r.srcIp(), mac(r.srcMac()), mac(r.dstMac()));
            count++;
            generation++;
            out.set(r.ifindex(), r.srcIp(), mac(r.srcMac()), mac(r.dstMac()));
            return true;
        }
        return false;
    }

    @Override
    public long generation() {
        return generation;
    }

    @Override
    public void close() {
        cache.close();
    }

    /** Re-reads every known destination (routes and neighbours change); once a second. */
    private void refresh(long now) {
        lastRefreshNs = now;
        if (cache.refresh(now) == 0) {
            return;
        }
        int kept = 0;
        for (int i = 0; i < count; i++) {
            if (cache.resolve(ips[i], now) instanceof NeighbourCache.Resolved r) {
                ips[kept] = ips[i];
                headers[kept] = headers[i].set(r.ifindex(), r.srcIp(), mac(r.srcMac()), mac(r.dstMac()));
                kept++;
            }
        }
        count = kept;
        generation++;
    }

    static long mac(byte[] b) {
        long m = 0;
        for (int i = 0; i < 6; i++) {
            m = (m << 8) | (b[i] & 0xffL);
        }
        return m;
    }
}
