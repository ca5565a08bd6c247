package io.metaroce.nic.transport;

import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.port.Port;
import java.lang.foreign.MemorySegment;

/**
 * The receiving half of an RC QP (docs/spec/transport.md section 5). Packets arrive in any order;
 * each is placed alone: a SEND packet names its message (msn), its byte offset and the message
 * length, so its payload goes straight to its place in the receive buffer that message consumes
 * (the n-th receive-consuming message takes the n-th posted receive, from the QP's RQ or its
 * SRQ); an RDMA WRITE packet names its target (rkey, virtual address) and is checked against it.
 * Duplicates are suppressed per RSN with a {@link RcRequester#WINDOW}-bit bitmap above the
 * cumulative RSN; messages complete in order once every byte landed and every earlier RSN was
 * placed. READ requests and atomics execute in RSN order (after everything before them landed):
 * READ responses are sent from a queue of read jobs ({@link ReadJobs}), atomic results are kept by RSN so that a
 * duplicate request is answered with the original value and never executed twice. A packet for a
 * message with no posted receive yet is dropped and answered with an RNR NAK.
 *
 * <p>Engine thread only.
 *
 * <p>Long because placement, duplicate bitmap, READ/atomic order and NAKs share one RSN state.
 */
public final class RcResponder {
    /** Atomic results kept for duplicates (more than max_dest_rd_atomic can have outstanding). */
    static final int ATOMIC_RESULTS = Wire.ATOMIC_REPLAY_WINDOW;

    private final Qp qp;
    private final WqeFlyweight wqe = new WqeFlyweight();
    private RecvWr[] wrs;
    private int wrMask;
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
    /** Paths seen (ids), to spread READ responses over their reply entropies. */
    private final int[] seenPaths = new int[RcRequester.MAX_PATHS];

    private int seenCount;
    private int responseRotor;
    /** Responses the current rotor path still takes before the rotation moves on. */
    private int responseRunLeft;
    /** Requests received (RSN placed) but not executed yet, by RSN slot: opcode, 0 when none. */
    private final int[] reqOp = new int[W];

    private final int[] reqRkey = new int[W];
    private final long[] reqVa = new long[W];
    private final long[] reqOffset = new long[W];
    private final int[] reqLen = new int[W];
    private final long[] reqMsgLen = new long[W];
    private final int[] reqUnit = new int[W];
    private final long[] reqCompareAdd = new long[W];
    private final long[] reqSwap = new long[W];
    /** READ requests (and re-requests) being answered. */
    private final ReadJobs reads = new ReadJobs();

    private final int[] atomicRsn = new int[ATOMIC_RESULTS];
    private final long[] atomicValue = new long[ATOMIC_RESULTS];
    private final boolean[] atomicValid = new boolean[ATOMIC_RESULTS];
    private int atomicNext;
    /** A refused packet (access error) waits for every RSN before it to land, then fails the QP. */
    private boolean errPending;

    private int errRsn;
    private int errSyndrome;
    /**
     * After this half refused a request and failed the QP, it answers every later packet of the
     * peer with the same NAK (the first one may be lost on a lossy link).
     */
    private boolean nakRepeat;

