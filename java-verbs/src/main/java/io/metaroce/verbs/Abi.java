package io.metaroce.verbs;

/**
 * Sizes, field offsets and enum values of {@code <infiniband/verbs.h>} (rdma-core, x86_64 / any
 * LP64 Linux) that the binding reads and writes. Names: {@code STRUCT_FIELD} for the offset of
 * {@code struct ibv_STRUCT.FIELD} (nested fields joined by {@code _}), {@code STRUCT_SIZE} for its
 * size, and the C name for enum and flag values. {@code LayoutAgreementTest} compiles
 * {@code src/test/c/verbs_offsets.c} against the installed header and checks every constant.
 */
final class Abi {
    private Abi() {}

    // struct ibv_context
    public static final long CONTEXT_SIZE = 328;
    public static final long CONTEXT_DEVICE = 0;
    public static final long CONTEXT_OPS = 8;
    public static final long CONTEXT_CMD_FD = 264;
    public static final long CONTEXT_ASYNC_FD = 268;
    public static final long CONTEXT_NUM_COMP_VECTORS = 272;

    // struct ibv_context_ops
    public static final long CONTEXT_OPS_POLL_CQ = 88;
    public static final long CONTEXT_OPS_REQ_NOTIFY_CQ = 96;
    public static final long CONTEXT_OPS_POST_SRQ_RECV = 160;
    public static final long CONTEXT_OPS_POST_SEND = 200;
    public static final long CONTEXT_OPS_POST_RECV = 208;

    // struct ibv_device
    public static final long DEVICE_NODE_TYPE = 16;
    public static final long DEVICE_TRANSPORT_TYPE = 20;
    public static final long DEVICE_NAME = 24;

    // struct ibv_pd
    public static final long PD_CONTEXT = 0;
    public static final long PD_HANDLE = 8;

    // struct ibv_mr
    public static final long MR_CONTEXT = 0;
    public static final long MR_PD = 8;
    public static final long MR_ADDR = 16;
    public static final long MR_LENGTH = 24;
    public static final long MR_HANDLE = 32;
    public static final long MR_LKEY = 36;
    public static final long MR_RKEY = 40;

    // struct ibv_comp_channel
    public static final long COMP_CHANNEL_CONTEXT = 0;
    public static final long COMP_CHANNEL_FD = 8;

    // struct ibv_cq
    public static final long CQ_CONTEXT = 0;
    public static final long CQ_CHANNEL = 8;
    public static final long CQ_CQ_CONTEXT = 16;
    public static final long CQ_HANDLE = 24;
    public static final long CQ_CQE = 28;

    // struct ibv_srq
    public static final long SRQ_CONTEXT = 0;
    public static final long SRQ_SRQ_CONTEXT = 8;
    public static final long SRQ_PD = 16;
    public static final long SRQ_HANDLE = 24;

    // struct ibv_qp
    public static final long QP_CONTEXT = 0;
    public static final long QP_QP_CONTEXT = 8;
    public static final long QP_PD = 16;
    public static final long QP_SEND_CQ = 24;
    public static final long QP_RECV_CQ = 32;
    public static final long QP_SRQ = 40;
    public static final long QP_HANDLE = 48;
    public static final long QP_QP_NUM = 52;
    public static final long QP_STATE = 56;
    public static final long QP_QP_TYPE = 60;

    // struct ibv_ah
    public static final long AH_CONTEXT = 0;
    public static final long AH_PD = 8;
    public static final long AH_HANDLE = 16;

    // struct ibv_sge
    public static final long SGE_SIZE = 16;
    public static final long SGE_ADDR = 0;
    public static final long SGE_LENGTH = 8;
    public static final long SGE_LKEY = 12;

