package io.metaroce.nic.transport;

import io.metaroce.nic.verbs.Mr;

import io.metaroce.nic.abi.AbiConstants;

/** Daemon-side copy of one send work request, validated once when read from the SQ. */
final class SendWr {
    long wrId;
    int opcode;
    int flags;
    int imm;
    int length;
    int numSge;
    final long[] sgeAppAddr = new long[AbiConstants.MRCE_MAX_SGE];
    /** The region each SGE was validated against: a copy checks it is still registered. */
    final Mr[] sgeMr = new Mr[AbiConstants.MRCE_MAX_SGE];
    final int[] sgeLen = new int[AbiConstants.MRCE_MAX_SGE];
    boolean inline;
    /** -1 while fine, else the ibv_wc_status it must complete with. */
    int status;
    /** The error in status actually happened (a latent validation error only counts once reached). */
    boolean failed;
    int packets;
    int packetsAcked;
    int msn;
}
