package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_cq_resp} of mrce_abi.h: CREATE_CQ response. */
public final class CreateCqRespDescriptor {
    public static final String C_NAME = "mrce_create_cq_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"), Layouts.u32("cqe"), Layouts.u64("map_size"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_CQE = Layouts.off(LAYOUT, "cqe");
    public static final int OFF_MAP_SIZE = Layouts.off(LAYOUT, "map_size");

    private CreateCqRespDescriptor() {}
}
