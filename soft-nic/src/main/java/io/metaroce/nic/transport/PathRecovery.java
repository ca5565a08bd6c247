package io.metaroce.nic.transport;

import java.lang.foreign.MemorySegment;

/**
 * What the paths of one RC QP tell its requester (docs/spec/transport.md sections 8 and 10):
 * path reports resolve each transmission of a path as delivered or lost, cross-path evidence and
 * per-path timers (tail-loss probe, RTO) find losses no report will, and a path's state follows
 * (ACTIVE, SUSPECT, DEAD: retired, redrawn and probed within the budget until clean). What is
 * lost goes back to the {@link RcRequester}, which resends it on another path.
 *
 * <p>Engine thread only; one per {@link RcRequester}.
 */
final class PathRecovery {
    private static final int RE_ADMIT_PROBES = 3;
    private static final int CLEAN_RUN_TO_ACTIVE = 16;

    private final RcRequester requester;
    private final Qp qp;
    private final PathSet pathSet;
    private final Path[] paths;
    private final QpWindow qpWindow;
    /** Retired paths going back to the entropies they left, once those work again (spec 10). */
    private final HomeReturn homeReturn;
    /**
     * Transmission order: every packet this QP puts on a path (data, retransmission, probe) gets
     * the next number, its order on the wire (ports send in commit order) whatever the clock says:
     * a duty cycle stamps everything it sends with one time, and frames wait in the TX ring behind
     * earlier kicks.
     */
    private long txSeq;
    /**
     * The highest transmission number reported delivered (data or answered probe), on any path:
     * the evidence that the peer is alive, that packets sent before it on a silent path are lost
     * (cross-path detection) and that a path's timeout is its own failure.
     */
    private long lastDeliveredSeq;
    /**
     * Reordering tolerance of cross-path detection, learnt: 0 until a detection proves false (the
     * packet's own report arrives after it was resolved lost), then per false detection at least
     * doubled and at least as late as that packet was beyond its threshold (and a quarter of the
     * path's min RTT), at most rto_min; halved after every
     * {@link #REORDER_DECAY_PACKETS} packets delivered without one (spec 8).
     */
    private long reorderSlackNs;

    private int reorderCleanPackets;
    /** Probe budget (spec 10): the daemon epoch this QP last probed in, its probes in it, its credit (1/1024 probes). */
    private long probeEpoch;

    private int probesInEpoch;
    private int probeCredit;
    /** Where the next scan for due probes starts (so every path gets its turn under the budget). */
    private int probeCursor;
    /**
     * The per-path scan of {@link #timers} is gated (spec 8, "Timers"): it runs only when
     * something that its conditions read changed since the last one ({@link #touch}: a packet put
     * on a path, a report, an acknowledgement) or when {@link #timersDueNs} is reached, the
     * earliest time at which, with nothing changed, a path's tail-loss probe, RTO, cross-path loss
     * detection or probe can fall due (never later than any of them). An idle QP's duty cycle then
     * costs O(1), not O(paths).
     */
    private boolean timersTouched = true;

    private long timersDueNs;
    /** No path timer can fall due until something changes (nothing in flight, no probe pending). */
    private boolean timersIdle;
    /** Full scans of the path timers, and cycles the gate spared one (tests and telemetry). */
    long timerScans;

    long timerScansSkipped;

    PathRecovery(RcRequester requester, Qp qp, PathSet pathSet, QpWindow qpWindow) {
        this.requester = requester;
        this.qp = qp;
        this.pathSet = pathSet;
        this.paths = pathSet.paths;
        this.qpWindow = qpWindow;
        this.homeReturn = new HomeReturn(pathSet, qpWindow);
        start();
    }

    /** Entering RTS: nothing delivered yet, no learnt reordering, a fresh probe budget. */
    void start() {
        lastDeliveredSeq = -1;
        reorderSlackNs = 0;
        reorderCleanPackets = 0;
        probeEpoch = Long.MIN_VALUE;
        probeCredit = 0;
        probeCursor = 0;
        homeReturn.start();
        timersTouched = true;
    }