    // struct ibv_send_wr
    public static final long SEND_WR_SIZE = 128;
    public static final long SEND_WR_WR_ID = 0;
    public static final long SEND_WR_NEXT = 8;
    public static final long SEND_WR_SG_LIST = 16;
    public static final long SEND_WR_NUM_SGE = 24;
    public static final long SEND_WR_OPCODE = 28;
    public static final long SEND_WR_SEND_FLAGS = 32;
    public static final long SEND_WR_IMM_DATA = 36;
    public static final long SEND_WR_INVALIDATE_RKEY = 36;
    public static final long SEND_WR_WR_RDMA_REMOTE_ADDR = 40;
    public static final long SEND_WR_WR_RDMA_RKEY = 48;
    public static final long SEND_WR_WR_ATOMIC_REMOTE_ADDR = 40;
    public static final long SEND_WR_WR_ATOMIC_COMPARE_ADD = 48;
    public static final long SEND_WR_WR_ATOMIC_SWAP = 56;
    public static final long SEND_WR_WR_ATOMIC_RKEY = 64;
    public static final long SEND_WR_WR_UD_AH = 40;
    public static final long SEND_WR_WR_UD_REMOTE_QPN = 48;
    public static final long SEND_WR_WR_UD_REMOTE_QKEY = 52;

    // struct ibv_recv_wr
    public static final long RECV_WR_SIZE = 32;
    public static final long RECV_WR_WR_ID = 0;
    public static final long RECV_WR_NEXT = 8;
    public static final long RECV_WR_SG_LIST = 16;
    public static final long RECV_WR_NUM_SGE = 24;

    // struct ibv_wc
    public static final long WC_SIZE = 48;
    public static final long ASYNC_EVENT_SIZE = 16;
    public static final long ASYNC_EVENT_ELEMENT = 0;
    public static final long ASYNC_EVENT_EVENT_TYPE = 8;
    public static final int IBV_EVENT_CQ_ERR = 0;
    public static final int IBV_EVENT_QP_FATAL = 1;
    public static final int IBV_EVENT_QP_REQ_ERR = 2;
    public static final int IBV_EVENT_QP_ACCESS_ERR = 3;
    public static final int IBV_EVENT_COMM_EST = 4;
    public static final int IBV_EVENT_SQ_DRAINED = 5;
    public static final int IBV_EVENT_PATH_MIG = 6;
    public static final int IBV_EVENT_PATH_MIG_ERR = 7;
    public static final int IBV_EVENT_DEVICE_FATAL = 8;
    public static final int IBV_EVENT_PORT_ACTIVE = 9;
    public static final int IBV_EVENT_PORT_ERR = 10;
    public static final int IBV_EVENT_LID_CHANGE = 11;
    public static final int IBV_EVENT_PKEY_CHANGE = 12;
    public static final int IBV_EVENT_SM_CHANGE = 13;
    public static final int IBV_EVENT_SRQ_ERR = 14;
    public static final int IBV_EVENT_SRQ_LIMIT_REACHED = 15;
    public static final int IBV_EVENT_QP_LAST_WQE_REACHED = 16;
    public static final int IBV_EVENT_CLIENT_REREGISTER = 17;
    public static final int IBV_EVENT_GID_CHANGE = 18;
    public static final int IBV_EVENT_WQ_FATAL = 19;
    public static final long WC_WR_ID = 0;
    public static final long WC_STATUS = 8;
    public static final long WC_OPCODE = 12;
    public static final long WC_VENDOR_ERR = 16;
    public static final long WC_BYTE_LEN = 20;
    public static final long WC_IMM_DATA = 24;
    public static final long WC_QP_NUM = 28;
    public static final long WC_SRC_QP = 32;
    public static final long WC_WC_FLAGS = 36;
    public static final long WC_PKEY_INDEX = 40;
    public static final long WC_SLID = 42;
    public static final long WC_SL = 44;
    public static final long WC_DLID_PATH_BITS = 45;

    // struct ibv_qp_cap
    public static final long QP_CAP_SIZE = 20;
    public static final long QP_CAP_MAX_SEND_WR = 0;
    public static final long QP_CAP_MAX_RECV_WR = 4;
    public static final long QP_CAP_MAX_SEND_SGE = 8;
    public static final long QP_CAP_MAX_RECV_SGE = 12;
    public static final long QP_CAP_MAX_INLINE_DATA = 16;

