package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;

import io.metaroce.control.LocalControlHandler;
import io.metaroce.control.LocalSession;
import io.metaroce.abi.AbiConstants;
import io.metaroce.abi.AsyncEventDescriptor;
import io.metaroce.abi.CreateCqReqDescriptor;
import io.metaroce.abi.CreateCqRespDescriptor;
import io.metaroce.abi.CreateQpReqDescriptor;
import io.metaroce.abi.CreateQpRespDescriptor;
import io.metaroce.abi.CreateSrqReqDescriptor;
import io.metaroce.abi.CreateSrqRespDescriptor;
import io.metaroce.abi.HandleReqDescriptor;
import io.metaroce.abi.HandleRespDescriptor;
import io.metaroce.abi.HelloReqDescriptor;
import io.metaroce.abi.HelloRespDescriptor;
import io.metaroce.abi.ContextTokenDescriptor;
import io.metaroce.abi.ImportContextReqDescriptor;
import io.metaroce.abi.ImportMrReqDescriptor;
import io.metaroce.abi.ImportMrRespDescriptor;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.abi.ModifyQpReqDescriptor;
import io.metaroce.abi.ModifySrqReqDescriptor;
import io.metaroce.abi.QpAttrDescriptor;
import io.metaroce.abi.RegMrReqDescriptor;
import io.metaroce.abi.RegMrRespDescriptor;
import io.metaroce.abi.ReregMrReqDescriptor;
import io.metaroce.abi.SrqAttrDescriptor;
import io.metaroce.nic.dma.ProcessMemory;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.abi.Errno;
import io.metaroce.nic.model.AsyncEventQueue;
import io.metaroce.nic.model.AsyncEventSink;
import io.metaroce.nic.model.CompChannel;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Pd;
import io.metaroce.nic.model.Srq;
import io.metaroce.abi.IpAddr;
import io.metaroce.nic.sys.FileIds;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.Wire;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves every op of the local control protocol (mrce_abi.h). Object tables live per session, so
 * a session never sees another's handles. Ops that touch a QP after creation (modify, query,
 * destroy) and session teardown run on the engine thread as commands, which respond when done.
 */
