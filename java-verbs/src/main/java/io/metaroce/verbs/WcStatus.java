package io.metaroce.verbs;

/**
 * {@code enum ibv_wc_status}: how a work request ended, alongside the {@code int} constants of
 * {@link WorkCompletion} ({@link WorkCompletion#wcStatus()}). Every value of rdma-core's
 * {@code verbs.h}, in its order. Immutable, thread-safe.
 */
public enum WcStatus {
    SUCCESS(Abi.IBV_WC_SUCCESS),
    LOC_LEN_ERR(Abi.IBV_WC_LOC_LEN_ERR),
    LOC_QP_OP_ERR(Abi.IBV_WC_LOC_QP_OP_ERR),
    LOC_EEC_OP_ERR(Abi.IBV_WC_LOC_EEC_OP_ERR),
    LOC_PROT_ERR(Abi.IBV_WC_LOC_PROT_ERR),
    WR_FLUSH_ERR(Abi.IBV_WC_WR_FLUSH_ERR),
    MW_BIND_ERR(Abi.IBV_WC_MW_BIND_ERR),
    BAD_RESP_ERR(Abi.IBV_WC_BAD_RESP_ERR),
    LOC_ACCESS_ERR(Abi.IBV_WC_LOC_ACCESS_ERR),
    REM_INV_REQ_ERR(Abi.IBV_WC_REM_INV_REQ_ERR),
    REM_ACCESS_ERR(Abi.IBV_WC_REM_ACCESS_ERR),
    REM_OP_ERR(Abi.IBV_WC_REM_OP_ERR),
    RETRY_EXC_ERR(Abi.IBV_WC_RETRY_EXC_ERR),
    RNR_RETRY_EXC_ERR(Abi.IBV_WC_RNR_RETRY_EXC_ERR),
    LOC_RDD_VIOL_ERR(Abi.IBV_WC_LOC_RDD_VIOL_ERR),
    REM_INV_RD_REQ_ERR(Abi.IBV_WC_REM_INV_RD_REQ_ERR),
    REM_ABORT_ERR(Abi.IBV_WC_REM_ABORT_ERR),
    INV_EECN_ERR(Abi.IBV_WC_INV_EECN_ERR),
    INV_EEC_STATE_ERR(Abi.IBV_WC_INV_EEC_STATE_ERR),
    FATAL_ERR(Abi.IBV_WC_FATAL_ERR),
    RESP_TIMEOUT_ERR(Abi.IBV_WC_RESP_TIMEOUT_ERR),
    GENERAL_ERR(Abi.IBV_WC_GENERAL_ERR),
    TM_ERR(Abi.IBV_WC_TM_ERR),
    TM_RNDV_INCOMPLETE(Abi.IBV_WC_TM_RNDV_INCOMPLETE);

    private static final WcStatus[] BY_VALUE = new WcStatus[24];

    static {
        for (WcStatus s : values()) {
            BY_VALUE[s.value] = s;
        }
    }

    private final int value;

    WcStatus(int value) {
        this.value = value;
    }

    /** The C value ({@code IBV_WC_*}). */
    public int value() {
        return value;
    }

    public boolean isSuccess() {
        return this == SUCCESS;
    }

    /** The status of C value {@code value}, or null for one this binding does not name. */
    public static WcStatus of(int value) {
        return value >= 0 && value < BY_VALUE.length ? BY_VALUE[value] : null;
    }
}
