package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.engine.Telemetry;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The telemetry snapshot as JSON (mrce-ctl stats, --stats): the document's shape, which mrce-ctl,
 * the integration tests and the bench scripts read, key by key and in order, with the numbers the
 * engine counted.
 */
class TelemetryJsonTest {

    private static List<String> keys(JsonNode n) {
        List<String> k = new ArrayList<>();
        n.fieldNames().forEachRemaining(k::add);
        return k;
    }

    @Test
    void theSnapshotKeepsItsShapeAndCarriesTheEnginesNumbers() throws Exception {
        TransportOverLossyLinkTest.Outcome o = TransportOverLossyLinkTest.run(
                3, 0, 0, 0, 50, Ibv.MTU_1024, TransportSettings.SIMULATION.withPaths(4), null, null);
        try {
            TransportOverLossyLinkTest.assertDelivered(o, 50);
            var engine = o.pair().a.engine;
            Telemetry t = engine.telemetry(123);
            JsonNode n = new ObjectMapper().readTree(t.toJson());
            assertThat(keys(n))
                    .containsExactly(
                            "timeNs",
                            "transport",
                            "pathsPerQp",
                            "ecnReadable",
                            "counters",
                            "ud",
                            "loopback",
                            "port",
                            "qps",
                            "closedQps");
            assertThat(n.path("timeNs").asLong()).isEqualTo(123);
            assertThat(n.path("transport").asText()).isEqualTo("metaroce");
            assertThat(n.path("pathsPerQp").asInt()).isEqualTo(4);
            assertThat(keys(n.path("counters")))
                    .containsExactly(
                            "dataTx",
                            "dataRetransmits",
                            "dataRx",
                            "duplicates",
                            "acksTx",
                            "acksRx",
                            "staleAcks",
                            "naksTx",
                            "naksRx",
                            "outOfWindow",
                            "rnrDrops",
                            "malformed",
                            "timeouts",
                            "pathLosses",
                            "pathTimeouts",
                            "pathRetirements",
                            "tlps",
                            "probesTx",
                            "probesRx",
                            "gapsDetected",
                            "crossPathLosses",
                            "spuriousLosses",
                            "opportunisticRetransmits",
                            "entropyRedraws",
                            "homeTrials",
                            "homeReturns",
                            "sequenceNaksTx",
                            "ecnMarksRx");
            assertThat(n.path("counters").path("dataTx").asLong())
                    .isPositive()
                    .isEqualTo(engine.datapath().counters.dataTx);
            assertThat(n.path("counters").path("acksRx").asLong()).isEqualTo(engine.datapath().counters.acksRx);
            assertThat(keys(n.path("ud")))
                    .containsExactly(
                            "packetsTx",
                            "packetsRx",
                            "qkeyDrops",
                            "noRecvDrops",
                            "cqFullDrops",
                            "stateDrops",
                            "malformed",
                            "recvErrors",
                            "sendErrors");
            assertThat(keys(n.path("loopback"))).containsExactly("frames", "drops");
            assertThat(keys(n.path("port")))
                    .containsExactly(
                            "rxFrames",
                            "txFrames",
                            "txErrors",
                            "rxTruncated",
                            "rxShort",
                            "rxBadVersion",
                            "rxBadCrc",
                            "rxUnknownQp",
                            "rxBadOpcode",
                            "rxBadToken",
                            "rxBadSource");
            assertThat(n.path("port").path("txFrames").asLong()).isPositive().isEqualTo(engine.portCounters().txFrames);
            assertThat(n.path("qps")).hasSize(1);
            JsonNode qp = n.path("qps").get(0);
            assertThat(keys(qp))
                    .containsExactly(
                            "qpn",
                            "destQpn",
                            "state",
                            "closed",
                            "unackedPackets",
                            "window",
                            "receiveWindow",
                            "sendsOutstanding",
                            "recvsOutstanding",
                            "paths");
            assertThat(qp.path("qpn").asInt()).isEqualTo(o.pair().qpA.qpn());
            assertThat(qp.path("closed").asBoolean()).isFalse();
            assertThat(qp.path("window").asInt())
                    .as("the QP window in force (spec 10a rule 3)")
                    .isBetween(QpWindow.MIN, RcRequester.WINDOW);
            assertThat(qp.path("paths")).hasSize(4);
            JsonNode path = qp.path("paths").get(2);
            assertThat(keys(path))
                    .containsExactly(
                            "id",
                            "entropy",
                            "state",
                            "minRttNs",
                            "srttNs",
                            "rttvarNs",
                            "inflightBytes",
                            "cwndBytes",
                            "deliveryRateBps",
                            "packetsSent",
                            "bytesSent",
                            "deliveredBytes",
                            "retransmitsSent",
                            "losses",
                            "timeouts",
                            "tlps",
                            "ecnMarks",
                            "replacements",
                            "probesSent");
            Path p2 = engine.qpByQpn(o.pair().qpA.qpn()).requester.path(2);
            assertThat(path.path("id").asInt()).isEqualTo(2);
            assertThat(path.path("state").asText()).isEqualTo(p2.stateName());
            assertThat(path.path("packetsSent").asLong()).isPositive().isEqualTo(p2.packetsSent);
            assertThat(path.path("srttNs").asLong()).isEqualTo(p2.srttNs);
            assertThat(n.path("closedQps")).isEmpty();
        } finally {
            o.pair().close();
        }
    }
}
