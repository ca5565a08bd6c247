package io.metaroce.nic.transport;

import static io.metaroce.abi.AbiConstants.NO_HANDLE;

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
import java.util.zip.CRC32C;

/**
 * The receive-path fuzzers' rig: two daemons A and B over a deterministic {@link MemoryLink}, each
 * port behind a {@link TapPort}; an RC QP pair A -> B (8 paths, MTU 1024) and a UD QP on each side.
 * Every registered region sits between two unregistered 4 KiB guards; all of it starts as a canary
 * byte, and {@link #guardsIntact} says whether anything outside a region changed.
 *
 * <p>{@link #captureSeeds} runs real traffic of every opcode (SEND first/middle/last/only, with
 * IMM, WRITE and WRITE_IMM, READ request and responses, both atomics and their responses, ACKs with
 * SACK bitmaps and path reports, UD sends) and keeps each frame as the engine built it, plus a
 * NAK of each syndrome and a probe built with {@link Wire#header}: the seeds the fuzzers mutate.
 */
final class FrameFuzzRig implements AutoCloseable {
    static final int IP_A = Inet4.parse("198.18.0.1");
    static final int IP_B = Inet4.parse("198.18.0.2");
    static final int UDP = 4793;
    static final int QKEY = 0x11111111;
    static final byte CANARY = (byte) 0x5a;
    static final long GUARD = 4096;

    /** A seed frame and the side it is delivered to (A: responses, ACKs, NAKs; B: requests). */
    record Seed(String name, byte[] bytes, boolean toA) {}

    /** A registered region with its guards: [guard | region | guard] in one allocation. */
    record Region(String name, MemorySegment whole, MemorySegment inner) {}

    final AtomicLong clock = new AtomicLong(1_000_000_000L);
    final MemoryLink link;
    final TapPort tapA;
    final TapPort tapB;
    final TestNode a;
    final TestNode b;
    final Arena arena = Arena.ofShared();
    final List<Region> regions = new ArrayList<>();
    private final MemorySegment canaryGuard;
    final Region local;
    final Region remote;
    final Region recv;
    final Region udA;
    final Region udB;
    final int[] localMr;
    final int[] remoteMr;
    final int[] recvMr;
    final int[] udMrA;
    final int[] udMrB;
    final TestNode.CqHandles cqA;
    final TestNode.CqHandles cqB;
    final TestNode.QpHandles qpA;
    final TestNode.QpHandles qpB;
    final TestNode.QpHandles udQpA;
    final TestNode.QpHandles udQpB;
    final List<Seed> seeds = new ArrayList<>();
    private final WqeFlyweight wqe = new WqeFlyweight();
    private int recvPosted;
    private int udRecvPosted;

    FrameFuzzRig() throws Exception {
        link = new MemoryLink(7, 0.0, 0.0, 10_000, 30_000, clock::get);
        MemoryLink.End ea = link.end(IP_A, UDP);
        MemoryLink.End eb = link.end(IP_B, UDP);
        link.connect(ea, eb);
        tapA = new TapPort(ea);
        tapB = new TapPort(eb);
        a = new TestNode(tapA, UDP, clock::get);
        b = new TestNode(tapB, UDP, clock::get);
        a.hello();
        b.hello();
        int pdA = a.allocPd();
        int pdB = b.allocPd();
        canaryGuard = arena.allocate(GUARD);
        canaryGuard.fill(CANARY);
        local = region("A local", 64 << 10);
        remote = region("B remote", 64 << 10);
        recv = region("B recv", 32 << 10);
        udA = region("A ud", 16 << 10);
        udB = region("B ud", 16 << 10);
        localMr = a.regMr(pdA, local.inner, Ibv.ACCESS_LOCAL_WRITE);
        remoteMr = b.regMr(
                pdB,
                remote.inner,
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC);
        recvMr = b.regMr(pdB, recv.inner, Ibv.ACCESS_LOCAL_WRITE);
        udMrA = a.regMr(pdA, udA.inner, Ibv.ACCESS_LOCAL_WRITE);
        udMrB = b.regMr(pdB, udB.inner, Ibv.ACCESS_LOCAL_WRITE);
        cqA = a.createCq(4096, NO_HANDLE);
        cqB = b.createCq(4096, NO_HANDLE);
        qpA = a.createQp(pdA, cqA.handle(), cqA.handle(), 64, 4, 64);
        qpB = b.createQp(pdB, cqB.handle(), cqB.handle(), 64, 4, 64);
        udQpA = a.createQp(pdA, cqA.handle(), cqA.handle(), NO_HANDLE, Ibv.QPT_UD, 16, 2, 64);
        udQpB = b.createQp(pdB, cqB.handle(), cqB.handle(), NO_HANDLE, Ibv.QPT_UD, 16, 2, 64);
        connect(a, qpA.handle(), IP_B, qpB.qpn(), 0x123456, 0xfffff0);
        connect(b, qpB.handle(), IP_A, qpA.qpn(), 0xfffff0, 0x123456);
        UdTransportTest.toRts(a, udQpA.handle(), QKEY);
        UdTransportTest.toRts(b, udQpB.handle(), QKEY);
        topUpReceives();
    }

