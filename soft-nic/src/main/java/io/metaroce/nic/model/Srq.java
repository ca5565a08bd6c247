package io.metaroce.nic.model;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import java.lang.foreign.MemorySegment;

/**
 * A shared receive queue: a ring of receive WQEs (RQ layout) that the provider produces into and
 * the engine consumes from for every QP attached to it. The engine thread calls {@link #peek} and
 * {@link #consume}; the control thread arms the limit with {@link #arm}.
 */
public final class Srq {
    public final int handle;
    /** The owner's address space: a {@link io.metaroce.nic.dma.ProcessMemory} id, not the OS PID. */
    public final int pid;

    public final Pd pd;
    public final MemorySegment mapping;
    public final RingFlyweight ring = new RingFlyweight();
    public final int maxSge;
    /** Where SRQ_LIMIT_REACHED goes (the owning connection's queue). */
    public volatile AsyncEventSink asyncEvents = AsyncEventSink.NONE;
    /** Engine thread: the next slot to consume. */
    private int consumer;
    /** Armed limit; 0 = not armed. Written by the control thread, read and cleared by the engine. */
    private volatile int limit;
    /** QPs attached; guarded by the session's lock. */
    public int qpUsers;

    public Srq(int handle, int pid, Pd pd, MemorySegment mapping, int slotCount, int maxSge) {
        this.handle = handle;
        this.pid = pid;
        this.pd = pd;
        this.mapping = mapping;
        this.maxSge = maxSge;
        ring.init(mapping, AbiConstants.MRCE_RING_KIND_SRQ, (int) WqeDescriptor.SIZE, slotCount);
    }

    /** Bytes the ring of an SRQ with {@code slotCount} slots needs (page-rounded). */
    public static long mapSize(int slotCount) {
        return (RingFlyweight.byteSize((int) WqeDescriptor.SIZE, slotCount) + 4095) & ~4095L;
    }

    /** Receive WQEs posted and not consumed yet. */
    public int posted() {
        return ring.producerAcquire() - consumer;
    }

    /**
     * Wraps {@code wqe} around the oldest posted WQE without consuming it; false when none is
     * posted. Copy what you need, then call {@link #consume}.
     */
    public boolean peek(WqeFlyweight wqe) {
        if (ring.producerAcquire() == consumer) {
            return false;
        }
        wqe.wrap(ring.segment(), ring.slotOffset(consumer));
        return true;
    }

    /**
     * Consumes the WQE {@link #peek} showed, and fires IBV_EVENT_SRQ_LIMIT_REACHED (disarming the
     * limit) when fewer than the armed limit remain posted.
     */
    public void consume() {
        consumer++;
        ring.consumerRelease(consumer);
        int l = limit;
        if (l != 0 && ring.producerAcquire() - consumer < l) {
            limit = 0;
            asyncEvents.post(Ibv.EVENT_SRQ_LIMIT_REACHED, handle);
        }
    }

    /** Arms (limit > 0) or disarms (0) the limit event. */
    public void arm(int newLimit) {
        limit = newLimit;
    }

    /** The armed limit, 0 once the event fired. */
    public int limit() {
        return limit;
    }
}
