package io.metaroce.nic.verbs;

import io.metaroce.abi.AbiConstants;

/**
 * Device limits reported in HELLO and enforced by {@link VerbsService} (device-wide counts for
 * QPs, CQs, SRQs, MRs and PDs; per-request sizes for the rest).
 */
public record Limits(
        int maxQp,
        int maxQpWr,
        int maxSge,
        int maxCq,
        int maxCqe,
        int maxMr,
        long maxMrSize,
        int maxPd,
        int maxInline,
        int maxQpRdAtom,
        int maxCompChannel,
        int maxSrq,
        int maxSrqWr,
        int maxSrqSge,
        int maxQpInitRdAtom,
        int atomicCap,
        int maxAh) {

    /** enum ibv_atomic_cap: IBV_ATOMIC_HCA (atomic across the HCA's QPs). */
    public static final int ATOMIC_HCA = 1;

    public static Limits defaults() {
        return new Limits(
                16384,
                4096,
                AbiConstants.MRCE_MAX_SGE,
                1024,
                65536,
                16384,
                1L << 40,
                1024,
                AbiConstants.MRCE_MAX_INLINE,
                16,
                1024,
                1024,
                16384,
                AbiConstants.MRCE_MAX_SGE,
                16,
                ATOMIC_HCA,
                65536);
    }
}
