package io.metaroce.nic.transport;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.verbs.Qp;
import java.lang.foreign.MemorySegment;

/**
 * The receiving half of an RC QP. Packets arrive in any order; each names its message (msn), its
 * byte offset and the message length, so its payload goes straight to its place in the receive
 * buffer that message consumes (the n-th message takes the n-th posted receive). Duplicates are
 * suppressed per PSN with a {@link RcRequester#WINDOW}-bit bitmap above the cumulative PSN;
 * messages complete in order once every byte landed. A packet for a message with no posted
 * receive yet is dropped and answered with an RNR NAK.
 *
 * <p>Engine thread only.
 */
public final class RcResponder {
    private final Qp qp;
    private final WqeFlyweight wqe = new WqeFlyweight();
    private final RecvWr[] wrs;
    private final int wrMask;
    private int rqConsumer;
    private int wrHead;
    private int wrTail;
    private static final int W = RcRequester.WINDOW;
    private static final int M = W - 1;
    /** Every RSN before ePsn was placed; got[r & M]: RSN r (ePsn <= r < ePsn + W) was placed. */
    private int ePsn;
    private final boolean[] got = new boolean[W];
    private int msnHead;
    boolean ackQueued;
    /** Per path id: the highest PSN seen (-1: none), news to report, gap losses, CE marks. */
    private final int[] highest = new int[RcRequester.MAX_PATHS];
    private final boolean[] news = new boolean[RcRequester.MAX_PATHS];
    private final int[] newsList = new int[RcRequester.MAX_PATHS];
    private int newsCount;
    private final int[] gapLosses = new int[RcRequester.MAX_PATHS];
    private final int[] ceMarks = new int[RcRequester.MAX_PATHS];
    private int replyEntropy;
    /** The reply entropy each path's latest packet asked for. */
    private final int[] pathReplyEntropy = new int[RcRequester.MAX_PATHS];
    /** Rotates the ACK's entropy over the paths it reports (spreads ACKs over every link). */
    private int ackRotor;
    /** Baseline: the ePsn a SEQUENCE_ERROR NAK was sent for (one per gap). */
    private int seqNakFor;
    private boolean seqNakSent;

    public RcResponder(Qp qp) {
        this.qp = qp;
        int n = qp.maxRecvWr;
        this.wrs = new RecvWr[n];
        for (int i = 0; i < n; i++) {
            wrs[i] = new RecvWr();
        }
        this.wrMask = n - 1;
    }

    /** Entering RTR: the receive PSN space starts at rq_psn. */
    public void start() {
        ePsn = qp.rqPsn;
        java.util.Arrays.fill(got, false);
        java.util.Arrays.fill(highest, -1);
        java.util.Arrays.fill(news, false);
        java.util.Arrays.fill(gapLosses, 0);
        java.util.Arrays.fill(ceMarks, 0);
        newsCount = 0;
        seqNakSent = false;
        msnHead = 0;
    }

    /** Work requests read from the RQ and not completed yet (per-message state still held). */
    public int outstanding() {
        return wrTail - wrHead;
    }

    /** RSNs placed above the cumulative one (state that a completed transfer leaves at zero). */
    public int placedAboveCumulative() {
        int n = 0;
        for (int i = 0; i < W; i++) {
            n += got[i] ? 1 : 0;
        }
        return n;
    }

    /** Path tracking (spec 5.1): returns true on a gap, which asks for an immediate ACK. */
    private boolean trackPath(Datapath dp, int path, int psn, int entropy, int ecn) {
        replyEntropy = entropy;
        pathReplyEntropy[path] = entropy;
        if (ecn == Port.ECN_CE) {
            ceMarks[path]++;
            dp.counters.ecnMarksRx++;
        }
        int h = highest[path];
        boolean gap = false;
        int d = psn - h;
        if (d > 1) {
            gapLosses[path] = (int) Math.min(0xffff, (long) gapLosses[path] + d - 1);
            dp.counters.gapsDetected++;
            gap = true;
        }
        if (d > 0) {
            highest[path] = psn;
            if (!news[path]) {
                news[path] = true;
                newsList[newsCount++] = path;
            }
        }
        return gap;
    }

    /** An ACK is owed: at the end of the batch, or now (gap, ACK_NOW). */
    private void owe(Datapath dp, boolean now) {
        if (now) {
            dp.commitRx();
            sendAck(dp);
        } else {
            dp.ackLater(qp);
        }
    }

    /** A PROBE on a retired path: track it and answer at once. */
    public void onProbe(Datapath dp, MemorySegment frame, int ecn) {
        if (!qp.canReceive()) {
            return;
        }
        dp.counters.probesRx++;
        trackPath(dp, Wire.u8(frame, Wire.OFF_PATH), Wire.u32(frame, Wire.OFF_PSN),
                Wire.u16(frame, Wire.OFF_REPLY_ENTROPY), ecn);
        owe(dp, true);
    }

    public void reset() {
        rqConsumer = qp.rq.producerAcquire();
        qp.rq.consumerRelease(rqConsumer);
        wrHead = wrTail = 0;
        msnHead = 0;
    }

