package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_srq_req} of mrce_abi.h: CREATE_SRQ request. */
public final class CreateSrqReqDescriptor {
    public static final String C_NAME = "mrce_create_srq_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("pd"), Layouts.u32("max_wr"), Layouts.u32("max_sge"), Layouts.u32("srq_limit"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_PD = Layouts.off(LAYOUT, "pd");
    public static final int OFF_MAX_WR = Layouts.off(LAYOUT, "max_wr");
    public static final int OFF_MAX_SGE = Layouts.off(LAYOUT, "max_sge");
    public static final int OFF_SRQ_LIMIT = Layouts.off(LAYOUT, "srq_limit");

    private CreateSrqReqDescriptor() {}
}
