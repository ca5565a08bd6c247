package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A registered memory region ({@code struct ibv_mr}) over a native {@link MemorySegment}, from
 * {@link ProtectionDomain#register}. Its {@link #lkey()} goes into local scatter/gather entries,
 * its {@link #rkey()} and {@link #address()} to peers that RDMA READ/WRITE or run atomics on it.
 * Closing it ({@code ibv_dereg_mr}) does not free the segment: its arena stays the caller's.
 */
public final class MemoryRegion extends VerbsObject {

    static final Native.Verb DEREG_MR = Native.verb("ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private final ProtectionDomain pd;
    private final MemorySegment segment;
    final MemorySegment ptr;
    private final int lkey;
    private final int rkey;

    MemoryRegion(ProtectionDomain pd, MemorySegment segment, MemorySegment ptr) {
        super(pd);
        this.pd = pd;
        this.segment = segment;
        this.ptr = ptr.reinterpret(Abi.MR_RKEY + 4);
        this.lkey = this.ptr.get(JAVA_INT, Abi.MR_LKEY);
        this.rkey = this.ptr.get(JAVA_INT, Abi.MR_RKEY);
        attach();
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The registered memory. */
    public MemorySegment segment() {
        return segment;
    }

    /** The start address of the region (what a peer puts in {@code remote_addr}). */
    public long address() {
        return segment.address();
    }

    public long length() {
        return segment.byteSize();
    }

    /** The local key, for scatter/gather entries of this process's work requests. */
    public int lkey() {
        return lkey;
    }

    /** The remote key, for peers' RDMA READ/WRITE and atomics. */
    public int rkey() {
        return rkey;
    }

    @Override
    public String describe() {
        return String.format("MemoryRegion lkey 0x%x (%d bytes at 0x%x)", lkey, segment.byteSize(),
                segment.address());
    }

    @Override
    void destroy() {
        DEREG_MR.check(ptr);
    }
}
