package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_qp_req} of mrce_abi.h: CREATE_QP request. */
public final class CreateQpReqDescriptor {
    public static final String C_NAME = "mrce_create_qp_req";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("pd"),
                    Layouts.u32("send_cq"),
                    Layouts.u32("recv_cq"),
                    Layouts.u32("srq"),
                    Layouts.u32("qp_type"),
                    Layouts.u32("sq_sig_all"),
                    Layouts.u32("max_send_wr"),
                    Layouts.u32("max_recv_wr"),
                    Layouts.u32("max_send_sge"),
                    Layouts.u32("max_recv_sge"),
                    Layouts.u32("max_inline_data"),
                    Layouts.pad("pad", 4))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_PD = Layouts.off(LAYOUT, "pd");
    public static final int OFF_SEND_CQ = Layouts.off(LAYOUT, "send_cq");
    public static final int OFF_RECV_CQ = Layouts.off(LAYOUT, "recv_cq");
    public static final int OFF_SRQ = Layouts.off(LAYOUT, "srq");
    public static final int OFF_QP_TYPE = Layouts.off(LAYOUT, "qp_type");
    public static final int OFF_SQ_SIG_ALL = Layouts.off(LAYOUT, "sq_sig_all");
    public static final int OFF_MAX_SEND_WR = Layouts.off(LAYOUT, "max_send_wr");
    public static final int OFF_MAX_RECV_WR = Layouts.off(LAYOUT, "max_recv_wr");
    public static final int OFF_MAX_SEND_SGE = Layouts.off(LAYOUT, "max_send_sge");
    public static final int OFF_MAX_RECV_SGE = Layouts.off(LAYOUT, "max_recv_sge");
    public static final int OFF_MAX_INLINE_DATA = Layouts.off(LAYOUT, "max_inline_data");

    private CreateQpReqDescriptor() {}
}
