package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_cq_req} of mrce_abi.h: CREATE_CQ request. */
public final class CreateCqReqDescriptor {
    public static final String C_NAME = "mrce_create_cq_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("cqe"), Layouts.u32("channel"), Layouts.u32("comp_vector"), Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_CQE = Layouts.off(LAYOUT, "cqe");
    public static final int OFF_CHANNEL = Layouts.off(LAYOUT, "channel");
    public static final int OFF_COMP_VECTOR = Layouts.off(LAYOUT, "comp_vector");

    private CreateCqReqDescriptor() {}
}
