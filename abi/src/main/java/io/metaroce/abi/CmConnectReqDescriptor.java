package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_cm_connect_req} of mrce_abi.h: CM_CONNECT request. */
public final class CmConnectReqDescriptor {
    public static final String C_NAME = "mrce_cm_connect_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("peer_ipv4"),
                    Layouts.u32("service_id"),
                    Layouts.u32("qpn"),
                    Layouts.u32("psn"),
                    Layouts.bytes("gid", 16),
                    Layouts.u32("timeout_ms"),
                    Layouts.u32("private_data_len"),
                    Layouts.bytes("private_data", AbiConstants.MRCE_CM_PRIVATE_DATA_MAX),
                    Layouts.bytes("peer_ipv6", 16))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_PEER_IPV4 = Layouts.off(LAYOUT, "peer_ipv4");
    public static final int OFF_SERVICE_ID = Layouts.off(LAYOUT, "service_id");
    public static final int OFF_QPN = Layouts.off(LAYOUT, "qpn");
    public static final int OFF_PSN = Layouts.off(LAYOUT, "psn");
    public static final int OFF_GID = Layouts.off(LAYOUT, "gid");
    public static final int OFF_TIMEOUT_MS = Layouts.off(LAYOUT, "timeout_ms");
    public static final int OFF_PRIVATE_DATA_LEN = Layouts.off(LAYOUT, "private_data_len");
    public static final int OFF_PRIVATE_DATA = Layouts.off(LAYOUT, "private_data");
    public static final int OFF_PEER_IPV6 = Layouts.off(LAYOUT, "peer_ipv6");

    private CmConnectReqDescriptor() {}
}
