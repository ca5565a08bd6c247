package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_create_qp_resp} of mrce_abi.h: CREATE_QP response. */
public final class CreateQpRespDescriptor {
    public static final String C_NAME = "mrce_create_qp_resp";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("handle"),
                    Layouts.u32("qp_num"),
                    Layouts.u32("max_send_wr"),
                    Layouts.u32("max_recv_wr"),
                    Layouts.u32("max_send_sge"),
                    Layouts.u32("max_recv_sge"),
                    Layouts.u32("max_inline_data"),
                    Layouts.u32("sq_offset"),
                    Layouts.u32("rq_offset"),
                    Layouts.pad("pad", 4),
                    Layouts.u64("map_size"))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_HANDLE = Layouts.off(LAYOUT, "handle");
    public static final int OFF_QP_NUM = Layouts.off(LAYOUT, "qp_num");
    public static final int OFF_MAX_SEND_WR = Layouts.off(LAYOUT, "max_send_wr");
    public static final int OFF_MAX_RECV_WR = Layouts.off(LAYOUT, "max_recv_wr");
    public static final int OFF_MAX_SEND_SGE = Layouts.off(LAYOUT, "max_send_sge");
    public static final int OFF_MAX_RECV_SGE = Layouts.off(LAYOUT, "max_recv_sge");
    public static final int OFF_MAX_INLINE_DATA = Layouts.off(LAYOUT, "max_inline_data");
    public static final int OFF_SQ_OFFSET = Layouts.off(LAYOUT, "sq_offset");
    public static final int OFF_RQ_OFFSET = Layouts.off(LAYOUT, "rq_offset");
    public static final int OFF_MAP_SIZE = Layouts.off(LAYOUT, "map_size");

    private CreateQpRespDescriptor() {}
}
