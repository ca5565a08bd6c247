package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.io.File;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The librdmacm calls the binding needs, bound with FFM: event channels, ids, address and route
 * resolution, connect, listen, accept, reject, disconnect, and {@code rdma_init_qp_attr} for
 * queue pairs the application made with the binding's own verbs ({@code conn_param.qp_num}).
 * {@link io.metaroce.verbs.cm.RdmaCmConnectionService} builds a connection service on it.
 *
 * <p><b>Where the library comes from.</b> As for the verbs ({@link Verbs#definingObject}), each
 * {@code rdma_*} function is looked up with {@code dlsym(RTLD_DEFAULT)}: the definition a C
 * program would call, MetaRoCE's {@code libmetaroce-rdmacm.so} when {@code bin/mrce-run}
 * preloaded it. When nothing defines {@code rdma_create_id} yet, the library is loaded with
 * {@code dlopen(RTLD_GLOBAL)}: the path in {@code METAROCE_RDMACM} when set, else
 * {@code libmetaroce-rdmacm.so} next to the object that defines {@code ibv_open_device} (the
 * preloaded {@code libmetaroce.so}). Absent: {@link #available()} is false and every call throws
 * {@link UnsatisfiedLinkError} saying so.
 *
 * <p><b>Waiting.</b> Each {@link Channel}'s fd is non-blocking and waited on with the binding's
 * {@code FdWaiter} (a virtual thread parks; its carrier stays free), woken by
 * {@link Channel#close()}. Thread safety: a channel is read by one thread at a time (its lock);
 * an {@link Id} is used by one thread at a time.
 */
public final class RdmaCm {

    private RdmaCm() {}

    /** RDMA_PS_TCP. */
    public static final int PS_TCP = 0x0106;

    /** enum rdma_cm_event_type. */
    public static final int ADDR_RESOLVED = 0,
            ADDR_ERROR = 1,
            ROUTE_RESOLVED = 2,
            ROUTE_ERROR = 3,
            CONNECT_REQUEST = 4,
            CONNECT_RESPONSE = 5,
            CONNECT_ERROR = 6,
            UNREACHABLE = 7,
            REJECTED = 8,
            ESTABLISHED = 9,
            DISCONNECTED = 10,
            DEVICE_REMOVAL = 11,
            TIMEWAIT_EXIT = 15;

    private static final String[] EVENT_NAMES = {
        "ADDR_RESOLVED",
        "ADDR_ERROR",
        "ROUTE_RESOLVED",
        "ROUTE_ERROR",
        "CONNECT_REQUEST",
        "CONNECT_RESPONSE",
        "CONNECT_ERROR",
        "UNREACHABLE",
        "REJECTED",
        "ESTABLISHED",
        "DISCONNECTED",
        "DEVICE_REMOVAL",
        "MULTICAST_JOIN",
        "MULTICAST_ERROR",
        "ADDR_CHANGE",
        "TIMEWAIT_EXIT"
    };

    /** The name of an event type, as rdma_event_str without its prefix. */
    public static String eventName(int type) {
        return type >= 0 && type < EVENT_NAMES.length ? EVENT_NAMES[type] : "EVENT_" + type;
    }

    // struct rdma_cm_id / rdma_cm_event / rdma_conn_param (x86_64 and aarch64 LP64)
    private static final long ID_DST_SIN = 160;
    private static final long EV_ID = 0,
            EV_LISTEN_ID = 8,
            EV_EVENT = 16,
            EV_STATUS = 20,
            EV_PD = 24,
            EV_PD_LEN = 32,
            EV_QP_NUM = 40;
    private static final long CONN_PARAM_SIZE = 24;

    private static final Linker LINKER = Native.LINKER;
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    /** Why the library is not there, or null. */
    private static final String LOAD_ERROR = load();

    private static String load() {
        try {
            if (!Native.available()) {
                return "libibverbs is not loaded";
            }
            if (Native.find("rdma_create_id").isPresent()) {
                return null;
            }
            String path = System.getenv("METAROCE_RDMACM");
            if (path == null || path.isEmpty()) {
                Optional<String> verbs = Native.definingObject("ibv_open_device");
                if (verbs.isEmpty() || !verbs.get().contains("libmetaroce")) {
                    return "no rdma_cm library: nothing defines rdma_create_id, METAROCE_RDMACM is unset and"
                            + " libmetaroce.so is not preloaded (run under bin/mrce-run, which preloads"
                            + " libmetaroce-rdmacm.so, or set METAROCE_RDMACM to its path)";
                }
                path = new File(new File(verbs.get()).getParentFile(), "libmetaroce-rdmacm.so").getPath();
            }
            if (!new File(path).isFile()) {
                return "no rdma_cm library: " + path + " does not exist (build provider-c with librdmacm-dev's"
                        + " headers installed, or set METAROCE_RDMACM)";
            }
            MethodHandle dlopen = LINKER.downcallHandle(
                    LINKER.defaultLookup().find("dlopen").orElseThrow(),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
            try (Arena a = Arena.ofConfined()) {
                MemorySegment h = (MemorySegment) dlopen.invokeExact(a.allocateFrom(path), 0x2 | 0x100);
                if (h.address() == 0) {
                    return "dlopen(" + path + ") failed";
                }
            }
            return Native.find("rdma_create_id").isPresent() ? null : path + " does not define rdma_create_id";
        } catch (Throwable t) {
            return "loading the rdma_cm library failed: " + t;
        }
    }

    /** True when an rdma_cm library is loaded. */
    public static boolean available() {
        return LOAD_ERROR == null;
    }

    /** The object that defines the rdma_cm functions the binding calls (empty when none). */
    public static Optional<String> library() {
        return available() ? Native.definingObject("rdma_create_id") : Optional.empty();
    }

    private static final class H {
        static final MethodHandle CREATE_CHANNEL = fn("rdma_create_event_channel", FunctionDescriptor.of(ADDRESS));
        static final MethodHandle DESTROY_CHANNEL =
                fn("rdma_destroy_event_channel", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle CREATE_ID =
                fn("rdma_create_id", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle DESTROY_ID = fn("rdma_destroy_id", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle BIND = fn("rdma_bind_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle LISTEN = fn("rdma_listen", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle RESOLVE_ADDR =
                fn("rdma_resolve_addr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
        static final MethodHandle RESOLVE_ROUTE =
                fn("rdma_resolve_route", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle CONNECT = fn("rdma_connect", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle ACCEPT = fn("rdma_accept", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle REJECT =
                fn("rdma_reject", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_BYTE));
        static final MethodHandle ESTABLISH = fn("rdma_establish", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle DISCONNECT = fn("rdma_disconnect", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle MIGRATE = fn("rdma_migrate_id", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle INIT_QP_ATTR =
                fn("rdma_init_qp_attr", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle GET_EVENT =
                fn("rdma_get_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle ACK_EVENT = fn("rdma_ack_cm_event", FunctionDescriptor.of(JAVA_INT, ADDRESS));

        private static MethodHandle fn(String name, FunctionDescriptor fd) {
            MemorySegment sym = Native.find(name)
                    .orElseThrow(() -> new UnsatisfiedLinkError("the rdma_cm library does not define " + name));
            return LINKER.downcallHandle(sym, fd, Linker.Option.captureCallState("errno"));
        }
    }

    private static void ensure() {
        if (LOAD_ERROR != null) {
            throw new UnsatisfiedLinkError(LOAD_ERROR);
        }
    }

    private static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    private static VerbsException failure(String call, MemorySegment capture) {
        return new VerbsException(call, errno(capture));
    }

    private static MemorySegment sockaddr(Arena a, InetSocketAddress addr) throws UnknownHostException {
        InetAddress ip = addr.getAddress();
        if (ip == null) {
            throw new UnknownHostException(addr.getHostString());
        }
        if (!(ip instanceof Inet4Address)) {
            throw new IllegalArgumentException("rdma_cm on MetaRoCE is IPv4 only: " + ip);
        }
        MemorySegment s = a.allocate(16, 4); // struct sockaddr_in
        s.set(JAVA_SHORT_UNALIGNED, 0, (short) 2); // AF_INET
        s.set(JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), 2, (short) addr.getPort());
        MemorySegment.copy(ip.getAddress(), 0, s, JAVA_BYTE, 4, 4);
        return s;
    }

    // ------------------------------------------------------------------ channel

    /** One rdma_cm event, copied out and acknowledged. */
    public record Event(int type, int status, Id id, MemorySegment listenId, byte[] privateData, int qpNum) {
        public String name() {
            return eventName(type);
        }

        @Override
        public String toString() {
            return "RDMA_CM_EVENT_" + name() + " (status " + status + ")";
        }
    }

    /** An event channel: its fd non-blocking, waited on without pinning a carrier; close wakes a wait. */
    public static final class Channel implements AutoCloseable {
        final MemorySegment ptr;
        private final FdWaiter waiter;
        private final ReentrantLock lock = new ReentrantLock();
        private volatile boolean closed;

        public Channel() {
            ensure();
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cap = a.allocate(CAPTURE_LAYOUT);
                MemorySegment p = (MemorySegment) H.CREATE_CHANNEL.invokeExact(cap);
                if (p.address() == 0) {
                    throw failure("rdma_create_event_channel", cap);
                }
                this.ptr = p.reinterpret(4);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            int fd = ptr.get(JAVA_INT, 0);
            int r = Posix.setNonBlocking(fd);
            if (r < 0) {
                destroyChannel(ptr);
                throw new VerbsException("fcntl(O_NONBLOCK) on the event channel", -r);
            }
            this.waiter = new FdWaiter(fd, null, "rdma-cm-channel-" + fd);
        }

        /** The channel's fd. */
        public int fd() {
            return ptr.get(JAVA_INT, 0);
        }

        /**
         * The next event (acknowledged), waiting at most {@code timeoutNs} (negative: no limit).
         *
         * @throws SocketTimeoutException nothing came in time
         * @throws SocketException the channel was closed (also during the wait)
         */
        public Event next(long timeoutNs, String what) throws SocketException, SocketTimeoutException {
            long deadline = timeoutNs < 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutNs;
            lock.lock();
            try {
                for (; ; ) {
                    if (closed) {
                        throw new SocketException(what + ": closed");
                    }
                    Event e = poll();
                    if (e != null) {
                        return e;
                    }
                    long left = timeoutNs < 0 ? -1 : deadline - System.nanoTime();
                    if (timeoutNs >= 0 && left <= 0) {
                        throw new SocketTimeoutException(what + ": no event within " + timeoutNs / 1_000_000 + " ms");
                    }
                    int w;
                    try {
                        w = waiter.await(left);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new SocketException(what + ": interrupted");
                    }
                    if (w == FdWaiter.WOKEN) {
                        throw new SocketException(what + ": closed");
                    }
                }
            } finally {
                lock.unlock();
            }
        }

        /** rdma_get_cm_event on the non-blocking fd: an event, or null (EAGAIN). */
        private Event poll() {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cap = a.allocate(CAPTURE_LAYOUT);
                MemorySegment out = a.allocate(ADDRESS);
                int r = (int) H.GET_EVENT.invokeExact(cap, ptr, out);
                if (r != 0) {
                    int err = errno(cap);
                    if (err == 11) { // EAGAIN
                        return null;
                    }
                    throw new VerbsException("rdma_get_cm_event", err);
                }
                MemorySegment ev = out.get(ADDRESS, 0).reinterpret(64);
                int type = ev.get(JAVA_INT, EV_EVENT);
                int status = ev.get(JAVA_INT, EV_STATUS);
                MemorySegment id = ev.get(ADDRESS, EV_ID);
                MemorySegment listen = ev.get(ADDRESS, EV_LISTEN_ID);
                MemorySegment pdp = ev.get(ADDRESS, EV_PD);
                int len = Byte.toUnsignedInt(ev.get(JAVA_BYTE, EV_PD_LEN));
                byte[] pd =
                        pdp.address() == 0 ? new byte[0] : pdp.reinterpret(len).toArray(JAVA_BYTE);
                int qpn = ev.get(JAVA_INT, EV_QP_NUM);
                int ack = (int) H.ACK_EVENT.invokeExact(cap, ev);
                if (ack != 0) {
                    throw failure("rdma_ack_cm_event", cap);
                }
                return new Event(type, status, id.address() == 0 ? null : new Id(id), listen, pd, qpn);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /** Wakes a wait in {@link #next} for good (it throws {@link SocketException}), without freeing anything. */
        public void wake() {
            closed = true;
            waiter.wake();
        }

        /** Wakes a wait for good and returns once it left (destroy the channel's ids after this). */
        public void quiesce() {
            wake();
            lock.lock();
            lock.unlock();
        }

        /** Wakes a wait, then destroys the channel (after the wait left). Destroy its ids first. */
        @Override
        public void close() {
            wake();
            lock.lock();
            try {
                waiter.close();
                destroyChannel(ptr);
            } finally {
                lock.unlock();
            }
        }

        private static void destroyChannel(MemorySegment p) {
            try (Arena a = Arena.ofConfined()) {
                H.DESTROY_CHANNEL.invokeExact(a.allocate(CAPTURE_LAYOUT), p);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    // ------------------------------------------------------------------ id

    /** What {@code rdma_init_qp_attr} gives toward RTR and RTS: the peer's QPN, PSN, GID and this side's PSN. */
    public record QpAttributes(int destQpNum, int rqPsn, Gid destGid, int sqPsn) {}

    /** An rdma_cm id (struct rdma_cm_id *). */
    public static final class Id {
        final MemorySegment ptr;

        Id(MemorySegment p) {
            this.ptr = p.reinterpret(512);
        }

        /** rdma_create_id(channel, &id, NULL, RDMA_PS_TCP). */
        public static Id create(Channel channel) {
            ensure();
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cap = a.allocate(CAPTURE_LAYOUT);
                MemorySegment out = a.allocate(ADDRESS);
                int r = (int) H.CREATE_ID.invokeExact(cap, channel.ptr, out, MemorySegment.NULL, PS_TCP);
                if (r != 0) {
                    throw failure("rdma_create_id", cap);
                }
                return new Id(out.get(ADDRESS, 0));
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        private int call(String name, MethodHandle h, Object... args) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cap = a.allocate(CAPTURE_LAYOUT);
                Object[] all = new Object[args.length + 2];
                all[0] = cap;
                all[1] = ptr;
                for (int i = 0; i < args.length; i++) {
                    all[i + 2] = args[i] instanceof ArgFn f ? f.make(a) : args[i];
                }
                int r = (int) h.invokeWithArguments(all);
                return r == 0 ? 0 : errno(cap);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        /** An argument made in the call's arena. */
        @FunctionalInterface
        private interface ArgFn {
            MemorySegment make(Arena a) throws Exception;
        }

        private void check(String name, int err) {
            if (err != 0) {
                throw new VerbsException(name, err);
            }
        }

        /** rdma_bind_addr; returns the errno (0: bound). */
        public int bind(InetSocketAddress addr) {
            return call("rdma_bind_addr", H.BIND, (ArgFn) a -> sockaddr(a, addr));
        }

        /** rdma_listen; returns the errno. */
        public int listen(int backlog) {
            return call("rdma_listen", H.LISTEN, backlog);
        }

        /** rdma_resolve_addr(id, NULL, dst, timeoutMs); returns the errno. */
        public int resolveAddr(InetSocketAddress dst, int timeoutMs) {
            return call(
                    "rdma_resolve_addr", H.RESOLVE_ADDR, MemorySegment.NULL, (ArgFn) a -> sockaddr(a, dst), timeoutMs);
        }

        /** rdma_resolve_route; returns the errno. */
        public int resolveRoute(int timeoutMs) {
            return call("rdma_resolve_route", H.RESOLVE_ROUTE, timeoutMs);
        }

        private static MemorySegment param(
                Arena a, byte[] pd, int qpNum, int responderResources, int initiatorDepth, int retry, int rnrRetry) {
            MemorySegment p = a.allocate(CONN_PARAM_SIZE, 8);
            if (pd.length > 0) {
                p.set(ADDRESS, 0, a.allocateFrom(JAVA_BYTE, pd));
            }
            p.set(JAVA_BYTE, 8, (byte) pd.length);
            p.set(JAVA_BYTE, 9, (byte) responderResources);
            p.set(JAVA_BYTE, 10, (byte) initiatorDepth);
            p.set(JAVA_BYTE, 11, (byte) 1); // flow_control
            p.set(JAVA_BYTE, 12, (byte) retry);
            p.set(JAVA_BYTE, 13, (byte) rnrRetry);
            p.set(JAVA_INT, 16, qpNum);
            return p;
        }

        /** rdma_connect with a QP made elsewhere ({@code qp_num}); returns the errno. */
        public int connect(byte[] pd, int qpNum, int responderResources, int initiatorDepth, int retry, int rnrRetry) {
            return call("rdma_connect", H.CONNECT, (ArgFn)
                    a -> param(a, pd, qpNum, responderResources, initiatorDepth, retry, rnrRetry));
        }

        /** rdma_accept with a QP made elsewhere; returns the errno. */
        public int accept(byte[] pd, int qpNum, int responderResources, int initiatorDepth, int rnrRetry) {
            return call("rdma_accept", H.ACCEPT, (ArgFn)
                    a -> param(a, pd, qpNum, responderResources, initiatorDepth, 7, rnrRetry));
        }

        /** rdma_reject; returns the errno. */
        public int reject(byte[] pd) {
            return call(
                    "rdma_reject",
                    H.REJECT,
                    (ArgFn) a -> pd.length == 0 ? MemorySegment.NULL : a.allocateFrom(JAVA_BYTE, pd),
                    (byte) pd.length);
        }

        /** rdma_establish (after CONNECT_RESPONSE, the QP at RTS); returns the errno. */
        public int establish() {
            return call("rdma_establish", H.ESTABLISH);
        }

        /** rdma_disconnect; returns the errno. */
        public int disconnect() {
            return call("rdma_disconnect", H.DISCONNECT);
        }

        /** rdma_migrate_id: its later events go to {@code channel}. */
        public void migrate(Channel channel) {
            check("rdma_migrate_id", call("rdma_migrate_id", H.MIGRATE, channel.ptr));
        }

        /** rdma_destroy_id; returns the errno. */
        public int destroy() {
            return call("rdma_destroy_id", H.DESTROY_ID);
        }

        /** rdma_init_qp_attr toward RTR (the peer's QPN, PSN, GID) and RTS (this side's PSN). */
        public QpAttributes qpAttributes() {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment attr = a.allocate(Abi.QP_ATTR_SIZE, 8);
                MemorySegment mask = a.allocate(JAVA_INT);
                attr.set(JAVA_INT, Abi.QP_ATTR_QP_STATE, QueuePair.State.RTR.value());
                check("rdma_init_qp_attr(RTR)", call("rdma_init_qp_attr", H.INIT_QP_ATTR, attr, mask));
                int dqpn = attr.get(JAVA_INT, Abi.QP_ATTR_DEST_QP_NUM);
                int rqPsn = attr.get(JAVA_INT, Abi.QP_ATTR_RQ_PSN);
                byte[] gid = attr.asSlice(Abi.QP_ATTR_AH_ATTR + Abi.AH_ATTR_GRH + Abi.GLOBAL_ROUTE_DGID, 16)
                        .toArray(JAVA_BYTE);
                attr.fill((byte) 0);
                attr.set(JAVA_INT, Abi.QP_ATTR_QP_STATE, QueuePair.State.RTS.value());
                check("rdma_init_qp_attr(RTS)", call("rdma_init_qp_attr", H.INIT_QP_ATTR, attr, mask));
                return new QpAttributes(dqpn, rqPsn, Gid.of(gid), attr.get(JAVA_INT, Abi.QP_ATTR_SQ_PSN));
            }
        }

        /** The peer's address ({@code rdma_get_peer_addr}: route.addr.dst_sin). */
        public InetSocketAddress peerAddress() {
            int port =
                    Short.toUnsignedInt(ptr.get(JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), ID_DST_SIN + 2));
            byte[] ip = ptr.asSlice(ID_DST_SIN + 4, 4).toArray(JAVA_BYTE);
            try {
                return new InetSocketAddress(InetAddress.getByAddress(ip), port);
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }

        /** True when both wrap the same id. */
        public boolean same(MemorySegment other) {
            return other != null && other.address() == ptr.address();
        }

        @Override
        public String toString() {
            return "rdma_cm_id@0x" + Long.toHexString(ptr.address());
        }
    }
}