    /** Something a path timer's condition reads changed: the next {@link #timers} scans every path. */
    void touch() {
        timersTouched = true;
    }

    /**
     * The earliest time a path timer may fall due with nothing changed, or {@code Long.MAX_VALUE}
     * when none can (no packet in flight, no probe pending) or a change awaits the next scan
     * (which the next duty cycle runs).
     */
    long timersDeadlineNs() {
        return timersTouched || timersIdle ? Long.MAX_VALUE : timersDueNs;
    }

    /**
     * When the path timers next need a duty-cycle step ({@link RcRequester#nextStepNs}, the engine
     * putting an idle QP to sleep): now while a change awaits the gated scan, else the gate's
     * deadline, {@code Long.MAX_VALUE} when no path timer can fall due.
     */
    long nextTimerNs(long nowNs) {
        if (timersTouched) {
            return nowNs;
        }
        return timersIdle ? Long.MAX_VALUE : timersDueNs;
    }

    /** The transmission number of the next packet put on a path (its order on the wire). */
    long nextSeq() {
        return ++txSeq;
    }

    /** The highest transmission number reported delivered on any path (-1 before the first). */
    long lastDeliveredSeq() {
        return lastDeliveredSeq;
    }

    /** Resolves every transmission of path {@code p} up to PSN {@code highest}: delivered or lost. */
    void onReport(Datapath dp, Path p, int ceCount, int highest, long nowNs) {
        timersTouched = true;
        if (highest - p.una < 0 && p.nextPsn - highest <= Path.RING && p.crossLost[highest & Path.RING_MASK]) {
            spuriousLoss(dp, p, highest, nowNs);
            return;
        }
        if (highest - p.una < 0 || highest - p.nextPsn >= 0) {
            return; // old news, or nonsense
        }
        int r = highest & Path.RING_MASK;
        long sampleNs = nowNs - p.txTimeNs[r];
        boolean probe = p.txBytes[r] == Path.PROBE_LEN;
        boolean lossBurst = false;
        long delivered = 0;
        int deliveredPackets = 0;
        int lost = 0;
        for (int psn = p.una; psn - highest <= 0; psn++) {
            int e = psn & Path.RING_MASK;
            int bytes = p.txBytes[e];
            if (bytes == Path.PROBE_LEN) {
                if (psn == highest) {
                    p.probesOk++;
                    p.lastDeliveryNs = nowNs;
                    lastDeliveredSeq = Math.max(lastDeliveredSeq, p.txSeq[e]);
                } else {
                    p.probesOk = 0;
                }
                continue;
            }
            p.inflightBytes -= bytes;
            int rsn = p.txRsn[e];
            if (requester.acked(rsn)) {
                delivered += bytes;
                deliveredPackets++;
                lastDeliveredSeq = Math.max(lastDeliveredSeq, p.txSeq[e]);
                lossBurst |= p.recordOutcome(false);
            } else {
                lost++;
                p.losses++;
                dp.counters.pathLosses++;
                lossBurst |= p.recordOutcome(true);
                requester.requeueIfLatest(rsn, p.id, psn);
            }
        }
        p.una = highest + 1;
        p.lastProgressNs = nowNs;
        p.tlpSent = false;
        p.deliveredBytes += delivered;
        if (delivered > 0) {
            p.lastDeliveryNs = nowNs;
        }
        if (reorderSlackNs > 0 && (reorderCleanPackets += deliveredPackets) >= REORDER_DECAY_PACKETS) {
            reorderCleanPackets = 0;
            reorderSlackNs /= 2;
        }
        if (delivered > 0) {
            // The responder is alive and taking data: a timeout while one packet is still being
            // re-routed (say, off a black-holed link) is no failed retry of the connection.
            requester.retriesReset(nowNs);
        }
        p.ecnMarks += ceCount;
        p.rttSample(sampleNs, dp.rtoMinNs, dp.rtoMaxNs);
        if (PathCongestion.updateRate(p, delivered, nowNs)) {
            qpWindow.invalidate();
        }
        if (p.state == Path.DEAD) {
            if (probe && p.probesOk >= RE_ADMIT_PROBES) {
                p.state = Path.ACTIVE;
                p.cwndBytes = (long) PathCongestion.INITIAL_PACKETS * qp.payloadPerPacket();
                p.lossHistory = 0;
                p.cleanRun = 0;
                p.restartRate();
                qpWindow.invalidate();
                homeReturn.onReadmitted(dp, p, nowNs);
            }
            return;
        }
        PathCongestion.onReport(dp, p, requester.minWindowBytes(), sampleNs, delivered, lost > 0 || ceCount > 0, nowNs);
        if (lost > 0 && lossBurst) {
            demote(dp, p, nowNs);
        } else if (p.state == Path.SUSPECT
                && (p.cleanRun >= CLEAN_RUN_TO_ACTIVE || probe && p.probesOk >= RE_ADMIT_PROBES)) {
            p.state = Path.ACTIVE;
        }
    }

