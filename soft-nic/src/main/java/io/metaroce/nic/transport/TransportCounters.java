package io.metaroce.nic.transport;

/** Transport counters (single writer: the engine thread). */
public final class TransportCounters {
    public long dataTx;
    public long dataRetransmits;
    public long acksTx;
    public long naksTx;
    public long acksRx;
    /** Requester: ACKs overtaken by a later one (reordered); only their path reports were taken. */
    public long staleAcks;

    public long naksRx;
    public long dataRx;
    public long duplicates;
    public long outOfWindow;
    public long rnrDrops;
    public long malformed;
    public long timeouts;
    public long pathLosses;
    public long pathTimeouts;
    public long pathRetirements;
    public long tlps;
    public long probesTx;
    public long probesRx;
    public long gapsDetected;
    /** Requester: packets found lost by cross-path, time-based detection (spec 8). */
    public long crossPathLosses;
    /** Requester: cross-path detections a later report of the packet itself proved false. */
    public long spuriousLosses;
    /** Requester: packets stuck on a slow path sent again on a fast one (spec 10a rule 4). */
    public long opportunisticRetransmits;
    /** Requester: entropies of DEAD paths redrawn after a lost probe (spec 10; retirements draw one too). */
    public long entropyRedraws;
    /** Requester: retired paths' tries of the entropy they left, and those that brought them home (spec 10). */
    public long homeTrials;

    public long homeReturns;

    public long sequenceNaksTx;
    /** Data and probe packets received with an ECN CE mark. */
    public long ecnMarksRx;
    /** Requester: READ and atomic responses taken; re-requests sent; response timeouts. */
    public long responsesRx;

    public long resendsTx;
    public long responseTimeouts;
    /** Responder: READ response packets and atomic responses sent; atomics executed. */
    public long responsesTx;

    public long atomicsExecuted;
    /** Responder: remote access violations refused (NAK REMOTE_ACCESS). */
    public long accessErrors;
    /** Responder: duplicate or re-requested READs and atomics answered again. */
    public long resendsRx;

    @Override
    public String toString() {
        return "dataTx " + dataTx + " retransmits " + dataRetransmits + " acksTx " + acksTx
                + " naksTx " + naksTx + " acksRx " + acksRx + " staleAcks " + staleAcks + " naksRx " + naksRx
                + " dataRx " + dataRx
                + " duplicates " + duplicates + " outOfWindow " + outOfWindow + " rnrDrops " + rnrDrops
                + " malformed " + malformed + " timeouts " + timeouts + " pathLosses " + pathLosses
                + " pathTimeouts " + pathTimeouts + " pathRetirements " + pathRetirements + " tlps " + tlps
                + " probesTx " + probesTx + " probesRx " + probesRx + " gapsDetected " + gapsDetected
                + " crossPathLosses " + crossPathLosses + " spuriousLosses " + spuriousLosses
                + " opportunisticRetransmits " + opportunisticRetransmits + " entropyRedraws " + entropyRedraws
                + " homeTrials " + homeTrials + " homeReturns " + homeReturns
                + " ecnMarksRx " + ecnMarksRx
                + " responsesRx " + responsesRx + " resendsTx " + resendsTx + " responseTimeouts "
                + responseTimeouts + " responsesTx " + responsesTx + " atomicsExecuted " + atomicsExecuted
                + " accessErrors " + accessErrors + " resendsRx " + resendsRx;
    }
}