public final class VerbsService implements LocalControlHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(VerbsService.class);
    public static final String DEV_NAME = "mrce0";
    /** The verbs device name HELLO gives (mrce-nicd --device NAME=IF); {@link #DEV_NAME} by default. */
    private volatile String devName = DEV_NAME;
    public static final int VENDOR_ID = 0x4d5243;
    /** enum ibv_srq_attr_mask. */
    static final int SRQ_MAX_WR = 1;
    static final int SRQ_LIMIT = 2;
    /** enum ibv_rereg_mr_flags. */
    static final int REREG_MR_CHANGE_TRANSLATION = 1;
    static final int REREG_MR_CHANGE_PD = 2;
    static final int REREG_MR_CHANGE_ACCESS = 4;
    private static final int SUPPORTED_ACCESS = Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE
            | Ibv.ACCESS_REMOTE_READ | Ibv.ACCESS_REMOTE_ATOMIC | Ibv.ACCESS_RELAXED_ORDERING
            | Ibv.ACCESS_ON_DEMAND;

    private final EngineAgent engine;
    private final MrTable mrTable;
    private final NetInfo net;
    private final int udpPort;
    private final Limits limits;
    private final int daemonPid = LibC.getpid();
    private final ConcurrentHashMap<Long, SessionObjects> sessions = new ConcurrentHashMap<>();
    /** Shared contexts by their memfd's file; guarded by itself (lock order: a session, then this). */
    private final Map<FileIds.FileId, SharedContext> contexts = new java.util.HashMap<>();
    private final short[] qpGeneration = new short[EngineAgent.MAX_QP];
    private final boolean[] qpIndexUsed = new boolean[EngineAgent.MAX_QP];
    /** Draws QPNs' random bits (SecureRandom; a seeded one in tests, see identifierRandom). */
    private java.util.Random random = new java.security.SecureRandom();
    // Device-wide object counts (guarded by this), checked against the limits.
    private int qpCount;
    private int mrCount;
    private int pdCount;
    private int cqCount;
    private int srqCount;
    private volatile boolean linkUp;
    /** The connection manager's rdma_cm-style service (ops 20..25); null when the manager is off. */
    private volatile io.metaroce.control.cm.ServiceTable services;
    /** Ends a session the moment its process exits, whoever holds the socket then. */
    private final ProcessWatcher watcher;
    private volatile UserQuota quota = UserQuota.NONE;
    /** Per uid: what its connections hold, indexed by UserQuota's kinds (guarded by itself). */
    private final Map<Integer, long[]> usage = new java.util.HashMap<>();

    /** Names the device this service is (a 1..15 character name, checked by the daemon's options). */
    public void devName(String name) {
        this.devName = name;
    }

    public String devName() {
        return devName;
    }

    public VerbsService(EngineAgent engine, MrTable mrTable, NetInfo net, int udpPort, Limits limits) {
        this.engine = engine;
        this.mrTable = mrTable;
        this.net = net;
        this.udpPort = udpPort;
        this.limits = limits;
        this.linkUp = net.linkUp();
        try {
            ProcessMemory.warmUp();
            this.watcher = new ProcessWatcher(this::processExited);
        } catch (NativeException e) {
            throw new IllegalStateException("cannot watch client processes: " + e.getMessage(), e);
        }
    }

    /** Per-user quotas from now on (existing objects are kept). */
    public void userQuota(UserQuota q) {
        this.quota = q;
    }

    /**
     * Takes {@code n} of {@code kind} from the session's user; false (nothing taken) when that
     * would exceed the user's quota.
     */
    private boolean charge(SessionObjects s, int kind, long n) {
        long limit = quota.limit(kind);
        synchronized (usage) {
            long[] u = usage.computeIfAbsent(s.session.uid(), k -> new long[UserQuota.KINDS]);
            if (limit > 0 && u[kind] + n > limit) {
                return false;
            }
            u[kind] += n;
            return true;
        }
    }

    private void discharge(SessionObjects s, int kind, long n) {
        synchronized (usage) {
            long[] u = usage.get(s.session.uid());
            if (u != null) {
                u[kind] -= n;
            }
        }
    }

    /** Tests: QPNs from {@code r} instead of SecureRandom (null: sequential QPNs, as before). */
    public synchronized void identifierRandom(java.util.Random r) {
        this.random = r;
    }

    /** The watcher's callback: the session's process is gone, so is every access to its memory. */
    private void processExited(long sessionId) {
        SessionObjects s = sessions.get(sessionId);
        if (s == null) {
            return;
        }
        ProcessMemory m = s.memory;
        if (m != null) {
            m.revoke();
        }
        s.session.close("process " + s.pid + " exited: its registrations are revoked");
    }

    /** Serves the CM_* ops with {@code table} (null: they answer EOPNOTSUPP, as with --cm-port 0). */
    public void services(io.metaroce.control.cm.ServiceTable table) {
        this.services = table;
    }

    /** The largest enum ibv_mtu whose payload plus our headers fit the netdev MTU. */
    public static int activeMtu(int ifMtu) {
        for (int mtu = Ibv.MTU_4096; mtu > Ibv.MTU_256; mtu--) {
            if (Ibv.mtuBytes(mtu) + Wire.HEADER_SIZE + Wire.IP_UDP_OVERHEAD <= ifMtu) {
                return mtu;
            }
        }
        return Ibv.MTU_256;
    }

    @Override
    public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
        ByteBuffer p = payload.slice().order(ByteOrder.LITTLE_ENDIAN);
        SessionObjects s = sessions.computeIfAbsent(session.id(),
                id -> new SessionObjects(session, session.pid()));
        try {
            synchronized (s) {
                if (s.closed) {
                    return;
                }
                if (op != MRCE_OP_HELLO && !s.hello) {
                    session.respond(op, seq, Errno.EPROTO, empty());
                    return;
                }
                switch (op) {
                    case MRCE_OP_HELLO -> hello(s, seq, p);
                    case MRCE_OP_ALLOC_PD -> allocPd(s, seq);
                    case MRCE_OP_DEALLOC_PD -> deallocPd(s, seq, p);
                    case MRCE_OP_REG_MR -> regMr(s, seq, p);
                    case MRCE_OP_DEREG_MR -> deregMr(s, seq, p);
                    case MRCE_OP_CREATE_COMP_CHANNEL -> createChannel(s, seq);
                    case MRCE_OP_DESTROY_COMP_CHANNEL -> destroyChannel(s, seq, p);
                    case MRCE_OP_CREATE_CQ -> createCq(s, seq, p);
                    case MRCE_OP_DESTROY_CQ -> destroyCq(s, seq, p);
                    case MRCE_OP_CREATE_QP -> createQp(s, seq, p);
                    case MRCE_OP_MODIFY_QP -> modifyQp(s, seq, p);
                    case MRCE_OP_QUERY_QP -> queryQp(s, seq, p);
                    case MRCE_OP_DESTROY_QP -> destroyQp(s, seq, p);
                    case MRCE_OP_CREATE_SRQ -> createSrq(s, seq, p);
                    case MRCE_OP_MODIFY_SRQ -> modifySrq(s, seq, p);
                    case MRCE_OP_QUERY_SRQ -> querySrq(s, seq, p);
                    case MRCE_OP_DESTROY_SRQ -> destroySrq(s, seq, p);
                    case MRCE_OP_GET_ASYNC_EVENT -> getAsyncEvent(s, seq);
                    case MRCE_OP_REREG_MR -> reregMr(s, seq, p);
                    case MRCE_OP_CONTEXT_FD -> contextFd(s, seq);
                    case MRCE_OP_IMPORT_CONTEXT -> importContext(s, seq, p);
                    case MRCE_OP_IMPORT_PD -> importPd(s, seq, p);
                    case MRCE_OP_UNIMPORT_PD -> unimportPd(s, seq, p);
                    case MRCE_OP_IMPORT_MR -> importMr(s, seq, p);
                    case MRCE_OP_UNIMPORT_MR -> unimportMr(s, seq, p);
                    case MRCE_OP_CM_LISTEN, MRCE_OP_CM_UNLISTEN, MRCE_OP_CM_CONNECT, MRCE_OP_CM_GET_REQUEST,
                            MRCE_OP_CM_ACCEPT, MRCE_OP_CM_REJECT, MRCE_OP_CM_BIND -> {
                        io.metaroce.control.cm.ServiceTable t = services;
                        if (t == null) {
                            session.respond(op, seq, Errno.EOPNOTSUPP, empty());
                        } else {
                            t.onRequest(session, op, seq, p);
                        }
                    }
                    default -> session.respond(op, seq, Errno.EINVAL, empty());
                }
            }
        } catch (NativeException e) {
            LOG.warn("op {} of session {} (pid {}): {}", op, session.id(), session.pid(),
                    e.getMessage());
            session.respond(op, seq, e.errno(), empty());
        }
    }

    private static ByteBuffer empty() {
        return ByteBuffer.allocate(0);
    }

    private static ByteBuffer resp(long size) {
        return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Destroys the session's object named by the request's handle: ENOENT when there is none,
     * EBUSY while it has {@code users}; otherwise removes it from {@code table}, releases it and
     * answers.
     */
    private static <T> void destroyUnused(SessionObjects s, int op, int seq, ByteBuffer p, Map<Integer, T> table,
            ToIntFunction<T> users, Consumer<T> release) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        T obj = table.get(handle);
        if (obj == null) {
            fail(s, op, seq, Errno.ENOENT);
            return;
        }
        if (users.applyAsInt(obj) > 0) {
            fail(s, op, seq, Errno.EBUSY);
            return;
        }
        table.remove(handle);
        release.accept(obj);
        s.session.respond(op, seq, 0, empty());
    }

    private static void fail(SessionObjects s, int op, int seq, int errno) {
        s.session.respond(op, seq, errno, empty());
    }

    // ---- HELLO ----

    /**
     * Binds the session to its process: the pidfd the kernel recorded at connect
     * ({@code SO_PEERPIDFD}; {@code pidfd_open} of the credentials' PID where the kernel lacks it),
     * and that process's address space (see {@link ProcessMemory}).
     */
    private static ProcessMemory bindProcess(SessionObjects s) throws NativeException {
        int sock = s.session.socketFd();
        int pidFd = sock >= 0 ? LibC.getsockoptInt(sock, LibC.SOL_SOCKET, LibC.SO_PEERPIDFD) : -Errno.ENOSYS;
        if (pidFd < 0) {
            if (sock >= 0) {
                LOG.warn("session {}: no SO_PEERPIDFD (errno {}), binding pid {} by number", s.session.id(),
                        -pidFd, s.pid);
            }
            pidFd = LibC.pidfdOpen(s.pid);
            if (pidFd < 0) {
                throw new NativeException("pidfd_open(" + s.pid + ")", -pidFd);
            }
        }
        return ProcessMemory.open(s.pid, pidFd);
    }

    private void hello(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        int version = p.getInt((int) HelloReqDescriptor.OFF_ABI_VERSION);
        if (version != MRCE_ABI_VERSION) {
            fail(s, MRCE_OP_HELLO, seq, Errno.EPROTO);
            return;
        }
        if (s.hello) {
            fail(s, MRCE_OP_HELLO, seq, Errno.EEXIST);
            return;
        }
        if (!charge(s, UserQuota.CONNECTIONS, 1)) {
            fail(s, MRCE_OP_HELLO, seq, Errno.ENOMEM);
            return;
        }
        try {
            helloCharged(s, seq);
        } finally {
            if (!s.hello) {
                discharge(s, UserQuota.CONNECTIONS, 1);
            }
        }
    }

    /** HELLO once the user's connection quota took it; {@code s.hello} set only on success. */
    private void helloCharged(SessionObjects s, int seq) throws NativeException {
        ProcessMemory memory = bindProcess(s);
        int doorbell;
        try {
            doorbell = LibC.eventfd(0, LibC.EFD_NONBLOCK | LibC.EFD_CLOEXEC);
        } catch (NativeException e) {
            memory.close();
            throw e;
        }
        int async;
        try {
            // Blocking semaphore eventfd: ibv_get_async_event reads it once per event.
            async = LibC.eventfd(0, LibC.EFD_SEMAPHORE | LibC.EFD_CLOEXEC);
            engine.watch(doorbell);
        } catch (NativeException e) {
            LibC.close(doorbell);
            memory.close();
            throw e;
        }
        s.memory = memory;
        s.space = memory.id();
        try {
            watcher.watch(memory.pidFd(), s.session.id());
        } catch (NativeException e) {
            LOG.warn("session {} (pid {}): exit not watched: {}", s.session.id(), s.pid, e.getMessage());
        }
        s.doorbellFd = doorbell;
        s.asyncFd = async;
        s.events = new AsyncEventQueue(async, MRCE_MAX_ASYNC_EVENTS);
        s.hello = true;
        ByteBuffer r = resp(HelloRespDescriptor.SIZE);
        r.putInt((int) HelloRespDescriptor.OFF_ABI_VERSION, MRCE_ABI_VERSION);
        r.putInt((int) HelloRespDescriptor.OFF_DAEMON_PID, daemonPid);
        byte[] gid = IpAddr.gid(net.ipv4());
        r.put((int) HelloRespDescriptor.OFF_GID, gid);
        putString(r, (int) HelloRespDescriptor.OFF_DEV_NAME, devName);
        putString(r, (int) HelloRespDescriptor.OFF_IFNAME, net.ifname());
        // node GUID, network order: 02:4d:52:ff: and the last 4 bytes of the GID (the IPv4 address)
        byte[] guid = {0x02, 0x4d, 0x52, (byte) 0xff, gid[12], gid[13], gid[14], gid[15]};
        r.put((int) HelloRespDescriptor.OFF_NODE_GUID, guid);
        r.putInt((int) HelloRespDescriptor.OFF_IF_MTU, net.mtu());
        r.putInt((int) HelloRespDescriptor.OFF_ACTIVE_MTU, activeMtu(net.mtu()));
        r.putInt((int) HelloRespDescriptor.OFF_MAX_MTU, Ibv.MTU_4096);
        r.putInt((int) HelloRespDescriptor.OFF_UDP_PORT, udpPort);
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP, limits.maxQp());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_WR, limits.maxQpWr());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SGE, limits.maxSge());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_CQ, limits.maxCq());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_CQE, limits.maxCqe());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_MR, limits.maxMr());
        r.putLong((int) HelloRespDescriptor.OFF_MAX_MR_SIZE, limits.maxMrSize());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_PD, limits.maxPd());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_INLINE, limits.maxInline());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_RD_ATOM, limits.maxQpRdAtom());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_COMP_CHANNEL, limits.maxCompChannel());
        r.putInt((int) HelloRespDescriptor.OFF_VENDOR_ID, VENDOR_ID);
        r.putInt((int) HelloRespDescriptor.OFF_VENDOR_PART_ID, 1);
        r.putInt((int) HelloRespDescriptor.OFF_HW_VER, 1);
        // The carrier now, not as of the last once-a-second check: an application started right
        // after its link came up must not see the port DOWN (perftest refuses to run then).
        r.putInt((int) HelloRespDescriptor.OFF_LINK_UP, currentLink() ? 1 : 0);
        r.putInt((int) HelloRespDescriptor.OFF_SPEED_MBPS, net.speedMbps());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ, limits.maxSrq());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ_WR, limits.maxSrqWr());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_SRQ_SGE, limits.maxSrqSge());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_QP_INIT_RD_ATOM, limits.maxQpInitRdAtom());
        r.putInt((int) HelloRespDescriptor.OFF_ATOMIC_CAP, limits.atomicCap());
        r.putInt((int) HelloRespDescriptor.OFF_MAX_AH, limits.maxAh());
        s.session.respond(MRCE_OP_HELLO, seq, 0, r, doorbell, async);
    }

    private static void putString(ByteBuffer r, int off, String v) {
        byte[] b = v.getBytes(StandardCharsets.US_ASCII);
        r.put(off, b, 0, Math.min(b.length, 15));
    }

    // ---- PD ----

    private void allocPd(SessionObjects s, int seq) {
        if (!charge(s, UserQuota.PDS, 1)) {
            fail(s, MRCE_OP_ALLOC_PD, seq, Errno.ENOMEM);
            return;
        }
        synchronized (this) {
            if (pdCount >= limits.maxPd()) {
                discharge(s, UserQuota.PDS, 1);
                fail(s, MRCE_OP_ALLOC_PD, seq, Errno.ENOMEM);
                return;
            }
            pdCount++;
        }
        Pd pd = new Pd(s.newHandle(), s.session.id());
        s.pds.put(pd.handle, pd);
        if (s.context != null) {
            s.context.pds.put(pd.handle, pd);
        }
        ByteBuffer r = resp(HandleRespDescriptor.SIZE);
        r.putInt((int) HandleRespDescriptor.OFF_HANDLE, pd.handle);
        s.session.respond(MRCE_OP_ALLOC_PD, seq, 0, r);
    }

    private void deallocPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Pd pd = s.pds.get(handle);
        if (pd == null) {
            // An imported PD is destroyed by the connection that made it (ibv_unimport_pd here).
            fail(s, MRCE_OP_DEALLOC_PD, seq, s.importedPds.containsKey(handle) ? Errno.EPERM : Errno.ENOENT);
            return;
        }
        // Under the PD's lock, so that no other member of the context imports it meanwhile.
        synchronized (pd) {
            if (pd.users > 0) {
                fail(s, MRCE_OP_DEALLOC_PD, seq, Errno.EBUSY);
                return;
            }
            if (s.context != null) {
                s.context.pds.remove(handle, pd);
            }
        }
        s.pds.remove(handle);
        synchronized (this) {
            pdCount--;
        }
        discharge(s, UserQuota.PDS, 1);
        s.session.respond(MRCE_OP_DEALLOC_PD, seq, 0, empty());
    }

    /**
     * Adds {@code delta} to the PD's users (MRs, QPs, SRQs of any member of its context, and
     * imports). Under the PD's own lock: members of one context update it under different
     * session locks.
     */
    private static void use(Pd pd, int delta) {
        synchronized (pd) {
            pd.users += delta;
        }
    }

    // ---- MR ----

    private void regMr(SessionObjects s, int seq, ByteBuffer p) {
        Pd pd = s.pd(p.getInt((int) RegMrReqDescriptor.OFF_PD));
        int access = p.getInt((int) RegMrReqDescriptor.OFF_ACCESS);
        long addr = p.getLong((int) RegMrReqDescriptor.OFF_ADDR);
        long length = p.getLong((int) RegMrReqDescriptor.OFF_LENGTH);
        long iova = p.getLong((int) RegMrReqDescriptor.OFF_IOVA);
        int err = checkMr(pd, access, addr, length, iova);
        if (err == 0 && (access & Ibv.ACCESS_ON_DEMAND) == 0) {
            err = probe(s.space, addr, length); // ODP: pages may be mapped later
        }
        if (err != 0) {
            fail(s, MRCE_OP_REG_MR, seq, err);
            return;
        }
        if (!charge(s, UserQuota.MRS, 1)) {
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        if (!charge(s, UserQuota.MR_BYTES, pinned(access, length))) {
            discharge(s, UserQuota.MRS, 1);
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        Mr mr;
        synchronized (this) {
            mr = mrCount < limits.maxMr()
                    ? mrTable.register(s.newHandle(), pd, s.space, addr, length, iova, access) : null;
            if (mr != null) {
                mrCount++;
            }
        }
        if (mr == null) {
            discharge(s, UserQuota.MRS, 1);
            discharge(s, UserQuota.MR_BYTES, pinned(access, length));
            fail(s, MRCE_OP_REG_MR, seq, Errno.ENOMEM);
            return;
        }
        use(pd, 1);
        s.mrs.put(mr.handle, mr);
        if (s.context != null) {
            s.context.mrs.put(mr.handle, mr);
        }
        ByteBuffer r = resp(RegMrRespDescriptor.SIZE);
        r.putInt((int) RegMrRespDescriptor.OFF_HANDLE, mr.handle);
        r.putInt((int) RegMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt((int) RegMrRespDescriptor.OFF_RKEY, mr.rkey);
        s.session.respond(MRCE_OP_REG_MR, seq, 0, r);
    }

    /**
     * The bytes an MR counts against the user's MR_BYTES quota: its length, none for an
     * on-demand-paging MR (nothing of it is resident on the daemon's account, and an implicit
     * one spans the whole address space).
     */
    static long pinned(int access, long length) {
        return (access & Ibv.ACCESS_ON_DEMAND) != 0 ? 0 : length;
    }

    /**
     * An implicit ODP registration: ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...),
     * the whole address space, the keys valid at any address.
     */
    static boolean implicitOdp(int access, long addr, long length, long iova) {
        return (access & Ibv.ACCESS_ON_DEMAND) != 0 && addr == 0 && iova == 0 && length == -1L;
    }

    /** ibv_reg_mr(3) argument rules; 0 or an errno. */
    private int checkMr(Pd pd, int access, long addr, long length, long iova) {
        if (pd == null) {
            return Errno.ENOENT;
        }
        if ((access & ~SUPPORTED_ACCESS) != 0) {
            return (access & (Ibv.ACCESS_ZERO_BASED | Ibv.ACCESS_MW_BIND
                    | Ibv.ACCESS_HUGETLB)) != 0 ? Errno.EOPNOTSUPP : Errno.EINVAL;
        }
        if ((access & (Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_ATOMIC)) != 0
                && (access & Ibv.ACCESS_LOCAL_WRITE) == 0) {
            return Errno.EINVAL;
        }
        if (implicitOdp(access, addr, length, iova)) {
            return 0; // above max_mr_size by definition; Mr.contains compares unsigned
        }
        if (length <= 0 || Long.compareUnsigned(length, limits.maxMrSize()) > 0) {
            return Errno.EINVAL;
        }
        if (Long.compareUnsigned(addr + length, addr) < 0
                || Long.compareUnsigned(iova + length, iova) < 0) {
            return Errno.EINVAL;
        }
        return 0;
    }

    /** Like ibv_reg_mr pinning pages: the first and last byte must be readable in the process. */
    private static int probe(int space, long addr, long length) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(1);
            MemorySegment local = arena.allocate(16, 8);
            local.set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, buf.address());
            local.set(java.lang.foreign.ValueLayout.JAVA_LONG, 8, 1L);
            for (long a : new long[] {addr, addr + length - 1}) {
                long n = a < 0 ? -Errno.EFAULT : ProcessMemory.read(space, local, a);
                if (n == -Errno.EIO) {
                    return Errno.EFAULT; // /proc/pid/mem's word for an unmapped address
                }
                if (n < 0) {
                    return (int) -n;
                }
                if (n != 1) {
                    return Errno.EFAULT;
                }
            }
        }
        return 0;
    }

    private void deregMr(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Mr mr = s.mrs.remove(handle);
        if (mr == null) {
            fail(s, MRCE_OP_DEREG_MR, seq, s.importedMrs.containsKey(handle) ? Errno.EPERM : Errno.ENOENT);
            return;
        }
        if (s.context != null) {
            s.context.mrs.remove(handle, mr);
        }
        releaseMr(mr);
        discharge(s, UserQuota.MRS, 1);
        discharge(s, UserQuota.MR_BYTES, pinned(mr.access, mr.length));
        LocalSession session = s.session;
        // Answer only after the engine revoked it: no copy touches the region once dereg returns.
        Runnable revoke = () -> {
            mr.revoke();
            session.respond(MRCE_OP_DEREG_MR, seq, 0, empty());
        };
        while (!engine.submit(revoke)) {
            Thread.onSpinWait();
        }
    }

    private void releaseMr(Mr mr) {
        mrTable.remove(mr);
        use(mr.pd, -1);
        synchronized (this) {
            mrCount--;
        }
    }

    // ---- completion channels ----

    private void createChannel(SessionObjects s, int seq) throws NativeException {
        if (s.channels.size() >= limits.maxCompChannel()) {
            fail(s, MRCE_OP_CREATE_COMP_CHANNEL, seq, Errno.ENOMEM);
            return;
        }
        // Blocking semaphore eventfd: the application's ibv_get_cq_event reads it and may block.
        int fd = LibC.eventfd(0, LibC.EFD_SEMAPHORE | LibC.EFD_CLOEXEC);
        CompChannel ch = new CompChannel(s.newHandle(), fd);
        s.channels.put(ch.handle, ch);
        ByteBuffer r = resp(HandleRespDescriptor.SIZE);
        r.putInt((int) HandleRespDescriptor.OFF_HANDLE, ch.handle);
        s.session.respond(MRCE_OP_CREATE_COMP_CHANNEL, seq, 0, r, fd);
    }

    private void destroyChannel(SessionObjects s, int seq, ByteBuffer p) {
        destroyUnused(s, MRCE_OP_DESTROY_COMP_CHANNEL, seq, p, s.channels, ch -> ch.cqUsers,
                ch -> LibC.close(ch.eventFd));
    }

    // ---- CQ ----

    private void createCq(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        int cqe = p.getInt((int) CreateCqReqDescriptor.OFF_CQE);
        int chHandle = p.getInt((int) CreateCqReqDescriptor.OFF_CHANNEL);
        CompChannel ch = null;
        if (chHandle != AbiConstants.NO_HANDLE) {
            ch = s.channels.get(chHandle);
            if (ch == null) {
                fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOENT);
                return;
            }
        }
        if (cqe < 1 || cqe > limits.maxCqe()) {
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.EINVAL);
            return;
        }
        int slots = pow2(cqe);
        if (!charge(s, UserQuota.CQS, 1)) {
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
            return;
        }
        if (!charge(s, UserQuota.CQ_ENTRIES, slots)) {
            discharge(s, UserQuota.CQS, 1);
            fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
            return;
        }
        synchronized (this) {
            if (cqCount >= limits.maxCq()) {
                discharge(s, UserQuota.CQ_ENTRIES, slots);
                discharge(s, UserQuota.CQS, 1);
                fail(s, MRCE_OP_CREATE_CQ, seq, Errno.ENOMEM);
                return;
            }
            cqCount++;
        }
        long size = (io.metaroce.nic.abi.RingFlyweight.byteSize(MRCE_CQE_SIZE, slots) + 4095) & ~4095L;
        SharedMemory shm = SharedMemory.create("mrce-cq", size, () -> {
            uncount(MRCE_OP_CREATE_CQ);
            discharge(s, UserQuota.CQ_ENTRIES, slots);
            discharge(s, UserQuota.CQS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        Cq cq = new Cq(s.newHandle(), map, slots, ch);
        if (ch != null) {
            ch.cqUsers++;
        }
        s.cqs.put(cq.handle, cq);
        ByteBuffer r = resp(CreateCqRespDescriptor.SIZE);
        r.putInt((int) CreateCqRespDescriptor.OFF_HANDLE, cq.handle);
        r.putInt((int) CreateCqRespDescriptor.OFF_CQE, slots);
        r.putLong((int) CreateCqRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_CQ, seq, 0, r, fd);
        LibC.close(fd);
    }

    private void destroyCq(SessionObjects s, int seq, ByteBuffer p) {
        destroyUnused(s, MRCE_OP_DESTROY_CQ, seq, p, s.cqs, cq -> cq.qpUsers, cq -> {
            releaseCq(cq);
            discharge(s, UserQuota.CQ_ENTRIES, cq.slots());
            discharge(s, UserQuota.CQS, 1);
        });
    }

    private void releaseCq(Cq cq) {
        if (cq.channel != null) {
            cq.channel.cqUsers--;
        }
        unmap(cq.mapping);
        uncount(MRCE_OP_CREATE_CQ);
    }

    /** Gives back the device-wide count an object created by {@code createOp} held. */
    private synchronized void uncount(int createOp) {
        switch (createOp) {
            case MRCE_OP_CREATE_CQ -> cqCount--;
            case MRCE_OP_CREATE_SRQ -> srqCount--;
            case MRCE_OP_ALLOC_PD -> pdCount--;
            default -> throw new IllegalArgumentException("op " + createOp);
        }
    }

    private static void unmap(MemorySegment m) {
        try {
            LibC.munmap(m);
        } catch (NativeException e) {
            LOG.warn("{}", e.getMessage());
        }
    }

    // ---- QP ----

    private void createQp(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        Pd pd = s.pd(p.getInt((int) CreateQpReqDescriptor.OFF_PD));
        Cq sendCq = s.cqs.get(p.getInt((int) CreateQpReqDescriptor.OFF_SEND_CQ));
        Cq recvCq = s.cqs.get(p.getInt((int) CreateQpReqDescriptor.OFF_RECV_CQ));
        int srqHandle = p.getInt((int) CreateQpReqDescriptor.OFF_SRQ);
        int type = p.getInt((int) CreateQpReqDescriptor.OFF_QP_TYPE);
        boolean sigAll = p.getInt((int) CreateQpReqDescriptor.OFF_SQ_SIG_ALL) != 0;
        int sendWr = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_WR);
        int recvWr = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_WR);
        int sendSge = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_SEND_SGE);
        int recvSge = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_RECV_SGE);
        int inline = p.getInt((int) CreateQpReqDescriptor.OFF_MAX_INLINE_DATA);
        if (pd == null || sendCq == null || recvCq == null) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOENT);
            return;
        }
        Srq srq = null;
        if (srqHandle != AbiConstants.NO_HANDLE) {
            srq = s.srqs.get(srqHandle);
            if (srq == null) {
                fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOENT);
                return;
            }
            // ibv_create_qp(3): with an SRQ the receive capabilities are ignored; the QP's own
            // RQ ring still exists (one slot) and is never read.
            recvWr = 0;
            recvSge = 0;
        }
        if (!qpTypeSupported(type)) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EOPNOTSUPP); // RC and UD only
            return;
        }
        if (sendWr < 0 || sendWr > limits.maxQpWr() || recvWr < 0 || recvWr > limits.maxQpWr()
                || sendSge < 0 || sendSge > limits.maxSge() || recvSge < 0
                || recvSge > limits.maxSge() || inline < 0 || inline > limits.maxInline()) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EINVAL);
            return;
        }
        int sendSlots = pow2(Math.max(1, sendWr));
        int recvSlots = pow2(Math.max(1, recvWr));
        if (!charge(s, UserQuota.QPS, 1)) {
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOMEM);
            return;
        }
        int qpn = allocateQpn();
        if (qpn < 0) {
            discharge(s, UserQuota.QPS, 1);
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.ENOMEM);
            return;
        }
        long rqOffset = Qp.rqOffset(sendSlots);
        long size = Qp.mapSize(sendSlots, recvSlots);
        SharedMemory shm = SharedMemory.create("mrce-qp", size, () -> {
            freeQpn(qpn);
            discharge(s, UserQuota.QPS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        int maxSendSge = Math.max(1, sendSge);
        int maxRecvSge = Math.max(1, recvSge);
        Qp qp = new Qp(s.newHandle(), qpn, s.session.id(), s.space, pd, sendCq, recvCq, type, sigAll,
                sendSlots, recvSlots, maxSendSge, maxRecvSge, inline, map, 0, (int) rqOffset,
                net.mtu());
        qp.peerPort = udpPort;
        qp.srq = srq;
        qp.asyncEvents = s.events;
        if (!engine.submit(() -> engine.addQp(qp))) {
            qp.requester.close();
            unmap(map);
            LibC.close(fd);
            freeQpn(qpn);
            discharge(s, UserQuota.QPS, 1);
            fail(s, MRCE_OP_CREATE_QP, seq, Errno.EAGAIN);
            return;
        }
        use(pd, 1);
        sendCq.qpUsers++;
        recvCq.qpUsers++;
        if (srq != null) {
            srq.qpUsers++;
        }
        s.qps.put(qp.handle, qp);
        ByteBuffer r = resp(CreateQpRespDescriptor.SIZE);
        r.putInt((int) CreateQpRespDescriptor.OFF_HANDLE, qp.handle);
        r.putInt((int) CreateQpRespDescriptor.OFF_QP_NUM, qpn);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_SEND_WR, sendSlots);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_RECV_WR, srq != null ? 0 : recvSlots);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_SEND_SGE, maxSendSge);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_RECV_SGE, srq != null ? 0 : maxRecvSge);
        r.putInt((int) CreateQpRespDescriptor.OFF_MAX_INLINE_DATA, inline);
        r.putInt((int) CreateQpRespDescriptor.OFF_SQ_OFFSET, 0);
        r.putInt((int) CreateQpRespDescriptor.OFF_RQ_OFFSET, (int) rqOffset);
        r.putLong((int) CreateQpRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_QP, seq, 0, r, fd);
        LibC.close(fd);
    }

    /** QP types this daemon serves: RC and UD (UC, XRC and raw packet QPs are EOPNOTSUPP). */
    static boolean qpTypeSupported(int type) {
        return type == Ibv.QPT_RC || type == Ibv.QPT_UD;
    }

    private static int pow2(int n) {
        int p = Integer.highestOneBit(n);
        return p == n ? n : p << 1;
    }

    /** A QPN's generations: the 24-bit QPN's bits above the slot index (1..1023). */
    private static final int QP_GENERATIONS = (1 << (24 - EngineAgent.QP_INDEX_BITS)) - 1;

    private synchronized int allocateQpn() {
        if (qpCount >= limits.maxQp()) {
            return -1;
        }
        // Unpredictable QPNs: a random free index and a random generation above it (1..0x3ff,
        // never the slot's previous one), so a QPN can be neither guessed nor reused at once.
        // (No random: the first free index and the slot's next generation, for tests whose
        // outcome depends on the QPNs, which pick the paths' entropies.)
        int start = random != null ? random.nextInt(EngineAgent.MAX_QP) : 0;
        for (int k = 0; k < EngineAgent.MAX_QP; k++) {
            int i = (start + k) & (EngineAgent.MAX_QP - 1);
            if (!qpIndexUsed[i]) {
                qpIndexUsed[i] = true;
                int gen;
                if (random == null) {
                    gen = (qpGeneration[i] % QP_GENERATIONS) + 1;
                } else {
                    do {
                        gen = 1 + random.nextInt(QP_GENERATIONS);
                    } while (gen == qpGeneration[i]);
                }
                qpGeneration[i] = (short) gen;
                qpCount++;
                return (gen << EngineAgent.QP_INDEX_BITS) | i;
            }
        }
        return -1;
    }

    private synchronized void freeQpn(int qpn) {
        qpIndexUsed[qpn & (EngineAgent.MAX_QP - 1)] = false;
        qpCount--;
    }

    private void modifyQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.get(p.getInt((int) ModifyQpReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_MODIFY_QP, seq, Errno.ENOENT);
            return;
        }
        int mask = p.getInt((int) ModifyQpReqDescriptor.OFF_ATTR_MASK);
        QpAttrs attrs = QpAttrs.read(p, (int) ModifyQpReqDescriptor.OFF_ATTR);
        LocalSession session = s.session;
        if (!engine.submit(() -> {
            int err = QpModifier.modify(qp, mask, attrs, engine.datapath());
            session.respond(MRCE_OP_MODIFY_QP, seq, err, empty());
        })) {
            fail(s, MRCE_OP_MODIFY_QP, seq, Errno.EAGAIN);
        }
    }

    private void queryQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.get(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_QUERY_QP, seq, Errno.ENOENT);
            return;
        }
        LocalSession session = s.session;
        if (!engine.submit(() -> {
            ByteBuffer r = resp(QpAttrDescriptor.SIZE);
            QpAttrs.of(qp).write(r, 0);
            session.respond(MRCE_OP_QUERY_QP, seq, 0, r);
        })) {
            fail(s, MRCE_OP_QUERY_QP, seq, Errno.EAGAIN);
        }
    }

    private void destroyQp(SessionObjects s, int seq, ByteBuffer p) {
        Qp qp = s.qps.remove(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (qp == null) {
            fail(s, MRCE_OP_DESTROY_QP, seq, Errno.ENOENT);
            return;
        }
        LocalSession session = s.session;
        Runnable destroy = () -> {
            engine.removeQp(qp);
            synchronized (s) {
                releaseQp(qp);
                discharge(s, UserQuota.QPS, 1);
            }
            session.respond(MRCE_OP_DESTROY_QP, seq, 0, empty());
        };
        while (!engine.submit(destroy)) {
            Thread.onSpinWait(); // a destroy must not be lost: the queue drains quickly
        }
    }

    /** After the engine dropped the QP. Caller holds the session lock. */
    private void releaseQp(Qp qp) {
        use(qp.pd, -1);
        qp.sendCq.qpUsers--;
        qp.recvCq.qpUsers--;
        if (qp.srq != null) {
            qp.srq.qpUsers--;
        }
        unmap(qp.mapping);
        freeQpn(qp.qpn);
    }

    // ---- teardown ----

    @Override
    public void onSessionClosed(LocalSession session) {
        io.metaroce.control.cm.ServiceTable t = services;
        if (t != null) {
            t.onSessionClosed(session);
        }
        SessionObjects s = sessions.remove(session.id());
        if (s == null) {
            return;
        }
        List<Qp> qps;
        synchronized (s) {
            s.closed = true;
            qps = new ArrayList<>(s.qps.values());
            s.qps.clear();
        }
        Runnable reclaim = () -> {
            for (Qp qp : qps) {
                engine.removeQp(qp);
            }
            synchronized (s) {
                leaveContext(s);
                for (Qp qp : qps) {
                    releaseQp(qp);
                    discharge(s, UserQuota.QPS, 1);
                }
                for (Cq cq : s.cqs.values()) {
                    releaseCq(cq);
                    discharge(s, UserQuota.CQ_ENTRIES, cq.slots());
                    discharge(s, UserQuota.CQS, 1);
                }
                s.cqs.clear();
                for (Srq srq : s.srqs.values()) {
                    releaseSrq(srq);
                    discharge(s, UserQuota.SRQS, 1);
                }
                s.srqs.clear();
                for (CompChannel ch : s.channels.values()) {
                    LibC.close(ch.eventFd);
                }
                s.channels.clear();
                for (Mr mr : s.mrs.values()) {
                    mr.revoke();
                    releaseMr(mr);
                    discharge(s, UserQuota.MRS, 1);
                    discharge(s, UserQuota.MR_BYTES, pinned(mr.access, mr.length));
                }
                s.mrs.clear();
                for (int i = 0; i < s.pds.size(); i++) {
                    uncount(MRCE_OP_ALLOC_PD);
                }
                discharge(s, UserQuota.PDS, s.pds.size());
                s.pds.clear();
                if (s.hello) {
                    discharge(s, UserQuota.CONNECTIONS, 1);
                }
                if (s.memory != null) {
                    s.memory.close(); // on the engine thread: no copy is using the descriptor
                }
                if (s.doorbellFd >= 0) {
                    engine.unwatch(s.doorbellFd);
                    LibC.close(s.doorbellFd);
                    s.events.close(); // before its eventfd goes: no post writes to a closed fd
                    LibC.close(s.asyncFd);
                }
            }
            LOG.debug("session {} (pid {}) reclaimed: {} QPs", session.id(), s.pid, qps.size());
        };
        while (!engine.submit(reclaim)) {
            Thread.onSpinWait();
        }
    }

    // ---- shared contexts: ibv_import_device, ibv_import_pd, ibv_import_mr ----

    /**
     * CONTEXT_FD: makes the connection the first member of a new context and answers with the
     * context memfd (the provider's cmd_fd). The daemon keeps its copy while a member lives, so
     * the memfd's inode names this context and no other while anyone can present it.
     */
    private void contextFd(SessionObjects s, int seq) throws NativeException {
        if (s.context != null) {
            fail(s, MRCE_OP_CONTEXT_FD, seq, Errno.EEXIST);
            return;
        }
        if (!s.noObjects()) {
            fail(s, MRCE_OP_CONTEXT_FD, seq, Errno.EBUSY); // only right after HELLO
            return;
        }
        int fd = LibC.memfdCreate("mrce-context", LibC.MFD_CLOEXEC);
        FileIds.FileId id;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment token = arena.allocate(ContextTokenDescriptor.SIZE);
            token.set(java.lang.foreign.ValueLayout.JAVA_INT, ContextTokenDescriptor.OFF_MAGIC, MRCE_CONTEXT_MAGIC);
            token.set(java.lang.foreign.ValueLayout.JAVA_INT, ContextTokenDescriptor.OFF_ABI_VERSION, MRCE_ABI_VERSION);
            byte[] name = devName.getBytes(StandardCharsets.US_ASCII);
            MemorySegment.copy(name, 0, token, java.lang.foreign.ValueLayout.JAVA_BYTE,
                    ContextTokenDescriptor.OFF_DEV_NAME, Math.min(name.length, 15));
            long n = LibC.write(fd, token, ContextTokenDescriptor.SIZE);
            if (n != ContextTokenDescriptor.SIZE) {
                throw new NativeException("write(context memfd)", n < 0 ? (int) -n : Errno.EIO);
            }
            id = FileIds.of(fd);
        } catch (NativeException e) {
            LibC.close(fd);
            throw e;
        }
        SharedContext ctx = new SharedContext(fd, id);
        synchronized (contexts) {
            contexts.put(id, ctx);
            ctx.members.add(s);
        }
        s.context = ctx;
        s.session.respond(MRCE_OP_CONTEXT_FD, seq, 0, empty(), fd);
    }

    /**
     * IMPORT_CONTEXT: joins the context whose memfd the caller holds as fd {@code fd}. The file
     * is taken from the caller's own fd table through the connection's pidfd, so only a process
     * that was given the fd can join, whatever number it names.
     */
    private void importContext(SessionObjects s, int seq, ByteBuffer p) {
        int fd = p.getInt((int) ImportContextReqDescriptor.OFF_FD);
        if (s.context != null || !s.noObjects()) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EEXIST);
            return;
        }
        if (fd < 0) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EBADF);
            return;
        }
        int mine = FileIds.pidfdGetfd(s.memory.pidFd(), fd);
        if (mine < 0) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, -mine);
            return;
        }
        FileIds.FileId id;
        try {
            id = FileIds.of(mine);
        } catch (NativeException e) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, e.errno());
            return;
        } finally {
            LibC.close(mine);
        }
        SharedContext ctx;
        synchronized (contexts) {
            ctx = contexts.get(id);
            if (ctx != null) {
                ctx.members.add(s);
            }
        }
        if (ctx == null) {
            fail(s, MRCE_OP_IMPORT_CONTEXT, seq, Errno.EINVAL); // not a live context of this daemon
            return;
        }
        s.context = ctx;
        s.session.respond(MRCE_OP_IMPORT_CONTEXT, seq, 0, empty());
    }

    /** IMPORT_PD: a reference to a PD another member made; its owner's dealloc is EBUSY meanwhile. */
    private void importPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        if (s.context == null) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.EINVAL);
            return;
        }
        if (s.pd(handle) != null) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.EEXIST);
            return;
        }
        Pd pd = s.context.pds.get(handle);
        boolean live = false;
        if (pd != null) {
            synchronized (pd) { // against the owner's dealloc
                live = s.context.pds.get(handle) == pd;
                if (live) {
                    pd.users++;
                }
            }
        }
        if (!live) {
            fail(s, MRCE_OP_IMPORT_PD, seq, Errno.ENOENT);
            return;
        }
        s.importedPds.put(handle, pd);
        s.session.respond(MRCE_OP_IMPORT_PD, seq, 0, empty());
    }

    private void unimportPd(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) HandleReqDescriptor.OFF_HANDLE);
        Pd pd = s.importedPds.get(handle);
        if (pd == null) {
            fail(s, MRCE_OP_UNIMPORT_PD, seq, Errno.ENOENT);
            return;
        }
        if (usesPd(s, pd)) {
            fail(s, MRCE_OP_UNIMPORT_PD, seq, Errno.EBUSY); // its MRs, QPs or SRQs first
            return;
        }
        s.importedPds.remove(handle);
        use(pd, -1);
        s.session.respond(MRCE_OP_UNIMPORT_PD, seq, 0, empty());
    }

    /** True when an object of this connection (made or imported) is on {@code pd}. */
    private static boolean usesPd(SessionObjects s, Pd pd) {
        for (Mr mr : s.mrs.values()) {
            if (mr.pd == pd) {
                return true;
            }
        }
        for (Mr mr : s.importedMrs.values()) {
            if (mr.pd == pd) {
                return true;
            }
        }
        for (Qp qp : s.qps.values()) {
            if (qp.pd == pd) {
                return true;
            }
        }
        for (Srq srq : s.srqs.values()) {
            if (srq.pd == pd) {
                return true;
            }
        }
        return false;
    }

    /**
     * IMPORT_MR: the keys and range of an MR another member registered, on a PD the caller has.
     * The reference holds nothing: the owner's DEREG_MR revokes the keys for everyone.
     */
    private void importMr(SessionObjects s, int seq, ByteBuffer p) {
        Pd pd = s.pd(p.getInt((int) ImportMrReqDescriptor.OFF_PD));
        int handle = p.getInt((int) ImportMrReqDescriptor.OFF_HANDLE);
        if (s.context == null || pd == null) {
            fail(s, MRCE_OP_IMPORT_MR, seq, s.context == null ? Errno.EINVAL : Errno.ENOENT);
            return;
        }
        if (s.mrs.containsKey(handle) || s.importedMrs.containsKey(handle)) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.EEXIST);
            return;
        }
        Mr mr = s.context.mrs.get(handle);
        if (mr == null) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.ENOENT);
            return;
        }
        if (mr.pd != pd) {
            fail(s, MRCE_OP_IMPORT_MR, seq, Errno.EINVAL);
            return;
        }
        s.importedMrs.put(handle, mr);
        ByteBuffer r = resp(ImportMrRespDescriptor.SIZE);
        r.putInt(ImportMrRespDescriptor.OFF_HANDLE, handle);
        r.putInt(ImportMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt(ImportMrRespDescriptor.OFF_RKEY, mr.rkey);
        r.putInt(ImportMrRespDescriptor.OFF_ACCESS, mr.access);
        r.putLong(ImportMrRespDescriptor.OFF_ADDR, mr.iova);
        r.putLong(ImportMrRespDescriptor.OFF_LENGTH, mr.length);
        s.session.respond(MRCE_OP_IMPORT_MR, seq, 0, r);
    }

    private static void unimportMr(SessionObjects s, int seq, ByteBuffer p) {
        if (s.importedMrs.remove(p.getInt((int) HandleReqDescriptor.OFF_HANDLE)) == null) {
            fail(s, MRCE_OP_UNIMPORT_MR, seq, Errno.ENOENT);
            return;
        }
        s.session.respond(MRCE_OP_UNIMPORT_MR, seq, 0, empty());
    }

    /**
     * Session teardown (caller holds the session lock): drops what it imported, withdraws what it
     * made from the context, and closes the context memfd with its last member.
     */
    private void leaveContext(SessionObjects s) {
        for (Pd pd : s.importedPds.values()) {
            use(pd, -1);
        }
        s.importedPds.clear();
        s.importedMrs.clear();
        SharedContext ctx = s.context;
        if (ctx == null) {
            return;
        }
        for (Pd pd : s.pds.values()) {
            synchronized (pd) {
                ctx.pds.remove(pd.handle, pd);
            }
        }
        for (Mr mr : s.mrs.values()) {
            ctx.mrs.remove(mr.handle, mr);
        }
        synchronized (contexts) {
            ctx.members.remove(s);
            if (ctx.members.isEmpty()) {
                contexts.remove(ctx.id, ctx);
                LibC.close(ctx.tokenFd);
            }
        }
    }

    /** Contexts with at least one member, by their memfd's file (for tests). */
    int contextCount() {
        synchronized (contexts) {
            return contexts.size();
        }
    }

    // ---- SRQ ----

    private void createSrq(SessionObjects s, int seq, ByteBuffer p) throws NativeException {
        Pd pd = s.pd(p.getInt((int) CreateSrqReqDescriptor.OFF_PD));
        int maxWr = p.getInt((int) CreateSrqReqDescriptor.OFF_MAX_WR);
        int maxSge = p.getInt((int) CreateSrqReqDescriptor.OFF_MAX_SGE);
        int limit = p.getInt((int) CreateSrqReqDescriptor.OFF_SRQ_LIMIT);
        if (pd == null) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOENT);
            return;
        }
        // ibv_create_srq(3): EINVAL for values beyond the device's max_srq_wr / max_srq_sge.
        if (maxWr < 1 || maxWr > limits.maxSrqWr() || maxSge < 0 || maxSge > limits.maxSrqSge()) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.EINVAL);
            return;
        }
        int slots = pow2(maxWr);
        if (limit < 0 || limit > slots) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.EINVAL);
            return;
        }
        if (!charge(s, UserQuota.SRQS, 1)) {
            fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOMEM);
            return;
        }
        synchronized (this) {
            if (srqCount >= limits.maxSrq()) {
                discharge(s, UserQuota.SRQS, 1);
                fail(s, MRCE_OP_CREATE_SRQ, seq, Errno.ENOMEM);
                return;
            }
            srqCount++;
        }
        long size = Srq.mapSize(slots);
        SharedMemory shm = SharedMemory.create("mrce-srq", size, () -> {
            uncount(MRCE_OP_CREATE_SRQ);
            discharge(s, UserQuota.SRQS, 1);
        });
        int fd = shm.fd();
        MemorySegment map = shm.map();
        int sge = Math.max(1, maxSge);
        Srq srq = new Srq(s.newHandle(), s.space, pd, map, slots, sge);
        srq.asyncEvents = s.events;
        srq.arm(limit);
        use(pd, 1);
        s.srqs.put(srq.handle, srq);
        ByteBuffer r = resp(CreateSrqRespDescriptor.SIZE);
        r.putInt((int) CreateSrqRespDescriptor.OFF_HANDLE, srq.handle);
        r.putInt((int) CreateSrqRespDescriptor.OFF_MAX_WR, slots);
        r.putInt((int) CreateSrqRespDescriptor.OFF_MAX_SGE, sge);
        r.putLong((int) CreateSrqRespDescriptor.OFF_MAP_SIZE, size);
        s.session.respond(MRCE_OP_CREATE_SRQ, seq, 0, r, fd);
        LibC.close(fd);
    }

    private void modifySrq(SessionObjects s, int seq, ByteBuffer p) {
        Srq srq = s.srqs.get(p.getInt((int) ModifySrqReqDescriptor.OFF_HANDLE));
        if (srq == null) {
            fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.ENOENT);
            return;
        }
        int mask = p.getInt((int) ModifySrqReqDescriptor.OFF_ATTR_MASK);
        int limit = p.getInt((int) ModifySrqReqDescriptor.OFF_SRQ_LIMIT);
        // Resizing (IBV_SRQ_MAX_WR) is not supported: EINVAL, as for a device without
        // IBV_DEVICE_SRQ_RESIZE.
        if ((mask & ~SRQ_LIMIT) != 0) {
            fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.EINVAL);
            return;
        }
        if ((mask & SRQ_LIMIT) != 0) {
            if (limit < 0 || limit > srq.ring.slotCount()) {
                fail(s, MRCE_OP_MODIFY_SRQ, seq, Errno.EINVAL);
                return;
            }
            srq.arm(limit);
        }
        s.session.respond(MRCE_OP_MODIFY_SRQ, seq, 0, empty());
    }

    private void querySrq(SessionObjects s, int seq, ByteBuffer p) {
        Srq srq = s.srqs.get(p.getInt((int) HandleReqDescriptor.OFF_HANDLE));
        if (srq == null) {
            fail(s, MRCE_OP_QUERY_SRQ, seq, Errno.ENOENT);
            return;
        }
        ByteBuffer r = resp(SrqAttrDescriptor.SIZE);
        r.putInt((int) SrqAttrDescriptor.OFF_MAX_WR, srq.ring.slotCount());
        r.putInt((int) SrqAttrDescriptor.OFF_MAX_SGE, srq.maxSge);
        r.putInt((int) SrqAttrDescriptor.OFF_SRQ_LIMIT, srq.limit());
        s.session.respond(MRCE_OP_QUERY_SRQ, seq, 0, r);
    }

    private void destroySrq(SessionObjects s, int seq, ByteBuffer p) {
        // No QP uses it, so the engine no longer reads it: a QP's users count drops only after
        // the engine dropped that QP.
        destroyUnused(s, MRCE_OP_DESTROY_SRQ, seq, p, s.srqs, srq -> srq.qpUsers, srq -> {
            releaseSrq(srq);
            discharge(s, UserQuota.SRQS, 1);
        });
    }

    /** Caller holds the session lock; no QP uses the SRQ any more. */
    private void releaseSrq(Srq srq) {
        srq.asyncEvents = AsyncEventSink.NONE;
        use(srq.pd, -1);
        unmap(srq.mapping);
        uncount(MRCE_OP_CREATE_SRQ);
    }

    // ---- async events ----

    private static void getAsyncEvent(SessionObjects s, int seq) {
        long e = s.events.poll();
        if (e < 0) {
            fail(s, MRCE_OP_GET_ASYNC_EVENT, seq, Errno.EAGAIN);
            return;
        }
        ByteBuffer r = resp(AsyncEventDescriptor.SIZE);
        r.putInt((int) AsyncEventDescriptor.OFF_EVENT_TYPE, (int) (e >>> 32));
        r.putInt((int) AsyncEventDescriptor.OFF_ELEMENT, (int) e);
        s.session.respond(MRCE_OP_GET_ASYNC_EVENT, seq, 0, r);
    }

    /**
     * The netdev's carrier changed: every connection gets IBV_EVENT_PORT_ACTIVE or
     * IBV_EVENT_PORT_ERR for port 1, and later HELLOs report the new state. Thread-safe; a call
     * that repeats the current state does nothing.
     */
    private boolean currentLink() {
        if (java.nio.file.Files.isDirectory(java.nio.file.Path.of("/sys/class/net", net.ifname()))) {
            linkChanged(NetInfo.carrier(net.ifname()));
        }
        return linkUp;
    }

    public void linkChanged(boolean up) {
        synchronized (this) {
            if (up == linkUp) {
                return;
            }
            linkUp = up;
        }
        LOG.info("{}: link {}", devName, up ? "up (PORT_ACTIVE)" : "down (PORT_ERR)");
        for (SessionObjects s : sessions.values()) {
            synchronized (s) {
                if (s.hello && !s.closed) {
                    s.events.post(up ? Ibv.EVENT_PORT_ACTIVE : Ibv.EVENT_PORT_ERR, 1);
                }
            }
        }
    }

    // ---- rereg ----

    private void reregMr(SessionObjects s, int seq, ByteBuffer p) {
        int handle = p.getInt((int) ReregMrReqDescriptor.OFF_HANDLE);
        int flags = p.getInt((int) ReregMrReqDescriptor.OFF_FLAGS);
        Mr old = s.mrs.get(handle);
        if (old == null) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOENT);
            return;
        }
        int all = REREG_MR_CHANGE_TRANSLATION | REREG_MR_CHANGE_PD | REREG_MR_CHANGE_ACCESS;
        if (flags == 0 || (flags & ~all) != 0) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.EINVAL);
            return;
        }
        Pd pd = old.pd;
        if ((flags & REREG_MR_CHANGE_PD) != 0) {
            pd = s.pd(p.getInt((int) ReregMrReqDescriptor.OFF_PD));
            if (pd == null) {
                fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOENT);
                return;
            }
        }
        int access = (flags & REREG_MR_CHANGE_ACCESS) != 0
                ? p.getInt((int) ReregMrReqDescriptor.OFF_ACCESS) : old.access;
        boolean move = (flags & REREG_MR_CHANGE_TRANSLATION) != 0;
        long addr = move ? p.getLong((int) ReregMrReqDescriptor.OFF_ADDR) : old.addr;
        long length = move ? p.getLong((int) ReregMrReqDescriptor.OFF_LENGTH) : old.length;
        long iova = move ? p.getLong((int) ReregMrReqDescriptor.OFF_IOVA) : old.iova;
        int err = checkMr(pd, access, addr, length, iova);
        if (err == 0 && move && (access & Ibv.ACCESS_ON_DEMAND) == 0) {
            err = probe(s.space, addr, length);
        }
        if (err != 0) {
            fail(s, MRCE_OP_REREG_MR, seq, err);
            return;
        }
        long grown = pinned(access, length) - pinned(old.access, old.length);
        if (!charge(s, UserQuota.MR_BYTES, grown)) {
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOMEM);
            return;
        }
        // New keys first: if none is free the region stays as it was.
        Mr mr = mrTable.register(handle, pd, s.space, addr, length, iova, access);
        if (mr == null) {
            discharge(s, UserQuota.MR_BYTES, grown);
            fail(s, MRCE_OP_REREG_MR, seq, Errno.ENOMEM);
            return;
        }
        mrTable.remove(old);
        use(old.pd, -1);
        use(pd, 1);
        s.mrs.put(handle, mr);
        if (s.context != null) {
            s.context.mrs.put(handle, mr);
        }
        ByteBuffer r = resp(RegMrRespDescriptor.SIZE);
        r.putInt((int) RegMrRespDescriptor.OFF_HANDLE, mr.handle);
        r.putInt((int) RegMrRespDescriptor.OFF_LKEY, mr.lkey);
        r.putInt((int) RegMrRespDescriptor.OFF_RKEY, mr.rkey);
        LocalSession session = s.session;
        // As for DEREG_MR: answer once the engine revoked the old keys, so no copy touches the
        // old range (or uses the old rights) after ibv_rereg_mr returns.
        Runnable revoke = () -> {
            old.revoke();
            session.respond(MRCE_OP_REREG_MR, seq, 0, r);
        };
        while (!engine.submit(revoke)) {
            Thread.onSpinWait();
        }
    }

    /** Sessions with objects (for tests and stats). */
    public int sessionCount() {
        return sessions.size();
    }

    /**
     * The live objects per provider connection and in all, as JSON (for mrce-ctl objects and the
     * leak checks of the tests): {@code {"sessions":n,"totals":{...},"perSession":[...],"cmService":{...}}}.
     */
    public String objectsJson() {
        StringBuilder per = new StringBuilder(256);
        long pds = 0;
        long mrs = 0;
        long channels = 0;
        long cqs = 0;
        long qps = 0;
        int n = 0;
        for (SessionObjects s : new ArrayList<>(sessions.values())) {
            int p;
            int m;
            int ch;
            int c;
            int q;
            synchronized (s) {
                p = s.pds.size();
                m = s.mrs.size();
                ch = s.channels.size();
                c = s.cqs.size();
                q = s.qps.size();
            }
            pds += p;
            mrs += m;
            channels += ch;
            cqs += c;
            qps += q;
            if (n++ > 0) {
                per.append(',');
            }
            per.append("{\"id\":").append(s.session.id()).append(",\"pid\":").append(s.pid)
                    .append(",\"pds\":").append(p).append(",\"mrs\":").append(m)
                    .append(",\"compChannels\":").append(ch).append(",\"cqs\":").append(c)
                    .append(",\"qps\":").append(q).append('}');
        }
        return "{\"sessions\":" + n + ",\"totals\":{\"pds\":" + pds + ",\"mrs\":" + mrs
                + ",\"compChannels\":" + channels + ",\"cqs\":" + cqs + ",\"qps\":" + qps
                + "},\"perSession\":[" + per + "]" + cmServiceJson() + "}";
    }

    /** {@code ,"cmService":{...}} (the connection service's listens, binds and requests), or nothing without it. */
    private String cmServiceJson() {
        io.metaroce.control.cm.ServiceTable t = services;
        return t == null ? "" : ",\"cmService\":" + t.json();
    }

    @Override
    public void close() {
        for (SessionObjects s : new ArrayList<>(sessions.values())) {
            onSessionClosed(s.session);
        }
        watcher.close();
    }

    /** A memfd of {@code size} bytes mapped shared: the rings handed to a provider with the fd. */
    private record SharedMemory(int fd, MemorySegment map) {
        /** Creates and maps it; on failure closes what was made, runs {@code undo}, rethrows. */
        static SharedMemory create(String name, long size, Runnable undo) throws NativeException {
            int fd;
            try {
                fd = LibC.memfdCreate(name, LibC.MFD_CLOEXEC);
            } catch (NativeException e) {
                undo.run();
                throw e;
            }
            try {
                LibC.ftruncate(fd, size);
                return new SharedMemory(fd, LibC.mmap(size, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fd, 0));
            } catch (NativeException e) {
                LibC.close(fd);
                undo.run();
                throw e;
            }
        }
    }
}
