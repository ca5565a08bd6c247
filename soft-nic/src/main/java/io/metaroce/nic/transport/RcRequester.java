package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.dma.DmaBatch;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The sending half of an RC QP (docs/spec/transport.md sections 3, 6-11). Reads the SQ into
 * daemon-side work requests, cuts messages into packets numbered by RSN (a window of up to
 * {@link #WINDOW} that follows the QP's bandwidth-delay product, {@link QpWindow}, kept for
 * retransmission) and sprays them over the QP's {@link Path}s ({@link PathSet}), each with its own
 * PSN space. Path reports in ACKs resolve every transmission of a path up to the reported PSN:
 * delivered, or lost (a path is FIFO); a lost RSN is resent on another healthy path with a fresh
 * PSN, and one stuck on a slow path is sent again on a fast one (section 10a). Loss detection,
 * tail-loss probes, per-path RTOs, path retirement and probing are {@link PathRecovery}'s;
 * per-path congestion windows in {@link PathCongestion}; READ and atomic responses in
 * {@link ResponseTrackers}. Work requests
 * complete in order once every RSN is acknowledged. The baseline mode is a classic go-back-N
 * requester on one path.
 *
 * <p>Engine thread only.
 *
 * <p>Long because the send window, RSN/PSN state and completions are one hot-path state machine.
 */
public final class RcRequester {
    /** RSNs in flight per QP at most; the responder's SACK bitmap spans exactly this many. */
    public static final int WINDOW = 256;
    /** Oldest RSNs examined, and most resent, per duty cycle by opportunistic retransmission. */
    private static final int ORP_SCAN = 32;

    private static final int ORP_BURST = 8;
    private static final int MASK = WINDOW - 1;
    /** Packets a QP may send per duty cycle, so one QP cannot starve the others. */
    private static final int BURST = 32;

    public static final int MAX_PATHS = 256;
    /** READ and atomic requests outstanding at most (the most max_rd_atomic may ask for). */
    public static final int TRACKERS = ResponseTrackers.CAPACITY;
    /** Response packets one READ request covers at most (a longer READ is cut into several). */
    static final int SEGMENT_PACKETS = ResponseTrackers.SEGMENT_PACKETS;

    private final Qp qp;
    private final Arena arena = Arena.ofShared();
    private final WqeFlyweight wqe = new WqeFlyweight();
    private final SendWr[] wrs;
    private final int wrMask;
    private final MemorySegment inlineBuf;
    private final MemorySegment[] slots = new MemorySegment[WINDOW];
    private final int frameBytes;
    private final int[] slotWr = new int[WINDOW];
    private final int[] slotLen = new int[WINDOW];
    private final boolean[] slotAcked = new boolean[WINDOW];
    /** Queued for retransmission (at most once at a time). */
    private final boolean[] slotQueued = new boolean[WINDOW];
    /** Already sent again opportunistically (spec 10a rule 4: at most once per RSN). */
    private final boolean[] slotOrp = new boolean[WINDOW];
    /** The RSN's latest transmission: path and PSN. */
    private final int[] slotPath = new int[WINDOW];

    private final int[] slotPsn = new int[WINDOW];
    private final int[] retxQueue = new int[WINDOW];
    private int retxHead;
    private int retxTail;
    private final int[] built = new int[BURST];
    private final ResponseTrackers trackers = new ResponseTrackers();
    /** READ and atomic responses: placing them, their timers (spec 8a). */
    private final ResponseReceiver responses;
    /** The QP's paths and how packets are sprayed over them (spec 10). */
    private final PathSet pathSet = new PathSet();
    /** {@code pathSet}'s array, for brevity. */
    private final Path[] paths = pathSet.paths;

    private boolean baseline;
    /** Baseline: the next RSN go-back-N resends, or nextRsn when none. */
    private int gbnCursor;

    private int sqConsumer;
    private int wrHead;
    private int wrSent;
    /** Set once flush() met a failed WR: the WRs after it are flushed even if acknowledged. */
    private boolean flushAfterError;

    private int wrTail;
    private int sendOffset;
    private int nextMsn;
    private int una;
    private int nextRsn;
    /** RSNs in [una, nextRsn) already acknowledged (SACKed beyond a hole). */
    private int ackedAhead;

    private int rwnd = WINDOW;
    /** The QP window and the paths' shares of it (spec 10a rules 2 and 3). */
    private final QpWindow qpWindow = new QpWindow();
    /** Loss detection and path states (spec 8, 10). */
    private final PathRecovery recovery;

    private long rtoNs;
    private long deadlineNs;
    private boolean timerArmed;
    private int retries;
    /** When {@link #retries} was last reset by progress (its timeouts count from there). */
    private long retriesSinceNs;

    private int rnrRetries;
    private boolean rnrWait;
    private long nowNs;

    public RcRequester(Qp qp) {
        this.qp = qp;
        this.recovery = new PathRecovery(this, qp, pathSet, qpWindow);
        this.responses = new ResponseReceiver(this, qp, trackers, pathSet);
        int n = qp.maxSendWr;
        this.wrs = new SendWr[n];
        for (int i = 0; i < n; i++) {
            wrs[i] = new SendWr();
        }
        this.wrMask = n - 1;
        this.inlineBuf = arena.allocate((long) n * AbiConstants.MRCE_MAX_INLINE, 64);
        // the largest packet this QP builds: an atomic, an IBV_MTU_4096 packet or a jumbo one
        this.frameBytes = Math.max(Wire.HEADER_SIZE + Wire.ATOMIC_EXT_SIZE + 4096, Wire.frameBytes(qp.ifMtu));
    }

    /**
     * Window slot {@code i}'s frame, allocated the first time the slot is used (then kept): a QP
     * that never fills its window does not hold WINDOW frames (1 MiB) of memory, so 10^4 mostly
     * idle QPs fit in a daemon. Off-heap, once per slot, so the steady state allocates nothing.
     */
    private MemorySegment slot(int i) {
        MemorySegment f = slots[i];
        if (f == null) {
            f = arena.allocate(frameBytes, 64);
            slots[i] = f;
        }
        return f;
    }

    /** Entering RTS: the RSN space starts at sq_psn; paths (re)start. */
    public void start(Datapath dp) {
        baseline = dp.baseline;
        una = qp.sqPsn;
        nextRsn = qp.sqPsn;
        ackedAhead = 0;
        gbnCursor = nextRsn;
        rtoNs = dp.rtoInitialNs;
        recovery.start();
        rwnd = WINDOW;
        qpWindow.reset();
        timerArmed = false;
        retries = 0;
        retriesSinceNs = Long.MIN_VALUE; // the first duty cycle starts the count
        rnrRetries = 0;
        rnrWait = false;
        retxHead = retxTail = 0;
        java.util.Arrays.fill(slotQueued, false);
        java.util.Arrays.fill(slotOrp, false);
        trackers.clear();
        long initialCwnd = (long) PathCongestion.INITIAL_PACKETS * qp.payloadPerPacket();
        pathSet.planes = dp.planes;
        // No bursts under the send-on-dead-path break: it gives a DEAD path its turn in the round
        // robin, which a burst skips, so the break would show a burst's fewer times (ConformanceIT).
        pathSet.burst = baseline || ConformanceBreak.SEND_ON_DEAD_PATH ? 1 : Math.max(1, dp.port.sendBurst());
        pathSet.start(
                qp.qpn, pathCount(dp), dp.entropyPorts, baseline ? Long.MAX_VALUE / 4 : initialCwnd, dp.rtoInitialNs);
    }

    /** Paths of a QP on this datapath (the baseline has one). */
    public static int pathCount(Datapath dp) {
        return dp.settings.pathsPerQp(); // the settings checked 1..MAX_PATHS
    }

    /** The entropy (UDP source port class) of path {@code id} of QP {@code qpn} after {@code generation} retirements. */
    public static int entropy(int qpn, int id, int pathCount, int generation) {
        return PathSet.entropy(qpn, id, pathCount, generation);
    }

    /** Back to RESET: forget every request and discard what the SQ holds. */
    public void reset() {
        sqConsumer = qp.sq.producerAcquire();
        qp.sq.consumerRelease(sqConsumer);
        wrHead = wrSent = wrTail = 0;
        flushAfterError = false;
        sendOffset = 0;
        nextMsn = 0;
        timerArmed = false;
        trackers.clear();
    }

    public void onError() {
        timerArmed = false;
    }

    public boolean hasTimer() {
        return timerArmed || trackers.active() > 0 || pathTimersDeadlineNs() != Long.MAX_VALUE;
    }

    /**
     * The earliest of the connection timer, the READ/atomic response timers and the paths' timers
     * (tail-loss probes, path RTOs, cross-path detection, probes), so that an engine asleep wakes
     * for a path's timer, not only for the connection's.
     */
    public long deadlineNs() {
        long d = trackers.earliestDeadline(timerArmed, deadlineNs);
        long p = pathTimersDeadlineNs();
        if (p == Long.MAX_VALUE) {
            return d;
        }
        return !timerArmed && trackers.active() == 0 || p - d < 0 ? p : d;
    }

    /** When the paths' timers may next fall due (MAX_VALUE: none, or they do not run now). */
    private long pathTimersDeadlineNs() {
        if (baseline || !qp.canSend() || !qp.cmReady || rnrWait) {
            return Long.MAX_VALUE;
        }
        return recovery.timersDeadlineNs();
    }

    /** Full scans of the path timers since the QP was created, and duty cycles their gate spared one. */
    public long pathTimerScans() {
        return recovery.timerScans;
    }

    public long pathTimerScansSkipped() {
        return recovery.timerScansSkipped;
    }

    /**
     * When a duty-cycle step of this requester could next do anything that no frame, state change
     * or new WQE ({@link #sqPosted}) brings about, for the engine, which leaves the QP asleep until
     * then (EngineAgent.pollQps): {@code nowNs} while it has work (packets to send or resend, a
     * window-limited stream whose oldest packets may need copies, completions a full CQ holds
     * back, a flush); the earliest of its timers (QP RTO or RNR wait, READ/atomic responses, its
     * paths' tail-loss probes, RTOs, cross-path loss detection and probes) while it only waits;
     * Long.MAX_VALUE when idle (every work request completed, nothing in flight, every path ACTIVE
     * and empty). Never later than a timer would act (earlier costs only a step). Call after a step.
     */
    public long nextStepNs(Datapath dp, long nowNs) {
        if (qp.state == Ibv.QPS_ERR) {
            return wrHead == wrTail ? Long.MAX_VALUE : nowNs;
        }
        if (wrHead != wrSent && wrs[wrHead & wrMask].done()) {
            return nowNs; // a completion the CQ had no room for
        }
        if (!(qp.canSend() && qp.cmReady)) {
            return Long.MAX_VALUE; // no timer, transmission or recovery runs in these states
        }
        if (retxHead != retxTail || wrSent != wrTail || (baseline && gbnCursor != nextRsn) || copiesMayGo()) {
            return nowNs;
        }
        long t = timerArmed || trackers.active() > 0 ? deadlineNs() : Long.MAX_VALUE;
        if (!baseline && !rnrWait) { // the path timers run in neither
            long p = recovery.nextTimerNs(nowNs);
            if (t == Long.MAX_VALUE || (p != Long.MAX_VALUE && p - t < 0)) {
                t = p;
            }
        }
        return t;
    }

    /**
     * Whether {@link #opportunistic} may send a copy as time passes: when window-limited a late
     * packet qualifies with time; otherwise time only takes candidates away.
     */
    private boolean copiesMayGo() {
        if (baseline || una == nextRsn || pathSet.count < 2 || qpWindow.srttMinNs() == Long.MAX_VALUE) {
            return false;
        }
        return nextRsn - una >= Math.min(qpWindow.window(), Math.max(1, rwnd)) / 2;
    }

    /** Whether the SQ holds a WQE this requester has not read and a step would read now. */
    public boolean sqPosted() {
        return (qp.canSend() || qp.state == Ibv.QPS_ERR) && qp.sq.producerAcquire() != sqConsumer;
    }

    /** READ and atomic requests waiting for responses. */
    public int activeTrackers() {
        return trackers.active();
    }

    public int pathCount() {
        return pathSet.count;
    }

    public Path path(int i) {
        return paths[i];
    }

    /** RSNs from una to the next new one: at most 256, the SACK bitmap's span (spec 7). */
    public int unacknowledged() {
        return nextRsn - una;
    }

    /** RSNs sent and neither acknowledged nor SACKed: what the QP window limits (spec 7). */
    int unackedInFlight() {
        return nextRsn - una - ackedAhead;
    }

    public int receiveWindow() {
        return rwnd;
    }

    /** One duty-cycle step: read new WQEs, send, complete, check the timers. */
    public int doWork(Datapath dp, long nowNs) {
        this.nowNs = nowNs;
        if (retriesSinceNs == Long.MIN_VALUE) {
            retriesSinceNs = nowNs;
        }
        int work = pollSq(dp);
        if (qp.state == Ibv.QPS_ERR) {
            return work + flush();
        }
        if (qp.canSend() && qp.cmReady) {
            if (timerArmed && nowNs - deadlineNs >= 0) {
                work += onTimeout(dp, nowNs);
            }
            if (qp.canSend() && !rnrWait) {
                if (!baseline) {
                    work += recovery.timers(dp, nowNs);
                }
                work += baseline ? resendGoBackN(dp, nowNs) : retransmit(dp, nowNs);
                if (!baseline) {
                    qpWindow.update(paths, pathSet.count, rwnd, fullPacketBytes(), dp.qpWindowGain);
                    work += opportunistic(dp, nowNs);
                }
                work += transmit(dp, nowNs);
            }
            if (qp.canSend() && trackers.active() > 0) {
                work += responses.timers(dp, nowNs);
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
            long slot = qp.sq.slotOffset(sqConsumer);
            wqe.wrap(qp.sq.segment(), slot);
            int index = wrTail & wrMask;
            wrs[index].read(
                    wqe, qp.sq.segment(), slot, qp, dp.mrs, inlineBuf, (long) index * AbiConstants.MRCE_MAX_INLINE);
            sqConsumer++;
            wrTail++;
            n++;
        }
        if (n > 0) {
            qp.sq.consumerRelease(sqConsumer);
        }
        return n;
    }

    // ---- sending ----

    /** Puts a built packet (slot of RSN {@code rsn}) on path {@code pi} and queues it. */
    void sendOnPath(Datapath dp, int rsn, int pi, int flags, long nowNs) {
        int slot = rsn & MASK;
        Path p = paths[pi];
        recovery.touch();
        if (!p.hasInflight()) {
            p.lastProgressNs = nowNs;
            p.tlpSent = false;
        }
        int psn = p.nextPsn++;
        p.ensureRings();
        MemorySegment f = slot(slot);
        Wire.putU8(
                f,
                Wire.OFF_FLAGS,
                (Wire.u8(f, Wire.OFF_FLAGS) & Wire.FLAG_SOLICITED) | flags | (baseline ? Wire.FLAG_GBN : 0));
        Wire.putU8(f, Wire.OFF_PATH, pi);
        Wire.putU32(f, Wire.OFF_PSN, psn);
        Wire.putU16(f, Wire.OFF_REPLY_ENTROPY, p.entropy);
        int len = slotLen[slot];
        MemorySegment out = dp.port.claim();
        MemorySegment.copy(f, 0, out, 0, len);
        dp.sendClaimed(out, len, qp.peerIp, qp.peerPort, p.entropy);
        int r = psn & Path.RING_MASK;
        p.txRsn[r] = rsn;
        p.txTimeNs[r] = nowNs;
        p.txSeq[r] = recovery.nextSeq();
        p.crossLost[r] = false;
        p.tlpAway[r] = false;
        p.tlpCopy[r] = false;
        p.txBytes[r] = len;
        p.inflightBytes += len;
        p.packetsSent++;
        p.bytesSent += len;
        slotPath[slot] = pi;
        slotPsn[slot] = psn;
    }

    /** Resends the RSNs found lost, each on another healthy path with that path's next PSN. */
    private int retransmit(Datapath dp, long nowNs) {
        int n = 0;
        while (retxHead != retxTail && n < BURST) {
            int rsn = retxQueue[retxHead & MASK];
            int slot = rsn & MASK;
            if (acked(rsn)) {
                slotQueued[slot] = false;
                retxHead++;
                continue;
            }
            int pi = ConformanceBreak.RETRANSMIT_SAME_PATH
                    ? slotPath[slot]
                    : pathSet.pick(slotLen[slot], slotPath[slot]);
            if (pi < 0) {
                break;
            }
            slotQueued[slot] = false;
            retxHead++;
            sendOnPath(dp, rsn, pi, Wire.FLAG_RETRANSMIT, nowNs);
            paths[pi].retransmitsSent++;
            dp.counters.dataRetransmits++;
            n++;
        }
        return n;
    }

    /** Baseline: go back N, resending every RSN from the cursor in order. */
    private int resendGoBackN(Datapath dp, long nowNs) {
        int n = 0;
        if (gbnCursor - una < 0) {
            gbnCursor = una;
        }
        while (gbnCursor != nextRsn && n < BURST) {
            if (!acked(gbnCursor)) {
                sendOnPath(dp, gbnCursor, 0, Wire.FLAG_RETRANSMIT, nowNs);
                dp.counters.dataRetransmits++;
                paths[0].retransmitsSent++;
                n++;
            }
            gbnCursor++;
        }
        return n;
    }

    boolean acked(int rsn) {
        return rsn - una < 0 || slotAcked[rsn & MASK];
    }

    /**
     * Transmission {@code psn} of path {@code pathId}, which carried RSN {@code rsn}, is lost: the
     * RSN goes again on another path if that was its latest transmission and it is unacknowledged.
     */
    void requeueIfLatest(int rsn, int pathId, int psn) {
        if (isLatestUnacked(rsn, pathId, psn)) {
            queueRetransmit(rsn);
        }
    }

    /** Whether RSN {@code rsn} is unacknowledged and its latest transmission is {@code psn} of path {@code pathId}. */
    boolean isLatestUnacked(int rsn, int pathId, int psn) {
        int slot = rsn & MASK;
        return !acked(rsn) && slotPath[slot] == pathId && slotPsn[slot] == psn;
    }

    private void queueRetransmit(int rsn) {
        int slot = rsn & MASK;
        if (slotQueued[slot] || acked(rsn)) {
            return;
        }
        slotQueued[slot] = true;
        retxQueue[retxTail & MASK] = rsn;
        retxTail++;
    }

    private int transmit(Datapath dp, long nowNs) {
        // The span from una is the wire's (the SACK bitmap) and the receive window's; the QP
        // window limits only what is still in flight, so a hole waiting for its retransmission
        // holds one packet of it, not the whole window (spec 7).
        int span = Math.min(WINDOW, Math.max(1, ConformanceBreak.IGNORE_RWND ? WINDOW : rwnd));
        int window = baseline ? span : Math.min(span, qpWindow.window());
        if (wrSent == wrTail
                || nextRsn - una >= span
                || unackedInFlight() >= window
                || (baseline && gbnCursor != nextRsn)) {
            return 0;
        }
        // what the port's frames carry too (SimFabric's may be smaller than the netdev's)
        int payload = Math.min(qp.payloadPerPacket(), dp.framePayloadMax(Wire.HEADER_SIZE + Wire.RETH_SIZE));
        // WRITE packets carry a RETH: their payload must fit the netdev MTU and the port's frames too
        int writePayload = Math.min(
                payload,
                Math.min(
                        qp.ifMtu - Wire.IP_UDP_OVERHEAD - Wire.HEADER_SIZE - Wire.RETH_SIZE,
                        dp.framePayloadMax(Wire.HEADER_SIZE + Wire.RETH_SIZE)));
        int rdLimit = Math.min(TRACKERS, qp.maxRdAtomic);
        if (!baseline) {
            pathSet.balance(Wire.HEADER_SIZE + Wire.RETH_SIZE + payload);
        }
        int firstRsn = nextRsn;
        dp.gather.begin(qp.pid);
        int count = 0;
        boolean failedWr = false;
        while (wrSent != wrTail
                && nextRsn - una < span
                && unackedInFlight() < window
                && count < BURST
                && dp.gather.count() + AbiConstants.MRCE_MAX_SGE <= DmaBatch.IOV_MAX) {
            SendWr wr = wrs[wrSent & wrMask];
            if (wr.status >= 0) {
                wr.failed = true;
                failedWr = true;
                break;
            }
            if (sendOffset == 0 && (wr.flags & Ibv.SEND_FENCE) != 0 && trackers.active() > 0) {
                break; // fenced: every earlier READ and atomic completes first
            }
            boolean request = wr.expectsResponse();
            if (request) {
                if (qp.maxRdAtomic == 0) {
                    // max_rd_atomic 0: this QP may not initiate READs or atomics
                    wr.status = Ibv.WC_LOC_QP_OP_ERR;
                    wr.failed = true;
                    failedWr = true;
                    break;
                }
                if (trackers.active() >= rdLimit) {
                    break;
                }
                if (wr.kind == SendWr.KIND_ATOMIC && !trackers.atomicReplayable()) {
                    break; // the responder could no longer replay the oldest unanswered atomic
                }
            }
            int len;
            int ext;
            int frameLen;
            switch (wr.kind) {
                case SendWr.KIND_WRITE -> {
                    len = Math.min(writePayload, wr.length - sendOffset);
                    ext = Wire.RETH_SIZE;
                    frameLen = Wire.HEADER_SIZE + ext + len;
                }
                case SendWr.KIND_READ -> {
                    if (sendOffset == 0) {
                        wr.unit = payload;
                    }
                    len = (int) Math.min((long) SEGMENT_PACKETS * wr.unit, wr.length - sendOffset);
                    ext = Wire.RETH_SIZE;
                    frameLen = Wire.HEADER_SIZE + ext;
                }
                case SendWr.KIND_ATOMIC -> {
                    len = 8;
                    ext = Wire.ATOMIC_EXT_SIZE;
                    frameLen = Wire.HEADER_SIZE + ext;
                }
                default -> {
                    len = Math.min(payload, wr.length - sendOffset);
                    ext = 0;
                    frameLen = Wire.HEADER_SIZE + len;
                }
            }
            int pi = pathSet.pick(frameLen, -1);
            if (pi < 0) {
                break;
            }
            boolean consumesReceive = wr.opcode == Ibv.WR_SEND
                    || wr.opcode == Ibv.WR_SEND_WITH_IMM
                    || wr.opcode == Ibv.WR_RDMA_WRITE_WITH_IMM;
            if (sendOffset == 0) {
                int per = wr.kind == SendWr.KIND_WRITE
                        ? writePayload
                        : wr.kind == SendWr.KIND_READ
                                ? SEGMENT_PACKETS * wr.unit
                                : wr.kind == SendWr.KIND_ATOMIC ? 8 : payload;
                wr.packets = Math.max(1, (int) (((long) wr.length + per - 1) / per));
                // MSN counts the messages that consume a receive (spec 3); others carry the next one
                wr.msn = consumesReceive ? nextMsn++ : nextMsn;
            }
            int slot = nextRsn & MASK;
            MemorySegment f = slot(slot);
            boolean last = sendOffset + len >= wr.length;
            int flags = last && (wr.flags & Ibv.SEND_SOLICITED) != 0 && consumesReceive ? Wire.FLAG_SOLICITED : 0;
            int op = wireOpcode(wr.opcode);
            int imm = op == Wire.OP_SEND_IMM || op == Wire.OP_WRITE_IMM
                    ? Integer.reverseBytes(wr.imm)
                    : wr.kind == SendWr.KIND_READ ? len : 0;
            Wire.header(
                    f,
                    op,
                    flags,
                    pi,
                    0,
                    nextRsn,
                    qp.destQpNum,
                    qp.qpn,
                    qp.txToken,
                    wr.msn,
                    sendOffset,
                    wr.length,
                    imm,
                    0,
                    0);
            if (ext > 0) {
                Wire.putU32(f, Wire.OFF_RKEY, wr.rkey);
                Wire.putU32(f, Wire.OFF_RESP_UNIT, wr.kind == SendWr.KIND_READ ? wr.unit : 0);
                Wire.putU64(f, Wire.OFF_VA, wr.remoteAddr);
                if (wr.kind == SendWr.KIND_ATOMIC) {
                    Wire.putU64(f, Wire.OFF_COMPARE_ADD, wr.compareAdd);
                    Wire.putU64(f, Wire.OFF_SWAP, wr.opcode == Ibv.WR_ATOMIC_CMP_AND_SWP ? wr.swap : 0);
                }
            }
            if (request) {
                trackers.start(wr, wrSent, nextRsn, sendOffset, len, nowNs + qpRtoNs());
            } else if (len > 0) {
                long dst = f.address() + Wire.HEADER_SIZE + ext;
                if (wr.inline) {
                    MemorySegment.copy(
                            inlineBuf,
                            (long) (wrSent & wrMask) * AbiConstants.MRCE_MAX_INLINE + sendOffset,
                            f,
                            Wire.HEADER_SIZE + ext,
                            len);
                } else {
                    wr.sges.copy(dp.gather, sendOffset, len, dst, slot);
                }
            }
            slotWr[slot] = wrSent;
            slotLen[slot] = frameLen;
            slotAcked[slot] = false;
            slotQueued[slot] = false;
            slotOrp[slot] = false;
            built[count] = pi;
            // Reserve the window on the chosen path now, so the next packet sees it.
            paths[pi].inflightBytes += frameLen;
            nextRsn++;
            count++;
            sendOffset += len;
            if (last) {
                wrSent++;
                sendOffset = 0;
            }
        }
        for (int i = 0; i < count; i++) {
            paths[built[i]].inflightBytes -= slotLen[(firstRsn + i) & MASK];
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
            return count;
        }
        for (int i = 0; i < count; i++) {
            sendOnPath(dp, firstRsn + i, built[i], 0, nowNs);
        }
        gbnCursor = nextRsn;
        dp.counters.dataTx += count;
        if (count > 0 && !timerArmed) {
            timerArmed = true;
            deadlineNs = nowNs + qpRtoNs();
        }
        if (failedWr) {
            // The next request failed validation: it completes with its error, the QP goes to ERR.
            qp.toError();
        }
        return count;
    }

    static int wireOpcode(int wrOpcode) {
        return switch (wrOpcode) {
            case Ibv.WR_SEND_WITH_IMM -> Wire.OP_SEND_IMM;
            case Ibv.WR_RDMA_WRITE -> Wire.OP_WRITE;
            case Ibv.WR_RDMA_WRITE_WITH_IMM -> Wire.OP_WRITE_IMM;
            case Ibv.WR_RDMA_READ -> Wire.OP_READ_REQ;
            case Ibv.WR_ATOMIC_CMP_AND_SWP -> Wire.OP_ATOMIC_CS;
            case Ibv.WR_ATOMIC_FETCH_AND_ADD -> Wire.OP_ATOMIC_FA;
            default -> Wire.OP_SEND;
        };
    }

    // ---- gray-failure tolerance (spec 10a) ----

    /** The QP window in force (spec 10a rule 3), before the receive window. */
    public int window() {
        return qpWindow.window();
    }

    /** A full packet of this QP, with the largest extension header, in bytes (spec 10a). */
    private long fullPacketBytes() {
        return Wire.HEADER_SIZE + Wire.RETH_SIZE + qp.payloadPerPacket();
    }

    /** The smallest window: one packet without extension. */
    long minWindowBytes() {
        return Wire.HEADER_SIZE + qp.payloadPerPacket();
    }

    /**
     * Opportunistic retransmission (spec 10a rule 4): when the QP is window-limited or has sent
     * everything, an RSN among the oldest unacknowledged whose latest transmission, on path X, is
     * expected later than a copy sent now on the fastest paths would land is sent again on
     * another ACTIVE path with room, once per RSN; X's window is halved (at most once per its
     * srtt) so that it takes fewer packets.
     */
    private int opportunistic(Datapath dp, long nowNs) {
        long srttMinNs = qpWindow.srttMinNs();
        if (una == nextRsn || srttMinNs == Long.MAX_VALUE || pathSet.count < 2) {
            return 0;
        }
        int win = Math.min(qpWindow.window(), Math.max(1, rwnd));
        boolean windowLimited = nextRsn - una >= win / 2;
        if (!windowLimited && wrSent != wrTail) {
            return 0; // neither window-limited nor at the tail: nothing waits on the oldest RSNs
        }
        long horizon = nowNs + 2 * srttMinNs;
        int sent = 0;
        int scanned = 0;
        for (int r = una; r != nextRsn && scanned < ORP_SCAN && sent < ORP_BURST; r++, scanned++) {
            int slot = r & MASK;
            if (slotOrp[slot] || slotQueued[slot] || slotAcked[slot]) {
                continue;
            }
            Path x = paths[slotPath[slot]];
            int psn = slotPsn[slot];
            if (psn - x.una < 0 || psn - x.nextPsn >= 0) {
                continue; // resolved on its path (a loss queues it anyway)
            }
            int e = psn & Path.RING_MASK;
            if (recovery.lastDeliveredSeq() < x.txSeq[e]) {
                continue; // nothing sent after it arrived anywhere: no path is known to be faster
            }
            long expectNs = x.hasRtt() ? x.srttNs : x.ptoNs(dp.rtoInitialNs, dp.tlpMinNs);
            long sentNs = x.txTimeNs[e];
            if (sentNs + expectNs - horizon <= 0 && (!windowLimited || nowNs - sentNs <= expectNs + 2 * srttMinNs)) {
                continue; // expected about as soon as a copy would land (and, holding the window, not late)
            }
            int pi = pathSet.pickFast(slotLen[slot], x.id, 2 * srttMinNs);
            if (pi < 0) {
                break; // no fast path has room now
            }
            slotOrp[slot] = true;
            sendOnPath(dp, r, pi, Wire.FLAG_RETRANSMIT, nowNs);
            paths[pi].retransmitsSent++;
            dp.counters.dataRetransmits++;
            dp.counters.opportunisticRetransmits++;
            PathCongestion.halveOncePerSrtt(x, minWindowBytes(), nowNs); // the penalty
            sent++;
        }
        return sent;
    }

    // ---- READ and atomic responses ----

    /** A READ or atomic response ({@link ResponseReceiver#onResponse}). */
    public void onResponse(Datapath dp, MemorySegment frame, int length, long nowNs) {
        responses.onResponse(dp, frame, length, nowNs);
    }

    /** A staged response landed (or failed to) ({@link ResponseReceiver#commit}). */
    void commitResponse(Datapath dp, int rsn, int ti, boolean failed) {
        responses.commit(dp, rsn, ti, failed);
    }

    /** The work request at index {@code wr} (of the SQ's sequence, any wrap). */
    SendWr wr(int wr) {
        return wrs[wr & wrMask];
    }

    /**
     * A response to RSN {@code rsn} arrived: the responder is alive (the retry count starts
     * again) and, as a response acknowledges its request, so is that RSN.
     */
    void responseArrived(Datapath dp, int rsn, long nowNs) {
        retriesReset(nowNs);
        if (rsn - una >= 0 && rsn - nextRsn < 0 && !slotAcked[rsn & MASK]) {
            markAcked(rsn);
            advanceUna(dp, nowNs);
        }
    }

    /**
     * A round of response timeouts: counts once against retry_cnt; whether the QP has now run
     * out of retries (the request then fails and the QP goes to ERR).
     */
    boolean responseRetryExhausted(long nowNs) {
        return ++retries > qp.retryCnt && retriesExhausted(nowNs);
    }

    // ---- acknowledgements ----

    /**
     * An ACK: every RSN before {@code cumRsn}, each SACKed RSN, and the path reports in {@code frame}
     * (see the spec, section 6).
     */
    public void onAck(Datapath dp, MemorySegment frame, int length, long nowNs) {
        dp.counters.acksRx++;
        int cumRsn = Wire.u32(frame, Wire.OFF_RSN);
        if (!qp.canSend() || cumRsn - nextRsn > 0) {
            return;
        }
        if (cumRsn - una < 0) {
            // Overtaken by a later ACK (ACKs are sprayed over the paths, so they reorder): what
            // it says of the RSNs and the receive window is old, but its path reports are news
            // no later ACK repeats (the responder reports a path only when it got something new
            // on it). Dropped with the rest, a path whose last packets they reported would wait
            // for a tail-loss probe.
            dp.counters.staleAcks++;
            if (!baseline) {
                pathReports(dp, frame, length, nowNs);
            }
            return;
        }
        int rw = Wire.u16(frame, Wire.OFF_RWND);
        if (rw != rwnd) {
            rwnd = rw;
            qpWindow.invalidate();
        }
        for (int r = una; r != cumRsn; r++) {
            markAcked(r);
        }
        if (!baseline && length >= Wire.HEADER_SIZE + Wire.SACK_BYTES) {
            for (int w = 0; w < Wire.SACK_BYTES / 8; w++) {
                long bits = Wire.sackWord(frame, Wire.HEADER_SIZE + 8L * w);
                while (bits != 0) {
                    int i = Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                    int r = cumRsn + 64 * w + i;
                    if (r - nextRsn < 0) {
                        markAcked(r);
                    }
                }
            }
        }
        int before = una;
        skipAcked();
        boolean progress = una != before;
        if (!baseline) {
            pathReports(dp, frame, length, nowNs);
        } else {
            Path p = paths[0];
            p.una = p.nextPsn;
            p.inflightBytes = 0;
        }
        if (progress) {
            onProgress(dp, nowNs);
            if (qp.state != Ibv.QPS_ERR) {
                // Complete now, not at this QP's next duty-cycle step: receive completions of
                // this RX batch are written when it ends, and the peer's answer to a SEND must not
                // complete before the SEND itself (an application waiting for its send completion
                // would wake for the receive: ib_send_lat -e of perftest 4.5-0.17, which shares
                // one channel between both CQs, then read an unwritten completion).
                retire();
            }
        }
    }

    /** The path reports of an ACK (spec 7), each to its path's recovery. */
    private void pathReports(Datapath dp, MemorySegment frame, int length, long nowNs) {
        int reports = Wire.u32(frame, Wire.OFF_MSG_LEN);
        long off = Wire.OFF_REPORTS;
        for (int k = 0; k < reports && off + Wire.REPORT_SIZE <= length; k++, off += Wire.REPORT_SIZE) {
            int pi = Wire.u8(frame, off);
            if (pi < pathSet.count) {
                recovery.onReport(dp, paths[pi], Wire.u8(frame, off + 1), Wire.u32(frame, off + 4), nowNs);
            }
        }
    }

    /**
     * The peer QP went away having placed every request below {@code placedRsn} (its daemon's
     * DISCONNECT, connection-manager spec section 5): a last cumulative ACK, over the connection
     * manager's TCP, for work requests whose own final ACK was lost.
     */
    public void onFinalAck(Datapath dp, int placedRsn, long nowNs) {
        if (!qp.canSend() || placedRsn - una <= 0 || placedRsn - nextRsn > 0) {
            return;
        }
        for (int r = una; r != placedRsn; r++) {
            markAcked(r);
        }
        advanceUna(dp, nowNs);
    }

    /** Advances una over acknowledged RSNs; progress resets the retry counters and the QP timer. */
    private void advanceUna(Datapath dp, long nowNs) {
        int before = una;
        skipAcked();
        if (una != before) {
            onProgress(dp, nowNs);
        }
    }

    private void onProgress(Datapath dp, long nowNs) {
        retriesReset(nowNs);
        rnrRetries = 0;
        rnrWait = false;
        rtoNs = dp.rtoInitialNs;
        timerArmed = una != nextRsn;
        deadlineNs = nowNs + qpRtoNs();
    }

    /** Progress: the retry counter and its clock start again. */
    void retriesReset(long nowNs) {
        retries = 0;
        retriesSinceNs = nowNs;
    }

    /**
     * Whether the QP has gone without progress for as long as its attributes allow: retry_cnt + 1
     * local ACK timeouts (4.096 us * 2^timeout each; timeout 0 is infinite). Our own timers
     * retransmit much sooner; a QP never fails before the time an application asked to wait.
     */
    private boolean retriesExhausted(long nowNs) {
        int t = qp.timeout;
        if (t == 0) {
            return false;
        }
        long ackTimeoutNs = 4096L << Math.min(t, 31);
        return nowNs - retriesSinceNs >= (qp.retryCnt + 1L) * ackTimeoutNs;
    }

    /**
     * The QP RTO in force: its own (initial, doubled per timeout) but never below twice the
     * largest RTO of a live path, so that the paths' own timers recover a loss first.
     */
    long qpRtoNs() {
        long t = rtoNs;
        for (int i = 0; i < pathSet.count; i++) {
            Path p = paths[i];
            if (p.state != Path.DEAD && p.hasRtt()) {
                t = Math.max(t, 2 * p.rtoNs);
            }
        }
        return t;
    }

    /** Moves una over the acknowledged RSNs at the window's left edge. */
    private void skipAcked() {
        while (una != nextRsn && slotAcked[una & MASK]) {
            una++;
            ackedAhead--;
        }
    }

    private void markAcked(int rsn) {
        int slot = rsn & MASK;
        if (!slotAcked[slot] && rsn - una >= 0 && rsn - nextRsn < 0) {
            slotAcked[slot] = true;
            ackedAhead++;
            recovery.touch();
            wrs[slotWr[slot] & wrMask].packetsAcked++;
        }
    }

    /** A NAK frame (spec 6). */
    public void onNak(Datapath dp, MemorySegment frame, long nowNs) {
        int syndrome = Wire.u32(frame, Wire.OFF_IMM);
        if (qp.canSend() && syndrome != Wire.NAK_RNR && syndrome != Wire.NAK_SEQUENCE_ERROR) {
            // A refusal: every RSN below the responder's cumulative RSN landed.
            int cum = Wire.u32(frame, Wire.OFF_MSG_LEN);
            if (cum - una > 0 && cum - nextRsn <= 0) {
                for (int r = una; r != cum; r++) {
                    markAcked(r);
                }
                advanceUna(dp, nowNs);
            }
        }
        onNak(dp, Wire.u32(frame, Wire.OFF_RSN), syndrome, Wire.u32(frame, Wire.OFF_OFFSET), nowNs);
    }

    /** A NAK: RNR (no receive posted yet), a sequence error (baseline) or a rejected request. */
    public void onNak(Datapath dp, int rsn, int syndrome, int rnrTimer, long nowNs) {
        dp.counters.naksRx++;
        if (!qp.canSend()) {
            return;
        }
        if (syndrome != Wire.NAK_RNR && syndrome != Wire.NAK_SEQUENCE_ERROR) {
            // A READ or atomic may be refused after its request was acknowledged (it executes in
            // RSN order, after everything before it landed).
            int ti = trackers.indexOf(rsn);
            if (ti >= 0) {
                fail(wrs[trackers.get(ti).wr & wrMask], syndrome);
                return;
            }
        }
        if (rsn - una < 0 || rsn - nextRsn > 0) {
            return;
        }
        if (syndrome == Wire.NAK_SEQUENCE_ERROR) {
            // go back N: everything from the expected RSN again
            for (int r = una; r != rsn; r++) {
                markAcked(r);
            }
            skipAcked();
            gbnCursor = una;
            return;
        }
        if (rsn == nextRsn) {
            return;
        }
        SendWr wr = wrs[slotWr[rsn & MASK] & wrMask];
        if (syndrome == Wire.NAK_RNR) {
            if (rnrWait) {
                return; // one RNR round counts once, however many packets it refused
            }
            if (qp.rnrRetry != 7 && ++rnrRetries > qp.rnrRetry) {
                wr.status = Ibv.WC_RNR_RETRY_EXC_ERR;
                wr.failed = true;
                qp.toError();
                return;
            }
            rnrWait = true;
            timerArmed = true;
            // From a time read now, after the NAK was: the batch's time may predate its arrival
            // when the thread was preempted before the poll (ConformanceIT rnr-wait under load
            // saw a resend 80926 us after a NAK asking for 81920).
            long readNs = Math.max(nowNs, dp.clock.getAsLong());
            deadlineNs = readNs + (ConformanceBreak.IGNORE_RNR_TIMER ? 0 : rnrDelayNs(rnrTimer));
        } else {
            fail(wr, syndrome);
        }
    }

    /** A request the responder refused: it completes with the matching error, the QP goes to ERR. */
    private void fail(SendWr wr, int syndrome) {
        wr.status = switch (syndrome) {
            case Wire.NAK_INVALID_REQUEST -> Ibv.WC_REM_INV_REQ_ERR;
            case Wire.NAK_REMOTE_ACCESS -> Ibv.WC_REM_ACCESS_ERR;
            default -> Ibv.WC_REM_OP_ERR;
        };
        wr.failed = true;
        qp.toError();
    }

    /** IB's RNR NAK timer field (IBA table 45), in microseconds; code 0 means 655.36 ms. */
    private static final int[] RNR_TIMER_US = {
        655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240,
        15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520
    };

    static long rnrDelayNs(int code) {
        return RNR_TIMER_US[code & 31] * 1000L;
    }

    private int onTimeout(Datapath dp, long nowNs) {
        if (una == nextRsn) {
            timerArmed = false;
            return 0;
        }
        if (rnrWait) {
            rnrWait = false;
        } else {
            dp.counters.timeouts++;
            if (++retries > qp.retryCnt && retriesExhausted(nowNs)) {
                SendWr head = wrs[slotWr[una & MASK] & wrMask];
                head.status = Ibv.WC_RETRY_EXC_ERR;
                head.failed = true;
                qp.toError();
                return 1;
            }
            if (!baseline) {
                rtoNs = Math.min(rtoNs * 2, dp.rtoMaxNs);
            }
        }
        if (baseline) {
            gbnCursor = una;
            Path p = paths[0];
            p.una = p.nextPsn;
            p.inflightBytes = 0;
        } else {
            // What is unacknowledged and not in flight on a live path within its RTO goes again
            // (each RSN once), on healthy paths; a packet a live path still carries is left to it.
            for (int r = una; r != nextRsn; r++) {
                if (!acked(r) && stale(r, nowNs)) {
                    queueRetransmit(r);
                }
            }
        }
        deadlineNs = nowNs + qpRtoNs();
        return 1;
    }

    /** Whether RSN {@code rsn}'s latest transmission is no longer expected to arrive. */
    private boolean stale(int rsn, long nowNs) {
        int slot = rsn & MASK;
        Path q = paths[slotPath[slot]];
        int psn = slotPsn[slot];
        if (q.state == Path.DEAD || psn - q.una < 0 || psn - q.nextPsn >= 0) {
            return true;
        }
        return nowNs - q.txTimeNs[psn & Path.RING_MASK] >= q.rtoNs;
    }

    /** Completes fully acknowledged requests in order. */
    private int retire() {
        int n = 0;
        while (wrHead != wrSent) {
            SendWr wr = wrs[wrHead & wrMask];
            if (!wr.done()) {
                break;
            }
            if (signaled(wr)) {
                if (!qp.sendCq.hasSpace()) {
                    break;
                }
                qp.sendCq.post(wr.wrId, Ibv.WC_SUCCESS, wcOpcode(wr.opcode), wr.length, 0, qp.qpn, 0, 0, false);
            }
            wrHead++;
            n++;
        }
        return n;
    }

    /**
     * In ERR: complete everything outstanding, in order: a failed WR with its own error; before the
     * first failed WR, success if acknowledged (completed by the peer before the QP failed); from
     * the first failed WR on, every later WR is flushed, even one the peer acknowledged out of
     * order (verbs order: nothing after an error completes successfully).
     */
    private int flush() {
        int n = 0;
        while (wrHead != wrTail) {
            SendWr wr = wrs[wrHead & wrMask];
            boolean done = !wr.failed && !flushAfterError && wr.packets > 0 && wr.done() && wrHead - wrSent < 0;
            int status = wr.failed ? wr.status : done ? Ibv.WC_SUCCESS : Ibv.WC_WR_FLUSH_ERR;
            if (wr.failed) {
                flushAfterError = true;
            }
            if (status != Ibv.WC_SUCCESS || signaled(wr)) {
                if (!qp.sendCq.hasSpace()) {
                    break;
                }
                qp.sendCq.post(
                        wr.wrId,
                        status,
                        wcOpcode(wr.opcode),
                        status == Ibv.WC_SUCCESS ? wr.length : 0,
                        0,
                        qp.qpn,
                        0,
                        0,
                        false);
            }
            wrHead++;
            n++;
        }
        wrSent = wrHead;
        sendOffset = 0;
        una = nextRsn;
        ackedAhead = 0;
        retxHead = retxTail;
        trackers.clear();
        return n;
    }

    private static int wcOpcode(int wrOpcode) {
        return switch (wrOpcode) {
            case Ibv.WR_RDMA_WRITE, Ibv.WR_RDMA_WRITE_WITH_IMM -> Ibv.WC_RDMA_WRITE;
            case Ibv.WR_RDMA_READ -> Ibv.WC_RDMA_READ;
            case Ibv.WR_ATOMIC_CMP_AND_SWP -> Ibv.WC_COMP_SWAP;
            case Ibv.WR_ATOMIC_FETCH_AND_ADD -> Ibv.WC_FETCH_ADD;
            default -> Ibv.WC_SEND;
        };
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
