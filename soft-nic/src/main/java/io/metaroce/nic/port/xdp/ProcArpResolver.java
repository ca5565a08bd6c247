package io.metaroce.nic.port.xdp;

import io.metaroce.nic.sys.Inet4;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Interim resolver for on-link destinations: the next-hop MAC from the kernel's neighbour table as
 * {@code /proc/net/arp} shows it (complete entries on the port's interface). The connection
 * manager's TCP connection to a peer daemon fills that entry before any data flows. A miss
 * re-reads the table, at most every 5 ms (the read allocates; hits do not).
 * Routed destinations (via a gateway) need the netlink resolver.
 */
public final class ProcArpResolver implements L2Resolver {
    private static final long REREAD_NS = 5_000_000;
    private static final int ATF_COM = 0x2;
    private final String ifname;
    private final int ifindex;
    private final int srcIp;
    private final long srcMac;
    private int[] ips = new int[0];
    private long[] macs = new long[0];
    private long lastReadNs = Long.MIN_VALUE / 2;
    private long generation;

    public ProcArpResolver(String ifname, int ifindex, int srcIp) throws IOException {
        this.ifname = ifname;
        this.ifindex = ifindex;
        this.srcIp = srcIp;
        this.srcMac = StaticL2Resolver.macOf(ifname);
    }

    @Override
    public boolean resolve(int dstIp, L2Header out) {
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < ips.length; i++) {
                if (ips[i] == dstIp) {
                    out.set(ifindex, srcIp, srcMac, macs[i]);
                    return true;
                }
            }
            long now = System.nanoTime();
            if (pass == 1 || now - lastReadNs < REREAD_NS) {
                return false;
            }
            lastReadNs = now;
            reread();
        }
        return false;
    }

    @Override
    public long generation() {
        return generation;
    }

    private void reread() {
        List<String> lines;
        try {
            lines = Files.readAllLines(Path.of("/proc/net/arp"));
        } catch (IOException e) {
            return;
        }
        int[] newIps = new int[lines.size()];
        long[] newMacs = new long[lines.size()];
        int n = 0;
        for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 6 || !f[5].equals(ifname)) {
                continue;
            }
            if ((Integer.decode(f[2]) & ATF_COM) == 0) {
                continue;
            }
            newIps[n] = Inet4.parse(f[0]);
            newMacs[n] = StaticL2Resolver.parseMac(f[3]);
            n++;
        }
        ips = java.util.Arrays.copyOf(newIps, n);
        macs = java.util.Arrays.copyOf(newMacs, n);
        generation++;
    }
}
