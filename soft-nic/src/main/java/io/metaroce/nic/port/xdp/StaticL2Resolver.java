package io.metaroce.nic.port.xdp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One interface, one next hop for every destination: a point-to-point link (a veth pair) or a
 * fixed gateway. For tests and for setups without netlink.
 */
public final class StaticL2Resolver implements L2Resolver {
    private final int ifindex;
    private final int srcIp;
    private final long srcMac;
    private final long nextHopMac;

    public StaticL2Resolver(int ifindex, int srcIp, long srcMac, long nextHopMac) {
        this.ifindex = ifindex;
        this.srcIp = srcIp;
        this.srcMac = srcMac;
        this.nextHopMac = nextHopMac;
    }

    @Override
    public boolean resolve(int dstIp, L2Header out) {
        out.set(ifindex, srcIp, srcMac, nextHopMac);
        return true;
    }

    /** The MAC address of an interface, from {@code /sys/class/net/IF/address}. */
    public static long macOf(String ifname) throws IOException {
        return parseMac(
                Files.readString(Path.of("/sys/class/net", ifname, "address")).trim());
    }

    /** "aa:bb:cc:dd:ee:ff" as a long, first octet most significant. */
    public static long parseMac(String mac) {
        String[] parts = mac.split(":");
        if (parts.length != 6) {
            throw new IllegalArgumentException("not a MAC address: " + mac);
        }
        long v = 0;
        for (String p : parts) {
            v = (v << 8) | Integer.parseInt(p, 16);
        }
        return v;
    }
}
