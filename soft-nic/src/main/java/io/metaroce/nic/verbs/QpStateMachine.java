package io.metaroce.nic.verbs;

import static io.metaroce.nic.abi.Ibv.QPS_ERR;
import static io.metaroce.nic.abi.Ibv.QPS_INIT;
import static io.metaroce.nic.abi.Ibv.QPS_RESET;
import static io.metaroce.nic.abi.Ibv.QPS_RTR;
import static io.metaroce.nic.abi.Ibv.QPS_RTS;
import static io.metaroce.nic.abi.Ibv.QPS_SQD;
import static io.metaroce.nic.abi.Ibv.QPS_SQE;
import static io.metaroce.nic.abi.Ibv.QPT_RC;
import static io.metaroce.nic.abi.Ibv.QPT_UC;
import static io.metaroce.nic.abi.Ibv.QPT_UD;
import static io.metaroce.nic.abi.Ibv.QP_ACCESS_FLAGS;
import static io.metaroce.nic.abi.Ibv.QP_ALT_PATH;
import static io.metaroce.nic.abi.Ibv.QP_AV;
import static io.metaroce.nic.abi.Ibv.QP_CUR_STATE;
import static io.metaroce.nic.abi.Ibv.QP_DEST_QPN;
import static io.metaroce.nic.abi.Ibv.QP_EN_SQD_ASYNC_NOTIFY;
import static io.metaroce.nic.abi.Ibv.QP_MAX_DEST_RD_ATOMIC;
import static io.metaroce.nic.abi.Ibv.QP_MAX_QP_RD_ATOMIC;
import static io.metaroce.nic.abi.Ibv.QP_MIN_RNR_TIMER;
import static io.metaroce.nic.abi.Ibv.QP_PATH_MIG_STATE;
import static io.metaroce.nic.abi.Ibv.QP_PATH_MTU;
import static io.metaroce.nic.abi.Ibv.QP_PKEY_INDEX;
import static io.metaroce.nic.abi.Ibv.QP_PORT;
import static io.metaroce.nic.abi.Ibv.QP_QKEY;
import static io.metaroce.nic.abi.Ibv.QP_RETRY_CNT;
import static io.metaroce.nic.abi.Ibv.QP_RNR_RETRY;
import static io.metaroce.nic.abi.Ibv.QP_RQ_PSN;
import static io.metaroce.nic.abi.Ibv.QP_SQ_PSN;
import static io.metaroce.nic.abi.Ibv.QP_STATE;
import static io.metaroce.nic.abi.Ibv.QP_TIMEOUT;

import io.metaroce.abi.Errno;

/**
 * Checks an {@code ibv_modify_qp} request against the QP state transition table of the
 * InfiniBand spec (vol. 1, 11.2.4.2 / 10.3), as {@code ibv_modify_qp(3)} documents it and the
 * Linux kernel's {@code ib_modify_qp_is_ok} encodes it, for RC, UC and UD QPs.
 *
 * <pre>
 *            +--------------------- any state -> RESET, any state -> ERR ------------------+
 *            v                                                                               |
 *  RESET -> INIT -> RTR -> RTS <-> SQD          SQE -> RTS (UC, UD only: RC errors go to ERR)
 *            ^  \                 ^  \
 *            +--+ INIT->INIT      +--+ RTS->RTS, SQD->SQD
 * </pre>
 *
 * Each legal transition has, per QP type, attributes that must be in the mask (required) and
 * attributes that may be (optional); any other attribute bit is an error. A modify without
 * {@code IBV_QP_STATE} is the transition from the current state to itself. With
 * {@code IBV_QP_CUR_STATE} the given current state must equal the QP's. The SQE state is entered
 * by the NIC only, never by a modify. Stateless and allocation-free.
 */
public final class QpStateMachine {

    /** Linux errno values returned as positive ints, the verbs convention. */
    public static final int OK = 0;

    public static final int EINVAL = Errno.EINVAL;

    private static final int STATES = QPS_ERR + 1;
    private static final int TYPE_RC = 0;
    private static final int TYPE_UC = 1;
    private static final int TYPE_UD = 2;
    private static final int TYPES = 3;

    private static final boolean[] VALID = new boolean[STATES * STATES];
    private static final int[] REQUIRED = new int[STATES * STATES * TYPES];
    private static final int[] OPTIONAL = new int[STATES * STATES * TYPES];