    /** ACTIVE to SUSPECT; SUSPECT to DEAD (retired: new entropy, probed until clean). */
    private void demote(Datapath dp, Path p, long nowNs) {
        if (p.state == Path.ACTIVE && pathSet.count > 1) {
            p.state = Path.SUSPECT;
            p.suspectSinceNs = nowNs;
            p.cleanRun = 0;
            p.probesOk = 0;
            p.nextProbeNs = nowNs;
            return;
        }
        if (p.state == Path.DEAD || pathSet.count == 1 || !pathSet.anotherUsable(p)) {
            return; // the last usable path stays SUSPECT: a QP always keeps one to send on
        }
        retire(dp, p, nowNs);
    }

    private void retire(Datapath dp, Path p, long nowNs) {
        // Everything still in flight on it is lost; its RSNs go elsewhere.
        for (int psn = p.una; psn != p.nextPsn; psn++) {
            int e = psn & Path.RING_MASK;
            if (p.txBytes[e] == Path.PROBE_LEN) {
                continue;
            }
            int rsn = p.txRsn[e];
            requester.requeueIfLatest(rsn, p.id, psn);
        }
        p.una = p.nextPsn;
        p.inflightBytes = 0;
        homeReturn.onRetire(p, nowNs);
        p.state = Path.DEAD;
        p.generation++;
        p.replacements++;
        p.entropy = pathSet.redraw(p, nowNs);
        p.probesOk = 0;
        p.failedAtNs = nowNs;
        p.nextProbeNs = nowNs;
        p.lossHistory = 0;
        p.cwndBytes = requester.minWindowBytes();
        qpWindow.invalidate();
        dp.counters.pathRetirements++;
    }

    /** Per path: probes of SUSPECT and retired paths (within the budget), tail-loss probe, RTO. */
    int timers(Datapath dp, long nowNs) {
        if (!timersTouched && nowNs - timersDueNs < 0) {
            timerScansSkipped++;
            return 0;
        }
        timersTouched = false;
        timerScans++;
        int work = scan(dp, nowNs);
        timersDueNs = nextDue(dp, nowNs);
        return work;
    }

    /** Never, in {@link #nextDue}'s terms: far enough ahead that no clock reaches it. */
    private static final long NEVER = Long.MAX_VALUE / 4;

