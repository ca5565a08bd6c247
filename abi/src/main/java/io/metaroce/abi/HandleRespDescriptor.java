package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_handle_resp} of mrce_abi.h: Response that returns one new object handle. */
public final class HandleRespDescriptor {
    public static final String C_NAME = "mrce_handle_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(Layouts.u32("handle"), Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");

    private HandleRespDescriptor() {}
}
