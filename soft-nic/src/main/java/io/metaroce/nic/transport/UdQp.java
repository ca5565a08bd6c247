package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.IpAddr;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.model.Cq;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The UD half of a UD QP (docs/spec/transport.md, section "UD"): turns each send WQE into one
 * packet to the WQE's destination (ud_dest_ipv4, ud_remote_qpn, ud_remote_qkey) and completes it
 * once the packet is handed to the port (unreliable: what is lost is lost); receive WQEs of the
 * RQ are taken by {@link UdTransport#onFrame} as packets arrive. A send error (bad opcode, too
 * long for the MTU, bad lkey) completes that WQE with its error and moves the QP to SQE, where
 * further sends are flushed while receives go on; ERR flushes both queues (an SRQ is left alone).
 *
 * <p>Engine thread only.
 */
public final class UdQp {
    private static final ValueLayout.OfLong BE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    private final Qp qp;
    private final WqeFlyweight wqe = new WqeFlyweight();
    /** Largest payload of one UD message: the active MTU of the netdev. */
    public final int maxPayload;

    private int sqConsumer;
    /** Next RQ slot to take (UdTransport reads receives straight from the ring). */
    int rqConsumer;

    private int psn;
    private final long[] burstWrId = new long[UdTransport.BURST];
    private final int[] burstLen = new int[UdTransport.BURST];
    private final int[] burstDst = new int[UdTransport.BURST];
    private final int[] burstEntropy = new int[UdTransport.BURST];
    private final boolean[] burstSignaled = new boolean[UdTransport.BURST];

    public UdQp(Qp qp) {
        this.qp = qp;
        this.maxPayload = maxPayload(qp.ifMtu);
    }

    /** The largest IB MTU (256..4096) whose packet, with our header and IPv4/UDP, fits ifMtu. */
    public static int maxPayload(int ifMtu) {
        for (int mtu = Ibv.MTU_4096; mtu > Ibv.MTU_256; mtu--) {
            if (Ibv.mtuBytes(mtu) + Wire.HEADER_SIZE + Wire.IP_UDP_OVERHEAD <= ifMtu) {
                return Ibv.mtuBytes(mtu);
            }
        }
        return Ibv.mtuBytes(Ibv.MTU_256);
    }

    /** Entering RTS: the send counter starts at sq_psn. */
    public void start() {
        psn = qp.sqPsn;
    }

    /** Back to RESET: whatever the SQ and RQ hold is discarded. */
    public void reset() {
        sqConsumer = qp.sq.producerAcquire();
        qp.sq.consumerRelease(sqConsumer);
        rqConsumer = qp.rq.producerAcquire();
        qp.rq.consumerRelease(rqConsumer);
    }

    /** One duty-cycle step: send (RTS, SQD), or flush (SQE: the SQ; ERR: the SQ and the RQ). */
    public int doWork(UdTransport ud) {
        int s = qp.state;
        if (s == Ibv.QPS_ERR) {
            return flushSq() + flushRq();
        }
        if (s == Ibv.QPS_SQE) {
            return flushSq();
        }
        if (qp.canSend()) {
            return send(ud);
        }
        return 0;
    }

    private int flushSq() {
        int producer = qp.sq.producerAcquire();
        int n = 0;
        Cq cq = qp.sendCq;
        while (sqConsumer != producer && cq.hasSpace()) {
            wqe.wrap(qp.sq.segment(), qp.sq.slotOffset(sqConsumer));
            cq.post(wqe.wrId(), Ibv.WC_WR_FLUSH_ERR, Ibv.WC_SEND, 0, 0, qp.qpn, 0, 0, false);
            sqConsumer++;
            n++;
        }
        if (n > 0) {
            qp.sq.consumerRelease(sqConsumer);
        }
        return n;
    }

    private int flushRq() {
        if (qp.srq != null) {
            return 0;
        }
        int producer = qp.rq.producerAcquire();
        int n = 0;
        Cq cq = qp.recvCq;
        while (rqConsumer != producer && cq.hasSpace()) {
            wqe.wrap(qp.rq.segment(), qp.rq.slotOffset(rqConsumer));
            cq.post(wqe.wrId(), Ibv.WC_WR_FLUSH_ERR, Ibv.WC_RECV, 0, 0, qp.qpn, 0, 0, false);
            rqConsumer++;
            n++;
        }
        if (n > 0) {
            qp.rq.consumerRelease(rqConsumer);
        }
        return n;
    }

