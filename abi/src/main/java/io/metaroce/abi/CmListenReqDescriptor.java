package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_cm_listen_req} of mrce_abi.h: CM_LISTEN, CM_UNLISTEN and CM_BIND request. */
public final class CmListenReqDescriptor {
    public static final String C_NAME = "mrce_cm_listen_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("service_id"), Layouts.u32("backlog"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_SERVICE_ID = Layouts.off(LAYOUT, "service_id");
    public static final int OFF_BACKLOG = Layouts.off(LAYOUT, "backlog");

    private CmListenReqDescriptor() {}
}