    public int expectedPsn() {
        return ePsn;
    }

    /** One duty-cycle step: read posted receives; in ERR flush them. */
    public int doWork(Datapath dp) {
        int work = pollRq(dp);
        if (qp.state == Ibv.QPS_ERR) {
            work += flush();
        }
        return work;
    }

    private int pollRq(Datapath dp) {
        if (qp.state == Ibv.QPS_RESET) {
            return 0;
        }
        int producer = qp.rq.producerAcquire();
        int n = 0;
        while (rqConsumer != producer && wrTail - wrHead < wrs.length) {
            wqe.wrap(qp.rq.segment(), qp.rq.slotOffset(rqConsumer));
            readWqe(dp, wrs[wrTail & wrMask]);
            rqConsumer++;
            wrTail++;
            n++;
        }
        if (n > 0) {
            qp.rq.consumerRelease(rqConsumer);
        }
        return n;
    }

    private void readWqe(Datapath dp, RecvWr wr) {
        wr.reset();
        wr.wrId = wqe.wrId();
        wr.sges.count = 0;
        wr.capacity = 0;
        if (qp.state == Ibv.QPS_ERR) {
            wr.status = Ibv.WC_WR_FLUSH_ERR;
            return;
        }
        int numSge = wqe.numSge();
        if (numSge > qp.maxRecvSge) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        long total = wr.sges.load(dp.mrs, qp, wqe, numSge, Ibv.ACCESS_LOCAL_WRITE);
        if (total < 0) {
            wr.status = Ibv.WC_LOC_PROT_ERR;
            return;
        }
        wr.capacity = total;
    }

