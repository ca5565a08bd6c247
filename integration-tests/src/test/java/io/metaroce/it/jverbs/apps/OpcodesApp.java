package io.metaroce.it.jverbs.apps;

import static io.metaroce.it.jverbs.apps.Checks.expect;
import static io.metaroce.it.jverbs.apps.Checks.require;

import io.metaroce.verbs.Access;
import io.metaroce.verbs.AddressHandle;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.SharedReceiveQueue;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.WorkCompletionException;
import io.metaroce.verbs.WorkCompletions;
import io.metaroce.verbs.cm.ConnectOptions;
import io.metaroce.verbs.cm.QpEndpoint;
import io.metaroce.verbs.cm.RcConnector;
import io.metaroce.verbs.cm.SideChannel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Every opcode between two hosts, with data checks on both sides, plus UD with an address handle
 * and (in {@code srq} mode, one process) a shared receive queue. PASS/FAIL lines and
 * "N passed, M failed"; exit 0 iff none failed.
 *
 * <p>Server memory (REMOTE_WRITE | READ | ATOMIC): [0, 4096) written by the client, [4096, 5096)
 * written with an immediate, [8192, 12288) a pattern the client reads, the u64 at 16384 (100,
 * compare-and-swapped) and at 16392 (5, fetch-and-added).
 *
 * <p>args: {@code server PORT}, {@code client HOST PORT}, or {@code srq}
 */
public final class OpcodesApp {

    static final int QKEY = 0x11111111;
    static final int IMM = 0x1234;
    static final int UD_PAYLOAD = 256;
    static final int GRH = 40;
    static final int MSG = QpEndpoint.WIRE_SIZE + 44;

    private OpcodesApp() {}

    static byte a(int j) {
        return (byte) (j * 13 + 1);
    }

    static byte b(int j) {
        return (byte) (j * 17 + 3);
    }

    static byte s(int j) {
        return (byte) (j * 29 + 5);
    }

    public static void main(String[] args) throws Exception {
        Checks c = new Checks();
        switch (args[0]) {
            case "server" -> server(c, Integer.parseInt(args[1]));
            case "client" -> client(c, args[1], Integer.parseInt(args[2]));
            case "srq" -> srq(c);
            default -> throw new IllegalArgumentException(args[0]);
        }
        System.exit(c.finish());
    }

    private static byte[] message(QpEndpoint e, MemoryRegion mr, int udQpn) {
        byte[] m = Arrays.copyOf(e.toWire(), MSG);
        byte[] x =
                String.format("%016x:%08x:%08x", mr.address(), mr.rkey(), udQpn).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(x, 0, m, QpEndpoint.WIRE_SIZE, x.length);
        return m;
    }

    private static long[] extra(byte[] m) {
        String[] f = new String(m, QpEndpoint.WIRE_SIZE, 34, StandardCharsets.US_ASCII)
                .trim()
                .split(":");
        return new long[] {Long.parseUnsignedLong(f[0], 16), Long.parseLong(f[1], 16), Long.parseLong(f[2], 16)};
    }

    /** A UD QP in RTS, or null (with a FAIL line) when the provider cannot make one. */
    private static QueuePair udQueuePair(Checks c, ProtectionDomain pd, CompletionQueue cq) {
        QueuePair[] out = new QueuePair[1];
        c.check("udQueuePairCreated", () -> {
            QueuePair ud = pd.createQueuePair(QueuePair.ud(cq, cq).maxRecvWr(4));
            try {
                ud.toInitUd(1, QKEY);
                ud.toRtrUd();
                ud.toRtsUd(0);
            } catch (RuntimeException e) {
                ud.close();
                throw e;
            }
            out[0] = ud;
        });
        return out[0];
    }

    static WorkCompletion await(CompletionQueue cq, WorkCompletions wcs) {
        return LoopbackPair.awaitOne(cq, wcs);
    }

