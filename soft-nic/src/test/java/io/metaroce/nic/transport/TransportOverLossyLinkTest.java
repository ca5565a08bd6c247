package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Two daemons (engine + verbs service each) over a deterministic in-memory link that loses,
 * duplicates and reorders frames, driven by hand with an injected clock. The applications are in
 * this process: every byte must land where it belongs, once, and completions come in order.
 */
class TransportOverLossyLinkTest {
    static final int IP_A = Inet4.parse("198.18.0.1");
    static final int IP_B = Inet4.parse("198.18.0.2");
    static final int SLOT = 8192;
    static final byte CANARY = (byte) 0xa5;

    /** Both hosts, connected QPs and registered buffers. */
    static final class Pair implements AutoCloseable {
        final AtomicLong clock = new AtomicLong(1_000_000_000L);
        final MemoryLink link;
        final TestNode a;
        final TestNode b;
        final Arena arena = Arena.ofShared();
        final MemorySegment sendBuf;
        final MemorySegment recvBuf;
        final int[] sendMr;
        final int[] recvMr;
        final TestNode.CqHandles cqA;
        final TestNode.CqHandles cqB;
        final TestNode.QpHandles qpA;
        final TestNode.QpHandles qpB;

        Pair(long seed, double loss, double dup, long jitterNs, int messages, int mtu, int recvSlot) throws Exception {
            this(seed, loss, dup, jitterNs, messages, mtu, recvSlot, null);
        }

        /** {@code setup} runs before the QPs connect: split the link into paths, set the transport. */
        Pair(
                long seed,
                double loss,
                double dup,
                long jitterNs,
                int messages,
                int mtu,
                int recvSlot,
                java.util.function.Consumer<Pair> setup)
                throws Exception {
            this(seed, loss, dup, jitterNs, messages, mtu, recvSlot, TransportSettings.SIMULATION, setup);
        }

