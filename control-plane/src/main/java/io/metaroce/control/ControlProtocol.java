package io.metaroce.control;

/**
 * The local control protocol between {@code libmetaroce.so} and {@code mrce-nicd}: the Java mirror of
 * the control half of {@code provider-c/include/mrce_abi.h}. {@code ControlProtocolAbiTest} proves
 * every offset and size here against the C compiler's view ({@code mrce_abi_offsets}).
 *
 * <p>Every frame, request or response, is a 16-byte header and the fixed-size payload of its op, all
 * little-endian:
 *
 * <pre>
 *  0         4       6           8         12       14       16
 *  +---------+-------+-----------+---------+--------+--------+---------------------+
 *  | len u32 | op u16| status u16| seq u32 |nfds u16| pad u16| payload (len - 16)  |
 *  +---------+-------+-----------+---------+--------+--------+---------------------+
 *  len counts the header: 16 &lt;= len &lt;= 4096. Requests carry status 0 and nfds 0.
 *  A response with nfds &gt; 0 is followed by nfds one-byte writes, each with one fd (SCM_RIGHTS).
 * </pre>
 */
public final class ControlProtocol {

    public static final int ABI_VERSION = 2;
    public static final int HEADER_SIZE = 16;
    public static final int MAX_FRAME = 4096;
    public static final String SOCK_DIR = "/tmp/metaroce";
    /** {@code MRCE_NO_HANDLE}: "none" (no completion channel, no SRQ), as an unsigned u32. */
    public static final int NO_HANDLE = 0xffffffff;

    public static final int OP_HELLO = 1;
    public static final int OP_ALLOC_PD = 2;
    public static final int OP_DEALLOC_PD = 3;
    public static final int OP_REG_MR = 4;
    public static final int OP_DEREG_MR = 5;
    public static final int OP_CREATE_COMP_CHANNEL = 6;
    public static final int OP_DESTROY_COMP_CHANNEL = 7;
    public static final int OP_CREATE_CQ = 8;
    public static final int OP_DESTROY_CQ = 9;
    public static final int OP_CREATE_QP = 10;
    public static final int OP_MODIFY_QP = 11;
    public static final int OP_QUERY_QP = 12;
    public static final int OP_DESTROY_QP = 13;
    public static final int OP_CREATE_SRQ = 14;
    public static final int OP_MODIFY_SRQ = 15;
    public static final int OP_QUERY_SRQ = 16;
    public static final int OP_DESTROY_SRQ = 17;
    public static final int OP_GET_ASYNC_EVENT = 18;
    public static final int OP_REREG_MR = 19;
    public static final int OP_CM_LISTEN = 20;
    public static final int OP_CM_UNLISTEN = 21;
    public static final int OP_CM_CONNECT = 22;
    public static final int OP_CM_GET_REQUEST = 23;
    public static final int OP_CM_ACCEPT = 24;
    public static final int OP_CM_REJECT = 25;
    public static final int OP_MAX = 25;
    /** {@code MRCE_CM_*}: the rdma_cm-style service (ops 20..25). */
    public static final int CM_PRIVATE_DATA_MAX = 192;
    public static final int CM_ACCEPTED = 0;
    public static final int CM_REJECTED = 1;
    public static final int CM_DEFAULT_BACKLOG = 64;
    public static final int CM_MAX_BACKLOG = 1024;
    /** {@code MRCE_MAX_ASYNC_EVENTS}: events queued per connection at most. */
    public static final int MAX_ASYNC_EVENTS = 1024;

    private static final int[] REQUEST_SIZE = new int[OP_MAX + 1];
    private static final int[] RESPONSE_SIZE = new int[OP_MAX + 1];
    private static final int[] RESPONSE_FDS = new int[OP_MAX + 1];
    private static final String[] NAME = new String[OP_MAX + 1];

