package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_modify_srq_req} of mrce_abi.h: MODIFY_SRQ request. */
public final class ModifySrqReqDescriptor {
    public static final String C_NAME = "mrce_modify_srq_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"), Layouts.u32("attr_mask"), Layouts.u32("max_wr"), Layouts.u32("srq_limit"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_ATTR_MASK = Layouts.off(LAYOUT, "attr_mask");
    public static final int OFF_MAX_WR = Layouts.off(LAYOUT, "max_wr");
    public static final int OFF_SRQ_LIMIT = Layouts.off(LAYOUT, "srq_limit");

    private ModifySrqReqDescriptor() {}
}
