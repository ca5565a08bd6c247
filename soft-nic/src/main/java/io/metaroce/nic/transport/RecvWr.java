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
    int imm;
    boolean solicited;
    int srcQp;

    void reset() {
        status = -1;
        failed = false;
        msgLen = -1;
        placed = 0;
        withImm = false;
        imm = 0;
        solicited = false;
    }
}