    /**
     * Validates up to a burst of send WQEs, gathers their payloads in one batch, sends one packet
     * each and completes them in order. Takes a WQE only while the send CQ has room for every
     * completion the burst may owe (its signaled WQEs, plus one error).
     */
    private int send(UdTransport ud) {
        int producer = qp.sq.producerAcquire();
        if (sqConsumer == producer) {
            return 0;
        }
        Datapath dp = ud.dp;
        Cq cq = qp.sendCq;
        int room = UdTransport.cqFree(cq);
        int owed = 0;
        int count = 0;
        int errStatus = -1;
        long errWrId = 0;
        dp.gather.begin(qp.pid);
        MemorySegment ring = qp.sq.segment();
        while (sqConsumer + count != producer && count < UdTransport.BURST && owed + 1 <= room) {
            long slot = qp.sq.slotOffset(sqConsumer + count);
            wqe.wrap(ring, slot);
            int flags = wqe.sendFlags();
            boolean signaled = qp.sqSigAll || (flags & Ibv.SEND_SIGNALED) != 0;
            int opcode = wqe.opcode();
            int status = -1;
            int len = 0;
            MemorySegment f = ud.txFrames[count];
            if (opcode != Ibv.WR_SEND && opcode != Ibv.WR_SEND_WITH_IMM) {
                status = Ibv.WC_LOC_QP_OP_ERR;
            } else if ((flags & Ibv.SEND_INLINE) != 0) {
                len = wqe.length();
                if (len < 0 || len > qp.maxInlineData || len > AbiConstants.MRCE_MAX_INLINE || len > maxPayload) {
                    status = Ibv.WC_LOC_LEN_ERR;
                } else {
                    MemorySegment.copy(ring, wqe.inlineDataOffset(), f, Wire.HEADER_SIZE, len);
                }
            } else {
                int numSge = wqe.numSge();
                SgeList sges = ud.txSges[count];
                long total = numSge > qp.maxSendSge ? -2 : sges.load(dp.mrs, qp, wqe, numSge, 0);
                if (total == -2 || total > maxPayload) {
                    status = Ibv.WC_LOC_LEN_ERR; // one message is one packet: at most the MTU
                } else if (total < 0) {
                    status = Ibv.WC_LOC_PROT_ERR;
                } else {
                    len = (int) total;
                    sges.copy(dp.gather, 0, len, f.address() + Wire.HEADER_SIZE, count);
                }
            }
            int dstIp = Integer.reverseBytes(ring.get(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_DEST_IPV4));
            if (dstIp == 0) {
                // An IPv6 host: the whole dgid (IpAddr: its handle; 0 for the zero GID)
                dstIp = IpAddr.intern(
                        ring.get(BE_LONG, slot + WqeDescriptor.OFF_UD_DGID),
                        ring.get(BE_LONG, slot + WqeDescriptor.OFF_UD_DGID + 8));
            }
            if (status < 0 && (dstIp == 0 || IpAddr.isV6(dstIp) != IpAddr.isV6(dp.port.localIp()))) {
                status = Ibv.WC_LOC_QP_OP_ERR; // no address, or one of the family the daemon does not serve
            }
            if (status >= 0) {
                errStatus = status;
                errWrId = wqe.wrId();
                break;
            }
            int dstQpn = ring.get(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QPN) & 0xffffff;
            int qkey = ring.get(ValueLayout.JAVA_INT, slot + WqeDescriptor.OFF_UD_REMOTE_QKEY);
            if ((qkey & UdWire.QKEY_USE_QP) != 0) {
                qkey = qp.qkey;
            }
            int tclass = ring.get(ValueLayout.JAVA_BYTE, slot + WqeDescriptor.OFF_UD_TRAFFIC_CLASS) & 0xff;
            int hop = ring.get(ValueLayout.JAVA_BYTE, slot + WqeDescriptor.OFF_UD_HOP_LIMIT) & 0xff;
            boolean imm = opcode == Ibv.WR_SEND_WITH_IMM;
            Wire.header(
                    f,
                    imm ? UdWire.OP_UD_SEND_IMM : UdWire.OP_UD_SEND,
                    (flags & Ibv.SEND_SOLICITED) != 0 ? Wire.FLAG_SOLICITED : 0,
                    0,
                    psn & 0xffffff,
                    0,
                    dstQpn,
                    qp.qpn,
                    qkey,
                    0,
                    0,
                    len,
                    imm ? Integer.reverseBytes(wqe.immData()) : 0,
                    (tclass << 8) | hop,
                    0);
            psn++;
            burstWrId[count] = wqe.wrId();
            burstLen[count] = len;
            burstDst[count] = dstIp;
            burstEntropy[count] = ((qp.qpn * 0x9e3779b1) ^ (dstQpn * 0x85ebca6b)) >>> 16;
            burstSignaled[count] = signaled;
            if (signaled) {
                owed++;
            }
            count++;
        }
        int failedAt = count;
        if (dp.gather.count() > 0 && dp.gather.flush() > 0) {
            for (int k = 0; k < dp.gather.count(); k++) {
                if (dp.gather.failed(k)) {
                    failedAt = Math.min(failedAt, dp.gather.tag(k));
                }
            }
        }
        for (int i = 0; i < failedAt; i++) {
            MemorySegment f = ud.txFrames[i];
            int frameLen = Wire.HEADER_SIZE + burstLen[i];
            Wire.seal(dp.crc, f, ud.txViews[i], frameLen);
            MemorySegment out = dp.port.claim();
            MemorySegment.copy(f, 0, out, 0, frameLen);
            dp.port.commit(frameLen, burstDst[i], qp.peerPort, burstEntropy[i]);
            ud.packetsTx++;
        }
        int consumed = failedAt;
        if (failedAt < count) {
            // the application's memory could not be read: that WQE fails, later ones stay queued
            // and are flushed in SQE
            errStatus = Ibv.WC_LOC_PROT_ERR;
            errWrId = burstWrId[failedAt];
        }
        if (errStatus >= 0) {
            consumed++;
        }
        // The send queue's slots are free before their completions are seen: an application that
        // posts again as soon as it polls a completion (UCX's ud_verbs counts its room so) must
        // find the room (it got ENOMEM from ibv_post_send when the completions came first).
        sqConsumer += consumed;
        if (consumed > 0) {
            qp.sq.consumerRelease(sqConsumer);
        }
        for (int i = 0; i < failedAt; i++) {
            if (burstSignaled[i]) {
                cq.post(burstWrId[i], Ibv.WC_SUCCESS, Ibv.WC_SEND, burstLen[i], 0, qp.qpn, 0, 0, false);
            }
        }
        if (errStatus >= 0) {
            cq.post(errWrId, errStatus, Ibv.WC_SEND, 0, 0, qp.qpn, 0, 0, false);
            ud.sendErrors++;
            qp.state = Ibv.QPS_SQE;
        }
        return consumed;
    }
}
