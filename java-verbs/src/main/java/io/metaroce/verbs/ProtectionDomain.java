package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions, queue pairs, shared receive
 * queues and address handles are created in it and must be closed before it.
 *
 * <p><b>Thread safety:</b> safe to share; objects may be created from it on several threads,
 * and a concurrent {@link #close()} waits for creations in flight or makes them throw.
 */
public final class ProtectionDomain extends VerbsObject {

    static final Native.Verb DEALLOC_PD = Native.verb("ibv_dealloc_pd", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb REG_MR =
            Native.verb("ibv_reg_mr", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
    static final Native.Verb CREATE_QP = Native.verb("ibv_create_qp", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final Native.Verb CREATE_SRQ =
            Native.verb("ibv_create_srq", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    static final Native.Verb CREATE_AH = Native.verb("ibv_create_ah", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));

    final Context context;
    final MemorySegment ptr;

    ProtectionDomain(Context context, MemorySegment ptr) {
        super(context);
        this.context = context;
        this.ptr = ptr.reinterpret(16);
        attach();
    }

    public Context context() {
        return context;
    }

    /** The native {@code struct ibv_pd *}. */
    public MemorySegment address() {
        return ptr;
    }

    @Override
    public String describe() {
        return "ProtectionDomain " + ptr.get(JAVA_INT, Abi.PD_HANDLE) + " of " + context.deviceName();
    }

    @Override
    void destroy() {
        DEALLOC_PD.check(ptr);
    }

    /**
     * {@code ibv_reg_mr}: registers native memory that the caller's arena owns. The region checks
     * the segment (a post over it throws once the arena is closed) but cannot stop the arena
     * from freeing it: close the region first, or prefer {@link #register(Arena, MemorySegment,
     * int)} or {@link #allocateRegistered(long, int)}.
     *
     * @param access {@link Access} flags
     */
    public MemoryRegion register(MemorySegment segment, int access) {
        return register(segment, access, null);
    }

    /** {@link #register(MemorySegment, int)} with the access flags as a set. */
    public MemoryRegion register(MemorySegment segment, java.util.Set<AccessFlag> access) {
        return register(segment, AccessFlag.toBits(access));
    }

    /** {@link #register(Arena, MemorySegment, int)} with the access flags as a set. */
    public MemoryRegion register(Arena owner, MemorySegment segment, java.util.Set<AccessFlag> access) {
        return register(owner, segment, AccessFlag.toBits(access));
    }

    /** {@link #allocateRegistered(long, int)} with the access flags as a set. */
    public MemoryRegion allocateRegistered(long size, java.util.Set<AccessFlag> access) {
        return allocateRegistered(size, AccessFlag.toBits(access));
    }

    /**
     * {@code ibv_reg_mr} of memory allocated from {@code owner}, tied to that arena's lifetime:
     * when {@code owner} closes, the region is closed (deregistered, after the posts in flight)
     * before the arena frees the memory. Closing the region earlier is fine.
     *
     * @throws IllegalArgumentException when {@code segment} does not belong to {@code owner}
     */
    public MemoryRegion register(Arena owner, MemorySegment segment, int access) {
        if (segment.scope() != owner.scope()) {
            throw new IllegalArgumentException("the segment does not belong to this arena: " + segment);
        }
        MemoryRegion mr = register(segment, access, null);
        try {
            // Cleanups of an arena run in reverse order of registration: this one runs before the
            // memory allocated earlier from the arena is freed.
            MemorySegment.ofAddress(segment.address()).reinterpret(owner, s -> mr.close());
        } catch (RuntimeException | Error e) {
            mr.close();
            throw e;
        }
        return mr;
    }

    /**
     * A registered buffer that owns its memory: {@code size} bytes, page-aligned and zeroed,
     * allocated for the region and freed when it is closed (after {@code ibv_dereg_mr}).
     *
     * @param access {@link Access} flags
     */
    public MemoryRegion allocateRegistered(long size, int access) {
        if (size <= 0) {
            throw new IllegalArgumentException("size must be positive: " + size);
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment segment = arena.allocate(size, 4096);
            return register(segment, access, arena);
        } catch (RuntimeException | Error e) {
            if (arena.scope().isAlive()) { // a region that failed to attach already freed it
                arena.close();
            }
            throw e;
        }
    }

    /** {@link #allocateRegistered(long, int)} for local use ({@link Access#LOCAL_WRITE}: sends and receives). */
    public MemoryRegion allocateRegistered(long size) {
        return allocateRegistered(size, Access.LOCAL_WRITE);
    }

    private MemoryRegion register(MemorySegment segment, int access, Arena owned) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException(
                    "only native memory can be registered (a heap segment moves): " + segment);
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is closed: " + segment);
        }
        acquire();
        try {
            MemorySegment mr = REG_MR.create(ptr, segment, segment.byteSize(), access);
            return new MemoryRegion(this, segment, mr, access, owned);
        } finally {
            release();
        }
    }

    /** {@code ibv_create_qp} with the given attributes ({@link QueuePair#rc}, {@link QueuePair#ud}). */
    public QueuePair createQueuePair(QueuePair.InitAttributes init) {
        acquire();
        try {
            init.sendCq.acquire();
            try {
                init.recvCq.acquire();
                try {
                    if (init.srq != null) {
                        init.srq.acquire();
                    }
                    try {
                        return createQueuePair0(init);
                    } finally {
                        if (init.srq != null) {
                            init.srq.release();
                        }
                    }
                } finally {
                    init.recvCq.release();
                }
            } finally {
                init.sendCq.release();
            }
        } finally {
            release();
        }
    }

    private QueuePair createQueuePair0(QueuePair.InitAttributes init) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.QP_INIT_ATTR_SIZE, 8);
            s.set(ADDRESS, Abi.QP_INIT_ATTR_SEND_CQ, init.sendCq.ptr);
            s.set(ADDRESS, Abi.QP_INIT_ATTR_RECV_CQ, init.recvCq.ptr);
            s.set(ADDRESS, Abi.QP_INIT_ATTR_SRQ, init.srq == null ? MemorySegment.NULL : init.srq.ptr);
            long cap = Abi.QP_INIT_ATTR_CAP;
            s.set(JAVA_INT, cap + Abi.QP_CAP_MAX_SEND_WR, init.maxSendWr);
            s.set(JAVA_INT, cap + Abi.QP_CAP_MAX_RECV_WR, init.srq == null ? init.maxRecvWr : 0);
            s.set(JAVA_INT, cap + Abi.QP_CAP_MAX_SEND_SGE, init.maxSendSge);
            s.set(JAVA_INT, cap + Abi.QP_CAP_MAX_RECV_SGE, init.srq == null ? init.maxRecvSge : 0);
            s.set(JAVA_INT, cap + Abi.QP_CAP_MAX_INLINE_DATA, init.maxInlineData);
            s.set(JAVA_INT, Abi.QP_INIT_ATTR_QP_TYPE, init.type.value());
            s.set(JAVA_INT, Abi.QP_INIT_ATTR_SQ_SIG_ALL, init.signalAll ? 1 : 0);
            MemorySegment qp = CREATE_QP.create(ptr, s);
            QueuePair.Capabilities caps = new QueuePair.Capabilities(
                    s.get(JAVA_INT, cap + Abi.QP_CAP_MAX_SEND_WR),
                    s.get(JAVA_INT, cap + Abi.QP_CAP_MAX_RECV_WR),
                    s.get(JAVA_INT, cap + Abi.QP_CAP_MAX_SEND_SGE),
                    s.get(JAVA_INT, cap + Abi.QP_CAP_MAX_RECV_SGE),
                    s.get(JAVA_INT, cap + Abi.QP_CAP_MAX_INLINE_DATA));
            return new QueuePair(this, init, qp, caps);
        }
    }

    /**
     * {@code ibv_create_srq}: a shared receive queue of at least {@code maxWr} receives of up to
     * {@code maxSge} entries each; {@code limit} arms the SRQ-limit event (0: none).
     */
    public SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.SRQ_INIT_ATTR_SIZE, 8);
            long at = Abi.SRQ_INIT_ATTR_ATTR;
            s.set(JAVA_INT, at + Abi.SRQ_ATTR_MAX_WR, maxWr);
            s.set(JAVA_INT, at + Abi.SRQ_ATTR_MAX_SGE, maxSge);
            s.set(JAVA_INT, at + Abi.SRQ_ATTR_SRQ_LIMIT, limit);
            MemorySegment srq = CREATE_SRQ.create(ptr, s);
            return new SharedReceiveQueue(
                    this, srq, s.get(JAVA_INT, at + Abi.SRQ_ATTR_MAX_WR), s.get(JAVA_INT, at + Abi.SRQ_ATTR_MAX_SGE));
        } finally {
            release();
        }
    }

    /** {@code ibv_create_ah}: an address handle for UD sends. */
    public AddressHandle createAddressHandle(AddressHandle.Attributes attrs) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.AH_ATTR_SIZE, 8);
            attrs.write(s, 0);
            return new AddressHandle(this, CREATE_AH.create(ptr, s), attrs);
        } finally {
            release();
        }
    }
}
