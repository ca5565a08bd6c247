package io.metaroce.abi;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/** {@code struct mrce_qp_attr} of mrce_abi.h: struct ibv_qp_attr, the fields that matter to RC/UD. */
public final class QpAttrDescriptor {
    public static final String C_NAME = "mrce_qp_attr";
    public static final StructLayout LAYOUT = MemoryLayout.structLayout(
                    Layouts.u32("qp_state"),
                    Layouts.u32("cur_qp_state"),
                    Layouts.u32("path_mtu"),
                    Layouts.u32("qkey"),
                    Layouts.u32("rq_psn"),
                    Layouts.u32("sq_psn"),
                    Layouts.u32("dest_qp_num"),
                    Layouts.u32("qp_access_flags"),
                    Layouts.u32("max_send_wr"),
                    Layouts.u32("max_recv_wr"),
                    Layouts.u32("max_send_sge"),
                    Layouts.u32("max_recv_sge"),
                    Layouts.u32("max_inline_data"),
                    Layouts.u32("flow_label"),
                    Layouts.bytes("dgid", 16),
                    Layouts.u8("sgid_index"),
                    Layouts.u8("hop_limit"),
                    Layouts.u8("traffic_class"),
                    Layouts.u8("is_global"),
                    Layouts.u16("dlid"),
                    Layouts.u8("sl"),
                    Layouts.u8("src_path_bits"),
                    Layouts.u8("static_rate"),
                    Layouts.u8("ah_port_num"),
                    Layouts.u16("pkey_index"),
                    Layouts.u8("en_sqd_async_notify"),
                    Layouts.u8("sq_draining"),
                    Layouts.u8("max_rd_atomic"),
                    Layouts.u8("max_dest_rd_atomic"),
                    Layouts.u8("min_rnr_timer"),
                    Layouts.u8("port_num"),
                    Layouts.u8("timeout"),
                    Layouts.u8("retry_cnt"),
                    Layouts.u8("rnr_retry"),
                    Layouts.pad("pad", 3))
            .withName(C_NAME);
    public static final int SIZE = Math.toIntExact(LAYOUT.byteSize());
    public static final int OFF_QP_STATE = Layouts.off(LAYOUT, "qp_state");
    public static final int OFF_CUR_QP_STATE = Layouts.off(LAYOUT, "cur_qp_state");
    public static final int OFF_PATH_MTU = Layouts.off(LAYOUT, "path_mtu");
    public static final int OFF_QKEY = Layouts.off(LAYOUT, "qkey");
    public static final int OFF_RQ_PSN = Layouts.off(LAYOUT, "rq_psn");
    public static final int OFF_SQ_PSN = Layouts.off(LAYOUT, "sq_psn");
    public static final int OFF_DEST_QP_NUM = Layouts.off(LAYOUT, "dest_qp_num");
    public static final int OFF_QP_ACCESS_FLAGS = Layouts.off(LAYOUT, "qp_access_flags");
    public static final int OFF_MAX_SEND_WR = Layouts.off(LAYOUT, "max_send_wr");
    public static final int OFF_MAX_RECV_WR = Layouts.off(LAYOUT, "max_recv_wr");
    public static final int OFF_MAX_SEND_SGE = Layouts.off(LAYOUT, "max_send_sge");
    public static final int OFF_MAX_RECV_SGE = Layouts.off(LAYOUT, "max_recv_sge");
    public static final int OFF_MAX_INLINE_DATA = Layouts.off(LAYOUT, "max_inline_data");
    public static final int OFF_FLOW_LABEL = Layouts.off(LAYOUT, "flow_label");
    public static final int OFF_DGID = Layouts.off(LAYOUT, "dgid");
    public static final int OFF_SGID_INDEX = Layouts.off(LAYOUT, "sgid_index");
    public static final int OFF_HOP_LIMIT = Layouts.off(LAYOUT, "hop_limit");
    public static final int OFF_TRAFFIC_CLASS = Layouts.off(LAYOUT, "traffic_class");
    public static final int OFF_IS_GLOBAL = Layouts.off(LAYOUT, "is_global");
    public static final int OFF_DLID = Layouts.off(LAYOUT, "dlid");
    public static final int OFF_SL = Layouts.off(LAYOUT, "sl");
    public static final int OFF_SRC_PATH_BITS = Layouts.off(LAYOUT, "src_path_bits");
    public static final int OFF_STATIC_RATE = Layouts.off(LAYOUT, "static_rate");
    public static final int OFF_AH_PORT_NUM = Layouts.off(LAYOUT, "ah_port_num");
    public static final int OFF_PKEY_INDEX = Layouts.off(LAYOUT, "pkey_index");
    public static final int OFF_EN_SQD_ASYNC_NOTIFY = Layouts.off(LAYOUT, "en_sqd_async_notify");
    public static final int OFF_SQ_DRAINING = Layouts.off(LAYOUT, "sq_draining");
    public static final int OFF_MAX_RD_ATOMIC = Layouts.off(LAYOUT, "max_rd_atomic");
    public static final int OFF_MAX_DEST_RD_ATOMIC = Layouts.off(LAYOUT, "max_dest_rd_atomic");
    public static final int OFF_MIN_RNR_TIMER = Layouts.off(LAYOUT, "min_rnr_timer");
    public static final int OFF_PORT_NUM = Layouts.off(LAYOUT, "port_num");
    public static final int OFF_TIMEOUT = Layouts.off(LAYOUT, "timeout");
    public static final int OFF_RETRY_CNT = Layouts.off(LAYOUT, "retry_cnt");
    public static final int OFF_RNR_RETRY = Layouts.off(LAYOUT, "rnr_retry");

    private QpAttrDescriptor() {}
}