    static {
        op(OP_HELLO, "HELLO", HelloReq.SIZE, HelloResp.SIZE, 2);
        op(OP_ALLOC_PD, "ALLOC_PD", 0, HandleResp.SIZE, 0);
        op(OP_DEALLOC_PD, "DEALLOC_PD", HandleReq.SIZE, 0, 0);
        op(OP_REG_MR, "REG_MR", RegMrReq.SIZE, RegMrResp.SIZE, 0);
        op(OP_DEREG_MR, "DEREG_MR", HandleReq.SIZE, 0, 0);
        op(OP_CREATE_COMP_CHANNEL, "CREATE_COMP_CHANNEL", 0, HandleResp.SIZE, 1);
        op(OP_DESTROY_COMP_CHANNEL, "DESTROY_COMP_CHANNEL", HandleReq.SIZE, 0, 0);
        op(OP_CREATE_CQ, "CREATE_CQ", CreateCqReq.SIZE, CreateCqResp.SIZE, 1);
        op(OP_DESTROY_CQ, "DESTROY_CQ", HandleReq.SIZE, 0, 0);
        op(OP_CREATE_QP, "CREATE_QP", CreateQpReq.SIZE, CreateQpResp.SIZE, 1);
        op(OP_MODIFY_QP, "MODIFY_QP", ModifyQpReq.SIZE, 0, 0);
        op(OP_QUERY_QP, "QUERY_QP", HandleReq.SIZE, QpAttr.SIZE, 0);
        op(OP_DESTROY_QP, "DESTROY_QP", HandleReq.SIZE, 0, 0);
        op(OP_CREATE_SRQ, "CREATE_SRQ", CreateSrqReq.SIZE, CreateSrqResp.SIZE, 1);
        op(OP_MODIFY_SRQ, "MODIFY_SRQ", ModifySrqReq.SIZE, 0, 0);
        op(OP_QUERY_SRQ, "QUERY_SRQ", HandleReq.SIZE, SrqAttr.SIZE, 0);
        op(OP_DESTROY_SRQ, "DESTROY_SRQ", HandleReq.SIZE, 0, 0);
        op(OP_GET_ASYNC_EVENT, "GET_ASYNC_EVENT", 0, AsyncEvent.SIZE, 0);
        op(OP_REREG_MR, "REREG_MR", ReregMrReq.SIZE, RegMrResp.SIZE, 0);
        op(OP_CM_LISTEN, "CM_LISTEN", CmListenReq.SIZE, 0, 0);
        op(OP_CM_UNLISTEN, "CM_UNLISTEN", CmListenReq.SIZE, 0, 0);
        op(OP_CM_CONNECT, "CM_CONNECT", CmConnectReq.SIZE, CmConnectResp.SIZE, 0);
        op(OP_CM_GET_REQUEST, "CM_GET_REQUEST", CmGetRequestReq.SIZE, CmRequest.SIZE, 0);
        op(OP_CM_ACCEPT, "CM_ACCEPT", CmAcceptReq.SIZE, 0, 0);
        op(OP_CM_REJECT, "CM_REJECT", CmRejectReq.SIZE, 0, 0);
    }

    private ControlProtocol() {}

    public static boolean isKnownOp(int op) {
        return op >= 1 && op <= OP_MAX;
    }

    /** Payload bytes of the request of {@code op} (a known op). */
    public static int requestSize(int op) {
        return REQUEST_SIZE[op];
    }

    /** Payload bytes of a successful response to {@code op} (an error response has none). */
    public static int responseSize(int op) {
        return RESPONSE_SIZE[op];
    }

    /** Fds that follow a successful response to {@code op}. */
    public static int responseFds(int op) {
        return RESPONSE_FDS[op];
    }

    /** "HELLO", "REG_MR" ..., or "op N" for an unknown op. */
    public static String opName(int op) {
        return isKnownOp(op) ? NAME[op] : "op " + op;
    }

    private static void op(int op, String name, int requestSize, int responseSize, int responseFds) {
        NAME[op] = name;
        REQUEST_SIZE[op] = requestSize;
        RESPONSE_SIZE[op] = responseSize;
        RESPONSE_FDS[op] = responseFds;
    }

    /** {@code struct mrce_ctrl_hdr}. */
    public static final class CtrlHdr {
        public static final int LEN_OFFSET = 0;
        public static final int OP_OFFSET = LEN_OFFSET + 4;
        public static final int STATUS_OFFSET = OP_OFFSET + 2;
        public static final int SEQ_OFFSET = STATUS_OFFSET + 2;
        public static final int NFDS_OFFSET = SEQ_OFFSET + 4;
        public static final int SIZE = NFDS_OFFSET + 4;

