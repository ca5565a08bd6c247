package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_import_mr_req} of mrce_abi.h: IMPORT_MR: the MR and the caller's PD it is on. */
public final class ImportMrReqDescriptor {
    public static final String C_NAME = "mrce_import_mr_req";
    public static final StructLayout LAYOUT =
            MemoryLayout.structLayout(Layouts.u32("pd"), Layouts.u32("handle")).withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_PD = Layouts.off(LAYOUT, "pd");
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");

    private ImportMrReqDescriptor() {}
}
