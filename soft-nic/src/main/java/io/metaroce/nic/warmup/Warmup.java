package io.metaroce.nic.warmup;

import static io.metaroce.abi.AbiConstants.MRCE_ABI_VERSION;
import static io.metaroce.abi.AbiConstants.MRCE_OP_ALLOC_PD;
import static io.metaroce.abi.AbiConstants.MRCE_OP_CREATE_CQ;
import static io.metaroce.abi.AbiConstants.MRCE_OP_CREATE_QP;
import static io.metaroce.abi.AbiConstants.MRCE_OP_HELLO;
import static io.metaroce.abi.AbiConstants.MRCE_OP_MODIFY_QP;
import static io.metaroce.abi.AbiConstants.MRCE_OP_REG_MR;
import static io.metaroce.abi.AbiConstants.NO_HANDLE;

import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.RegMrRespDescriptor;
import io.metaroce.abi.WqeDescriptor;
import io.metaroce.control.LocalSession;
import io.metaroce.nic.abi.CqeFlyweight;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.abi.RingFlyweight;
import io.metaroce.nic.abi.WqeFlyweight;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.sys.Inet4;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.transport.TransportSettings;
import io.metaroce.nic.transport.Wire;
import io.metaroce.nic.verbs.Limits;
import io.metaroce.nic.verbs.NetInfo;
import io.metaroce.nic.verbs.QpAttrs;
import io.metaroce.nic.verbs.VerbsService;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Warms the data path at daemon start, before the daemon reports ready: three throwaway hosts in
 * this process, each an {@link EngineAgent} with its {@link VerbsService}, joined by a
 * {@link MemorySwitch}, and an application role played here as the provider plays it (control
 * ops, SQ/RQ rings, CQ rings, registered memory copied with the daemon's own DMA). RC SEND/RECV
 * ping-pong, RDMA WRITE (with and without immediate), RDMA READ and a fetch-and-add run through
 * the real requester, responder and duty cycle at two path MTUs until the JIT has compiled them.
 *
 * <p>Nothing of it outlives {@link #run}: its engines, services, QPs, MRs, counters and memory are
 * its own and are closed; no socket is opened, no interface or real port is touched.
 */
public final class Warmup {
    /**
     * Rounds after which the warm-up may stop once the JIT is quiet. Measured with
     * -XX:+PrintCompilation (docs/architecture.md, start-up): the requester's and responder's
     * per-packet methods reach C2 after about 1000 to 3000 rounds, the duty cycle's last.
     */
    public static final int MIN_ROUNDS = 2000;
    /** Rounds between two looks at the JIT: quiet when it compiled nothing in between. */
    static final int QUIET_ROUNDS = 500;
    /** Rounds at most. */
    public static final int MAX_ROUNDS = 20_000;
    /** Bound on the warm-up's wall time: past it the warm-up stops where it is. */
    public static final long DEFAULT_BUDGET_NS = 10_000_000_000L;

    private static final int UDP_PORT = 4793;
    /** Paths per QP at most: 48 (the daemon's default) made a round 20 to 80 ms long, 8 about 1 ms. */
    static final int WARM_PATHS = 8;

    private static final int BUF = 128 * 1024;
    private static final int[] SEND_SIZES = {64, 4096};
    private static final int WRITE_BIG = 65536;

    /** What a warm-up did, and why it stopped: "quiet" (JIT), "rounds", "time" or "failed". */
    public record Result(int rounds, long elapsedNs, long frames, String stop) {
        @Override
        public String toString() {
            return rounds + " rounds (" + frames + " frames) in " + elapsedNs / 1_000_000 + " ms, stopped: "
                    + switch (stop) {
                        case "quiet" -> "the JIT compiled nothing more";
                        case "rounds" -> "round limit";
                        case "time" -> "time bound";
                        default -> "a completion failed";
                    };
        }
    }

    private Warmup() {}

    private static boolean done;

    /** The daemon's warm-up: until the JIT is quiet, within the round and time bounds. */
    public static Result run() throws Exception {
        return run(MIN_ROUNDS, MAX_ROUNDS, DEFAULT_BUDGET_NS, null);
    }

    /**
     * The daemon's warm-up, once per JVM (a daemon serving several devices warms up once): with
     * the transport settings {@code settings} (paths capped at {@link #WARM_PATHS}), after the real
     * port is open (its classes loaded, so that the code compiled here stays valid) and before the
     * engine runs. Returns null when it already ran or was {@link #skip skipped}.
     */
    public static synchronized Result once(TransportSettings settings) throws Exception {
        if (done) {
            return null;
        }
        done = true;
        return run(MIN_ROUNDS, MAX_ROUNDS, DEFAULT_BUDGET_NS, settings);
    }

    /** mrce-nicd without --warmup: {@link #once} does nothing. */
    public static synchronized void skip() {
        done = true;
    }

    /** Exactly {@code rounds} rounds, unless {@code budgetNs} runs out first. */
    public static Result run(int rounds, long budgetNs) throws Exception {
        return run(rounds, rounds, budgetNs, null);
    }

    /**
     * At least {@code minRounds} rounds, then until the JIT compiled nothing during
     * {@link #QUIET_ROUNDS} rounds, at most {@code maxRounds}; stops when {@code budgetNs} runs out.
     * The transport settings are those of {@code settings} (paths capped at {@link #WARM_PATHS}), or
     * {@link TransportSettings#SIMULATION} when it is null.
     */
    public static Result run(int minRounds, int maxRounds, long budgetNs, TransportSettings settings) throws Exception {
        StableClasses.load(); // what the warm-up compiles stays valid when applications connect
        long start = System.nanoTime();
        long deadline = start + budgetNs;
        int[] ips = {Inet4.parse("198.18.255.1"), Inet4.parse("198.18.255.2"), Inet4.parse("198.18.255.3")};
        int frame = Wire.frameBytes(9000);
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean canWatch = jit != null && jit.isCompilationTimeMonitoringSupported();
        try (MemorySwitch link = new MemorySwitch(ips, UDP_PORT, frame);
                Host a = new Host(link.end(0), 1, settings);
                Host b = new Host(link.end(1), 2, settings);
                Host c = new Host(link.end(2), 3, settings);
                Arena arena = Arena.ofShared()) {
            MemorySegment bufA = arena.allocate(BUF, 4096);
            MemorySegment bufB = arena.allocate(BUF, 4096);
            MemorySegment bufC = arena.allocate(BUF, 4096);
            // three hosts, so that the engine's calls into its port see three port classes
            Pair[] pairs = {
                connect(a, b, bufA, bufB, Ibv.MTU_1024),
                connect(b, c, bufB, bufC, Ibv.MTU_4096),
                connect(c, a, bufC, bufA, Ibv.MTU_1024),
                connect(a, b, bufA, bufB, Ibv.MTU_4096)
            };
            // a QP that never connects, as a daemon polls while its applications set theirs up
            a.idleQp();
            b.idleQp();
            c.idleQp();
            int done = 0;
            long jitMs = canWatch ? jit.getTotalCompilationTime() : 0;
            String stop = "rounds";
            while (done < maxRounds) {
                if (System.nanoTime() > deadline) {
                    stop = "time";
                    break;
                }
                if (!round(pairs[done & 3], deadline)) {
                    stop = System.nanoTime() > deadline ? "time" : "failed";
                    break;
                }
                done++;
                if (canWatch && done % QUIET_ROUNDS == 0) {
                    long ms = jit.getTotalCompilationTime();
                    if (done >= minRounds && ms == jitMs) {
                        stop = "quiet";
                        break;
                    }
                    jitMs = ms;
                }
            }
            long frames = link.end(0).counters().txFrames
                    + link.end(1).counters().txFrames
                    + link.end(2).counters().txFrames;
            return new Result(done, System.nanoTime() - start, frames, stop);
        }
    }

    /** Two connected QPs, one per host, with their CQs and MRs. */
    private record Pair(
            Host a,
            Host b,
            QpRef qa,
            QpRef qb,
            int[] mrA,
            int[] mrB,
            RingFlyweight cqA,
            RingFlyweight cqB,
            long bufA,
            long bufB) {}

    private record QpRef(int handle, int qpn, RingFlyweight sq, RingFlyweight rq) {}

    private static Pair connect(Host a, Host b, MemorySegment bufA, MemorySegment bufB, int mtu) {
        int access =
                Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC;
        int[] mrA = a.regMr(a.pd, bufA, access);
        int[] mrB = b.regMr(b.pd, bufB, access);
        RingFlyweight cqA = a.createCq(256);
        RingFlyweight cqB = b.createCq(256);
        QpRef qa = a.createQp(a.lastCq, 64);
        QpRef qb = b.createQp(b.lastCq, 64);
        a.connect(qa.handle(), b.ip, qb.qpn(), mtu);
        b.connect(qb.handle(), a.ip, qa.qpn(), mtu);
        return new Pair(a, b, qa, qb, mrA, mrB, cqA, cqB, bufA.address(), bufB.address());
    }

    /** One round of every operation; false when a completion failed or the deadline passed. */
    private static boolean round(Pair p, long deadline) {
        Host a = p.a();
        Host b = p.b();
        for (int size : SEND_SIZES) {
            // ping: A sends, B receives; pong: B sends, A receives (rc_pingpong's pattern)
            b.post(p.qb().rq(), 1, 0, 0, 0, p.bufB() + 8192, size, p.mrB()[1]);
            a.post(p.qa().sq(), 2, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, p.bufA(), size, p.mrA()[1]);
            if (!await(p, 1, 1, deadline)) {
                return false;
            }
            a.post(p.qa().rq(), 3, 0, 0, 0, p.bufA() + 8192, size, p.mrA()[1]);
            b.post(p.qb().sq(), 4, Ibv.WR_SEND, Ibv.SEND_SIGNALED, 0, p.bufB(), size, p.mrB()[1]);
            if (!await(p, 1, 1, deadline)) {
                return false;
            }
        }
        a.rdma(p.qa().sq(), 5, Ibv.WR_RDMA_WRITE, p.bufA(), 4096, p.mrA()[1], p.bufB() + 16384, p.mrB()[2]);
        a.rdma(p.qa().sq(), 6, Ibv.WR_RDMA_WRITE, p.bufA(), WRITE_BIG, p.mrA()[1], p.bufB() + 65536, p.mrB()[2]);
        a.rdma(p.qa().sq(), 7, Ibv.WR_RDMA_READ, p.bufA() + 16384, 4096, p.mrA()[1], p.bufB(), p.mrB()[2]);
        if (!await(p, 3, 0, deadline)) {
            return false;
        }
        b.post(p.qb().rq(), 8, 0, 0, 0, p.bufB() + 8192, 64, p.mrB()[1]);
        a.rdma(p.qa().sq(), 9, Ibv.WR_RDMA_WRITE_WITH_IMM, p.bufA(), 64, p.mrA()[1], p.bufB() + 16384, p.mrB()[2]);
        a.rdma(
                p.qa().sq(),
                10,
                Ibv.WR_ATOMIC_FETCH_AND_ADD,
                p.bufA() + 32768,
                8,
                p.mrA()[1],
                p.bufB() + 32768,
                p.mrB()[2]);
        return await(p, 2, 1, deadline);
    }

    /** Drives both engines until A's CQ holds {@code na} and B's {@code nb} good completions. */
    private static boolean await(Pair p, int na, int nb, long deadline) {
        int gotA = 0;
        int gotB = 0;
        while (gotA < na || gotB < nb) {
            long now = System.nanoTime();
            p.a().engine.doWork(now);
            p.b().engine.doWork(now);
            int ra = p.a().poll(p.cqA());
            int rb = p.b().poll(p.cqB());
            if (ra < 0 || rb < 0 || now > deadline) {
                return false;
            }
            gotA += ra;
            gotB += rb;
        }
        return true;
    }

    /** A session of the warm-up's application, in this process: responses queue here. */
    private static final class Session implements LocalSession {
        record Response(int seq, int status, ByteBuffer payload, MemorySegment mapping) {}

        private final long id;
        final ConcurrentLinkedQueue<Response> responses = new ConcurrentLinkedQueue<>();
        final List<MemorySegment> mappings = new ArrayList<>();

        Session(long id) {
            this.id = id;
        }

        @Override
        public long id() {
            return id;
        }

        @Override
        public int pid() {
            return LibC.getpid();
        }

        @Override
        public int uid() {
            return 0;
        }

        @Override
        public int gid() {
            return 0;
        }

        @Override
        public void respond(int op, int seq, int status, ByteBuffer payload, int... fds) {
            ByteBuffer copy = ByteBuffer.allocate(payload.remaining()).order(ByteOrder.LITTLE_ENDIAN);
            copy.put(payload.duplicate()).flip();
            MemorySegment map = null;
            if (status == 0 && (op == MRCE_OP_CREATE_CQ || op == MRCE_OP_CREATE_QP)) {
                long size = copy.getLong(
                        op == MRCE_OP_CREATE_CQ
                                ? (int) CreateCqRespDescriptor.OFF_MAP_SIZE
                                : (int) CreateQpRespDescriptor.OFF_MAP_SIZE);
                try {
                    // the provider maps the memfd; the fd the daemon hands over is closed after
                    map = LibC.mmap(size, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fds[0], 0);
                } catch (Exception e) {
                    status = 12; // ENOMEM: the caller fails the warm-up
                }
                if (map != null) {
                    synchronized (mappings) {
                        mappings.add(map);
                    }
                }
            }
            responses.add(new Response(seq, status, copy, map));
        }

        @Override
        public void close(String reason) {
            // nothing to close: no socket
        }
    }

    /** One throwaway host: engine, verbs service, and the application's objects on it. */
    private static final class Host implements AutoCloseable {
        final int ip;
        final EngineAgent engine;
        final VerbsService verbs;
        final Session session;
        final int pd;
        int lastCq;
        private int seq;
        private final WqeFlyweight wqe = new WqeFlyweight();
        private final CqeFlyweight cqe = new CqeFlyweight();

        Host(MemorySwitch.End port, long sessionId, TransportSettings settings) throws Exception {
            this.ip = port.localIp();
            TransportSettings t = settings == null ? TransportSettings.SIMULATION : settings;
            // more paths make no other code run, only slower rounds (each waits on more paths' ACKs)
            this.engine = new EngineAgent(port, new MrTable(64), t.withPaths(Math.min(t.paths(), WARM_PATHS)));
            VerbsService v;
            try {
                v = new VerbsService(
                        engine,
                        engine.datapath().mrs,
                        new NetInfo("warmup", ip, 9000, true, 0),
                        UDP_PORT,
                        Limits.defaults());
            } catch (RuntimeException e) {
                engine.close();
                throw e;
            }
            this.verbs = v;
            this.session = new Session(sessionId);
            try {
                ByteBuffer hello = req(HelloReqDescriptor.SIZE);
                hello.putInt(0, MRCE_ABI_VERSION);
                call(MRCE_OP_HELLO, hello);
                this.pd = call(MRCE_OP_ALLOC_PD, req(0)).payload().getInt(0);
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        private static ByteBuffer req(long size) {
            return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
        }

        private Session.Response call(int op, ByteBuffer payload) {
            int s = ++seq;
            verbs.onRequest(session, op, s, payload.rewind());
            for (int i = 0; i < 10_000; i++) {
                Session.Response r = session.responses.poll();
                if (r != null) {
                    if (r.seq() != s || r.status() != 0) {
                        throw new IllegalStateException("warm-up: control op " + op + " failed: errno " + r.status());
                    }
                    return r;
                }
                engine.doWork(System.nanoTime());
            }
            throw new IllegalStateException("warm-up: no answer to control op " + op);
        }

        int[] regMr(int pd, MemorySegment mem, int access) {
            ByteBuffer b = req(RegMrReqDescriptor.SIZE);
            b.putInt((int) RegMrReqDescriptor.OFF_PD, pd);
            b.putInt((int) RegMrReqDescriptor.OFF_ACCESS, access);
            b.putLong((int) RegMrReqDescriptor.OFF_ADDR, mem.address());
            b.putLong((int) RegMrReqDescriptor.OFF_LENGTH, mem.byteSize());
            b.putLong((int) RegMrReqDescriptor.OFF_IOVA, mem.address());
            ByteBuffer p = call(MRCE_OP_REG_MR, b).payload();
            return new int[] {
                p.getInt((int) RegMrRespDescriptor.OFF_HANDLE),
                p.getInt((int) RegMrRespDescriptor.OFF_LKEY),
                p.getInt((int) RegMrRespDescriptor.OFF_RKEY)
            };
        }

        RingFlyweight createCq(int entries) {
            ByteBuffer b = req(CreateCqReqDescriptor.SIZE);
            b.putInt((int) CreateCqReqDescriptor.OFF_CQE, entries);
            b.putInt((int) CreateCqReqDescriptor.OFF_CHANNEL, NO_HANDLE);
            Session.Response r = call(MRCE_OP_CREATE_CQ, b);
            lastCq = r.payload().getInt((int) CreateCqRespDescriptor.OFF_HANDLE);
            return new RingFlyweight().wrap(r.mapping());
        }

        QpRef createQp(int cq, int wr) {
            ByteBuffer b = req(CreateQpReqDescriptor.SIZE);
            b.putInt((int) CreateQpReqDescriptor.OFF_PD, pd);
            b.putInt((int) CreateQpReqDescriptor.OFF_SEND_CQ, cq);
            b.putInt((int) CreateQpReqDescriptor.OFF_RECV_CQ, cq);
            b.putInt((int) CreateQpReqDescriptor.OFF_SRQ, NO_HANDLE);
            b.putInt((int) CreateQpReqDescriptor.OFF_QP_TYPE, Ibv.QPT_RC);
            b.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_WR, wr);
            b.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_WR, wr);
            b.putInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_SGE, 1);
            b.putInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_SGE, 1);
            b.putInt((int) CreateQpReqDescriptor.OFF_MAX_INLINE_DATA, 0);
            Session.Response r = call(MRCE_OP_CREATE_QP, b);
            ByteBuffer p = r.payload();
            MemorySegment map = r.mapping();
            return new QpRef(
                    p.getInt((int) CreateQpRespDescriptor.OFF_HANDLE),
                    p.getInt((int) CreateQpRespDescriptor.OFF_QP_NUM),
                    new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_SQ_OFFSET))),
                    new RingFlyweight().wrap(map.asSlice(p.getInt((int) CreateQpRespDescriptor.OFF_RQ_OFFSET))));
        }

        /** A QP left in INIT. */
        void idleQp() {
            QpRef q = createQp(lastCq, 4);
            QpAttrs init = new QpAttrs();
            init.qpState = Ibv.QPS_INIT;
            init.portNum = 1;
            init.qpAccessFlags = Ibv.ACCESS_LOCAL_WRITE;
            modify(q.handle(), Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, init);
        }

        private void modify(int qp, int mask, QpAttrs attrs) {
            ByteBuffer b = req(ModifyQpReqDescriptor.SIZE);
            b.putInt((int) ModifyQpReqDescriptor.OFF_HANDLE, qp);
            b.putInt((int) ModifyQpReqDescriptor.OFF_ATTR_MASK, mask);
            attrs.write(b, (int) ModifyQpReqDescriptor.OFF_ATTR);
            call(MRCE_OP_MODIFY_QP, b);
        }

        /** RESET -> INIT -> RTR -> RTS towards the peer QP, as ibv_rc_pingpong does. */
        void connect(int qp, int peerIp, int peerQpn, int mtu) {
            QpAttrs init = new QpAttrs();
            init.qpState = Ibv.QPS_INIT;
            init.portNum = 1;
            init.qpAccessFlags = Ibv.ACCESS_LOCAL_WRITE
                    | Ibv.ACCESS_REMOTE_WRITE
                    | Ibv.ACCESS_REMOTE_READ
                    | Ibv.ACCESS_REMOTE_ATOMIC;
            modify(qp, Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS, init);
            QpAttrs rtr = new QpAttrs();
            rtr.qpState = Ibv.QPS_RTR;
            rtr.pathMtu = mtu;
            rtr.destQpNum = peerQpn;
            rtr.rqPsn = 0;
            rtr.maxDestRdAtomic = 4;
            rtr.minRnrTimer = 12;
            rtr.isGlobal = 1;
            rtr.hopLimit = 1;
            rtr.ahPortNum = 1;
            System.arraycopy(Inet4.mappedGid(peerIp), 0, rtr.dgid, 0, 16);
            modify(
                    qp,
                    Ibv.QP_STATE
                            | Ibv.QP_AV
                            | Ibv.QP_PATH_MTU
                            | Ibv.QP_DEST_QPN
                            | Ibv.QP_RQ_PSN
                            | Ibv.QP_MAX_DEST_RD_ATOMIC
                            | Ibv.QP_MIN_RNR_TIMER,
                    rtr);
            QpAttrs rts = new QpAttrs();
            rts.qpState = Ibv.QPS_RTS;
            rts.timeout = 14;
            rts.retryCnt = 7;
            rts.rnrRetry = 7;
            rts.maxRdAtomic = 4;
            modify(
                    qp,
                    Ibv.QP_STATE
                            | Ibv.QP_TIMEOUT
                            | Ibv.QP_RETRY_CNT
                            | Ibv.QP_RNR_RETRY
                            | Ibv.QP_SQ_PSN
                            | Ibv.QP_MAX_QP_RD_ATOMIC,
                    rts);
        }

        /** post_send / post_recv of one SGE (the provider's ring write). */
        void post(RingFlyweight ring, long wrId, int opcode, int flags, int imm, long addr, int len, int lkey) {
            int prod = ring.producerAcquire();
            wqe.wrap(ring.segment(), ring.slotOffset(prod));
            wqe.wrId(wrId)
                    .opcode(opcode)
                    .sendFlags(flags)
                    .immData(imm)
                    .numSge(1)
                    .sge(0, addr, len, lkey)
                    .length(len);
            ring.producerRelease(prod + 1);
        }

        /** A signaled RDMA WRITE / READ / atomic to {@code remote} under {@code rkey}. */
        void rdma(RingFlyweight sq, long wrId, int opcode, long addr, int len, int lkey, long remote, int rkey) {
            int prod = sq.producerAcquire();
            long slot = sq.slotOffset(prod);
            wqe.wrap(sq.segment(), slot);
            wqe.wrId(wrId)
                    .opcode(opcode)
                    .sendFlags(Ibv.SEND_SIGNALED)
                    .immData(0x5a5a)
                    .numSge(1)
                    .sge(0, addr, len, lkey)
                    .length(len);
            sq.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_REMOTE_ADDR, remote);
            sq.segment().set(ValueLayout.JAVA_INT_UNALIGNED, slot + WqeDescriptor.OFF_RKEY, rkey);
            if (opcode == Ibv.WR_ATOMIC_FETCH_AND_ADD) {
                sq.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, slot + WqeDescriptor.OFF_COMPARE_ADD, 1L);
            }
            sq.producerRelease(prod + 1);
        }

        /** poll_cq: the number of completions taken, or -1 when one of them failed. */
        int poll(RingFlyweight cq) {
            int cons = cq.consumerAcquire();
            int prod = cq.producerAcquire();
            int n = 0;
            boolean failed = false;
            while (cons != prod) {
                cqe.wrap(cq.segment(), cq.slotOffset(cons));
                failed |= cqe.status() != Ibv.WC_SUCCESS;
                cons++;
                n++;
            }
            cq.consumerRelease(cons);
            return failed ? -1 : n;
        }

        @Override
        public void close() {
            try {
                verbs.onSessionClosed(session);
                for (int i = 0; i < 16; i++) {
                    engine.doWork(System.nanoTime());
                }
                synchronized (session.mappings) {
                    for (MemorySegment m : session.mappings) {
                        try {
                            LibC.munmap(m);
                        } catch (Exception ignored) {
                            // the mapping goes with the process anyway
                        }
                    }
                }
                verbs.close();
            } finally {
                engine.close();
            }
        }
    }
}
