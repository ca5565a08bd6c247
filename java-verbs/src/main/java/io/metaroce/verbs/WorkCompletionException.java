package io.metaroce.verbs;

/**
 * A work request completed with an error status ({@link WorkCompletion#check()}), e.g.
 * {@code "work request 7 (RDMA_WRITE on QP 0x000012) completed with status REM_ACCESS_ERR (10):
 * remote access error"}.
 *
 * <p>Immutable once thrown; safe to hand to another thread.
 */
public class WorkCompletionException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final long wrId;
    private final int status;
    private final int opcode;
    private final int qpNum;
    private final int vendorErr;

    WorkCompletionException(long wrId, int status, int opcode, int qpNum, int vendorErr) {
        super("work request " + wrId + " (" + WorkCompletion.opcodeName(opcode) + " on QP "
                + String.format("0x%06x", qpNum) + ") completed with status " + WorkCompletion.statusName(status)
                + " (" + status + "): " + WorkCompletion.statusString(status)
                + (vendorErr != 0 ? String.format(", vendor error 0x%x", vendorErr) : ""));
        this.wrId = wrId;
        this.status = status;
        this.opcode = opcode;
        this.qpNum = qpNum;
        this.vendorErr = vendorErr;
    }

    public long wrId() {
        return wrId;
    }

    /** The {@code enum ibv_wc_status} value, e.g. {@link WorkCompletion#REM_ACCESS_ERR}. */
    public int status() {
        return status;
    }

    /** The {@code enum ibv_wc_opcode} value (meaningful only for some statuses, as in C). */
    public int opcode() {
        return opcode;
    }

    public int qpNum() {
        return qpNum;
    }

    public int vendorErr() {
        return vendorErr;
    }
}
