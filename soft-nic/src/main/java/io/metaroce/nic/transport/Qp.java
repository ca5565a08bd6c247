package io.metaroce.nic.transport;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.model.AsyncEventSink;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import java.lang.foreign.MemorySegment;

/**
 * A queue pair. Immutable identity and capabilities are set at creation; everything else (state,
 * attributes, transport) belongs to the engine thread once the QP was handed to it. Its requester,
 * responder and UD datapath are built with it, so it lives in the transport package, above the
 * model objects (PD, CQs, SRQ) it refers to.
 */
public final class Qp {
    public final int handle;
    public final int qpn;
    public final long sessionId;
    /** The owner's address space: a {@link io.metaroce.nic.dma.ProcessMemory} id, not the OS PID. */
    public final int pid;

    public final Pd pd;
    public final Cq sendCq;
    public final Cq recvCq;
    public final int qpType;
    public final boolean sqSigAll;
    public final int maxSendWr;
    public final int maxRecvWr;
    public final int maxSendSge;
    public final int maxRecvSge;
    public final int maxInlineData;
    /** The memfd mapping holding the SQ and RQ rings (null for QPs built in tests on plain memory). */
    public final MemorySegment mapping;

    public final RingFlyweight sq = new RingFlyweight();
    public final RingFlyweight rq = new RingFlyweight();
    public final int sqOffset;
    public final int rqOffset;
    public final int ifMtu;

    // ibv_qp_attr (engine thread)
    public int state = Ibv.QPS_RESET;
    public int pathMtu = Ibv.MTU_1024;
    public int qkey;
    public int rqPsn;
    public int sqPsn;
    public int destQpNum;
    public int accessFlags;
    public int flowLabel;
    public final byte[] dgid = new byte[16];
    public int sgidIndex;
    public int hopLimit;
    public int trafficClass;
    public boolean isGlobal;
    public int sl;
    public int ahPortNum;
    public int pkeyIndex;
    public int maxRdAtomic;
    public int maxDestRdAtomic;
    public int minRnrTimer;
    public int portNum = 1;
    public int timeout;
    public int retryCnt = 7;
    public int rnrRetry = 7;
    /** Peer daemon: IPv4 (host order) from dgid, and UDP port. */
    public int peerIp;

    public int peerPort;

    /**
     * Connection manager (docs/spec/connection-manager.md): the token this QP requires in every
     * packet it receives (0: none required, no manager) and the token the peer requires (sent in
     * every packet). Engine thread.
     */
    public int rxToken;

    public int txToken;
    /** When the engine last accepted a packet for this QP (System.nanoTime; 0: never). */
    public long lastRxNs;
    /** False between RTR and the end of the handshake: the requester sends nothing yet. */
    public boolean cmReady = true;
    /**
     * Its application rings through a doorbell page (docs/spec/control-protocol.md, section 6):
     * set at creation. The engine then reads an idle QP's rings only when its bit says it rang.
     */
    public boolean doorbellBits;
    /** The peer host's link MTU from the connection manager's endpoint; 0 until known (or without it). */
    public volatile int peerLinkMtu;
    /** The peer's receive token once the handshake completed (read by the manager's thread). */
    public volatile int cmRemoteToken;
    /** Our endpoint as announced to the peer (set on RTR; read by the manager's thread). */
    public volatile io.metaroce.control.cm.CmMessage.Endpoint cmLocal;

    /** The SRQ receives come from (null: the QP's own RQ). Set before the engine sees the QP. */
    public Srq srq;
    /** Where this QP's async events go (the owning connection's queue). */
    public AsyncEventSink asyncEvents = AsyncEventSink.NONE;

    public final RcRequester requester;
    public final RcResponder responder;
    /** The UD datapath of a UD QP (null for RC: then requester and responder serve it). */
    public final UdQp ud;

    public Qp(
            int handle,
            int qpn,
            long sessionId,
            int pid,
            Pd pd,
            Cq sendCq,
            Cq recvCq,
            int qpType,
            boolean sqSigAll,
            int sendSlots,
            int recvSlots,
            int maxSendSge,
            int maxRecvSge,
            int maxInlineData,
            MemorySegment mapping,
            int sqOffset,
            int rqOffset,
            int ifMtu) {
        this.handle = handle;
        this.qpn = qpn;
        this.sessionId = sessionId;
        this.pid = pid;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.qpType = qpType;
        this.sqSigAll = sqSigAll;
        this.maxSendWr = sendSlots;
        this.maxRecvWr = recvSlots;
        this.maxSendSge = maxSendSge;
        this.maxRecvSge = maxRecvSge;
        this.maxInlineData = maxInlineData;
        this.mapping = mapping;
        this.sqOffset = sqOffset;
        this.rqOffset = rqOffset;
        this.ifMtu = ifMtu;
        sq.init(mapping.asSlice(sqOffset), AbiConstants.MRCE_RING_KIND_SQ, (int) WqeDescriptor.SIZE, sendSlots);
        rq.init(mapping.asSlice(rqOffset), AbiConstants.MRCE_RING_KIND_RQ, (int) WqeDescriptor.SIZE, recvSlots);
        this.requester = new RcRequester(this);
        this.responder = new RcResponder(this);
        this.ud = qpType == Ibv.QPT_UD ? new UdQp(this) : null;
    }

    /** Bytes the rings of a QP need: SQ at 0, RQ at the next page. */
    public static long rqOffset(int sendSlots) {
        long sqBytes = RingFlyweight.byteSize((int) WqeDescriptor.SIZE, sendSlots);
        return (sqBytes + 4095) & ~4095L;
    }

    public static long mapSize(int sendSlots, int recvSlots) {
        long end = rqOffset(sendSlots) + RingFlyweight.byteSize((int) WqeDescriptor.SIZE, recvSlots);
        return (end + 4095) & ~4095L;
    }

    /**
     * Payload bytes per RC data packet on this QP's path (jumbo with a 4096-byte path MTU), within
     * both this host's link MTU and the peer's ({@link #peerLinkMtu}, once its daemon said it).
     */
    public int payloadPerPacket() {
        int peer = peerLinkMtu;
        int link = peer > 0 ? Math.min(ifMtu, peer) : ifMtu;
        return Wire.rcPayloadPerPacket(Ibv.mtuBytes(pathMtu), link);
    }

    public boolean canSend() {
        return state == Ibv.QPS_RTS || state == Ibv.QPS_SQD;
    }

    public boolean canReceive() {
        return state == Ibv.QPS_RTR || state == Ibv.QPS_RTS || state == Ibv.QPS_SQD;
    }

    /** Moves the QP to ERR: outstanding work requests complete with flush errors from now on. */
    public void toError() {
        state = Ibv.QPS_ERR;
        requester.onError();
    }

    /**
     * Moves the QP to ERR because of an error the application did not ask for, and reports
     * {@code eventType} (IBV_EVENT_QP_FATAL, IBV_EVENT_QP_ACCESS_ERR ...) as an async event; a QP
     * on an SRQ also reports IBV_EVENT_QP_LAST_WQE_REACHED.
     */
    public void fatal(int eventType) {
        if (state == Ibv.QPS_ERR) {
            return;
        }
        toError();
        asyncEvents.post(eventType, handle);
        if (srq != null) {
            asyncEvents.post(Ibv.EVENT_QP_LAST_WQE_REACHED, handle);
        }
    }
}
