package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.dma.DmaBatch;
import java.lang.foreign.Arena;
import io.metaroce.abi.WqeDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The sending half of an RC QP (docs/spec/transport.md sections 3, 6-11). Reads the SQ into
 * daemon-side work requests, cuts messages into packets numbered by RSN (a window of up to
 * {@link #WINDOW} that follows the QP's bandwidth-delay product, {@link QpWindow}, kept for
 * retransmission) and sprays them over the QP's {@link Path}s ({@link PathSet}), each with its own
 * PSN space. Path reports in ACKs resolve every transmission of a path up to the reported PSN:
 * delivered, or lost (a path is FIFO); a lost RSN is resent on another healthy path with a fresh
 * PSN, and one stuck on a slow path is sent again on a fast one (section 10a). Tail-loss probes,
 * per-path RTOs, path retirement and probing; per-path congestion windows in
 * {@link PathCongestion}; READ and atomic responses in {@link ResponseTrackers}. Work requests
 * complete in order once every RSN is acknowledged. The baseline mode is a classic go-back-N
 * requester on one path.
 *
 * <p>Engine thread only.
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
    private static final int RE_ADMIT_PROBES = 3;
    private static final int CLEAN_RUN_TO_ACTIVE = 16;
    /** READ and atomic requests outstanding at most (the most max_rd_atomic may ask for). */
    public static final int TRACKERS = ResponseTrackers.CAPACITY;
    /** Response packets one READ request covers at most (a longer READ is cut into several). */
    static final int SEGMENT_PACKETS = ResponseTrackers.SEGMENT_PACKETS;
    /** Missing ranges re-requested per tracker and timeout at most. */
    private static final int RANGES_PER_RESEND = 8;

    private final Qp qp;
    private final Arena arena = Arena.ofShared();
    private final WqeFlyweight wqe = new WqeFlyweight();
    private final SendWr[] wrs;
    private final int wrMask;
    private final MemorySegment inlineBuf;
    private final MemorySegment[] slots = new MemorySegment[WINDOW];
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
    private int rwnd = WINDOW;
    /** The QP window and the paths' shares of it (spec 10a rules 2 and 3). */
    private final QpWindow qpWindow = new QpWindow();
    private long rtoNs;
    private long deadlineNs;
    private boolean timerArmed;
    private int retries;
    /** When {@link #retries} was last reset by progress (its timeouts count from there). */
    private long retriesSinceNs;
    private int rnrRetries;
    private boolean rnrWait;
    private long nowNs;
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
    private long probeEpoch = Long.MIN_VALUE;
    private int probesInEpoch;
    private int probeCredit;
    /** Where the next scan for due probes starts (so every path gets its turn under the budget). */
    private int probeCursor;

    public RcRequester(Qp qp) {
        this.qp = qp;
        int n = qp.maxSendWr;
        this.wrs = new SendWr[n];
        for (int i = 0; i < n; i++) {
            wrs[i] = new SendWr();
        }
        this.wrMask = n - 1;
        this.inlineBuf = arena.allocate((long) n * AbiConstants.MRCE_MAX_INLINE, 64);
        // the largest packet this QP builds: an atomic, an IBV_MTU_4096 packet or a jumbo one
        int frame = Math.max(Wire.HEADER_SIZE + Wire.ATOMIC_EXT_SIZE + 4096, Wire.frameBytes(qp.ifMtu));
        for (int i = 0; i < WINDOW; i++) {
            slots[i] = arena.allocate(frame, 64);
        }
    }

    /** Entering RTS: the RSN space starts at sq_psn; paths (re)start. */
    public void start(Datapath dp) {
        baseline = dp.baseline;
        una = qp.sqPsn;
        nextRsn = qp.sqPsn;
        gbnCursor = nextRsn;
        rtoNs = dp.rtoInitialNs;
        lastDeliveredSeq = -1;
        reorderSlackNs = 0;
        reorderCleanPackets = 0;
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
        probeEpoch = Long.MIN_VALUE;
        probeCredit = 0;
        probeCursor = 0;
        pathSet.start(qp.qpn, pathCount(dp), dp.entropyPorts, baseline ? Long.MAX_VALUE / 4 : initialCwnd, dp.rtoInitialNs);
    }

    /** Paths of a QP on this datapath (the baseline has one). */
    public static int pathCount(Datapath dp) {
        return dp.baseline ? 1 : Math.max(1, Math.min(MAX_PATHS, dp.paths));
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
        return timerArmed || trackers.active() > 0;
    }

    /** The earliest of the connection timer and the READ/atomic response timers. */
    public long deadlineNs() {
        return trackers.earliestDeadline(timerArmed, deadlineNs);
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

    public int unacknowledged() {
        return nextRsn - una;
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
                    work += pathTimers(dp, nowNs);
                }
                work += baseline ? resendGoBackN(dp, nowNs) : retransmit(dp, nowNs);
                if (!baseline) {
                    qpWindow.update(paths, pathSet.count, rwnd, fullPacketBytes());
                    work += opportunistic(dp, nowNs);
                }
                work += transmit(dp, nowNs);
            }
            if (qp.canSend() && trackers.active() > 0) {
                work += responseTimers(dp, nowNs);
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
            readWqe(dp, wrs[wrTail & wrMask], wrTail & wrMask, qp.sq.segment(), slot);
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
    private void readWqe(Datapath dp, SendWr wr, int index, MemorySegment ring, long slot) {
        wr.wrId = wqe.wrId();
        wr.opcode = wqe.opcode();
        wr.flags = wqe.sendFlags();
        wr.imm = wqe.immData();
        wr.status = -1;
        wr.failed = false;
        wr.packets = 0;
        wr.packetsAcked = 0;
        wr.responsesDone = 0;
        wr.length = 0;
        wr.sges.count = 0;
        wr.inline = false;
        wr.kind = SendWr.KIND_SEND;
        if (qp.state == Ibv.QPS_ERR) {
            wr.status = Ibv.WC_WR_FLUSH_ERR;
            return;
        }
        int localAccess = 0;
        switch (wr.opcode) {
            case Ibv.WR_SEND, Ibv.WR_SEND_WITH_IMM -> wr.kind = SendWr.KIND_SEND;
            case Ibv.WR_RDMA_WRITE, Ibv.WR_RDMA_WRITE_WITH_IMM -> wr.kind = SendWr.KIND_WRITE;
            case Ibv.WR_RDMA_READ -> {
                wr.kind = SendWr.KIND_READ;
                localAccess = Ibv.ACCESS_LOCAL_WRITE;
            }
            case Ibv.WR_ATOMIC_CMP_AND_SWP, Ibv.WR_ATOMIC_FETCH_AND_ADD -> {
                wr.kind = SendWr.KIND_ATOMIC;
                localAccess = Ibv.ACCESS_LOCAL_WRITE;
            }
            default -> {
                wr.status = Ibv.WC_LOC_QP_OP_ERR;
                return;
            }
        }
        if (wr.kind != SendWr.KIND_SEND) {
            // fields the WqeFlyweight does not expose (struct mrce_wqe, native order)
            wr.rkey = ring.get(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY);
            wr.remoteAddr = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR);
            wr.compareAdd = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_COMPARE_ADD);
            wr.swap = ring.get(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_SWAP);
        }
        // IBV_SEND_INLINE applies to SEND and RDMA WRITE only; READ and atomics always use SGEs.
        if ((wr.flags & Ibv.SEND_INLINE) != 0
                && (wr.kind == SendWr.KIND_SEND || wr.kind == SendWr.KIND_WRITE)) {
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
        long total = wr.sges.load(dp.mrs, qp, wqe, numSge, localAccess);
        if (total < 0) {
            wr.status = Ibv.WC_LOC_PROT_ERR;
            return;
        }
        if (total > Integer.MAX_VALUE || (wr.kind == SendWr.KIND_ATOMIC && total != 8)) {
            wr.status = Ibv.WC_LOC_LEN_ERR;
            return;
        }
        wr.length = (int) total;
    }

    // ---- path choice ----

    // ---- sending ----

    /** Puts a built packet (slot of RSN {@code rsn}) on path {@code pi} and queues it. */
    private void sendOnPath(Datapath dp, int rsn, int pi, int flags, long nowNs) {
        int slot = rsn & MASK;
        Path p = paths[pi];
        if (!p.hasInflight()) {
            p.lastProgressNs = nowNs;
            p.tlpSent = false;
        }
        int psn = p.nextPsn++;
        MemorySegment f = slots[slot];
        Wire.putU8(f, Wire.OFF_FLAGS, (Wire.u8(f, Wire.OFF_FLAGS) & Wire.FLAG_SOLICITED) | flags
                | (baseline ? Wire.FLAG_GBN : 0));
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
        p.txSeq[r] = ++txSeq;
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
            int pi = ConformanceBreak.RETRANSMIT_SAME_PATH ? slotPath[slot]
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

    private boolean acked(int rsn) {
        return rsn - una < 0 || slotAcked[rsn & MASK];
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
        int window = Math.min(baseline ? WINDOW : qpWindow.window(),
                Math.max(1, ConformanceBreak.IGNORE_RWND ? WINDOW : rwnd));
        if (wrSent == wrTail || nextRsn - una >= window || (baseline && gbnCursor != nextRsn)) {
            return 0;
        }
        // what the port's frames carry too (SimFabric's may be smaller than the netdev's)
        int payload = Math.min(qp.payloadPerPacket(), dp.framePayloadMax(Wire.HEADER_SIZE + Wire.RETH_SIZE));
        // WRITE packets carry a RETH: their payload must fit the netdev MTU and the port's frames too
        int writePayload = Math.min(payload, Math.min(qp.ifMtu - Wire.IP_UDP_OVERHEAD - Wire.HEADER_SIZE
                - Wire.RETH_SIZE, dp.framePayloadMax(Wire.HEADER_SIZE + Wire.RETH_SIZE)));
        int rdLimit = Math.min(TRACKERS, qp.maxRdAtomic);
        int firstRsn = nextRsn;
        dp.gather.begin(qp.pid);
        int count = 0;
        boolean failedWr = false;
        while (wrSent != wrTail && nextRsn - una < window && count < BURST
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
            boolean consumesReceive = wr.opcode == Ibv.WR_SEND || wr.opcode == Ibv.WR_SEND_WITH_IMM
                    || wr.opcode == Ibv.WR_RDMA_WRITE_WITH_IMM;
            if (sendOffset == 0) {
                int per = wr.kind == SendWr.KIND_WRITE ? writePayload
                        : wr.kind == SendWr.KIND_READ ? SEGMENT_PACKETS * wr.unit
                        : wr.kind == SendWr.KIND_ATOMIC ? 8 : payload;
                wr.packets = Math.max(1, (int) (((long) wr.length + per - 1) / per));
                // MSN counts the messages that consume a receive (spec 3); others carry the next one
                wr.msn = consumesReceive ? nextMsn++ : nextMsn;
            }
            int slot = nextRsn & MASK;
            MemorySegment f = slots[slot];
            boolean last = sendOffset + len >= wr.length;
            int flags = last && (wr.flags & Ibv.SEND_SOLICITED) != 0 && consumesReceive
                    ? Wire.FLAG_SOLICITED : 0;
            int op = wireOpcode(wr.opcode);
            int imm = op == Wire.OP_SEND_IMM || op == Wire.OP_WRITE_IMM ? Integer.reverseBytes(wr.imm)
                    : wr.kind == SendWr.KIND_READ ? len : 0;
            Wire.header(f, op, flags, pi, 0, nextRsn, qp.destQpNum, qp.qpn, qp.txToken, wr.msn, sendOffset,
                    wr.length, imm, 0, 0);
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
                    MemorySegment.copy(inlineBuf,
                            (long) (wrSent & wrMask) * AbiConstants.MRCE_MAX_INLINE + sendOffset, f,
                            Wire.HEADER_SIZE + ext, len);
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

    private static int wireOpcode(int wrOpcode) {
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
    private long minWindowBytes() {
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
            if (lastDeliveredSeq < x.txSeq[e]) {
                continue; // nothing sent after it arrived anywhere: no path is known to be faster
            }
            long expectNs = x.hasRtt() ? x.srttNs : x.ptoNs(dp.rtoInitialNs, dp.tlpMinNs);
            long sentNs = x.txTimeNs[e];
            if (sentNs + expectNs - horizon <= 0
                    && (!windowLimited || nowNs - sentNs <= expectNs + 2 * srttMinNs)) {
                continue; // expected about as soon as a copy would land (and, holding the window, not late)
            }
            int pi = pathSet.pick(slotLen[slot], x.id);
            if (pi < 0 || pi == x.id || paths[pi].state != Path.ACTIVE) {
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

    /**
     * A READ or atomic response: places its payload (out of order, by its offset) in the work
     * request's scatter list; it also acknowledges its request.
     */
    public void onResponse(Datapath dp, MemorySegment frame, int length, long nowNs) {
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
        SendWr wr = wrs[t.wr & wrMask];
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
            if (t.atomic || (Wire.u32(frame, Wire.OFF_MSG_LEN) & 0xffffffffL) != wr.length || rel < 0
                    || rel >= Math.max(1, t.length) || rel % t.unit != 0
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
        retriesReset(nowNs);
        t.timeouts = 0;
        trackers.restartFrom(rsn, nowNs + qpRtoNs());
        if (rsn - una >= 0 && rsn - nextRsn < 0 && !slotAcked[rsn & MASK]) {
            markAcked(rsn); // a response acknowledges its request
            advanceUna(dp, nowNs);
        }
    }

    /** A staged response landed (or failed to): count it; a request whose responses all landed is done. */
    void commitResponse(Datapath dp, int rsn, int ti, boolean failed) {
        ResponseTrackers.Tracker t = trackers.get(ti);
        if (!qp.canSend() || !t.active || t.rsn != rsn) {
            return;
        }
        SendWr wr = wrs[t.wr & wrMask];
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
     * {@link #qpRtoNs()}, doubling per timeout of that request) has its missing ranges re-requested
     * with {@link Wire#FLAG_RESEND}. Each round with timeouts counts once against retry_cnt; any
     * response (or new acknowledgement) resets the count.
     */
    private int responseTimers(Datapath dp, long nowNs) {
        int expired = -1;
        for (int i = 0; i < TRACKERS; i++) {
            ResponseTrackers.Tracker t = trackers.get(i);
            if (!t.active || nowNs - t.deadlineNs < 0) {
                continue;
            }
            if (!acked(t.rsn)) {
                // The request itself is not known to have arrived: the RSN recovery resends it.
                t.deadlineNs = nowNs + qpRtoNs();
                continue;
            }
            if (t.staged < t.packets) {
                resendMissing(dp, t);
            }
            t.timeouts++;
            t.deadlineNs = nowNs + Math.min(dp.rtoMaxNs, qpRtoNs() << Math.min(t.timeouts, 6));
            if (expired < 0 || t.rsn - trackers.get(expired).rsn < 0) {
                expired = i;
            }
        }
        if (expired < 0) {
            return 0;
        }
        dp.counters.responseTimeouts++;
        if (++retries > qp.retryCnt && retriesExhausted(nowNs)) {
            SendWr wr = wrs[trackers.get(expired).wr & wrMask];
            wr.status = Ibv.WC_RETRY_EXC_ERR;
            wr.failed = true;
            qp.toError();
        }
        return 1;
    }

    /** Re-requests the missing response ranges of {@code t} (runs of missing packets). */
    private void resendMissing(Datapath dp, ResponseTrackers.Tracker t) {
        SendWr wr = wrs[t.wr & wrMask];
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
        int op = wireOpcode(wr.opcode);
        int frameLen = Wire.HEADER_SIZE + (t.atomic ? Wire.ATOMIC_EXT_SIZE : Wire.RETH_SIZE);
        Wire.header(f, op, Wire.FLAG_RESEND, 0, 0, t.rsn, qp.destQpNum, qp.qpn, qp.txToken, wr.msn, (int) from,
                wr.length, t.atomic ? 0 : len, 0, 0);
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

    // ---- acknowledgements ----

    /**
     * An ACK: every RSN before {@code cumRsn}, each SACKed RSN, and the path reports in {@code frame}
     * (see the spec, section 6).
     */
    public void onAck(Datapath dp, MemorySegment frame, int length, long nowNs) {
        dp.counters.acksRx++;
        int cumRsn = Wire.u32(frame, Wire.OFF_RSN);
        if (!qp.canSend() || cumRsn - una < 0 || cumRsn - nextRsn > 0) {
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
        while (una != nextRsn && slotAcked[una & MASK]) {
            una++;
        }
        boolean progress = una != before;
        if (!baseline) {
            int reports = Wire.u32(frame, Wire.OFF_MSG_LEN);
            long off = Wire.OFF_REPORTS;
            for (int k = 0; k < reports && off + Wire.REPORT_SIZE <= length; k++, off += Wire.REPORT_SIZE) {
                int pi = Wire.u8(frame, off);
                if (pi < pathSet.count) {
                    onPathReport(dp, paths[pi], Wire.u8(frame, off + 1), Wire.u32(frame, off + 4), nowNs);
                }
            }
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
        while (una != nextRsn && slotAcked[una & MASK]) {
            una++;
        }
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

    /** Resolves every transmission of path {@code p} up to PSN {@code highest}: delivered or lost. */
    private void onPathReport(Datapath dp, Path p, int ceCount, int highest, long nowNs) {
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
            if (acked(rsn)) {
                delivered += bytes;
                deliveredPackets++;
                lastDeliveredSeq = Math.max(lastDeliveredSeq, p.txSeq[e]);
                lossBurst |= p.recordOutcome(false);
            } else {
                lost++;
                p.losses++;
                dp.counters.pathLosses++;
                lossBurst |= p.recordOutcome(true);
                int slot = rsn & MASK;
                if (slotPath[slot] == p.id && slotPsn[slot] == psn) {
                    queueRetransmit(rsn);
                }
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
            retriesReset(nowNs);
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
            }
            return;
        }
        PathCongestion.onReport(dp, p, minWindowBytes(), sampleNs, delivered, lost > 0 || ceCount > 0, nowNs);
        if (lost > 0 && lossBurst) {
            demote(dp, p, nowNs);
        } else if (p.state == Path.SUSPECT && (p.cleanRun >= CLEAN_RUN_TO_ACTIVE
                || probe && p.probesOk >= RE_ADMIT_PROBES)) {
            p.state = Path.ACTIVE;
        }
    }

    /** ACTIVE to SUSPECT; SUSPECT to DEAD (retired: new entropy, probed until clean). */
    private void demote(Datapath dp, Path p, long nowNs) {
        if (p.state == Path.ACTIVE && pathSet.count > 1) {
            p.state = Path.SUSPECT;
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

    /** Progress: the retry counter and its clock start again. */
    private void retriesReset(long nowNs) {
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
    private long qpRtoNs() {
        long t = rtoNs;
        for (int i = 0; i < pathSet.count; i++) {
            Path p = paths[i];
            if (p.state != Path.DEAD && p.hasRtt()) {
                t = Math.max(t, 2 * p.rtoNs);
            }
        }
        return t;
    }

    private void retire(Datapath dp, Path p, long nowNs) {
        // Everything still in flight on it is lost; its RSNs go elsewhere.
        for (int psn = p.una; psn != p.nextPsn; psn++) {
            int e = psn & Path.RING_MASK;
            if (p.txBytes[e] == Path.PROBE_LEN) {
                continue;
            }
            int rsn = p.txRsn[e];
            int slot = rsn & MASK;
            if (!acked(rsn) && slotPath[slot] == p.id && slotPsn[slot] == psn) {
                queueRetransmit(rsn);
            }
        }
        p.una = p.nextPsn;
        p.inflightBytes = 0;
        p.state = Path.DEAD;
        p.generation++;
        p.replacements++;
        p.entropy = pathSet.redraw(p, nowNs);
        p.probesOk = 0;
        p.failedAtNs = nowNs;
        p.nextProbeNs = nowNs;
        p.lossHistory = 0;
        p.cwndBytes = minWindowBytes();
        qpWindow.invalidate();
        dp.counters.pathRetirements++;
    }

    /** Per path: probes of SUSPECT and retired paths (within the budget), tail-loss probe, RTO. */
    private int pathTimers(Datapath dp, long nowNs) {
        int work = probes(dp, nowNs);
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
        if (p.tlpAway[e] && p.txBytes[e] != Path.PROBE_LEN && acked(p.txRsn[e])) {
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
                if (!acked(rsn)) {
                    lost++;
                    p.crossLost[e] = true;
                    p.losses++;
                    dp.counters.pathLosses++;
                    dp.counters.crossPathLosses++;
                    lossBurst |= p.recordOutcome(true);
                    int slot = rsn & MASK;
                    if (slotPath[slot] == p.id && slotPsn[slot] == psn) {
                        queueRetransmit(rsn);
                    }
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
        PathCongestion.halveOncePerSrtt(p, minWindowBytes(), nowNs);
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
            int slot = rsn & MASK;
            if (!acked(rsn) && slotPath[slot] == p.id && slotPsn[slot] == psn) {
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
                sendOnPath(dp, rsn, q, Wire.FLAG_RETRANSMIT | Wire.FLAG_ACK_NOW, nowNs);
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
                if ((!silent || x.txSeq[e] > seq) && x.txBytes[e] != Path.PROBE_LEN && !x.tlpCopy[e]
                        && !acked(x.txRsn[e])) {
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
            int slot = rsn & MASK;
            if (!acked(rsn) && slotPath[slot] == p.id && slotPsn[slot] == psn) {
                queueRetransmit(rsn);
            }
        }
        p.una = p.nextPsn;
        p.inflightBytes = 0;
        p.tlpSent = false;
        if (p.state != Path.DEAD) {
            // A DEAD path's probes keep their own pace (one per probe interval); backing off
            // its RTO would space them up to rto_max apart and delay the re-admission.
            p.rtoNs = Math.min(dp.rtoMaxNs, p.rtoNs * 2);
        }
        PathCongestion.halve(p, minWindowBytes(), nowNs);
        if (p.state != Path.DEAD && blame) {
            demote(dp, p, nowNs);
        } else if (p.state == Path.DEAD && probeLost) {
            redrawDead(dp, p, nowNs);
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
        if (!p.hasInflight()) {
            p.lastProgressNs = nowNs;
        }
        p.nextPsn++;
        MemorySegment f = dp.port.claim();
        Wire.header(f, Wire.OP_PROBE, Wire.FLAG_ACK_NOW, p.id, psn, 0, qp.destQpNum, qp.qpn, qp.txToken, 0, 0,
                0, 0, p.entropy, 0);
        dp.sendClaimed(f, Wire.HEADER_SIZE, qp.peerIp, qp.peerPort, p.entropy);
        int e = psn & Path.RING_MASK;
        p.txRsn[e] = 0;
        p.txTimeNs[e] = nowNs;
        p.txSeq[e] = ++txSeq;
        p.crossLost[e] = false;
        p.tlpAway[e] = false;
        p.tlpCopy[e] = false;
        p.txBytes[e] = Path.PROBE_LEN;
        p.probesSent++;
        dp.counters.probesTx++;
    }

    private void markAcked(int rsn) {
        int slot = rsn & MASK;
        if (!slotAcked[slot]) {
            slotAcked[slot] = true;
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
            while (una != nextRsn && slotAcked[una & MASK]) {
                una++;
            }
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
            deadlineNs = nowNs + (ConformanceBreak.IGNORE_RNR_TIMER ? 0 : rnrDelayNs(rnrTimer));
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
    private static final int[] RNR_TIMER_US = {655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320,
        480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
        61440, 81920, 122880, 163840, 245760, 327680, 491520};

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
                qp.sendCq.post(wr.wrId, Ibv.WC_SUCCESS, wcOpcode(wr.opcode), wr.length, 0, qp.qpn, 0,
                        0, false);
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
                qp.sendCq.post(wr.wrId, status, wcOpcode(wr.opcode),
                        status == Ibv.WC_SUCCESS ? wr.length : 0, 0, qp.qpn, 0, 0, false);
            }
            wrHead++;
            n++;
        }
        wrSent = wrHead;
        sendOffset = 0;
        una = nextRsn;
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