        private CtrlHdr() {}
    }

    /** {@code struct mrce_handle_req}. */
    public static final class HandleReq {
        public static final int HANDLE_OFFSET = 0;
        public static final int SIZE = HANDLE_OFFSET + 8;

        private HandleReq() {}
    }

    /** {@code struct mrce_handle_resp}. */
    public static final class HandleResp {
        public static final int HANDLE_OFFSET = 0;
        public static final int SIZE = HANDLE_OFFSET + 8;

        private HandleResp() {}
    }

    /** {@code struct mrce_hello_req}. */
    public static final class HelloReq {
        public static final int ABI_VERSION_OFFSET = 0;
        public static final int SIZE = ABI_VERSION_OFFSET + 8;

        private HelloReq() {}
    }

    /** {@code struct mrce_hello_resp}. */
    public static final class HelloResp {
        public static final int ABI_VERSION_OFFSET = 0;
        public static final int DAEMON_PID_OFFSET = ABI_VERSION_OFFSET + 4;
        public static final int GID_OFFSET = DAEMON_PID_OFFSET + 4;
        public static final int DEV_NAME_OFFSET = GID_OFFSET + 16;
        public static final int IFNAME_OFFSET = DEV_NAME_OFFSET + 16;
        public static final int NODE_GUID_OFFSET = IFNAME_OFFSET + 16;
        public static final int IF_MTU_OFFSET = NODE_GUID_OFFSET + 8;
        public static final int ACTIVE_MTU_OFFSET = IF_MTU_OFFSET + 4;
        public static final int MAX_MTU_OFFSET = ACTIVE_MTU_OFFSET + 4;
        public static final int UDP_PORT_OFFSET = MAX_MTU_OFFSET + 4;
        public static final int MAX_QP_OFFSET = UDP_PORT_OFFSET + 4;
        public static final int MAX_QP_WR_OFFSET = MAX_QP_OFFSET + 4;
        public static final int MAX_SGE_OFFSET = MAX_QP_WR_OFFSET + 4;
        public static final int MAX_CQ_OFFSET = MAX_SGE_OFFSET + 4;
        public static final int MAX_CQE_OFFSET = MAX_CQ_OFFSET + 4;
        public static final int MAX_MR_OFFSET = MAX_CQE_OFFSET + 4;
        public static final int MAX_MR_SIZE_OFFSET = MAX_MR_OFFSET + 4;
        public static final int MAX_PD_OFFSET = MAX_MR_SIZE_OFFSET + 8;
        public static final int MAX_INLINE_OFFSET = MAX_PD_OFFSET + 4;
        public static final int MAX_QP_RD_ATOM_OFFSET = MAX_INLINE_OFFSET + 4;
        public static final int MAX_COMP_CHANNEL_OFFSET = MAX_QP_RD_ATOM_OFFSET + 4;
        public static final int VENDOR_ID_OFFSET = MAX_COMP_CHANNEL_OFFSET + 4;
        public static final int VENDOR_PART_ID_OFFSET = VENDOR_ID_OFFSET + 4;
        public static final int HW_VER_OFFSET = VENDOR_PART_ID_OFFSET + 4;
        public static final int LINK_UP_OFFSET = HW_VER_OFFSET + 4;
        public static final int SPEED_MBPS_OFFSET = LINK_UP_OFFSET + 4;
        public static final int MAX_SRQ_OFFSET = SPEED_MBPS_OFFSET + 4;
        public static final int MAX_SRQ_WR_OFFSET = MAX_SRQ_OFFSET + 4;
        public static final int MAX_SRQ_SGE_OFFSET = MAX_SRQ_WR_OFFSET + 4;
        public static final int MAX_QP_INIT_RD_ATOM_OFFSET = MAX_SRQ_SGE_OFFSET + 4;
        public static final int ATOMIC_CAP_OFFSET = MAX_QP_INIT_RD_ATOM_OFFSET + 4;
        public static final int MAX_AH_OFFSET = ATOMIC_CAP_OFFSET + 4;
        public static final int SIZE = MAX_AH_OFFSET + 8;

