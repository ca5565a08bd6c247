package io.metaroce.nic.transport;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;

/** Daemon-side copy of one receive work request and the message landing in it. */
final class RecvWr {
    long wrId;
    final SgeList sges = new SgeList();
    long capacity;
    /** -1 while fine, else the ibv_wc_status it must complete with. */
    int status;
    /** The error in status actually happened (a message reached this bad receive). */
    boolean failed;
    /** Length of the message landing here, -1 until its first packet. */
    long msgLen;

    long placed;
    boolean withImm;
    /** The message is an RDMA WRITE with immediate (its data went to the rkey, not here). */
    boolean writeImm;

    int imm;
    boolean solicited;
    int srcQp;
    /** One past the highest RSN of the message seen so far (valid once msgLen >= 0). */
    int endRsn;

    void reset() {
        status = -1;
        failed = false;
        msgLen = -1;
        placed = 0;
        withImm = false;
        writeImm = false;
        imm = 0;
        solicited = false;
    }

    /**
     * Copies and validates the receive WQE {@code wqe} wraps (of a QP's RQ or an SRQ of
     * {@code pd}, {@code pid}, at most {@code maxSge} entries); a QP in ERR flushes it. A
     * validation error is kept in {@link #status}.
     */
    void read(WqeFlyweight wqe, boolean qpInError, MrTable mrs, Pd pd, int pid, int maxSge) {
        reset();
        wrId = wqe.wrId();
        sges.count = 0;
        capacity = 0;
        if (qpInError) {
            status = Ibv.WC_WR_FLUSH_ERR;
            return;
        }
        int numSge = wqe.numSge();
        if (numSge > maxSge) {
            status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        long total = sges.load(mrs, pd, pid, wqe, numSge, Ibv.ACCESS_LOCAL_WRITE);
        if (total < 0) {
            status = Ibv.WC_LOC_PROT_ERR;
            return;
        }
        capacity = total;
    }
}
