package io.metaroce.nic.verbs;

import static io.metaroce.abi.AbiConstants.*;
import static io.metaroce.nic.verbs.OpSupport.empty;
import static io.metaroce.nic.verbs.PdMrOps.pinned;

import io.metaroce.abi.Errno;
import io.metaroce.control.LocalControlHandler;
import io.metaroce.control.LocalSession;
import io.metaroce.nic.abi.Ibv;
import io.metaroce.nic.dma.ProcessMemory;
import io.metaroce.nic.engine.EngineAgent;
import io.metaroce.nic.model.CompChannel;
import io.metaroce.nic.model.Cq;
import io.metaroce.nic.model.Mr;
import io.metaroce.nic.model.MrTable;
import io.metaroce.nic.model.Srq;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import io.metaroce.nic.transport.Qp;
import io.metaroce.nic.transport.Wire;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves every op of the local control protocol (mrce_abi.h). Object tables live per session, so
 * a session never sees another's handles. Ops that touch a QP after creation (modify, query,
 * destroy) and session teardown run on the engine thread as commands, which respond when done.
 *
 * <p>This class owns the sessions and their teardown, the link state and the dispatch; each op is
 * served by the handler of its object: {@link ConnectionOps} (HELLO, async events),
 * {@link PdMrOps}, {@link CqOps} (CQs and completion channels), {@link QpOps}, {@link SrqOps},
 * {@link ImportOps} (shared contexts), and the CM ops by the connection manager's
 * {@code ServiceTable}. The state they share sits in small classes: {@link UserUsage} (per-user
 * quotas), {@link DeviceCounts} and {@link QpnAllocator} (device-wide counts against the
 * {@link Limits}), {@link SharedMemory} (the rings' memfds), {@link OpSupport} (replies).
 */
public final class VerbsService implements LocalControlHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(VerbsService.class);
    public static final String DEV_NAME = "mrce0";
    /** The verbs device name HELLO gives (mrce-nicd --device NAME=IF); {@link #DEV_NAME} by default. */
    private volatile String devName = DEV_NAME;

    public static final int VENDOR_ID = 0x4d5243;

    private final EngineAgent engine;
    private final NetInfo net;
    private final ConcurrentHashMap<Long, SessionObjects> sessions = new ConcurrentHashMap<>();
    private final UserUsage usage = new UserUsage();
    private final DeviceCounts counts = new DeviceCounts();
    private final QpnAllocator qpns;
    private volatile boolean linkUp;
    /** The connection manager's rdma_cm-style service (ops 20..25); null when the manager is off. */
    private volatile io.metaroce.control.cm.ServiceTable services;
    /** Ends a session the moment its process exits, whoever holds the socket then. */
    private final ProcessWatcher watcher;

    private final ConnectionOps connectionOps;
    private final PdMrOps pdMrOps;
    private final CqOps cqOps;
    private final QpOps qpOps;
    private final SrqOps srqOps;
    private final ImportOps importOps;

    /** Names the device this service is (a 1..15 character name, checked by the daemon's options). */
    public void devName(String name) {
        this.devName = name;
    }

    public String devName() {
        return devName;
    }

    public VerbsService(EngineAgent engine, MrTable mrTable, NetInfo net, int udpPort, Limits limits) {
        this.engine = engine;
        this.net = net;
        this.linkUp = net.linkUp();
        try {
            ProcessMemory.warmUp();
            this.watcher = new ProcessWatcher(this::processExited);
        } catch (NativeException e) {
            throw new IllegalStateException("cannot watch client processes: " + e.getMessage(), e);
        }
        this.qpns = new QpnAllocator(limits.maxQp());
        this.connectionOps =
                new ConnectionOps(engine, net, udpPort, limits, usage, watcher, this::devName, this::currentLink);
        this.pdMrOps = new PdMrOps(engine, mrTable, limits, usage, counts);
        this.cqOps = new CqOps(limits, usage, counts);
        this.qpOps = new QpOps(engine, net, udpPort, limits, usage, qpns);
        this.srqOps = new SrqOps(limits, usage, counts);
        this.importOps = new ImportOps(this::devName);
    }

    /** Per-user quotas from now on (existing objects are kept). */
    public void userQuota(UserQuota q) {
        usage.quota(q);
    }

    /** Tests: QPNs from {@code r} instead of SecureRandom (null: sequential QPNs, as before). */
    public void identifierRandom(java.util.Random r) {
        qpns.random(r);
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
        SessionObjects s = sessions.computeIfAbsent(session.id(), id -> new SessionObjects(session, session.pid()));
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
                    case MRCE_OP_HELLO -> connectionOps.hello(s, seq, p);
                    case MRCE_OP_ALLOC_PD -> pdMrOps.allocPd(s, seq);
                    case MRCE_OP_DEALLOC_PD -> pdMrOps.deallocPd(s, seq, p);
                    case MRCE_OP_REG_MR -> pdMrOps.regMr(s, seq, p);
                    case MRCE_OP_DEREG_MR -> pdMrOps.deregMr(s, seq, p);
                    case MRCE_OP_CREATE_COMP_CHANNEL -> cqOps.createChannel(s, seq);
                    case MRCE_OP_DESTROY_COMP_CHANNEL -> cqOps.destroyChannel(s, seq, p);
                    case MRCE_OP_CREATE_CQ -> cqOps.createCq(s, seq, p);
                    case MRCE_OP_DESTROY_CQ -> cqOps.destroyCq(s, seq, p);
                    case MRCE_OP_CREATE_QP -> qpOps.createQp(s, seq, p);
                    case MRCE_OP_MODIFY_QP -> qpOps.modifyQp(s, seq, p);
                    case MRCE_OP_QUERY_QP -> qpOps.queryQp(s, seq, p);
                    case MRCE_OP_DESTROY_QP -> qpOps.destroyQp(s, seq, p);
                    case MRCE_OP_CREATE_SRQ -> srqOps.createSrq(s, seq, p);
                    case MRCE_OP_MODIFY_SRQ -> srqOps.modifySrq(s, seq, p);
                    case MRCE_OP_QUERY_SRQ -> srqOps.querySrq(s, seq, p);
                    case MRCE_OP_DESTROY_SRQ -> srqOps.destroySrq(s, seq, p);
                    case MRCE_OP_GET_ASYNC_EVENT -> ConnectionOps.getAsyncEvent(s, seq);
                    case MRCE_OP_REREG_MR -> pdMrOps.reregMr(s, seq, p);
                    case MRCE_OP_CONTEXT_FD -> importOps.contextFd(s, seq);
                    case MRCE_OP_IMPORT_CONTEXT -> importOps.importContext(s, seq, p);
                    case MRCE_OP_IMPORT_PD -> importOps.importPd(s, seq, p);
                    case MRCE_OP_UNIMPORT_PD -> importOps.unimportPd(s, seq, p);
                    case MRCE_OP_IMPORT_MR -> importOps.importMr(s, seq, p);
                    case MRCE_OP_UNIMPORT_MR -> ImportOps.unimportMr(s, seq, p);
                    case MRCE_OP_SHARE_MR -> pdMrOps.shareMr(s, seq, p);
                    case MRCE_OP_CM_LISTEN,
                            MRCE_OP_CM_UNLISTEN,
                            MRCE_OP_CM_CONNECT,
                            MRCE_OP_CM_GET_REQUEST,
                            MRCE_OP_CM_ACCEPT,
                            MRCE_OP_CM_REJECT,
                            MRCE_OP_CM_BIND -> {
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
            LOG.warn("op {} of session {} (pid {}): {}", op, session.id(), session.pid(), e.getMessage());
            session.respond(op, seq, e.errno(), empty());
        }
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
                importOps.leaveContext(s);
                for (Qp qp : qps) {
                    qpOps.releaseQp(qp);
                    usage.discharge(s, UserQuota.QPS, 1);
                }
                for (Cq cq : s.cqs.values()) {
                    cqOps.releaseCq(cq);
                    usage.discharge(s, UserQuota.CQ_ENTRIES, cq.slots());
                    usage.discharge(s, UserQuota.CQS, 1);
                }
                s.cqs.clear();
                for (Srq srq : s.srqs.values()) {
                    srqOps.releaseSrq(srq);
                    usage.discharge(s, UserQuota.SRQS, 1);
                }
                s.srqs.clear();
                for (CompChannel ch : s.channels.values()) {
                    LibC.close(ch.eventFd);
                }
                s.channels.clear();
                for (Mr mr : s.mrs.values()) {
                    mr.revoke();
                    pdMrOps.releaseMr(mr);
                    usage.discharge(s, UserQuota.MRS, 1);
                    usage.discharge(s, UserQuota.MR_BYTES, pinned(mr.access, mr.length));
                }
                s.mrs.clear();
                for (int i = 0; i < s.pds.size(); i++) {
                    counts.uncount(MRCE_OP_ALLOC_PD);
                }
                usage.discharge(s, UserQuota.PDS, s.pds.size());
                s.pds.clear();
                if (s.hello) {
                    usage.discharge(s, UserQuota.CONNECTIONS, 1);
                }
                if (s.memory != null) {
                    s.memory.close(); // on the engine thread: no copy is using the descriptor
                }
                if (s.doorbellPage != null) {
                    engine.removeDoorbellPage(s.doorbellPage); // on the engine thread, as reclaim runs
                    OpSupport.unmap(s.doorbellPage);
                    s.doorbellPage = null;
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

    /** Contexts with at least one member, by their memfd's file (for tests). */
    int contextCount() {
        return importOps.contextCount();
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

    /** Sessions with objects (for tests and stats). */
    public int sessionCount() {
        return sessions.size();
    }

    /**
     * The live objects per provider connection and in all, as JSON (for mrce-ctl objects and the
     * leak checks of the tests): {@code {"sessions":n,"totals":{...},"perSession":[...],"cmService":{...}}}.
     */
    public String objectsJson() {
        return ObjectsJson.of(sessions.values(), services);
    }

    @Override
    public void close() {
        for (SessionObjects s : new ArrayList<>(sessions.values())) {
            onSessionClosed(s.session);
        }
        watcher.close();
    }
}
