package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_cm_get_request_req} of mrce_abi.h: CM_GET_REQUEST request. */
public final class CmGetRequestReqDescriptor {
    public static final String C_NAME = "mrce_cm_get_request_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("timeout_ms"), Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_TIMEOUT_MS = Layouts.off(LAYOUT, "timeout_ms");

    private CmGetRequestReqDescriptor() {}
}