        private HelloResp() {}
    }

    /** {@code struct mrce_reg_mr_req}. */
    public static final class RegMrReq {
        public static final int PD_OFFSET = 0;
        public static final int ACCESS_OFFSET = PD_OFFSET + 4;
        public static final int ADDR_OFFSET = ACCESS_OFFSET + 4;
        public static final int LENGTH_OFFSET = ADDR_OFFSET + 8;
        public static final int IOVA_OFFSET = LENGTH_OFFSET + 8;
        public static final int SIZE = IOVA_OFFSET + 8;

        private RegMrReq() {}
    }

    /** {@code struct mrce_reg_mr_resp}. */
    public static final class RegMrResp {
        public static final int HANDLE_OFFSET = 0;
        public static final int LKEY_OFFSET = HANDLE_OFFSET + 4;
        public static final int RKEY_OFFSET = LKEY_OFFSET + 4;
        public static final int SIZE = RKEY_OFFSET + 8;

        private RegMrResp() {}
    }

    /** {@code struct mrce_create_cq_req}. */
    public static final class CreateCqReq {
        public static final int CQE_OFFSET = 0;
        public static final int CHANNEL_OFFSET = CQE_OFFSET + 4;
        public static final int COMP_VECTOR_OFFSET = CHANNEL_OFFSET + 4;
        public static final int SIZE = COMP_VECTOR_OFFSET + 8;

        private CreateCqReq() {}
    }

    /** {@code struct mrce_create_cq_resp}. */
    public static final class CreateCqResp {
        public static final int HANDLE_OFFSET = 0;
        public static final int CQE_OFFSET = HANDLE_OFFSET + 4;
        public static final int MAP_SIZE_OFFSET = CQE_OFFSET + 4;
        public static final int SIZE = MAP_SIZE_OFFSET + 8;

        private CreateCqResp() {}
    }

    /** {@code struct mrce_create_qp_req}. */
    public static final class CreateQpReq {
        public static final int PD_OFFSET = 0;
        public static final int SEND_CQ_OFFSET = PD_OFFSET + 4;
        public static final int RECV_CQ_OFFSET = SEND_CQ_OFFSET + 4;
        public static final int SRQ_OFFSET = RECV_CQ_OFFSET + 4;
        public static final int QP_TYPE_OFFSET = SRQ_OFFSET + 4;
        public static final int SQ_SIG_ALL_OFFSET = QP_TYPE_OFFSET + 4;
        public static final int MAX_SEND_WR_OFFSET = SQ_SIG_ALL_OFFSET + 4;
        public static final int MAX_RECV_WR_OFFSET = MAX_SEND_WR_OFFSET + 4;
        public static final int MAX_SEND_SGE_OFFSET = MAX_RECV_WR_OFFSET + 4;
        public static final int MAX_RECV_SGE_OFFSET = MAX_SEND_SGE_OFFSET + 4;
        public static final int MAX_INLINE_DATA_OFFSET = MAX_RECV_SGE_OFFSET + 4;
        public static final int SIZE = MAX_INLINE_DATA_OFFSET + 8;

        private CreateQpReq() {}
    }

    /** {@code struct mrce_create_qp_resp}. */
    public static final class CreateQpResp {
        public static final int HANDLE_OFFSET = 0;
        public static final int QP_NUM_OFFSET = HANDLE_OFFSET + 4;
        public static final int MAX_SEND_WR_OFFSET = QP_NUM_OFFSET + 4;
        public static final int MAX_RECV_WR_OFFSET = MAX_SEND_WR_OFFSET + 4;
        public static final int MAX_SEND_SGE_OFFSET = MAX_RECV_WR_OFFSET + 4;
        public static final int MAX_RECV_SGE_OFFSET = MAX_SEND_SGE_OFFSET + 4;
        public static final int MAX_INLINE_DATA_OFFSET = MAX_RECV_SGE_OFFSET + 4;
        public static final int SQ_OFFSET_OFFSET = MAX_INLINE_DATA_OFFSET + 4;
        public static final int RQ_OFFSET_OFFSET = SQ_OFFSET_OFFSET + 4;
        public static final int MAP_SIZE_OFFSET = RQ_OFFSET_OFFSET + 8;
        public static final int SIZE = MAP_SIZE_OFFSET + 8;