        /** Both hosts' engines with {@code transport}. */
        Pair(
                long seed,
                double loss,
                double dup,
                long jitterNs,
                int messages,
                int mtu,
                int recvSlot,
                TransportSettings transport,
                java.util.function.Consumer<Pair> setup)
                throws Exception {
            link = new MemoryLink(seed, loss, dup, 10_000, jitterNs, clock::get);
            MemoryLink.End ea = link.end(IP_A, 4793);
            MemoryLink.End eb = link.end(IP_B, 4793);
            link.connect(ea, eb);
            a = new TestNode(ea, 4793, clock::get, transport);
            b = new TestNode(eb, 4793, clock::get, transport);
            assertThat(a.hello().status()).isZero();
            assertThat(b.hello().status()).isZero();
            int pdA = a.allocPd();
            int pdB = b.allocPd();
            sendBuf = arena.allocate((long) messages * SLOT, 64);
            recvBuf = arena.allocate((long) messages * recvSlot, 64);
            recvBuf.fill(CANARY);
            sendMr = a.regMr(pdA, sendBuf, 0);
            recvMr = b.regMr(pdB, recvBuf, Ibv.ACCESS_LOCAL_WRITE);
            cqA = a.createCq(256, AbiConstants.NO_HANDLE);
            cqB = b.createCq(256, AbiConstants.NO_HANDLE);
            qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 64, 4, 64);
            qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 64, 4, 64);
            if (setup != null) {
                setup.accept(this);
            }
            a.connect(qpA.handle(), IP_B, qpB.qpn(), 0x123456, 0xfffff0, mtu);
            b.connect(qpB.handle(), IP_A, qpA.qpn(), 0xfffff0, 0x123456, mtu);
        }

        void step(long ns) {
            clock.addAndGet(ns);
            a.pump();
            b.pump();
        }

        @Override
        public void close() {
            a.close();
            b.close();
            arena.close();
        }
    }

    record Outcome(List<TestNode.Cqe> sends, List<TestNode.Cqe> recvs, Pair pair, int[] lengths, byte[][] payloads) {}

    /** Sends {@code n} messages of random length (zero-length and immediate included) from A to B. */
    static Outcome run(long seed, double loss, double dup, long jitterNs, int n, int mtu) throws Exception {
        return run(seed, loss, dup, jitterNs, n, mtu, null, null);
    }

    /** {@code during} runs every step with the pair (e.g. to kill a path at some point). */
    static Outcome run(
            long seed,
            double loss,
            double dup,
            long jitterNs,
            int n,
            int mtu,
            java.util.function.Consumer<Pair> setup,
            java.util.function.Consumer<Pair> during)
            throws Exception {
        return run(seed, loss, dup, jitterNs, n, mtu, TransportSettings.SIMULATION, setup, during);
    }

    /** As above, both engines with {@code transport}. */
    static Outcome run(
            long seed,
            double loss,
            double dup,
            long jitterNs,
            int n,
            int mtu,
            TransportSettings transport,
            java.util.function.Consumer<Pair> setup,
            java.util.function.Consumer<Pair> during)
            throws Exception {
        Random rnd = new Random(seed);
        Pair p = new Pair(seed, loss, dup, jitterNs, n, mtu, SLOT, transport, setup);
        int payloadMax = Ibv.mtuBytes(mtu);
        int[] lengths = new int[n];
        byte[][] payloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            int kind = rnd.nextInt(10);
            lengths[i] = kind == 0 ? 0 : kind == 1 ? payloadMax : rnd.nextInt(Math.min(SLOT, payloadMax * 5 + 3));
            payloads[i] = new byte[lengths[i]];
            rnd.nextBytes(payloads[i]);
            MemorySegment.copy(MemorySegment.ofArray(payloads[i]), 0, p.sendBuf, (long) i * SLOT, lengths[i]);
        }
        List<TestNode.Cqe> sends = new ArrayList<>();
        List<TestNode.Cqe> recvs = new ArrayList<>();
        int posted = 0;
        int recvPosted = 0;
        long base = p.sendBuf.address();
        long rbase = p.recvBuf.address();
        for (int step = 0; step < 2_000_000 && (sends.size() < n || recvs.size() < n); step++) {
            while (recvPosted < n && recvPosted - recvs.size() < 60) {
                // receive buffer in two SGEs split at an odd place, to exercise the scatter
                long r = rbase + (long) recvPosted * SLOT;
                boolean ok = p.b.post(
                        p.qpB.rq(),
                        1000 + recvPosted,
                        0,
                        0,
                        0,
                        new long[] {r, r + 1001},
                        new int[] {1001, SLOT - 1001},
                        p.recvMr[1]);
                if (!ok) {
                    break;
                }
                recvPosted++;
            }
            while (posted < n && posted - sends.size() < 60) {
                long s = base + (long) posted * SLOT;
                int len = lengths[posted];
                int half = len / 3;
                boolean imm = posted % 3 == 0;
                boolean ok = p.a.post(
                        p.qpA.sq(),
                        posted,
                        imm ? Ibv.WR_SEND_WITH_IMM : Ibv.WR_SEND,
                        Ibv.SEND_SIGNALED,
                        imm ? Integer.reverseBytes(posted) : 0,
                        new long[] {s, s + half},
                        new int[] {half, len - half},
                        p.sendMr[1]);
                if (!ok) {
                    break;
                }
                posted++;
            }
            p.step(20_000);
            if (during != null) {
                during.accept(p);
            }
            sends.addAll(p.a.poll(p.cqA.ring()));
            recvs.addAll(p.b.poll(p.cqB.ring()));
        }
        return new Outcome(sends, recvs, p, lengths, payloads);
    }

    static void assertDelivered(Outcome o, int n) {
        assertThat(o.sends()).hasSize(n);
        assertThat(o.recvs()).hasSize(n);
        for (int i = 0; i < n; i++) {
            TestNode.Cqe s = o.sends().get(i);
            assertThat(s.wrId()).isEqualTo(i);
            assertThat(s.status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(s.opcode()).isEqualTo(Ibv.WC_SEND);
            TestNode.Cqe r = o.recvs().get(i);
            assertThat(r.wrId()).as("recv completions in order").isEqualTo(1000 + i);
            assertThat(r.status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(r.opcode()).isEqualTo(Ibv.WC_RECV);
            assertThat(r.byteLen()).isEqualTo(o.lengths()[i]);
            assertThat(r.qpNum()).isEqualTo(o.pair().qpB.qpn());
            assertThat(r.srcQp()).isEqualTo(o.pair().qpA.qpn());
            if (i % 3 == 0) {
                assertThat(r.wcFlags() & Ibv.WC_WITH_IMM).isNotZero();
                assertThat(r.imm()).isEqualTo(Integer.reverseBytes(i));
            } else {
                assertThat(r.wcFlags() & Ibv.WC_WITH_IMM).isZero();
            }
            MemorySegment slot = o.pair().recvBuf.asSlice((long) i * SLOT, SLOT);
            assertThat(slot.asSlice(0, o.lengths()[i]).toArray(ValueLayout.JAVA_BYTE))
                    .as("message %d payload", i)
                    .isEqualTo(o.payloads()[i]);
            for (long k = o.lengths()[i]; k < SLOT; k++) {
                if (slot.get(ValueLayout.JAVA_BYTE, k) != CANARY) {
                    throw new AssertionError("message " + i + " wrote past its end at " + k);
                }
            }
        }
    }

    @Test
    void cleanLinkDeliversEverything() throws Exception {
        Outcome o = run(1, 0, 0, 0, 300, Ibv.MTU_1024);
        try {
            assertDelivered(o, 300);
            assertThat(o.pair().a.engine.datapath().counters.dataRetransmits)
                    .as("%s", o.pair().a.engine.datapath().counters)
                    .isZero();
        } finally {
            o.pair().close();
        }
    }

    @Test
    void lossDuplicationAndReorderingStillDeliverEveryByteOnceInOrder() throws Exception {
        Outcome o = run(42, 0.1, 0.05, 200_000, 300, Ibv.MTU_1024);
        try {
            assertDelivered(o, 300);
            assertThat(o.pair().link.dropped).isGreaterThan(50);
            assertThat(o.pair().link.duplicated).isGreaterThan(10);
            assertThat(o.pair().a.engine.datapath().counters.dataRetransmits).isPositive();
            assertThat(o.pair().b.engine.datapath().counters.duplicates).isPositive();
        } finally {
            o.pair().close();
        }
    }

    @Test
    void aPathMtuOf4096SendsJumboPacketsOnA9000ByteNetdev() throws Exception {
        // TestNode's netdev MTU is 9000: packets carry 8064 bytes (docs/spec/transport.md section 1)
        Outcome o = run(5, 0, 0, 0, 200, Ibv.MTU_4096);
        try {
            assertDelivered(o, 200);
            long packets = 0;
            for (int len : o.lengths()) {
                packets += Math.max(1, (len + 8063) / 8064);
            }
            assertThat(o.pair().a.engine.datapath().counters.dataTx).isEqualTo(packets);
        } finally {
            o.pair().close();
        }
    }

    @Test
    void jumboPacketsSurviveLossDuplicationAndReordering() throws Exception {
        Outcome o = run(43, 0.1, 0.05, 200_000, 200, Ibv.MTU_4096);
        try {
            assertDelivered(o, 200);
            assertThat(o.pair().link.dropped).isGreaterThan(20);
            assertThat(o.pair().a.engine.datapath().counters.dataRetransmits).isPositive();
        } finally {
            o.pair().close();
        }
    }

    /** Random impairments drawn from a fixed master seed, so a failure names a rerunnable case. */
    static Stream<Arguments> randomLinks() {
        java.util.Random r = new java.util.Random(0x5eed_2026L);
        return IntStream.range(0, 12)
                .mapToObj(i -> Arguments.of(1 + r.nextInt(1_000_000), r.nextDouble() * 0.3, r.nextDouble() * 0.2));
    }

    @ParameterizedTest(name = "seed={0} loss={1} dup={2}")
    @MethodSource("randomLinks")
    void anyLossyLinkDeliversEverything(long seed, double loss, double dup) throws Exception {
        Outcome o = run(seed, loss, dup, 300_000, 60, Ibv.MTU_256 + (int) (seed % 5));
        try {
            assertDelivered(o, 60);
        } finally {
            o.pair().close();
        }
    }

    @Test
    void aDeadLinkEndsInRetryExceededThenFlush() throws Exception {
        try (Pair p = new Pair(7, 1.0, 0, 0, 4, Ibv.MTU_1024, SLOT)) {
            long base = p.sendBuf.address();
            for (int i = 0; i < 3; i++) {
                assertThat(p.a.post(
                                p.qpA.sq(),
                                i,
                                Ibv.WR_SEND,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {base},
                                new int[] {100},
                                p.sendMr[1]))
                        .isTrue();
            }
            List<TestNode.Cqe> cqes = new ArrayList<>();
            for (int i = 0; i < 100_000 && cqes.size() < 3; i++) {
                p.step(1_000_000);
                cqes.addAll(p.a.poll(p.cqA.ring()));
            }
            assertThat(cqes)
                    .extracting(TestNode.Cqe::status)
                    .containsExactly(Ibv.WC_RETRY_EXC_ERR, Ibv.WC_WR_FLUSH_ERR, Ibv.WC_WR_FLUSH_ERR);
            assertThat(cqes).extracting(TestNode.Cqe::wrId).containsExactly(0L, 1L, 2L);
            assertThat(p.a.queryQp(p.qpA.handle()).qpState).isEqualTo(Ibv.QPS_ERR);
            // posted after the error: flushed too
            assertThat(p.a.post(p.qpA.sq(), 9, Ibv.WR_SEND, 0, 0, new long[] {base}, new int[] {1}, p.sendMr[1]))
                    .isTrue();
            p.step(1000);
            assertThat(p.a.poll(p.cqA.ring())).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_WR_FLUSH_ERR);
        }
    }

    @Test
    void noReceivePostedYetMeansRnrThenDelivery() throws Exception {
        try (Pair p = new Pair(3, 0, 0, 0, 2, Ibv.MTU_1024, SLOT)) {
            p.sendBuf.asSlice(0, 3000).fill((byte) 0x3c);
            assertThat(p.a.post(
                            p.qpA.sq(),
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {p.sendBuf.address()},
                            new int[] {3000},
                            p.sendMr[1]))
                    .isTrue();
            for (int i = 0; i < 200; i++) {
                p.step(100_000);
            }
            assertThat(p.b.engine.datapath().counters.rnrDrops).isPositive();
            assertThat(p.a.poll(p.cqA.ring())).isEmpty();
            assertThat(p.b.post(
                            p.qpB.rq(), 77, 0, 0, 0, new long[] {p.recvBuf.address()}, new int[] {SLOT}, p.recvMr[1]))
                    .isTrue();
            List<TestNode.Cqe> r = new ArrayList<>();
            List<TestNode.Cqe> s = new ArrayList<>();
            for (int i = 0; i < 100_000 && (r.isEmpty() || s.isEmpty()); i++) {
                p.step(100_000);
                r.addAll(p.b.poll(p.cqB.ring()));
                s.addAll(p.a.poll(p.cqA.ring()));
            }
            assertThat(r).singleElement().satisfies(c -> {
                assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(c.byteLen()).isEqualTo(3000);
            });
            assertThat(s).singleElement().extracting(TestNode.Cqe::status).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(p.recvBuf.get(ValueLayout.JAVA_BYTE, 2999)).isEqualTo((byte) 0x3c);
            assertThat(p.recvBuf.get(ValueLayout.JAVA_BYTE, 3000)).isEqualTo(CANARY);
        }
    }

    @Test
    void aMessageLongerThanTheReceiveBufferFailsBothSides() throws Exception {
        try (Pair p = new Pair(5, 0, 0, 0, 2, Ibv.MTU_1024, SLOT)) {
            assertThat(p.b.post(p.qpB.rq(), 5, 0, 0, 0, new long[] {p.recvBuf.address()}, new int[] {100}, p.recvMr[1]))
                    .isTrue();
            assertThat(p.b.post(
                            p.qpB.rq(),
                            6,
                            0,
                            0,
                            0,
                            new long[] {p.recvBuf.address() + 100},
                            new int[] {100},
                            p.recvMr[1]))
                    .isTrue();
            assertThat(p.a.post(
                            p.qpA.sq(),
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {p.sendBuf.address()},
                            new int[] {101},
                            p.sendMr[1]))
                    .isTrue();
            List<TestNode.Cqe> r = new ArrayList<>();
            List<TestNode.Cqe> s = new ArrayList<>();
            for (int i = 0; i < 10_000 && (r.size() < 2 || s.isEmpty()); i++) {
                p.step(100_000);
                r.addAll(p.b.poll(p.cqB.ring()));
                s.addAll(p.a.poll(p.cqA.ring()));
            }
            assertThat(r).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_LEN_ERR, Ibv.WC_WR_FLUSH_ERR);
            assertThat(s).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_REM_INV_REQ_ERR);
            assertThat(p.recvBuf.get(ValueLayout.JAVA_BYTE, 0)).isEqualTo(CANARY);
        }
    }

    @Test
    void aBadLkeyIsALocalProtectionErrorAndOtherQpsCarryOn() throws Exception {
        try (Pair p = new Pair(9, 0, 0, 0, 2, Ibv.MTU_1024, SLOT)) {
            assertThat(p.a.post(
                            p.qpA.sq(),
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {p.sendBuf.address()},
                            new int[] {10},
                            p.sendMr[1] + 1))
                    .isTrue();
            assertThat(p.a.post(
                            p.qpA.sq(),
                            2,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {p.sendBuf.address() + 2L * SLOT - 5},
                            new int[] {10},
                            p.sendMr[1]))
                    .isTrue();
            List<TestNode.Cqe> s = new ArrayList<>();
            for (int i = 0; i < 100 && s.size() < 2; i++) {
                p.step(10_000);
                s.addAll(p.a.poll(p.cqA.ring()));
            }
            assertThat(s).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_PROT_ERR, Ibv.WC_WR_FLUSH_ERR);
        }
    }

    @Test
    void aReceiveBufferDeregisteredAfterPostingIsNeverWritten() throws Exception {
        try (Pair p = new Pair(11, 0, 0, 0, 2, Ibv.MTU_1024, SLOT)) {
            assertThat(p.b.post(p.qpB.rq(), 7, 0, 0, 0, new long[] {p.recvBuf.address()}, new int[] {100}, p.recvMr[1]))
                    .isTrue();
            p.step(10_000); // the daemon has read and validated the receive
            assertThat(p.b.call(io.metaroce.abi.AbiConstants.MRCE_OP_DEREG_MR, TestNode.handleReq(p.recvMr[0]))
                            .status())
                    .isZero();
            assertThat(p.a.post(
                            p.qpA.sq(),
                            1,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {p.sendBuf.address()},
                            new int[] {100},
                            p.sendMr[1]))
                    .isTrue();
            List<TestNode.Cqe> r = new ArrayList<>();
            for (int i = 0; i < 10_000 && r.isEmpty(); i++) {
                p.step(100_000);
                r.addAll(p.b.poll(p.cqB.ring()));
            }
            assertThat(r).extracting(TestNode.Cqe::wrId).containsExactly(7L);
            assertThat(r).extracting(TestNode.Cqe::status).containsExactly(Ibv.WC_LOC_PROT_ERR);
            for (int i = 0; i < 100; i++) {
                assertThat(p.recvBuf.get(ValueLayout.JAVA_BYTE, i)).isEqualTo(CANARY);
            }
        }
    }
}
