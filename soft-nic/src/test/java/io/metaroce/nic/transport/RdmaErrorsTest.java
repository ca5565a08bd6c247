package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RdmaRig.assertCanary;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every error path of RC operations: remote access violations (the requester gets
 * IBV_WC_REM_ACCESS_ERR, then IBV_WC_WR_FLUSH_ERR for what follows; the responder QP goes to ERR
 * with IBV_EVENT_QP_ACCESS_ERR; nothing is written), invalid requests, RNR and retry exhaustion.
 */
class RdmaErrorsTest {

    enum Violation {
        BAD_RKEY,
        OUT_OF_BOUNDS,
        MR_LACKS_REMOTE_WRITE,
        MR_LACKS_REMOTE_READ,
        QP_LACKS_REMOTE_ATOMIC,
        OTHER_PD,
        DEREGISTERED
    }

    @ParameterizedTest
    @EnumSource(Violation.class)
    void anAccessViolationIsRemAccessErrThenFlushAndNothingIsWritten(Violation v) throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.loss = 0.05;
        c.seed = 100 + v.ordinal();
        if (v == Violation.QP_LACKS_REMOTE_ATOMIC) {
            c.qpAccess = Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;
        }
        try (RdmaRig r = new RdmaRig(c)) {
            List<Integer> events = new ArrayList<>();
            Qp b = r.engineQpB(0);
            b.asyncEvents = (type, element) -> events.add(type);
            int rkey = r.remoteMr[2];
            long target = r.remoteAddr(4096);
            int op = Ibv.WR_RDMA_WRITE;
            int len = 2000;
            switch (v) {
                case BAD_RKEY -> rkey ^= 0x100;
                case OUT_OF_BOUNDS -> target = r.remoteAddr(r.remote.byteSize() - 1000);
                case MR_LACKS_REMOTE_WRITE -> rkey = regOnB(r, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_READ, r.pdB);
                case MR_LACKS_REMOTE_READ -> {
                    rkey = regOnB(r, Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE, r.pdB);
                    op = Ibv.WR_RDMA_READ;
                }
                case QP_LACKS_REMOTE_ATOMIC -> {
                    op = Ibv.WR_ATOMIC_FETCH_AND_ADD;
                    len = 8;
                }
                case OTHER_PD -> rkey = regOnB(r, c.remoteAccess, r.b.allocPd());
                case DEREGISTERED -> {
                    rkey = regOnB(r, c.remoteAccess, r.pdB);
                    int handle = lastMrHandle;
                    assertThat(r.b.call(AbiConstants.MRCE_OP_DEREG_MR, TestNode.handleReq(handle))
                                    .status())
                            .isZero();
                }
                default -> throw new AssertionError();
            }
            // 0: a good WRITE, 1: the violation, 2: a good WRITE after it
            assertThat(r.postSend(
                            0,
                            0,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {1500},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            assertThat(r.postSend(
                            0,
                            1,
                            op,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(8192)},
                            new int[] {len},
                            r.localMr[1],
                            rkey,
                            target,
                            1,
                            0))
                    .isTrue();
            assertThat(r.postSend(
                            0,
                            2,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {1500},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(16384),
                            0,
                            0))
                    .isTrue();
            r.runUntil(3, 0, 300_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::wrId).containsExactly(0L, 1L, 2L);
            assertThat(r.sendCqes)
                    .extracting(TestNode.Cqe::status)
                    .containsExactly(Ibv.WC_SUCCESS, Ibv.WC_REM_ACCESS_ERR, Ibv.WC_WR_FLUSH_ERR);
            assertThat(r.a.queryQp(r.qpA[0].handle()).qpState).isEqualTo(Ibv.QPS_ERR);
            assertThat(r.b.queryQp(r.qpB[0].handle()).qpState).isEqualTo(Ibv.QPS_ERR);
            assertThat(events).containsExactly(Ibv.EVENT_QP_ACCESS_ERR);
            assertCanary(r.remote, 1500, r.remote.byteSize(), "nothing written past the good WRITE");
            assertCanary(r.local, 8192, 8192 + 2000, "nothing read back");
            // posted after the error: flushed too
            assertThat(r.postSend(
                            0,
                            9,
                            Ibv.WR_RDMA_WRITE,
                            0,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {1},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.idle(5, 10_000);
            assertThat(r.sendCqes).hasSize(4);
            assertThat(r.sendCqes.get(3).status()).isEqualTo(Ibv.WC_WR_FLUSH_ERR);
        }
    }

    private static int lastMrHandle;

    private static int regOnB(RdmaRig r, int access, int pd) {
        int[] mr = r.b.regMr(pd, r.remote, access);
        lastMrHandle = mr[0];
        return mr[2];
    }

    @Test
    void aMisalignedAtomicIsAnInvalidRequest() throws Exception {
        try (RdmaRig r = new RdmaRig(new RdmaRig.Config())) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_ATOMIC_CMP_AND_SWP,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {8},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(4),
                            0,
                            1))
                    .isTrue();
            r.runUntil(1, 0, 100_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_REM_INV_REQ_ERR);
            assertThat(r.remote.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0xa5a5a5a5a5a5a5a5L);
        }
    }

    @Test
    void anAtomicWithoutAnEightByteSgeIsALocalLengthError() throws Exception {
        try (RdmaRig r = new RdmaRig(new RdmaRig.Config())) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_ATOMIC_FETCH_AND_ADD,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {4},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            1,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 1000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_LEN_ERR);
        }
    }

    @Test
    void readsNeedMaxRdAtomicOnTheRequesterAndMaxDestRdAtomicOnTheResponder() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.maxRdAtomic = 0;
        try (RdmaRig r = new RdmaRig(c)) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {64},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 1000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_QP_OP_ERR);
        }
        c = new RdmaRig.Config();
        c.maxDestRdAtomic = 0;
        try (RdmaRig r = new RdmaRig(c)) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {64},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 100_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_REM_INV_REQ_ERR);
            assertCanary(r.local, 0, 64, "nothing read");
        }
    }

    @Test
    void rnrRetriesRunOutIntoRnrRetryExceededThenFlush() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.rnrRetry = 2;
        c.minRnrTimer = 14; // 1.28 ms
        try (RdmaRig r = new RdmaRig(c)) {
            for (int i = 0; i < 3; i++) {
                int op = i == 1 ? Ibv.WR_RDMA_WRITE_WITH_IMM : Ibv.WR_SEND;
                assertThat(r.postSend(
                                0,
                                i,
                                op,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {r.localAddr(0)},
                                new int[] {3000},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(0),
                                0,
                                0))
                        .isTrue();
            }
            r.runUntil(3, 0, 100_000);
            assertThat(r.sendCqes)
                    .extracting(TestNode.Cqe::status)
                    .containsExactly(Ibv.WC_RNR_RETRY_EXC_ERR, Ibv.WC_WR_FLUSH_ERR, Ibv.WC_WR_FLUSH_ERR);
            // three rounds: the first try and two retries, each counted once whatever its packets
            assertThat(r.b.engine.datapath().counters.rnrDrops).isGreaterThanOrEqualTo(3);
            assertThat(r.a.queryQp(r.qpA[0].handle()).qpState).isEqualTo(Ibv.QPS_ERR);
            assertThat(r.b.queryQp(r.qpB[0].handle()).qpState).isEqualTo(Ibv.QPS_RTS);
        }
    }

    @Test
    void rnrRetrySevenWaitsForeverUntilAReceiveIsPosted() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.rnrRetry = 7;
        try (RdmaRig r = new RdmaRig(c)) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_WRITE_WITH_IMM,
                            Ibv.SEND_SIGNALED,
                            7,
                            new long[] {r.localAddr(0)},
                            new int[] {100},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.idle(2000, 20_000);
            assertThat(r.sendCqes).isEmpty();
            assertThat(r.b.engine.datapath().counters.rnrDrops).isGreaterThan(10);
            assertThat(r.postRecv(0, 42, 0, 0)).isTrue();
            r.runUntil(1, 1, 100_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_SUCCESS);
            assertThat(r.recvCqes).extracting(TestNode.Cqe::wrId).containsExactly(42L);
        }
    }

    enum Op {
        WRITE,
        READ,
        ATOMIC
    }

    @Test
    void retryExceededComesNoSoonerThanTheLocalAckTimeoutsAllow() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.loss = 1.0;
        c.retryCnt = 3;
        c.timeout = 16; // 4.096 us * 2^16 = 268 ms, four of them: 1.07 s
        try (RdmaRig r = new RdmaRig(c)) {
            long start = r.clock.get();
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {8},
                            r.localMr[1],
                            0,
                            0,
                            0,
                            0))
                    .isTrue();
            for (int i = 0; i < 100_000 && r.sendCqes.isEmpty(); i++) {
                r.step(1_000_000);
            }
            long tookNs = r.clock.get() - start;
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_RETRY_EXC_ERR);
            assertThat(r.a.engine.datapath().counters.timeouts)
                    .as("our own timers retried sooner")
                    .isGreaterThan(3);
            assertThat(tookNs)
                    .as("failed after %d ms", tookNs / 1_000_000)
                    .isGreaterThanOrEqualTo(4 * (4096L << 16))
                    .isLessThan(4 * (4096L << 16) + 1_000_000_000L);
        }
    }

    @Test
    void aLocalAckTimeoutOfZeroNeverExhaustsTheRetries() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.loss = 1.0;
        c.retryCnt = 1;
        c.timeout = 0; // infinite
        try (RdmaRig r = new RdmaRig(c)) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {8},
                            r.localMr[1],
                            0,
                            0,
                            0,
                            0))
                    .isTrue();
            for (int i = 0; i < 10_000; i++) {
                r.step(1_000_000); // 10 s
            }
            assertThat(r.sendCqes).isEmpty();
            assertThat(r.a.engine.datapath().counters.timeouts)
                    .as("still retransmitting")
                    .isGreaterThan(10);
            assertThat(r.a.queryQp(r.qpA[0].handle()).qpState).isEqualTo(Ibv.QPS_RTS);
        }
    }

    @ParameterizedTest
    @EnumSource(Op.class)
    void aBlackHoledPeerEndsInRetryExceededThenFlush(Op op) throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.loss = 1.0;
        c.retryCnt = 3;
        try (RdmaRig r = new RdmaRig(c)) {
            int wrOp =
                    op == Op.WRITE ? Ibv.WR_RDMA_WRITE : op == Op.READ ? Ibv.WR_RDMA_READ : Ibv.WR_ATOMIC_FETCH_AND_ADD;
            for (int i = 0; i < 2; i++) {
                assertThat(r.postSend(
                                0,
                                i,
                                wrOp,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {r.localAddr(64L * i)},
                                new int[] {8},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(0),
                                1,
                                0))
                        .isTrue();
            }
            for (int i = 0; i < 100_000 && r.sendCqes.size() < 2; i++) {
                r.step(1_000_000);
            }
            assertThat(r.sendCqes)
                    .extracting(TestNode.Cqe::status)
                    .containsExactly(Ibv.WC_RETRY_EXC_ERR, Ibv.WC_WR_FLUSH_ERR);
            assertThat(r.a.queryQp(r.qpA[0].handle()).qpState).isEqualTo(Ibv.QPS_ERR);
        }
    }
}
