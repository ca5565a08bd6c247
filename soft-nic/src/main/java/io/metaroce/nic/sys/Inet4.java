package io.metaroce.nic.sys;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/** IPv4 addresses as host-order ints (a.b.c.d = a << 24 | ...). */
public final class Inet4 {
    private Inet4() {}

    public static int parse(String dotted) {
        try {
            InetAddress a = InetAddress.getByName(dotted);
            if (!(a instanceof Inet4Address)) {
                throw new IllegalArgumentException("not an IPv4 address: " + dotted);
            }
            return fromBytes(a.getAddress(), 0);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IPv4 address: " + dotted, e);
        }
    }

    public static int fromBytes(byte[] b, int off) {
        return ((b[off] & 0xff) << 24) | ((b[off + 1] & 0xff) << 16) | ((b[off + 2] & 0xff) << 8) | (b[off + 3] & 0xff);
    }

    public static String toString(int ipv4) {
        return (ipv4 >>> 24) + "." + ((ipv4 >>> 16) & 0xff) + "." + ((ipv4 >>> 8) & 0xff) + "." + (ipv4 & 0xff);
    }

    /** The IPv4-mapped IPv6 GID ::ffff:a.b.c.d. */
    public static byte[] mappedGid(int ipv4) {
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        gid[12] = (byte) (ipv4 >>> 24);
        gid[13] = (byte) (ipv4 >>> 16);
        gid[14] = (byte) (ipv4 >>> 8);
        gid[15] = (byte) ipv4;
        return gid;
    }

    /** The IPv4 address of an IPv4-mapped GID, or 0 if the GID is not IPv4-mapped. */
    public static int fromMappedGid(byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return 0;
            }
        }
        if ((gid[10] & 0xff) != 0xff || (gid[11] & 0xff) != 0xff) {
            return 0;
        }
        return fromBytes(gid, 12);
    }
}
