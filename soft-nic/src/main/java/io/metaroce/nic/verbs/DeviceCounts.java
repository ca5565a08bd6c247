package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;

/**
 * Device-wide counts of PDs, MRs, CQs and SRQs, checked against the {@link Limits} by the op
 * handlers (QPs are counted by {@link QpnAllocator}). Guarded by this object's monitor.
 */
final class DeviceCounts {
    int mrCount;
    int pdCount;
    int cqCount;
    int srqCount;

    /** Gives back the device-wide count an object created by {@code createOp} held. */
    synchronized void uncount(int createOp) {
        switch (createOp) {
            case MRCE_OP_CREATE_CQ -> cqCount--;
            case MRCE_OP_CREATE_SRQ -> srqCount--;
            case MRCE_OP_ALLOC_PD -> pdCount--;
            default -> throw new IllegalArgumentException("op " + createOp);
        }
    }
}
