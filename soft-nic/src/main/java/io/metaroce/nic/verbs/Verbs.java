package io.metaroce.nic.verbs;

/**
 * The values of libibverbs' enums that cross the provider/daemon boundary, exactly as
 * {@code /usr/include/infiniband/verbs.h} (rdma-core) defines them. The provider copies them
 * unchanged into the rings and control frames of {@code mrce_abi.h}, so the daemon reads them with
 * these names.
 */
public final class Verbs {

    private Verbs() {}

    // enum ibv_qp_state
    public static final int IBV_QPS_RESET = 0;
    public static final int IBV_QPS_INIT = 1;
    public static final int IBV_QPS_RTR = 2;
    public static final int IBV_QPS_RTS = 3;
    public static final int IBV_QPS_SQD = 4;
    public static final int IBV_QPS_SQE = 5;
    public static final int IBV_QPS_ERR = 6;
    public static final int IBV_QPS_UNKNOWN = 7;

    // enum ibv_qp_type
    public static final int IBV_QPT_RC = 2;
    public static final int IBV_QPT_UC = 3;
    public static final int IBV_QPT_UD = 4;
    public static final int IBV_QPT_RAW_PACKET = 8;
    public static final int IBV_QPT_XRC_SEND = 9;
    public static final int IBV_QPT_XRC_RECV = 10;
    public static final int IBV_QPT_DRIVER = 0xff;

    // enum ibv_qp_attr_mask
    public static final int IBV_QP_STATE = 1 << 0;
    public static final int IBV_QP_CUR_STATE = 1 << 1;
    public static final int IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    public static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    public static final int IBV_QP_PKEY_INDEX = 1 << 4;
    public static final int IBV_QP_PORT = 1 << 5;
    public static final int IBV_QP_QKEY = 1 << 6;
    public static final int IBV_QP_AV = 1 << 7;
    public static final int IBV_QP_PATH_MTU = 1 << 8;
    public static final int IBV_QP_TIMEOUT = 1 << 9;
    public static final int IBV_QP_RETRY_CNT = 1 << 10;
    public static final int IBV_QP_RNR_RETRY = 1 << 11;
    public static final int IBV_QP_RQ_PSN = 1 << 12;
    public static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    public static final int IBV_QP_ALT_PATH = 1 << 14;
    public static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    public static final int IBV_QP_SQ_PSN = 1 << 16;
    public static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    public static final int IBV_QP_PATH_MIG_STATE = 1 << 18;
    public static final int IBV_QP_CAP = 1 << 19;
    public static final int IBV_QP_DEST_QPN = 1 << 20;
    public static final int IBV_QP_RATE_LIMIT = 1 << 25;

    // enum ibv_mig_state
    public static final int IBV_MIG_MIGRATED = 0;
    public static final int IBV_MIG_REARM = 1;
    public static final int IBV_MIG_ARMED = 2;

    // enum ibv_mtu
    public static final int IBV_MTU_256 = 1;
    public static final int IBV_MTU_512 = 2;
    public static final int IBV_MTU_1024 = 3;
    public static final int IBV_MTU_2048 = 4;
    public static final int IBV_MTU_4096 = 5;

    /** Bytes of an {@code enum ibv_mtu} value (IBV_MTU_256 to IBV_MTU_4096), or -1. */
    public static int mtuBytes(int ibvMtu) {
        return ibvMtu >= IBV_MTU_256 && ibvMtu <= IBV_MTU_4096 ? 128 << ibvMtu : -1;
    }

    // enum ibv_wr_opcode
    public static final int IBV_WR_RDMA_WRITE = 0;
    public static final int IBV_WR_RDMA_WRITE_WITH_IMM = 1;
    public static final int IBV_WR_SEND = 2;
    public static final int IBV_WR_SEND_WITH_IMM = 3;
    public static final int IBV_WR_RDMA_READ = 4;
    public static final int IBV_WR_ATOMIC_CMP_AND_SWP = 5;
    public static final int IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
    public static final int IBV_WR_LOCAL_INV = 7;
    public static final int IBV_WR_BIND_MW = 8;
    public static final int IBV_WR_SEND_WITH_INV = 9;
    public static final int IBV_WR_TSO = 10;
    public static final int IBV_WR_DRIVER1 = 11;
    public static final int IBV_WR_ATOMIC_WRITE = 15;

    // enum ibv_send_flags
    public static final int IBV_SEND_FENCE = 1 << 0;
    public static final int IBV_SEND_SIGNALED = 1 << 1;
    public static final int IBV_SEND_SOLICITED = 1 << 2;
    public static final int IBV_SEND_INLINE = 1 << 3;
    public static final int IBV_SEND_IP_CSUM = 1 << 4;

