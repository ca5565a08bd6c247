package io.metaroce.control;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.AsyncEventDescriptor;
import io.metaroce.abi.CmAcceptReqDescriptor;
import io.metaroce.abi.CmConnectReqDescriptor;
import io.metaroce.abi.CmConnectRespDescriptor;
import io.metaroce.abi.CmGetRequestReqDescriptor;
import io.metaroce.abi.CmListenReqDescriptor;
import io.metaroce.abi.CmRejectReqDescriptor;
import io.metaroce.abi.CmRequestDescriptor;
import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.CreateSrqReqDescriptor;
import io.metaroce.abi.CreateSrqRespDescriptor;
import io.metaroce.abi.CtrlHdrDescriptor;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.HandleRespDescriptor;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.HelloRespDescriptor;
import io.metaroce.abi.ImportContextReqDescriptor;
import io.metaroce.abi.ImportMrReqDescriptor;
import io.metaroce.abi.ImportMrRespDescriptor;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.ModifySrqReqDescriptor;
import io.metaroce.abi.QpAttrDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.RegMrRespDescriptor;
import io.metaroce.abi.ReregMrReqDescriptor;
import io.metaroce.abi.ShareMrReqDescriptor;
import io.metaroce.abi.SrqAttrDescriptor;

/**
 * The local control protocol between {@code libmetaroce.so} and {@code mrce-nicd}: op codes and the
 * op table (payload sizes, fds per response). The struct layouts and constants are the abi module's
 * ({@code io.metaroce.abi}, the one Java copy of {@code provider-c/include/mrce_abi.h}, checked
 * against the C compiler by its {@code MrceAbiAgreementTest}); the names here alias them.
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

    public static final int ABI_VERSION = AbiConstants.MRCE_ABI_VERSION;
    public static final int HEADER_SIZE = CtrlHdrDescriptor.SIZE;
    public static final int MAX_FRAME = AbiConstants.MRCE_CTRL_MAX_FRAME;
    public static final String SOCK_DIR = AbiConstants.MRCE_SOCK_DIR;
    /** {@code MRCE_NO_HANDLE}: "none" (no completion channel, no SRQ), as an unsigned u32. */
    public static final int NO_HANDLE = AbiConstants.NO_HANDLE;

    public static final int OP_HELLO = AbiConstants.MRCE_OP_HELLO;
    public static final int OP_ALLOC_PD = AbiConstants.MRCE_OP_ALLOC_PD;
    public static final int OP_DEALLOC_PD = AbiConstants.MRCE_OP_DEALLOC_PD;
    public static final int OP_REG_MR = AbiConstants.MRCE_OP_REG_MR;
    public static final int OP_DEREG_MR = AbiConstants.MRCE_OP_DEREG_MR;
    public static final int OP_CREATE_COMP_CHANNEL = AbiConstants.MRCE_OP_CREATE_COMP_CHANNEL;
    public static final int OP_DESTROY_COMP_CHANNEL = AbiConstants.MRCE_OP_DESTROY_COMP_CHANNEL;
    public static final int OP_CREATE_CQ = AbiConstants.MRCE_OP_CREATE_CQ;
    public static final int OP_DESTROY_CQ = AbiConstants.MRCE_OP_DESTROY_CQ;
    public static final int OP_CREATE_QP = AbiConstants.MRCE_OP_CREATE_QP;
    public static final int OP_MODIFY_QP = AbiConstants.MRCE_OP_MODIFY_QP;
    public static final int OP_QUERY_QP = AbiConstants.MRCE_OP_QUERY_QP;
    public static final int OP_DESTROY_QP = AbiConstants.MRCE_OP_DESTROY_QP;
    public static final int OP_CREATE_SRQ = AbiConstants.MRCE_OP_CREATE_SRQ;
    public static final int OP_MODIFY_SRQ = AbiConstants.MRCE_OP_MODIFY_SRQ;
    public static final int OP_QUERY_SRQ = AbiConstants.MRCE_OP_QUERY_SRQ;
    public static final int OP_DESTROY_SRQ = AbiConstants.MRCE_OP_DESTROY_SRQ;
    public static final int OP_GET_ASYNC_EVENT = AbiConstants.MRCE_OP_GET_ASYNC_EVENT;
    public static final int OP_REREG_MR = AbiConstants.MRCE_OP_REREG_MR;
    public static final int OP_CM_LISTEN = AbiConstants.MRCE_OP_CM_LISTEN;
    public static final int OP_CM_UNLISTEN = AbiConstants.MRCE_OP_CM_UNLISTEN;
    public static final int OP_CM_CONNECT = AbiConstants.MRCE_OP_CM_CONNECT;
    public static final int OP_CM_GET_REQUEST = AbiConstants.MRCE_OP_CM_GET_REQUEST;
    public static final int OP_CM_ACCEPT = AbiConstants.MRCE_OP_CM_ACCEPT;
    public static final int OP_CM_REJECT = AbiConstants.MRCE_OP_CM_REJECT;
    public static final int OP_CONTEXT_FD = AbiConstants.MRCE_OP_CONTEXT_FD;
    public static final int OP_IMPORT_CONTEXT = AbiConstants.MRCE_OP_IMPORT_CONTEXT;
    public static final int OP_IMPORT_PD = AbiConstants.MRCE_OP_IMPORT_PD;
    public static final int OP_UNIMPORT_PD = AbiConstants.MRCE_OP_UNIMPORT_PD;
    public static final int OP_IMPORT_MR = AbiConstants.MRCE_OP_IMPORT_MR;
    public static final int OP_UNIMPORT_MR = AbiConstants.MRCE_OP_UNIMPORT_MR;
    public static final int OP_CM_BIND = AbiConstants.MRCE_OP_CM_BIND;
    public static final int OP_SHARE_MR = AbiConstants.MRCE_OP_SHARE_MR;
    public static final int OP_MAX = AbiConstants.MRCE_OP_MAX;
    /** {@code MRCE_CM_*}: the rdma_cm-style service (ops 20..25). */
    public static final int CM_PRIVATE_DATA_MAX = AbiConstants.MRCE_CM_PRIVATE_DATA_MAX;

    public static final int CM_ACCEPTED = AbiConstants.MRCE_CM_ACCEPTED;
    public static final int CM_REJECTED = AbiConstants.MRCE_CM_REJECTED;
    public static final int CM_DEFAULT_BACKLOG = AbiConstants.MRCE_CM_DEFAULT_BACKLOG;
    public static final int CM_MAX_BACKLOG = AbiConstants.MRCE_CM_MAX_BACKLOG;
    /** {@code MRCE_MAX_ASYNC_EVENTS}: events queued per connection at most. */
    public static final int MAX_ASYNC_EVENTS = AbiConstants.MRCE_MAX_ASYNC_EVENTS;

    private static final int[] REQUEST_SIZE = new int[OP_MAX + 1];
    private static final int[] RESPONSE_SIZE = new int[OP_MAX + 1];
    private static final int[] RESPONSE_FDS = new int[OP_MAX + 1];
    private static final String[] NAME = new String[OP_MAX + 1];

    static {
        op(OP_HELLO, "HELLO", HelloReqDescriptor.SIZE, HelloRespDescriptor.SIZE, 2);
        op(OP_ALLOC_PD, "ALLOC_PD", 0, HandleRespDescriptor.SIZE, 0);
        op(OP_DEALLOC_PD, "DEALLOC_PD", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_REG_MR, "REG_MR", RegMrReqDescriptor.SIZE, RegMrRespDescriptor.SIZE, 0);
        op(OP_DEREG_MR, "DEREG_MR", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_CREATE_COMP_CHANNEL, "CREATE_COMP_CHANNEL", 0, HandleRespDescriptor.SIZE, 1);
        op(OP_DESTROY_COMP_CHANNEL, "DESTROY_COMP_CHANNEL", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_CREATE_CQ, "CREATE_CQ", CreateCqReqDescriptor.SIZE, CreateCqRespDescriptor.SIZE, 1);
        op(OP_DESTROY_CQ, "DESTROY_CQ", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_CREATE_QP, "CREATE_QP", CreateQpReqDescriptor.SIZE, CreateQpRespDescriptor.SIZE, 1);
        op(OP_MODIFY_QP, "MODIFY_QP", ModifyQpReqDescriptor.SIZE, 0, 0);
        op(OP_QUERY_QP, "QUERY_QP", HandleReqDescriptor.SIZE, QpAttrDescriptor.SIZE, 0);
        op(OP_DESTROY_QP, "DESTROY_QP", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_CREATE_SRQ, "CREATE_SRQ", CreateSrqReqDescriptor.SIZE, CreateSrqRespDescriptor.SIZE, 1);
        op(OP_MODIFY_SRQ, "MODIFY_SRQ", ModifySrqReqDescriptor.SIZE, 0, 0);
        op(OP_QUERY_SRQ, "QUERY_SRQ", HandleReqDescriptor.SIZE, SrqAttrDescriptor.SIZE, 0);
        op(OP_DESTROY_SRQ, "DESTROY_SRQ", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_GET_ASYNC_EVENT, "GET_ASYNC_EVENT", 0, AsyncEventDescriptor.SIZE, 0);
        op(OP_REREG_MR, "REREG_MR", ReregMrReqDescriptor.SIZE, RegMrRespDescriptor.SIZE, 0);
        op(OP_CM_LISTEN, "CM_LISTEN", CmListenReqDescriptor.SIZE, 0, 0);
        op(OP_CM_UNLISTEN, "CM_UNLISTEN", CmListenReqDescriptor.SIZE, 0, 0);
        op(OP_CM_CONNECT, "CM_CONNECT", CmConnectReqDescriptor.SIZE, CmConnectRespDescriptor.SIZE, 0);
        op(OP_CM_GET_REQUEST, "CM_GET_REQUEST", CmGetRequestReqDescriptor.SIZE, CmRequestDescriptor.SIZE, 0);
        op(OP_CM_ACCEPT, "CM_ACCEPT", CmAcceptReqDescriptor.SIZE, 0, 0);
        op(OP_CM_REJECT, "CM_REJECT", CmRejectReqDescriptor.SIZE, 0, 0);
        op(OP_CONTEXT_FD, "CONTEXT_FD", 0, 0, 1);
        op(OP_IMPORT_CONTEXT, "IMPORT_CONTEXT", ImportContextReqDescriptor.SIZE, 0, 0);
        op(OP_IMPORT_PD, "IMPORT_PD", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_UNIMPORT_PD, "UNIMPORT_PD", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_IMPORT_MR, "IMPORT_MR", ImportMrReqDescriptor.SIZE, ImportMrRespDescriptor.SIZE, 0);
        op(OP_UNIMPORT_MR, "UNIMPORT_MR", HandleReqDescriptor.SIZE, 0, 0);
        op(OP_CM_BIND, "CM_BIND", CmListenReqDescriptor.SIZE, 0, 0);
        op(OP_SHARE_MR, "SHARE_MR", ShareMrReqDescriptor.SIZE, 0, 0);
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
}
