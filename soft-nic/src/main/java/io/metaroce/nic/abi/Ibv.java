package io.metaroce.nic.abi;

/**
 * The values of libibverbs enums that cross the ABI (verbs.h, rdma-core 44), named without their
 * {@code IBV_} prefix: the daemon's one copy of them.
 */
public final class Ibv {
    // enum ibv_qp_state
    public static final int QPS_RESET = 0;
    public static final int QPS_INIT = 1;
    public static final int QPS_RTR = 2;
    public static final int QPS_RTS = 3;
    public static final int QPS_SQD = 4;
    public static final int QPS_SQE = 5;
    public static final int QPS_ERR = 6;
    public static final int QPS_UNKNOWN = 7;
    // enum ibv_qp_type
    public static final int QPT_RC = 2;
    public static final int QPT_UC = 3;
    public static final int QPT_UD = 4;
    public static final int QPT_RAW_PACKET = 8;
    public static final int QPT_XRC_SEND = 9;
    public static final int QPT_XRC_RECV = 10;
    public static final int QPT_DRIVER = 0xff;
    // enum ibv_qp_attr_mask
    public static final int QP_STATE = 1;
    public static final int QP_CUR_STATE = 1 << 1;
    public static final int QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    public static final int QP_ACCESS_FLAGS = 1 << 3;
    public static final int QP_PKEY_INDEX = 1 << 4;
    public static final int QP_PORT = 1 << 5;
    public static final int QP_QKEY = 1 << 6;
    public static final int QP_AV = 1 << 7;
    public static final int QP_PATH_MTU = 1 << 8;
    public static final int QP_TIMEOUT = 1 << 9;
    public static final int QP_RETRY_CNT = 1 << 10;
    public static final int QP_RNR_RETRY = 1 << 11;
    public static final int QP_RQ_PSN = 1 << 12;
    public static final int QP_MAX_QP_RD_ATOMIC = 1 << 13;
    public static final int QP_ALT_PATH = 1 << 14;
    public static final int QP_MIN_RNR_TIMER = 1 << 15;
    public static final int QP_SQ_PSN = 1 << 16;
    public static final int QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    public static final int QP_PATH_MIG_STATE = 1 << 18;
    public static final int QP_CAP = 1 << 19;
    public static final int QP_DEST_QPN = 1 << 20;
    public static final int QP_RATE_LIMIT = 1 << 25;
    // enum ibv_access_flags
    public static final int ACCESS_LOCAL_WRITE = 1;
    public static final int ACCESS_REMOTE_WRITE = 1 << 1;
    public static final int ACCESS_REMOTE_READ = 1 << 2;
    public static final int ACCESS_REMOTE_ATOMIC = 1 << 3;
    public static final int ACCESS_MW_BIND = 1 << 4;
    public static final int ACCESS_ZERO_BASED = 1 << 5;
    public static final int ACCESS_ON_DEMAND = 1 << 6;
    public static final int ACCESS_HUGETLB = 1 << 7;
    public static final int ACCESS_RELAXED_ORDERING = 1 << 20;
    // enum ibv_mtu
    public static final int MTU_256 = 1;
    public static final int MTU_512 = 2;
    public static final int MTU_1024 = 3;
    public static final int MTU_2048 = 4;
    public static final int MTU_4096 = 5;
    // enum ibv_wr_opcode
    public static final int WR_RDMA_WRITE = 0;
    public static final int WR_RDMA_WRITE_WITH_IMM = 1;
    public static final int WR_SEND = 2;
    public static final int WR_SEND_WITH_IMM = 3;
    public static final int WR_RDMA_READ = 4;
    public static final int WR_ATOMIC_CMP_AND_SWP = 5;
    public static final int WR_ATOMIC_FETCH_AND_ADD = 6;
    // enum ibv_send_flags
    public static final int SEND_FENCE = 1;
    public static final int SEND_SIGNALED = 1 << 1;
    public static final int SEND_SOLICITED = 1 << 2;
    public static final int SEND_INLINE = 1 << 3;
    // enum ibv_wc_status
    public static final int WC_SUCCESS = 0;
    public static final int WC_LOC_LEN_ERR = 1;
    public static final int WC_LOC_QP_OP_ERR = 2;
    public static final int WC_LOC_PROT_ERR = 4;
    public static final int WC_WR_FLUSH_ERR = 5;
    public static final int WC_REM_INV_REQ_ERR = 9;
    public static final int WC_REM_ACCESS_ERR = 10;
    public static final int WC_REM_OP_ERR = 11;
    public static final int WC_RETRY_EXC_ERR = 12;
    public static final int WC_RNR_RETRY_EXC_ERR = 13;
    public static final int WC_GENERAL_ERR = 21;
    // enum ibv_wc_opcode
    public static final int WC_SEND = 0;
    public static final int WC_RDMA_WRITE = 1;
    public static final int WC_RDMA_READ = 2;
    public static final int WC_COMP_SWAP = 3;
    public static final int WC_FETCH_ADD = 4;
    public static final int WC_RECV = 128;
    public static final int WC_RECV_RDMA_WITH_IMM = 129;
    // enum ibv_wc_flags
    public static final int WC_GRH = 1;
    public static final int WC_WITH_IMM = 1 << 1;

    private Ibv() {}

    /** Bytes of an enum ibv_mtu value, or 0 when it is not a valid value. */
    public static int mtuBytes(int mtu) {
        return mtu >= MTU_256 && mtu <= MTU_4096 ? 128 << mtu : 0;
    }

    // enum ibv_event_type
    public static final int EVENT_CQ_ERR = 0;
    public static final int EVENT_QP_FATAL = 1;
    public static final int EVENT_QP_REQ_ERR = 2;
    public static final int EVENT_QP_ACCESS_ERR = 3;
    public static final int EVENT_COMM_EST = 4;
    public static final int EVENT_PORT_ACTIVE = 9;
    public static final int EVENT_PORT_ERR = 10;
    public static final int EVENT_SRQ_ERR = 14;
    public static final int EVENT_SRQ_LIMIT_REACHED = 15;
    public static final int EVENT_QP_LAST_WQE_REACHED = 16;
}
