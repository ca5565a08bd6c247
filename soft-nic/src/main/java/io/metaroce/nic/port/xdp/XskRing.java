package io.metaroce.nic.port.xdp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One AF_XDP ring (fill, completion, RX or TX) over its mmapped memory, the logic of libxdp's
 * {@code xsk.h} in Java. The kernel tells where the producer index, consumer index, flags word and
 * descriptor array lie ({@code XDP_MMAP_OFFSETS}); indices are free-running 32-bit counters masked
 * by {@code size - 1}.
 *
 * <p>Concurrency: single producer, single consumer; the other side is the kernel. Each side keeps a
 * cached copy of the other side's index and reads the shared one (acquire) only when the cache runs
 * out; publishing its own index is a release store.
 *
 * <p>The user side produces into the fill and TX rings ({@link #reserve}, {@link #submit}) and
 * consumes from the RX and completion rings ({@link #peek}, {@link #release}).
 */
public final class XskRing {
    /** Set by the kernel in the flags word when it wants a syscall to go on (need_wakeup). */
    public static final int NEED_WAKEUP = 1;
    /** struct xdp_desc { u64 addr; u32 len; u32 options; } */
    public static final int XDP_DESC_SIZE = 16;
    /** Fill and completion rings hold plain u64 UMEM addresses. */
    public static final int ADDR_SIZE = 8;

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle().withInvokeExactBehavior();

    private final MemorySegment mem;
    private final long producerOff;
    private final long consumerOff;
    private final long flagsOff;
    private final long descOff;
    private final int size;
    private final int mask;
    private final int entrySize;
    private final boolean producerSide;
    private int cachedProd;
    private int cachedCons;
    private int peekIndex;

    /**
     * @param mem the ring's mapping
     * @param producerSide true for fill and TX (we produce), false for RX and completion
     */
    public XskRing(
            MemorySegment mem,
            long producerOff,
            long consumerOff,
            long flagsOff,
            long descOff,
            int size,
            int entrySize,
            boolean producerSide) {
        if (Integer.bitCount(size) != 1) {
            throw new IllegalArgumentException("ring size must be a power of two: " + size);
        }
        this.mem = mem;
        this.producerOff = producerOff;
        this.consumerOff = consumerOff;
        this.flagsOff = flagsOff;
        this.descOff = descOff;
        this.size = size;
        this.mask = size - 1;
        this.entrySize = entrySize;
        this.producerSide = producerSide;
        this.cachedProd = loadAcquire(producerOff);
        this.cachedCons = loadAcquire(consumerOff);
        if (producerSide) {
            cachedCons += size; // libxdp's trick: cached_cons is "consumer + size", free = cons - prod
        }
    }

    public int size() {
        return size;
    }

    private int loadAcquire(long off) {
        return (int) INT.getAcquire(mem, off);
    }

    /** Free slots for the producer, refreshing the consumer index only when fewer than {@code n}. */
    public int free(int n) {
        int free = cachedCons - cachedProd;
        if (free >= n) {
            return free;
        }
        cachedCons = loadAcquire(consumerOff) + size;
        return cachedCons - cachedProd;
    }

    /** Reserves {@code n} slots: returns the first index, or -1 (nothing reserved) when full. */
    public long reserve(int n) {
        if (free(n) < n) {
            return -1;
        }
        int idx = cachedProd;
        cachedProd += n;
        return idx & 0xffffffffL;
    }

    /** Publishes every reserved slot to the kernel (release). */
    public void submit() {
        INT.setRelease(mem, producerOff, cachedProd);
    }

    /** Entries ready for the consumer, at most {@code n}; refreshes the producer index when none. */
    public int available(int n) {
        int entries = cachedProd - cachedCons;
        if (entries == 0) {
            cachedProd = loadAcquire(producerOff);
            entries = cachedProd - cachedCons;
        }
        return Math.min(entries, n);
    }

    /** Takes up to {@code n} entries; returns the count, the first index is {@link #peekIndex()}. */
    public int peek(int n) {
        int entries = available(n);
        if (entries > 0) {
            peekIndex = cachedCons;
            cachedCons += entries;
        }
        return entries;
    }

    /** The first index of the last non-empty {@link #peek}. */
    public int peekIndex() {
        return peekIndex;
    }

    /** Consumer: puts back the last {@code n} peeked entries, to be peeked again. */
    public void cancel(int n) {
        cachedCons -= n;
    }

    /**
     * Consumer: reads the producer index now, not only when the cache runs out; after a
     * {@link #cancel} of entries that wait for more (a multi-buffer frame's rest), the cache never
     * runs out by itself.
     */
    public void refresh() {
        cachedProd = loadAcquire(producerOff);
    }

    /** Producer: submitted entries the kernel has not consumed yet. */
    public int outstanding() {
        return cachedProd - loadAcquire(consumerOff);
    }

    /** Gives {@code n} consumed entries back to the kernel (release). */
    public void release(int n) {
        int cons = (int) INT.get(mem, consumerOff);
        INT.setRelease(mem, consumerOff, cons + n);
    }

    /** Whether the kernel asked for a wakeup syscall (fill: recvfrom/poll; TX: sendto). */
    public boolean needsWakeup() {
        return ((int) INT.getVolatile(mem, flagsOff) & NEED_WAKEUP) != 0;
    }

    private long slot(long idx) {
        return descOff + (long) ((int) idx & mask) * entrySize;
    }

    /** Fill / completion: the address at index {@code idx}. */
    public long addr(long idx) {
        return mem.get(ValueLayout.JAVA_LONG_UNALIGNED, slot(idx));
    }

    public void setAddr(long idx, long addr) {
        mem.set(ValueLayout.JAVA_LONG_UNALIGNED, slot(idx), addr);
    }

    /** RX / TX: the descriptor's fields at index {@code idx}. */
    public long descAddr(long idx) {
        return mem.get(ValueLayout.JAVA_LONG_UNALIGNED, slot(idx));
    }

    public int descLen(long idx) {
        return mem.get(ValueLayout.JAVA_INT_UNALIGNED, slot(idx) + 8);
    }

    public int descOptions(long idx) {
        return mem.get(ValueLayout.JAVA_INT_UNALIGNED, slot(idx) + 12);
    }

    public void setDesc(long idx, long addr, int len, int options) {
        long s = slot(idx);
        mem.set(ValueLayout.JAVA_LONG_UNALIGNED, s, addr);
        mem.set(ValueLayout.JAVA_INT_UNALIGNED, s + 8, len);
        mem.set(ValueLayout.JAVA_INT_UNALIGNED, s + 12, options);
    }

    /** True for the fill and TX rings. */
    public boolean producerSide() {
        return producerSide;
    }
}