    /**
     * A SEND packet arrived for this QP (already CRC-checked and addressed to it); {@code ecn} is
     * its IP header's ECN field (a CE mark counts against its path).
     */
    public void onData(Datapath dp, MemorySegment frame, int length, int ecn) {
        if (!qp.canReceive()) {
            return;
        }
        dp.counters.dataRx++;
        int flags = Wire.u8(frame, Wire.OFF_FLAGS);
        boolean gbn = (flags & Wire.FLAG_GBN) != 0;
        boolean now = (flags & Wire.FLAG_ACK_NOW) != 0;
        if (gbn) {
            replyEntropy = Wire.u16(frame, Wire.OFF_REPLY_ENTROPY);
        } else {
            now |= trackPath(dp, Wire.u8(frame, Wire.OFF_PATH), Wire.u32(frame, Wire.OFF_PSN),
                    Wire.u16(frame, Wire.OFF_REPLY_ENTROPY), ecn);
        }
        int psn = Wire.u32(frame, Wire.OFF_RSN);
        int d = psn - ePsn;
        if (d < 0 || (d < W && got[psn & M])) {
            dp.counters.duplicates++;
            owe(dp, now);
            return;
        }
        if (gbn && d > 0) {
            // Classic RoCE: only the expected PSN is accepted; one NAK per gap.
            dp.counters.outOfWindow++;
            if (!seqNakSent || seqNakFor != ePsn) {
                seqNakSent = true;
                seqNakFor = ePsn;
                dp.commitRx();
                sendNak(dp, ePsn, Wire.NAK_SEQUENCE_ERROR);
                dp.counters.sequenceNaksTx++;
            }
            return;
        }
        if (d >= W) {
            dp.counters.outOfWindow++;
            owe(dp, now);
            return;
        }
        int msn = Wire.u32(frame, Wire.OFF_MSN);
        long offset = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
        long msgLen = Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL;
        int payloadLen = length - Wire.HEADER_SIZE;
        int m = msn - msnHead;
        if (m < 0) {
            dp.counters.duplicates++;
            owe(dp, now);
            return;
        }
        if (offset + payloadLen > msgLen || (payloadLen == 0 && msgLen != 0)) {
            dp.counters.malformed++;
            return;
        }
        if (m >= wrTail - wrHead) {
            pollRq(dp); // the receive may sit in the RQ ring, not read yet this duty cycle
        }
        if (m >= wrTail - wrHead) {
            dp.counters.rnrDrops++;
            sendNak(dp, psn, Wire.NAK_RNR);
            return;
        }
        RecvWr wr = wrs[(wrHead + m) & wrMask];
        if (wr.msgLen >= 0 && wr.msgLen != msgLen) {
            dp.counters.malformed++;
            return;
        }
        if (wr.status >= 0) {
            // The posted receive was bad: it completes with its error, the sender learns of it.
            wr.failed = true;
            sendNak(dp, psn, Wire.NAK_REMOTE_OPERATIONAL);
            qp.toError();
            return;
        }
        if (msgLen > wr.capacity) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            wr.failed = true;
            sendNak(dp, psn, Wire.NAK_INVALID_REQUEST);
            qp.toError();
            return;
        }
        int opcode = Wire.u8(frame, Wire.OFF_OPCODE);
        wr.msgLen = msgLen;
        wr.withImm = opcode == Wire.OP_SEND_IMM;
        wr.imm = wr.withImm ? Integer.reverseBytes(Wire.u32(frame, Wire.OFF_IMM)) : 0;
        wr.srcQp = Wire.u32(frame, Wire.OFF_SRC_QPN);
        if ((Wire.u8(frame, Wire.OFF_FLAGS) & Wire.FLAG_SOLICITED) != 0) {
            wr.solicited = true;
        }
        dp.prepareStage(qp.pid);
        int tag = dp.nextStage();
        wr.sges.copy(dp.scatter, offset, payloadLen, frame.address() + Wire.HEADER_SIZE, tag);
        dp.stage(qp, psn, payloadLen, wr);
        if (now) {
            owe(dp, true);
        }
    }

    /** The payload of a staged packet landed (or failed to): count it, complete what is whole. */
    void commit(Datapath dp, int psn, int payloadLen, RecvWr wr, boolean failed) {
        if (!qp.canReceive()) {
            return;
        }
        if (failed) {
            wr.status = Ibv.WC_LOC_PROT_ERR;
            wr.failed = true;
            qp.toError();
            return;
        }
        int d = psn - ePsn;
        if (d < 0 || d >= W || got[psn & M]) {
            return;
        }
        got[psn & M] = true;
        while (got[ePsn & M]) {
            got[ePsn & M] = false;
            ePsn++;
        }
        wr.placed += payloadLen;
        dp.ackLater(qp);
        retire();
    }

    /** Completes whole messages in order. */
    private int retire() {
        int n = 0;
        while (wrHead != wrTail) {
            RecvWr wr = wrs[wrHead & wrMask];
            if (wr.status >= 0 || wr.msgLen < 0 || wr.placed != wr.msgLen) {
                break;
            }
            if (!qp.recvCq.hasSpace()) {
                break;
            }
            qp.recvCq.post(wr.wrId, Ibv.WC_SUCCESS, Ibv.WC_RECV, (int) wr.msgLen, wr.imm, qp.qpn,
                    wr.srcQp, wr.withImm ? Ibv.WC_WITH_IMM : 0, wr.solicited);
            wrHead++;
            msnHead++;
            n++;
        }
        return n;
    }

    /** Retries completions a full CQ held back. */
    public int retireHeld() {
        return qp.canReceive() ? retire() : 0;
    }

    private int flush() {
        int n = 0;
        while (wrHead != wrTail) {
            RecvWr wr = wrs[wrHead & wrMask];
            int status = wr.failed ? wr.status : Ibv.WC_WR_FLUSH_ERR;
            if (!qp.recvCq.hasSpace()) {
                break;
            }
            qp.recvCq.post(wr.wrId, status, Ibv.WC_RECV, 0, 0, qp.qpn, 0, 0, false);
            wrHead++;
            n++;
        }
        return n;
    }

    /** ACK: cumulative RSN, the SACK bitmap above it, the path reports, the receive window. */
    void sendAck(Datapath dp) {
        MemorySegment f = dp.port.claim();
        int n = newsCount;
        int rwnd = qp.recvCq.hasSpace() ? W : 1;
        Wire.header(f, Wire.OP_ACK, 0, 0, 0, ePsn, qp.destQpNum, qp.qpn, 0, msnHead, 0, n, 0, 0, rwnd);
        for (int w = 0; w < Wire.SACK_BYTES / 8; w++) {
            long bits = 0;
            int base = ePsn + 64 * w;
            for (int j = 0; j < 64; j++) {
                if (got[(base + j) & M]) {
                    bits |= 1L << j;
                }
            }
            Wire.putSackWord(f, Wire.HEADER_SIZE + 8L * w, bits);
        }
        int entropy = replyEntropy;
        if (n > 0) {
            if (++ackRotor >= n) {
                ackRotor = 0;
            }
            entropy = pathReplyEntropy[newsList[ackRotor]];
        }
        long off = Wire.OFF_REPORTS;
        for (int k = 0; k < n; k++, off += Wire.REPORT_SIZE) {
            int path = newsList[k];
            Wire.putU8(f, off, path);
            Wire.putU8(f, off + 1, Math.min(255, ceMarks[path]));
            Wire.putU16(f, off + 2, gapLosses[path]);
            Wire.putU32(f, off + 4, highest[path]);
            news[path] = false;
            ceMarks[path] = 0;
            gapLosses[path] = 0;
        }
        newsCount = 0;
        int len = (int) off;
        Wire.seal(dp.crc, f, dp.port.claimedView(), len);
        dp.port.commit(len, qp.peerIp, qp.peerPort, entropy);
        dp.counters.acksTx++;
    }

    private void sendNak(Datapath dp, int rsn, int syndrome) {
        MemorySegment f = dp.port.claim();
        Wire.header(f, Wire.OP_NAK, 0, 0, 0, rsn, qp.destQpNum, qp.qpn, 0, msnHead, qp.minRnrTimer, 0,
                syndrome, 0, 0);
        Wire.seal(dp.crc, f, dp.port.claimedView(), Wire.HEADER_SIZE);
        dp.port.commit(Wire.HEADER_SIZE, qp.peerIp, qp.peerPort, replyEntropy);
        dp.counters.naksTx++;
    }
}
