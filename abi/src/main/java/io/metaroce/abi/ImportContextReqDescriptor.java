package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_import_context_req} of mrce_abi.h: IMPORT_CONTEXT: the context memfd by its number in the caller. */
public final class ImportContextReqDescriptor {
    public static final String C_NAME = "mrce_import_context_req";
    public static final StructLayout LAYOUT =
            MemoryLayout.structLayout(Layouts.u32("fd"), Layouts.pad("pad", 4)).withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_FD = Layouts.off(LAYOUT, "fd");

    private ImportContextReqDescriptor() {}
}
