package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * A reusable receive work request ({@code struct ibv_recv_wr} with its scatter/gather list) in
 * native memory, for {@link QueuePair#postRecv} and {@link SharedReceiveQueue#postRecv}. Setters
 * write native memory and return {@code this}; posting allocates nothing.
 *
 * <p><b>Thread safety:</b> none: build and post it from one thread at a time. Close frees the
 * memory (double close: no-op); a post of a closed request throws IllegalStateException.
 */
public final class RecvWorkRequest implements AutoCloseable {

    private final NativeWorkRequest mem;
    final MemorySegment wr;
    final MemorySegment badWr;
    private RecvWorkRequest next;

    public RecvWorkRequest(int maxSge) {
        this.mem = new NativeWorkRequest(Abi.RECV_WR_SIZE, Abi.RECV_WR_SG_LIST, Abi.RECV_WR_NUM_SGE, maxSge);
        this.wr = mem.wr;
        this.badWr = mem.badWr;
    }

    public RecvWorkRequest wrId(long wrId) {
        wr.set(JAVA_LONG, Abi.RECV_WR_WR_ID, wrId);
        return this;
    }

    public long wrId() {
        return wr.get(JAVA_LONG, Abi.RECV_WR_WR_ID);
    }

    public RecvWorkRequest clearSge() {
        mem.clearSge();
        return this;
    }

    /** Sets the list to one entry: {@code length} bytes at {@code offset} in {@code mr}. */
    public RecvWorkRequest sge(MemoryRegion mr, long offset, int length) {
        return clearSge().addSge(mr, offset, length);
    }

    /** Appends {@code length} bytes at {@code offset} of {@code mr} (bounds-checked). */
    public RecvWorkRequest addSge(MemoryRegion mr, long offset, int length) {
        mem.addSge(mr, offset, length);
        return this;
    }

    /** Appends a raw entry (address, length, lkey): not checked against any region. */
    public RecvWorkRequest addSge(long address, int length, int lkey) {
        mem.addSge(address, length, lkey);
        return this;
    }

    public int numSge() {
        return mem.numSge();
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

    /** Holds every SGE's memory region of the chain open for one post (all or none). */
    void acquireChain() {
        RecvWorkRequest r = this;
        try {
            for (; r != null; r = r.next) {
                r.mem.acquireRegions();
            }
        } catch (RuntimeException e) {
            for (RecvWorkRequest q = this; q != r; q = q.next) {
                q.mem.releaseRegions(q.mem.numSge());
            }
            throw e;
        }
    }

    /** Undoes {@link #acquireChain}. */
    void releaseChain() {
        for (RecvWorkRequest r = this; r != null; r = r.next) {
            r.mem.releaseRegions(r.mem.numSge());
        }
    }

    String describeBad() {
        long bad = mem.badAddress();
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
        mem.close();
    }
}
