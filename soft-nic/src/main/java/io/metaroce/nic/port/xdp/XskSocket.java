package io.metaroce.nic.port.xdp;

import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One AF_XDP socket bound to one queue, with its own UMEM (off-heap, page-aligned chunks) and its
 * four mmapped rings. Set-up and tear-down only; {@link AfXdpPort} drives the rings.
 */
final class XskSocket implements AutoCloseable {
    static final int CHUNK = 4096;
    private static final int MAP_POPULATE = 0x8000;

    final int fd;
    final int queue;
    final MemorySegment umem;
    final XskRing fill;
    final XskRing comp;
    final XskRing rx;
    final XskRing tx;
    private final MemorySegment[] maps = new MemorySegment[4];

    /**
     * @param umem the socket's UMEM, {@code CHUNK}-aligned, a whole number of chunks
     * @param ringSize entries in each of the four rings (a power of two)
     */
    XskSocket(int ifindex, int queue, MemorySegment umem, int ringSize, int bindFlags) throws NativeException {
        this.queue = queue;
        this.umem = umem;
        int s = XskSys.socket();
        try {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment reg = a.allocate(XskSys.UMEM_REG_SIZE, 8);
                reg.set(ValueLayout.JAVA_LONG, 0, umem.address());
                reg.set(ValueLayout.JAVA_LONG, 8, umem.byteSize());
                reg.set(ValueLayout.JAVA_INT, 16, CHUNK);
                reg.set(ValueLayout.JAVA_INT, 20, 0); // no user headroom
                XskSys.setsockopt(s, XskSys.XDP_UMEM_REG, reg, "XDP_UMEM_REG " + umem.byteSize() + " bytes");
            }
            XskSys.setsockoptInt(s, XskSys.XDP_UMEM_FILL_RING, ringSize, "XDP_UMEM_FILL_RING");
            XskSys.setsockoptInt(s, XskSys.XDP_UMEM_COMPLETION_RING, ringSize, "XDP_UMEM_COMPLETION_RING");
            XskSys.setsockoptInt(s, XskSys.XDP_RX_RING, ringSize, "XDP_RX_RING");
            XskSys.setsockoptInt(s, XskSys.XDP_TX_RING, ringSize, "XDP_TX_RING");
            try (Arena a = Arena.ofConfined()) {
                MemorySegment off = a.allocate(XskSys.MMAP_OFFSETS_SIZE, 8);
                XskSys.mmapOffsets(s, off);
                rx = map(s, 0, off, 0, ringSize, XskRing.XDP_DESC_SIZE, XskSys.XDP_PGOFF_RX_RING, false);
                tx = map(s, 1, off, 32, ringSize, XskRing.XDP_DESC_SIZE, XskSys.XDP_PGOFF_TX_RING, true);
                fill = map(s, 2, off, 64, ringSize, XskRing.ADDR_SIZE, XskSys.XDP_UMEM_PGOFF_FILL_RING, true);
                comp = map(s, 3, off, 96, ringSize, XskRing.ADDR_SIZE, XskSys.XDP_UMEM_PGOFF_COMPLETION_RING, false);
            }
            XskSys.bind(s, ifindex, queue, bindFlags);
        } catch (NativeException e) {
            unmapAll();
            LibC.close(s);
            throw e;
        }
        this.fd = s;
    }

    /** Tests: a socket whose rings and UMEM are plain memory, with no file descriptor (-1). */
    XskSocket(int queue, MemorySegment umem, XskRing fill, XskRing comp, XskRing rx, XskRing tx) {
        this.fd = -1;
        this.queue = queue;
        this.umem = umem;
        this.fill = fill;
        this.comp = comp;
        this.rx = rx;
        this.tx = tx;
    }

    private XskRing map(
            int s, int slot, MemorySegment off, long base, int size, int entry, long pgoff, boolean producer)
            throws NativeException {
        long prod = off.get(ValueLayout.JAVA_LONG, base);
        long cons = off.get(ValueLayout.JAVA_LONG, base + 8);
        long desc = off.get(ValueLayout.JAVA_LONG, base + 16);
        long flags = off.get(ValueLayout.JAVA_LONG, base + 24);
        MemorySegment m = LibC.mmap(
                desc + (long) size * entry, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED | MAP_POPULATE, s, pgoff);
        maps[slot] = m;
        return new XskRing(m, prod, cons, flags, desc, size, entry, producer);
    }

    private void unmapAll() {
        for (int i = 0; i < maps.length; i++) {
            if (maps[i] != null) {
                try {
                    LibC.munmap(maps[i]);
                } catch (NativeException ignored) {
                    // closing anyway
                }
                maps[i] = null;
            }
        }
    }

    @Override
    public void close() {
        unmapAll();
        if (fd >= 0) {
            LibC.close(fd);
        }
    }
}
