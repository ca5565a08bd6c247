package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_srq_resp} of mrce_abi.h: CREATE_SRQ response (the ring memfd follows). */
public final class CreateSrqRespDescriptor {
    public static final String C_NAME = "mrce_create_srq_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"),
                    Layouts.u32("max_wr"),
                    Layouts.u32("max_sge"),
                    Layouts.pad("pad", 4),
                    Layouts.u64("map_size"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_MAX_WR = Layouts.off(LAYOUT, "max_wr");
    public static final int OFF_MAX_SGE = Layouts.off(LAYOUT, "max_sge");
    public static final int OFF_MAP_SIZE = Layouts.off(LAYOUT, "map_size");

    private CreateSrqRespDescriptor() {}
}
