package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * What the builders write into native memory, field by field at the offsets {@link Abi} holds
 * (themselves checked against verbs.h by {@link LayoutAgreementTest}); and what the completion
 * flyweights read. No device needed.
 */
class WorkRequestLayoutTest {

    @Test
    void sendBuildersWriteEveryOpcodeAndItsFields() {
        try (SendWorkRequest wr = new SendWorkRequest(3)) {
            MemorySegment s = wr.segment();
            wr.wrId(0x1122334455667788L)
                    .send()
                    .addSge(0x1000, 64, 7)
                    .addSge(0x2000, 32, 8)
                    .signaled(true)
                    .inline(true);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_ID)).isEqualTo(0x1122334455667788L);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_SEND);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_NUM_SGE)).isEqualTo(2);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_SEND_FLAGS)).isEqualTo(Abi.IBV_SEND_SIGNALED | Abi.IBV_SEND_INLINE);
            MemorySegment sg = s.get(ADDRESS, Abi.SEND_WR_SG_LIST).reinterpret(3 * Abi.SGE_SIZE);
            assertThat(sg.get(JAVA_LONG, Abi.SGE_SIZE + Abi.SGE_ADDR)).isEqualTo(0x2000);
            assertThat(sg.get(JAVA_INT, Abi.SGE_SIZE + Abi.SGE_LENGTH)).isEqualTo(32);
            assertThat(sg.get(JAVA_INT, Abi.SGE_SIZE + Abi.SGE_LKEY)).isEqualTo(8);
            assertThat(s.get(ADDRESS, Abi.SEND_WR_NEXT).address()).isZero();

            wr.sendWithImm(0xabcdef01);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_SEND_WITH_IMM);
            // __be32 imm_data: the bytes in network order, as htonl(0xabcdef01) in C
            assertThat(s.asSlice(Abi.SEND_WR_IMM_DATA, 4).toArray(JAVA_BYTE))
                    .containsExactly((byte) 0xab, (byte) 0xcd, (byte) 0xef, (byte) 0x01);
            assertThat(wr.immData()).isEqualTo(0xabcdef01);

            wr.rdmaWrite(0xdead_0000L, 0x42);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_RDMA_WRITE);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_RDMA_REMOTE_ADDR)).isEqualTo(0xdead_0000L);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_WR_RDMA_RKEY)).isEqualTo(0x42);

            wr.rdmaWriteWithImm(0xbeef_0000L, 0x43, 99);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_RDMA_WRITE_WITH_IMM);
            assertThat(s.asSlice(Abi.SEND_WR_IMM_DATA, 4).toArray(JAVA_BYTE)).containsExactly(0, 0, 0, 99);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_WR_RDMA_RKEY)).isEqualTo(0x43);

            wr.rdmaRead(0xcafe_0000L, 0x44);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_RDMA_READ);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_RDMA_REMOTE_ADDR)).isEqualTo(0xcafe_0000L);

            wr.compareAndSwap(0x8000L, 0x45, 5, 6);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_ATOMIC_CMP_AND_SWP);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_REMOTE_ADDR)).isEqualTo(0x8000L);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_WR_ATOMIC_RKEY)).isEqualTo(0x45);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_COMPARE_ADD)).isEqualTo(5);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_SWAP)).isEqualTo(6);

            wr.fetchAndAdd(0x9000L, 0x46, 17);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_OPCODE)).isEqualTo(Abi.IBV_WR_ATOMIC_FETCH_AND_ADD);
            assertThat(s.get(JAVA_LONG, Abi.SEND_WR_WR_ATOMIC_COMPARE_ADD)).isEqualTo(17);

            wr.signaled(false).inline(false).fence(true).solicited(true);
            assertThat(s.get(JAVA_INT, Abi.SEND_WR_SEND_FLAGS)).isEqualTo(Abi.IBV_SEND_FENCE | Abi.IBV_SEND_SOLICITED);
        }
    }

    @Test
    void chainsAndSgeBounds() {
        try (SendWorkRequest a = new SendWorkRequest(1);
                SendWorkRequest b = new SendWorkRequest(1);
                RecvWorkRequest r = new RecvWorkRequest(1);
                RecvWorkRequest r2 = new RecvWorkRequest(0)) {
            a.next(b);
            assertThat(a.segment().get(ADDRESS, Abi.SEND_WR_NEXT).address())
                    .isEqualTo(b.segment().address());
            a.addSge(1, 1, 1);
            assertThatThrownBy(() -> a.addSge(2, 2, 2))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("room for 1 SGEs");
            r.wrId(5).addSge(0x3000, 128, 9).next(r2);
            MemorySegment s = r.segment();
            assertThat(s.get(JAVA_LONG, Abi.RECV_WR_WR_ID)).isEqualTo(5);
            assertThat(s.get(JAVA_INT, Abi.RECV_WR_NUM_SGE)).isEqualTo(1);
            assertThat(s.get(ADDRESS, Abi.RECV_WR_NEXT).address())
                    .isEqualTo(r2.segment().address());
            assertThat(s.get(ADDRESS, Abi.RECV_WR_SG_LIST).reinterpret(16).get(JAVA_INT, Abi.SGE_LENGTH))
                    .isEqualTo(128);
        }
    }

    @Test
    void closeTwiceIsANoOp() {
        SendWorkRequest wr = new SendWorkRequest(1);
        wr.close();
        wr.close();
        WorkCompletions wcs = new WorkCompletions(2);
        wcs.close();
        wcs.close();
    }

    @Test
    void completionFlyweightsReadTheNativeArray() {
        try (WorkCompletions wcs = new WorkCompletions(4)) {
            MemorySegment s = wcs.segment();
            long at = 2 * Abi.WC_SIZE;
            s.set(JAVA_LONG, at + Abi.WC_WR_ID, 77);
            s.set(JAVA_INT, at + Abi.WC_STATUS, Abi.IBV_WC_REM_ACCESS_ERR);
            s.set(JAVA_INT, at + Abi.WC_OPCODE, Abi.IBV_WC_RDMA_WRITE);
            s.set(JAVA_INT, at + Abi.WC_BYTE_LEN, 4096);
            // what the provider leaves in __be32 imm_data for a C sender's htonl(0x12345678)
            s.asSlice(at + Abi.WC_IMM_DATA, 4).copyFrom(MemorySegment.ofArray(new byte[] {0x12, 0x34, 0x56, 0x78}));
            s.set(JAVA_INT, at + Abi.WC_QP_NUM, 0x12);
            s.set(JAVA_INT, at + Abi.WC_SRC_QP, 0x34);
            s.set(JAVA_INT, at + Abi.WC_WC_FLAGS, Abi.IBV_WC_WITH_IMM);
            s.set(JAVA_SHORT, at + Abi.WC_SLID, (short) 0xbeef);
            s.set(JAVA_BYTE, at + Abi.WC_SL, (byte) 3);
            WorkCompletion wc = wcs.get(2);
            assertThat(wcs.get(2)).isSameAs(wc); // a flyweight per slot, reused
            assertThat(wc.wrId()).isEqualTo(77);
            assertThat(wc.isSuccess()).isFalse();
            assertThat(wc.opcode()).isEqualTo(WorkCompletion.OP_RDMA_WRITE);
            assertThat(wc.byteLength()).isEqualTo(4096);
            assertThat(wc.hasImm()).isTrue();
            assertThat(wc.immData()).as("ntohl").isEqualTo(0x12345678);
            assertThat(wc.immDataRaw())
                    .isEqualTo(
                            java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.BIG_ENDIAN
                                    ? 0x12345678
                                    : 0x78563412);
            assertThat(wc.qpNum()).isEqualTo(0x12);
            assertThat(wc.srcQp()).isEqualTo(0x34);
            assertThat(wc.slid()).isEqualTo(0xbeef);
            assertThat(wc.sl()).isEqualTo(3);
            assertThatThrownBy(wc::check)
                    .isInstanceOf(WorkCompletionException.class)
                    .hasMessageContaining("work request 77")
                    .hasMessageContaining("RDMA_WRITE on QP 0x000012")
                    .hasMessageContaining("REM_ACCESS_ERR (10)");

            WorkCompletion.Snapshot snap = wc.snapshot();
            s.fill((byte) 0); // the next poll reuses the slot: the snapshot keeps its values
            assertThat(wc.wrId()).isZero();
            assertThat(snap.wrId()).isEqualTo(77);
            assertThat(snap.status()).isEqualTo(WorkCompletion.REM_ACCESS_ERR);
            assertThat(snap.isSuccess()).isFalse();
            assertThat(snap.opcode()).isEqualTo(WorkCompletion.OP_RDMA_WRITE);
            assertThat(snap.byteLength()).isEqualTo(4096);
            assertThat(snap.hasImm()).isTrue();
            assertThat(snap.immData()).isEqualTo(0x12345678);
            assertThat(snap.qpNum()).isEqualTo(0x12);
            assertThat(snap.srcQp()).isEqualTo(0x34);
            assertThat(snap.slid()).isEqualTo(0xbeef);
            assertThat(snap.sl()).isEqualTo(3);
            assertThatThrownBy(snap::check)
                    .isInstanceOf(WorkCompletionException.class)
                    .hasMessageContaining("work request 77")
                    .hasMessageContaining("REM_ACCESS_ERR (10)");
        }
    }

    @Test
    void aClosedCompletionArrayCannotBeReadOrPolledInto() {
        WorkCompletions wcs = new WorkCompletions(1);
        WorkCompletion wc = wcs.get(0);
        wcs.close();
        assertThatThrownBy(wc::wrId).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void addressVectorIsWrittenWhereVerbsHExpectsIt() {
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment s = arena.allocate(Abi.QP_ATTR_SIZE);
            Gid gid = Gid.of(java.net.InetAddress.ofLiteral("198.18.0.2"));
            new QueuePair.Attributes()
                    .state(QueuePair.State.RTR)
                    .pathMtu(Mtu.MTU_4096)
                    .destQpNum(0x2000)
                    .rqPsn(0xabc)
                    .maxDestRdAtomic(1)
                    .minRnrTimer(12)
                    .addressVector(AddressHandle.Attributes.global(gid, 0, 1))
                    .write(s);
            assertThat(s.get(JAVA_INT, Abi.QP_ATTR_QP_STATE)).isEqualTo(Abi.IBV_QPS_RTR);
            assertThat(s.get(JAVA_INT, Abi.QP_ATTR_PATH_MTU)).isEqualTo(Abi.IBV_MTU_4096);
            assertThat(s.get(JAVA_INT, Abi.QP_ATTR_DEST_QP_NUM)).isEqualTo(0x2000);
            assertThat(s.get(JAVA_INT, Abi.QP_ATTR_RQ_PSN)).isEqualTo(0xabc);
            assertThat(s.get(JAVA_BYTE, Abi.QP_ATTR_MIN_RNR_TIMER)).isEqualTo((byte) 12);
            long ah = Abi.QP_ATTR_AH_ATTR;
            assertThat(s.get(JAVA_BYTE, ah + Abi.AH_ATTR_IS_GLOBAL)).isEqualTo((byte) 1);
            assertThat(s.get(JAVA_BYTE, ah + Abi.AH_ATTR_PORT_NUM)).isEqualTo((byte) 1);
            assertThat(s.get(JAVA_BYTE, ah + Abi.AH_ATTR_GRH + Abi.GLOBAL_ROUTE_HOP_LIMIT))
                    .isEqualTo((byte) 1);
            assertThat(Gid.read(s, ah + Abi.AH_ATTR_GRH + Abi.GLOBAL_ROUTE_DGID))
                    .isEqualTo(gid);
        }
        int mask = new QueuePair.Attributes()
                .state(QueuePair.State.RTS)
                .sqPsn(1)
                .timeout(14)
                .retryCount(7)
                .rnrRetry(7)
                .maxRdAtomic(1)
                .mask();
        assertThat(mask)
                .isEqualTo(Abi.IBV_QP_STATE
                        | Abi.IBV_QP_SQ_PSN
                        | Abi.IBV_QP_TIMEOUT
                        | Abi.IBV_QP_RETRY_CNT
                        | Abi.IBV_QP_RNR_RETRY
                        | Abi.IBV_QP_MAX_QP_RD_ATOMIC);
    }
}
