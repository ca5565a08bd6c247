package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The native memory of one work request, send or receive: the {@code struct ibv_*_wr}, its
 * scatter/gather array and the {@code bad_wr} slot the post writes, in one allocation; and the
 * SGE list kept in it (the struct's {@code sg_list} points at the array, {@code num_sge} follows
 * the list). It remembers which {@link MemoryRegion} each entry came from, so a post can hold
 * those regions open for its duration ({@link #acquireRegions()}) and refuse a closed one.
 */
final class NativeWorkRequest implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    final MemorySegment wr;
    final MemorySegment badWr;
    private final MemorySegment sges;
    private final long numSgeOffset;
    private final int maxSge;
    /** The region of each entry, null for a raw entry. */
    private final MemoryRegion[] regions;

    private int numSge;

    NativeWorkRequest(long wrSize, long sgListOffset, long numSgeOffset, int maxSge) {
        if (maxSge < 0) {
            throw new IllegalArgumentException("maxSge < 0");
        }
        this.maxSge = maxSge;
        this.regions = new MemoryRegion[maxSge];
        this.numSgeOffset = numSgeOffset;
        MemorySegment all = arena.allocate(wrSize + Abi.SGE_SIZE * maxSge + 8, 16);
        this.wr = all.asSlice(0, wrSize);
        this.sges = all.asSlice(wrSize, Abi.SGE_SIZE * maxSge);
        this.badWr = all.asSlice(wrSize + Abi.SGE_SIZE * maxSge, 8);
        wr.set(ADDRESS, sgListOffset, sges);
    }

    void clearSge() {
        java.util.Arrays.fill(regions, 0, numSge, null);
        numSge = 0;
        wr.set(JAVA_INT, numSgeOffset, 0);
    }

    /** Appends {@code length} bytes at {@code offset} of {@code mr} (bounds-checked). */
    void addSge(MemoryRegion mr, long offset, int length) {
        if (offset < 0 || length < 0 || offset + length > mr.length()) {
            throw new IndexOutOfBoundsException("SGE [" + offset + ", +" + length + ") outside " + mr.describe());
        }
        mr.ensureUsable();
        addSge(mr.address() + offset, length, mr.lkey());
        regions[numSge - 1] = mr;
    }

    /** Appends a raw entry (address, length, lkey): not checked against any region. */
    void addSge(long address, int length, int lkey) {
        if (numSge == maxSge) {
            throw new IllegalStateException("this request has room for " + maxSge + " SGEs");
        }
        long o = Abi.SGE_SIZE * numSge;
        sges.set(JAVA_LONG, o + Abi.SGE_ADDR, address);
        sges.set(JAVA_INT, o + Abi.SGE_LENGTH, length);
        sges.set(JAVA_INT, o + Abi.SGE_LKEY, lkey);
        regions[numSge] = null;
        numSge++;
        wr.set(JAVA_INT, numSgeOffset, numSge);
    }

    /** Changes the length of entry {@code index}, nothing else. */
    void sgeLength(int index, int length) {
        if (index >= numSge) {
            throw new IndexOutOfBoundsException("SGE " + index + " of " + numSge);
        }
        sges.set(JAVA_INT, Abi.SGE_SIZE * index + Abi.SGE_LENGTH, length);
    }

    /**
     * Holds every region of the list open for a post (all or none): throws IllegalStateException
     * when one is closed or its memory was freed. Allocation-free; undo with {@link #releaseRegions}.
     */
    void acquireRegions() {
        int i = 0;
        try {
            for (; i < numSge; i++) {
                MemoryRegion mr = regions[i];
                if (mr != null) {
                    mr.acquireForUse();
                }
            }
        } catch (RuntimeException e) {
            releaseRegions(i);
            throw e;
        }
    }

    /** Releases the regions of the first {@code count} entries. */
    void releaseRegions(int count) {
        for (int i = 0; i < count; i++) {
            MemoryRegion mr = regions[i];
            if (mr != null) {
                mr.release();
            }
        }
    }

    int numSge() {
        return numSge;
    }

    /** The address the last failed post left in {@code bad_wr}. */
    long badAddress() {
        return badWr.get(ADDRESS, 0).address();
    }

    /** Frees the native memory; double close is a no-op. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