    private int nakRsn;
    private int nakSyndrome;

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
        if (qp.srq != null && wrs.length < W) {
            // Receives come from the SRQ, taken one message at a time: room for a full window.
            wrs = new RecvWr[W];
            for (int i = 0; i < W; i++) {
                wrs[i] = new RecvWr();
            }
            wrMask = W - 1;
            wrHead = wrTail = 0;
        }
        ePsn = qp.rqPsn;
        java.util.Arrays.fill(reqOp, 0);
        java.util.Arrays.fill(atomicValid, false);
        reads.clear();
        errPending = false;
        nakRepeat = false;
        seenCount = 0;
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
        if (d > 1 && !ConformanceBreak.GAP_UNREPORTED) {
            gapLosses[path] = (int) Math.min(0xffff, (long) gapLosses[path] + d - 1);
            dp.counters.gapsDetected++;
            gap = true;
        }
        if (h == -1 && d > 0) {
            seenPaths[seenCount++] = path;
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

    /** A PROBE (of a SUSPECT or retired path): track it and answer at once, on its own entropy. */
    public void onProbe(Datapath dp, MemorySegment frame, int ecn) {
        if (!qp.canReceive() || ConformanceBreak.PROBE_UNANSWERED) {
            return;
        }
        dp.counters.probesRx++;
        if (newsCount > 0) {
            // Reports owed to other paths leave first, on their own entropies: the probe's answer
            // rides its own route (spec 10), and if that route is dead it must take no other
            // path's report down with it.
            owe(dp, true);
        }
        trackPath(
                dp,
                Wire.u8(frame, Wire.OFF_PATH),
                Wire.u32(frame, Wire.OFF_PSN),
                Wire.u16(frame, Wire.OFF_REPLY_ENTROPY),
                ecn);
        owe(dp, true);
    }

    public void reset() {
        rqConsumer = qp.rq.producerAcquire();
        qp.rq.consumerRelease(rqConsumer);
        wrHead = wrTail = 0;
        msnHead = 0;
        reads.clear();
        nakRepeat = false;
        errPending = false;
    }

    public int expectedPsn() {
        return ePsn;
    }

    /**
     * Whether a duty-cycle step could do nothing now but read new receives ({@link #rqPosted}): no
     * READ response to send, and no whole message held back by a full CQ (in ERR: nothing left to
     * flush). The engine then leaves the QP asleep until a frame, a state change or a post wakes it.
     */
    public boolean idle() {
        if (!reads.isEmpty()) {
            return false;
        }
        if (qp.state == Ibv.QPS_ERR || wrHead == wrTail) {
            return wrHead == wrTail;
        }
        return !complete(wrs[wrHead & wrMask]);
    }

    /** Whether the RQ holds a receive this responder has not read and a step would read now. */
    public boolean rqPosted() {
        return qp.state != Ibv.QPS_RESET && qp.srq == null && qp.rq.producerAcquire() != rqConsumer;
    }

    /** One duty-cycle step: read posted receives, send READ responses; in ERR flush them. */
    public int doWork(Datapath dp) {
        int work = pollRq(dp);
        if (qp.state == Ibv.QPS_ERR) {
            reads.clear();
            work += flush();
        } else if (!reads.isEmpty() && qp.canReceive()) {
            work += reads.serve(dp, qp, this);
        }
        return work;
    }

    private int pollRq(Datapath dp) {
        if (qp.state == Ibv.QPS_RESET || qp.srq != null) {
            return 0; // an SRQ's receives are taken when a message needs one (pullSrq)
        }
        int producer = qp.rq.producerAcquire();
        int n = 0;
        while (rqConsumer != producer && wrTail - wrHead < wrs.length) {
            wqe.wrap(qp.rq.segment(), qp.rq.slotOffset(rqConsumer));
            wrs[wrTail & wrMask].read(wqe, qp.state == Ibv.QPS_ERR, dp.mrs, qp.pd, qp.pid, qp.maxRecvSge);
            rqConsumer++;
            wrTail++;
            n++;
        }
        if (n > 0) {
            qp.rq.consumerRelease(rqConsumer);
        }
        return n;
    }

    /**
     * Takes receives from the SRQ into this QP's list until message {@code m} (relative to the
     * head) has one: messages take SRQ receives in MSN order.
     */
    private void pullSrq(Datapath dp, int m) {
        Srq srq = qp.srq;
        while (m >= wrTail - wrHead && wrTail - wrHead < wrs.length && srq.peek(wqe)) {
            wrs[wrTail & wrMask].read(wqe, qp.state == Ibv.QPS_ERR, dp.mrs, srq.pd, srq.pid, srq.maxSge);
            srq.consume();
            wrTail++;
        }
    }

    /**
     * A request-stream packet (SEND, WRITE, READ request, atomic) arrived for this QP (already
     * CRC-checked and addressed to it); {@code ecn} is its IP header's ECN field (a CE mark counts
     * against its path).
     */
    public void onData(Datapath dp, MemorySegment frame, int length, int ecn) {
        if (!qp.canReceive()) {
            if (nakRepeat && qp.state == Ibv.QPS_ERR && !ConformanceBreak.NAK_ONCE) {
                sendNak(dp, nakRsn, nakSyndrome);
            }
            return;
        }
        int flags = Wire.u8(frame, Wire.OFF_FLAGS);
        int opcode = Wire.u8(frame, Wire.OFF_OPCODE);
        if ((flags & Wire.FLAG_RESEND) != 0) {
            if (Wire.isRequest(opcode)) {
                onResend(dp, frame, length, opcode, Wire.u32(frame, Wire.OFF_RSN));
            } else {
                dp.counters.malformed++;
            }
            return;
        }
        dp.counters.dataRx++;
        boolean gbn = (flags & Wire.FLAG_GBN) != 0;
        boolean now = (flags & Wire.FLAG_ACK_NOW) != 0;
        if (gbn) {
            replyEntropy = Wire.u16(frame, Wire.OFF_REPLY_ENTROPY);
        } else {
            now |= trackPath(
                    dp,
                    Wire.u8(frame, Wire.OFF_PATH),
                    Wire.u32(frame, Wire.OFF_PSN),
                    Wire.u16(frame, Wire.OFF_REPLY_ENTROPY),
                    ecn);
        }
        int psn = Wire.u32(frame, Wire.OFF_RSN);
        int d = psn - ePsn;
        if (d < 0 || (d < W && got[psn & M] && !ConformanceBreak.PLACE_DUPLICATE_TWICE)) {
            dp.counters.duplicates++;
            if (Wire.isRequest(opcode)) {
                onResend(dp, frame, length, opcode, psn); // lost responses: answer again
            }
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
        if (d >= W + (ConformanceBreak.ACCEPT_RSN_WINDOW_256 ? 1 : 0)
                || (ConformanceBreak.DROP_OUT_OF_ORDER && d > 0)) {
            dp.counters.outOfWindow++;
            owe(dp, now);
            return;
        }
        if (errPending && psn - errRsn >= 0) {
            return; // nothing at or after a refused packet is executed
        }
        switch (opcode) {
            case Wire.OP_SEND, Wire.OP_SEND_IMM -> onSend(dp, frame, length, psn, opcode, now);
            case Wire.OP_WRITE, Wire.OP_WRITE_IMM -> onWrite(dp, frame, length, psn, opcode, now);
            default -> onRequest(dp, frame, length, psn, opcode, now);
        }
    }

    private void onSend(Datapath dp, MemorySegment frame, int length, int psn, int opcode, boolean now) {
        long offset = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
        long msgLen = Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL;
        int payloadLen = length - Wire.HEADER_SIZE;
        if (offset + payloadLen > msgLen || (payloadLen == 0 && msgLen != 0)) {
            dp.counters.malformed++;
            return;
        }
        int m = Wire.u32(frame, Wire.OFF_MSN) - msnHead;
        if (m < 0) {
            dp.counters.duplicates++;
            owe(dp, now);
            return;
        }
        RecvWr wr = receive(dp, m, psn);
        if (wr == null) {
            return;
        }
        if (wr.msgLen >= 0 && (wr.msgLen != msgLen || wr.writeImm)) {
            dp.counters.malformed++;
            return;
        }
        if (wr.status >= 0) {
            // The posted receive was bad: it completes with its error, the sender learns of it.
            wr.failed = true;
            finalNak(dp, psn, Wire.NAK_REMOTE_OPERATIONAL);
            qp.toError();
            return;
        }
        if (msgLen > wr.capacity) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            wr.failed = true;
            finalNak(
                    dp,
                    psn,
                    ConformanceBreak.LENGTH_NAK_REMOTE_OP ? Wire.NAK_REMOTE_OPERATIONAL : Wire.NAK_INVALID_REQUEST);
            qp.toError();
            return;
        }
        startMessage(frame, wr, psn, msgLen, opcode == Wire.OP_SEND_IMM, false);
        dp.prepareStage(qp.pid);
        int tag = dp.nextStage();
        wr.sges.copy(
                dp.scatter,
                ConformanceBreak.SEND_IGNORES_OFFSET ? 0 : offset,
                payloadLen,
                frame.address() + Wire.HEADER_SIZE,
                tag);
        dp.stage(qp, psn, payloadLen, wr);
        if (now) {
            owe(dp, true);
        }
    }

    /** Notes what a packet tells of its message in the receive it consumes. */
    private static void startMessage(
            MemorySegment frame, RecvWr wr, int psn, long msgLen, boolean withImm, boolean writeImm) {
        if (wr.msgLen < 0) {
            wr.endRsn = psn + 1;
        } else if (wr.endRsn - (psn + 1) < 0) {
            wr.endRsn = psn + 1;
        }
        wr.msgLen = msgLen;
        wr.withImm = withImm;
        wr.writeImm = writeImm;
        wr.imm = withImm ? Integer.reverseBytes(Wire.u32(frame, Wire.OFF_IMM)) : 0;
        wr.srcQp = Wire.u32(frame, Wire.OFF_SRC_QPN);
        if ((Wire.u8(frame, Wire.OFF_FLAGS) & Wire.FLAG_SOLICITED) != 0) {
            wr.solicited = true;
        }
    }

    /** The receive message {@code m} (after the head) takes, or null after an RNR NAK. */
    private RecvWr receive(Datapath dp, int m, int psn) {
        if (m >= wrTail - wrHead) {
            // the receive may sit in the RQ ring (or the SRQ), not read yet this duty cycle
            if (qp.srq != null) {
                pullSrq(dp, m);
            } else {
                pollRq(dp);
            }
        }
        if (m >= wrTail - wrHead) {
            dp.counters.rnrDrops++;
            sendNak(dp, psn, Wire.NAK_RNR);
            return null;
        }
        return wrs[(wrHead + m) & wrMask];
    }

    /**
     * The region that rkey {@code rkey} names if [{@code va}, {@code va + len}) may be accessed
     * with {@code access} through this QP: a live region of the QP's PD and process that holds the
     * range and grants the access, on a QP whose own access flags grant it. Null otherwise.
     */
    private Mr remoteRegion(Datapath dp, int rkey, long va, long len, int access) {
        if ((qp.accessFlags & access) == 0) {
            return null;
        }
        Mr mr = dp.mrs.byRkey(rkey);
        if (mr == null
                || mr.pd != qp.pd
                || mr.pid != qp.pid
                || !mr.live()
                || !mr.contains(va, len)
                || (mr.access & access) != access) {
            return null;
        }
        return mr;
    }

    private void onWrite(Datapath dp, MemorySegment frame, int length, int psn, int opcode, boolean now) {
        long offset = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
        long msgLen = Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL;
        int payloadLen = length - Wire.HEADER_SIZE - Wire.RETH_SIZE;
        if (payloadLen < 0 || offset + payloadLen > msgLen || (payloadLen == 0 && msgLen != 0)) {
            dp.counters.malformed++;
            return;
        }
        long va = Wire.u64(frame, Wire.OFF_VA);
        Mr mr = null;
        if (msgLen > 0) { // a zero-length WRITE checks no key (IBA 9.4.3)
            mr = remoteRegion(dp, Wire.u32(frame, Wire.OFF_RKEY), va, msgLen, Ibv.ACCESS_REMOTE_WRITE);
            if (mr == null) {
                refuse(dp, psn, Wire.NAK_REMOTE_ACCESS);
                return;
            }
        }
        RecvWr wr = null;
        if (opcode == Wire.OP_WRITE_IMM) {
            int m = Wire.u32(frame, Wire.OFF_MSN) - msnHead;
            if (m < 0) {
                dp.counters.duplicates++;
                owe(dp, now);
                return;
            }
            wr = receive(dp, m, psn);
            if (wr == null) {
                return;
            }
            if (wr.msgLen >= 0 && (wr.msgLen != msgLen || !wr.writeImm)) {
                dp.counters.malformed++;
                return;
            }
            // The receive's scatter list is not used: only its wr_id and the immediate data.
            wr.status = -1;
            startMessage(frame, wr, psn, msgLen, !ConformanceBreak.WRITE_IMM_LOSES_IMM, true);
        }
        dp.prepareStage(qp.pid);
        int tag = dp.nextStage();
        if (payloadLen > 0) {
            dp.scatter.add(
                    frame.address() + Wire.HEADER_SIZE + Wire.RETH_SIZE,
                    mr.translate(va + (ConformanceBreak.WRITE_IGNORES_OFFSET ? 0 : offset)),
                    payloadLen,
                    tag);
        }
        dp.stage(qp, psn, payloadLen, wr);
        if (now) {
            owe(dp, true);
        }
    }

    /**
     * A READ request or an atomic: noted by its RSN (so it is deduplicated and acknowledged like
     * data) and executed once every RSN before it landed.
     */
    private void onRequest(Datapath dp, MemorySegment frame, int length, int psn, int opcode, boolean now) {
        int need = Wire.HEADER_SIZE + (opcode == Wire.OP_READ_REQ ? Wire.RETH_SIZE : Wire.ATOMIC_EXT_SIZE);
        if (length != need) {
            dp.counters.malformed++;
            return;
        }
        int s = psn & M;
        reqOp[s] = opcode;
        reqRkey[s] = Wire.u32(frame, Wire.OFF_RKEY);
        reqVa[s] = Wire.u64(frame, Wire.OFF_VA);
        reqOffset[s] = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
        reqMsgLen[s] = Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL;
        reqLen[s] = Wire.u32(frame, Wire.OFF_IMM);
        reqUnit[s] = Wire.u32(frame, Wire.OFF_RESP_UNIT);
        if (opcode != Wire.OP_READ_REQ) {
            reqCompareAdd[s] = Wire.u64(frame, Wire.OFF_COMPARE_ADD);
            reqSwap[s] = Wire.u64(frame, Wire.OFF_SWAP);
        }
        got[s] = true;
        if (psn == ePsn) {
            advance(dp); // every RSN before it landed (got[] is set only once a copy is done)
        }
        owe(dp, now);
    }

    /** Moves ePsn over placed RSNs, executing the requests it passes; then completes messages. */
    private void advance(Datapath dp) {
        while (got[ePsn & M]) {
            int s = ePsn & M;
            int op = reqOp[s];
            if (op != 0) {
                reqOp[s] = 0;
                if (!execute(dp, s, ePsn, op)) {
                    return; // refused: the QP is in ERR
                }
            }
            got[s] = false;
            ePsn++;
        }
        if (errPending && ePsn == errRsn) {
            fail(dp, errRsn, errSyndrome);
            return;
        }
        retire();
    }

    /** Executes request {@code rsn} (in order); false when it was refused (the QP is in ERR). */
    private boolean execute(Datapath dp, int s, int rsn, int op) {
        if (qp.maxDestRdAtomic == 0) {
            fail(dp, rsn, Wire.NAK_INVALID_REQUEST);
            return false;
        }
        if (op == Wire.OP_READ_REQ) {
            if (!reads.admitsOriginal(qp.maxDestRdAtomic)) {
                fail(dp, rsn, Wire.NAK_INVALID_REQUEST); // more outstanding than max_dest_rd_atomic
                return false;
            }
            int syndrome =
                    queueRead(dp, rsn, reqRkey[s], reqVa[s], reqOffset[s], reqLen[s], reqMsgLen[s], reqUnit[s], true);
            if (syndrome != 0) {
                fail(dp, rsn, syndrome);
                return false;
            }
            return true;
        }
        long va = reqVa[s];
        if ((va & 7) != 0) {
            // atomics need an 8-byte aligned address
            fail(
                    dp,
                    rsn,
                    ConformanceBreak.MISALIGNED_ATOMIC_ACCESS_NAK ? Wire.NAK_REMOTE_ACCESS : Wire.NAK_INVALID_REQUEST);
            return false;
        }
        Mr mr = remoteRegion(dp, reqRkey[s], va, 8, Ibv.ACCESS_REMOTE_ATOMIC);
        if (mr == null) {
            fail(dp, rsn, Wire.NAK_REMOTE_ACCESS);
            return false;
        }
        boolean ok = op == Wire.OP_ATOMIC_CS
                ? dp.atomic.compareAndSwap(qp.pid, mr.translate(va), reqCompareAdd[s], reqSwap[s])
                : dp.atomic.fetchAndAdd(qp.pid, mr.translate(va), reqCompareAdd[s]);
        if (!ok) {
            fail(dp, rsn, Wire.NAK_REMOTE_OPERATIONAL);
            return false;
        }
        dp.counters.atomicsExecuted++;
        int k = atomicNext;
        atomicNext = (atomicNext + 1) % ATOMIC_RESULTS;
        atomicRsn[k] = rsn;
        atomicValue[k] = dp.atomic.original();
        atomicValid[k] = true;
        sendAtomicResponse(dp, rsn, atomicValue[k]);
        return true;
    }

    /**
     * Queues a read job for bytes [{@code offset}, {@code offset + len}) of a READ of
     * {@code msgLen} bytes at {@code va}; returns 0 or the NAK syndrome that refuses it.
     */
    private int queueRead(
            Datapath dp, int rsn, int rkey, long va, long offset, int len, long msgLen, int unit, boolean original) {
        if (len < 0
                || offset + len > msgLen
                || (len == 0 && msgLen != 0)
                || unit <= 0
                || unit
                        > Math.min(
                                dp.framePayloadMax(Wire.HEADER_SIZE),
                                qp.ifMtu - Wire.IP_UDP_OVERHEAD - Wire.HEADER_SIZE)) {
            return Wire.NAK_INVALID_REQUEST;
        }
        Mr mr = null;
        if (msgLen > 0) { // a zero-length READ checks no key
            mr = remoteRegion(dp, rkey, va, msgLen, Ibv.ACCESS_REMOTE_READ);
            if (mr == null) {
                return Wire.NAK_REMOTE_ACCESS;
            }
        }
        reads.add(rsn, mr, mr == null ? 0 : mr.translate(va), offset, len, msgLen, unit, original);
        return 0;
    }

    /**
     * A duplicate or re-request ({@link Wire#FLAG_RESEND}) of a request: a READ executed already
     * sends the requested range again, an atomic executed already sends its original result again;
     * one not executed yet is ignored (it will answer when it executes).
     */
    private void onResend(Datapath dp, MemorySegment frame, int length, int opcode, int rsn) {
        if (rsn - ePsn >= 0) {
            return;
        }
        dp.counters.resendsRx++;
        if (opcode != Wire.OP_READ_REQ && !ConformanceBreak.ATOMIC_NO_REPLAY) {
            for (int k = 0; k < ATOMIC_RESULTS; k++) {
                if (atomicValid[k] && atomicRsn[k] == rsn) {
                    sendAtomicResponse(dp, rsn, atomicValue[k]);
                    return;
                }
            }
            return; // long gone: its requester completed it
        }
        if (length != Wire.HEADER_SIZE + Wire.RETH_SIZE) {
            dp.counters.malformed++;
            return;
        }
        long offset = Wire.u32(frame, Wire.OFF_OFFSET) & 0xffffffffL;
        if (reads.answering(rsn, offset)) {
            return; // still being answered
        }
        // Re-requests leave room for the READs max_dest_rd_atomic admits (spec T-5.13): busy,
        // the requester asks again.
        if (!reads.admitsResend(qp.maxDestRdAtomic)) {
            return;
        }
        boolean whole = ConformanceBreak.RESEND_WHOLE_READ;
        int syndrome = queueRead(
                dp,
                rsn,
                Wire.u32(frame, Wire.OFF_RKEY),
                Wire.u64(frame, Wire.OFF_VA),
                whole ? 0 : offset,
                Wire.u32(frame, whole ? Wire.OFF_MSG_LEN : Wire.OFF_IMM),
                Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL,
                Wire.u32(frame, Wire.OFF_RESP_UNIT),
                false);
        if (syndrome != 0) {
            fail(dp, rsn, syndrome);
        }
    }

    private void sendAtomicResponse(Datapath dp, int rsn, long original) {
        MemorySegment f = dp.port.claim();
        Wire.header(f, Wire.OP_ATOMIC_RESP, 0, 0, 0, rsn, qp.destQpNum, qp.qpn, qp.txToken, 0, 0, 8, 0, 0, 0);
        Wire.putU64(f, Wire.OFF_ORIGINAL, original);
        dp.sendClaimed(f, Wire.ATOMIC_RESP_SIZE, qp.peerIp, qp.peerPort, responseEntropy(dp));
        dp.counters.responsesTx++;
    }

    /**
     * The reply entropy for the next response: the paths seen in rotation, so that responses spread
     * over the links, a burst of the port's {@link io.metaroce.nic.port.Port#sendBurst} responses
     * per path (one on most ports; a run of a path's responses leaves as one buffer on the UDP
     * port: spec 10, "Bursts").
     */
    int responseEntropy(Datapath dp) {
        if (seenCount == 0) {
            return replyEntropy;
        }
        if (--responseRunLeft <= 0 || responseRotor >= seenCount) {
            if (++responseRotor >= seenCount) {
                responseRotor = 0;
            }
            responseRunLeft = dp.port.sendBurst();
        }
        return pathReplyEntropy[seenPaths[responseRotor]];
    }

    /**
     * A packet refused for an access violation: the error takes effect in order, once every RSN
     * before it landed (earlier requests complete normally), and nothing after it is executed.
     */
    private void refuse(Datapath dp, int rsn, int syndrome) {
        if (!errPending || rsn - errRsn < 0) {
            errPending = true;
            errRsn = rsn;
            errSyndrome = syndrome;
        }
        if (ePsn == errRsn) {
            fail(dp, errRsn, errSyndrome);
        }
    }

    /** Refuses request {@code rsn}: NAK with {@code syndrome}, the QP goes to ERR (async event). */
    void fail(Datapath dp, int rsn, int syndrome) {
        if (!qp.canReceive()) {
            return;
        }
        finalNak(dp, rsn, syndrome);
        if (syndrome == Wire.NAK_REMOTE_ACCESS) {
            dp.counters.accessErrors++;
        }
        qp.fatal(
                syndrome == Wire.NAK_REMOTE_ACCESS
                        ? Ibv.EVENT_QP_ACCESS_ERR
                        : syndrome == Wire.NAK_INVALID_REQUEST ? Ibv.EVENT_QP_REQ_ERR : Ibv.EVENT_QP_FATAL);
    }

    /** The payload of a staged packet landed (or failed to): count it, complete what is whole. */
    void commit(Datapath dp, int psn, int payloadLen, RecvWr wr, boolean failed) {
        if (!qp.canReceive()) {
            return;
        }
        if (failed) {
            if (wr != null && !wr.writeImm) {
                // the receive buffer went away: the receive fails, the sender learns of it
                wr.status = Ibv.WC_LOC_PROT_ERR;
                wr.failed = true;
                finalNak(dp, psn, Wire.NAK_REMOTE_OPERATIONAL);
                qp.toError();
            } else {
                fail(dp, psn, Wire.NAK_REMOTE_ACCESS); // the WRITE target could not be written
            }
            return;
        }
        int d = psn - ePsn;
        if (d < 0 || d >= W || got[psn & M]) {
            return;
        }
        got[psn & M] = true;
        if (wr != null) {
            wr.placed += payloadLen;
        }
        dp.ackLater(qp);
        if (d == 0) {
            advance(dp);
        }
    }

    /** Completes whole messages in order. */
    private int retire() {
        int n = 0;
        while (wrHead != wrTail) {
            RecvWr wr = wrs[wrHead & wrMask];
            if (!complete(wr)) {
                break;
            }
            if (!qp.recvCq.hasSpace()) {
                break;
            }
            qp.recvCq.post(
                    wr.wrId,
                    Ibv.WC_SUCCESS,
                    wr.writeImm ? Ibv.WC_RECV_RDMA_WITH_IMM : Ibv.WC_RECV,
                    (int) wr.msgLen,
                    wr.imm,
                    qp.qpn,
                    wr.srcQp,
                    wr.withImm ? Ibv.WC_WITH_IMM : 0,
                    wr.solicited);
            wrHead++;
            msnHead++;
            n++;
        }
        return n;
    }

    /** Whole, and every RSN before its last one landed (a WRITE before it is visible). */
    private boolean complete(RecvWr wr) {
        return wr.status < 0 && wr.msgLen >= 0 && wr.placed == wr.msgLen && ePsn - wr.endRsn >= 0;
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
        Wire.header(f, Wire.OP_ACK, 0, 0, 0, ePsn, qp.destQpNum, qp.qpn, qp.txToken, msnHead, 0, n, 0, 0, rwnd);
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
            Wire.putU8(f, off + 1, ConformanceBreak.CE_UNREPORTED ? 0 : Math.min(255, ceMarks[path]));
            Wire.putU16(f, off + 2, gapLosses[path]);
            Wire.putU32(f, off + 4, highest[path] + (ConformanceBreak.REPORT_PSN_AHEAD ? 1 : 0));
            news[path] = false;
            ceMarks[path] = 0;
            gapLosses[path] = 0;
        }
        newsCount = 0;
        int len = (int) off;
        dp.sendClaimed(f, len, qp.peerIp, qp.peerPort, entropy);
        dp.counters.acksTx++;
    }

    /** A NAK that fails the QP: repeated to every later packet of the peer (see {@link #nakRepeat}). */
    private void finalNak(Datapath dp, int rsn, int syndrome) {
        nakRepeat = true;
        nakRsn = rsn;
        nakSyndrome = syndrome;
        sendNak(dp, rsn, syndrome);
    }

    private void sendNak(Datapath dp, int rsn, int syndrome) {
        MemorySegment f = dp.port.claim();
        // message-length field: the cumulative RSN (every RSN below it landed)
        Wire.header(
                f,
                Wire.OP_NAK,
                0,
                0,
                0,
                rsn,
                qp.destQpNum,
                qp.qpn,
                qp.txToken,
                msnHead,
                ConformanceBreak.RNR_TIMER_ZERO ? 0 : qp.minRnrTimer,
                ePsn,
                syndrome,
                0,
                0);
        dp.sendClaimed(f, Wire.HEADER_SIZE, qp.peerIp, qp.peerPort, replyEntropy);
        dp.counters.naksTx++;
    }
}