    /**
     * The earliest time at which a condition of {@link #scan} can hold for some path if nothing
     * else changes ({@link #touch} resets the gate on every change): per path with packets in
     * flight its RTO (a DEAD path's as {@link #scan} waits it), its tail-loss probe timeout and
     * the moment its oldest packet becomes overdue by cross-path evidence; per idle SUSPECT or
     * DEAD path its next probe, or the next probe epoch when the budget refused one.
     */
    private long nextDue(Datapath dp, long nowNs) {
        long due = nowNs + NEVER;
        timersIdle = true;
        long liveSrtt = -1; // computed when a DEAD path needs it, as scan does
        for (int i = 0; i < pathSet.count; i++) {
            Path p = paths[i];
            long d;
            if (p.hasInflight()) {
                if (p.state == Path.DEAD) {
                    if (liveSrtt < 0) {
                        liveSrtt = pathSet.largestLiveSrtt();
                    }
                    d = p.lastProgressNs + Math.max(p.rtoNs, 2 * liveSrtt);
                } else {
                    d = p.lastProgressNs + p.rtoNs;
                    if (!p.tlpSent) {
                        d = Math.min(d, p.lastProgressNs + p.ptoNs(dp.rtoInitialNs, dp.tlpMinNs));
                    }
                    int e = p.una & Path.RING_MASK;
                    boolean excused = p.tlpAway[e] && p.txBytes[e] != Path.PROBE_LEN && requester.acked(p.txRsn[e]);
                    if (p.hasRtt() && lastDeliveredSeq > p.txSeq[e] && !excused) {
                        // overdue once older than srtt + k * rttvar + the reordering slack (strictly)
                        d = Math.min(
                                d, p.txTimeNs[e] + p.srttNs + dp.lossDetectVarFactor * p.rttvarNs + reorderSlackNs + 1);
                    }
                }
            } else if (p.state != Path.ACTIVE) {
                d = p.nextProbeNs;
                if (d - nowNs <= 0 && probeRefused) {
                    d = (Math.floorDiv(nowNs, Datapath.PROBE_EPOCH_NS) + 1) * Datapath.PROBE_EPOCH_NS;
                }
            } else {
                d = nowNs + NEVER;
            }
            long home = homeReturn.dueNs(p, nowNs);
            if (home != HomeReturn.NONE && home - d < 0) {
                d = home;
            }
            if (d == nowNs + NEVER) {
                continue;
            }
            timersIdle = false;
            if (d - due < 0) {
                due = d;
            }
        }
        return due;
    }

    /** The probe budget refused a due probe in the last scan (it comes back in the next epoch). */
    private boolean probeRefused;

    /** Every path's timers: what {@link #timers} runs when its gate opens. */
    private int scan(Datapath dp, long nowNs) {
        int work = homeReturn.scan(dp, nowNs);
        work += probes(dp, nowNs);
        // A DEAD path's probe waits at least twice the slowest live path's srtt: its own RTO is
        // from before it died, and a probe queued behind the QP's own data is late, not lost.
        long liveSrtt = -1; // computed when a DEAD path needs it
        for (int i = 0; i < pathSet.count; i++) {
            Path p = paths[i];
            if (!p.hasInflight()) {
                continue;
            }
            long idle = nowNs - p.lastProgressNs;
            if (p.state != Path.DEAD && p.hasRtt() && overdue(dp, p, p.una, nowNs)) {
                work += crossPathLoss(dp, p, nowNs);
                if (!p.hasInflight()) {
                    continue;
                }
            }
            if (p.state == Path.DEAD && idle >= p.rtoNs && liveSrtt < 0) {
                liveSrtt = pathSet.largestLiveSrtt();
            }
            if (idle >= (p.state == Path.DEAD ? Math.max(p.rtoNs, 2 * liveSrtt) : p.rtoNs)) {
                work += pathTimeout(dp, p, nowNs);
            } else if (!p.tlpSent && p.state != Path.DEAD && idle >= p.ptoNs(dp.rtoInitialNs, dp.tlpMinNs)) {
                p.tlpSent = true;
                work += tailLossProbe(dp, p, nowNs);
            }
        }
        return work;
    }

    /**
     * Whether transmission {@code psn} of {@code p} (unresolved) is lost by cross-path evidence:
     * something sent after it on another path was reported delivered (a report of {@code p} itself
     * would have resolved it), and it is older than {@code p}'s own srtt + k * rttvar, so that
     * paths of different delay do not accuse each other of losses. No RTO floor.
     */
    private boolean overdue(Datapath dp, Path p, int psn, long nowNs) {
        int e = psn & Path.RING_MASK;
        if (p.tlpAway[e] && p.txBytes[e] != Path.PROBE_LEN && requester.acked(p.txRsn[e])) {
            // Its tail-loss probe went on another path and arrived, this copy is still
            // unreported: the path's RTO judges it and blames the path (something sent after it
            // arrived); a slow path's report may still come before that.
            return false;
        }
        return lastDeliveredSeq > p.txSeq[e]
                && nowNs - p.txTimeNs[e] > p.srttNs + dp.lossDetectVarFactor * p.rttvarNs + reorderSlackNs;
    }

