package io.metaroce.nic.transport;

import io.metaroce.nic.abi.Ibv;
import java.lang.foreign.MemorySegment;

/**
 * The requester's side of READ and atomic responses (docs/spec/transport.md section 8a): each
 * response is placed by its offset in the work request's scatter list, out of order, and also
 * acknowledges its request; a request whose responses stopped coming has its missing ranges
 * re-requested. The requests awaiting responses are in {@link ResponseTrackers}.
 *
 * <p>Engine thread only; one per {@link RcRequester}.
 */
final class ResponseReceiver {
    /** Missing ranges re-requested per tracker and timeout at most. */
    private static final int RANGES_PER_RESEND = 8;

    private final RcRequester requester;
    private final Qp qp;
    private final ResponseTrackers trackers;
    private final PathSet pathSet;

    ResponseReceiver(RcRequester requester, Qp qp, ResponseTrackers trackers, PathSet pathSet) {
        this.requester = requester;
        this.qp = qp;
        this.trackers = trackers;
        this.pathSet = pathSet;
    }

    /**
     * A READ or atomic response: places its payload (out of order, by its offset) in the work
     * request's scatter list; it also acknowledges its request.
     */
    void onResponse(Datapath dp, MemorySegment frame, int length, long nowNs) {
        if (!qp.canSend()) {
            return;
        }
        int rsn = Wire.u32(frame, Wire.OFF_RSN);
        int ti = trackers.indexOf(rsn);
        if (ti < 0) {
            dp.counters.duplicates++; // late: its request completed or the QP was reset
            return;
        }
        ResponseTrackers.Tracker t = trackers.get(ti);
        SendWr wr = requester.wr(t.wr);
        int op = Wire.u8(frame, Wire.OFF_OPCODE);
        int index;
        int len;
        long off;
        if (op == Wire.OP_ATOMIC_RESP) {
            if (!t.atomic || length != Wire.ATOMIC_RESP_SIZE) {
                dp.counters.malformed++;
                return;
            }
            index = 0;
            len = 8;
            off = 0;
        } else {
            off = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
            len = length - Wire.HEADER_SIZE;
            long rel = off - t.start;
            if (t.atomic
                    || (Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL) != wr.length
                    || rel < 0
                    || rel >= Math.max(1, t.length)
                    || rel % t.unit != 0
                    || len != Math.min(t.unit, t.length - rel)) {
                dp.counters.malformed++;
                return;
            }
            index = (int) (rel / t.unit);
        }
        if (!t.take(index)) {
            dp.counters.duplicates++;
            return;
        }
        dp.counters.responsesRx++;
        dp.prepareStage(qp.pid);
        int tag = dp.nextStage();
        if (op == Wire.OP_ATOMIC_RESP) {
            wr.sges.copy(dp.scatter, 0, 8, dp.atomicScratch(tag, Wire.u64(frame, Wire.OFF_ORIGINAL)), tag);
        } else if (len > 0) {
            wr.sges.copy(dp.scatter, off, len, frame.address() + Wire.HEADER_SIZE, tag);
        }
        dp.stageResponse(qp, rsn, ti);
        // Progress: the responder is alive; requests queued behind this one restart their timers.
        t.timeouts = 0;
        trackers.restartFrom(rsn, nowNs + requester.qpRtoNs());
        requester.responseArrived(dp, rsn, nowNs); // a response acknowledges its request
    }

    /** A staged response landed (or failed to): count it; a request whose responses all landed is done. */
    void commit(Datapath dp, int rsn, int ti, boolean failed) {
        ResponseTrackers.Tracker t = trackers.get(ti);
        if (!qp.canSend() || !t.active || t.rsn != rsn) {
            return;
        }
        SendWr wr = requester.wr(t.wr);
        if (failed) {
            wr.status = Ibv.WC_LOC_PROT_ERR;
            wr.failed = true;
            qp.toError();
            return;
        }
        if (++t.landed == t.packets) {
            trackers.finish(t);
            wr.responsesDone++;
        }
    }

