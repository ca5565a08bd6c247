package io.metaroce.nic.net;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The kernel's routing, neighbour and link tables over a NETLINK_ROUTE socket, for the control
 * path of the AF_XDP port: which interface and source address a destination leaves by, the
 * next hop's MAC address, the interface's own MAC. IPv4 and IPv6 (addresses are {@link IpAddr}
 * ints: an IPv6 destination asks the AF_INET6 tables, its neighbours are NDP's). No external tools; one request at a time
 * (not thread-safe). The socket lives in the network namespace of the thread that opened it.
 *
 * <pre>
 *   nlmsghdr  | len u32 | type u16 | flags u16 | seq u32 | pid u32 |   (16 bytes, host order)
 *   rtmsg     | family u8 | dst_len u8 | src_len u8 | tos u8 | table u8 | protocol u8 |
 *             | scope u8 | type u8 | flags u32 |                        (12 bytes)
 *   ndmsg     | family u8 | pad u8 | pad u16 | ifindex i32 | state u16 | flags u8 | type u8 |
 *   ifinfomsg | family u8 | pad u8 | type u16 | index i32 | flags u32 | change u32 |
 *   rtattr    | len u16 | type u16 | data, padded to 4 |   (addresses in network order)
 * </pre>
 */
public final class Netlink implements AutoCloseable {
    static final int AF_NETLINK = 16;
    static final int SOCK_RAW = 3;
    static final int NETLINK_ROUTE = 0;

    static final int NLMSG_ERROR = 2;
    static final int NLM_F_REQUEST = 0x1;
    static final int NLM_F_ACK = 0x4;
    static final int NLM_F_REPLACE = 0x100;
    static final int NLM_F_CREATE = 0x400;

    static final int RTM_NEWLINK = 16;
    static final int RTM_GETLINK = 18;
    static final int RTM_NEWROUTE = 24;
    static final int RTM_GETROUTE = 26;
    static final int RTM_NEWNEIGH = 28;
    static final int RTM_GETNEIGH = 30;

    static final int RTA_DST = 1;
    static final int RTA_OIF = 4;
    static final int RTA_GATEWAY = 5;
    static final int RTA_PREFSRC = 7;
    static final int RTN_UNICAST = 1;
    static final int NDA_DST = 1;
    static final int NDA_LLADDR = 2;
    static final int IFLA_ADDRESS = 1;
    static final int IFLA_MTU = 4;
    static final int NTF_USE = 0x01;

    /** Neighbour states (ndm_state). */
    public static final int NUD_INCOMPLETE = 0x01;

    public static final int NUD_REACHABLE = 0x02;
    public static final int NUD_STALE = 0x04;
    public static final int NUD_DELAY = 0x08;
    public static final int NUD_PROBE = 0x10;
    public static final int NUD_FAILED = 0x20;
    public static final int NUD_NOARP = 0x40;
    public static final int NUD_PERMANENT = 0x80;
    /** States whose link-layer address may be used: the kernel would send to it too. */
    public static final int NUD_VALID = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_NOARP | NUD_PERMANENT;

    private static final int NLMSG_HDRLEN = 16;
    private static final int RECV_BYTES = 32 * 1024;

    /** The route a destination takes: egress interface, preferred source, gateway (0: on link). */
    public record Route(int ifindex, int srcIp, int gatewayIp) {
        /** The address whose MAC the frames carry: the gateway, or the destination itself. */
        public int nextHop(int dstIp) {
            return gatewayIp != 0 ? gatewayIp : dstIp;
        }

        @Override
        public String toString() {
            return "dev " + ifindex + " src " + IpAddr.toString(srcIp)
                    + (gatewayIp != 0 ? " via " + IpAddr.toString(gatewayIp) : "");
        }
    }

    /** A neighbour entry: its NUD state and link-layer address (null when it has none). */
    public record Neighbour(int state, byte[] mac) {
        public boolean usable() {
            return (state & NUD_VALID) != 0 && mac != null && mac.length == 6;
        }
    }

    /** A link: its MAC address and MTU. */
    public record Link(byte[] mac, int mtu) {}

    private final int fd;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment request = arena.allocate(256, 8);
    private final MemorySegment reply = arena.allocate(RECV_BYTES, 8);
    private int seq;

    private Netlink(int fd) {
        this.fd = fd;
    }

    /** Opens a NETLINK_ROUTE socket in the calling thread's network namespace. */
    public static Netlink open() throws NativeException {
        return new Netlink(LibC.socket(AF_NETLINK, SOCK_RAW | LibC.SOCK_CLOEXEC, NETLINK_ROUTE));
    }

    /**
     * RTM_GETROUTE: the route the kernel would take to {@code dstIp} (an {@link IpAddr} int: IPv4
     * host order, or an IPv6 handle; the route's addresses come back in the same family).
     *
     * @throws NativeException ENETUNREACH / EHOSTUNREACH and the like when there is none, or
     *     EADDRNOTAVAIL when the destination is not reached through a unicast route (a local
     *     address, a broadcast, a blackhole)
     */
    public Route route(int dstIp) throws NativeException {
        int off = header(RTM_GETROUTE, NLM_F_REQUEST);
        boolean v6 = IpAddr.isV6(dstIp);
        request.set(JAVA_BYTE, off, (byte) LibC.family(dstIp)); // rtm_family
        request.set(JAVA_BYTE, off + 1, (byte) (v6 ? 128 : 32)); // rtm_dst_len
        int len = attrAddr(off + 12, RTA_DST, dstIp);
        MemorySegment msg = transact(len, "RTM_GETROUTE " + IpAddr.toString(dstIp));
        if (type(msg) != RTM_NEWROUTE) {
            throw new NativeException("RTM_GETROUTE " + IpAddr.toString(dstIp) + ": reply type " + type(msg), 0);
        }
        int routeType = msg.get(JAVA_BYTE, NLMSG_HDRLEN + 7) & 0xff;
        int ifindex = 0;
        int src = 0;
        int gateway = 0;
        for (int a = NLMSG_HDRLEN + 12; a + 4 <= length(msg); a = next(msg, a)) {
            switch (attrType(msg, a)) {
                case RTA_OIF -> ifindex = msg.get(JAVA_INT, a + 4);
                case RTA_PREFSRC -> src = addr(msg, a);
                case RTA_GATEWAY -> gateway = addr(msg, a);
                default -> {}
            }
        }
        if (routeType != RTN_UNICAST || ifindex == 0) {
            throw new NativeException(
                    "RTM_GETROUTE " + IpAddr.toString(dstIp) + ": route type " + routeType + " is not unicast",
                    99 /* EADDRNOTAVAIL */);
        }
        return new Route(ifindex, src, gateway);
    }

    /** RTM_GETNEIGH: the neighbour entry of {@code ip} on {@code ifindex}, or null if none. */
    public Neighbour neighbour(int ifindex, int ip) throws NativeException {
        int off = header(RTM_GETNEIGH, NLM_F_REQUEST);
        request.set(JAVA_BYTE, off, (byte) LibC.family(ip));
        request.set(JAVA_INT, off + 4, ifindex);
        int len = attrAddr(off + 12, NDA_DST, ip);
        MemorySegment msg;
        try {
            msg = transact(len, "RTM_GETNEIGH " + IpAddr.toString(ip) + " dev " + ifindex);
        } catch (NativeException e) {
            if (e.errno() == Errno.ENOENT) {
                return null;
            }
            throw e;
        }
        int state = msg.get(JAVA_SHORT, NLMSG_HDRLEN + 8) & 0xffff;
        byte[] mac = null;
        for (int a = NLMSG_HDRLEN + 12; a + 4 <= length(msg); a = next(msg, a)) {
            if (attrType(msg, a) == NDA_LLADDR) {
                mac = msg.asSlice(a + 4, attrLength(msg, a) - 4).toArray(JAVA_BYTE);
            }
        }
        return new Neighbour(state, mac);
    }

    /**
     * Asks the kernel to resolve (or revalidate) {@code ip} on {@code ifindex}: RTM_NEWNEIGH with
     * NTF_USE creates the entry if needed and makes the kernel treat it as used, as if a packet
     * were waiting for it, so it sends an ARP request or, for IPv6, a neighbour solicitation (for
     * a stale entry a unicast probe).
     * Frames sent by AF_XDP never pass the kernel's neighbour code, so without this the kernel
     * would let our entries go stale and drop them.
     */
    public void solicit(int ifindex, int ip) throws NativeException {
        int off = header(RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
        request.set(JAVA_BYTE, off, (byte) LibC.family(ip));
        request.set(JAVA_INT, off + 4, ifindex);
        request.set(JAVA_BYTE, off + 10, (byte) NTF_USE); // ndm_flags
        int len = attrAddr(off + 12, NDA_DST, ip);
        transact(len, "RTM_NEWNEIGH (use) " + IpAddr.toString(ip) + " dev " + ifindex);
    }

    /** RTM_GETLINK: the interface's MAC address and MTU. */
    public Link link(int ifindex) throws NativeException {
        int off = header(RTM_GETLINK, NLM_F_REQUEST);
        request.set(JAVA_INT, off + 4, ifindex); // ifi_index; family AF_UNSPEC
        MemorySegment msg = transact(off + 16, "RTM_GETLINK dev " + ifindex);
        if (type(msg) != RTM_NEWLINK) {
            throw new NativeException("RTM_GETLINK dev " + ifindex + ": reply type " + type(msg), 0);
        }
        byte[] mac = null;
        int mtu = 0;
        for (int a = NLMSG_HDRLEN + 16; a + 4 <= length(msg); a = next(msg, a)) {
            switch (attrType(msg, a)) {
                case IFLA_ADDRESS ->
                    mac = msg.asSlice(a + 4, attrLength(msg, a) - 4).toArray(JAVA_BYTE);
                case IFLA_MTU -> mtu = msg.get(JAVA_INT, a + 4);
                default -> {}
            }
        }
        return new Link(mac, mtu);
    }

    @Override
    public void close() {
        LibC.close(fd);
        arena.close();
    }

    /** Clears the request, writes an nlmsghdr without its length; returns the body's offset. */
    private int header(int type, int flags) {
        request.fill((byte) 0);
        request.set(JAVA_SHORT, 4, (short) type);
        request.set(JAVA_SHORT, 6, (short) flags);
        request.set(JAVA_INT, 8, ++seq);
        return NLMSG_HDRLEN;
    }

    /** Writes an rtattr holding an address (4 or 16 bytes by its family) at {@code off}; returns the end offset. */
    private int attrAddr(int off, int type, int ip) {
        if (IpAddr.isV6(ip)) {
            request.set(JAVA_SHORT, off, (short) 20);
            request.set(JAVA_SHORT, off + 2, (short) type);
            request.set(BE_LONG, off + 4, IpAddr.hi(ip));
            request.set(BE_LONG, off + 12, IpAddr.lo(ip));
            return off + 20;
        }
        return attrIpv4(off, type, ip);
    }

    /** Writes an rtattr holding an IPv4 address at {@code off}; returns the end offset. */
    private int attrIpv4(int off, int type, int ip) {
        request.set(JAVA_SHORT, off, (short) 8);
        request.set(JAVA_SHORT, off + 2, (short) type);
        request.set(JAVA_BYTE, off + 4, (byte) (ip >>> 24));
        request.set(JAVA_BYTE, off + 5, (byte) (ip >>> 16));
        request.set(JAVA_BYTE, off + 6, (byte) (ip >>> 8));
        request.set(JAVA_BYTE, off + 7, (byte) ip);
        return off + 8;
    }

    /**
     * Sends the request and returns the reply with our sequence number: the data message, or
     * the (zero) acknowledgement; a negative error in an NLMSG_ERROR becomes the exception.
     */
    private MemorySegment transact(int len, String what) throws NativeException {
        request.set(JAVA_INT, 0, len);
        long n = LibC.write(fd, request, len);
        if (n < 0) {
            throw new NativeException(what + ": write", (int) -n);
        }
        while (true) {
            n = LibC.read(fd, reply, RECV_BYTES);
            if (n < 0) {
                throw new NativeException(what + ": read", (int) -n);
            }
            for (int off = 0; off + NLMSG_HDRLEN <= n; ) {
                int msgLen = reply.get(JAVA_INT, off);
                if (msgLen < NLMSG_HDRLEN || off + msgLen > n) {
                    break;
                }
                if (reply.get(JAVA_INT, off + 8) == seq) {
                    MemorySegment msg = reply.asSlice(off, msgLen);
                    if (type(msg) == NLMSG_ERROR) {
                        int err = msg.get(JAVA_INT, NLMSG_HDRLEN);
                        if (err < 0) {
                            throw new NativeException(what, -err);
                        }
                    }
                    return msg;
                }
                off += align(msgLen);
            }
        }
    }

    private static int type(MemorySegment msg) {
        return msg.get(JAVA_SHORT, 4) & 0xffff;
    }

    private static int length(MemorySegment msg) {
        return msg.get(JAVA_INT, 0);
    }

    private static int attrLength(MemorySegment msg, int a) {
        return msg.get(JAVA_SHORT, a) & 0xffff;
    }

    private static int attrType(MemorySegment msg, int a) {
        return msg.get(JAVA_SHORT, a + 2) & 0x3fff; // without NLA_F_NESTED / NET_BYTEORDER
    }

    private static int next(MemorySegment msg, int a) {
        int l = attrLength(msg, a);
        return a + align(Math.max(l, 4));
    }

    private static int align(int len) {
        return (len + 3) & ~3;
    }

    private static final java.lang.foreign.ValueLayout.OfLong BE_LONG =
            java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    /** The address in the rtattr at {@code a}: 4 bytes IPv4, 16 bytes IPv6 (entered in {@link IpAddr}'s table). */
    private static int addr(MemorySegment msg, int a) {
        if (attrLength(msg, a) - 4 >= 16) {
            return IpAddr.intern(msg.get(BE_LONG, a + 4), msg.get(BE_LONG, a + 12));
        }
        return ipv4(msg, a + 4);
    }

    private static int ipv4(MemorySegment msg, int off) {
        return ((msg.get(JAVA_BYTE, off) & 0xff) << 24)
                | ((msg.get(JAVA_BYTE, off + 1) & 0xff) << 16)
                | ((msg.get(JAVA_BYTE, off + 2) & 0xff) << 8)
                | (msg.get(JAVA_BYTE, off + 3) & 0xff);
    }
}
