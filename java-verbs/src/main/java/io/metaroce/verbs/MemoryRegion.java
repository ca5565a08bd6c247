package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A registered memory region ({@code struct ibv_mr}) over a native {@link MemorySegment}. Its
 * {@link #lkey()} goes into local scatter/gather entries, its {@link #rkey()} and
 * {@link #address()} to peers that RDMA READ/WRITE or run atomics on it.
 *
 * <p><b>Who owns the memory</b>, by how the region was made:
 * <ul>
 * <li>{@link ProtectionDomain#allocateRegistered}: the region owns it. Closing the region
 *     deregisters it, then frees the memory; {@link #segment()} then throws on access.</li>
 * <li>{@link ProtectionDomain#register(Arena, MemorySegment, int)}: the arena owns it, and the
 *     registration is tied to the arena: closing the arena first deregisters the region (waiting
 *     for posts in flight), then frees the memory. No region is ever left over freed memory.</li>
 * <li>{@link ProtectionDomain#register(MemorySegment, int)}: the caller's arena owns it and the
 *     region only checks it: a work request built on the region, or a post of one, throws
 *     {@link IllegalStateException} once the segment's arena is closed. Close the region before
 *     the arena (a receive posted before the arena closed still targets the freed memory).</li>
 * </ul>
 *
 * <p><b>Thread safety:</b> immutable apart from closing; safe to share between threads. A post
 * holds the regions of its scatter/gather entries open for the duration of the call, so a
 * concurrent {@link #close()} either waits for it or makes it throw.
 */
public final class MemoryRegion extends VerbsObject {

    static final Native.Verb DEREG_MR = Native.verb("ibv_dereg_mr", FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private final ProtectionDomain pd;
    private final MemorySegment segment;
    final MemorySegment ptr;
    private final int lkey;
    private final int rkey;
    private final int access;
    /** The arena this region allocated its memory from and frees at close, or null. */
    private final Arena ownedArena;

    MemoryRegion(ProtectionDomain pd, MemorySegment segment, MemorySegment ptr, int access, Arena ownedArena) {
        super(pd);
        this.pd = pd;
        this.segment = segment;
        this.ptr = ptr.reinterpret(Abi.MR_RKEY + 4);
        this.lkey = this.ptr.get(JAVA_INT, Abi.MR_LKEY);
        this.rkey = this.ptr.get(JAVA_INT, Abi.MR_RKEY);
        this.access = access;
        this.ownedArena = ownedArena;
        attach();
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The registered memory (for a region that owns it, invalid once the region is closed). */
    public MemorySegment segment() {
        return segment;
    }

    /** A {@link ByteBuffer} view of the registered memory. */
    public ByteBuffer asByteBuffer() {
        ensureUsable();
        return segment.asByteBuffer();
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

    /** The {@link Access} flags it was registered with. */
    public int access() {
        return access;
    }

    /** The access flags it was registered with, as a set. */
    public java.util.EnumSet<AccessFlag> accessFlags() {
        return AccessFlag.fromBits(access);
    }

    /** True when the region allocated its memory and frees it at close. */
    public boolean ownsMemory() {
        return ownedArena != null;
    }

    /** Throws IllegalStateException when the region is closed or its memory was freed. */
    void ensureUsable() {
        ensureOpen();
        if (!segment.scope().isAlive()) {
            throw freed();
        }
    }

    /** {@link #acquire()} that also refuses a region whose memory was freed. Allocation-free. */
    void acquireForUse() {
        acquire();
        if (!segment.scope().isAlive()) {
            release();
            throw freed();
        }
    }

    private IllegalStateException freed() {
        return new IllegalStateException(describe() + ": its memory was freed (the segment's arena is closed) "
                + "while still registered; close the region before its arena, or register with "
                + "register(arena, segment, access) or allocateRegistered(size)");
    }

    @Override
    public String describe() {
        return String.format("MemoryRegion lkey 0x%x (%d bytes at 0x%x)", lkey, segment.byteSize(), segment.address());
    }

    @Override
    void destroy() {
        DEREG_MR.check(ptr);
        if (ownedArena != null) {
            ownedArena.close();
        }
    }
}