        private CreateQpResp() {}
    }

    /** {@code struct mrce_qp_attr}. */
    public static final class QpAttr {
        public static final int QP_STATE_OFFSET = 0;
        public static final int CUR_QP_STATE_OFFSET = QP_STATE_OFFSET + 4;
        public static final int PATH_MTU_OFFSET = CUR_QP_STATE_OFFSET + 4;
        public static final int QKEY_OFFSET = PATH_MTU_OFFSET + 4;
        public static final int RQ_PSN_OFFSET = QKEY_OFFSET + 4;
        public static final int SQ_PSN_OFFSET = RQ_PSN_OFFSET + 4;
        public static final int DEST_QP_NUM_OFFSET = SQ_PSN_OFFSET + 4;
        public static final int QP_ACCESS_FLAGS_OFFSET = DEST_QP_NUM_OFFSET + 4;
        public static final int MAX_SEND_WR_OFFSET = QP_ACCESS_FLAGS_OFFSET + 4;
        public static final int MAX_RECV_WR_OFFSET = MAX_SEND_WR_OFFSET + 4;
        public static final int MAX_SEND_SGE_OFFSET = MAX_RECV_WR_OFFSET + 4;
        public static final int MAX_RECV_SGE_OFFSET = MAX_SEND_SGE_OFFSET + 4;
        public static final int MAX_INLINE_DATA_OFFSET = MAX_RECV_SGE_OFFSET + 4;
        public static final int FLOW_LABEL_OFFSET = MAX_INLINE_DATA_OFFSET + 4;
        public static final int DGID_OFFSET = FLOW_LABEL_OFFSET + 4;
        public static final int SGID_INDEX_OFFSET = DGID_OFFSET + 16;
        public static final int HOP_LIMIT_OFFSET = SGID_INDEX_OFFSET + 1;
        public static final int TRAFFIC_CLASS_OFFSET = HOP_LIMIT_OFFSET + 1;
        public static final int IS_GLOBAL_OFFSET = TRAFFIC_CLASS_OFFSET + 1;
        public static final int DLID_OFFSET = IS_GLOBAL_OFFSET + 1;
        public static final int SL_OFFSET = DLID_OFFSET + 2;
        public static final int SRC_PATH_BITS_OFFSET = SL_OFFSET + 1;
        public static final int STATIC_RATE_OFFSET = SRC_PATH_BITS_OFFSET + 1;
        public static final int AH_PORT_NUM_OFFSET = STATIC_RATE_OFFSET + 1;
        public static final int PKEY_INDEX_OFFSET = AH_PORT_NUM_OFFSET + 1;
        public static final int EN_SQD_ASYNC_NOTIFY_OFFSET = PKEY_INDEX_OFFSET + 2;
        public static final int SQ_DRAINING_OFFSET = EN_SQD_ASYNC_NOTIFY_OFFSET + 1;
        public static final int MAX_RD_ATOMIC_OFFSET = SQ_DRAINING_OFFSET + 1;
        public static final int MAX_DEST_RD_ATOMIC_OFFSET = MAX_RD_ATOMIC_OFFSET + 1;
        public static final int MIN_RNR_TIMER_OFFSET = MAX_DEST_RD_ATOMIC_OFFSET + 1;
        public static final int PORT_NUM_OFFSET = MIN_RNR_TIMER_OFFSET + 1;
        public static final int TIMEOUT_OFFSET = PORT_NUM_OFFSET + 1;
        public static final int RETRY_CNT_OFFSET = TIMEOUT_OFFSET + 1;
        public static final int RNR_RETRY_OFFSET = RETRY_CNT_OFFSET + 1;
        public static final int SIZE = RNR_RETRY_OFFSET + 4;

        private QpAttr() {}
    }