    private Region region(String name, long bytes) {
        MemorySegment whole = arena.allocate(bytes + 2 * GUARD, 4096);
        whole.fill(CANARY);
        Region r = new Region(name, whole, whole.asSlice(GUARD, bytes));
        regions.add(r);
        return r;
    }

    private static void connect(TestNode n, int qp, int peerIp, int peerQpn, int myPsn, int peerPsn) {
        QpAttrs x = new QpAttrs();
        x.qpState = Ibv.QPS_INIT;
        x.portNum = 1;
        x.qpAccessFlags =
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC;
        check(n.modifyQp(qp, Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, x));
        x = new QpAttrs();
        x.qpState = Ibv.QPS_RTR;
        x.pathMtu = Ibv.MTU_1024;
        x.destQpNum = peerQpn;
        x.rqPsn = peerPsn;
        x.maxDestRdAtomic = 16;
        x.minRnrTimer = 1;
        x.isGlobal = 1;
        x.hopLimit = 1;
        x.ahPortNum = 1;
        System.arraycopy(Inet4.mappedGid(peerIp), 0, x.dgid, 0, 16);
        check(n.modifyQp(
                qp,
                Ibv.QP_STATE
                        | Ibv.QP_AV
                        | Ibv.QP_PATH_MTU
                        | Ibv.QP_DEST_QPN
                        | Ibv.QP_RQ_PSN
                        | Ibv.QP_MAX_DEST_RD_ATOMIC
                        | Ibv.QP_MIN_RNR_TIMER,
                x));
        x = new QpAttrs();
        x.qpState = Ibv.QPS_RTS;
        x.timeout = 14;
        x.retryCnt = 7;
        x.rnrRetry = 7;
        x.sqPsn = myPsn;
        x.maxRdAtomic = 16;
        check(n.modifyQp(
                qp,
                Ibv.QP_STATE
                        | Ibv.QP_TIMEOUT
                        | Ibv.QP_RETRY_CNT
                        | Ibv.QP_RNR_RETRY
                        | Ibv.QP_SQ_PSN
                        | Ibv.QP_MAX_QP_RD_ATOMIC,
                x));
    }

    private static void check(int status) {
        if (status != 0) {
            throw new IllegalStateException("modify_qp: errno " + status);
        }
    }

    /** Keeps B's RC receive queue and both UD receive queues full (reposting what completed). */
    void topUpReceives() {
        RingFlyweight rq = qpB.rq();
        while (rq.producerAcquire() - rq.consumerAcquire() < rq.slotCount()) {
            int slot = recvPosted++ & 7;
            b.post(
                    rq,
                    1000 + slot,
                    0,
                    0,
                    0,
                    new long[] {recv.inner.address() + 4096L * slot},
                    new int[] {4096},
                    recvMr[1]);
        }
        topUpUd(a, udQpA, udA, udMrA);
        topUpUd(b, udQpB, udB, udMrB);
    }

    private void topUpUd(TestNode n, TestNode.QpHandles qp, Region r, int[] mr) {
        RingFlyweight rq = qp.rq();
        while (rq.producerAcquire() - rq.consumerAcquire() < rq.slotCount()) {
            int slot = udRecvPosted++ & 3;
            n.post(rq, 2000 + slot, 0, 0, 0, new long[] {r.inner.address() + 4096L * slot}, new int[] {4096}, mr[1]);
        }
    }

    /** Advances the clock by {@code ns}, runs both engines and drains both CQs. */
    void step(long ns) {
        clock.addAndGet(ns);
        a.pump();
        b.pump();
        a.poll(cqA.ring());
        b.poll(cqB.ring());
    }

    Qp rcA() {
        return a.engine.qpByQpn(qpA.qpn());
    }

    Qp rcB() {
        return b.engine.qpByQpn(qpB.qpn());
    }

    /** Whether both RC QPs are still in RTS (a fuzzed NAK or a fatal error moves them to ERR). */
    boolean healthy() {
        Qp x = rcA();
        Qp y = rcB();
        return x != null && y != null && x.state == Ibv.QPS_RTS && y.state == Ibv.QPS_RTS;
    }

