package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.nic.abi.Ibv;
import org.junit.jupiter.api.Test;

/**
 * ECN end to end: the responder counts CE-marked packets per path and reports them in its ACKs;
 * the requester adds them to the path's telemetry and its window reacts.
 */
class EcnTest {

    @Test
    void ceMarksReachThePathCountersAndTheTransferCompletes() throws Exception {
        TransportOverLossyLinkTest.Outcome o = TransportOverLossyLinkTest.run(
                5,
                0,
                0,
                0,
                400,
                Ibv.MTU_1024,
                TransportSettings.SIMULATION.withPaths(4),
                p -> {
                    p.link.paths(4, new double[4]);
                    p.link.ceRate = 0.05;
                },
                null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, 400);
            long rx = o.pair().b.engine.datapath().counters.ecnMarksRx
                    + o.pair().a.engine.datapath().counters.ecnMarksRx;
            Qp a = o.pair().a.engine.qpByQpn(o.pair().qpA.qpn());
            long reported = 0;
            for (int i = 0; i < a.requester.pathCount(); i++) {
                reported += a.requester.path(i).ecnMarks;
            }
            assertThat(o.pair().link.ceMarked).isPositive();
            assertThat(rx).isPositive().isLessThanOrEqualTo(o.pair().link.ceMarked);
            assertThat(reported)
                    .as("marks reported to the sender")
                    .isPositive()
                    .isLessThanOrEqualTo(o.pair().b.engine.datapath().counters.ecnMarksRx);
            assertThat(o.pair().a.engine.telemetry(0).toJson())
                    .contains("\"ecnReadable\":true")
                    .contains("\"ecnMarksRx\":");
        } finally {
            o.pair().close();
        }
    }
}
