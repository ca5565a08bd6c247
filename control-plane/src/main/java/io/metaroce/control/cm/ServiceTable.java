package io.metaroce.control.cm;

import io.metaroce.abi.CmAcceptReqDescriptor;
import io.metaroce.abi.CmConnectReqDescriptor;
import io.metaroce.abi.CmConnectRespDescriptor;
import io.metaroce.abi.CmGetRequestReqDescriptor;
import io.metaroce.abi.CmListenReqDescriptor;
import io.metaroce.abi.CmRejectReqDescriptor;
import io.metaroce.abi.CmRequestDescriptor;
import io.metaroce.abi.Errno;
import io.metaroce.abi.IpAddr;
import io.metaroce.control.ControlProtocol;
import io.metaroce.control.LocalSession;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's rdma_cm-style service (connection-manager.md, "Service"; control-protocol.md, ops
 * 20..25, 32): which local connection binds or listens on which service id, the requests that arrived
 * for them (held while the id is bound and not listened on yet), and the requests local
 * connections made to peers. It serves the CM_* ops of the local
 * control protocol and the {@link ConnectionManager.ServiceHandler} callbacks of the manager.
 *
 * <p>Threads: ops arrive on the control socket's thread, callbacks on the manager's event loop,
 * timers on a small scheduler; every piece of state is guarded by this object's monitor, held
 * briefly and never while waiting. Responses ({@link LocalSession#respond}) are thread-safe.
 */
public final class ServiceTable implements ConnectionManager.ServiceHandler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ServiceTable.class);

    /** CM_CONNECTs outstanding per connection at most; one more is EBUSY. */
    public static final int MAX_CONNECTS = 64;
    /** Requests handed to a connection and not answered yet, at most; more are refused SVC_BUSY. */
    public static final int MAX_DELIVERED = 1024;
    /** Requests held for a bound service id that does not listen yet, at most; more are refused SVC_BUSY. */
    public static final int MAX_HELD = ControlProtocol.CM_DEFAULT_BACKLOG;

    private static final byte[] NONE = new byte[0];
    private static final int MASK24 = 0xffffff;

    private final ConnectionManager cm;
    private final int defaultTimeoutMs;
    private final int holdMs;
    private final ScheduledThreadPoolExecutor timers;
    private final Map<Integer, Listen> listens = new HashMap<>();
    private final Map<Long, Sess> sessions = new HashMap<>();
    /** Kept requests by (peer ip, its request id), until answered or cancelled. */
    private final Map<Long, Incoming> byPeer = new HashMap<>();

    /**
     * {@code defaultTimeoutMs}: CM_CONNECT's timeout when the request gives 0, and how long a
     * request for a bound service id waits for its CM_LISTEN.
     */
    public ServiceTable(ConnectionManager cm, int defaultTimeoutMs) {
        this(cm, defaultTimeoutMs, defaultTimeoutMs);
    }

    /** {@code holdMs}: how long a request for a bound service id waits for its CM_LISTEN. */
    public ServiceTable(ConnectionManager cm, int defaultTimeoutMs, int holdMs) {
        this.cm = cm;
        this.defaultTimeoutMs = defaultTimeoutMs;
        this.holdMs = holdMs;
        this.timers = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "mrce-cm-service-timer");
            t.setDaemon(true);
            return t;
        });
        timers.setRemoveOnCancelPolicy(true);
    }

    /** A service id taken by a connection: bound (CM_BIND) until it listens (CM_LISTEN). */
    private static final class Listen {
        final int serviceId;
        final Sess owner;
        boolean listening;
        int backlog;
        int queued;
        /** Arrived while bound and not listening yet, in arrival order (at most MAX_HELD). */
        final ArrayDeque<Incoming> held = new ArrayDeque<>();

        Listen(int serviceId, Sess owner, boolean listening, int backlog) {
            this.serviceId = serviceId;
            this.owner = owner;
            this.listening = listening;
            this.backlog = backlog;
        }
    }

    private static final class Sess {
        final LocalSession session;
        /** Listened on. */
        final Set<Integer> services = new HashSet<>();
        /** Bound, not listened on yet. */
        final Set<Integer> binds = new HashSet<>();
        /** Arrived, not handed out yet (FIFO over all services of this connection). */
        final ArrayDeque<Incoming> queue = new ArrayDeque<>();
        /** Handed out by CM_GET_REQUEST, by handle, until CM_ACCEPT / CM_REJECT. */
        final Map<Integer, Incoming> delivered = new LinkedHashMap<>();

        final Set<CompletableFuture<CmMessage>> connects = new HashSet<>();
        int nextHandle = 1;
        /** The outstanding CM_GET_REQUEST's seq, or -1; and its timer. */
        long waiterSeq = -1;

        ScheduledFuture<?> waiterTimer;

        Sess(LocalSession session) {
            this.session = session;
        }

        int newHandle() {
            int h = nextHandle++;
            if (nextHandle == 0) {
                nextHandle = 1;
            }
            return h;
        }
    }

    private static final class Incoming {
        final int peerIp;
        final CmMessage.SvcRequest request;
        final Listen listen;
        int handle;
        boolean cancelled;
        /** While held for a bound service id: its end (SVC_REJECT NO_LISTENER). */
        ScheduledFuture<?> holdTimer;

        Incoming(int peerIp, CmMessage.SvcRequest request, Listen listen) {
            this.peerIp = peerIp;
            this.request = request;
            this.listen = listen;
        }
    }

    private static long key(int peerIp, int requestId) {
        return ((long) peerIp << 32) | Integer.toUnsignedLong(requestId);
    }

    // ---- local ops (control socket thread) ----

    /** Serves one CM_* op; {@code p} is the little-endian request struct. Always responds once. */
    public void onRequest(LocalSession session, int op, int seq, ByteBuffer payload) {
        ByteBuffer p = payload.slice().order(ByteOrder.LITTLE_ENDIAN);
        synchronized (this) {
            Sess s = sessions.computeIfAbsent(session.id(), id -> new Sess(session));
            switch (op) {
                case ControlProtocol.OP_CM_LISTEN -> listen(s, seq, p);
                case ControlProtocol.OP_CM_UNLISTEN -> unlisten(s, seq, p);
                case ControlProtocol.OP_CM_CONNECT -> connect(s, seq, p);
                case ControlProtocol.OP_CM_GET_REQUEST -> getRequest(s, seq, p);
                case ControlProtocol.OP_CM_ACCEPT -> accept(s, seq, p);
                case ControlProtocol.OP_CM_REJECT -> reject(s, seq, p);
                case ControlProtocol.OP_CM_BIND -> bind(s, seq, p);
                default -> fail(s, op, seq, Errno.EINVAL);
            }
        }
    }

    private static void fail(Sess s, int op, int seq, int errno) {
        s.session.respond(op, seq, errno, ByteBuffer.allocate(0));
    }

    private static void ok(Sess s, int op, int seq) {
        s.session.respond(op, seq, 0, ByteBuffer.allocate(0));
    }

    private void listen(Sess s, int seq, ByteBuffer p) {
        int service = p.getInt(CmListenReqDescriptor.OFF_SERVICE_ID);
        int backlog = p.getInt(CmListenReqDescriptor.OFF_BACKLOG);
        if (service == 0 || backlog < 0 || backlog > ControlProtocol.CM_MAX_BACKLOG) {
            fail(s, ControlProtocol.OP_CM_LISTEN, seq, Errno.EINVAL);
            return;
        }
        int limit = backlog == 0 ? ControlProtocol.CM_DEFAULT_BACKLOG : backlog;
        Listen l = listens.get(service);
        if (l == null) {
            listens.put(service, new Listen(service, s, true, limit));
        } else if (l.owner == s && !l.listening) {
            // bound by this connection: it listens now, and what arrived since the bind is its first requests
            l.listening = true;
            l.backlog = limit;
            s.binds.remove(service);
            for (Incoming x; (x = l.held.poll()) != null; ) {
                x.holdTimer.cancel(false);
                x.holdTimer = null;
                if (l.queued >= l.backlog || s.delivered.size() >= MAX_DELIVERED) {
                    byPeer.remove(key(x.peerIp, x.request.requestId()));
                    cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_BUSY, NONE);
                } else {
                    offer(s, x);
                }
            }
        } else {
            fail(s, ControlProtocol.OP_CM_LISTEN, seq, Errno.EADDRINUSE);
            return;
        }
        s.services.add(service);
        LOG.debug(
                "session {} (pid {}) listens on service {}",
                s.session.id(),
                s.session.pid(),
                Integer.toUnsignedString(service));
        ok(s, ControlProtocol.OP_CM_LISTEN, seq);
    }

    /**
     * Reserves a service id for this connection without listening (rdma_bind_addr): another
     * CM_BIND or CM_LISTEN of it is EADDRINUSE, and requests that arrive for it are held until
     * this connection's CM_LISTEN of it, at most {@link #MAX_HELD} of them and for the hold
     * time; CM_UNLISTEN, the connection's end or the hold time's end rejects them NO_LISTENER.
     */
    private void bind(Sess s, int seq, ByteBuffer p) {
        int service = p.getInt(CmListenReqDescriptor.OFF_SERVICE_ID);
        if (service == 0) {
            fail(s, ControlProtocol.OP_CM_BIND, seq, Errno.EINVAL);
            return;
        }
        if (listens.containsKey(service)) {
            fail(s, ControlProtocol.OP_CM_BIND, seq, Errno.EADDRINUSE);
            return;
        }
        listens.put(service, new Listen(service, s, false, 0));
        s.binds.add(service);
        ok(s, ControlProtocol.OP_CM_BIND, seq);
    }

    private void unlisten(Sess s, int seq, ByteBuffer p) {
        int service = p.getInt(CmListenReqDescriptor.OFF_SERVICE_ID);
        Listen l = listens.get(service);
        if (l == null || l.owner != s) {
            fail(s, ControlProtocol.OP_CM_UNLISTEN, seq, Errno.ENOENT);
            return;
        }
        dropListen(l);
        if (s.services.isEmpty() && s.waiterSeq >= 0) {
            // Nothing left to wait for: the outstanding CM_GET_REQUEST ends now.
            s.waiterTimer.cancel(false);
            fail(s, ControlProtocol.OP_CM_GET_REQUEST, (int) s.waiterSeq, Errno.ECANCELED);
            s.waiterSeq = -1;
        }
        ok(s, ControlProtocol.OP_CM_UNLISTEN, seq);
    }

    /**
     * Removes a listen or a bind; its requests not handed out yet are rejected LISTENER_GONE, the
     * held ones of a bind NO_LISTENER (nobody ever listened for them).
     */
    private void dropListen(Listen l) {
        listens.remove(l.serviceId);
        l.owner.services.remove(l.serviceId);
        l.owner.binds.remove(l.serviceId);
        for (Incoming x; (x = l.held.poll()) != null; ) {
            x.holdTimer.cancel(false);
            byPeer.remove(key(x.peerIp, x.request.requestId()));
            cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_NO_LISTENER, NONE);
        }
        for (Iterator<Incoming> it = l.owner.queue.iterator(); it.hasNext(); ) {
            Incoming x = it.next();
            if (x.listen == l) {
                it.remove();
                byPeer.remove(key(x.peerIp, x.request.requestId()));
                cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_LISTENER_GONE, NONE);
            }
        }
        l.queued = 0;
    }

    private void connect(Sess s, int seq, ByteBuffer p) {
        int op = ControlProtocol.OP_CM_CONNECT;
        int peerIp = networkOrder(p, CmConnectReqDescriptor.OFF_PEER_IPV4);
        if (peerIp == 0) {
            // an IPv6 peer: its address in peer_ipv6 (an IPv4-mapped one names the IPv4 peer)
            byte[] v6 = new byte[16];
            p.get(CmConnectReqDescriptor.OFF_PEER_IPV6, v6);
            peerIp = IpAddr.fromGid(v6);
        }
        int service = p.getInt(CmConnectReqDescriptor.OFF_SERVICE_ID);
        int qpn = p.getInt(CmConnectReqDescriptor.OFF_QPN);
        int psn = p.getInt(CmConnectReqDescriptor.OFF_PSN);
        long timeout = Integer.toUnsignedLong(p.getInt(CmConnectReqDescriptor.OFF_TIMEOUT_MS));
        byte[] pd =
                privateData(p, CmConnectReqDescriptor.OFF_PRIVATE_DATA_LEN, CmConnectReqDescriptor.OFF_PRIVATE_DATA);
        if (peerIp == 0
                || service == 0
                || (qpn & ~MASK24) != 0
                || (psn & ~MASK24) != 0
                || pd == null
                || timeout > Integer.MAX_VALUE) {
            fail(s, op, seq, Errno.EINVAL);
            return;
        }
        if (s.connects.size() >= MAX_CONNECTS) {
            fail(s, op, seq, Errno.EBUSY);
            return;
        }
        byte[] gid = new byte[16];
        p.get(CmConnectReqDescriptor.OFF_GID, gid);
        CompletableFuture<CmMessage> f =
                cm.requestService(peerIp, service, qpn, psn, gid, pd, timeout == 0 ? defaultTimeoutMs : (int) timeout);
        s.connects.add(f);
        f.whenComplete((answer, error) -> connected(s, seq, f, answer, error));
    }

    private void connected(Sess s, int seq, CompletableFuture<CmMessage> f, CmMessage answer, Throwable error) {
        synchronized (this) {
            if (!s.connects.remove(f)) {
                return; // the connection closed meanwhile
            }
        }
        int op = ControlProtocol.OP_CM_CONNECT;
        if (error != null) {
            Throwable c = cause(error);
            if (c instanceof CancellationException) {
                return;
            }
            fail(s, op, seq, errno(c));
            return;
        }
        switch (answer) {
            case CmMessage.SvcReply r -> {
                ByteBuffer b = ByteBuffer.allocate(CmConnectRespDescriptor.SIZE).order(ByteOrder.LITTLE_ENDIAN);
                b.putInt(CmConnectRespDescriptor.OFF_RESULT, ControlProtocol.CM_ACCEPTED);
                b.putInt(CmConnectRespDescriptor.OFF_QPN, r.qpn());
                b.putInt(CmConnectRespDescriptor.OFF_PSN, r.psn());
                b.put(CmConnectRespDescriptor.OFF_GID, r.gid());
                putPrivateData(
                        b,
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA_LEN,
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA,
                        r.privateData());
                s.session.respond(op, seq, 0, b);
            }
            case CmMessage.SvcReject r
            when r.reason() == CmMessage.SVC_REJECTED -> {
                ByteBuffer b = ByteBuffer.allocate(CmConnectRespDescriptor.SIZE).order(ByteOrder.LITTLE_ENDIAN);
                b.putInt(CmConnectRespDescriptor.OFF_RESULT, ControlProtocol.CM_REJECTED);
                putPrivateData(
                        b,
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA_LEN,
                        CmConnectRespDescriptor.OFF_PRIVATE_DATA,
                        r.privateData());
                s.session.respond(op, seq, 0, b);
            }
            case CmMessage.SvcReject r ->
                fail(
                        s,
                        op,
                        seq,
                        switch (r.reason()) {
                            case CmMessage.SVC_LISTENER_GONE -> Errno.ECONNRESET;
                            case CmMessage.SVC_BUSY -> Errno.ENOBUFS;
                            default -> Errno.ECONNREFUSED; // SVC_NO_LISTENER
                        });
            default -> fail(s, op, seq, Errno.EINVAL);
        }
    }

    private void getRequest(Sess s, int seq, ByteBuffer p) {
        int op = ControlProtocol.OP_CM_GET_REQUEST;
        long timeout = Integer.toUnsignedLong(p.getInt(CmGetRequestReqDescriptor.OFF_TIMEOUT_MS));
        if (s.services.isEmpty()) {
            fail(s, op, seq, Errno.EINVAL);
            return;
        }
        if (s.waiterSeq >= 0) {
            fail(s, op, seq, Errno.EBUSY);
            return;
        }
        if (!s.queue.isEmpty()) {
            Incoming x = s.queue.poll();
            x.listen.queued--;
            deliver(s, seq, x);
            return;
        }
        if (timeout == 0) {
            fail(s, op, seq, Errno.EAGAIN);
            return;
        }
        s.waiterSeq = Integer.toUnsignedLong(seq);
        s.waiterTimer = timers.schedule(
                () -> {
                    synchronized (this) {
                        if (s.waiterSeq == Integer.toUnsignedLong(seq)) {
                            s.waiterSeq = -1;
                            fail(s, op, seq, Errno.EAGAIN);
                        }
                    }
                },
                timeout,
                TimeUnit.MILLISECONDS);
    }

    /** Hands {@code x} (taken off the queue, or just arrived) to the connection's CM_GET_REQUEST {@code seq}. */
    private void deliver(Sess s, int seq, Incoming x) {
        x.handle = s.newHandle();
        s.delivered.put(x.handle, x);
        CmMessage.SvcRequest r = x.request;
        ByteBuffer b = ByteBuffer.allocate(CmRequestDescriptor.SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(CmRequestDescriptor.OFF_REQUEST, x.handle);
        b.putInt(CmRequestDescriptor.OFF_SERVICE_ID, r.serviceId());
        b.putInt(CmRequestDescriptor.OFF_QPN, r.qpn());
        b.putInt(CmRequestDescriptor.OFF_PSN, r.psn());
        b.put(CmRequestDescriptor.OFF_GID, r.gid());
        b.order(ByteOrder.BIG_ENDIAN)
                .putInt(CmRequestDescriptor.OFF_PEER_IPV4, IpAddr.isV6(x.peerIp) ? 0 : x.peerIp)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.put(CmRequestDescriptor.OFF_PEER_IPV6, IpAddr.gid(x.peerIp));
        putPrivateData(
                b, CmRequestDescriptor.OFF_PRIVATE_DATA_LEN, CmRequestDescriptor.OFF_PRIVATE_DATA, r.privateData());
        s.session.respond(ControlProtocol.OP_CM_GET_REQUEST, seq, 0, b);
    }

    private void accept(Sess s, int seq, ByteBuffer p) {
        int op = ControlProtocol.OP_CM_ACCEPT;
        int handle = p.getInt(CmAcceptReqDescriptor.OFF_REQUEST);
        int qpn = p.getInt(CmAcceptReqDescriptor.OFF_QPN);
        int psn = p.getInt(CmAcceptReqDescriptor.OFF_PSN);
        byte[] pd = privateData(p, CmAcceptReqDescriptor.OFF_PRIVATE_DATA_LEN, CmAcceptReqDescriptor.OFF_PRIVATE_DATA);
        Incoming x = s.delivered.get(handle);
        if (x == null) {
            fail(s, op, seq, Errno.ENOENT);
            return;
        }
        if ((qpn & ~MASK24) != 0 || (psn & ~MASK24) != 0 || pd == null) {
            fail(s, op, seq, Errno.EINVAL); // the request stays: the application may answer it properly
            return;
        }
        s.delivered.remove(handle);
        if (x.cancelled) {
            fail(s, op, seq, Errno.ECONNABORTED);
            return;
        }
        byPeer.remove(key(x.peerIp, x.request.requestId()));
        byte[] gid = new byte[16];
        p.get(CmAcceptReqDescriptor.OFF_GID, gid);
        cm.acceptService(x.peerIp, x.request.requestId(), qpn, psn, gid, pd).whenComplete((v, error) -> {
            if (error == null) {
                ok(s, op, seq);
            } else {
                fail(s, op, seq, errno(cause(error)));
            }
        });
    }

    private void reject(Sess s, int seq, ByteBuffer p) {
        int op = ControlProtocol.OP_CM_REJECT;
        int handle = p.getInt(CmRejectReqDescriptor.OFF_REQUEST);
        byte[] pd = privateData(p, CmRejectReqDescriptor.OFF_PRIVATE_DATA_LEN, CmRejectReqDescriptor.OFF_PRIVATE_DATA);
        Incoming x = s.delivered.get(handle);
        if (x == null) {
            fail(s, op, seq, Errno.ENOENT);
            return;
        }
        if (pd == null) {
            fail(s, op, seq, Errno.EINVAL);
            return;
        }
        s.delivered.remove(handle);
        if (x.cancelled) {
            fail(s, op, seq, Errno.ECONNABORTED);
            return;
        }
        byPeer.remove(key(x.peerIp, x.request.requestId()));
        cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_REJECTED, pd);
        ok(s, op, seq);
    }

    /** The connection is gone: its listens, kept requests, outstanding connects and long poll go too. */
    public void onSessionClosed(LocalSession session) {
        List<CompletableFuture<CmMessage>> connects;
        synchronized (this) {
            Sess s = sessions.remove(session.id());
            if (s == null) {
                return;
            }
            for (Integer service : new ArrayList<>(s.services)) {
                dropListen(listens.get(service));
            }
            for (Integer service : new ArrayList<>(s.binds)) {
                dropListen(listens.get(service));
            }
            for (Incoming x : s.delivered.values()) {
                if (!x.cancelled) {
                    byPeer.remove(key(x.peerIp, x.request.requestId()));
                    cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_LISTENER_GONE, NONE);
                }
            }
            s.delivered.clear();
            if (s.waiterTimer != null) {
                s.waiterTimer.cancel(false);
            }
            s.waiterSeq = -1;
            connects = new ArrayList<>(s.connects);
            s.connects.clear();
        }
        for (CompletableFuture<CmMessage> f : connects) {
            f.cancel(false); // the manager withdraws the request (SVC_CANCEL CANCELLED)
        }
    }

    // ---- manager's event loop ----

    @Override
    public int onServiceRequest(int peerIp, CmMessage.SvcRequest r) {
        synchronized (this) {
            Listen l = listens.get(r.serviceId());
            if (l == null) {
                return CmMessage.SVC_NO_LISTENER;
            }
            if (!l.listening) {
                if (l.held.size() >= MAX_HELD) {
                    return CmMessage.SVC_BUSY;
                }
                Incoming x = new Incoming(peerIp, r, l);
                byPeer.put(key(peerIp, r.requestId()), x);
                l.held.add(x);
                x.holdTimer = timers.schedule(() -> holdEnded(x), holdMs, TimeUnit.MILLISECONDS);
                return 0;
            }
            Sess s = l.owner;
            if (l.queued >= l.backlog || s.delivered.size() >= MAX_DELIVERED) {
                return CmMessage.SVC_BUSY;
            }
            Incoming x = new Incoming(peerIp, r, l);
            byPeer.put(key(peerIp, r.requestId()), x);
            offer(s, x);
            return 0;
        }
    }

    /** Hands the kept request {@code x} to the connection's waiting CM_GET_REQUEST, else queues it. */
    private void offer(Sess s, Incoming x) {
        if (s.waiterSeq >= 0) {
            int seq = (int) s.waiterSeq;
            s.waiterSeq = -1;
            s.waiterTimer.cancel(false);
            deliver(s, seq, x);
        } else {
            s.queue.add(x);
            x.listen.queued++;
        }
    }

    /** The hold time of {@code x} ended before its service id was listened on: NO_LISTENER. */
    private synchronized void holdEnded(Incoming x) {
        if (x.holdTimer != null && x.listen.held.remove(x)) {
            byPeer.remove(key(x.peerIp, x.request.requestId()));
            cm.rejectService(x.peerIp, x.request.requestId(), CmMessage.SVC_NO_LISTENER, NONE);
        }
    }

    @Override
    public void onServiceCancel(int peerIp, int requestId, int reason) {
        synchronized (this) {
            Incoming x = byPeer.remove(key(peerIp, requestId));
            if (x == null) {
                return;
            }
            if (x.holdTimer != null) {
                x.listen.held.remove(x);
                x.holdTimer.cancel(false);
            } else if (x.handle == 0) {
                x.listen.owner.queue.remove(x);
                x.listen.queued = Math.max(0, x.listen.queued - 1);
            } else {
                x.cancelled = true; // its CM_ACCEPT / CM_REJECT gets ECONNABORTED
            }
        }
    }

    // ---- helpers ----

    /** Services listened on (for tests and mrce-ctl). */
    public synchronized int listening() {
        int n = 0;
        for (Listen l : listens.values()) {
            n += l.listening ? 1 : 0;
        }
        return n;
    }

    /** Services bound and not listened on yet (for tests and mrce-ctl). */
    public synchronized int bound() {
        return listens.size() - listening();
    }

    /** Requests held for bound services (for tests and mrce-ctl); {@link #kept()} counts them too. */
    public synchronized int held() {
        int n = 0;
        for (Listen l : listens.values()) {
            n += l.held.size();
        }
        return n;
    }

    /** The counts above as a JSON object (mrce-ctl objects' {@code cmService}). */
    public synchronized String json() {
        return "{\"listening\":" + listening() + ",\"bound\":" + bound() + ",\"held\":" + held() + ",\"kept\":" + kept()
                + ",\"connecting\":" + connecting() + "}";
    }

    /** Requests kept for local listeners, handed out or not (for tests and mrce-ctl). */
    public synchronized int kept() {
        return byPeer.size();
    }

    /** Local CM_CONNECTs outstanding (for tests and mrce-ctl). */
    public synchronized int connecting() {
        int n = 0;
        for (Sess s : sessions.values()) {
            n += s.connects.size();
        }
        return n;
    }

    private static Throwable cause(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    private static int errno(Throwable t) {
        if (t instanceof CmRejectedException e) {
            return switch (e.reason()) {
                case CmMessage.REASON_TIMEOUT -> Errno.ETIMEDOUT;
                case CmMessage.REASON_SHUTDOWN -> Errno.ESHUTDOWN;
                case CmMessage.REASON_DESTROYED -> Errno.ECONNABORTED;
                default -> Errno.ECONNRESET; // the peer daemon was lost or restarted
            };
        }
        LOG.warn("connection service: unexpected failure", t);
        return Errno.ECONNRESET;
    }

    /** The private data of a request struct, or null when its length is beyond the maximum. */
    private static byte[] privateData(ByteBuffer p, int lenOffset, int dataOffset) {
        int n = p.getInt(lenOffset);
        if (n < 0 || n > ControlProtocol.CM_PRIVATE_DATA_MAX) {
            return null;
        }
        byte[] pd = new byte[n];
        p.get(dataOffset, pd);
        return pd;
    }

    private static void putPrivateData(ByteBuffer b, int lenOffset, int dataOffset, byte[] pd) {
        b.putInt(lenOffset, pd.length);
        b.put(dataOffset, pd);
    }

    /** A u32 in network order (the bytes of the address, in order) at {@code off}. */
    private static int networkOrder(ByteBuffer p, int off) {
        return ((p.get(off) & 0xff) << 24)
                | ((p.get(off + 1) & 0xff) << 16)
                | ((p.get(off + 2) & 0xff) << 8)
                | (p.get(off + 3) & 0xff);
    }

    @Override
    public void close() {
        timers.shutdownNow();
    }
}
