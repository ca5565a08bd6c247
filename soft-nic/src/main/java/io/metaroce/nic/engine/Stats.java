package io.metaroce.nic.engine;

import io.metaroce.nic.transport.Path;
import io.metaroce.nic.transport.RcRequester;
import io.metaroce.nic.transport.TransportCounters;
import io.metaroce.nic.transport.Qp;

/** JSON rendering of transport telemetry (control path: allocation is fine here). */
final class Stats {
    private Stats() {}

    static void counters(StringBuilder b, TransportCounters c) {
        b.append("{\"dataTx\":").append(c.dataTx)
                .append(",\"dataRetransmits\":").append(c.dataRetransmits)
                .append(",\"dataRx\":").append(c.dataRx)
                .append(",\"duplicates\":").append(c.duplicates)
                .append(",\"acksTx\":").append(c.acksTx)
                .append(",\"acksRx\":").append(c.acksRx)
                .append(",\"naksTx\":").append(c.naksTx)
                .append(",\"naksRx\":").append(c.naksRx)
                .append(",\"outOfWindow\":").append(c.outOfWindow)
                .append(",\"rnrDrops\":").append(c.rnrDrops)
                .append(",\"malformed\":").append(c.malformed)
                .append(",\"timeouts\":").append(c.timeouts)
                .append(",\"pathLosses\":").append(c.pathLosses)
                .append(",\"pathTimeouts\":").append(c.pathTimeouts)
                .append(",\"pathRetirements\":").append(c.pathRetirements)
                .append(",\"tlps\":").append(c.tlps)
                .append(",\"probesTx\":").append(c.probesTx)
                .append(",\"probesRx\":").append(c.probesRx)
                .append(",\"gapsDetected\":").append(c.gapsDetected)
                .append(",\"crossPathLosses\":").append(c.crossPathLosses)
                .append(",\"spuriousLosses\":").append(c.spuriousLosses)
                .append(",\"opportunisticRetransmits\":").append(c.opportunisticRetransmits)
                .append(",\"entropyRedraws\":").append(c.entropyRedraws)
                .append(",\"sequenceNaksTx\":").append(c.sequenceNaksTx)
                .append(",\"ecnMarksRx\":").append(c.ecnMarksRx)
                .append('}');
    }

    static void port(StringBuilder b, io.metaroce.nic.port.PortCounters c) {
        b.append("{\"rxFrames\":").append(c.rxFrames)
                .append(",\"txFrames\":").append(c.txFrames)
                .append(",\"txErrors\":").append(c.txErrors)
                .append(",\"rxTruncated\":").append(c.rxTruncated)
                .append(",\"rxShort\":").append(c.rxShort)
                .append(",\"rxBadVersion\":").append(c.rxBadVersion)
                .append(",\"rxBadCrc\":").append(c.rxBadCrc)
                .append(",\"rxUnknownQp\":").append(c.rxUnknownQp)
                .append(",\"rxBadOpcode\":").append(c.rxBadOpcode)
                .append(",\"rxBadToken\":").append(c.rxBadToken)
                .append(",\"rxBadSource\":").append(c.rxBadSource)
                .append('}');
    }

    static void qp(StringBuilder b, Qp qp, boolean closed) {
        RcRequester r = qp.requester;
        b.append("{\"qpn\":").append(qp.qpn)
                .append(",\"destQpn\":").append(qp.destQpNum)
                .append(",\"state\":").append(qp.state)
                .append(",\"closed\":").append(closed)
                .append(",\"unackedPackets\":").append(r.unacknowledged())
                .append(",\"receiveWindow\":").append(r.receiveWindow())
                .append(",\"sendsOutstanding\":").append(r.outstanding())
                .append(",\"recvsOutstanding\":").append(qp.responder.outstanding())
                .append(",\"paths\":[");
        for (int i = 0; i < r.pathCount(); i++) {
            Path p = r.path(i);
            if (i > 0) {
                b.append(',');
            }
            b.append("{\"id\":").append(p.id)
                    .append(",\"entropy\":").append(p.entropy)
                    .append(",\"state\":\"").append(p.stateName()).append('"')
                    .append(",\"minRttNs\":").append(p.hasRtt() ? p.minRttNs : 0)
                    .append(",\"srttNs\":").append(p.srttNs)
                    .append(",\"rttvarNs\":").append(p.rttvarNs)
                    .append(",\"inflightBytes\":").append(p.inflightBytes)
                    .append(",\"cwndBytes\":").append(p.cwndBytes)
                    .append(",\"deliveryRateBps\":").append(p.deliveryRateBps)
                    .append(",\"packetsSent\":").append(p.packetsSent)
                    .append(",\"bytesSent\":").append(p.bytesSent)
                    .append(",\"deliveredBytes\":").append(p.deliveredBytes)
                    .append(",\"retransmitsSent\":").append(p.retransmitsSent)
                    .append(",\"losses\":").append(p.losses)
                    .append(",\"timeouts\":").append(p.timeouts)
                    .append(",\"tlps\":").append(p.tlps)
                    .append(",\"ecnMarks\":").append(p.ecnMarks)
                    .append(",\"replacements\":").append(p.replacements)
                    .append(",\"probesSent\":").append(p.probesSent)
                    .append('}');
        }
        b.append("]}");
    }
}
