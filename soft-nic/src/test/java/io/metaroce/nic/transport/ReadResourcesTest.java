package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * Spec T-5.13: a responder answers max_dest_rd_atomic outstanding READs whatever re-requests it
 * has queued. B's read-job queue is filled with re-requests (RESEND) of a READ it answered, then a
 * new READ request arrives: it is queued and answered, not refused with NAK INVALID_REQUEST.
 */
class ReadResourcesTest {
    private static final int UNIT = 1024;
    private static final int LEN = 64 * UNIT;

    @Test
    void reRequestsLeaveRoomForTheReadsMaxDestRdAtomicAdmits() throws Exception {
        try (RdmaRig r = new RdmaRig(new RdmaRig.Config());
                Arena arena = Arena.ofConfined()) {
            Qp qa = r.engineQpA(0);
            Qp qb = r.engineQpB(0);
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {LEN},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 20_000);
            assertThat(r.sendCqes)
                    .singleElement()
                    .satisfies(c -> assertThat(c.status()).isZero());
            int readRsn = qb.responder.expectedPsn() - 1;

            Datapath dp = r.b.engine.datapath();
            long resendsBefore = dp.counters.resendsRx;
            MemorySegment f = arena.allocate(Wire.HEADER_SIZE + Wire.RETH_SIZE);
            // 40 re-requests of distinct single units, from the end down (none covers another):
            // more than the queue holds, and no step of B's engine serves any of them meanwhile.
            for (int k = 63; k >= 24; k--) {
                readRequest(r, f, qa, qb, Wire.FLAG_RESEND, 0, 0, readRsn, k * UNIT, UNIT);
            }
            assertThat(dp.counters.resendsRx - resendsBefore).isEqualTo(40);
            long naks = dp.counters.naksTx;
            // A new READ request (the next RSN, on path 0 at a PSN far ahead: a gap, so B ACKs at once).
            readRequest(r, f, qa, qb, 0, 0, 1_000, qb.responder.expectedPsn(), 0, UNIT);
            assertThat(dp.counters.naksTx - naks).as("NAKs for the new READ").isZero();
            assertThat(qb.state).isEqualTo(Ibv.QPS_RTS);
        }
    }

    /** Feeds B's engine a READ_REQ of bytes [offset, offset + n) of a LEN-byte READ from A. */
    private static void readRequest(
            RdmaRig r, MemorySegment f, Qp qa, Qp qb, int flags, int path, int psn, int rsn, int offset, int n) {
        Wire.header(f, Wire.OP_READ_REQ, flags, path, psn, rsn, qb.qpn, qa.qpn, qb.rxToken, 0, offset, LEN, n, 0, 0);
        Wire.putU32(f, Wire.OFF_RKEY, r.remoteMr[2]);
        Wire.putU32(f, Wire.OFF_RESP_UNIT, UNIT);
        Wire.putU64(f, Wire.OFF_VA, r.remoteAddr(0));
        int len = (int) f.byteSize();
        Wire.seal(new CRC32C(), f, f.asByteBuffer(), len);
        r.b.engine.onFrame(f, f.asByteBuffer(), len, RdmaRig.IP_A, 4793, 0);
    }
}