    /** Delivered packets after which a learnt reordering tolerance halves. */
    static final int REORDER_DECAY_PACKETS = 1024;

    /**
     * A report of PSN {@code psn} of {@code p}, which cross-path detection had resolved lost: it
     * arrived after all, so the paths reorder more than srtt + k * rttvar. Widen the tolerance;
     * a path made SUSPECT by the false detection is reinstated.
     */
    private void spuriousLoss(Datapath dp, Path p, int psn, long nowNs) {
        int e = psn & Path.RING_MASK;
        p.crossLost[e] = false;
        dp.counters.spuriousLosses++;
        // at least how late it was beyond the threshold it was judged by (its report came now)
        long excess = nowNs - p.txTimeNs[e] - (p.srttNs + dp.lossDetectVarFactor * p.rttvarNs);
        long floor = Math.max(1000L, p.minRttNs == Long.MAX_VALUE ? 0 : p.minRttNs / 4);
        reorderSlackNs = Math.min(dp.rtoMinNs, Math.max(Math.max(floor, excess), 2 * reorderSlackNs));
        reorderCleanPackets = 0;
        if (p.state == Path.SUSPECT) {
            p.state = Path.ACTIVE;
            p.lossHistory = 0;
        }
    }

    /**
     * Cross-path, time-based loss detection: resolves as lost the overdue transmissions at the
     * head of {@code p} (they are in send order), queues their RSNs for retransmission elsewhere
     * and turns an ACTIVE path SUSPECT (a SUSPECT one that keeps losing is retired).
     */
    private int crossPathLoss(Datapath dp, Path p, long nowNs) {
        boolean lossBurst = false;
        boolean probeLost = false;
        int lost = 0;
        int psn = p.una;
        while (psn != p.nextPsn && overdue(dp, p, psn, nowNs)) {
            int e = psn & Path.RING_MASK;
            int bytes = p.txBytes[e];
            if (bytes == Path.PROBE_LEN) {
                p.probesOk = 0;
                probeLost = true;
            } else {
                p.inflightBytes -= bytes;
                int rsn = p.txRsn[e];
                if (!requester.acked(rsn)) {
                    lost++;
                    p.crossLost[e] = true;
                    p.losses++;
                    dp.counters.pathLosses++;
                    dp.counters.crossPathLosses++;
                    lossBurst |= p.recordOutcome(true);
                    requester.requeueIfLatest(rsn, p.id, psn);
                }
            }
            psn++;
        }
        p.una = psn;
        if (lost == 0 && !probeLost) {
            // Only transmissions whose requests were acknowledged through other copies: no
            // evidence against this path.
            return 1;
        }
        PathCongestion.halveOncePerSrtt(p, requester.minWindowBytes(), nowNs);
        if (p.state == Path.ACTIVE || lossBurst || probeLost) {
            demote(dp, p, nowNs); // a SUSPECT path whose probe is lost is retired, as on its RTO
        }
        return 1;
    }

