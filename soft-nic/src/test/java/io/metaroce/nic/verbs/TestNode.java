package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;

import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.CreateSrqReqDescriptor;
import io.metaroce.abi.CreateSrqRespDescriptor;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.RegMrRespDescriptor;
import io.metaroce.nic.abi.CqeFlyweight;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.port.Port;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.transport.TransportSettings;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One host in a test: a daemon (engine + VerbsService on a given port) and an application that
 * talks to it like the provider does (control ops, SQ/RQ rings, CQ ring), all in this process.
 * The engine is driven by hand ({@link #pump}) with the test's clock.
 */
public final class TestNode implements AutoCloseable {
    private static final long SESSIONS_BASE = 1000;
    private static long nextSession = SESSIONS_BASE;

    public final EngineAgent engine;
    public final VerbsService service;
    public final FakeSession session;
    public final Port port;
    private final LongSupplier clock;
    private int seq;

    public record Cqe(long wrId, int status, int opcode, int byteLen, int imm, int qpNum, int srcQp, int wcFlags) {}

    public record QpHandles(int handle, int qpn, MemorySegment map, RingFlyweight sq, RingFlyweight rq) {}

    /**
     * A node on one end of a clean in-memory link (198.18.0.1 to 198.18.0.2, UDP port 4793): what
     * the control-op tests need.
     */
    public static TestNode onLink(LongSupplier clock) throws Exception {
        MemoryLink link = new MemoryLink(1, 0, 0, 0, 0, clock);
        MemoryLink.End end = link.end(Inet4.parse("198.18.0.1"), 4793);
        link.connect(end, link.end(Inet4.parse("198.18.0.2"), 4793));
        return new TestNode(end, 4793, clock);
    }

    public TestNode(Port port, int udpPort, LongSupplier clock) throws Exception {
        this(port, udpPort, clock, Limits.defaults());
    }

    public TestNode(Port port, int udpPort, LongSupplier clock, Limits limits) throws Exception {
        this(port, udpPort, clock, limits, TransportSettings.SIMULATION);
    }

    public TestNode(Port port, int udpPort, LongSupplier clock, TransportSettings transport) throws Exception {
        this(port, udpPort, clock, Limits.defaults(), transport);
    }

    public TestNode(Port port, int udpPort, LongSupplier clock, Limits limits, TransportSettings transport)
            throws Exception {
        this.port = port;
        this.clock = clock;
        // Sequential identifiers (QPNs pick the paths' entropies): the same run every time, and
        // the numbering the transport tests were tuned with. IdentifierTest covers the random ones.
        this.engine = new EngineAgent(port, new MrTable(1024, null), transport, clock);
        NetInfo net = new NetInfo("test0", port.localIp(), 9000, true, 0);
        this.service = new VerbsService(engine, engine.datapath().mrs, net, udpPort, limits);
        service.identifierRandom(null);
        synchronized (TestNode.class) {
            this.session = new FakeSession(nextSession++, LibC.getpid());
        }
    }

    /** Another connection to the same daemon, as user {@code uid}. */
    public TestNode connectionOf(int uid) {
        return new TestNode(this, uid);
    }

    private TestNode(TestNode daemon, int uid) {
        this.port = daemon.port;
        this.clock = daemon.clock;
        this.engine = daemon.engine;
        this.service = daemon.service;
        synchronized (TestNode.class) {
            this.session = new FakeSession(nextSession++, LibC.getpid());
        }
        session.uid = uid;
    }

    public int pump() {
        return engine.doWork(clock.getAsLong());
    }

    /** Sends a request and drives the engine until its response arrives. */
    public FakeSession.Response call(int op, ByteBuffer payload) {
        int s = ++seq;
        service.onRequest(session, op, s, payload.rewind());
        for (int i = 0; i < 1000; i++) {
            for (FakeSession.Response r : session.responses) {
                if (r.seq() == s) {
                    session.responses.remove(r);
                    return r;
                }
            }
            pump();
        }
        throw new AssertionError("no response to op " + op);
    }

    public static ByteBuffer req(long size) {
        return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    public static ByteBuffer handleReq(int handle) {
        ByteBuffer b = req(HandleReqDescriptor.SIZE);
        b.putInt((int) HandleReqDescriptor.OFF_HANDLE, handle);
        return b;
    }

    public FakeSession.Response hello() {
        return hello(0);
    }

    /** The doorbell page when HELLO asked for one ({@link #hello(int)}); else null. */
    public MemorySegment doorbellPage;

    /** HELLO with {@code flags} (MRCE_HELLO_DOORBELL_PAGE: the page, mapped as the provider maps it). */
    public FakeSession.Response hello(int flags) {
        ByteBuffer b = req(HelloReqDescriptor.SIZE);
        b.putInt(0, MRCE_ABI_VERSION);
        b.putInt((int) HelloReqDescriptor.OFF_FLAGS, flags);
        FakeSession.Response r = call(MRCE_OP_HELLO, b);
        if (r.status() == 0 && (flags & MRCE_HELLO_DOORBELL_PAGE) != 0) {
            doorbellPage = r.mapping();
        }
        return r;
    }

    /**
     * What the provider does after publishing a post on {@code ring} of QP {@code qpn}: a fence,
     * and when the ring asks for a wakeup, the QP's bit and its summary bit in the doorbell page
     * (no eventfd here: the test drives the engine). Returns whether it rang.
     */
    public boolean ringDoorbell(RingFlyweight ring, int qpn) {
        java.lang.invoke.VarHandle.fullFence();
        if (doorbellPage == null || !ring.needWakeup()) {
            return false;
        }
        int x = qpn & MRCE_QP_INDEX_MASK;
        long bitsOff = MRCE_DB_BITS_OFF + 8L * (x / 64);
        long summaryOff = MRCE_DB_SUMMARY_OFF + 8L * (x / 4096);
        DB_LONG.getAndBitwiseOr(doorbellPage, bitsOff, 1L << (x % 64));
        DB_LONG.getAndBitwiseOr(doorbellPage, summaryOff, 1L << ((x / 64) % 64));
        return true;
    }

    private static final java.lang.invoke.VarHandle DB_LONG = java.lang.foreign.ValueLayout.JAVA_LONG.varHandle();

    public int allocPd() {
        FakeSession.Response r = call(MRCE_OP_ALLOC_PD, req(0));
        check(r);
        return r.payload().getInt(0);
    }

    /** Returns {handle, lkey, rkey} or throws with the errno. */
    public int[] regMr(int pd, MemorySegment mem, int access) {
        FakeSession.Response r = regMrRaw(pd, mem.address(), mem.byteSize(), access);
        check(r);
        return new int[] {
            r.payload().getInt((int) RegMrRespDescriptor.OFF_HANDLE),
            r.payload().getInt((int) RegMrRespDescriptor.OFF_LKEY),
            r.payload().getInt((int) RegMrRespDescriptor.OFF_RKEY)
        };
    }

    public FakeSession.Response regMrRaw(int pd, long addr, long len, int access) {
        ByteBuffer b = req(RegMrReqDescriptor.SIZE);
        b.putInt((int) RegMrReqDescriptor.OFF_PD, pd);
        b.putInt((int) RegMrReqDescriptor.OFF_ACCESS, access);
        b.putLong((int) RegMrReqDescriptor.OFF_ADDR, addr);
        b.putLong((int) RegMrReqDescriptor.OFF_LENGTH, len);
        b.putLong((int) RegMrReqDescriptor.OFF_IOVA, addr);
        return call(MRCE_OP_REG_MR, b);
    }

    public record CqHandles(int handle, RingFlyweight ring) {}

    public CqHandles createCq(int cqe, int channel) {
        ByteBuffer b = req(CreateCqReqDescriptor.SIZE);
        b.putInt((int) CreateCqReqDescriptor.OFF_CQE, cqe);
        b.putInt((int) CreateCqReqDescriptor.OFF_CHANNEL, channel);
        FakeSession.Response r = call(MRCE_OP_CREATE_CQ, b);
        check(r);
        return new CqHandles(
                r.payload().getInt((int) CreateCqRespDescriptor.OFF_HANDLE), new RingFlyweight().wrap(r.mapping()));
    }

    public QpHandles createQp(int pd, int sendCq, int recvCq, int wr, int sge, int inline) {
        FakeSession.Response r = createQpRaw(pd, sendCq, recvCq, Ibv.QPT_RC, wr, sge, inline);
        check(r);
        ByteBuffer p = r.payload();
        MemorySegment map = r.mapping();
        return new QpHandles(
                p.getInt((int) CreateQpRespDescriptor.OFF_HANDLE),
                p.getInt((int) CreateQpRespDescriptor.OFF_QP_NUM),
                map,
                new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_SQ_OFFSET))),
                new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_RQ_OFFSET))));
    }

    /** Creates a QP of {@code type}, on SRQ {@code srq} (or NO_HANDLE). */
    public QpHandles createQp(int pd, int sendCq, int recvCq, int srq, int type, int wr, int sge, int inline) {
        FakeSession.Response r = createQpRaw(pd, sendCq, recvCq, srq, type, wr, sge, inline);
        check(r);
        ByteBuffer p = r.payload();
        MemorySegment map = r.mapping();
        return new QpHandles(
                p.getInt((int) CreateQpRespDescriptor.OFF_HANDLE),
                p.getInt((int) CreateQpRespDescriptor.OFF_QP_NUM),
                map,
                new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_SQ_OFFSET))),
                new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_RQ_OFFSET))));
    }

    public FakeSession.Response createQpRaw(int pd, int sendCq, int recvCq, int type, int wr, int sge, int inline) {
        return createQpRaw(pd, sendCq, recvCq, NO_HANDLE, type, wr, sge, inline);
    }

    public FakeSession.Response createQpRaw(
            int pd, int sendCq, int recvCq, int srq, int type, int wr, int sge, int inline) {
        ByteBuffer b = req(CreateQpReqDescriptor.SIZE);
        b.putInt((int) CreateQpReqDescriptor.OFF_PD, pd);
        b.putInt((int) CreateQpReqDescriptor.OFF_SEND_CQ, sendCq);
        b.putInt((int) CreateQpReqDescriptor.OFF_RECV_CQ, recvCq);
        b.putInt((int) CreateQpReqDescriptor.OFF_SRQ, srq);
        b.putInt((int) CreateQpReqDescriptor.OFF_QP_TYPE, type);
        b.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_WR, wr);
        b.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_WR, wr);
        b.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_SGE, sge);
        b.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_SGE, sge);
        b.putInt((int) CreateQpReqDescriptor.OFF_MAX_INLINE_DATA, inline);
        return call(MRCE_OP_CREATE_QP, b);
    }

    public record SrqHandles(int handle, int maxWr, int maxSge, RingFlyweight ring) {}

    public FakeSession.Response createSrqRaw(int pd, int maxWr, int maxSge, int limit) {
        ByteBuffer b = req(CreateSrqReqDescriptor.SIZE);
        b.putInt((int) CreateSrqReqDescriptor.OFF_PD, pd);
        b.putInt((int) CreateSrqReqDescriptor.OFF_MAX_WR, maxWr);
        b.putInt((int) CreateSrqReqDescriptor.OFF_MAX_SGE, maxSge);
        b.putInt((int) CreateSrqReqDescriptor.OFF_SRQ_LIMIT, limit);
        return call(MRCE_OP_CREATE_SRQ, b);
    }

    public SrqHandles createSrq(int pd, int maxWr, int maxSge, int limit) {
        FakeSession.Response r = createSrqRaw(pd, maxWr, maxSge, limit);
        check(r);
        ByteBuffer p = r.payload();
        return new SrqHandles(
                p.getInt((int) CreateSrqRespDescriptor.OFF_HANDLE),
                p.getInt((int) CreateSrqRespDescriptor.OFF_MAX_WR),
                p.getInt((int) CreateSrqRespDescriptor.OFF_MAX_SGE),
                new RingFlyweight().wrap(r.mapping()));
    }

    public int modifyQp(int qp, int mask, QpAttrs attrs) {
        ByteBuffer b = req(ModifyQpReqDescriptor.SIZE);
        b.putInt((int) ModifyQpReqDescriptor.OFF_HANDLE, qp);
        b.putInt((int) ModifyQpReqDescriptor.OFF_ATTR_MASK, mask);
        attrs.write(b, (int) ModifyQpReqDescriptor.OFF_ATTR);
        return call(MRCE_OP_MODIFY_QP, b).status();
    }

    public QpAttrs queryQp(int qp) {
        FakeSession.Response r = call(MRCE_OP_QUERY_QP, handleReq(qp));
        check(r);
        return QpAttrs.read(r.payload(), 0);
    }

    /** The rc_pingpong sequence: RESET -> INIT -> RTR -> RTS towards a peer. */
    public void connect(int qp, int peerIp, int peerQpn, int myPsn, int peerPsn, int mtu) {
        QpAttrs a = new QpAttrs();
        a.qpState = Ibv.QPS_INIT;
        a.pkeyIndex = 0;
        a.portNum = 1;
        a.qpAccessFlags = Ibv.ACCESS_LOCAL_WRITE;
        expect0(modifyQp(qp, Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, a));
        a = new QpAttrs();
        a.qpState = Ibv.QPS_RTR;
        a.pathMtu = mtu;
        a.destQpNum = peerQpn;
        a.rqPsn = peerPsn;
        a.maxDestRdAtomic = 1;
        a.minRnrTimer = 12;
        a.isGlobal = 1;
        a.sgidIndex = 0;
        a.hopLimit = 1;
        a.ahPortNum = 1;
        System.arraycopy(Inet4.mappedGid(peerIp), 0, a.dgid, 0, 16);
        expect0(modifyQp(
                qp,
                Ibv.QP_STATE
                        | Ibv.QP_AV
                        | Ibv.QP_PATH_MTU
                        | Ibv.QP_DEST_QPN
                        | Ibv.QP_RQ_PSN
                        | Ibv.QP_MAX_DEST_RD_ATOMIC
                        | Ibv.QP_MIN_RNR_TIMER,
                a));
        a = new QpAttrs();
        a.qpState = Ibv.QPS_RTS;
        a.timeout = 14;
        a.retryCnt = 7;
        a.rnrRetry = 7;
        a.sqPsn = myPsn;
        a.maxRdAtomic = 1;
        expect0(modifyQp(
                qp,
                Ibv.QP_STATE
                        | Ibv.QP_TIMEOUT
                        | Ibv.QP_RETRY_CNT
                        | Ibv.QP_RNR_RETRY
                        | Ibv.QP_SQ_PSN
                        | Ibv.QP_MAX_QP_RD_ATOMIC,
                a));
    }

    private static void expect0(int status) {
        if (status != 0) {
            throw new AssertionError("modify_qp failed: errno " + status);
        }
    }

    private static void check(FakeSession.Response r) {
        if (r.status() != 0) {
            throw new AssertionError("op " + r.op() + " failed: errno " + r.status());
        }
    }

    private final WqeFlyweight wqe = new WqeFlyweight();

    /** Posts one WQE (the provider's post_send/post_recv); false when the ring is full. */
    public boolean post(
            RingFlyweight ring, long wrId, int opcode, int flags, int imm, long[] addrs, int[] lens, int lkey) {
        int prod = ring.producerAcquire();
        if (prod - ring.consumerAcquire() >= ring.slotCount()) {
            return false;
        }
        wqe.wrap(ring.segment(), ring.slotOffset(prod));
        wqe.wrId(wrId).opcode(opcode).sendFlags(flags).immData(imm).numSge(addrs.length);
        int total = 0;
        for (int i = 0; i < addrs.length; i++) {
            wqe.sge(i, addrs[i], lens[i], lkey);
            total += lens[i];
        }
        wqe.length(total);
        ring.producerRelease(prod + 1);
        return true;
    }

    /** Polls every available CQE (the provider's poll_cq). */
    public List<Cqe> poll(RingFlyweight cq) {
        List<Cqe> out = new ArrayList<>();
        CqeFlyweight c = new CqeFlyweight();
        int cons = cq.consumerAcquire();
        int prod = cq.producerAcquire();
        while (cons != prod) {
            c.wrap(cq.segment(), cq.slotOffset(cons));
            out.add(new Cqe(
                    c.wrId(), c.status(), c.opcode(), c.byteLen(), c.immData(), c.qpNum(), c.srcQp(), c.wcFlags()));
            cons++;
        }
        cq.consumerRelease(cons);
        return out;
    }

    @Override
    public void close() {
        service.onSessionClosed(session);
        for (int i = 0; i < 10; i++) {
            pump();
        }
        for (MemorySegment m : session.mappings) {
            try {
                LibC.munmap(m);
            } catch (Exception ignored) {
                // test cleanup
            }
        }
        engine.close();
        port.close();
    }
}