    /**
     * Response timers: a request the responder acknowledged whose responses stopped coming (for
     * {@link RcRequester#qpRtoNs()}, doubling per timeout of that request) has its missing ranges re-requested
     * with {@link Wire#FLAG_RESEND}. Each round with timeouts counts once against retry_cnt; any
     * response (or new acknowledgement) resets the count.
     */
    int timers(Datapath dp, long nowNs) {
        int expired = -1;
        for (int i = 0; i < ResponseTrackers.CAPACITY; i++) {
            ResponseTrackers.Tracker t = trackers.get(i);
            if (!t.active || nowNs - t.deadlineNs < 0) {
                continue;
            }
            if (!requester.acked(t.rsn)) {
                // The request itself is not known to have arrived: the RSN recovery resends it.
                t.deadlineNs = nowNs + requester.qpRtoNs();
                continue;
            }
            if (t.staged < t.packets) {
                resendMissing(dp, t);
            }
            t.timeouts++;
            t.deadlineNs = nowNs + Math.min(dp.rtoMaxNs, requester.qpRtoNs() << Math.min(t.timeouts, 6));
            if (expired < 0 || t.rsn - trackers.get(expired).rsn < 0) {
                expired = i;
            }
        }
        if (expired < 0) {
            return 0;
        }
        dp.counters.responseTimeouts++;
        if (requester.responseRetryExhausted(nowNs)) {
            SendWr wr = requester.wr(trackers.get(expired).wr);
            wr.status = Ibv.WC_RETRY_EXC_ERR;
            wr.failed = true;
            qp.toError();
        }
        return 1;
    }

    /** Re-requests the missing response ranges of {@code t} (runs of missing packets). */
    private void resendMissing(Datapath dp, ResponseTrackers.Tracker t) {
        SendWr wr = requester.wr(t.wr);
        int ranges = 0;
        int i = 0;
        while (i < t.packets && ranges < RANGES_PER_RESEND) {
            if (t.has(i)) {
                i++;
                continue;
            }
            int first = i;
            while (i < t.packets && !t.has(i)) {
                i++;
            }
            long from = t.start + (long) first * t.unit;
            long to = Math.min(t.start + t.length, t.start + (long) i * t.unit);
            if (ConformanceBreak.REREQUEST_WHOLE_READ) {
                from = t.start;
                to = t.start + t.length;
            }
            sendResend(dp, t, wr, from, (int) (to - from));
            ranges++;
        }
    }

    private void sendResend(Datapath dp, ResponseTrackers.Tracker t, SendWr wr, long from, int len) {
        MemorySegment f = dp.port.claim();
        int op = RcRequester.wireOpcode(wr.opcode);
        int frameLen = Wire.HEADER_SIZE + (t.atomic ? Wire.ATOMIC_EXT_SIZE : Wire.RETH_SIZE);
        Wire.header(
                f,
                op,
                Wire.FLAG_RESEND,
                0,
                0,
                t.rsn,
                qp.destQpNum,
                qp.qpn,
                qp.txToken,
                wr.msn,
                (int) from,
                wr.length,
                t.atomic ? 0 : len,
                0,
                0);
        Wire.putU32(f, Wire.OFF_RKEY, wr.rkey);
        Wire.putU32(f, Wire.OFF_RESP_UNIT, t.atomic ? 0 : t.unit);
        Wire.putU64(f, Wire.OFF_VA, wr.remoteAddr);
        if (t.atomic) {
            Wire.putU64(f, Wire.OFF_COMPARE_ADD, wr.compareAdd);
            Wire.putU64(f, Wire.OFF_SWAP, wr.opcode == Ibv.WR_ATOMIC_CMP_AND_SWP ? wr.swap : 0);
        }
        dp.sendClaimed(f, frameLen, qp.peerIp, qp.peerPort, pathSet.nextLiveEntropy());
        dp.counters.resendsTx++;
    }
}