    private int tailLossProbe(Datapath dp, Path p, long nowNs) {
        for (int psn = p.nextPsn - 1; psn - p.una >= 0; psn--) {
            int e = psn & Path.RING_MASK;
            if (p.txBytes[e] == Path.PROBE_LEN) {
                continue;
            }
            int rsn = p.txRsn[e];
            if (requester.isLatestUnacked(rsn, p.id, psn)) {
                // On the same path when there is evidence to judge this path by: something sent
                // after its oldest packet already arrived, or another live path, not silent
                // itself, still awaits a report (either is the evidence of the cross-path rule and
                // of the RTO's blame). With neither, as in a ping-pong whose message went into a
                // black hole, nothing could ever tell whether this path is at fault: the probe goes
                // on the path that delivered most recently, so that if it arrives the request is
                // done at once and this path's RTO blames it; if that copy is lost too, the peer
                // may be the one stalled, and nothing is blamed. A path as silent as this one, or
                // a probe another silent path sent on itself, is no evidence: two dead paths
                // holding a message's last two packets each took the other for evidence, and
                // neither was ever blamed.
                long oldest = p.txSeq[p.una & Path.RING_MASK];
                boolean evidence = lastDeliveredSeq > oldest || othersAwaitReports(dp, p, oldest, nowNs);
                int q = evidence ? p.id : pathSet.freshest(p.id);
                long keep = p.lastProgressNs;
                requester.sendOnPath(dp, rsn, q, Wire.FLAG_RETRANSMIT | Wire.FLAG_ACK_NOW, nowNs);
                if (q == p.id) {
                    p.lastProgressNs = keep;
                    p.tlpCopy[(p.nextPsn - 1) & Path.RING_MASK] = evidence;
                } else {
                    p.tlpAway[e] = true;
                }
                p.tlps++;
                paths[q].retransmitsSent++;
                dp.counters.dataRetransmits++;
                dp.counters.tlps++;
                return 1;
            }
        }
        return 0;
    }

    /**
     * Whether a live path other than {@code p} carries a request the peer has not acknowledged yet
     * whose report is evidence for or against {@code p}: one sent after {@code seq} ({@code p}'s
     * oldest, in send order), or any while that path is not silent itself (it had a report within
     * its own PTO). Probes, tail-loss probes sent on their own silent path and copies of requests
     * already acknowledged do not count. Scans the paths' rings: tail-loss probes only.
     */
    private boolean othersAwaitReports(Datapath dp, Path p, long seq, long nowNs) {
        for (int i = 0; i < pathSet.count; i++) {
            Path x = paths[i];
            if (x == p || x.state == Path.DEAD || x.inflightBytes == 0) {
                continue;
            }
            boolean silent = nowNs - x.lastProgressNs >= x.ptoNs(dp.rtoInitialNs, dp.tlpMinNs);
            for (int psn = x.una; psn != x.nextPsn; psn++) {
                int e = psn & Path.RING_MASK;
                if ((!silent || x.txSeq[e] > seq)
                        && x.txBytes[e] != Path.PROBE_LEN
                        && !x.tlpCopy[e]
                        && !requester.acked(x.txRsn[e])) {
                    return true;
                }
            }
        }
        return false;
    }

    private int pathTimeout(Datapath dp, Path p, long nowNs) {
        p.timeouts++;
        dp.counters.pathTimeouts++;
        // The path's own failure if the peer was heard from about something sent after this
        // path's oldest packet (or, for a path already SUSPECT, if no other path carries
        // anything to compare with); when the other paths are just as silent, the peer (or this
        // host) stalled and every path times out in turn: no path is to blame, none is demoted.
        boolean blame = lastDeliveredSeq > p.txSeq[p.una & Path.RING_MASK]
                || p.state == Path.SUSPECT && !pathSet.othersInflight(p);
        boolean probeLost = false;
        for (int psn = p.una; psn != p.nextPsn; psn++) {
            int e = psn & Path.RING_MASK;
            if (p.txBytes[e] == Path.PROBE_LEN) {
                p.probesOk = 0;
                probeLost = true;
                continue;
            }
            p.losses++;
            p.recordOutcome(true);
            int rsn = p.txRsn[e];
            requester.requeueIfLatest(rsn, p.id, psn);
        }
        p.una = p.nextPsn;
        p.inflightBytes = 0;
        p.tlpSent = false;
        if (p.state != Path.DEAD) {
            // A DEAD path's probes keep their own pace (one per probe interval); backing off
            // its RTO would space them up to rto_max apart and delay the re-admission.
            p.rtoNs = Math.min(dp.rtoMaxNs, p.rtoNs * 2);
        }
        PathCongestion.halve(p, requester.minWindowBytes(), nowNs);
        if (p.state != Path.DEAD && blame) {
            demote(dp, p, nowNs);
        } else if (p.state == Path.DEAD && probeLost) {
            if (!homeReturn.onProbeLost(p, nowNs)) {
                redrawDead(dp, p, nowNs);
            }
        }
        return 1;
    }