    /**
     * Takes both RC QPs through RESET back to RTS with their first PSNs (what a fuzzed fatal NAK or
     * error ended): QPNs, keys and addresses stay, so the seeds still address them.
     */
    void reconnect() {
        QpAttrs reset = new QpAttrs();
        reset.qpState = Ibv.QPS_RESET;
        check(a.modifyQp(qpA.handle(), Ibv.QP_STATE, reset));
        check(b.modifyQp(qpB.handle(), Ibv.QP_STATE, reset));
        connect(a, qpA.handle(), IP_B, qpB.qpn(), 0x123456, 0xfffff0);
        connect(b, qpB.handle(), IP_A, qpA.qpn(), 0xfffff0, 0x123456);
        topUpReceives();
    }

    /** The name of the first region whose guards changed, or null when every guard is intact. */
    String guardsIntact() {
        for (Region r : regions) {
            long size = r.whole.byteSize();
            if (r.whole.asSlice(0, GUARD).mismatch(canaryGuard) != -1
                    || r.whole.asSlice(size - GUARD, GUARD).mismatch(canaryGuard) != -1) {
                return r.name;
            }
        }
        return null;
    }

    /** Delivers {@code frame} to A or B from the other side's address, then runs both engines. */
    void deliver(byte[] frame, boolean toA, int ecn, long advanceNs, int steps) {
        TapPort to = toA ? tapA : tapB;
        to.inject(frame, toA ? IP_B : IP_A, UDP, ecn);
        clock.addAndGet(advanceNs);
        (toA ? a : b).pump();
        for (int i = 0; i < steps; i++) {
            step(10_000);
        }
        topUpReceives();
    }

    private long wrIds;

    /** Posts one request on A's RC QP: 0 SEND, 1 WRITE, 2 READ, 3 fetch-and-add (when it has room). */
    void postWork(int kind) {
        RingFlyweight sq = qpA.sq();
        if (sq.producerAcquire() - sq.consumerAcquire() >= sq.slotCount()) {
            return;
        }
        long base = local.inner.address();
        long rbase = remote.inner.address();
        int lkey = localMr[1];
        int rkey = remoteMr[2];
        long id = ++wrIds;
        switch (kind) {
            case 0 -> post(sq, id, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, base, 2048, lkey, 0, 0, 0, 0);
            case 1 -> post(sq, id, Ibv.WR_RDMA_WRITE, Ibv.SEND_SIGNALED, 0, base, 2048, lkey, rkey, rbase, 0, 0);
            case 2 ->
                post(
                        sq,
                        id,
                        Ibv.WR_RDMA_READ,
                        Ibv.SEND_SIGNALED,
                        0,
                        base + 16384,
                        2048,
                        lkey,
                        rkey,
                        rbase + 1024,
                        0,
                        0);
            default ->
                post(
                        sq,
                        id,
                        Ibv.WR_ATOMIC_FETCH_AND_ADD,
                        Ibv.SEND_SIGNALED,
                        0,
                        base + 20488,
                        8,
                        lkey,
                        rkey,
                        rbase + 12296,
                        1,
                        0);
        }
    }

