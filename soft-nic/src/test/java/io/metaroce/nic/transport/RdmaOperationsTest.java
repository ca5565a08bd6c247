package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RdmaRig.assertCanary;
import static io.metaroce.nic.transport.RdmaRig.bytes;
import static io.metaroce.nic.transport.RdmaRig.pattern;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * RDMA WRITE, WRITE with immediate, READ and atomics between two daemons over a lossy,
 * duplicating, reordering link (injected clock): what lands where (canaries around every
 * target), completions, and exactly-once atomics.
 */
class RdmaOperationsTest {
    static final int SLOT = 8192;

    static RdmaRig rig(long seed, double loss, double dup, long jitterNs, int mtu) throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.seed = seed;
        c.loss = loss;
        c.dup = dup;
        c.jitterNs = jitterNs;
        c.mtu = mtu;
        return new RdmaRig(c);
    }

    @ParameterizedTest(name = "seed={0} loss={1} dup={2} mtu={3}")
    @CsvSource({"1, 0, 0, 3", "2, 0.1, 0.05, 3", "3, 0.2, 0.1, 1", "4, 0.05, 0.2, 5"})
    void writesLandExactlyWhereAddressedAndWriteImmConsumesAReceive(long seed, double loss, double dup, int mtu)
            throws Exception {
        int n = 60;
        try (RdmaRig r = rig(seed, loss, dup, 100_000, mtu)) {
            Random rnd = new Random(seed);
            int payload = Ibv.mtuBytes(mtu);
            int[] len = new int[n];
            int[] dstOff = new int[n];
            byte[][] data = new byte[n][];
            int imms = 0;
            for (int i = 0; i < n; i++) {
                int kind = rnd.nextInt(8);
                len[i] = kind == 0
                        ? 0
                        : kind == 1
                                ? payload
                                : kind == 2 ? rnd.nextInt(64) + 1 : rnd.nextInt(Math.min(SLOT - 64, 5 * payload + 3));
                dstOff[i] = rnd.nextInt(32); // unaligned targets
                data[i] = pattern(seed * 1000 + i, len[i]);
                MemorySegment.copy(MemorySegment.ofArray(data[i]), 0, r.local, (long) i * SLOT, len[i]);
                boolean imm = i % 3 == 0;
                if (imm) {
                    assertThat(r.postRecv(0, 5000 + imms, 0, 0)).isTrue(); // a receive without SGEs
                    imms++;
                }
                int op = imm ? Ibv.WR_RDMA_WRITE_WITH_IMM : Ibv.WR_RDMA_WRITE;
                long dst = r.remoteAddr((long) i * SLOT + dstOff[i]);
                boolean ok;
                if (len[i] > 0 && len[i] <= 64 && i % 2 == 0) {
                    ok = r.postInline(
                            0, i, op, Ibv.SEND_SIGNALED, Integer.reverseBytes(i), data[i], r.remoteMr[2], dst);
                } else {
                    long s = r.localAddr((long) i * SLOT);
                    int third = len[i] / 3;
                    ok = r.postSend(
                            0,
                            i,
                            op,
                            Ibv.SEND_SIGNALED,
                            Integer.reverseBytes(i),
                            new long[] {s, s + third},
                            new int[] {third, len[i] - third},
                            r.localMr[1],
                            r.remoteMr[2],
                            dst,
                            0,
                            0);
                }
                assertThat(ok).isTrue();
            }
            r.runUntil(n, imms, 400_000);
            assertThat(r.sendCqes).hasSize(n);
            for (int i = 0; i < n; i++) {
                TestNode.Cqe c = r.sendCqes.get(i);
                assertThat(c.wrId()).isEqualTo(i);
                assertThat(c.status()).as("wr %d", i).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(c.opcode()).isEqualTo(Ibv.WC_RDMA_WRITE);
                long base = (long) i * SLOT;
                assertThat(bytes(r.remote, base + dstOff[i], len[i]))
                        .as("write %d", i)
                        .isEqualTo(data[i]);
                assertCanary(r.remote, base, base + dstOff[i], "before write " + i);
                assertCanary(r.remote, base + dstOff[i] + len[i], base + SLOT, "after write " + i);
            }
            assertThat(r.recvCqes).hasSize(imms);
            for (int k = 0, i = 0; i < n; i += 3, k++) {
                TestNode.Cqe c = r.recvCqes.get(k);
                assertThat(c.wrId()).as("receives in order").isEqualTo(5000 + k);
                assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(c.opcode()).isEqualTo(Ibv.WC_RECV_RDMA_WITH_IMM);
                assertThat(c.byteLen()).isEqualTo(len[i]);
                assertThat(c.wcFlags() & Ibv.WC_WITH_IMM).isNotZero();
                assertThat(c.imm()).isEqualTo(Integer.reverseBytes(i));
            }
            assertCanary(r.recvBuf, 0, 4096, "receive buffer of WRITE_IMM untouched");
            assertNoStateLeft(r);
        }
    }

    @Test
    void zeroLengthWriteImmIsAReceiveCompletionWithItsImmediate() throws Exception {
        try (RdmaRig r = rig(5, 0.1, 0.1, 0, Ibv.MTU_1024)) {
            for (int i = 0; i < 20; i++) {
                assertThat(r.postRecv(0, 100 + i, 0, 16)).isTrue();
                // NCCL's way: no SGE, no key, no address
                assertThat(r.postSend(
                                0,
                                i,
                                Ibv.WR_RDMA_WRITE_WITH_IMM,
                                Ibv.SEND_SIGNALED,
                                Integer.reverseBytes(0xc0de0000 + i),
                                new long[0],
                                new int[0],
                                0,
                                0,
                                0,
                                0,
                                0))
                        .isTrue();
            }
            r.runUntil(20, 20, 200_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsOnly(Ibv.WC_SUCCESS);
            assertThat(r.recvCqes).hasSize(20);
            for (int i = 0; i < 20; i++) {
                TestNode.Cqe c = r.recvCqes.get(i);
                assertThat(c.wrId()).isEqualTo(100 + i);
                assertThat(c.opcode()).isEqualTo(Ibv.WC_RECV_RDMA_WITH_IMM);
                assertThat(c.byteLen()).isZero();
                assertThat(c.imm()).isEqualTo(Integer.reverseBytes(0xc0de0000 + i));
                assertThat(c.wcFlags() & Ibv.WC_WITH_IMM).isNotZero();
            }
            assertCanary(r.remote, 0, 4096, "remote");
            assertCanary(r.recvBuf, 0, 4096, "receive buffers");
        }
    }

    @ParameterizedTest(name = "seed={0} loss={1} dup={2} mtu={3}")
    @CsvSource({"11, 0, 0, 3", "12, 0.1, 0.05, 3", "13, 0.25, 0.1, 2", "14, 0.05, 0.2, 1", "15, 0.1, 0.05, 5"})
    void readsLandOutOfOrderInTheirScatterLists(long seed, double loss, double dup, int mtu) throws Exception {
        int n = 40;
        RdmaRig.Config c = new RdmaRig.Config();
        c.seed = seed;
        c.loss = loss;
        c.dup = dup;
        c.jitterNs = 100_000;
        c.mtu = mtu;
        // the last READ is SEGMENT_PACKETS + 3 packets of Ibv.mtuBytes(mtu): room for it at 4096
        c.localBytes = mtu == Ibv.MTU_4096 ? 8L << 20 : 2L << 20;
        c.remoteBytes = c.localBytes;
        try (RdmaRig r = new RdmaRig(c)) {
            byte[] src = pattern(seed, (int) c.remoteBytes);
            MemorySegment.copy(MemorySegment.ofArray(src), 0, r.remote, 0, src.length);
            Random rnd = new Random(seed);
            int payload = Ibv.mtuBytes(mtu);
            int[] len = new int[n];
            int[] srcOff = new int[n];
            for (int i = 0; i < n; i++) {
                int kind = rnd.nextInt(8);
                len[i] = kind == 0 ? 0 : kind == 1 ? payload : rnd.nextInt(SLOT - 16);
                srcOff[i] = rnd.nextInt(1 << 20);
            }
            // one READ longer than a request segment (SEGMENT_PACKETS packets): several requests
            len[n - 1] = RcRequester.SEGMENT_PACKETS * payload + 3 * payload + 17;
            srcOff[n - 1] = 5;
            long[] dst = new long[n];
            long next = 0;
            for (int i = 0; i < n; i++) {
                dst[i] = next + 8;
                next = dst[i] + len[i] + 8;
                long d = r.localAddr(dst[i]);
                int part = len[i] / 2 + 1 > len[i] ? len[i] : len[i] / 2 + 1;
                assertThat(r.postSend(
                                0,
                                i,
                                Ibv.WR_RDMA_READ,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {d, d + part},
                                new int[] {part, len[i] - part},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(srcOff[i]),
                                0,
                                0))
                        .isTrue();
            }
            r.runUntil(n, 0, 1_000_000);
            assertThat(r.sendCqes).hasSize(n);
            long prevEnd = 0;
            for (int i = 0; i < n; i++) {
                TestNode.Cqe cq = r.sendCqes.get(i);
                assertThat(cq.wrId()).isEqualTo(i);
                assertThat(cq.status()).as("read %d", i).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(cq.opcode()).isEqualTo(Ibv.WC_RDMA_READ);
                assertThat(cq.byteLen()).isEqualTo(len[i]);
                byte[] want = java.util.Arrays.copyOfRange(src, srcOff[i], srcOff[i] + len[i]);
                assertThat(bytes(r.local, dst[i], len[i])).as("read %d", i).isEqualTo(want);
                assertCanary(r.local, prevEnd, dst[i], "before read " + i);
                prevEnd = dst[i] + len[i];
            }
            assertCanary(r.local, prevEnd, prevEnd + 4096, "after the last read");
            assertThat(bytes(r.remote, 0, src.length)).as("source untouched").isEqualTo(src);
            if (loss > 0) {
                assertThat(r.a.engine.datapath().counters.resendsTx)
                        .as("lost responses re-requested")
                        .isPositive();
            }
            assertNoStateLeft(r);
        }
    }

    @ParameterizedTest(name = "seed={0} loss={1} dup={2}")
    @CsvSource({"21, 0, 0", "22, 0.1, 0.1", "23, 0.3, 0.2", "24, 0.02, 0.4"})
    void fetchAndAddIsExecutedExactlyOnceUnderLossAndDuplication(long seed, double loss, double dup) throws Exception {
        int n = 300;
        try (RdmaRig r = rig(seed, loss, dup, 50_000, Ibv.MTU_1024)) {
            r.remote.set(ValueLayout.JAVA_LONG, 64, 0L);
            for (int i = 0; i < n; i++) {
                while (!r.postSend(
                        0,
                        i,
                        Ibv.WR_ATOMIC_FETCH_AND_ADD,
                        Ibv.SEND_SIGNALED,
                        0,
                        new long[] {r.localAddr(8L * i)},
                        new int[] {8},
                        r.localMr[1],
                        r.remoteMr[2],
                        r.remoteAddr(64),
                        1,
                        0)) {
                    r.step(20_000);
                }
            }
            r.runUntil(n, 0, 1_000_000);
            assertThat(r.sendCqes).hasSize(n);
            Set<Long> originals = new HashSet<>();
            for (int i = 0; i < n; i++) {
                TestNode.Cqe c = r.sendCqes.get(i);
                assertThat(c.wrId()).isEqualTo(i);
                assertThat(c.status())
                        .as("wr %d %s / %s", i, r.a.engine.datapath().counters, r.b.engine.datapath().counters)
                        .isEqualTo(Ibv.WC_SUCCESS);
                assertThat(c.opcode()).isEqualTo(Ibv.WC_FETCH_ADD);
                assertThat(c.byteLen()).isEqualTo(8);
                originals.add(r.local.get(ValueLayout.JAVA_LONG, 8L * i));
            }
            assertThat(r.remote.get(ValueLayout.JAVA_LONG, 64))
                    .as("each add executed once")
                    .isEqualTo(n);
            assertThat(originals).as("each saw a distinct value").hasSize(n);
            assertThat(originals).allMatch(v -> v >= 0 && v < n);
            assertCanary(r.remote, 0, 64, "before the word");
            assertCanary(r.remote, 72, 4096, "after the word");
            assertCanary(r.local, 8L * n, 8L * n + 4096, "after the results");
            if (dup > 0 && loss > 0) {
                assertThat(r.b.engine.datapath().counters.resendsRx)
                        .as("duplicates answered from the cache")
                        .isPositive();
            }
            assertThat(r.b.engine.datapath().counters.atomicsExecuted).isEqualTo(n);
        }
    }

    @Test
    void compareAndSwapSwapsOnlyOnAMatchAndReturnsTheOriginal() throws Exception {
        try (RdmaRig r = rig(31, 0.1, 0.1, 50_000, Ibv.MTU_1024)) {
            r.remote.set(ValueLayout.JAVA_LONG, 0, 0L);
            int n = 100;
            for (int i = 0; i < n; i++) {
                // executed in posting order: CAS(i -> i + 1) always matches; every 10th expects a wrong value
                long compare = i % 10 == 9 ? -1 : i - i / 10;
                long swap = compare + 1;
                assertThat(r.postSend(
                                0,
                                i,
                                Ibv.WR_ATOMIC_CMP_AND_SWP,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {r.localAddr(8L * i)},
                                new int[] {8},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(0),
                                compare,
                                swap))
                        .isTrue();
            }
            r.runUntil(n, 0, 1_000_000);
            assertThat(r.sendCqes).hasSize(n);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::opcode).containsOnly(Ibv.WC_COMP_SWAP);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsOnly(Ibv.WC_SUCCESS);
            for (int i = 0; i < n; i++) {
                long expectOriginal = i - i / 10;
                assertThat(r.local.get(ValueLayout.JAVA_LONG, 8L * i))
                        .as("cas %d", i)
                        .isEqualTo(expectOriginal);
            }
            assertThat(r.remote.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(n - n / 10);
        }
    }

    @Test
    void aFencedWriteWaitsForTheEarlierReadAndAnUnfencedReadSeesAnEarlierWrite() throws Exception {
        try (RdmaRig r = rig(41, 0.15, 0.05, 50_000, Ibv.MTU_1024)) {
            int len = 3000;
            byte[] old = pattern(1, len);
            byte[] fresh = pattern(2, len);
            byte[] fresher = pattern(3, len);
            MemorySegment.copy(MemorySegment.ofArray(old), 0, r.remote, 0, len);
            MemorySegment.copy(MemorySegment.ofArray(fresh), 0, r.local, 0, len);
            MemorySegment.copy(MemorySegment.ofArray(fresher), 0, r.local, 4096, len);
            long[] l = {r.localAddr(0)};
            // 0: READ x, 1: WRITE x (fenced: after the READ completes), 2: READ x (after the WRITE)
            assertThat(r.postSend(
                            0,
                            0,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(16384)},
                            new int[] {len},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED | Ibv.SEND_FENCE,
                            0,
                            l,
                            new int[] {len},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            assertThat(r.postSend(
                            0,
                            2,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(32768)},
                            new int[] {len},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            // 3: WRITE x again (fenced, or READ 2 may see part of it), then 4: a READ right behind
            // it (no fence needed: a READ sees every WRITE before it)
            assertThat(r.postSend(
                            0,
                            3,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED | Ibv.SEND_FENCE,
                            0,
                            new long[] {r.localAddr(4096)},
                            new int[] {len},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            assertThat(r.postSend(
                            0,
                            4,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(49152)},
                            new int[] {len},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(0),
                            0,
                            0))
                    .isTrue();
            r.runUntil(5, 0, 500_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::status).containsOnly(Ibv.WC_SUCCESS);
            assertThat(bytes(r.local, 16384, len))
                    .as("the fenced WRITE came after the READ")
                    .isEqualTo(old);
            assertThat(bytes(r.local, 32768, len))
                    .as("a READ sees the WRITE before it")
                    .isEqualTo(fresh);
            assertThat(bytes(r.local, 49152, len))
                    .as("a READ sees the WRITE before it")
                    .isEqualTo(fresher);
            assertThat(bytes(r.remote, 0, len)).isEqualTo(fresher);
        }
    }

    @Test
    void unsignaledRequestsCompleteSilentlyAndSgeListsGatherAndScatter() throws Exception {
        try (RdmaRig r = rig(51, 0.1, 0, 0, Ibv.MTU_512)) {
            byte[] a = pattern(7, 700);
            MemorySegment.copy(MemorySegment.ofArray(a), 0, r.local, 0, 700);
            // a WRITE gathered from four pieces, unsignaled
            long s = r.localAddr(0);
            assertThat(r.postSend(
                            0,
                            1,
                            Ibv.WR_RDMA_WRITE,
                            0,
                            0,
                            new long[] {s, s + 1, s + 300, s + 301},
                            new int[] {1, 299, 1, 399},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(1000),
                            0,
                            0))
                    .isTrue();
            // a READ of it back, scattered into four pieces, signaled
            long d = r.localAddr(10_000);
            assertThat(r.postSend(
                            0,
                            2,
                            Ibv.WR_RDMA_READ,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {d, d + 100, d + 2000, d + 4000},
                            new int[] {100, 1, 599, 0},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(1000),
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 200_000);
            r.idle(200, 20_000);
            assertThat(r.sendCqes).extracting(TestNode.Cqe::wrId).containsExactly(2L);
            assertThat(bytes(r.remote, 1000, 700)).isEqualTo(a);
            byte[] got = new byte[700];
            MemorySegment g = MemorySegment.ofArray(got);
            MemorySegment.copy(r.local, 10_000, g, 0, 100);
            MemorySegment.copy(r.local, 10_100, g, 100, 1);
            MemorySegment.copy(r.local, 12_000, g, 101, 599);
            assertThat(got).isEqualTo(a);
            assertCanary(r.local, 10_101, 12_000, "between SGEs");
            assertCanary(r.local, 12_599, 16_000, "after the last SGE");
        }
    }

    static void assertNoStateLeft(RdmaRig r) {
        for (int i = 0; i < r.qpA.length; i++) {
            assertThat(r.engineQpA(i).requester.outstanding())
                    .as("send WRs left")
                    .isZero();
            assertThat(r.engineQpA(i).requester.unacknowledged())
                    .as("unacknowledged")
                    .isZero();
            assertThat(r.engineQpA(i).requester.activeTrackers())
                    .as("READ/atomic trackers")
                    .isZero();
            assertThat(r.engineQpB(i).responder.placedAboveCumulative())
                    .as("placement state")
                    .isZero();
        }
    }

    /** Helper for error tests: completions of A after stepping until {@code n} came (or time ran out). */
    static List<TestNode.Cqe> sends(RdmaRig r, int n) {
        r.runUntil(n, 0, 300_000);
        return new ArrayList<>(r.sendCqes);
    }
}
