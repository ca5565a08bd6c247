package io.metaroce.nic.transport;

import io.metaroce.nic.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.verbs.Mr;
import io.metaroce.nic.verbs.Qp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The sending half of an RC QP: reads the SQ into daemon-side work requests, cuts messages into
 * packets (a window of {@link #WINDOW} packets, kept for retransmission), and completes work
 * requests in order once every packet is acknowledged (cumulatively or selectively). Recovery:
 * on a timeout, resend only the packets not yet acknowledged, with exponential backoff; after
 * retry_cnt timeouts without progress the head request fails with IBV_WC_RETRY_EXC_ERR.
 *
 * <p>Engine thread only.
 */
public final class RcRequester {
    /** Packets in flight per QP; the receiver's SACK bitmap spans exactly this many PSNs. */
    public static final int WINDOW = 64;
    private static final int MASK = WINDOW - 1;
    /** Packets a QP may send per duty cycle, so one QP cannot starve the others. */
    private static final int BURST = 32;

    private final Qp qp;
    private final Arena arena = Arena.ofShared();
    private final WqeFlyweight wqe = new WqeFlyweight();
    private final SendWr[] wrs;
    private final int wrMask;
    private final MemorySegment inlineBuf;
    private final MemorySegment[] slots = new MemorySegment[WINDOW];
    private final ByteBuffer[] slotViews = new ByteBuffer[WINDOW];
    private final int[] slotWr = new int[WINDOW];
    private final int[] slotLen = new int[WINDOW];
    private final boolean[] slotAcked = new boolean[WINDOW];
    private int sqConsumer;
    private int wrHead;
    private int wrSent;
    private int wrTail;
    private int sendOffset;
    private int nextMsn;
    private int una;
    private int nextPsn;
    private long rtoNs;
    private long deadlineNs;
    private boolean timerArmed;
    private int retries;
    private int rnrRetries;
    private boolean rnrWait;

    public RcRequester(Qp qp) {
        this.qp = qp;
        int n = qp.maxSendWr;
        this.wrs = new SendWr[n];
        for (int i = 0; i < n; i++) {
            wrs[i] = new SendWr();
        }
        this.wrMask = n - 1;
        this.inlineBuf = arena.allocate((long) n * AbiConstants.MRCE_MAX_INLINE, 64);
        int frame = Wire.HEADER_SIZE + 4096;
        for (int i = 0; i < WINDOW; i++) {
            slots[i] = arena.allocate(frame, 64);
            slotViews[i] = slots[i].asByteBuffer();
        }
    }

    /** Entering RTS: the send PSN space starts at sq_psn. */
    public void start(long rtoInitialNs) {
        una = qp.sqPsn;
        nextPsn = qp.sqPsn;
        rtoNs = rtoInitialNs;
        timerArmed = false;
        retries = 0;
        rnrRetries = 0;
        rnrWait = false;
    }

    /** Back to RESET: forget every request and discard what the SQ holds. */
    public void reset() {
        sqConsumer = qp.sq.producerAcquire();
        qp.sq.consumerRelease(sqConsumer);
        wrHead = wrSent = wrTail = 0;
        sendOffset = 0;
        nextMsn = 0;
        timerArmed = false;
    }

    public void onError() {
        timerArmed = false;
    }

    public boolean hasTimer() {
        return timerArmed;
    }

    public long deadlineNs() {
        return deadlineNs;
    }

    /** One duty-cycle step: read new WQEs, send, complete, check the timer. */
    public int doWork(Datapath dp, long nowNs) {
        int work = pollSq(dp);
        if (qp.state == Ibv.QPS_ERR) {
            return work + flush();
        }
        if (qp.canSend()) {
            work += transmit(dp, nowNs);
            if (timerArmed && nowNs - deadlineNs >= 0) {
                work += onTimeout(dp, nowNs);
            }
        }
        return work + retire();
    }

    private int pollSq(Datapath dp) {
        if (!(qp.canSend() || qp.state == Ibv.QPS_ERR)) {
            return 0;
        }
        int producer = qp.sq.producerAcquire();
        int n = 0;
        while (sqConsumer != producer && wrTail - wrHead < wrs.length) {
            wqe.wrap(qp.sq.segment(), qp.sq.slotOffset(sqConsumer));
            readWqe(dp, wrs[wrTail & wrMask], wrTail & wrMask);
            sqConsumer++;
            wrTail++;
            n++;
        }
        if (n > 0) {
            qp.sq.consumerRelease(sqConsumer);
        }
        return n;
    }

    /** Copies and validates one WQE; the app may rewrite the slot afterwards, we never look again. */
    private void readWqe(Datapath dp, SendWr wr, int index) {
        wr.wrId = wqe.wrId();
        wr.opcode = wqe.opcode();
        wr.flags = wqe.sendFlags();
        wr.imm = wqe.immData();
        wr.status = -1;
        wr.failed = false;
        wr.packets = 0;
        wr.packetsAcked = 0;
        wr.length = 0;
        wr.numSge = 0;
        wr.inline = false;
        if (qp.state == Ibv.QPS_ERR) {
            wr.status = Ibv.WC_WR_FLUSH_ERR;
            return;
        }
        if (wr.opcode != Ibv.WR_SEND && wr.opcode != Ibv.WR_SEND_WITH_IMM) {
            wr.status = Ibv.WC_LOC_QP_OP_ERR;
            return;
        }
        if ((wr.flags & Ibv.SEND_INLINE) != 0) {
            int len = wqe.length();
            if (len < 0 || len > qp.maxInlineData || len > AbiConstants.MRCE_MAX_INLINE) {
                wr.status = Ibv.WC_LOC_LEN_ERR;
                return;
            }
            MemorySegment.copy(wqe.segment(), wqe.inlineDataOffset(), inlineBuf,
                    (long) index * AbiConstants.MRCE_MAX_INLINE, len);
            wr.inline = true;
            wr.length = len;
            return;
        }
        int numSge = wqe.numSge();
        if (numSge > qp.maxSendSge) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        long total = 0;
        int used = 0;
        for (int i = 0; i < numSge; i++) {
            long addr = wqe.sgeAddr(i);
            long len = wqe.sgeLength(i) & 0xffffffffL;
            if (len == 0) {
                continue;
            }
            Mr mr = dp.mrs.byLkey(wqe.sgeLkey(i));
            if (mr == null || mr.pd != qp.pd || mr.pid != qp.pid || !mr.contains(addr, len)) {
                wr.status = Ibv.WC_LOC_PROT_ERR;
                return;
            }
            wr.sgeAppAddr[used] = mr.translate(addr);
            wr.sgeMr[used] = mr;
            wr.sgeLen[used] = (int) len;
            used++;
            total += len;
        }
        if (total > Integer.MAX_VALUE) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        wr.numSge = used;
        wr.length = (int) total;
    }

    private int transmit(Datapath dp, long nowNs) {
        if (wrSent == wrTail || nextPsn - una >= WINDOW) {
            return 0;
        }
        int payload = qp.payloadPerPacket();
        int firstPsn = nextPsn;
        dp.gather.begin(qp.pid);
        int built = 0;
        boolean failedWr = false;
        while (wrSent != wrTail && nextPsn - una < WINDOW && built < BURST
                && dp.gather.count() + AbiConstants.MRCE_MAX_SGE <= io.metaroce.nic.dma.DmaBatch.IOV_MAX) {
            SendWr wr = wrs[wrSent & wrMask];
            if (wr.status >= 0) {
                wr.failed = true;
                failedWr = true;
                break;
            }
            if (sendOffset == 0) {
                wr.packets = Math.max(1, (wr.length + payload - 1) / payload);
                wr.msn = nextMsn++;
            }
            int len = Math.min(payload, wr.length - sendOffset);
            int slot = nextPsn & MASK;
            MemorySegment f = slots[slot];
            boolean last = sendOffset + len == wr.length;
            int flags = last && (wr.flags & Ibv.SEND_SOLICITED) != 0 ? Wire.FLAG_SOLICITED : 0;
            int op = wr.opcode == Ibv.WR_SEND_WITH_IMM ? Wire.OP_SEND_IMM : Wire.OP_SEND;
            Wire.header(f, op, flags, 0, nextPsn, qp.destQpNum, qp.qpn, 0, wr.msn, sendOffset,
                    wr.length, op == Wire.OP_SEND_IMM ? Integer.reverseBytes(wr.imm) : 0);
            if (len > 0) {
                if (wr.inline) {
                    MemorySegment.copy(inlineBuf,
                            (long) (wrSent & wrMask) * AbiConstants.MRCE_MAX_INLINE + sendOffset, f,
                            Wire.HEADER_SIZE, len);
                } else {
                    gatherPieces(dp, wr, sendOffset, len, f.address() + Wire.HEADER_SIZE, slot);
                }
            }
            slotWr[slot] = wrSent;
            slotLen[slot] = Wire.HEADER_SIZE + len;
            slotAcked[slot] = false;
            nextPsn++;
            built++;
            sendOffset += len;
            if (last) {
                wrSent++;
                sendOffset = 0;
            }
        }
        if (dp.gather.count() > 0 && dp.gather.flush() > 0) {
            // The application's memory is gone or unreadable: the request that needed it fails
            // and the QP goes to ERR; nothing of this burst is sent.
            for (int i = 0; i < dp.gather.count(); i++) {
                if (dp.gather.failed(i)) {
                    SendWr bad = wrs[slotWr[dp.gather.tag(i)] & wrMask];
                    bad.status = Ibv.WC_LOC_PROT_ERR;
                    bad.failed = true;
                    break;
                }
            }
            qp.toError();
            return built;
        }
        for (int i = 0; i < built; i++) {
            int slot = (firstPsn + i) & MASK;
            Wire.seal(dp.crc, slots[slot], slotViews[slot], slotLen[slot]);
            send(dp.port, slot);
        }
        dp.counters.dataTx += built;
        if (built > 0 && !timerArmed) {
            timerArmed = true;
            deadlineNs = nowNs + rtoNs;
        }
        if (failedWr) {
            // The next request failed validation: it completes with its error, the QP goes to ERR.
            qp.toError();
        }
        return built;
    }

    private void gatherPieces(Datapath dp, SendWr wr, int offset, int len, long dst, int slot) {
        int skip = offset;
        int remaining = len;
        for (int i = 0; i < wr.numSge && remaining > 0; i++) {
            int sl = wr.sgeLen[i];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = Math.min(sl - skip, remaining);
            if (wr.sgeMr[i].live()) {
                dp.gather.add(dst, wr.sgeAppAddr[i] + skip, n, slot);
            } else {
                dp.gather.addFailed(slot);
            }
            dst += n;
            remaining -= n;
            skip = 0;
        }
    }

    private void send(Port port, int slot) {
        int len = slotLen[slot];
        MemorySegment out = port.claim();
        MemorySegment.copy(slots[slot], 0, out, 0, len);
        port.commit(len, qp.peerIp, qp.peerPort, 0);
    }

    /** An ACK: every PSN before {@code ackPsn} arrived, and PSN ackPsn + i for each bit i of sack. */
    public void onAck(Datapath dp, int ackPsn, long sack, long nowNs) {
        dp.counters.acksRx++;
        if (!qp.canSend() || ackPsn - una < 0 || ackPsn - nextPsn > 0) {
            return;
        }
        for (int p = una; p != ackPsn; p++) {
            markAcked(p);
        }
        long bits = sack;
        while (bits != 0) {
            int i = Long.numberOfTrailingZeros(bits);
            bits &= bits - 1;
            int p = ackPsn + i;
            if (p - nextPsn < 0) {
                markAcked(p);
            }
        }
        int before = una;
        while (una != nextPsn && slotAcked[una & MASK]) {
            una++;
        }
        if (una != before) {
            retries = 0;
            rnrRetries = 0;
            rnrWait = false;
            rtoNs = dp.rtoInitialNs;
            timerArmed = una != nextPsn;
            deadlineNs = nowNs + rtoNs;
        }
    }

    private void markAcked(int psn) {
        int slot = psn & MASK;
        if (!slotAcked[slot]) {
            slotAcked[slot] = true;
            wrs[slotWr[slot] & wrMask].packetsAcked++;
        }
    }

    /** A NAK for {@code psn}: RNR (no receive posted yet) or a request the responder rejected. */
    public void onNak(Datapath dp, int psn, int syndrome, int rnrTimer, long nowNs) {
        dp.counters.naksRx++;
        if (!qp.canSend() || psn - una < 0 || psn - nextPsn >= 0) {
            return;
        }
        SendWr wr = wrs[slotWr[psn & MASK] & wrMask];
        if (syndrome == Wire.NAK_RNR) {
            if (qp.rnrRetry != 7 && ++rnrRetries > qp.rnrRetry) {
                wr.status = Ibv.WC_RNR_RETRY_EXC_ERR;
                wr.failed = true;
                qp.toError();
                return;
            }
            rnrWait = true;
            timerArmed = true;
            deadlineNs = nowNs + rnrDelayNs(rnrTimer);
        } else {
            wr.status = syndrome == Wire.NAK_INVALID_REQUEST ? Ibv.WC_REM_INV_REQ_ERR
                    : Ibv.WC_REM_OP_ERR;
            wr.failed = true;
            qp.toError();
        }
    }

    /** IB's RNR NAK timer field (IBA table 45), in microseconds; code 0 means 655.36 ms. */
    private static final int[] RNR_TIMER_US = {655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320,
        480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
        61440, 81920, 122880, 163840, 245760, 327680, 491520};

    static long rnrDelayNs(int code) {
        return RNR_TIMER_US[code & 31] * 1000L;
    }

    private int onTimeout(Datapath dp, long nowNs) {
        if (una == nextPsn) {
            timerArmed = false;
            return 0;
        }
        if (rnrWait) {
            rnrWait = false;
        } else {
            dp.counters.timeouts++;
            if (++retries > qp.retryCnt) {
                SendWr head = wrs[slotWr[una & MASK] & wrMask];
                head.status = Ibv.WC_RETRY_EXC_ERR;
                head.failed = true;
                qp.toError();
                return 1;
            }
            rtoNs = Math.min(rtoNs * 2, dp.rtoMaxNs);
        }
        int resent = 0;
        for (int p = una; p != nextPsn; p++) {
            int slot = p & MASK;
            if (!slotAcked[slot]) {
                send(dp.port, slot);
                resent++;
            }
        }
        dp.counters.dataRetransmits += resent;
        deadlineNs = nowNs + rtoNs;
        return resent;
    }

    /** Completes fully acknowledged requests in order. */
    private int retire() {
        int n = 0;
        while (wrHead != wrSent) {
            SendWr wr = wrs[wrHead & wrMask];
            if (wr.packetsAcked < wr.packets) {
                break;
            }
            if (signaled(wr)) {
                if (!qp.sendCq.hasSpace()) {
                    break;
                }
                qp.sendCq.post(wr.wrId, Ibv.WC_SUCCESS, Ibv.WC_SEND, wr.length, 0, qp.qpn, 0, 0, false);
            }
            wrHead++;
            n++;
        }
        return n;
    }

    /** In ERR: complete everything outstanding, in order (its own error, success if acked, flush). */
    private int flush() {
        int n = 0;
        while (wrHead != wrTail) {
            SendWr wr = wrs[wrHead & wrMask];
            boolean done = !wr.failed && wr.packets > 0 && wr.packetsAcked == wr.packets
                    && wrHead - wrSent < 0;
            int status = wr.failed ? wr.status : done ? Ibv.WC_SUCCESS : Ibv.WC_WR_FLUSH_ERR;
            if (status != Ibv.WC_SUCCESS || signaled(wr)) {
                if (!qp.sendCq.hasSpace()) {
                    break;
                }
                qp.sendCq.post(wr.wrId, status, Ibv.WC_SEND, status == Ibv.WC_SUCCESS ? wr.length : 0,
                        0, qp.qpn, 0, 0, false);
            }
            wrHead++;
            n++;
        }
        wrSent = wrHead;
        sendOffset = 0;
        una = nextPsn;
        return n;
    }

    private boolean signaled(SendWr wr) {
        return qp.sqSigAll || (wr.flags & Ibv.SEND_SIGNALED) != 0;
    }

    /** Work requests read from the SQ but not completed yet. */
    public int outstanding() {
        return wrTail - wrHead;
    }

    public void close() {
        arena.close();
    }
}
