package io.metaroce.abi;

/** The #define constants of mrce_abi.h (names kept so the agreement test finds them). */
public final class AbiConstants {
    public static final int MRCE_ABI_VERSION = 3;
    public static final int MRCE_RING_MAGIC = 0x474e524d;
    public static final int MRCE_RING_VERSION = 1;
    public static final int MRCE_RING_KIND_SQ = 1;
    public static final int MRCE_RING_KIND_RQ = 2;
    public static final int MRCE_RING_KIND_CQ = 3;
    public static final int MRCE_RING_KIND_SRQ = 4;
    public static final int MRCE_RING_NEED_WAKEUP = 0x1;
    public static final int MRCE_HELLO_DOORBELL_PAGE = 0x1;
    public static final int MRCE_QP_INDEX_MASK = 0x3fff;
    public static final int MRCE_DB_PAGE_SIZE = 4096;
    public static final int MRCE_DB_SLEEPING_OFF = 0;
    public static final int MRCE_DB_SUMMARY_OFF = 64;
    public static final int MRCE_DB_SUMMARY_WORDS = 4;
    public static final int MRCE_DB_BITS_OFF = 128;
    public static final int MRCE_DB_BITS_WORDS = 256;
    public static final int MRCE_CQ_ARM_NEXT = 1;
    public static final int MRCE_CQ_ARM_SOLICITED = 2;
    public static final int MRCE_CACHE_LINE = 64;
    public static final int MRCE_RING_SLOTS_OFF = 256;
    public static final int MRCE_WQE_SIZE = 256;
    public static final int MRCE_WQE_DATA_OFF = 64;
    public static final int MRCE_WQE_DATA_SIZE = 192;
    public static final int MRCE_MAX_SGE = 12;
    public static final int MRCE_MAX_INLINE = 192;
    public static final int MRCE_CQE_SIZE = 64;
    public static final int MRCE_CTRL_MAX_FRAME = 4096;
    public static final String MRCE_SOCK_DIR = "/tmp/metaroce";
    public static final long MRCE_NO_HANDLE = 0xffffffffL;
    /** MRCE_NO_HANDLE as the int a payload getInt returns. */
    public static final int NO_HANDLE = 0xffffffff;

    public static final int MRCE_OP_HELLO = 1;
    public static final int MRCE_OP_ALLOC_PD = 2;
    public static final int MRCE_OP_DEALLOC_PD = 3;
    public static final int MRCE_OP_REG_MR = 4;
    public static final int MRCE_OP_DEREG_MR = 5;
    public static final int MRCE_OP_CREATE_COMP_CHANNEL = 6;
    public static final int MRCE_OP_DESTROY_COMP_CHANNEL = 7;
    public static final int MRCE_OP_CREATE_CQ = 8;
    public static final int MRCE_OP_DESTROY_CQ = 9;
    public static final int MRCE_OP_CREATE_QP = 10;
    public static final int MRCE_OP_MODIFY_QP = 11;
    public static final int MRCE_OP_QUERY_QP = 12;
    public static final int MRCE_OP_DESTROY_QP = 13;
    public static final int MRCE_OP_CREATE_SRQ = 14;
    public static final int MRCE_OP_MODIFY_SRQ = 15;
    public static final int MRCE_OP_QUERY_SRQ = 16;
    public static final int MRCE_OP_DESTROY_SRQ = 17;
    public static final int MRCE_OP_GET_ASYNC_EVENT = 18;
    public static final int MRCE_OP_REREG_MR = 19;
    public static final int MRCE_OP_CM_LISTEN = 20;
    public static final int MRCE_OP_CM_UNLISTEN = 21;
    public static final int MRCE_OP_CM_CONNECT = 22;
    public static final int MRCE_OP_CM_GET_REQUEST = 23;
    public static final int MRCE_OP_CM_ACCEPT = 24;
    public static final int MRCE_OP_CM_REJECT = 25;
    public static final int MRCE_OP_CONTEXT_FD = 26;
    public static final int MRCE_OP_IMPORT_CONTEXT = 27;
    public static final int MRCE_OP_IMPORT_PD = 28;
    public static final int MRCE_OP_UNIMPORT_PD = 29;
    public static final int MRCE_OP_IMPORT_MR = 30;
    public static final int MRCE_OP_UNIMPORT_MR = 31;
    public static final int MRCE_OP_CM_BIND = 32;
    public static final int MRCE_OP_SHARE_MR = 33;
    public static final int MRCE_OP_MAX = 33;
    /** "MCTX": the first word of a context memfd (struct mrce_context_token). */
    public static final int MRCE_CONTEXT_MAGIC = 0x5854434d;

    public static final int MRCE_CM_PRIVATE_DATA_MAX = 192;
    public static final int MRCE_CM_ACCEPTED = 0;
    public static final int MRCE_CM_REJECTED = 1;
    public static final int MRCE_CM_DEFAULT_BACKLOG = 64;
    public static final int MRCE_CM_MAX_BACKLOG = 1024;
    public static final int MRCE_MAX_ASYNC_EVENTS = 1024;

    private AbiConstants() {}
}
