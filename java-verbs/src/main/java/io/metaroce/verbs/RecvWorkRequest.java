package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A reusable receive work request ({@code struct ibv_recv_wr} with its scatter/gather list) in
 * native memory, for {@link QueuePair#postRecv} and {@link SharedReceiveQueue#postRecv}. Setters
 * write native memory and return {@code this}; posting allocates nothing. Not thread-safe; close
 * frees the memory (double close: no-op).
 */
public final class RecvWorkRequest implements AutoCloseable {

    private final Arena arena;
    final MemorySegment wr;
    private final MemorySegment sges;
    final MemorySegment badWr;
    private final int maxSge;
    private int numSge;
    private RecvWorkRequest next;

    public RecvWorkRequest(int maxSge) {
        if (maxSge < 0) {
            throw new IllegalArgumentException("maxSge < 0");
        }
        this.maxSge = maxSge;
        this.arena = Arena.ofShared();
        MemorySegment all = arena.allocate(Abi.RECV_WR_SIZE + Abi.SGE_SIZE * maxSge + 8, 16);
        this.wr = all.asSlice(0, Abi.RECV_WR_SIZE);
        this.sges = all.asSlice(Abi.RECV_WR_SIZE, Abi.SGE_SIZE * maxSge);
        this.badWr = all.asSlice(Abi.RECV_WR_SIZE + Abi.SGE_SIZE * maxSge, 8);
        wr.set(ADDRESS, Abi.RECV_WR_SG_LIST, sges);
    }

    public RecvWorkRequest wrId(long wrId) {
        wr.set(JAVA_LONG, Abi.RECV_WR_WR_ID, wrId);
        return this;
    }

    public long wrId() {
        return wr.get(JAVA_LONG, Abi.RECV_WR_WR_ID);
    }

    public RecvWorkRequest clearSge() {
        numSge = 0;
        wr.set(JAVA_INT, Abi.RECV_WR_NUM_SGE, 0);
        return this;
    }

    /** Sets the list to one entry: {@code length} bytes at {@code offset} in {@code mr}. */
    public RecvWorkRequest sge(MemoryRegion mr, long offset, int length) {
        return clearSge().addSge(mr, offset, length);
    }

    /** Appends {@code length} bytes at {@code offset} of {@code mr} (bounds-checked). */
    public RecvWorkRequest addSge(MemoryRegion mr, long offset, int length) {
        if (offset < 0 || length < 0 || offset + length > mr.length()) {
            throw new IndexOutOfBoundsException("SGE [" + offset + ", +" + length + ") outside " + mr.describe());
        }
        return addSge(mr.address() + offset, length, mr.lkey());
    }

    /** Appends a raw entry (address, length, lkey): not checked against any region. */
    public RecvWorkRequest addSge(long address, int length, int lkey) {
        if (numSge == maxSge) {
            throw new IllegalStateException("this request has room for " + maxSge + " SGEs");
        }
        long o = Abi.SGE_SIZE * numSge;
        sges.set(JAVA_LONG, o + Abi.SGE_ADDR, address);
        sges.set(JAVA_INT, o + Abi.SGE_LENGTH, length);
        sges.set(JAVA_INT, o + Abi.SGE_LKEY, lkey);
        numSge++;
        wr.set(JAVA_INT, Abi.RECV_WR_NUM_SGE, numSge);
        return this;
    }

    public int numSge() {
        return numSge;
    }

    /** Chains {@code next} after this request (null ends the chain). */
    public RecvWorkRequest next(RecvWorkRequest next) {
        this.next = next;
        wr.set(ADDRESS, Abi.RECV_WR_NEXT, next == null ? MemorySegment.NULL : next.wr);
        return this;
    }

    public RecvWorkRequest next() {
        return next;
    }

    /** The native {@code struct ibv_recv_wr}. */
    public MemorySegment segment() {
        return wr;
    }

    String describeBad() {
        long bad = badWr.get(ADDRESS, 0).address();
        int i = 0;
        for (RecvWorkRequest r = this; r != null; r = r.next, i++) {
            if (r.wr.address() == bad) {
                return "bad_wr is request " + i + " of the chain (wr_id " + r.wrId() + ")";
            }
        }
        return null;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
