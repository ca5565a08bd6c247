package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_rereg_mr_req} of mrce_abi.h: REREG_MR request (the response is a reg_mr_resp). */
public final class ReregMrReqDescriptor {
    public static final String C_NAME = "mrce_rereg_mr_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"),
                    Layouts.u32("flags"),
                    Layouts.u32("pd"),
                    Layouts.u32("access"),
                    Layouts.u64("addr"),
                    Layouts.u64("length"),
                    Layouts.u64("iova"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_FLAGS = Layouts.off(LAYOUT, "flags");
    public static final int OFF_PD = Layouts.off(LAYOUT, "pd");
    public static final int OFF_ACCESS = Layouts.off(LAYOUT, "access");
    public static final int OFF_ADDR = Layouts.off(LAYOUT, "addr");
    public static final int OFF_LENGTH = Layouts.off(LAYOUT, "length");
    public static final int OFF_IOVA = Layouts.off(LAYOUT, "iova");

    private ReregMrReqDescriptor() {}
}