    /** {@code struct mrce_modify_qp_req}. */
    public static final class ModifyQpReq {
        public static final int HANDLE_OFFSET = 0;
        public static final int ATTR_MASK_OFFSET = HANDLE_OFFSET + 4;
        public static final int ATTR_OFFSET = ATTR_MASK_OFFSET + 4;
        public static final int SIZE = ATTR_OFFSET + 96;

        private ModifyQpReq() {}
    }

    /** {@code struct mrce_create_srq_req}. */
    public static final class CreateSrqReq {
        public static final int PD_OFFSET = 0;
        public static final int MAX_WR_OFFSET = PD_OFFSET + 4;
        public static final int MAX_SGE_OFFSET = MAX_WR_OFFSET + 4;
        public static final int SRQ_LIMIT_OFFSET = MAX_SGE_OFFSET + 4;
        public static final int SIZE = SRQ_LIMIT_OFFSET + 4;

        private CreateSrqReq() {}
    }

    /** {@code struct mrce_create_srq_resp}; the SRQ ring's memfd follows. */
    public static final class CreateSrqResp {
        public static final int HANDLE_OFFSET = 0;
        public static final int MAX_WR_OFFSET = HANDLE_OFFSET + 4;
        public static final int MAX_SGE_OFFSET = MAX_WR_OFFSET + 4;
        public static final int MAP_SIZE_OFFSET = MAX_SGE_OFFSET + 8;
        public static final int SIZE = MAP_SIZE_OFFSET + 8;

        private CreateSrqResp() {}
    }

    /** {@code struct mrce_modify_srq_req}. */
    public static final class ModifySrqReq {
        public static final int HANDLE_OFFSET = 0;
        public static final int ATTR_MASK_OFFSET = HANDLE_OFFSET + 4;
        public static final int MAX_WR_OFFSET = ATTR_MASK_OFFSET + 4;
        public static final int SRQ_LIMIT_OFFSET = MAX_WR_OFFSET + 4;
        public static final int SIZE = SRQ_LIMIT_OFFSET + 4;

        private ModifySrqReq() {}
    }

    /** {@code struct mrce_srq_attr}. */
    public static final class SrqAttr {
        public static final int MAX_WR_OFFSET = 0;
        public static final int MAX_SGE_OFFSET = MAX_WR_OFFSET + 4;
        public static final int SRQ_LIMIT_OFFSET = MAX_SGE_OFFSET + 4;
        public static final int SIZE = SRQ_LIMIT_OFFSET + 8;

        private SrqAttr() {}
    }

    /** {@code struct mrce_async_event}. */
    public static final class AsyncEvent {
        public static final int EVENT_TYPE_OFFSET = 0;
        public static final int ELEMENT_OFFSET = EVENT_TYPE_OFFSET + 4;
        public static final int SIZE = ELEMENT_OFFSET + 4;

        private AsyncEvent() {}
    }

    /** {@code struct mrce_rereg_mr_req}; the response is a {@link RegMrResp}. */
    public static final class ReregMrReq {
        public static final int HANDLE_OFFSET = 0;
        public static final int FLAGS_OFFSET = HANDLE_OFFSET + 4;
        public static final int PD_OFFSET = FLAGS_OFFSET + 4;
        public static final int ACCESS_OFFSET = PD_OFFSET + 4;
        public static final int ADDR_OFFSET = ACCESS_OFFSET + 4;
        public static final int LENGTH_OFFSET = ADDR_OFFSET + 8;
        public static final int IOVA_OFFSET = LENGTH_OFFSET + 8;
        public static final int SIZE = IOVA_OFFSET + 8;

        private ReregMrReq() {}
    }

    /** {@code struct mrce_cm_listen_req} (CM_LISTEN, CM_UNLISTEN). */
    public static final class CmListenReq {
        public static final int SERVICE_ID_OFFSET = 0;
        public static final int BACKLOG_OFFSET = SERVICE_ID_OFFSET + 4;
        public static final int SIZE = BACKLOG_OFFSET + 4;

        private CmListenReq() {}
    }