    // enum ibv_wc_status
    public static final int IBV_WC_SUCCESS = 0;
    public static final int IBV_WC_LOC_LEN_ERR = 1;
    public static final int IBV_WC_LOC_QP_OP_ERR = 2;
    public static final int IBV_WC_LOC_EEC_OP_ERR = 3;
    public static final int IBV_WC_LOC_PROT_ERR = 4;
    public static final int IBV_WC_WR_FLUSH_ERR = 5;
    public static final int IBV_WC_MW_BIND_ERR = 6;
    public static final int IBV_WC_BAD_RESP_ERR = 7;
    public static final int IBV_WC_LOC_ACCESS_ERR = 8;
    public static final int IBV_WC_REM_INV_REQ_ERR = 9;
    public static final int IBV_WC_REM_ACCESS_ERR = 10;
    public static final int IBV_WC_REM_OP_ERR = 11;
    public static final int IBV_WC_RETRY_EXC_ERR = 12;
    public static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;
    public static final int IBV_WC_LOC_RDD_VIOL_ERR = 14;
    public static final int IBV_WC_REM_INV_RD_REQ_ERR = 15;
    public static final int IBV_WC_REM_ABORT_ERR = 16;
    public static final int IBV_WC_INV_EECN_ERR = 17;
    public static final int IBV_WC_INV_EEC_STATE_ERR = 18;
    public static final int IBV_WC_FATAL_ERR = 19;
    public static final int IBV_WC_RESP_TIMEOUT_ERR = 20;
    public static final int IBV_WC_GENERAL_ERR = 21;
    public static final int IBV_WC_TM_ERR = 22;
    public static final int IBV_WC_TM_RNDV_INCOMPLETE = 23;

    // enum ibv_wc_opcode
    public static final int IBV_WC_SEND = 0;
    public static final int IBV_WC_RDMA_WRITE = 1;
    public static final int IBV_WC_RDMA_READ = 2;
    public static final int IBV_WC_COMP_SWAP = 3;
    public static final int IBV_WC_FETCH_ADD = 4;
    public static final int IBV_WC_BIND_MW = 5;
    public static final int IBV_WC_LOCAL_INV = 6;
    public static final int IBV_WC_TSO = 7;
    public static final int IBV_WC_ATOMIC_WRITE = 9;
    /** Receive completions have this bit set: {@code (opcode & IBV_WC_RECV) != 0}. */
    public static final int IBV_WC_RECV = 1 << 7;
    public static final int IBV_WC_RECV_RDMA_WITH_IMM = 129;
    public static final int IBV_WC_TM_ADD = 130;
    public static final int IBV_WC_TM_DEL = 131;
    public static final int IBV_WC_TM_SYNC = 132;
    public static final int IBV_WC_TM_RECV = 133;
    public static final int IBV_WC_TM_NO_TAG = 134;
    public static final int IBV_WC_DRIVER1 = 135;
    public static final int IBV_WC_DRIVER2 = 136;
    public static final int IBV_WC_DRIVER3 = 137;

    // enum ibv_wc_flags
    public static final int IBV_WC_GRH = 1 << 0;
    public static final int IBV_WC_WITH_IMM = 1 << 1;
    public static final int IBV_WC_IP_CSUM_OK = 1 << 2;
    public static final int IBV_WC_WITH_INV = 1 << 3;
    public static final int IBV_WC_TM_SYNC_REQ = 1 << 4;
    public static final int IBV_WC_TM_MATCH = 1 << 5;
    public static final int IBV_WC_TM_DATA_VALID = 1 << 6;

    // enum ibv_access_flags
    public static final int IBV_ACCESS_LOCAL_WRITE = 1;
    public static final int IBV_ACCESS_REMOTE_WRITE = 1 << 1;
    public static final int IBV_ACCESS_REMOTE_READ = 1 << 2;
    public static final int IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
    public static final int IBV_ACCESS_MW_BIND = 1 << 4;
    public static final int IBV_ACCESS_ZERO_BASED = 1 << 5;
    public static final int IBV_ACCESS_ON_DEMAND = 1 << 6;
    public static final int IBV_ACCESS_HUGETLB = 1 << 7;
    /** IB_UVERBS_ACCESS_OPTIONAL_FIRST: optional flags a provider may ignore start here. */
    public static final int IBV_ACCESS_OPTIONAL_FIRST = 1 << 20;
    public static final int IBV_ACCESS_RELAXED_ORDERING = IBV_ACCESS_OPTIONAL_FIRST;
    /** IB_UVERBS_ACCESS_OPTIONAL_RANGE: bits 20..28. */
    public static final int IBV_ACCESS_OPTIONAL_RANGE = ((1 << 29) - 1) & ~((1 << 20) - 1);
}
