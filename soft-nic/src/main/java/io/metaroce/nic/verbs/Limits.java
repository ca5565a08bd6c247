package io.metaroce.nic.verbs;

import io.metaroce.nic.abi.AbiConstants;

/** Device limits reported in HELLO and enforced by {@link VerbsService}. */
public record Limits(int maxQp, int maxQpWr, int maxSge, int maxCq, int maxCqe, int maxMr,
        long maxMrSize, int maxPd, int maxInline, int maxQpRdAtom, int maxCompChannel) {

    public static Limits defaults() {
        return new Limits(1024, 4096, AbiConstants.MRCE_MAX_SGE, 1024, 65536, 16384, 1L << 40, 1024,
                AbiConstants.MRCE_MAX_INLINE, 16, 1024);
    }
}
