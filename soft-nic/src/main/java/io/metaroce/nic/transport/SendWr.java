package io.metaroce.nic.transport;

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
}
