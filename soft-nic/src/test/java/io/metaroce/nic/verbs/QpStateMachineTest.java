package io.metaroce.nic.verbs;

import static io.metaroce.nic.abi.Ibv.*;
import static io.metaroce.nic.verbs.QpStateMachine.EINVAL;
import static io.metaroce.nic.verbs.QpStateMachine.OK;
import static io.metaroce.nic.verbs.QpStateMachine.validate;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QpStateMachineTest {

    // The masks ibv_rc_pingpong (rdma-core libibverbs/examples) uses, i.e. the minimal RC ones.
    private static final int RC_INIT = QP_PKEY_INDEX | QP_PORT | QP_ACCESS_FLAGS;
    private static final int RC_RTR =
            QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN | QP_MAX_DEST_RD_ATOMIC | QP_MIN_RNR_TIMER;
    private static final int RC_RTS = QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY | QP_SQ_PSN | QP_MAX_QP_RD_ATOMIC;
    private static final int[] ALL_ATTRS = {
        QP_CUR_STATE,
        QP_EN_SQD_ASYNC_NOTIFY,
        QP_ACCESS_FLAGS,
        QP_PKEY_INDEX,
        QP_PORT,
        QP_QKEY,
        QP_AV,
        QP_PATH_MTU,
        QP_TIMEOUT,
        QP_RETRY_CNT,
        QP_RNR_RETRY,
        QP_RQ_PSN,
        QP_MAX_QP_RD_ATOMIC,
        QP_ALT_PATH,
        QP_MIN_RNR_TIMER,
        QP_SQ_PSN,
        QP_MAX_DEST_RD_ATOMIC,
        QP_PATH_MIG_STATE,
        QP_CAP,
        QP_DEST_QPN,
        QP_RATE_LIMIT
    };

    private static int to(int qpType, int from, int to, int mask) {
        return validate(qpType, from, QP_STATE | mask, to, from);
    }

    @Test
    void rcWalksThePingpongPathWithMinimalMasks() {
        assertThat(to(QPT_RC, QPS_RESET, QPS_INIT, RC_INIT)).isEqualTo(OK);
        assertThat(to(QPT_RC, QPS_INIT, QPS_RTR, RC_RTR)).isEqualTo(OK);
        assertThat(to(QPT_RC, QPS_RTR, QPS_RTS, RC_RTS)).isEqualTo(OK);
    }

    @Test
    void everyLegalRcTransitionWithItsMinimalMask() {
        int[][] legal = {
            {QPS_RESET, QPS_INIT, RC_INIT},
            {QPS_INIT, QPS_INIT, 0},
            {QPS_INIT, QPS_RTR, RC_RTR},
            {QPS_RTR, QPS_RTS, RC_RTS},
            {QPS_RTS, QPS_RTS, 0},
            {QPS_RTS, QPS_SQD, 0},
            {QPS_SQD, QPS_SQD, 0},
            {QPS_SQD, QPS_RTS, 0},
        };
        for (int[] t : legal) {
            assertThat(to(QPT_RC, t[0], t[1], t[2])).as("%d->%d", t[0], t[1]).isEqualTo(OK);
            assertThat(QpStateMachine.requiredMask(QPT_RC, t[0], t[1])).isEqualTo(t[2]);
        }
        for (int from = QPS_RESET; from <= QPS_ERR; from++) {
            assertThat(to(QPT_RC, from, QPS_RESET, 0)).as("%d->RESET", from).isEqualTo(OK);
            assertThat(to(QPT_RC, from, QPS_ERR, 0)).as("%d->ERR", from).isEqualTo(OK);
        }
    }

    @Test
    void everyMissingRequiredAttributeIsRejected() {
        int[][] cases = {
            {QPS_RESET, QPS_INIT, RC_INIT},
            {QPS_INIT, QPS_RTR, RC_RTR},
            {QPS_RTR, QPS_RTS, RC_RTS},
        };
        for (int[] c : cases) {
            for (int bit : ALL_ATTRS) {
                if ((c[2] & bit) != 0) {
                    assertThat(to(QPT_RC, c[0], c[1], c[2] & ~bit))
                            .as("%d->%d without 0x%x", c[0], c[1], bit)
                            .isEqualTo(EINVAL);
                }
            }
        }
    }

    @Test
    void optionalAttributesAreAcceptedAndOthersRejected() {
        assertThat(to(QPT_RC, QPS_INIT, QPS_RTR, RC_RTR | QP_PKEY_INDEX | QP_ACCESS_FLAGS))
                .isEqualTo(OK);
        assertThat(to(QPT_RC, QPS_RTR, QPS_RTS, RC_RTS | QP_MIN_RNR_TIMER | QP_CUR_STATE))
                .isEqualTo(OK);
        assertThat(to(QPT_RC, QPS_RTS, QPS_SQD, QP_EN_SQD_ASYNC_NOTIFY)).isEqualTo(OK);
        // Every bit that is neither required nor optional turns a legal transition into EINVAL.
        for (int from = QPS_RESET; from <= QPS_ERR; from++) {
            for (int next = QPS_RESET; next <= QPS_ERR; next++) {
                if (!QpStateMachine.isTransition(QPT_RC, from, next)) {
                    continue;
                }
                int req = QpStateMachine.requiredMask(QPT_RC, from, next);
                int opt = QpStateMachine.optionalMask(QPT_RC, from, next);
                for (int bit : ALL_ATTRS) {
                    int expect = ((req | opt) & bit) != 0 ? OK : EINVAL;
                    assertThat(to(QPT_RC, from, next, req | bit))
                            .as("%d->%d with 0x%x", from, next, bit)
                            .isEqualTo(expect);
                }
            }
        }
        // QKEY is a UD attribute; ACCESS_FLAGS is not one.
        assertThat(to(QPT_RC, QPS_RESET, QPS_INIT, RC_INIT | QP_QKEY)).isEqualTo(EINVAL);
        assertThat(to(QPT_RC, QPS_INIT, QPS_RTR, RC_RTR | QP_CAP)).isEqualTo(EINVAL);
        assertThat(to(QPT_RC, QPS_RTS, QPS_ERR, QP_AV)).isEqualTo(EINVAL);
    }

    @Test
    void illegalTransitionsAreRejected() {
        int[][] illegal = {
            {QPS_RESET, QPS_RTR}, {QPS_RESET, QPS_RTS}, {QPS_RESET, QPS_SQD},
            {QPS_INIT, QPS_RTS}, {QPS_INIT, QPS_SQD}, {QPS_RTR, QPS_INIT},
            {QPS_RTR, QPS_RTR}, {QPS_RTR, QPS_SQD}, {QPS_RTS, QPS_INIT},
            {QPS_RTS, QPS_RTR}, {QPS_SQD, QPS_INIT}, {QPS_ERR, QPS_INIT},
            {QPS_ERR, QPS_RTS}, {QPS_SQE, QPS_RTS}, {QPS_RESET, QPS_SQE},
            {QPS_RTS, QPS_SQE},
        };
        for (int[] t : illegal) {
            for (int mask : new int[] {0, RC_INIT, RC_RTR, RC_RTS, RC_INIT | RC_RTR | RC_RTS}) {
                assertThat(to(QPT_RC, t[0], t[1], mask))
                        .as("%d->%d", t[0], t[1])
                        .isEqualTo(EINVAL);
            }
        }
        assertThat(to(QPT_RC, QPS_RESET, QPS_UNKNOWN, 0)).isEqualTo(EINVAL);
        assertThat(to(QPT_RC, QPS_RESET, -1, 0)).isEqualTo(EINVAL);
        assertThat(validate(QPT_RC, QPS_UNKNOWN, QP_STATE, QPS_RESET, 0)).isEqualTo(EINVAL);
    }

    @Test
    void modifyWithoutStateKeepsTheStateAndAllowsOnlyItsOptionalAttributes() {
        // INIT->INIT: pkey/port/access may change.
        assertThat(validate(QPT_RC, QPS_INIT, QP_ACCESS_FLAGS, 99, 0)).isEqualTo(OK);
        assertThat(validate(QPT_RC, QPS_INIT, QP_AV, 99, 0)).isEqualTo(EINVAL);
        // RTS->RTS: min_rnr_timer may change, the SQ PSN may not.
        assertThat(validate(QPT_RC, QPS_RTS, QP_MIN_RNR_TIMER, 0, 0)).isEqualTo(OK);
        assertThat(validate(QPT_RC, QPS_RTS, QP_SQ_PSN, 0, 0)).isEqualTo(EINVAL);
        // RTR has no RTR->RTR transition; RESET and ERR accept an empty modify only.
        assertThat(validate(QPT_RC, QPS_RTR, QP_PATH_MTU, 0, 0)).isEqualTo(EINVAL);
        assertThat(validate(QPT_RC, QPS_RESET, 0, 0, 0)).isEqualTo(OK);
        assertThat(validate(QPT_RC, QPS_RESET, QP_PORT, 0, 0)).isEqualTo(EINVAL);
        assertThat(validate(QPT_RC, QPS_ERR, QP_QKEY, 0, 0)).isEqualTo(EINVAL);
    }

    @Test
    void curStateMustMatchWhenGiven() {
        int mask = QP_STATE | RC_RTS | QP_CUR_STATE;
        assertThat(validate(QPT_RC, QPS_RTR, mask, QPS_RTS, QPS_RTR)).isEqualTo(OK);
        assertThat(validate(QPT_RC, QPS_RTR, mask, QPS_RTS, QPS_INIT)).isEqualTo(EINVAL);
        // Without the bit, the cur_qp_state field is ignored.
        assertThat(validate(QPT_RC, QPS_RTR, QP_STATE | RC_RTS, QPS_RTS, QPS_ERR))
                .isEqualTo(OK);
        // CUR_STATE is not an attribute of RESET->INIT even when it matches.
        assertThat(validate(QPT_RC, QPS_RESET, QP_STATE | RC_INIT | QP_CUR_STATE, QPS_INIT, QPS_RESET))
                .isEqualTo(EINVAL);
    }

    @Test
    void udHasItsOwnMasks() {
        int udInit = QP_PKEY_INDEX | QP_PORT | QP_QKEY;
        assertThat(to(QPT_UD, QPS_RESET, QPS_INIT, udInit)).isEqualTo(OK);
        assertThat(to(QPT_UD, QPS_RESET, QPS_INIT, RC_INIT)).isEqualTo(EINVAL);
        assertThat(to(QPT_UD, QPS_RESET, QPS_INIT, udInit & ~QP_QKEY)).isEqualTo(EINVAL);
        assertThat(to(QPT_UD, QPS_INIT, QPS_RTR, 0)).isEqualTo(OK);
        assertThat(to(QPT_UD, QPS_INIT, QPS_RTR, QP_QKEY)).isEqualTo(OK);
        assertThat(to(QPT_UD, QPS_INIT, QPS_RTR, QP_AV)).isEqualTo(EINVAL);
        assertThat(to(QPT_UD, QPS_RTR, QPS_RTS, QP_SQ_PSN)).isEqualTo(OK);
        assertThat(to(QPT_UD, QPS_RTR, QPS_RTS, 0)).isEqualTo(EINVAL);
        assertThat(to(QPT_UD, QPS_RTR, QPS_RTS, RC_RTS)).isEqualTo(EINVAL);
        assertThat(to(QPT_UD, QPS_SQE, QPS_RTS, QP_QKEY)).isEqualTo(OK);
        assertThat(to(QPT_UD, QPS_RTS, QPS_RTS, QP_QKEY)).isEqualTo(OK);
    }

    @Test
    void ucNeedsNoRdmaReadOrRetryAttributes() {
        int ucRtr = QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN;
        assertThat(to(QPT_UC, QPS_RESET, QPS_INIT, RC_INIT)).isEqualTo(OK);
        assertThat(to(QPT_UC, QPS_INIT, QPS_RTR, ucRtr)).isEqualTo(OK);
        assertThat(to(QPT_UC, QPS_INIT, QPS_RTR, RC_RTR)).isEqualTo(EINVAL);
        assertThat(to(QPT_UC, QPS_RTR, QPS_RTS, QP_SQ_PSN)).isEqualTo(OK);
        assertThat(to(QPT_UC, QPS_RTR, QPS_RTS, RC_RTS)).isEqualTo(EINVAL);
        assertThat(to(QPT_UC, QPS_SQE, QPS_RTS, QP_ACCESS_FLAGS)).isEqualTo(OK);
    }

    @Test
    void otherQpTypesAreRejected() {
        for (int type : new int[] {0, 1, QPT_RAW_PACKET, QPT_XRC_SEND, QPT_XRC_RECV, QPT_DRIVER}) {
            assertThat(to(type, QPS_RESET, QPS_INIT, RC_INIT)).isEqualTo(EINVAL);
            assertThat(to(type, QPS_RTS, QPS_ERR, 0)).isEqualTo(EINVAL);
        }
    }
}
