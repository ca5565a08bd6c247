package io.metaroce.nic.verbs;

import static io.metaroce.nic.verbs.QpStateMachine.EINVAL;
import static io.metaroce.nic.verbs.QpStateMachine.OK;
import static io.metaroce.nic.verbs.QpStateMachine.validate;
import static io.metaroce.nic.verbs.Verbs.*;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QpStateMachineTest {

    // The masks ibv_rc_pingpong (rdma-core libibverbs/examples) uses, i.e. the minimal RC ones.
    private static final int RC_INIT = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    private static final int RC_RTR = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    private static final int RC_RTS = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC;
    private static final int[] ALL_ATTRS = {
        IBV_QP_CUR_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT,
        IBV_QP_QKEY, IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
        IBV_QP_RQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_ALT_PATH, IBV_QP_MIN_RNR_TIMER, IBV_QP_SQ_PSN,
        IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_PATH_MIG_STATE, IBV_QP_CAP, IBV_QP_DEST_QPN, IBV_QP_RATE_LIMIT
    };

    private static int to(int qpType, int from, int to, int mask) {
        return validate(qpType, from, IBV_QP_STATE | mask, to, from);
    }

    @Test
    void rcWalksThePingpongPathWithMinimalMasks() {
        assertThat(to(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT)).isEqualTo(OK);
        assertThat(to(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR)).isEqualTo(OK);
        assertThat(to(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS)).isEqualTo(OK);
    }

    @Test
    void everyLegalRcTransitionWithItsMinimalMask() {
        int[][] legal = {
            {IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT},
            {IBV_QPS_INIT, IBV_QPS_INIT, 0},
            {IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR},
            {IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS},
            {IBV_QPS_RTS, IBV_QPS_RTS, 0},
            {IBV_QPS_RTS, IBV_QPS_SQD, 0},
            {IBV_QPS_SQD, IBV_QPS_SQD, 0},
            {IBV_QPS_SQD, IBV_QPS_RTS, 0},
        };
        for (int[] t : legal) {
            assertThat(to(IBV_QPT_RC, t[0], t[1], t[2])).as("%d->%d", t[0], t[1]).isEqualTo(OK);
            assertThat(QpStateMachine.requiredMask(IBV_QPT_RC, t[0], t[1])).isEqualTo(t[2]);
        }
        for (int from = IBV_QPS_RESET; from <= IBV_QPS_ERR; from++) {
            assertThat(to(IBV_QPT_RC, from, IBV_QPS_RESET, 0)).as("%d->RESET", from).isEqualTo(OK);
            assertThat(to(IBV_QPT_RC, from, IBV_QPS_ERR, 0)).as("%d->ERR", from).isEqualTo(OK);
        }
    }

    @Test
    void everyMissingRequiredAttributeIsRejected() {
        int[][] cases = {
            {IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT},
            {IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR},
            {IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS},
        };
        for (int[] c : cases) {
            for (int bit : ALL_ATTRS) {
                if ((c[2] & bit) != 0) {
                    assertThat(to(IBV_QPT_RC, c[0], c[1], c[2] & ~bit))
                            .as("%d->%d without 0x%x", c[0], c[1], bit).isEqualTo(EINVAL);
                }
            }
        }
    }

    @Test
    void optionalAttributesAreAcceptedAndOthersRejected() {
        assertThat(to(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
                .isEqualTo(OK);
        assertThat(to(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS | IBV_QP_MIN_RNR_TIMER | IBV_QP_CUR_STATE))
                .isEqualTo(OK);
        assertThat(to(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_EN_SQD_ASYNC_NOTIFY)).isEqualTo(OK);
        // Every bit that is neither required nor optional turns a legal transition into EINVAL.
        for (int from = IBV_QPS_RESET; from <= IBV_QPS_ERR; from++) {
            for (int next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++) {
                if (!QpStateMachine.isTransition(IBV_QPT_RC, from, next)) {
                    continue;
                }
                int req = QpStateMachine.requiredMask(IBV_QPT_RC, from, next);
                int opt = QpStateMachine.optionalMask(IBV_QPT_RC, from, next);
                for (int bit : ALL_ATTRS) {
                    int expect = ((req | opt) & bit) != 0 ? OK : EINVAL;
                    assertThat(to(IBV_QPT_RC, from, next, req | bit))
                            .as("%d->%d with 0x%x", from, next, bit).isEqualTo(expect);
                }
            }
        }
        // QKEY is a UD attribute; ACCESS_FLAGS is not one.
        assertThat(to(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT | IBV_QP_QKEY)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR | IBV_QP_CAP)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_AV)).isEqualTo(EINVAL);
    }

    @Test
    void illegalTransitionsAreRejected() {
        int[][] illegal = {
            {IBV_QPS_RESET, IBV_QPS_RTR}, {IBV_QPS_RESET, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQD},
            {IBV_QPS_INIT, IBV_QPS_RTS}, {IBV_QPS_INIT, IBV_QPS_SQD}, {IBV_QPS_RTR, IBV_QPS_INIT},
            {IBV_QPS_RTR, IBV_QPS_RTR}, {IBV_QPS_RTR, IBV_QPS_SQD}, {IBV_QPS_RTS, IBV_QPS_INIT},
            {IBV_QPS_RTS, IBV_QPS_RTR}, {IBV_QPS_SQD, IBV_QPS_INIT}, {IBV_QPS_ERR, IBV_QPS_INIT},
            {IBV_QPS_ERR, IBV_QPS_RTS}, {IBV_QPS_SQE, IBV_QPS_RTS}, {IBV_QPS_RESET, IBV_QPS_SQE},
            {IBV_QPS_RTS, IBV_QPS_SQE},
        };
        for (int[] t : illegal) {
            for (int mask : new int[] {0, RC_INIT, RC_RTR, RC_RTS, RC_INIT | RC_RTR | RC_RTS}) {
                assertThat(to(IBV_QPT_RC, t[0], t[1], mask)).as("%d->%d", t[0], t[1]).isEqualTo(EINVAL);
            }
        }
        assertThat(to(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_UNKNOWN, 0)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_RC, IBV_QPS_RESET, -1, 0)).isEqualTo(EINVAL);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_UNKNOWN, IBV_QP_STATE, IBV_QPS_RESET, 0)).isEqualTo(EINVAL);
    }

    @Test
    void modifyWithoutStateKeepsTheStateAndAllowsOnlyItsOptionalAttributes() {
        // INIT->INIT: pkey/port/access may change.
        assertThat(validate(IBV_QPT_RC, IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS, 99, 0)).isEqualTo(OK);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_INIT, IBV_QP_AV, 99, 0)).isEqualTo(EINVAL);
        // RTS->RTS: min_rnr_timer may change, the SQ PSN may not.
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER, 0, 0)).isEqualTo(OK);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTS, IBV_QP_SQ_PSN, 0, 0)).isEqualTo(EINVAL);
        // RTR has no RTR->RTR transition; RESET and ERR accept an empty modify only.
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTR, IBV_QP_PATH_MTU, 0, 0)).isEqualTo(EINVAL);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RESET, 0, 0, 0)).isEqualTo(OK);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RESET, IBV_QP_PORT, 0, 0)).isEqualTo(EINVAL);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_ERR, IBV_QP_QKEY, 0, 0)).isEqualTo(EINVAL);
    }

    @Test
    void curStateMustMatchWhenGiven() {
        int mask = IBV_QP_STATE | RC_RTS | IBV_QP_CUR_STATE;
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTR, mask, IBV_QPS_RTS, IBV_QPS_RTR)).isEqualTo(OK);
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTR, mask, IBV_QPS_RTS, IBV_QPS_INIT)).isEqualTo(EINVAL);
        // Without the bit, the cur_qp_state field is ignored.
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RTR, IBV_QP_STATE | RC_RTS, IBV_QPS_RTS, IBV_QPS_ERR))
                .isEqualTo(OK);
        // CUR_STATE is not an attribute of RESET->INIT even when it matches.
        assertThat(validate(IBV_QPT_RC, IBV_QPS_RESET, IBV_QP_STATE | RC_INIT | IBV_QP_CUR_STATE, IBV_QPS_INIT,
                IBV_QPS_RESET)).isEqualTo(EINVAL);
    }

    @Test
    void udHasItsOwnMasks() {
        int udInit = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
        assertThat(to(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, udInit)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, udInit & ~IBV_QP_QKEY)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, 0)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_QKEY)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_AV)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, 0)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_QKEY)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_QKEY)).isEqualTo(OK);
    }

    @Test
    void ucNeedsNoRdmaReadOrRetryAttributes() {
        int ucRtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        assertThat(to(IBV_QPT_UC, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, ucRtr)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN)).isEqualTo(OK);
        assertThat(to(IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS)).isEqualTo(EINVAL);
        assertThat(to(IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_ACCESS_FLAGS)).isEqualTo(OK);
    }

    @Test
    void otherQpTypesAreRejected() {
        for (int type : new int[] {0, 1, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, IBV_QPT_DRIVER}) {
            assertThat(to(type, IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT)).isEqualTo(EINVAL);
            assertThat(to(type, IBV_QPS_RTS, IBV_QPS_ERR, 0)).isEqualTo(EINVAL);
        }
    }
}
