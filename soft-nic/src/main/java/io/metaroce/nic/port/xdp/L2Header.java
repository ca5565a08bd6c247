package io.metaroce.nic.port.xdp;

/**
 * What the port needs to put a frame on the wire to one IPv4 destination: the egress interface,
 * the source address, and the two MAC addresses (48 bits in the low bits of a long, first octet
 * most significant). Mutable and reused: a resolver fills it in.
 */
public final class L2Header {
    public int ifindex;
    public int srcIp;
    public long srcMac;
    public long dstMac;

    public L2Header set(int ifindex, int srcIp, long srcMac, long dstMac) {
        this.ifindex = ifindex;
        this.srcIp = srcIp;
        this.srcMac = srcMac;
        this.dstMac = dstMac;
        return this;
    }
}
