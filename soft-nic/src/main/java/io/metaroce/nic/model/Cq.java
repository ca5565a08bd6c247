package io.metaroce.nic.model;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.CqeFlyweight;
import io.metaroce.nic.abi.RingFlyweight;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * A completion queue: a CQ ring the engine produces into. Only the engine thread calls
 * {@link #hasSpace} and {@link #post}; {@code qpUsers} is guarded by the session's lock.
 */
public final class Cq {
    public final int handle;
    public final MemorySegment mapping;
    public final RingFlyweight ring = new RingFlyweight();
    public final CompChannel channel;
    private final CqeFlyweight cqe = new CqeFlyweight();
    private int producer;
    public int qpUsers;
    public long notifications;
    /**
     * Entries promised to completions not written yet (UD receives whose payload is being
     * copied): {@link #hasSpace} leaves them free, so nothing else takes them meanwhile.
     */
    public int reserved;

    private final int slots;

    public Cq(int handle, MemorySegment mapping, int slotCount, CompChannel channel) {
        this.handle = handle;
        this.slots = slotCount;
        this.mapping = mapping;
        this.channel = channel;
        ring.init(mapping, AbiConstants.MRCE_RING_KIND_CQ, AbiConstants.MRCE_CQE_SIZE, slotCount);
        this.producer = 0;
    }

    /** Entries the CQ was created with (what the owner's quota was charged). */
    public int slots() {
        return slots;
    }

    public boolean hasSpace() {
        return free() > 0;
    }

    /** Entries neither holding an unpolled CQE nor {@link #reserved}. */
    public int free() {
        return ring.slotCount() - (producer - ring.consumerAcquire()) - reserved;
    }

    /**
     * Writes one CQE and publishes it, then fires the arm if this completion matches it
     * (MRCE_CQ_ARM_NEXT: any; MRCE_CQ_ARM_SOLICITED: solicited or error). Check {@link #hasSpace}
     * first.
     */
    public void post(
            long wrId,
            int status,
            int opcode,
            int byteLen,
            int immData,
            int qpNum,
            int srcQp,
            int wcFlags,
            boolean solicited) {
        cqe.wrap(ring.segment(), ring.slotOffset(producer))
                .set(wrId, status, opcode, byteLen, immData, qpNum, srcQp, wcFlags);
        producer++;
        ring.producerRelease(producer);
        // Pairs with the provider's fence between writing arm and re-polling the CQ.
        VarHandle.fullFence();
        int arm = ring.armVolatile();
        if (arm == AbiConstants.MRCE_CQ_ARM_NEXT
                || (arm == AbiConstants.MRCE_CQ_ARM_SOLICITED && (solicited || status != 0))) {
            if (ring.exchangeArm(0) != 0) {
                if (channel != null) {
                    ring.notifySeq(channel.nextSeq());
                }
                ring.incrementNotifyCount();
                notifications++;
                if (channel != null) {
                    channel.signal();
                }
            }
        }
    }
}
