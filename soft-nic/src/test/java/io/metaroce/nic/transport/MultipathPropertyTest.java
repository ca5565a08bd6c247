package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Property test of the multipath transport over an ECMP-like in-memory fabric (FIFO paths chosen
 * by entropy, each with its own loss; duplication; one path black-holed mid-transfer in most
 * cases). Cases come from a fixed master seed (a failure names a rerunnable case); at least 10^4
 * messages per run, ten times more with -Dmetaroce.nightly=true. For every case: every byte lands
 * exactly where it should, once (canaries), completions in verbs order, nothing lost or
 * duplicated, and no per-message state left once everything completed.
 */
class MultipathPropertyTest {
    static final boolean NIGHTLY = Boolean.getBoolean("metaroce.nightly");
    static final int CASES = NIGHTLY ? 200 : 40;
    static final int MESSAGES = 260;

    static Stream<Arguments> cases() {
        Random r = new Random(0x3a7b_2026L);
        return IntStream.range(0, CASES)
                .mapToObj(i -> Arguments.of(
                        1 + r.nextInt(1_000_000), // seed
                        2 + r.nextInt(7), // fabric paths
                        1 + r.nextInt(16), // QP paths
                        r.nextDouble() * 0.08, // loss, scaled per path
                        r.nextDouble() * 0.05, // duplication
                        r.nextInt(4) != 0)); // a path dies mid-transfer
    }

    @ParameterizedTest(name = "seed={0} fabricPaths={1} qpPaths={2} loss={3} dup={4} death={5}")
    @MethodSource("cases")
    void everyByteLandsOnceInOrder(long seed, int fabricPaths, int qpPaths, double loss, double dup, boolean death)
            throws Exception {
        Random r = new Random(seed);
        double[] perPath = new double[fabricPaths];
        for (int i = 0; i < fabricPaths; i++) {
            perPath[i] = loss * r.nextDouble() * 2;
        }
        int victim = r.nextInt(fabricPaths);
        long[] killAt = {0};
        TransportOverLossyLinkTest.Outcome o = TransportOverLossyLinkTest.run(
                seed,
                0,
                dup,
                30_000,
                MESSAGES,
                Ibv.MTU_256 + (int) (seed % 5),
                TransportSettings.SIMULATION.withPaths(qpPaths),
                p -> {
                    p.link.paths(fabricPaths, perPath);
                    killAt[0] = p.clock.get() + 2_000_000 + r.nextInt(20_000_000);
                    if (death) {
                        p.link.killPath(victim, killAt[0]);
                    }
                },
                null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, MESSAGES);
            assertNoStateLeft(o.pair());
        } finally {
            o.pair().close();
        }
    }

    static void assertNoStateLeft(TransportOverLossyLinkTest.Pair p) {
        Qp a = p.a.engine.qpByQpn(p.qpA.qpn());
        Qp b = p.b.engine.qpByQpn(p.qpB.qpn());
        assertThat(a.requester.outstanding()).as("send WRs left").isZero();
        assertThat(a.requester.unacknowledged()).as("unacknowledged packets").isZero();
        assertThat(b.responder.outstanding()).as("receive WRs left").isZero();
        assertThat(b.responder.placedAboveCumulative())
                .as("placement state left")
                .isZero();
    }

    @Test
    void aBlackHoledPathIsRetiredAndTheTransferCompletes() throws Exception {
        long[] killAt = {0};
        TransportOverLossyLinkTest.Outcome o = TransportOverLossyLinkTest.run(
                77,
                0,
                0,
                0,
                1000,
                Ibv.MTU_1024,
                p -> {
                    p.link.paths(8, new double[8]); // the engines' 8 paths (TransportSettings.SIMULATION)
                    killAt[0] = p.clock.get() + 100_000;
                    p.link.killPath(3, killAt[0]);
                },
                null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, 1000);
            assertNoStateLeft(o.pair());
            TransportCounters c = o.pair().a.engine.datapath().counters;
            assertThat(c.pathRetirements).as("retired").isPositive();
            assertThat(c.timeouts)
                    .as("no connection timeout: recovery is per path")
                    .isZero();
            Qp a = o.pair().a.engine.qpByQpn(o.pair().qpA.qpn());
            int used = 0;
            for (int i = 0; i < a.requester.pathCount(); i++) {
                used += a.requester.path(i).packetsSent > 0 ? 1 : 0;
            }
            assertThat(used).isEqualTo(8);
        } finally {
            o.pair().close();
        }
    }

    @Test
    void lossOnOnePathIsRepairedSelectivelyOnAnother() throws Exception {
        double[] loss = new double[8];
        loss[2] = 0.2;
        TransportOverLossyLinkTest.Outcome o =
                TransportOverLossyLinkTest.run(5, 0, 0, 0, 400, Ibv.MTU_1024, p -> p.link.paths(8, loss), null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, 400);
            TransportCounters c = o.pair().a.engine.datapath().counters;
            assertThat(c.pathLosses).as("losses found by path reports").isPositive();
            assertThat(c.dataRetransmits)
                    .as("only lost packets resent")
                    .isLessThanOrEqualTo(o.pair().link.dropped + c.tlps + 8);
            assertThat(o.pair().b.engine.datapath().counters.gapsDetected).isPositive();
        } finally {
            o.pair().close();
        }
    }

    @Test
    void baselineGoesBackNAndStillDeliversEverything() throws Exception {
        TransportOverLossyLinkTest.Outcome o = TransportOverLossyLinkTest.run(
                9, 0.02, 0.01, 0, 200, Ibv.MTU_1024, TransportSettings.SIMULATION.withBaseline(true), null, null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, 200);
            assertNoStateLeft(o.pair());
            assertThat(o.pair().b.engine.datapath().counters.sequenceNaksTx).isPositive();
            Qp a = o.pair().a.engine.qpByQpn(o.pair().qpA.qpn());
            assertThat(a.requester.pathCount()).isEqualTo(1);
        } finally {
            o.pair().close();
        }
    }
}
