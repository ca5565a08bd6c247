package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.model.MrTable;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Daemon-side copy of one send work request, validated once when read from the SQ. */
final class SendWr {
    static final int KIND_SEND = 0;
    static final int KIND_WRITE = 1;
    static final int KIND_READ = 2;
    static final int KIND_ATOMIC = 3;

    long wrId;
    int opcode;
    /** One of the KIND_ constants (how it is cut into packets and completed). */
    int kind;

    int flags;
    int imm;
    int length;
    final SgeList sges = new SgeList();
    boolean inline;
    /** WRITE, READ, atomics: the target. */
    int rkey;

    long remoteAddr;
    /** Atomics: compare (CS) or add (FA), and swap (CS). */
    long compareAdd;

    long swap;
    /** READ: bytes per response packet (the requester's payload per packet). */
    int unit;
    /** -1 while fine, else the ibv_wc_status it must complete with. */
    int status;
    /** The error in status actually happened (a latent validation error only counts once reached). */
    boolean failed;

    int packets;
    int packetsAcked;
    /** READ and atomics: requests whose responses all landed. */
    int responsesDone;

    int msn;

    boolean expectsResponse() {
        return kind == KIND_READ || kind == KIND_ATOMIC;
    }

    /** Every request packet acknowledged and, for READ and atomics, every response landed. */
    boolean done() {
        return packetsAcked >= packets && (!expectsResponse() || responsesDone >= packets);
    }

    /**
     * Copies and validates the WQE at {@code slot} of {@code ring} (wrapped by {@code wqe}); the app
     * may rewrite the slot afterwards, we never look again. Inline data goes to {@code inlineBuf} at
     * {@code inlineOffset}; a validation error is kept in {@link #status}.
     */
    void read(
            WqeFlyweight wqe,
            MemorySegment ring,
            long slot,
            Qp qp,
            MrTable mrs,
            MemorySegment inlineBuf,
            long inlineOffset) {
        wrId = wqe.wrId();
        opcode = wqe.opcode();
        flags = wqe.sendFlags();
        imm = wqe.immData();
        status = -1;
        failed = false;
        packets = 0;
        packetsAcked = 0;
        responsesDone = 0;
        length = 0;
        sges.count = 0;
        inline = false;
        kind = KIND_SEND;
        if (qp.state == Ibv.QPS_ERR) {
            status = Ibv.WC_WR_FLUSH_ERR;
            return;
        }
        int localAccess = 0;
        switch (opcode) {
            case Ibv.WR_SEND, Ibv.WR_SEND_WITH_IMM -> kind = KIND_SEND;
            case Ibv.WR_RDMA_WRITE, Ibv.WR_RDMA_WRITE_WITH_IMM -> kind = KIND_WRITE;
            case Ibv.WR_RDMA_READ -> {
                kind = KIND_READ;
                localAccess = Ibv.ACCESS_LOCAL_WRITE;
            }
            case Ibv.WR_ATOMIC_CMP_AND_SWP, Ibv.WR_ATOMIC_FETCH_AND_ADD -> {
                kind = KIND_ATOMIC;
                localAccess = Ibv.ACCESS_LOCAL_WRITE;
            }
            default -> {
                status = Ibv.WC_LOC_QP_OP_ERR;
                return;
            }
        }
        if (kind != KIND_SEND) {
            // fields the WqeFlyweight does not expose (struct mrce_wqe, native order)
            rkey = ring.get(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY);
            remoteAddr = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR);
            compareAdd = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_COMPARE_ADD);
            swap = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_SWAP);
        }
        // IBV_SEND_INLINE applies to SEND and RDMA WRITE only; READ and atomics always use SGEs.
        if ((flags & Ibv.SEND_INLINE) != 0 && (kind == KIND_SEND || kind == KIND_WRITE)) {
            int len = wqe.length();
            if (len < 0 || len > qp.maxInlineData || len > AbiConstants.MRCE_MAX_INLINE) {
                status = Ibv.WC_LOC_LEN_ERR;
                return;
            }
            MemorySegment.copy(wqe.segment(), wqe.inlineDataOffset(), inlineBuf, inlineOffset, len);
            inline = true;
            length = len;
            return;
        }
        int numSge = wqe.numSge();
        if (numSge > qp.maxSendSge) {
            status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        long total = sges.load(mrs, qp, wqe, numSge, localAccess);
        if (total < 0) {
            status = Ibv.WC_LOC_PROT_ERR;
            return;
        }
        if (total > Integer.MAX_VALUE || (kind == KIND_ATOMIC && total != 8)) {
            status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        length = (int) total;
    }
}
