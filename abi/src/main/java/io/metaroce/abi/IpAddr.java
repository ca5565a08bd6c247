package io.metaroce.abi;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * A peer's IP address as one int, the way the daemon's transport, ports and connection manager
 * carry it: an IPv4 address is itself (host order, a.b.c.d = a << 24 | ...); an IPv6 address is
 * a handle {@code 0xF0000000 | index} into a process-wide table (index 1 ..
 * {@link #V6_CAPACITY}). Handles live in 240.0.0.0/4, the IPv4 space reserved for future use and
 * never a unicast peer, so a value says which family it is ({@link #isV6}) and an IPv4 address in
 * that range is refused ({@link #fromGid}). The same IPv6 address always gets the same handle,
 * so handles compare like addresses. Lookups of known addresses neither allocate nor lock;
 * entering a new one ({@link #intern}) takes a lock once per address.
 */
public final class IpAddr {
    private IpAddr() {}

    /** The most IPv6 addresses one process names; an address beyond them gets no handle (0). */
    public static final int V6_CAPACITY = 1 << 16;

    private static final int TAG = 0xF0000000;

    /** Whether {@code addr} is an IPv6 handle (its top four bits set). */
    public static boolean isV6(int addr) {
        return (addr >>> 28) == 0xF;
    }

    /** The table, made on first use of an IPv6 address (an IPv4 daemon never builds it). */
    private static final class Table {
        static final long[] HI = new long[V6_CAPACITY + 1];
        static final long[] LO = new long[V6_CAPACITY + 1];
        /** Open addressing: slot -> index (0: empty), twice the capacity. */
        static final int[] SLOTS = new int[V6_CAPACITY * 2];

        static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(int[].class);
        static int count;

        static int hash(long hi, long lo) {
            long h = hi * 0x9E3779B97F4A7C15L ^ lo * 0xC2B2AE3D27D4EB4FL;
            return (int) (h ^ (h >>> 29) ^ (h >>> 41)) & (SLOTS.length - 1);
        }
    }

    /** The handle of an IPv6 address already entered, or 0 (allocation-free). */
    public static int lookup(long hi, long lo) {
        int[] slots = Table.SLOTS;
        for (int s = Table.hash(hi, lo); ; s = (s + 1) & (slots.length - 1)) {
            int idx = (int) Table.SLOT.getAcquire(slots, s);
            if (idx == 0) {
                return 0;
            }
            if (Table.HI[idx] == hi && Table.LO[idx] == lo) {
                return TAG | idx;
            }
        }
    }

    /**
     * The handle of an IPv6 address (its 16 bytes as two big-endian longs), entered on first
     * use; 0 when the table is full or for the unspecified address {@code ::}. An IPv4-mapped
     * address gives its IPv4 int instead, as {@link #fromGid} does.
     */
    public static int intern(long hi, long lo) {
        if (hi == 0 && (lo >>> 32) == 0xffffL) {
            int v4 = (int) lo;
            return isV6(v4) ? 0 : v4;
        }
        if (hi == 0 && lo == 0) {
            return 0;
        }
        int h = lookup(hi, lo);
        if (h != 0) {
            return h;
        }
        synchronized (Table.class) {
            h = lookup(hi, lo);
            if (h != 0 || Table.count == V6_CAPACITY) {
                return h;
            }
            int idx = ++Table.count;
            Table.HI[idx] = hi;
            Table.LO[idx] = lo;
            int s = Table.hash(hi, lo);
            while (Table.SLOTS[s] != 0) {
                s = (s + 1) & (Table.SLOTS.length - 1);
            }
            Table.SLOT.setRelease(Table.SLOTS, s, idx);
            return TAG | idx;
        }
    }

    /**
     * The address a GID names: an IPv4-mapped GID ({@code ::ffff:a.b.c.d}) gives its IPv4 int
     * (0 when in 240.0.0.0/4), any other non-zero GID the handle of that IPv6 address; the zero
     * GID gives 0.
     */
    public static int fromGid(byte[] gid) {
        return intern(be64(gid, 0), be64(gid, 8));
    }

    /** The GID of an address: {@code ::ffff:a.b.c.d} for IPv4, the address itself for IPv6. */
    public static byte[] gid(int addr) {
        byte[] g = new byte[16];
        if (isV6(addr)) {
            putBe64(g, 0, hi(addr));
            putBe64(g, 8, lo(addr));
        } else {
            g[10] = (byte) 0xff;
            g[11] = (byte) 0xff;
            g[12] = (byte) (addr >>> 24);
            g[13] = (byte) (addr >>> 16);
            g[14] = (byte) (addr >>> 8);
            g[15] = (byte) addr;
        }
        return g;
    }

    /** The first 8 bytes (big-endian) of an IPv6 handle's address (0 for a handle never given). */
    public static long hi(int handle) {
        int idx = handle & ~TAG;
        return idx <= V6_CAPACITY ? Table.HI[idx] : 0;
    }

    /** The last 8 bytes (big-endian) of an IPv6 handle's address (0 for a handle never given). */
    public static long lo(int handle) {
        int idx = handle & ~TAG;
        return idx <= V6_CAPACITY ? Table.LO[idx] : 0;
    }

    /** The int of an address (IPv6: entered on first use; 0 when the table is full). */
    public static int of(InetAddress a) {
        byte[] b = a.getAddress();
        if (a instanceof Inet4Address) {
            int v4 = ((b[0] & 0xff) << 24) | ((b[1] & 0xff) << 16) | ((b[2] & 0xff) << 8) | (b[3] & 0xff);
            return isV6(v4) ? 0 : v4;
        }
        return intern(be64(b, 0), be64(b, 8));
    }

    /** The InetAddress of an address int. */
    public static InetAddress toInet(int addr) {
        try {
            if (isV6(addr)) {
                byte[] g = gid(addr);
                return Inet6Address.getByAddress(null, g, null);
            }
            return InetAddress.getByAddress(
                    new byte[] {(byte) (addr >>> 24), (byte) (addr >>> 16), (byte) (addr >>> 8), (byte) addr});
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }

    /** Dotted IPv4 or the usual IPv6 text. */
    public static String toString(int addr) {
        if (isV6(addr)) {
            return toInet(addr).getHostAddress();
        }
        return (addr >>> 24) + "." + ((addr >>> 16) & 0xff) + "." + ((addr >>> 8) & 0xff) + "." + (addr & 0xff);
    }

    /** Parses an IPv4 or IPv6 literal (no name lookup). */
    public static int parse(String text) {
        if (text.indexOf(':') < 0 && !text.matches("\\d{1,3}(\\.\\d{1,3}){3}")) {
            throw new IllegalArgumentException("not an IP address: " + text);
        }
        try {
            int a = of(InetAddress.getByName(text));
            if (a == 0) {
                throw new IllegalArgumentException("not a usable address: " + text);
            }
            return a;
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IP address: " + text, e);
        }
    }

    static long be64(byte[] b, int off) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[off + i] & 0xff);
        }
        return v;
    }

    static void putBe64(byte[] b, int off, long v) {
        for (int i = 7; i >= 0; i--) {
            b[off + i] = (byte) v;
            v >>>= 8;
        }
    }
}