    static {
        for (int from = 0; from < STATES; from++) {
            allow(from, QPS_RESET, 0, 0, 0, 0, 0, 0);
            allow(from, QPS_ERR, 0, 0, 0, 0, 0, 0);
        }
        int rtsOptUc = QP_CUR_STATE | QP_ACCESS_FLAGS | QP_ALT_PATH | QP_PATH_MIG_STATE;
        int rtsOptRc = rtsOptUc | QP_MIN_RNR_TIMER;
        int rtsOptUd = QP_CUR_STATE | QP_QKEY;

        allow(
                QPS_RESET,
                QPS_INIT,
                QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS,
                0,
                QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS,
                0,
                QP_PKEY_INDEX | QP_PORT | QP_QKEY,
                0);
        allow(
                QPS_INIT,
                QPS_INIT,
                0,
                QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS,
                0,
                QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS,
                0,
                QP_PKEY_INDEX | QP_PORT | QP_QKEY);
        allow(
                QPS_INIT,
                QPS_RTR,
                QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN | QP_MAX_DEST_RD_ATOMIC | QP_MIN_RNR_TIMER,
                QP_ALT_PATH | QP_ACCESS_FLAGS | QP_PKEY_INDEX,
                QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN,
                QP_ALT_PATH | QP_ACCESS_FLAGS | QP_PKEY_INDEX,
                0,
                QP_PKEY_INDEX | QP_QKEY);
        allow(
                QPS_RTR,
                QPS_RTS,
                QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY | QP_SQ_PSN | QP_MAX_QP_RD_ATOMIC,
                rtsOptRc,
                QP_SQ_PSN,
                rtsOptUc,
                QP_SQ_PSN,
                rtsOptUd);
        allow(QPS_RTS, QPS_RTS, 0, rtsOptRc, 0, rtsOptUc, 0, rtsOptUd);
        allow(QPS_RTS, QPS_SQD, 0, QP_EN_SQD_ASYNC_NOTIFY, 0, QP_EN_SQD_ASYNC_NOTIFY, 0, QP_EN_SQD_ASYNC_NOTIFY);
        allow(QPS_SQD, QPS_RTS, 0, rtsOptRc, 0, rtsOptUc, 0, rtsOptUd);
        allow(
                QPS_SQD,
                QPS_SQD,
                0,
                QP_PORT
                        | QP_AV
                        | QP_TIMEOUT
                        | QP_RETRY_CNT
                        | QP_RNR_RETRY
                        | QP_MAX_QP_RD_ATOMIC
                        | QP_MAX_DEST_RD_ATOMIC
                        | QP_ALT_PATH
                        | QP_ACCESS_FLAGS
                        | QP_PKEY_INDEX
                        | QP_MIN_RNR_TIMER
                        | QP_PATH_MIG_STATE,
                0,
                QP_AV | QP_ALT_PATH | QP_ACCESS_FLAGS | QP_PKEY_INDEX | QP_PATH_MIG_STATE,
                0,
                QP_PKEY_INDEX | QP_QKEY);
        // SQE -> RTS exists for UC and UD; an RC QP never enters SQE (its send errors go to ERR).
        VALID[QPS_SQE * STATES + QPS_RTS] = true;
        set(QPS_SQE, QPS_RTS, TYPE_UC, 0, QP_CUR_STATE | QP_ACCESS_FLAGS);
        set(QPS_SQE, QPS_RTS, TYPE_UD, 0, QP_CUR_STATE | QP_QKEY);
        REQUIRED[(QPS_SQE * STATES + QPS_RTS) * TYPES + TYPE_RC] = -1; // marks "not for RC"
    }

    private QpStateMachine() {}

    /**
     * Returns {@link #OK} when {@code ibv_modify_qp} may apply {@code attrMask} to a QP of
     * {@code qpType} in {@code currentState}, else {@link #EINVAL}. {@code newState} counts only
     * when {@code attrMask} has {@code IBV_QP_STATE}; {@code curStateAttr} only when it has
     * {@code IBV_QP_CUR_STATE}.
     */
    public static int validate(int qpType, int currentState, int attrMask, int newState, int curStateAttr) {
        int type = typeIndex(qpType);
        if (type < 0 || currentState < 0 || currentState >= STATES) {
            return EINVAL;
        }
        int next = (attrMask & QP_STATE) != 0 ? newState : currentState;
        if (next < 0 || next >= STATES) {
            return EINVAL;
        }
        if ((attrMask & QP_CUR_STATE) != 0 && curStateAttr != currentState) {
            return EINVAL;
        }
        int transition = currentState * STATES + next;
        if (!VALID[transition]) {
            return EINVAL;
        }
        int required = REQUIRED[transition * TYPES + type];
        int optional = OPTIONAL[transition * TYPES + type];
        if (required == -1) {
            return EINVAL;
        }
        if ((attrMask & required) != required) {
            return EINVAL;
        }
        if ((attrMask & ~(required | optional | QP_STATE)) != 0) {
            return EINVAL;
        }
        return OK;
    }

    /** True when {@code from -> to} appears in the table for {@code qpType} (ignoring masks). */
    public static boolean isTransition(int qpType, int from, int to) {
        int type = typeIndex(qpType);
        if (type < 0 || from < 0 || from >= STATES || to < 0 || to >= STATES) {
            return false;
        }
        int transition = from * STATES + to;
        return VALID[transition] && REQUIRED[transition * TYPES + type] != -1;
    }

    /** The attributes a transition requires (without IBV_QP_STATE), or -1 if it is not legal. */
    public static int requiredMask(int qpType, int from, int to) {
        if (!isTransition(qpType, from, to)) {
            return -1;
        }
        return REQUIRED[(from * STATES + to) * TYPES + typeIndex(qpType)];
    }

    /** The attributes a transition allows besides the required ones, or -1 if it is not legal. */
    public static int optionalMask(int qpType, int from, int to) {
        if (!isTransition(qpType, from, to)) {
            return -1;
        }
        return OPTIONAL[(from * STATES + to) * TYPES + typeIndex(qpType)];
    }

    private static int typeIndex(int qpType) {
        return switch (qpType) {
            case QPT_RC -> TYPE_RC;
            case QPT_UC -> TYPE_UC;
            case QPT_UD -> TYPE_UD;
            default -> -1;
        };
    }

    private static void allow(int from, int to, int reqRc, int optRc, int reqUc, int optUc, int reqUd, int optUd) {
        VALID[from * STATES + to] = true;
        set(from, to, TYPE_RC, reqRc, optRc);
        set(from, to, TYPE_UC, reqUc, optUc);
        set(from, to, TYPE_UD, reqUd, optUd);
    }

    private static void set(int from, int to, int type, int required, int optional) {
        REQUIRED[(from * STATES + to) * TYPES + type] = required;
        OPTIONAL[(from * STATES + to) * TYPES + type] = optional;
    }
}
