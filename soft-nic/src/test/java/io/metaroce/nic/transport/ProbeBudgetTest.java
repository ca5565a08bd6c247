package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.sim.LinkSelector;
import io.metaroce.nic.sim.SimClock;
import io.metaroce.nic.sim.SimFabric;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The probe budget (spec 10) holds with many QPs of many paths and a black-holed link: 16 QPs of
 * 256 paths each stream SENDs over a SimFabric of 4 links (the link a function of the entropy's
 * source port, 256 ports), and one link is black-holed for good after 5 ms, so that about 1000
 * paths are retired at once and want a probe each per millisecond. Counted per 1 ms epoch in
 * simulated time: the daemon sends at most {@link Datapath#PROBES_PER_DAEMON} probes, each QP at
 * most {@link Datapath#PROBES_PER_QP}; every QP gets probes; every message arrives intact.
 */
class ProbeBudgetTest {
    static final int IP_A = 0xC6120001;
    static final int IP_B = 0xC6120002;
    static final int UDP = 4793;
    static final int QPS = 16;
    static final int PATHS = 256;
    static final int MSG = 16 * 1024;
    static final int SENDS = 4;
    static final int RECVS = 8;
    static final long STEP = 5_000;
    static final long EPOCH = Datapath.PROBE_EPOCH_NS;

    @Test
    void probesStayWithinTheBudgetPerQpAndPerDaemon() throws Exception {
        SimClock clock = new SimClock(1_000_000_000L);
        try (SimFabric fabric = new SimFabric(7, 4, clock, SimFabric.DEFAULT_MAX_FRAME, 16384, 2);
                Arena arena = Arena.ofShared()) {
            fabric.selector((s, d, p, e, links) -> LinkSelector.hash(0, 0, 0, e % PATHS, links));
            fabric.forEachLink(
                    l -> l.delayNs(10_000).rateBitsPerSec(10_000_000_000L).queueBytes(1 << 20));
            TransportSettings transport =
                    TransportSettings.SIMULATION.withPaths(PATHS).withEntropyPorts(PATHS);
            TestNode a = new TestNode(fabric.attach(IP_A, UDP), UDP, clock, transport);
            TestNode b = new TestNode(fabric.attach(IP_B, UDP), UDP, clock, transport);
            try {
                assertThat(a.hello().status()).isZero();
                assertThat(b.hello().status()).isZero();
                int pdA = a.allocPd();
                int pdB = b.allocPd();
                MemorySegment src = arena.allocate((long) QPS * MSG, 4096);
                MemorySegment dst = arena.allocate((long) QPS * RECVS * MSG, 4096);
                for (int q = 0; q < QPS; q++) {
                    for (int i = 0; i < MSG; i++) {
                        src.set(ValueLayout.JAVA_BYTE, (long) q * MSG + i, (byte) (q * 31 + i * 7));
                    }
                }
                int srcKey = a.regMr(pdA, src, 0)[1];
                int dstKey = b.regMr(pdB, dst, Ibv.ACCESS_LOCAL_WRITE)[1];
                TestNode.CqHandles[] cqA = new TestNode.CqHandles[QPS];
                TestNode.CqHandles[] cqB = new TestNode.CqHandles[QPS];
                TestNode.QpHandles[] qa = new TestNode.QpHandles[QPS];
                TestNode.QpHandles[] qb = new TestNode.QpHandles[QPS];
                for (int q = 0; q < QPS; q++) {
                    cqA[q] = a.createCq(256, AbiConstants.NO_HANDLE);
                    cqB[q] = b.createCq(256, AbiConstants.NO_HANDLE);
                    qa[q] = a.createQp(pdA, cqA[q].handle(), cqA[q].handle(), 64, 1, 0);
                    qb[q] = b.createQp(pdB, cqB[q].handle(), cqB[q].handle(), 64, 1, 0);
                }
                for (int q = 0; q < QPS; q++) {
                    a.connect(qa[q].handle(), IP_B, qb[q].qpn(), 0x1000 * q, 0x8000 + q, Ibv.MTU_4096);
                    b.connect(qb[q].handle(), IP_A, qa[q].qpn(), 0x8000 + q, 0x1000 * q, Ibv.MTU_4096);
                }
                long[] sent = new long[QPS];
                long[] sendDone = new long[QPS];
                long[] posted = new long[QPS];
                long[] received = new long[QPS];
                long[] qpProbesAtEpoch = new long[QPS];
                long[] addr = new long[1];
                int[] len = {MSG};
                TransportCounters tc = a.engine.datapath().counters;
                long start = clock.nowNs();
                long probesAtEpoch = 0;
                long maxDaemon = 0;
                long maxQp = 0;
                long epochs = 0;
                long maxWanted = 0;
                for (long t = 0; t < 80_000_000L; t += STEP) {
                    for (int q = 0; q < QPS; q++) {
                        while (posted[q] - received[q] < RECVS) {
                            addr[0] = dst.address() + ((long) q * RECVS + posted[q] % RECVS) * MSG;
                            assertThat(b.post(qb[q].rq(), posted[q], 0, 0, 0, addr, len, dstKey))
                                    .isTrue();
                            posted[q]++;
                        }
                        while (sent[q] - sendDone[q] < SENDS) {
                            addr[0] = src.address() + (long) q * MSG;
                            assertThat(a.post(
                                            qa[q].sq(), sent[q], Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, addr, len, srcKey))
                                    .isTrue();
                            sent[q]++;
                        }
                    }
                    clock.advance(STEP);
                    long now = clock.nowNs();
                    if (now - start == 5_000_000L) {
                        fabric.link(1).blackhole(true);
                    }
                    if ((now - start) % EPOCH == 0) {
                        // an epoch ended: what it sent (the engines run next, in the new epoch)
                        long daemon = tc.probesTx - probesAtEpoch;
                        probesAtEpoch = tc.probesTx;
                        maxDaemon = Math.max(maxDaemon, daemon);
                        long wanted = 0;
                        for (int q = 0; q < QPS; q++) {
                            RcRequester r = a.engine.qpByQpn(qa[q].qpn()).requester;
                            long probes = 0;
                            for (int i = 0; i < r.pathCount(); i++) {
                                probes += r.path(i).probesSent;
                                wanted += r.path(i).state == Path.ACTIVE ? 0 : 1;
                            }
                            maxQp = Math.max(maxQp, probes - qpProbesAtEpoch[q]);
                            qpProbesAtEpoch[q] = probes;
                        }
                        maxWanted = Math.max(maxWanted, wanted);
                        epochs++;
                    }
                    a.pump();
                    b.pump();
                    for (int q = 0; q < QPS; q++) {
                        for (TestNode.Cqe e : a.poll(cqA[q].ring())) {
                            assertThat(e.status()).as("send of QP " + q).isEqualTo(Ibv.WC_SUCCESS);
                            assertThat(e.wrId()).isEqualTo(sendDone[q]);
                            sendDone[q]++;
                        }
                        for (TestNode.Cqe e : b.poll(cqB[q].ring())) {
                            assertThat(e.status()).as("receive of QP " + q).isEqualTo(Ibv.WC_SUCCESS);
                            assertThat(e.byteLen()).isEqualTo(MSG);
                            long off = ((long) q * RECVS + received[q] % RECVS) * MSG;
                            assertThat(MemorySegment.mismatch(
                                            dst, off, off + MSG, src, (long) q * MSG, (long) (q + 1) * MSG))
                                    .as("message " + received[q] + " of QP " + q)
                                    .isEqualTo(-1L);
                            dst.asSlice(off, MSG).fill((byte) 0);
                            received[q]++;
                        }
                    }
                }
                long minProbes = Long.MAX_VALUE;
                long minReceived = Long.MAX_VALUE;
                for (int q = 0; q < QPS; q++) {
                    minProbes = Math.min(minProbes, qpProbesAtEpoch[q]);
                    minReceived = Math.min(minReceived, received[q]);
                }
                System.out.println(String.format(
                        Locale.ROOT,
                        "probe-budget %d QPs x %d paths, one of 4 links black-holed: %d probes in %d epochs of 1 ms;"
                                + " most in one epoch %d (daemon, budget %d), %d (one QP, budget %d); up to %d paths"
                                + " waiting to be probed; %d retirements, %d redraws; fewest probes of a QP %d,"
                                + " fewest messages of a QP %d",
                        QPS,
                        PATHS,
                        tc.probesTx,
                        epochs,
                        maxDaemon,
                        Datapath.PROBES_PER_DAEMON,
                        maxQp,
                        Datapath.PROBES_PER_QP,
                        maxWanted,
                        tc.pathRetirements,
                        tc.entropyRedraws,
                        minProbes,
                        minReceived));
                assertThat(tc.pathRetirements)
                        .as("the paths of the dead link retired")
                        .isGreaterThan(QPS * PATHS / 8);
                assertThat(maxWanted)
                        .as("far more paths want probes than the budget allows")
                        .isGreaterThan(4L * Datapath.PROBES_PER_DAEMON);
                assertThat(maxDaemon).as("probes per epoch, daemon").isLessThanOrEqualTo(Datapath.PROBES_PER_DAEMON);
                assertThat(maxDaemon).as("the budget was used").isEqualTo(Datapath.PROBES_PER_DAEMON);
                assertThat(maxQp).as("probes per epoch, one QP").isLessThanOrEqualTo(Datapath.PROBES_PER_QP);
                assertThat(tc.probesTx).isLessThanOrEqualTo((epochs + 1) * Datapath.PROBES_PER_DAEMON);
                assertThat(minProbes).as("every QP gets its share of probes").isPositive();
                assertThat(minReceived).as("every QP delivers").isGreaterThan(100);
            } finally {
                a.close();
                b.close();
            }
        }
    }
}
