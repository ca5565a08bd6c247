package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_import_mr_resp} of mrce_abi.h: IMPORT_MR: what ibv_import_mr fills in. */
public final class ImportMrRespDescriptor {
    public static final String C_NAME = "mrce_import_mr_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"),
                    Layouts.u32("lkey"),
                    Layouts.u32("rkey"),
                    Layouts.u32("access"),
                    Layouts.u64("addr"),
                    Layouts.u64("length"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_LKEY = Layouts.off(LAYOUT, "lkey");
    public static final int OFF_RKEY = Layouts.off(LAYOUT, "rkey");
    public static final int OFF_ACCESS = Layouts.off(LAYOUT, "access");
    public static final int OFF_ADDR = Layouts.off(LAYOUT, "addr");
    public static final int OFF_LENGTH = Layouts.off(LAYOUT, "length");

    private ImportMrRespDescriptor() {}
}
