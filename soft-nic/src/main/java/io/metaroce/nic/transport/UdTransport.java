package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.dma.DmaBatch;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * What the UD QPs of an engine share (docs/spec/transport.md, section "UD"): the staging frames
 * of a send burst, and the receive side: each arriving UD packet takes one receive WQE (from the
 * QP's RQ or its SRQ) at once, and its GRH and payload are staged into one scatter batch per RX
 * batch ({@link #commitRx}), after which the receive completions are written. Unreliable: a
 * packet with no receive posted, a wrong Q_Key, a QP not ready or a full CQ is dropped and
 * counted. Engine thread only.
 */
public final class UdTransport implements AutoCloseable {
    /** Send WQEs a UD QP turns into packets per duty cycle. */
    static final int BURST = 32;

    static final int STAGE_CAPACITY = 64;

    final Datapath dp;
    private final Arena arena = Arena.ofShared();
    final MemorySegment[] txFrames = new MemorySegment[BURST];
    final ByteBuffer[] txViews = new ByteBuffer[BURST];
    final SgeList[] txSges = new SgeList[BURST];
    final MemorySegment txInline;
    private final DmaBatch scatter = new DmaBatch(true, DmaBatch.IOV_MAX);
    private final WqeFlyweight wqe = new WqeFlyweight();
    private final MemorySegment grh = arena.allocate((long) STAGE_CAPACITY * UdWire.GRH_SIZE, 64);
    private final Qp[] stagedQp = new Qp[STAGE_CAPACITY];
    private final long[] stagedWrId = new long[STAGE_CAPACITY];
    private final int[] stagedStatus = new int[STAGE_CAPACITY];
    private final int[] stagedLen = new int[STAGE_CAPACITY];
    private final int[] stagedImm = new int[STAGE_CAPACITY];
    private final int[] stagedSrcQp = new int[STAGE_CAPACITY];
    private final int[] stagedFlags = new int[STAGE_CAPACITY];
    private final boolean[] stagedSolicited = new boolean[STAGE_CAPACITY];
    private final boolean[] stagedFailed = new boolean[STAGE_CAPACITY];
    private int staged;
    // receive SGEs of the WQE being read
    private final long[] rxAddr = new long[AbiConstants.MRCE_MAX_SGE];
    private final int[] rxLen = new int[AbiConstants.MRCE_MAX_SGE];
    private final Mr[] rxRegion = new Mr[AbiConstants.MRCE_MAX_SGE];
    private int rxCount;

    // counters (engine thread; read for stats)
    public long packetsTx;
    public long packetsRx;
    /** Q_Key of the packet differs from the receiving QP's: dropped (IB: silently). */
    public long qkeyDrops;
    /** No receive WQE posted (UD has no RNR): dropped. */
    public long noRecvDrops;
    /** The receive CQ had no room for the completion: dropped before a WQE was taken. */
    public long cqFullDrops;
    /** The QP is not in RTR, RTS, SQD or SQE: dropped. */
    public long stateDrops;
    /** Length fields disagree with the packet: dropped. */
    public long malformed;
    /** Receives completed with an error (buffer too small, bad lkey, copy failed). */
    public long recvErrors;
    /** Send WQEs completed with an error (too long for the MTU, bad opcode, bad lkey ...). */
    public long sendErrors;

    public UdTransport(Datapath dp) {
        this.dp = dp;
        int frame = Wire.HEADER_SIZE + 4096;
        for (int i = 0; i < BURST; i++) {
            txFrames[i] = arena.allocate(frame, 64);
            txViews[i] = txFrames[i].asByteBuffer();
            txSges[i] = new SgeList();
        }
        txInline = arena.allocate((long) BURST * AbiConstants.MRCE_MAX_INLINE, 64);
    }

    /** Free entries of a CQ (the engine is its only producer), reservations excluded. */
    static int cqFree(Cq cq) {
        return cq.free();
    }

    /** A UD QP takes receives in RTR, RTS, SQD and SQE (a send queue error leaves receives alone). */
    static boolean receives(Qp qp) {
        int s = qp.state;
        return s == Ibv.QPS_RTR || s == Ibv.QPS_RTS || s == Ibv.QPS_SQD || s == Ibv.QPS_SQE;
    }

    /**
     * A UD packet for {@code qp} (a UD QP; CRC and version already checked). The frame must stay
     * valid until {@link #commitRx}. {@code dstIp} is this daemon's address (the GRH's dgid).
     */
    public void onFrame(Qp qp, MemorySegment frame, int length, int srcIp, int dstIp) {
        int payload = length - Wire.HEADER_SIZE;
        if (Wire.u32(frame, Wire.OFF_MSG_LEN) != payload || Wire.u32(frame, Wire.OFF_OFFSET) != 0) {
            malformed++;
            return;
        }
        if (!receives(qp)) {
            stateDrops++;
            return;
        }
        if (Wire.u32(frame, Wire.OFF_TOKEN) != qp.qkey && !ConformanceBreak.IGNORE_QKEY) {
            qkeyDrops++;
            return;
        }
        Cq cq = qp.recvCq;
        if (cq.free() <= 0) {
            cqFullDrops++;
            return;
        }
        Srq srq = qp.srq;
        UdQp u = qp.ud;
        Pd pd;
        int maxSge;
        if (srq != null) {
            if (!srq.peek(wqe)) {
                noRecvDrops++;
                return;
            }
            pd = srq.pd;
            maxSge = srq.maxSge;
        } else {
            if (u.rqConsumer == qp.rq.producerAcquire()) {
                noRecvDrops++;
                return;
            }
            wqe.wrap(qp.rq.segment(), qp.rq.slotOffset(u.rqConsumer));
            pd = qp.pd;
            maxSge = qp.maxRecvSge;
        }
        prepareStage(qp.pid);
        int i = staged;
        long capacity = loadRecvSges(qp, pd, maxSge);
        stagedWrId[i] = wqe.wrId();
        // the WQE is ours now: the slot goes back to the application
        if (srq != null) {
            srq.consume();
        } else {
            u.rqConsumer++;
            qp.rq.consumerRelease(u.rqConsumer);
        }
        int status = -1;
        if (capacity == -2) {
            status = Ibv.WC_LOC_LEN_ERR; // more SGEs than the queue allows
        } else if (capacity < 0) {
            status = Ibv.WC_LOC_PROT_ERR;
        } else if (capacity < UdWire.GRH_SIZE + (long) payload) {
            status = Ibv.WC_LOC_LEN_ERR;
        }
        int opcode = Wire.u8(frame, Wire.OFF_OPCODE);
        boolean imm = opcode == UdWire.OP_UD_SEND_IMM;
        stagedQp[i] = qp;
        cq.reserved++; // the completion's entry: until commitRx writes it, nobody else takes it
        stagedStatus[i] = status;
        stagedFailed[i] = false;
        stagedLen[i] = UdWire.GRH_SIZE + payload;
        stagedImm[i] = imm ? Integer.reverseBytes(Wire.u32(frame, Wire.OFF_IMM)) : 0;
        stagedSrcQp[i] = Wire.u32(frame, Wire.OFF_SRC_QPN);
        stagedFlags[i] = Ibv.WC_GRH | (imm ? Ibv.WC_WITH_IMM : 0);
        stagedSolicited[i] = (Wire.u8(frame, Wire.OFF_FLAGS) & Wire.FLAG_SOLICITED) != 0;
        staged++;
        if (status >= 0) {
            return;
        }
        int tclassHop = Wire.u16(frame, Wire.OFF_REPLY_ENTROPY);
        long g = (long) i * UdWire.GRH_SIZE;
        UdWire.putGrh(grh, g, tclassHop >>> 8, payload, tclassHop & 0xff, srcIp, dstIp);
        scatterTo(grh.address() + g, 0, UdWire.GRH_SIZE, i);
        if (payload > 0) {
            scatterTo(frame.address() + Wire.HEADER_SIZE, UdWire.GRH_SIZE, payload, i);
        }
    }

    /**
     * Reads the receive SGEs of {@link #wqe}: each lkey must name a region of {@code pd} in the
     * QP's process granting local write and holding the range. Returns the capacity, -1 on a
     * protection error, -2 for too many SGEs.
     */
    private long loadRecvSges(Qp qp, Pd pd, int maxSge) {
        rxCount = 0;
        int numSge = wqe.numSge();
        if (numSge > maxSge) {
            return -2;
        }
        long total = 0;
        for (int k = 0; k < numSge; k++) {
            long addr = wqe.sgeAddr(k);
            long len = wqe.sgeLength(k) & 0xffffffffL;
            if (len == 0) {
                continue;
            }
            Mr mr = dp.mrs.byLkey(wqe.sgeLkey(k));
            if (mr == null
                    || mr.pd != pd
                    || mr.pid != qp.pid
                    || !mr.contains(addr, len)
                    || (mr.access & Ibv.ACCESS_LOCAL_WRITE) == 0) {
                rxCount = 0;
                return -1;
            }
            rxAddr[rxCount] = mr.translate(addr);
            rxLen[rxCount] = (int) len;
            rxRegion[rxCount] = mr;
            rxCount++;
            total += len;
        }
        return total;
    }

    /** Adds the copy of {@code len} bytes from {@code local} to message offset {@code offset}. */
    private void scatterTo(long local, long offset, int len, int tag) {
        long skip = offset;
        int remaining = len;
        for (int k = 0; k < rxCount && remaining > 0; k++) {
            int sl = rxLen[k];
            if (skip >= sl) {
                skip -= sl;
                continue;
            }
            int n = (int) Math.min(sl - skip, remaining);
            if (rxRegion[k].live()) {
                scatter.add(local, rxAddr[k] + skip, n, tag);
            } else {
                scatter.addFailed(tag);
            }
            local += n;
            remaining -= n;
            skip = 0;
        }
    }

    private void prepareStage(int pid) {
        if (staged > 0
                && (scatter.pid() != pid
                        || staged == STAGE_CAPACITY
                        || scatter.count() + 2 * AbiConstants.MRCE_MAX_SGE > DmaBatch.IOV_MAX)) {
            commitRx();
        }
        if (staged == 0) {
            scatter.begin(pid);
        }
    }

    /**
     * Runs the scatter batch, then writes the receive completions in arrival order. Call after
     * every RX batch, before the frames are reused.
     */
    public int commitRx() {
        if (staged == 0) {
            return 0;
        }
        if (scatter.count() > 0 && scatter.flush() > 0) {
            for (int k = 0, n = scatter.count(); k < n; k++) {
                if (scatter.failed(k)) {
                    stagedFailed[scatter.tag(k)] = true;
                }
            }
        }
        int n = staged;
        for (int i = 0; i < n; i++) {
            Qp qp = stagedQp[i];
            qp.recvCq.reserved--;
            int status = stagedStatus[i];
            if (status < 0 && stagedFailed[i]) {
                status = Ibv.WC_LOC_PROT_ERR; // the application's buffer went away
            }
            if (status < 0) {
                qp.recvCq.post(
                        stagedWrId[i],
                        Ibv.WC_SUCCESS,
                        Ibv.WC_RECV,
                        stagedLen[i],
                        stagedImm[i],
                        qp.qpn,
                        stagedSrcQp[i],
                        stagedFlags[i],
                        stagedSolicited[i]);
                packetsRx++;
            } else {
                qp.recvCq.post(stagedWrId[i], status, Ibv.WC_RECV, 0, 0, qp.qpn, 0, 0, false);
                recvErrors++;
                if (status == Ibv.WC_LOC_PROT_ERR) {
                    qp.toError(); // a protection error is fatal to the QP; a short buffer is not
                }
            }
            stagedQp[i] = null;
        }
        staged = 0;
        scatter.begin(0);
        return n;
    }

    /** The counters as JSON fields (no braces). */
    public void appendJson(StringBuilder b) {
        b.append("\"packetsTx\":")
                .append(packetsTx)
                .append(",\"packetsRx\":")
                .append(packetsRx)
                .append(",\"qkeyDrops\":")
                .append(qkeyDrops)
                .append(",\"noRecvDrops\":")
                .append(noRecvDrops)
                .append(",\"cqFullDrops\":")
                .append(cqFullDrops)
                .append(",\"stateDrops\":")
                .append(stateDrops)
                .append(",\"malformed\":")
                .append(malformed)
                .append(",\"recvErrors\":")
                .append(recvErrors)
                .append(",\"sendErrors\":")
                .append(sendErrors);
    }

    @Override
    public void close() {
        scatter.close();
        arena.close();
    }
}