    // struct ibv_qp_init_attr
    public static final long QP_INIT_ATTR_SIZE = 64;
    public static final long QP_INIT_ATTR_QP_CONTEXT = 0;
    public static final long QP_INIT_ATTR_SEND_CQ = 8;
    public static final long QP_INIT_ATTR_RECV_CQ = 16;
    public static final long QP_INIT_ATTR_SRQ = 24;
    public static final long QP_INIT_ATTR_CAP = 32;
    public static final long QP_INIT_ATTR_QP_TYPE = 52;
    public static final long QP_INIT_ATTR_SQ_SIG_ALL = 56;

    // struct ibv_global_route
    public static final long GLOBAL_ROUTE_SIZE = 24;
    public static final long GLOBAL_ROUTE_DGID = 0;
    public static final long GLOBAL_ROUTE_FLOW_LABEL = 16;
    public static final long GLOBAL_ROUTE_SGID_INDEX = 20;
    public static final long GLOBAL_ROUTE_HOP_LIMIT = 21;
    public static final long GLOBAL_ROUTE_TRAFFIC_CLASS = 22;

    // struct ibv_ah_attr
    public static final long AH_ATTR_SIZE = 32;
    public static final long AH_ATTR_GRH = 0;
    public static final long AH_ATTR_DLID = 24;
    public static final long AH_ATTR_SL = 26;
    public static final long AH_ATTR_SRC_PATH_BITS = 27;
    public static final long AH_ATTR_STATIC_RATE = 28;
    public static final long AH_ATTR_IS_GLOBAL = 29;
    public static final long AH_ATTR_PORT_NUM = 30;

    // struct ibv_qp_attr
    public static final long QP_ATTR_SIZE = 144;
    public static final long QP_ATTR_QP_STATE = 0;
    public static final long QP_ATTR_CUR_QP_STATE = 4;
    public static final long QP_ATTR_PATH_MTU = 8;
    public static final long QP_ATTR_PATH_MIG_STATE = 12;
    public static final long QP_ATTR_QKEY = 16;
    public static final long QP_ATTR_RQ_PSN = 20;
    public static final long QP_ATTR_SQ_PSN = 24;
    public static final long QP_ATTR_DEST_QP_NUM = 28;
    public static final long QP_ATTR_QP_ACCESS_FLAGS = 32;
    public static final long QP_ATTR_CAP = 36;
    public static final long QP_ATTR_AH_ATTR = 56;
    public static final long QP_ATTR_ALT_AH_ATTR = 88;
    public static final long QP_ATTR_PKEY_INDEX = 120;
    public static final long QP_ATTR_ALT_PKEY_INDEX = 122;
    public static final long QP_ATTR_EN_SQD_ASYNC_NOTIFY = 124;
    public static final long QP_ATTR_SQ_DRAINING = 125;
    public static final long QP_ATTR_MAX_RD_ATOMIC = 126;
    public static final long QP_ATTR_MAX_DEST_RD_ATOMIC = 127;
    public static final long QP_ATTR_MIN_RNR_TIMER = 128;
    public static final long QP_ATTR_PORT_NUM = 129;
    public static final long QP_ATTR_TIMEOUT = 130;
    public static final long QP_ATTR_RETRY_CNT = 131;
    public static final long QP_ATTR_RNR_RETRY = 132;
    public static final long QP_ATTR_ALT_PORT_NUM = 133;
    public static final long QP_ATTR_ALT_TIMEOUT = 134;
    public static final long QP_ATTR_RATE_LIMIT = 136;

    // struct ibv_srq_attr
    public static final long SRQ_ATTR_SIZE = 12;
    public static final long SRQ_ATTR_MAX_WR = 0;
    public static final long SRQ_ATTR_MAX_SGE = 4;
    public static final long SRQ_ATTR_SRQ_LIMIT = 8;

    // struct ibv_srq_init_attr
    public static final long SRQ_INIT_ATTR_SIZE = 24;
    public static final long SRQ_INIT_ATTR_SRQ_CONTEXT = 0;
    public static final long SRQ_INIT_ATTR_ATTR = 8;

