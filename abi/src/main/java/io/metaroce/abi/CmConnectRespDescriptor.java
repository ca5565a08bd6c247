package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_cm_connect_resp} of mrce_abi.h: CM_CONNECT response. */
public final class CmConnectRespDescriptor {
    public static final String C_NAME = "mrce_cm_connect_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("result"),
                    Layouts.pad("pad", 4),
                    Layouts.u32("qpn"),
                    Layouts.u32("psn"),
                    Layouts.bytes("gid", 16),
                    Layouts.pad("pad2", 4),
                    Layouts.u32("private_data_len"),
                    Layouts.bytes("private_data", AbiConstants.MRCE_CM_PRIVATE_DATA_MAX))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_RESULT = Layouts.off(LAYOUT, "result");
    public static final int OFF_QPN = Layouts.off(LAYOUT, "qpn");
    public static final int OFF_PSN = Layouts.off(LAYOUT, "psn");
    public static final int OFF_GID = Layouts.off(LAYOUT, "gid");
    public static final int OFF_PRIVATE_DATA_LEN = Layouts.off(LAYOUT, "private_data_len");
    public static final int OFF_PRIVATE_DATA = Layouts.off(LAYOUT, "private_data");

    private CmConnectRespDescriptor() {}
}
