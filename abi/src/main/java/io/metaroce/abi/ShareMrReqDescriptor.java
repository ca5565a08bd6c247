package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * {@code struct mrce_share_mr_req} of mrce_abi.h: SHARE_MR: the caller's region, the caller's memfd
 * descriptor that backs it and the address of the file's offset 0.
 */
public final class ShareMrReqDescriptor {
    public static final String C_NAME = "mrce_share_mr_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"), Layouts.u32("fd"), Layouts.u64("base"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_FD = Layouts.off(LAYOUT, "fd");
    public static final int OFF_BASE = Layouts.off(LAYOUT, "base");

    private ShareMrReqDescriptor() {}
}
