package io.metaroce.nic.port.xdp;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The AF_XDP socket calls (libc: socket, setsockopt, getsockopt, bind, sendto, recvfrom,
 * if_nametoindex) and the {@code <linux/if_xdp.h>} constants. Set-up calls throw
 * {@link NativeException}; the two wakeup calls of the data path return {@code -errno}.
 */
final class XskSys {
    static final int AF_XDP = 44;
    static final int SOCK_RAW = 3;
    static final int SOCK_CLOEXEC = 0x80000;
    static final int SOL_XDP = 283;
    static final int XDP_MMAP_OFFSETS = 1;
    static final int XDP_RX_RING = 2;
    static final int XDP_TX_RING = 3;
    static final int XDP_UMEM_REG = 4;
    static final int XDP_UMEM_FILL_RING = 5;
    static final int XDP_UMEM_COMPLETION_RING = 6;
    static final int XDP_STATISTICS = 7;
    /** struct xdp_statistics: rx_dropped, rx_invalid_descs, tx_invalid_descs, rx_ring_full,
     * rx_fill_ring_empty_descs, tx_ring_empty_descs (u64 each). */
    static final long STATISTICS_SIZE = 48;

    static final long XDP_PGOFF_RX_RING = 0;
    static final long XDP_PGOFF_TX_RING = 0x80000000L;
    static final long XDP_UMEM_PGOFF_FILL_RING = 0x100000000L;
    static final long XDP_UMEM_PGOFF_COMPLETION_RING = 0x180000000L;
    /** sockaddr_xdp.sxdp_flags */
    static final int XDP_COPY = 1 << 1;

    static final int XDP_ZEROCOPY = 1 << 2;
    static final int XDP_USE_NEED_WAKEUP = 1 << 3;
    static final int XDP_USE_SG = 1 << 4;
    /** xdp_desc.options: more descriptors of the same packet follow. */
    static final int XDP_PKT_CONTD = 1;
    /** The kernel's reserved headroom before a received frame in its UMEM chunk. */
    static final int XDP_PACKET_HEADROOM = 256;

    static final int MSG_DONTWAIT = 0x40;
    /** struct xdp_umem_reg (v1 fields: addr, len, chunk_size, headroom), 24 bytes. */
    static final long UMEM_REG_SIZE = 24;
    /** struct xdp_mmap_offsets: rx, tx, fr, cr, each { producer, consumer, desc, flags } u64. */
    static final long MMAP_OFFSETS_SIZE = 128;
    /** struct sockaddr_xdp { u16 family, flags; u32 ifindex, queue_id, shared_umem_fd; } */
    static final long SOCKADDR_XDP_SIZE = 16;

    private static final MethodHandle SOCKET = LibC.link("socket", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
    private static final MethodHandle SETSOCKOPT =
            LibC.link("setsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle GETSOCKOPT =
            LibC.link("getsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle BIND = LibC.link("bind", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle SENDTO =
            LibC.link("sendto", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle RECVFROM =
            LibC.link("recvfrom", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS);
    private static final MethodHandle IF_NAMETOINDEX = LibC.link("if_nametoindex", JAVA_INT, ADDRESS);

    private XskSys() {}

    static int socket() throws NativeException {
        MemorySegment cs = LibC.callState();
        try {
            int fd = (int) SOCKET.invokeExact(cs, AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                throw new NativeException("socket(AF_XDP, SOCK_RAW, 0)", LibC.errno(cs));
            }
            return fd;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    static void setsockopt(int fd, int opt, MemorySegment value, String what) throws NativeException {
        MemorySegment cs = LibC.callState();
        try {
            int rc = (int) SETSOCKOPT.invokeExact(cs, fd, SOL_XDP, opt, value, (int) value.byteSize());
            if (rc < 0) {
                throw new NativeException("setsockopt(" + fd + ", SOL_XDP, " + what + ")", LibC.errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    static void setsockoptInt(int fd, int opt, int value, String what) throws NativeException {
        try (Arena a = Arena.ofConfined()) {
            setsockopt(fd, opt, a.allocateFrom(JAVA_INT, value), what + " " + value);
        }
    }

    static void mmapOffsets(int fd, MemorySegment out) throws NativeException {
        MemorySegment cs = LibC.callState();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment len = a.allocateFrom(JAVA_INT, (int) out.byteSize());
            int rc = (int) GETSOCKOPT.invokeExact(cs, fd, SOL_XDP, XDP_MMAP_OFFSETS, out, len);
            if (rc < 0) {
                throw new NativeException("getsockopt(" + fd + ", SOL_XDP, XDP_MMAP_OFFSETS)", LibC.errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    /** XDP_STATISTICS of a socket: the six u64 counters of {@code struct xdp_statistics}. */
    static long[] statistics(int fd) throws NativeException {
        MemorySegment cs = LibC.callState();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(STATISTICS_SIZE, 8);
            MemorySegment len = a.allocateFrom(JAVA_INT, (int) STATISTICS_SIZE);
            int rc = (int) GETSOCKOPT.invokeExact(cs, fd, SOL_XDP, XDP_STATISTICS, out, len);
            if (rc < 0) {
                throw new NativeException("getsockopt(" + fd + ", SOL_XDP, XDP_STATISTICS)", LibC.errno(cs));
            }
            long[] v = new long[6];
            for (int i = 0; i < 6; i++) {
                v[i] = out.get(JAVA_LONG, 8L * i);
            }
            return v;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    static void bind(int fd, int ifindex, int queue, int flags) throws NativeException {
        MemorySegment cs = LibC.callState();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment sa = a.allocate(SOCKADDR_XDP_SIZE, 8);
            sa.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 0, (short) AF_XDP);
            sa.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 2, (short) flags);
            sa.set(JAVA_INT, 4, ifindex);
            sa.set(JAVA_INT, 8, queue);
            int rc = (int) BIND.invokeExact(cs, fd, sa, (int) SOCKADDR_XDP_SIZE);
            if (rc < 0) {
                throw new NativeException(
                        "bind(AF_XDP fd " + fd + ", ifindex " + ifindex + ", queue " + queue + ", flags 0x"
                                + Integer.toHexString(flags) + ")",
                        LibC.errno(cs));
            }
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    /** The TX kick: sendto(fd, NULL, 0, MSG_DONTWAIT); 0 or -errno. */
    static int kickTx(int fd) {
        MemorySegment cs = LibC.callState();
        try {
            long rc = (long) SENDTO.invokeExact(cs, fd, MemorySegment.NULL, 0L, MSG_DONTWAIT, MemorySegment.NULL, 0);
            return rc < 0 ? -LibC.errno(cs) : 0;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    /** The fill-ring wakeup: recvfrom(fd, NULL, 0, MSG_DONTWAIT); 0 or -errno. */
    static int kickRx(int fd) {
        MemorySegment cs = LibC.callState();
        try {
            long rc = (long) RECVFROM.invokeExact(
                    cs, fd, MemorySegment.NULL, 0L, MSG_DONTWAIT, MemorySegment.NULL, MemorySegment.NULL);
            return rc < 0 ? -LibC.errno(cs) : 0;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }

    static int ifindex(String ifname) throws NativeException {
        MemorySegment cs = LibC.callState();
        try (Arena a = Arena.ofConfined()) {
            int idx = (int) IF_NAMETOINDEX.invokeExact(cs, a.allocateFrom(ifname));
            if (idx == 0) {
                throw new NativeException("if_nametoindex(" + ifname + ")", LibC.errno(cs));
            }
            return idx;
        } catch (NativeException e) {
            throw e;
        } catch (Throwable t) {
            throw LibC.rethrow(t);
        }
    }
}
