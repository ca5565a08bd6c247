package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A shared receive queue ({@code struct ibv_srq}), from
 * {@link ProtectionDomain#createSharedReceiveQueue}: queue pairs created with
 * {@link QueuePair.InitAttributes#srq} take their receives from it. {@link #postRecv} is the
 * provider's {@code post_srq_recv} through {@code context->ops}, allocation-free.
 *
 * <p><b>Thread safety:</b> as {@link QueuePair}: posts hold the SRQ and their regions open; a
 * concurrent close waits for them or makes them throw.
 */
public final class SharedReceiveQueue extends VerbsObject {

    static final Native.Verb DESTROY_SRQ = Native.verb("ibv_destroy_srq", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb MODIFY_SRQ =
            Native.verb("ibv_modify_srq", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final Native.Verb QUERY_SRQ =
            Native.verb("ibv_query_srq", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

    /** {@code struct ibv_srq_attr}. */
    public record Attributes(int maxWr, int maxSge, int limit) {}

    private final ProtectionDomain pd;
    final MemorySegment ptr;
    private final MemorySegment postFn;
    private final int maxWr;
    private final int maxSge;

    SharedReceiveQueue(ProtectionDomain pd, MemorySegment ptr, int maxWr, int maxSge) {
        super(pd);
        this.pd = pd;
        this.ptr = ptr.reinterpret(Abi.SRQ_HANDLE + 4);
        this.postFn = pd.context.opPostSrqRecv;
        this.maxWr = maxWr;
        this.maxSge = maxSge;
        attach();
        pd.context.srqs.put(this.ptr.address(), this);
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The native {@code struct ibv_srq *}. */
    public MemorySegment address() {
        return ptr;
    }

    /**
     * Posts a receive request (or chain) to the SRQ. Allocation-free.
     *
     * @throws VerbsException naming ibv_post_srq_recv when the provider refuses it
     */
    public void postRecv(RecvWorkRequest wr) {
        int rc;
        acquire();
        try {
            wr.acquireChain();
            try {
                rc = (int) Native.OP_POST.invokeExact(postFn, ptr, wr.wr, wr.badWr);
            } catch (Throwable t) {
                throw CompletionQueue.rethrow(t);
            } finally {
                wr.releaseChain();
            }
        } finally {
            release();
        }
        if (rc != 0) {
            String bad = wr.describeBad();
            throw new VerbsException("ibv_post_srq_recv", rc, describe() + (bad == null ? "" : ": " + bad));
        }
    }

    /** {@code ibv_modify_srq} of the limit ({@code IBV_SRQ_LIMIT}): arms the SRQ-limit event. */
    public void setLimit(int limit) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.SRQ_ATTR_SIZE, 4);
            s.set(JAVA_INT, Abi.SRQ_ATTR_SRQ_LIMIT, limit);
            MODIFY_SRQ.check(ptr, s, Abi.IBV_SRQ_LIMIT);
        } finally {
            release();
        }
    }

    /** {@code ibv_query_srq}. */
    public Attributes query() {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.SRQ_ATTR_SIZE, 4);
            QUERY_SRQ.check(ptr, s);
            return new Attributes(
                    s.get(JAVA_INT, Abi.SRQ_ATTR_MAX_WR),
                    s.get(JAVA_INT, Abi.SRQ_ATTR_MAX_SGE),
                    s.get(JAVA_INT, Abi.SRQ_ATTR_SRQ_LIMIT));
        } finally {
            release();
        }
    }

    @Override
    public String describe() {
        return "SharedReceiveQueue (" + maxWr + " WRs, " + maxSge + " SGEs)";
    }

    @Override
    void destroy() {
        DESTROY_SRQ.check(ptr);
        pd.context.srqs.remove(ptr.address());
    }
}