    /** {@code struct mrce_cm_connect_req}. */
    public static final class CmConnectReq {
        public static final int PEER_IPV4_OFFSET = 0;
        public static final int SERVICE_ID_OFFSET = PEER_IPV4_OFFSET + 4;
        public static final int QPN_OFFSET = SERVICE_ID_OFFSET + 4;
        public static final int PSN_OFFSET = QPN_OFFSET + 4;
        public static final int GID_OFFSET = PSN_OFFSET + 4;
        public static final int TIMEOUT_MS_OFFSET = GID_OFFSET + 16;
        public static final int PRIVATE_DATA_LEN_OFFSET = TIMEOUT_MS_OFFSET + 4;
        public static final int PRIVATE_DATA_OFFSET = PRIVATE_DATA_LEN_OFFSET + 4;
        public static final int SIZE = PRIVATE_DATA_OFFSET + CM_PRIVATE_DATA_MAX;

        private CmConnectReq() {}
    }

    /** {@code struct mrce_cm_connect_resp}. */
    public static final class CmConnectResp {
        public static final int RESULT_OFFSET = 0;
        public static final int QPN_OFFSET = RESULT_OFFSET + 8;
        public static final int PSN_OFFSET = QPN_OFFSET + 4;
        public static final int GID_OFFSET = PSN_OFFSET + 4;
        public static final int PRIVATE_DATA_LEN_OFFSET = GID_OFFSET + 16 + 4;
        public static final int PRIVATE_DATA_OFFSET = PRIVATE_DATA_LEN_OFFSET + 4;
        public static final int SIZE = PRIVATE_DATA_OFFSET + CM_PRIVATE_DATA_MAX;

        private CmConnectResp() {}
    }

    /** {@code struct mrce_cm_get_request_req}. */
    public static final class CmGetRequestReq {
        public static final int TIMEOUT_MS_OFFSET = 0;
        public static final int SIZE = TIMEOUT_MS_OFFSET + 8;

        private CmGetRequestReq() {}
    }

    /** {@code struct mrce_cm_request}: the CM_GET_REQUEST response. */
    public static final class CmRequest {
        public static final int REQUEST_OFFSET = 0;
        public static final int SERVICE_ID_OFFSET = REQUEST_OFFSET + 4;
        public static final int QPN_OFFSET = SERVICE_ID_OFFSET + 4;
        public static final int PSN_OFFSET = QPN_OFFSET + 4;
        public static final int GID_OFFSET = PSN_OFFSET + 4;
        public static final int PEER_IPV4_OFFSET = GID_OFFSET + 16;
        public static final int PRIVATE_DATA_LEN_OFFSET = PEER_IPV4_OFFSET + 4;
        public static final int PRIVATE_DATA_OFFSET = PRIVATE_DATA_LEN_OFFSET + 4;
        public static final int SIZE = PRIVATE_DATA_OFFSET + CM_PRIVATE_DATA_MAX;

        private CmRequest() {}
    }

    /** {@code struct mrce_cm_accept_req}. */
    public static final class CmAcceptReq {
        public static final int REQUEST_OFFSET = 0;
        public static final int QPN_OFFSET = REQUEST_OFFSET + 8;
        public static final int PSN_OFFSET = QPN_OFFSET + 4;
        public static final int GID_OFFSET = PSN_OFFSET + 4;
        public static final int PRIVATE_DATA_LEN_OFFSET = GID_OFFSET + 16 + 4;
        public static final int PRIVATE_DATA_OFFSET = PRIVATE_DATA_LEN_OFFSET + 4;
        public static final int SIZE = PRIVATE_DATA_OFFSET + CM_PRIVATE_DATA_MAX;

        private CmAcceptReq() {}
    }

    /** {@code struct mrce_cm_reject_req}. */
    public static final class CmRejectReq {
        public static final int REQUEST_OFFSET = 0;
        public static final int PRIVATE_DATA_LEN_OFFSET = REQUEST_OFFSET + 4;
        public static final int PRIVATE_DATA_OFFSET = PRIVATE_DATA_LEN_OFFSET + 4;
        public static final int SIZE = PRIVATE_DATA_OFFSET + CM_PRIVATE_DATA_MAX;

        private CmRejectReq() {}
    }
}