    // struct ibv_port_attr
    public static final long PORT_ATTR_SIZE = 52;
    public static final long PORT_ATTR_STATE = 0;
    public static final long PORT_ATTR_MAX_MTU = 4;
    public static final long PORT_ATTR_ACTIVE_MTU = 8;
    public static final long PORT_ATTR_GID_TBL_LEN = 12;
    public static final long PORT_ATTR_PORT_CAP_FLAGS = 16;
    public static final long PORT_ATTR_MAX_MSG_SZ = 20;
    public static final long PORT_ATTR_LID = 34;
    public static final long PORT_ATTR_SM_LID = 36;
    public static final long PORT_ATTR_ACTIVE_WIDTH = 43;
    public static final long PORT_ATTR_ACTIVE_SPEED = 44;
    public static final long PORT_ATTR_PHYS_STATE = 45;
    public static final long PORT_ATTR_LINK_LAYER = 46;

    // struct ibv_device_attr
    public static final long DEVICE_ATTR_SIZE = 232;
    public static final long DEVICE_ATTR_FW_VER = 0;
    public static final long DEVICE_ATTR_NODE_GUID = 64;
    public static final long DEVICE_ATTR_SYS_IMAGE_GUID = 72;
    public static final long DEVICE_ATTR_MAX_MR_SIZE = 80;
    public static final long DEVICE_ATTR_VENDOR_ID = 96;
    public static final long DEVICE_ATTR_VENDOR_PART_ID = 100;
    public static final long DEVICE_ATTR_MAX_QP = 108;
    public static final long DEVICE_ATTR_MAX_QP_WR = 112;
    public static final long DEVICE_ATTR_DEVICE_CAP_FLAGS = 116;
    public static final long DEVICE_ATTR_MAX_SGE = 120;
    public static final long DEVICE_ATTR_MAX_CQ = 128;
    public static final long DEVICE_ATTR_MAX_CQE = 132;
    public static final long DEVICE_ATTR_MAX_MR = 136;
    public static final long DEVICE_ATTR_MAX_PD = 140;
    public static final long DEVICE_ATTR_MAX_QP_RD_ATOM = 144;
    public static final long DEVICE_ATTR_MAX_QP_INIT_RD_ATOM = 156;
    public static final long DEVICE_ATTR_ATOMIC_CAP = 164;
    public static final long DEVICE_ATTR_MAX_AH = 200;
    public static final long DEVICE_ATTR_MAX_SRQ = 212;
    public static final long DEVICE_ATTR_MAX_SRQ_WR = 216;
    public static final long DEVICE_ATTR_MAX_SRQ_SGE = 220;
    public static final long DEVICE_ATTR_PHYS_PORT_CNT = 227;

    // union ibv_gid
    public static final long GID_SIZE = 16;

