package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_reg_mr_resp} of mrce_abi.h: REG_MR response. */
public final class RegMrRespDescriptor {
    public static final String C_NAME = "mrce_reg_mr_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"), Layouts.u32("lkey"), Layouts.u32("rkey"), Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_LKEY = Layouts.off(LAYOUT, "lkey");
    public static final int OFF_RKEY = Layouts.off(LAYOUT, "rkey");

    private RegMrRespDescriptor() {}
}
