package io.metaroce.nic.transport;

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
}