    // enum and flag values of verbs.h
    public static final int IBV_WR_RDMA_WRITE = 0;
    public static final int IBV_WR_RDMA_WRITE_WITH_IMM = 1;
    public static final int IBV_WR_SEND = 2;
    public static final int IBV_WR_SEND_WITH_IMM = 3;
    public static final int IBV_WR_RDMA_READ = 4;
    public static final int IBV_WR_ATOMIC_CMP_AND_SWP = 5;
    public static final int IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
    public static final int IBV_WC_SEND = 0;
    public static final int IBV_WC_RDMA_WRITE = 1;
    public static final int IBV_WC_RDMA_READ = 2;
    public static final int IBV_WC_COMP_SWAP = 3;
    public static final int IBV_WC_FETCH_ADD = 4;
    public static final int IBV_WC_RECV = 128;
    public static final int IBV_WC_RECV_RDMA_WITH_IMM = 129;
    public static final int IBV_WC_WITH_IMM = 2;
    public static final int IBV_WC_GRH = 1;
    public static final int IBV_WC_SUCCESS = 0;
    public static final int IBV_WC_LOC_LEN_ERR = 1;
    public static final int IBV_WC_LOC_QP_OP_ERR = 2;
    public static final int IBV_WC_LOC_PROT_ERR = 4;
    public static final int IBV_WC_WR_FLUSH_ERR = 5;
    public static final int IBV_WC_REM_INV_REQ_ERR = 9;
    public static final int IBV_WC_REM_ACCESS_ERR = 10;
    public static final int IBV_WC_REM_OP_ERR = 11;
    public static final int IBV_WC_RETRY_EXC_ERR = 12;
    public static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;
    public static final int IBV_WC_GENERAL_ERR = 21;
    public static final int IBV_WC_LOC_EEC_OP_ERR = 3;
    public static final int IBV_WC_MW_BIND_ERR = 6;
    public static final int IBV_WC_BAD_RESP_ERR = 7;
    public static final int IBV_WC_LOC_ACCESS_ERR = 8;
    public static final int IBV_WC_LOC_RDD_VIOL_ERR = 14;
    public static final int IBV_WC_REM_INV_RD_REQ_ERR = 15;
    public static final int IBV_WC_REM_ABORT_ERR = 16;
    public static final int IBV_WC_INV_EECN_ERR = 17;
    public static final int IBV_WC_INV_EEC_STATE_ERR = 18;
    public static final int IBV_WC_FATAL_ERR = 19;
    public static final int IBV_WC_RESP_TIMEOUT_ERR = 20;
    public static final int IBV_WC_TM_ERR = 22;
    public static final int IBV_WC_TM_RNDV_INCOMPLETE = 23;
    public static final int IBV_SEND_FENCE = 1;
    public static final int IBV_SEND_SIGNALED = 2;
    public static final int IBV_SEND_SOLICITED = 4;
    public static final int IBV_SEND_INLINE = 8;
    public static final int IBV_ACCESS_LOCAL_WRITE = 1;
    public static final int IBV_ACCESS_REMOTE_WRITE = 2;
    public static final int IBV_ACCESS_REMOTE_READ = 4;
    public static final int IBV_ACCESS_REMOTE_ATOMIC = 8;
    public static final int IBV_QPT_RC = 2;
    public static final int IBV_QPT_UC = 3;
    public static final int IBV_QPT_UD = 4;
    public static final int IBV_QPS_RESET = 0;
    public static final int IBV_QPS_INIT = 1;
    public static final int IBV_QPS_RTR = 2;
    public static final int IBV_QPS_RTS = 3;
    public static final int IBV_QPS_SQD = 4;
    public static final int IBV_QPS_SQE = 5;
    public static final int IBV_QPS_ERR = 6;
    public static final int IBV_QP_STATE = 1;
    public static final int IBV_QP_CUR_STATE = 2;
    public static final int IBV_QP_ACCESS_FLAGS = 8;
    public static final int IBV_QP_PKEY_INDEX = 16;
    public static final int IBV_QP_PORT = 32;
    public static final int IBV_QP_QKEY = 64;
    public static final int IBV_QP_AV = 128;
    public static final int IBV_QP_PATH_MTU = 256;
    public static final int IBV_QP_TIMEOUT = 512;
    public static final int IBV_QP_RETRY_CNT = 1024;
    public static final int IBV_QP_RNR_RETRY = 2048;
    public static final int IBV_QP_RQ_PSN = 4096;
    public static final int IBV_QP_MAX_QP_RD_ATOMIC = 8192;
    public static final int IBV_QP_MIN_RNR_TIMER = 32768;
    public static final int IBV_QP_SQ_PSN = 65536;
    public static final int IBV_QP_MAX_DEST_RD_ATOMIC = 131072;
    public static final int IBV_QP_CAP = 524288;
    public static final int IBV_QP_DEST_QPN = 1048576;
    public static final int IBV_MTU_256 = 1;
    public static final int IBV_MTU_512 = 2;
    public static final int IBV_MTU_1024 = 3;
    public static final int IBV_MTU_2048 = 4;
    public static final int IBV_MTU_4096 = 5;
    public static final int IBV_LINK_LAYER_UNSPECIFIED = 0;
    public static final int IBV_LINK_LAYER_INFINIBAND = 1;
    public static final int IBV_LINK_LAYER_ETHERNET = 2;
    public static final int IBV_PORT_ACTIVE = 4;
    public static final int IBV_SRQ_MAX_WR = 1;
    public static final int IBV_SRQ_LIMIT = 2;
    public static final int IBV_ATOMIC_NONE = 0;
    public static final int IBV_ATOMIC_HCA = 1;
    public static final int IBV_ATOMIC_GLOB = 2;
}
