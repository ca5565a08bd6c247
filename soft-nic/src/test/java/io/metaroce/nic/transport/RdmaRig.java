package io.metaroce.nic.transport;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.port.MemoryLink;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.verbs.QpAttrs;
import io.metaroce.nic.verbs.TestNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Two daemons over a deterministic lossy {@link MemoryLink} (injected clock, driven by hand),
 * with {@code n} connected RC QP pairs A[i] -> B[i] and two registered buffers: {@link #local} on
 * A (LOCAL_WRITE: sources, READ and atomic destinations) and {@link #remote} on B (the RDMA
 * target, with {@code remoteAccess}). Both are filled with a canary byte.
 */
final class RdmaRig implements AutoCloseable {
    static final int IP_A = Inet4.parse("198.18.0.1");
    static final int IP_B = Inet4.parse("198.18.0.2");
    static final byte CANARY = (byte) 0xa5;

    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final MemoryLink link;
    final TestNode a;
    final TestNode b;
    final Arena arena = Arena.ofShared();
    final MemorySegment local;
    final MemorySegment remote;
    final MemorySegment recvBuf;
    final int[] localMr;
    final int[] remoteMr;
    final int[] recvMr;
    final TestNode.CqHandles cqA;
    final TestNode.CqHandles cqB;
    final TestNode.QpHandles[] qpA;
    final TestNode.QpHandles[] qpB;
    final int pdA;
    final int pdB;
    final List<TestNode.Cqe> sendCqes = new ArrayList<>();
    final List<TestNode.Cqe> recvCqes = new ArrayList<>();
    private final WqeFlyweight wqe = new WqeFlyweight();

    /** Link and QP settings; {@code setup} runs before the QPs connect. */
    static final class Config {
        long seed = 1;
        double loss;
        double dup;
        long jitterNs;
        int mtu = Ibv.MTU_1024;
        int qps = 1;
        long localBytes = 1 << 20;
        long remoteBytes = 1 << 20;
        long recvBytes = 1 << 16;
        int remoteAccess =
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC;
        int qpAccess =
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC;
        int maxRdAtomic = 16;
        int maxDestRdAtomic = 16;
        int retryCnt = 7;
        /** The local ACK timeout attribute (4.096 us * 2^timeout; 0 is infinite). */
        int timeout = 14;

        int rnrRetry = 7;
        int minRnrTimer = 1;
        int wr = 128;
        Consumer<RdmaRig> setup;
        /** Both engines' transport. */
        TransportSettings transport = TransportSettings.SIMULATION;
        /** Both applications ring through a doorbell page (HELLO with MRCE_HELLO_DOORBELL_PAGE). */
        boolean doorbellPage;
    }

    final Config cfg;

    RdmaRig(Config c) throws Exception {
        this.cfg = c;
        link = new MemoryLink(c.seed, c.loss, c.dup, 10_000, c.jitterNs, clock::get);
        MemoryLink.End ea = link.end(IP_A, 4793);
        MemoryLink.End eb = link.end(IP_B, 4793);
        link.connect(ea, eb);
        a = new TestNode(ea, 4793, clock::get, c.transport);
        b = new TestNode(eb, 4793, clock::get, c.transport);
        int helloFlags = c.doorbellPage ? io.metaroce.abi.AbiConstants.MRCE_HELLO_DOORBELL_PAGE : 0;
        assertThat(a.hello(helloFlags).status()).isZero();
        assertThat(b.hello(helloFlags).status()).isZero();
        pdA = a.allocPd();
        pdB = b.allocPd();
        local = arena.allocate(c.localBytes, 4096);
        remote = arena.allocate(c.remoteBytes, 4096);
        recvBuf = arena.allocate(c.recvBytes, 4096);
        local.fill(CANARY);
        remote.fill(CANARY);
        recvBuf.fill(CANARY);
        localMr = a.regMr(pdA, local, Ibv.ACCESS_LOCAL_WRITE);
        remoteMr = b.regMr(pdB, remote, c.remoteAccess);
        recvMr = b.regMr(pdB, recvBuf, Ibv.ACCESS_LOCAL_WRITE);
        cqA = a.createCq(4096, AbiConstants.NO_HANDLE);
        cqB = b.createCq(4096, AbiConstants.NO_HANDLE);
        qpA = new TestNode.QpHandles[c.qps];
        qpB = new TestNode.QpHandles[c.qps];
        for (int i = 0; i < c.qps; i++) {
            qpA[i] = a.createQp(pdA, cqA.handle(), cqA.handle(), c.wr, 4, 64);
            qpB[i] = b.createQp(pdB, cqB.handle(), cqB.handle(), c.wr, 4, 64);
        }
        a.pump();
        b.pump();
        if (c.setup != null) {
            c.setup.accept(this);
        }
        for (int i = 0; i < c.qps; i++) {
            connect(a, qpA[i].handle(), IP_B, qpB[i].qpn(), 0x123456 + i, 0xfffff0 - i);
            connect(b, qpB[i].handle(), IP_A, qpA[i].qpn(), 0xfffff0 - i, 0x123456 + i);
        }
    }

    private void connect(TestNode n, int qp, int peerIp, int peerQpn, int myPsn, int peerPsn) {
        QpAttrs x = new QpAttrs();
        x.qpState = Ibv.QPS_INIT;
        x.portNum = 1;
        x.qpAccessFlags = cfg.qpAccess;
        assertThat(n.modifyQp(qp, Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, x))
                .isZero();
        x = new QpAttrs();
        x.qpState = Ibv.QPS_RTR;
        x.pathMtu = cfg.mtu;
        x.destQpNum = peerQpn;
        x.rqPsn = peerPsn;
        x.maxDestRdAtomic = cfg.maxDestRdAtomic;
        x.minRnrTimer = cfg.minRnrTimer;
        x.isGlobal = 1;
        x.hopLimit = 1;
        x.ahPortNum = 1;
        System.arraycopy(Inet4.mappedGid(peerIp), 0, x.dgid, 0, 16);
        assertThat(n.modifyQp(
                        qp,
                        Ibv.QP_STATE
                                | Ibv.QP_AV
                                | Ibv.QP_PATH_MTU
                                | Ibv.QP_DEST_QPN
                                | Ibv.QP_RQ_PSN
                                | Ibv.QP_MAX_DEST_RD_ATOMIC
                                | Ibv.QP_MIN_RNR_TIMER,
                        x))
                .isZero();
        x = new QpAttrs();
        x.qpState = Ibv.QPS_RTS;
        x.timeout = cfg.timeout;
        x.retryCnt = cfg.retryCnt;
        x.rnrRetry = cfg.rnrRetry;
        x.sqPsn = myPsn;
        x.maxRdAtomic = cfg.maxRdAtomic;
        assertThat(n.modifyQp(
                        qp,
                        Ibv.QP_STATE
                                | Ibv.QP_TIMEOUT
                                | Ibv.QP_RETRY_CNT
                                | Ibv.QP_RNR_RETRY
                                | Ibv.QP_SQ_PSN
                                | Ibv.QP_MAX_QP_RD_ATOMIC,
                        x))
                .isZero();
    }

    Qp engineQpA(int i) {
        return a.engine.qpByQpn(qpA[i].qpn());
    }

    Qp engineQpB(int i) {
        return b.engine.qpByQpn(qpB[i].qpn());
    }

    long localAddr(long off) {
        return local.address() + off;
    }

    long remoteAddr(long off) {
        return remote.address() + off;
    }

    /** Posts a send-queue WQE with the RDMA fields; false when the SQ is full. */
    boolean postSend(
            int qp,
            long wrId,
            int opcode,
            int flags,
            int imm,
            long[] addrs,
            int[] lens,
            int lkey,
            int rkey,
            long remoteAddr,
            long compareAdd,
            long swap) {
        RingFlyweight ring = qpA[qp].sq();
        int prod = ring.producerAcquire();
        if (prod - ring.consumerAcquire() >= ring.slotCount()) {
            return false;
        }
        long slot = ring.slotOffset(prod);
        wqe.wrap(ring.segment(), slot);
        wqe.wrId(wrId).opcode(opcode).sendFlags(flags).immData(imm).numSge(addrs.length);
        int total = 0;
        for (int i = 0; i < addrs.length; i++) {
            wqe.sge(i, addrs[i], lens[i], lkey);
            total += lens[i];
        }
        wqe.length(total);
        MemorySegment s = ring.segment();
        s.set(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY, rkey);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR, remoteAddr);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_COMPARE_ADD, compareAdd);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_SWAP, swap);
        ring.producerRelease(prod + 1);
        a.ringDoorbell(ring, qpA[qp].qpn());
        return true;
    }

    /** Posts an inline WQE of {@code data}. */
    boolean postInline(int qp, long wrId, int opcode, int flags, int imm, byte[] data, int rkey, long remoteAddr) {
        RingFlyweight ring = qpA[qp].sq();
        int prod = ring.producerAcquire();
        if (prod - ring.consumerAcquire() >= ring.slotCount()) {
            return false;
        }
        long slot = ring.slotOffset(prod);
        wqe.wrap(ring.segment(), slot);
        wqe.wrId(wrId)
                .opcode(opcode)
                .sendFlags(flags | Ibv.SEND_INLINE)
                .immData(imm)
                .numSge(0)
                .length(data.length);
        MemorySegment.copy(MemorySegment.ofArray(data), 0, ring.segment(), wqe.inlineDataOffset(), data.length);
        MemorySegment s = ring.segment();
        s.set(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY, rkey);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR, remoteAddr);
        ring.producerRelease(prod + 1);
        a.ringDoorbell(ring, qpA[qp].qpn());
        return true;
    }

    /** Posts a receive on B's QP {@code qp} (one SGE in {@link #recvBuf}). */
    boolean postRecv(int qp, long wrId, long off, int len) {
        boolean posted =
                b.post(qpB[qp].rq(), wrId, 0, 0, 0, new long[] {recvBuf.address() + off}, new int[] {len}, recvMr[1]);
        b.ringDoorbell(qpB[qp].rq(), qpB[qp].qpn());
        return posted;
    }

    void step(long ns) {
        clock.addAndGet(ns);
        a.pump();
        b.pump();
        sendCqes.addAll(a.poll(cqA.ring()));
        recvCqes.addAll(b.poll(cqB.ring()));
    }

    /** Steps (20 us each) until {@code sends} send and {@code recvs} receive completions came. */
    void runUntil(int sends, int recvs, int maxSteps) {
        for (int i = 0; i < maxSteps && (sendCqes.size() < sends || recvCqes.size() < recvs); i++) {
            step(20_000);
        }
    }

    /** Steps {@code n} times without a goal (to let stray packets and timers play out). */
    void idle(int n, long stepNs) {
        for (int i = 0; i < n; i++) {
            step(stepNs);
        }
    }

    static byte[] pattern(long seed, int len) {
        byte[] b = new byte[len];
        new java.util.Random(seed).nextBytes(b);
        return b;
    }

    static void assertCanary(MemorySegment m, long from, long to, String what) {
        for (long k = from; k < to; k++) {
            if (m.get(ValueLayout.JAVA_BYTE, k) != CANARY) {
                throw new AssertionError(what + ": byte " + k + " overwritten");
            }
        }
    }

    static byte[] bytes(MemorySegment m, long off, int len) {
        return m.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
    }

    @Override
    public void close() {
        a.close();
        b.close();
        arena.close();
    }
}