    /**
     * Probes the idle SUSPECT and DEAD paths that are due (one per probe interval each), in
     * rotation from where the last scan stopped, as far as the probe budget allows (spec 10).
     */
    private int probes(Datapath dp, long nowNs) {
        int n = pathSet.count;
        int work = 0;
        int last = -1;
        probeRefused = false;
        for (int k = 0; k < n; k++) {
            int i = probeCursor + k;
            if (i >= n) {
                i -= n;
            }
            Path p = paths[i];
            if (p.state == Path.ACTIVE || p.hasInflight() || nowNs - p.nextProbeNs < 0) {
                continue;
            }
            if (!probeBudget(dp, nowNs)) {
                probeRefused = true;
                break;
            }
            sendProbe(dp, p, nowNs);
            p.nextProbeNs = nowNs + Math.max(p.srttNs, PROBE_INTERVAL_MIN_NS);
            work++;
            last = i;
        }
        if (last >= 0) {
            probeCursor = last + 1 == n ? 0 : last + 1;
        }
        return work;
    }

    /** Smallest interval between two probes of one path. */
    static final long PROBE_INTERVAL_MIN_NS = 1_000_000L;

    /**
     * Takes one probe from the budget (spec 10): per epoch at most {@link Datapath#probesPerQp} for
     * this QP and {@link Datapath#probesPerDaemon} for the daemon; a QP that wants to probe earns
     * per epoch an equal part of the daemon's budget among the QPs that wanted to in the last one.
     */
    private boolean probeBudget(Datapath dp, long nowNs) {
        dp.probeEpoch(nowNs);
        if (probeEpoch != dp.probeEpoch) {
            probeEpoch = dp.probeEpoch;
            probesInEpoch = 0;
            dp.probersInEpoch++;
            int share = (int) Math.min(1 << 30, (dp.probesPerDaemon * 1024L) / Math.max(1, dp.probersLastEpoch));
            probeCredit = (int) Math.min(dp.probesPerQp * 1024L, (long) probeCredit + share);
        }
        if (probeCredit < 1024 || probesInEpoch >= dp.probesPerQp || dp.probesInEpoch >= dp.probesPerDaemon) {
            return false;
        }
        probeCredit -= 1024;
        probesInEpoch++;
        dp.probesInEpoch++;
        return true;
    }

    /** A DEAD path whose probe was lost leaves its entropy for a redrawn one (spec 10). */
    private void redrawDead(Datapath dp, Path p, long nowNs) {
        p.entropy = pathSet.redraw(p, nowNs);
        p.generation++;
        p.replacements++;
        p.probesOk = 0; // the next probe, under the new entropy, keeps the probe interval
        dp.counters.entropyRedraws++;
    }

    private void sendProbe(Datapath dp, Path p, long nowNs) {
        int psn = p.nextPsn;
        if (p.ringFull()) {
            return;
        }
        p.ensureRings();
        timersTouched = true;
        if (!p.hasInflight()) {
            p.lastProgressNs = nowNs;
        }
        p.nextPsn++;
        MemorySegment f = dp.port.claim();
        Wire.header(
                f,
                Wire.OP_PROBE,
                Wire.FLAG_ACK_NOW,
                p.id,
                psn,
                0,
                qp.destQpNum,
                qp.qpn,
                qp.txToken,
                0,
                0,
                0,
                0,
                p.entropy,
                0);
        dp.sendClaimed(f, Wire.HEADER_SIZE, qp.peerIp, qp.peerPort, p.entropy);
        int e = psn & Path.RING_MASK;
        p.txRsn[e] = 0;
        p.txTimeNs[e] = nowNs;
        p.txSeq[e] = nextSeq();
        p.crossLost[e] = false;
        p.tlpAway[e] = false;
        p.tlpCopy[e] = false;
        p.txBytes[e] = Path.PROBE_LEN;
        p.probesSent++;
        dp.counters.probesTx++;
    }
}