    private static void server(Checks c, int port) throws Exception {
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate(32768, 4096);
            MemorySegment udBuf = arena.allocate(GRH + UD_PAYLOAD, 64);
            for (int j = 0; j < 4096; j++) {
                buf.set(ValueLayout.JAVA_BYTE, 8192 + j, s(j));
            }
            buf.set(ValueLayout.JAVA_LONG, 16384, 100L);
            buf.set(ValueLayout.JAVA_LONG, 16392, 5L);
            try (MemoryRegion mr = pd.register(buf, Access.ALL);
                    MemoryRegion udMr = pd.register(udBuf, Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(32);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq).maxRecvWr(8));
                    QueuePair ud = udQueuePair(c, pd, cq);
                    RecvWorkRequest recv = new RecvWorkRequest(1);
                    RecvWorkRequest udRecv = new RecvWorkRequest(1).wrId(100).sge(udMr, 0, GRH + UD_PAYLOAD);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                qp.toInit(1, Access.ALL);
                if (ud != null) {
                    ud.postRecv(udRecv);
                }
                for (int i = 0; i < 4; i++) {
                    qp.postRecv(recv.wrId(i).sge(mr, 20000 + 64L * i, 64));
                }
                ConnectOptions opts = ConnectOptions.defaults(0);
                QpEndpoint local = RcConnector.localEndpoint(qp, opts);
                byte[] theirs = SideChannel.server(port, MSG, m -> {
                    RcConnector.connect(qp, opts, QpEndpoint.fromWire(Arrays.copyOf(m, QpEndpoint.WIRE_SIZE)));
                    return message(local, mr, ud == null ? 0 : ud.qpNum());
                });
                int clientUdQpn = (int) extra(theirs)[2];
                boolean done = false;
                boolean sawImm = false;
                boolean sawUd = ud == null || clientUdQpn == 0;
                while (!done || !sawUd) {
                    WorkCompletion wc = await(cq, wcs).check();
                    if (wc.opcode() == WorkCompletion.OP_RECV_RDMA_WITH_IMM) {
                        sawImm = true;
                        int imm = wc.immData();
                        c.check(
                                "rdmaWriteWithImmCompletesAReceiveWithTheImmediate",
                                () -> require(imm == IMM && wc.hasImm(), "imm " + imm));
                    } else if (wc.wrId() == 100) {
                        sawUd = true;
                        int src = wc.srcQp();
                        int len = wc.byteLength();
                        c.check("udReceiveCarriesThePayloadAndTheSender", () -> {
                            require(src == clientUdQpn, "src_qp " + src + " want " + clientUdQpn);
                            require(len == GRH + UD_PAYLOAD, "byte_len " + len + " (GRH 40 + " + UD_PAYLOAD + ")");
                            for (int j = 0; j < UD_PAYLOAD; j++) {
                                require(udBuf.get(ValueLayout.JAVA_BYTE, GRH + j) == b(j), "UD byte " + j);
                            }
                        });
                    } else if (wc.opcode() == WorkCompletion.OP_RECV) {
                        done = true;
                    }
                }
                boolean imm = sawImm;
                c.check("writeWithImmArrived", () -> require(imm, "no RECV_RDMA_WITH_IMM before the final SEND"));
                c.check("rdmaWriteLandedAtTheServer", () -> {
                    for (int j = 0; j < 4096; j++) {
                        require(buf.get(ValueLayout.JAVA_BYTE, j) == a(j), "byte " + j);
                    }
                });
                c.check("rdmaWriteWithImmLandedAtTheServer", () -> {
                    for (int j = 0; j < 1000; j++) {
                        require(buf.get(ValueLayout.JAVA_BYTE, 4096 + j) == b(j), "byte " + j);
                    }
                });
                c.check("atomicsLeftTheirValues", () -> {
                    long cas = buf.get(ValueLayout.JAVA_LONG, 16384);
                    long add = buf.get(ValueLayout.JAVA_LONG, 16392);
                    require(cas == 200 && add == 13, "cas word " + cas + " (want 200), add word " + add + " (want 13)");
                });
            }
        }
    }

    private static void client(Checks c, String host, int port) throws Exception {
        try (Arena arena = Arena.ofShared();
                Context ctx = Device.open("mrce0");
                ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            MemorySegment buf = arena.allocate(32768, 4096);
            try (MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    CompletionQueue cq = ctx.createCompletionQueue(32);
                    QueuePair qp = pd.createQueuePair(QueuePair.rc(cq, cq).maxRecvWr(2));
                    QueuePair ud = udQueuePair(c, pd, cq);
                    SendWorkRequest wr = new SendWorkRequest(1).signaled(true);
                    WorkCompletions wcs = new WorkCompletions(4)) {
                qp.toInit(1, Access.ALL);
                ConnectOptions opts = ConnectOptions.defaults(0);
                QpEndpoint local = RcConnector.localEndpoint(qp, opts);
                byte[] theirs = SideChannel.client(host, port, message(local, mr, ud == null ? 0 : ud.qpNum()), 30_000);
                QpEndpoint remote = QpEndpoint.fromWire(Arrays.copyOf(theirs, QpEndpoint.WIRE_SIZE));
                RcConnector.connect(qp, opts, remote);
                long[] x = extra(theirs);
                long raddr = x[0];
                int rkey = (int) x[1];
                int serverUdQpn = (int) x[2];
                for (int j = 0; j < 4096; j++) {
                    buf.set(ValueLayout.JAVA_BYTE, j, a(j));
                }
                for (int j = 0; j < 1000; j++) {
                    buf.set(ValueLayout.JAVA_BYTE, 4096 + j, b(j));
                }
                c.check("rdmaWriteThenReadBack", () -> {
                    qp.postSend(wr.wrId(1).rdmaWrite(raddr, rkey).sge(mr, 0, 4096));
                    require(await(cq, wcs).check().opcode() == WorkCompletion.OP_RDMA_WRITE, "opcode");
                    qp.postSend(wr.wrId(2).rdmaRead(raddr, rkey).sge(mr, 24576, 4096));
                    WorkCompletion wc = await(cq, wcs).check();
                    require(wc.opcode() == WorkCompletion.OP_RDMA_READ, "opcode " + wc.opcode());
                    for (int j = 0; j < 4096; j++) {
                        require(buf.get(ValueLayout.JAVA_BYTE, 24576 + j) == a(j), "read-back byte " + j);
                    }
                });
                c.check("rdmaWriteWithImm", () -> {
                    qp.postSend(
                            wr.wrId(3).rdmaWriteWithImm(raddr + 4096, rkey, IMM).sge(mr, 4096, 1000));
                    await(cq, wcs).check();
                });
                c.check("rdmaReadOfTheServersPattern", () -> {
                    qp.postSend(wr.wrId(4).rdmaRead(raddr + 8192, rkey).sge(mr, 8192, 4096));
                    await(cq, wcs).check();
                    for (int j = 0; j < 4096; j++) {
                        require(buf.get(ValueLayout.JAVA_BYTE, 8192 + j) == s(j), "byte " + j);
                    }
                });
                c.check("compareAndSwap", () -> {
                    qp.postSend(wr.wrId(5)
                            .compareAndSwap(raddr + 16384, rkey, 100, 200)
                            .sge(mr, 16384, 8));
                    WorkCompletion wc = await(cq, wcs).check();
                    require(wc.opcode() == WorkCompletion.OP_COMP_SWAP, "opcode " + wc.opcode());
                    require(buf.get(ValueLayout.JAVA_LONG, 16384) == 100, "first CAS returns the old 100");
                    qp.postSend(wr.wrId(6)
                            .compareAndSwap(raddr + 16384, rkey, 100, 300)
                            .sge(mr, 16384, 8));
                    await(cq, wcs).check();
                    require(buf.get(ValueLayout.JAVA_LONG, 16384) == 200, "second CAS fails and returns 200");
                });
                c.check("fetchAndAdd", () -> {
                    qp.postSend(wr.wrId(7).fetchAndAdd(raddr + 16392, rkey, 7).sge(mr, 16392, 8));
                    WorkCompletion wc = await(cq, wcs).check();
                    require(wc.opcode() == WorkCompletion.OP_FETCH_ADD, "opcode " + wc.opcode());
                    require(buf.get(ValueLayout.JAVA_LONG, 16392) == 5, "returns the old 5");
                    qp.postSend(wr.wrId(8).fetchAndAdd(raddr + 16392, rkey, 1).sge(mr, 16392, 8));
                    await(cq, wcs).check();
                    require(buf.get(ValueLayout.JAVA_LONG, 16392) == 12, "returns 12");
                });
                c.check("udSendThroughAnAddressHandle", () -> {
                    require(ud != null && serverUdQpn != 0, "no UD queue pair on one side (see udQueuePairCreated)");
                    for (int j = 0; j < UD_PAYLOAD; j++) {
                        buf.set(ValueLayout.JAVA_BYTE, 12288 + j, b(j));
                    }
                    try (AddressHandle ah =
                                    pd.createAddressHandle(AddressHandle.Attributes.global(remote.gid(), 0, 1));
                            SendWorkRequest u = new SendWorkRequest(1)
                                    .wrId(9)
                                    .send()
                                    .signaled(true)
                                    .sge(mr, 12288, UD_PAYLOAD)
                                    .ud(ah, serverUdQpn, QKEY)) {
                        ud.postSend(u);
                        await(cq, wcs).check();
                    }
                });
                c.check("finalSend", () -> {
                    qp.postSend(wr.wrId(10).send().sge(mr, 0, 8));
                    await(cq, wcs).check();
                });
                c.check("badRkeyIsARemoteAccessError", () -> {
                    qp.postSend(wr.wrId(11).rdmaWrite(raddr, rkey ^ 0x00ff_ff00).sge(mr, 0, 64));
                    WorkCompletion wc = await(cq, wcs);
                    WorkCompletionException e = expect(WorkCompletionException.class, wc::check);
                    require(
                            e.status() == WorkCompletion.REM_ACCESS_ERR && e.wrId() == 11,
                            "status " + WorkCompletion.statusName(e.status()));
                });
            }
        }
    }

    /** A shared receive queue feeding an RC QP of a loopback pair: 200 sends, each checked. */
    private static void srq(Checks c) throws Exception {
        c.check("sharedReceiveQueueFeedsAQueuePair", () -> {
            try (Arena arena = Arena.ofShared();
                    Context ctx = Device.open("mrce0");
                    ProtectionDomain pd = ctx.allocateProtectionDomain();
                    SharedReceiveQueue srq = pd.createSharedReceiveQueue(64, 1, 0);
                    CompletionQueue cqA = ctx.createCompletionQueue(64);
                    CompletionQueue cqB = ctx.createCompletionQueue(64);
                    QueuePair qa = pd.createQueuePair(QueuePair.rc(cqA, cqA));
                    QueuePair qb = pd.createQueuePair(QueuePair.rc(cqB, cqB).srq(srq));
                    WorkCompletions wcs = new WorkCompletions(4)) {
                MemorySegment buf = arena.allocate(64 * 128 + 4096, 4096);
                try (MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                        RecvWorkRequest r = new RecvWorkRequest(1);
                        SendWorkRequest w = new SendWorkRequest(1).send().signaled(true)) {
                    require(
                            srq.query().maxWr() >= 64,
                            "srq max_wr " + srq.query().maxWr());
                    for (int i = 0; i < 32; i++) {
                        srq.postRecv(r.wrId(i).sge(mr, 128L * i, 128));
                    }
                    ConnectOptions oa = ConnectOptions.defaults(0);
                    ConnectOptions ob = ConnectOptions.defaults(0);
                    qa.toInit(1, 0);
                    qb.toInit(1, 0);
                    QpEndpoint ea = RcConnector.localEndpoint(qa, oa);
                    QpEndpoint eb = RcConnector.localEndpoint(qb, ob);
                    RcConnector.connect(qa, oa, eb);
                    RcConnector.connect(qb, ob, ea);
                    long src = 64 * 128;
                    for (int m = 0; m < 200; m++) {
                        buf.set(ValueLayout.JAVA_INT, src, m);
                        qa.postSend(w.wrId(m).sge(mr, src, 4));
                        await(cqA, wcs).check();
                        WorkCompletion wc = await(cqB, wcs).check();
                        int slot = (int) wc.wrId();
                        require(wc.qpNum() == qb.qpNum(), "completion on QP " + wc.qpNum());
                        require(buf.get(ValueLayout.JAVA_INT, 128L * slot) == m, "message " + m);
                        srq.postRecv(r.wrId(slot).sge(mr, 128L * slot, 128));
                    }
                }
                qa.close();
                qb.close();
            }
        });
    }
}
