package io.metaroce.nic.transport;

import static io.metaroce.nic.transport.RdmaRig.bytes;
import static io.metaroce.nic.transport.RdmaRig.pattern;
import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.verbs.QpAttrs;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The engine's QP scheduling (EngineAgent.pollQps): a QP with nothing outstanding falls asleep
 * and costs no full step per duty cycle; a WQE posted to it, a frame for it and a state change
 * wake it; a QP with a timer running never sleeps, so its timer fires. Two daemons over a
 * {@link RdmaRig} link, clock injected and stepped by hand.
 */
class QpSchedulingTest {
    static final int QPS = 32;

    static RdmaRig rig(java.util.function.Consumer<RdmaRig> setup, boolean doorbellPage) throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.qps = QPS;
        c.setup = setup;
        c.doorbellPage = doorbellPage;
        return new RdmaRig(c);
    }

    /** Steps until every QP of both daemons sleeps (a few cycles after the connections are up). */
    static void settle(RdmaRig r) {
        for (int i = 0; i < 100 && (r.a.engine.asleepQps() < QPS || r.b.engine.asleepQps() < QPS); i++) {
            r.step(20_000);
        }
        assertThat(r.a.engine.asleepQps()).isEqualTo(QPS);
        assertThat(r.b.engine.asleepQps()).isEqualTo(QPS);
    }

    static int pathsWithRings(Qp qp) {
        int n = 0;
        for (int p = 0; p < qp.requester.pathCount(); p++) {
            n += qp.requester.path(p).hasRings() ? 1 : 0;
        }
        return n;
    }

    @ParameterizedTest(name = "doorbell page {0}")
    @ValueSource(booleans = {false, true})
    void idleQpsSleepAndTakeNoFullStep(boolean page) throws Exception {
        try (RdmaRig r = rig(null, page)) {
            settle(r);
            long a0 = r.a.engine.qpSteps();
            long b0 = r.b.engine.qpSteps();
            r.idle(1000, 1_000_000); // a second of idle duty cycles, past every timer's floor
            assertThat(r.a.engine.qpSteps()).isEqualTo(a0);
            assertThat(r.b.engine.qpSteps()).isEqualTo(b0);
            assertThat(r.a.engine.asleepQps()).isEqualTo(QPS);
            assertThat(r.a.engine.nextDeadlineNs()).isEqualTo(Long.MAX_VALUE);
        }
    }

    @ParameterizedTest(name = "doorbell page {0}")
    @ValueSource(booleans = {false, true})
    void aWriteOnAnAsleepQpIsPickedUpAndItsFramesWakeThePeer(boolean page) throws Exception {
        try (RdmaRig r = rig(null, page)) {
            settle(r);
            int k = QPS / 2;
            byte[] data = pattern(7, 3000);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, r.local, 0, data.length);
            long s = r.localAddr(0);
            assertThat(r.postSend(
                            k,
                            42,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {s},
                            new int[] {data.length},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(100),
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 0, 1000);
            assertThat(r.sendCqes).hasSize(1);
            assertThat(r.sendCqes.getFirst().wrId()).isEqualTo(42);
            assertThat(r.sendCqes.getFirst().status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(bytes(r.remote, 100, data.length)).isEqualTo(data);
            settle(r); // and back to sleep, everything resolved
            // only the paths that carried a packet hold a transmission ring
            for (int q = 0; q < QPS; q++) {
                assertThat(pathsWithRings(r.engineQpA(q))).as("QP %d", q).isBetween(q == k ? 1 : 0, q == k ? 3 : 0);
                assertThat(pathsWithRings(r.engineQpB(q))).isZero();
            }
        }
    }

    /**
     * More QPs than one duty cycle looks at ({@code EngineAgent.LOOK_SLICE}): WRITEs posted to
     * asleep QPs in the first, second and last slice are each taken up within as many cycles as
     * there are slices, and complete with their data in place.
     */
    @Test
    void postsToAsleepQpsBeyondOneSliceAreTakenUpWithinASweep() throws Exception {
        int n = 2 * io.metaroce.nic.engine.EngineAgent.LOOK_SLICE + 100;
        RdmaRig.Config c = new RdmaRig.Config();
        c.qps = n;
        c.wr = 4;
        try (RdmaRig r = new RdmaRig(c)) {
            for (int i = 0; i < 200 && (r.a.engine.asleepQps() < n || r.b.engine.asleepQps() < n); i++) {
                r.step(20_000);
            }
            assertThat(r.a.engine.asleepQps()).isEqualTo(n);
            int[] qps = {3, io.metaroce.nic.engine.EngineAgent.LOOK_SLICE + 7, n - 1};
            postWrites(r, qps, 20, 100, 10_000);
            long steps0 = r.a.engine.qpSteps();
            int sweep = (n + io.metaroce.nic.engine.EngineAgent.LOOK_SLICE - 1)
                    / io.metaroce.nic.engine.EngineAgent.LOOK_SLICE;
            r.idle(sweep, 1_000);
            assertThat(r.a.engine.qpSteps() - steps0)
                    .as("a full step for each QP posted to")
                    .isGreaterThanOrEqualTo(3);
            r.runUntil(3, 0, 2000);
            assertThat(r.sendCqes).hasSize(3);
            for (int j = 0; j < qps.length; j++) {
                assertThat(r.sendCqes.get(j).status()).isEqualTo(Ibv.WC_SUCCESS);
                assertThat(bytes(r.remote, 10_000 + j * 1000, 1000)).isEqualTo(pattern(20 + j, 1000));
            }
        }
    }

    /**
     * With a doorbell page (as the C provider rings) the engine reads no asleep QP's rings: idle
     * duty cycles cost no ring look at all, and a WRITE posted to an asleep QP in any slice is
     * taken up in the very next cycle through its bit, not after a sweep of the slices; the
     * WRITEs complete with their data in place. Without the page (the control) every idle cycle
     * reads a slice of rings.
     */
    @Test
    void withADoorbellPageAsleepQpsAreFoundByTheirBitsAndNoRingIsRead() throws Exception {
        int n = 2 * io.metaroce.nic.engine.EngineAgent.LOOK_SLICE + 100;
        for (boolean page : new boolean[] {false, true}) {
            RdmaRig.Config c = new RdmaRig.Config();
            c.qps = n;
            c.wr = 4;
            c.doorbellPage = page;
            try (RdmaRig r = new RdmaRig(c)) {
                for (int i = 0; i < 200 && (r.a.engine.asleepQps() < n || r.b.engine.asleepQps() < n); i++) {
                    r.step(20_000);
                }
                assertThat(r.a.engine.asleepQps()).isEqualTo(n);
                long looks0 = r.a.engine.ringLooks();
                r.idle(10, 1_000);
                if (!page) {
                    assertThat(r.a.engine.ringLooks() - looks0)
                            .as("without the page each idle cycle reads a slice of rings")
                            .isGreaterThan(9L * io.metaroce.nic.engine.EngineAgent.LOOK_SLICE);
                    continue;
                }
                assertThat(r.a.engine.ringLooks())
                        .as("idle cycles read no ring")
                        .isEqualTo(looks0);
                int[] qps = {3, io.metaroce.nic.engine.EngineAgent.LOOK_SLICE + 7, n - 1};
                postWrites(r, qps, 40, 200, 20_000);
                long steps0 = r.a.engine.qpSteps();
                long rung0 = r.a.engine.doorbellBitsTaken();
                r.idle(1, 1_000);
                assertThat(r.a.engine.doorbellBitsTaken() - rung0).isEqualTo(qps.length);
                assertThat(r.a.engine.qpSteps() - steps0)
                        .as("a full step for each QP posted to, in one cycle")
                        .isGreaterThanOrEqualTo(qps.length);
                r.runUntil(3, 0, 2000);
                assertThat(r.sendCqes).hasSize(3);
                for (int j = 0; j < qps.length; j++) {
                    assertThat(r.sendCqes.get(j).status()).isEqualTo(Ibv.WC_SUCCESS);
                    assertThat(bytes(r.remote, 20_000 + j * 1000, 1000)).isEqualTo(pattern(40 + j, 1000));
                }
            }
        }
    }

    /**
     * The doorbell page's {@code sleeping} word: set while the engine sleeps (the provider then
     * writes the eventfd too), clear while it runs (the bit is enough).
     */
    @Test
    void theDoorbellPageSaysWhenTheEngineSleeps() throws Exception {
        RdmaRig.Config c = new RdmaRig.Config();
        c.doorbellPage = true;
        try (RdmaRig r = new RdmaRig(c)) {
            MemorySegment page = r.a.doorbellPage;
            assertThat(page).isNotNull();
            assertThat(page.get(java.lang.foreign.ValueLayout.JAVA_INT, 0)).isZero();
            r.a.engine.needWakeup(true);
            assertThat(page.get(java.lang.foreign.ValueLayout.JAVA_INT, 0)).isEqualTo(1);
            r.a.engine.needWakeup(false);
            assertThat(page.get(java.lang.foreign.ValueLayout.JAVA_INT, 0)).isZero();
        }
    }

    /**
     * A signaled RDMA WRITE of 1000 bytes (pattern {@code seed + j}) on each QP {@code qps[j]},
     * work request {@code wrId + j}, from local offset {@code j * 1000} to remote offset {@code
     * remote + j * 1000}.
     */
    static void postWrites(RdmaRig r, int[] qps, int seed, int wrId, long remote) {
        for (int j = 0; j < qps.length; j++) {
            byte[] data = pattern(seed + j, 1000);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, r.local, j * 1000L, data.length);
            assertThat(r.postSend(
                            qps[j],
                            wrId + j,
                            Ibv.WR_RDMA_WRITE,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {r.localAddr(j * 1000L)},
                            new int[] {data.length},
                            r.localMr[1],
                            r.remoteMr[2],
                            r.remoteAddr(remote + j * 1000L),
                            0,
                            0))
                    .isTrue();
        }
    }

    @ParameterizedTest(name = "doorbell page {0}")
    @ValueSource(booleans = {false, true})
    void aSendToAnAsleepResponderCompletesItsReceive(boolean page) throws Exception {
        try (RdmaRig r = rig(null, page)) {
            settle(r);
            int k = 3;
            assertThat(r.postRecv(k, 77, 256, 4096)).isTrue(); // the look sees it, a step reads it
            settle(r); // and then nothing to do until a message comes
            byte[] data = pattern(8, 2000);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, r.local, 0, data.length);
            long s = r.localAddr(0);
            assertThat(r.postSend(
                            k,
                            5,
                            Ibv.WR_SEND,
                            Ibv.SEND_SIGNALED,
                            0,
                            new long[] {s},
                            new int[] {data.length},
                            r.localMr[1],
                            0,
                            0,
                            0,
                            0))
                    .isTrue();
            r.runUntil(1, 1, 1000);
            assertThat(r.recvCqes).hasSize(1);
            TestNode.Cqe c = r.recvCqes.getFirst();
            assertThat(c.wrId()).isEqualTo(77);
            assertThat(c.status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(c.byteLen()).isEqualTo(data.length);
            assertThat(bytes(r.recvBuf, 256, data.length)).isEqualTo(data);
            assertThat(r.sendCqes).hasSize(1);
        }
    }

    @ParameterizedTest(name = "doorbell page {0}")
    @ValueSource(booleans = {false, true})
    void aTimerRunsOnAQpWhosePacketWasLostEvenWhenNoFrameComes(boolean page) throws Exception {
        try (RdmaRig r = rig(x -> x.link.paths(1, new double[] {0}), page)) {
            settle(r);
            int k = 5;
            byte[] data = pattern(9, 900);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, r.local, 0, data.length);
            r.link.killPath(0, r.clock.get()); // the WRITE goes into a black hole
            try {
                long s = r.localAddr(0);
                assertThat(r.postSend(
                                k,
                                1,
                                Ibv.WR_RDMA_WRITE,
                                Ibv.SEND_SIGNALED,
                                0,
                                new long[] {s},
                                new int[] {data.length},
                                r.localMr[1],
                                r.remoteMr[2],
                                r.remoteAddr(0),
                                0,
                                0))
                        .isTrue();
                r.idle(5, 10_000);
                assertThat(r.link.dropped).isPositive();
                assertThat(r.sendCqes).isEmpty();
                // the sender waits on its timers, asleep until the first is due (the tail-loss
                // probe, half the initial RTO before any RTT sample): no step in the meantime
                assertThat(r.a.engine.asleepQps()).isEqualTo(QPS);
                long due = r.a.engine.nextDeadlineNs();
                assertThat(due).isNotEqualTo(Long.MAX_VALUE).isGreaterThan(r.clock.get());
                long steps = r.a.engine.qpSteps();
                r.idle(100, 10_000);
                assertThat(r.clock.get()).isLessThan(due);
                assertThat(r.a.engine.qpSteps()).isEqualTo(steps);
                assertThat(r.sendCqes).isEmpty();
            } finally {
                r.link.killPath(0, Long.MAX_VALUE); // back to life
            }
            long retx = r.a.engine.datapath().counters.dataRetransmits;
            r.runUntil(1, 0, 100_000);
            assertThat(r.sendCqes).hasSize(1);
            assertThat(r.sendCqes.getFirst().status()).isEqualTo(Ibv.WC_SUCCESS);
            assertThat(r.a.engine.datapath().counters.dataRetransmits).isGreaterThan(retx);
            assertThat(bytes(r.remote, 0, data.length)).isEqualTo(data);
        }
    }

    @ParameterizedTest(name = "doorbell page {0}")
    @ValueSource(booleans = {false, true})
    void aStateChangeWakesAnAsleepQp(boolean page) throws Exception {
        try (RdmaRig r = rig(null, page)) {
            settle(r);
            int k = 7;
            for (int i = 0; i < 3; i++) {
                assertThat(r.postRecv(k, 100 + i, 512L * i, 512)).isTrue();
            }
            settle(r);
            QpAttrs x = new QpAttrs();
            x.qpState = Ibv.QPS_ERR;
            assertThat(r.b.modifyQp(r.qpB[k].handle(), Ibv.QP_STATE, x)).isZero();
            r.runUntil(0, 3, 100);
            assertThat(r.recvCqes).extracting(TestNode.Cqe::wrId).containsExactly(100L, 101L, 102L);
            assertThat(r.recvCqes).allSatisfy(c -> assertThat(c.status()).isEqualTo(Ibv.WC_WR_FLUSH_ERR));
            settle(r); // flushed: asleep in ERR
        }
    }
}
