package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RdmaRig.assertCanary;
import static io.metaroce.nic.transport.RdmaRig.bytes;
import static io.metaroce.nic.transport.RdmaRig.pattern;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Receives from a shared receive queue (two QPs on one SRQ), and a property test that mixes every
 * RC opcode over a lossy, duplicating ECMP fabric with a path dying mid-transfer.
 */
class SrqAndMixedOpsTest {

    @Test
    void twoQpsShareAnSrqAndTakeItsReceivesInMessageOrder() throws Exception {
        int perQp = 30;
        int slot = 512;
        Srq[] srq = new Srq[1];
        List<Integer> srqEvents = new ArrayList<>();
        RdmaRig.Config c = new RdmaRig.Config();
        c.qps = 2;
        c.loss = 0.1;
        c.dup = 0.05;
        c.seed = 61;
        c.setup = r -> {
            Qp b0 = r.engineQpB(0);
            MemorySegment map = r.arena.allocate(Srq.mapSize(64), 4096);
            srq[0] = new Srq(999, b0.pid, b0.pd, map, 64, 4);
            srq[0].asyncEvents = (type, element) -> srqEvents.add(type);
            r.engineQpB(0).srq = srq[0];
            r.engineQpB(1).srq = srq[0];
        };
        try (RdmaRig r = new RdmaRig(c)) {
            srq[0].arm(3);
            for (int k = 0; k < 2 * perQp; k++) {
                assertThat(r.b.post(
                                srq[0].ring,
                                7000 + k,
                                0,
                                0,
                                0,
                                new long[] {r.recvBuf.address() + (long) k * slot},
                                new int[] {slot},
                                r.recvMr[1]))
                        .isTrue();
            }
            for (int i = 0; i < perQp; i++) {
                for (int q = 0; q < 2; q++) {
                    byte[] m = message(q, i);
                    long off = (long) (q * perQp + i) * slot;
                    MemorySegment.copy(MemorySegment.ofArray(m), 0, r.local, off, m.length);
                    assertThat(r.postSend(
                                    q,
                                    i,
                                    Ibv.WR_SEND,
                                    Ibv.SEND_SIGNALED,
                                    0,
                                    new long[] {r.localAddr(off)},
                                    new int[] {m.length},
                                    r.localMr[1],
                                    0,
                                    0,
                                    0,
                                    0))
                            .isTrue();
                }
            }
            r.runUntil(2 * perQp, 2 * perQp, 400_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsOnly(Ibv.WC_SUCCESS);
            assertThat(r.recvCqes).hasSize(2 * perQp);
            Set<Long> wrIds = new HashSet<>();
            int[] next = new int[2];
            for (TestNode.Cqe cq : r.recvCqes) {
                assertThat(cq.status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(wrIds.add(cq.wrId())).as("each SRQ receive once").isTrue();
                int q = cq.qpNum() == r.qpB[0].qpn() ? 0 : 1;
                assertThat(cq.qpNum()).isEqualTo(r.qpB[q].qpn());
                long off = (cq.wrId() - 7000) * slot;
                int i = r.recvBuf.get(ValueLayout.JAVA_BYTE, off + 1);
                assertThat(r.recvBuf.get(ValueLayout.JAVA_BYTE, off)).isEqualTo((byte) q);
                assertThat(i).as("QP %d completes in MSN order", q).isEqualTo(next[q]++);
                byte[] m = message(q, i);
                assertThat(cq.byteLen()).isEqualTo(m.length);
                assertThat(bytes(r.recvBuf, off, m.length)).isEqualTo(m);
                assertCanary(r.recvBuf, off + m.length, off + slot, "after message");
            }
            assertThat(srq[0].posted()).isZero();
            assertThat(srqEvents).containsExactly(Ibv.EVENT_SRQ_LIMIT_REACHED);
        }
    }

    private static byte[] message(int q, int i) {
        byte[] m = pattern(q * 1000 + i, 100 + i);
        m[0] = (byte) q;
        m[1] = (byte) i;
        return m;
    }

    @Test
    void anEmptySrqIsAnRnrUntilAReceiveIsPosted() throws Exception {
        Srq[] srq = new Srq[1];
        RdmaRig.Config c = new RdmaRig.Config();
        c.setup = r -> {
            Qp b0 = r.engineQpB(0);
            srq[0] = new Srq(5, b0.pid, b0.pd, r.arena.allocate(Srq.mapSize(8), 4096), 8, 1);
            b0.srq = srq[0];
        };
        try (RdmaRig r = new RdmaRig(c)) {
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(0)},
                            new int[] {10},
                            r.localMr[1],
                            0,
                            0,
                            0,
                            0))
                    .isTrue();
            r.idle(500, 20_000);
            assertThat(r.sendCqes).isEmpty();
            assertThat(r.b.engine.datapath().counters.rnrDrops).isPositive();
            assertThat(r.b.post(
                            srq[0].ring, 55, 0, 0, 0, new long[] {r.recvBuf.address()}, new int[] {64}, r.recvMr[1]))
                    .isTrue();
            r.runUntil(1, 1, 100_000);
            assertThat(r.recvCqes).extracting(TestNode.Cqe::wrId).containsExactly(55L);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_SUCCESS);
        }
    }

    static Stream<Arguments> mixes() {
        Random r = new Random(0x0b5e_2026L);
        return IntStream.range(0, 12)
                .mapToObj(i -> Arguments.of(
                        1 + r.nextInt(1_000_000),
                        2 + r.nextInt(6),
                        1 + r.nextInt(8),
                        r.nextDouble() * 0.08,
                        r.nextDouble() * 0.05,
                        r.nextInt(3) != 0));
    }

    /**
     * SEND, WRITE, WRITE_IMM, READ and FETCH_ADD interleaved at random over a multipath fabric:
     * every WRITE lands where addressed, every READ returns its source, every receive gets its
     * message in order, the counter ends at exactly the number of adds.
     */
    @ParameterizedTest(name = "seed={0} fabricPaths={1} qpPaths={2} loss={3} dup={4} death={5}")
    @MethodSource("mixes")
    void everyOpcodeMixedOverALossyMultipathFabric(
            long seed, int fabricPaths, int qpPaths, double loss, double dup, boolean death) throws Exception {
        int n = 200;
        int slot = 4096;
        long half = 1L << 20;
        Random rnd = new Random(seed);
        double[] perPath = new double[fabricPaths];
        for (int i = 0; i < fabricPaths; i++) {
            perPath[i] = loss * rnd.nextDouble() * 2;
        }
        RdmaRig.Config c = new RdmaRig.Config();
        c.seed = seed;
        c.dup = dup;
        c.mtu = Ibv.MTU_256 + (int) (seed % 5);
        c.localBytes = 2 * half;
        c.remoteBytes = 2 * half;
        c.recvBytes = (long) n * slot;
        c.wr = 256;
        c.transport = TransportSettings.SIMULATION.withPaths(qpPaths);
        c.setup = r -> {
            r.link.paths(fabricPaths, perPath);
            if (death) {
                r.link.killPath(rnd.nextInt(fabricPaths), r.clock.get() + 1_000_000 + rnd.nextInt(10_000_000));
            }
        };
        try (RdmaRig r = new RdmaRig(c)) {
            // remote: WRITE targets in the first half, READ sources (never written) in the second,
            // the FETCH_ADD counter just below it
            byte[] src = pattern(seed, (int) half);
            MemorySegment.copy(MemorySegment.ofArray(src), 0, r.remote, half, src.length);
            r.remote.set(ValueLayout.JAVA_LONG, half - 8, 0L);
            int[] kind = new int[n];
            int[] len = new int[n];
            int[] off = new int[n];
            byte[][] data = new byte[n][];
            int recvs = 0;
            int adds = 0;
            List<Integer> recvOrder = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                kind[i] = rnd.nextInt(5);
                len[i] = kind[i] == 4 ? 8 : rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(slot - 64);
                off[i] = rnd.nextInt(64);
                data[i] = pattern(seed + i, len[i]);
                long l = (long) i * slot;
                MemorySegment.copy(MemorySegment.ofArray(data[i]), 0, r.local, l, len[i]);
                long la = r.localAddr(l);
                long dst = r.localAddr(half + l); // READ and atomic results
                int lh = len[i] / 2;
                if (kind[i] == 0 || kind[i] == 2) {
                    assertThat(r.postRecv(0, i, (long) recvs * slot, slot)).isTrue();
                    recvOrder.add(i);
                    recvs++;
                }
                boolean ok = switch (kind[i]) {
                    case 0 ->
                        r.postSend(
                                0,
                                i,
                                Ibv.WR_SEND,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {la, la + lh},
                                new int[] {lh, len[i] - lh},
                                r.localMr[1],
                                0,
                                0,
                                0,
                                0);
                    case 1, 2 ->
                        r.postSend(
                                0,
                                i,
                                kind[i] == 1 ? Ibv.WR_RDMA_WRITE : Ibv.WR_RDMA_WRITE_WITH_IMM,
                                Ibv.SEND_SIGNALED,
                                i,
                                new long[] {la, la + lh},
                                new int[] {lh, len[i] - lh},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(l + off[i]),
                                0,
                                0);
                    case 3 ->
                        r.postSend(
                                0,
                                i,
                                Ibv.WR_RDMA_READ,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {dst, dst + lh},
                                new int[] {lh, len[i] - lh},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(half + readOffset(i)),
                                0,
                                0);
                    default ->
                        r.postSend(
                                0,
                                i,
                                Ibv.WR_ATOMIC_FETCH_AND_ADD,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {dst},
                                new int[] {8},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(half - 8),
                                1,
                                0);
                };
                assertThat(ok).as("SQ room").isTrue();
                if (kind[i] == 4) {
                    adds++;
                }
            }
            r.runUntil(n, recvs, 2_000_000);
            assertThat(r.sendCqes).hasSize(n);
            Set<Long> originals = new HashSet<>();
            for (int i = 0; i < n; i++) {
                TestNode.Cqe cq = r.sendCqes.get(i);
                assertThat(cq.wrId()).isEqualTo(i);
                assertThat(cq.status()).as("wr %d kind %d", i, kind[i]).isEqualTo(Ibv.WC_SUCCESS);
                long l = (long) i * slot;
                switch (kind[i]) {
                    case 1, 2 -> {
                        assertThat(bytes(r.remote, l + off[i], len[i]))
                                .as("write %d", i)
                                .isEqualTo(data[i]);
                        assertCanary(r.remote, l, l + off[i], "before write " + i);
                        assertCanary(r.remote, l + off[i] + len[i], l + slot, "after write " + i);
                    }
                    case 3 -> {
                        int s = readOffset(i);
                        assertThat(bytes(r.local, half + l, len[i]))
                                .as("read %d", i)
                                .isEqualTo(java.util.Arrays.copyOfRange(src, s, s + len[i]));
                        assertCanary(r.local, half + l + len[i], half + l + slot, "after read " + i);
                    }
                    case 4 -> originals.add(r.local.get(ValueLayout.JAVA_LONG, half + l));
                    default -> assertCanary(r.remote, l, l + slot, "no WRITE " + i);
                }
            }
            assertThat(r.remote.get(ValueLayout.JAVA_LONG, half - 8))
                    .as("adds executed once")
                    .isEqualTo(adds);
            assertThat(originals).hasSize(adds);
            assertThat(r.recvCqes).hasSize(recvs);
            for (int k = 0; k < recvs; k++) {
                TestNode.Cqe cq = r.recvCqes.get(k);
                int i = recvOrder.get(k);
                assertThat(cq.wrId()).as("receives in order").isEqualTo(i);
                assertThat(cq.status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(cq.byteLen()).isEqualTo(len[i]);
                if (kind[i] == 0) {
                    assertThat(cq.opcode()).isEqualTo(Ibv.WC_RECV);
                    assertThat(bytes(r.recvBuf, (long) k * slot, len[i])).isEqualTo(data[i]);
                } else {
                    assertThat(cq.opcode()).isEqualTo(Ibv.WC_RECV_RDMA_WITH_IMM);
                    assertThat(cq.imm()).isEqualTo(i);
                    assertCanary(r.recvBuf, (long) k * slot, (long) (k + 1) * slot, "WRITE_IMM receive");
                }
            }
            RdmaOperationsTest.assertNoStateLeft(r);
        }
    }

    private static int readOffset(int i) {
        return (int) ((long) i * 4099 % (1 << 19));
    }
}
