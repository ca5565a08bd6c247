package io.metaroce.nic.transport;

/** Daemon-side copy of one send work request, validated once when read from the SQ. */
final class SendWr {
    long wrId;
    int opcode;
    int flags;
    int imm;
    int length;
    final SgeList sges = new SgeList();
    boolean inline;
    /** -1 while fine, else the ibv_wc_status it must complete with. */
    int status;
    /** The error in status actually happened (a latent validation error only counts once reached). */
    boolean failed;
    int packets;
    int packetsAcked;
    int msn;
}