    /** Runs real traffic of every opcode and keeps the frames as seeds. */
    void captureSeeds() {
        tapA.recording = true;
        tapB.recording = true;
        long base = local.inner.address();
        long rbase = remote.inner.address();
        byte[] data = new byte[4096];
        new java.util.Random(3).nextBytes(data);
        MemorySegment.copy(MemorySegment.ofArray(data), 0, local.inner, 0, data.length);
        int lkey = localMr[1];
        int rkey = remoteMr[2];
        // SEND of 4 packets (first, middle, middle, last), SEND_IMM of one (only)
        post(qpA.sq(), 1, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, base, 4096, lkey, 0, 0, 0, 0);
        post(
                qpA.sq(),
                2,
                Ibv.WR_SEND_WITH_IMM,
                Ibv.SEND_SIGNALED | Ibv.SEND_SOLICITED,
                0x1234,
                base,
                100,
                lkey,
                0,
                0,
                0,
                0);
        post(qpA.sq(), 3, Ibv.WR_RDMA_WRITE, Ibv.SEND_SIGNALED, 0, base, 2048, lkey, rkey, rbase + 1024, 0, 0);
        post(
                qpA.sq(),
                4,
                Ibv.WR_RDMA_WRITE_WITH_IMM,
                Ibv.SEND_SIGNALED,
                0x55,
                base,
                64,
                lkey,
                rkey,
                rbase + 8192,
                0,
                0);
        post(qpA.sq(), 5, Ibv.WR_RDMA_READ, Ibv.SEND_SIGNALED, 0, base + 16384, 2048, lkey, rkey, rbase + 1024, 0, 0);
        post(
                qpA.sq(),
                6,
                Ibv.WR_ATOMIC_CMP_AND_SWP,
                Ibv.SEND_SIGNALED,
                0,
                base + 20480,
                8,
                lkey,
                rkey,
                rbase + 12288,
                0xa5a5a5a5a5a5a5a5L,
                42);
        post(
                qpA.sq(),
                7,
                Ibv.WR_ATOMIC_FETCH_AND_ADD,
                Ibv.SEND_SIGNALED,
                0,
                base + 20488,
                8,
                lkey,
                rkey,
                rbase + 12296,
                7,
                0);
        UdTransportTest.postUd(
                udQpA.sq(),
                8,
                Ibv.WR_SEND,
                Ibv.SEND_SIGNALED,
                0,
                udA.inner.address(),
                256,
                udMrA[1],
                IP_B,
                udQpB.qpn(),
                QKEY);
        UdTransportTest.postUd(
                udQpB.sq(),
                9,
                Ibv.WR_SEND_WITH_IMM,
                Ibv.SEND_SIGNALED,
                77,
                udB.inner.address(),
                32,
                udMrB[1],
                IP_A,
                udQpA.qpn(),
                QKEY);
        for (int i = 0; i < 400; i++) {
            step(20_000);
        }
        tapA.recording = false;
        tapB.recording = false;
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (TapPort.Sent s : tapA.sent) {
            addSeed(s.bytes(), false, seen);
        }
        for (TapPort.Sent s : tapB.sent) {
            addSeed(s.bytes(), true, seen);
        }
        // NAKs are rare in clean traffic: build them with the encoder, one per syndrome
        int[] syndromes = {
            Wire.NAK_RNR,
            Wire.NAK_INVALID_REQUEST,
            Wire.NAK_REMOTE_OPERATIONAL,
            Wire.NAK_SEQUENCE_ERROR,
            Wire.NAK_REMOTE_ACCESS
        };
        Qp x = rcB();
        for (int syndrome : syndromes) {
            byte[] f = new byte[Wire.HEADER_SIZE];
            MemorySegment m = MemorySegment.ofArray(f);
            Wire.header(m, Wire.OP_NAK, 0, 0, 0, 2, qpA.qpn(), qpB.qpn(), x.txToken, 0, 1, 0, syndrome, 0, 0);
            seal(f);
            seeds.add(new Seed("NAK " + syndrome, f, true));
        }
        // a tail-loss probe on path 1, as the requester builds one
        byte[] probe = new byte[Wire.HEADER_SIZE];
        Wire.header(
                MemorySegment.ofArray(probe),
                Wire.OP_PROBE,
                Wire.FLAG_ACK_NOW,
                1,
                3,
                0,
                qpB.qpn(),
                qpA.qpn(),
                rcA().txToken,
                0,
                0,
                0,
                0,
                0x1234,
                0);
        seal(probe);
        seeds.add(new Seed("PROBE", probe, false));
        tapA.sent.clear();
        tapB.sent.clear();
    }

    private void addSeed(byte[] f, boolean toA, java.util.Set<String> seen) {
        if (f.length < Wire.HEADER_SIZE) {
            return;
        }
        MemorySegment m = MemorySegment.ofArray(f);
        int op = Wire.u8(m, Wire.OFF_OPCODE);
        int flags = Wire.u8(m, Wire.OFF_FLAGS);
        int off = Wire.u32(m, Wire.OFF_OFFSET);
        int len = Wire.u32(m, Wire.OFF_MSG_LEN);
        String pos = op == Wire.OP_SEND
                ? (off == 0
                        ? (f.length - Wire.HEADER_SIZE >= len ? "only" : "first")
                        : (off + f.length - Wire.HEADER_SIZE >= len ? "last" : "middle"))
                : "";
        // one seed per opcode, flags and (for SEND) position; ACKs also per report count
        String key = op + "/" + flags + "/" + pos + (op == Wire.OP_ACK ? "/" + f.length : "");
        if (seen.add(key)) {
            seeds.add(new Seed("op " + op + " flags " + flags + " " + pos + " len " + f.length, f, toA));
        }
    }

    /** Posts one RC send-queue WQE of one SGE with its RDMA fields. */
    private void post(
            RingFlyweight ring,
            long wrId,
            int opcode,
            int flags,
            int imm,
            long addr,
            int len,
            int lkey,
            int rkey,
            long remoteAddr,
            long compareAdd,
            long swap) {
        int prod = ring.producerAcquire();
        long slot = ring.slotOffset(prod);
        wqe.wrap(ring.segment(), slot);
        wqe.wrId(wrId).opcode(opcode).sendFlags(flags).immData(imm).numSge(1).length(len);
        wqe.sge(0, addr, len, lkey);
        MemorySegment s = ring.segment();
        s.set(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY, rkey);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR, remoteAddr);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_COMPARE_ADD, compareAdd);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_SWAP, swap);
        ring.producerRelease(prod + 1);
    }

    static void seal(byte[] f) {
        MemorySegment m = MemorySegment.ofArray(f);
        Wire.seal(new CRC32C(), m, java.nio.ByteBuffer.wrap(f), f.length);
    }

    @Override
    public void close() {
        a.close();
        b.close();
        arena.close();
    }
}
