package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An open device ({@code struct ibv_context}), from {@link Device#open()} or
 * {@link Device#open(String)}. It creates protection domains, completion channels and completion
 * queues; closing it ({@code ibv_close_device}) requires those to be closed first.
 *
 * <pre>{@code
 * try (Context ctx = Device.open("mrce0");
 *      ProtectionDomain pd = ctx.allocateProtectionDomain();
 *      CompletionQueue cq = ctx.createCompletionQueue(64)) {
 *     ...
 * }
 * }</pre>
 *
 * <p><b>Thread safety:</b> safe to share; queries and creations may run on several threads, and
 * a concurrent {@link #close()} waits for those in flight or makes them throw.
 */
public final class Context extends VerbsObject {

    static final Native.Verb CLOSE_DEVICE = Native.verb("ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb QUERY_DEVICE =
            Native.verb("ibv_query_device", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final Native.Verb QUERY_PORT =
            Native.verb("ibv_query_port", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
    static final Native.Verb QUERY_GID =
            Native.verb("ibv_query_gid", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
    static final Native.Verb ALLOC_PD = Native.verb("ibv_alloc_pd", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Native.Verb CREATE_COMP_CHANNEL =
            Native.verb("ibv_create_comp_channel", FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final Native.Verb CREATE_CQ =
            Native.verb("ibv_create_cq", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));

    final MemorySegment ptr;
    private final String deviceName;
    /** context->ops entries, read once: the data-path verbs' targets. */
    final MemorySegment opPostSend;

    final MemorySegment opPostRecv;
    final MemorySegment opPostSrqRecv;
    final MemorySegment opPollCq;
    final MemorySegment opReqNotifyCq;
    /** Live CQs by native address, for completion events and async events. */
    final Map<Long, CompletionQueue> cqs = new ConcurrentHashMap<>();
    /** Live QPs and SRQs by native address, for async events. */
    final Map<Long, QueuePair> qps = new ConcurrentHashMap<>();

    final Map<Long, SharedReceiveQueue> srqs = new ConcurrentHashMap<>();
    static final Native.Verb GET_ASYNC_EVENT =
            Native.verb("ibv_get_async_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final Native.Verb ACK_ASYNC_EVENT = Native.verb("ibv_ack_async_event", FunctionDescriptor.ofVoid(ADDRESS));
    /** Waits on the non-blocking async_fd, or null when it could not be made non-blocking. */
    private final FdWaiter asyncWaiter;

    Context(MemorySegment ptr, String deviceName) {
        super();
        this.ptr = ptr.reinterpret(Abi.CONTEXT_SIZE);
        this.deviceName = deviceName;
        long ops = Abi.CONTEXT_OPS;
        this.opPostSend = this.ptr.get(ADDRESS, ops + Abi.CONTEXT_OPS_POST_SEND);
        this.opPostRecv = this.ptr.get(ADDRESS, ops + Abi.CONTEXT_OPS_POST_RECV);
        this.opPostSrqRecv = this.ptr.get(ADDRESS, ops + Abi.CONTEXT_OPS_POST_SRQ_RECV);
        this.opPollCq = this.ptr.get(ADDRESS, ops + Abi.CONTEXT_OPS_POLL_CQ);
        this.opReqNotifyCq = this.ptr.get(ADDRESS, ops + Abi.CONTEXT_OPS_REQ_NOTIFY_CQ);
        int asyncFd = this.ptr.get(JAVA_INT, Abi.CONTEXT_ASYNC_FD);
        this.asyncWaiter =
                Posix.setNonBlocking(asyncFd) == 0 ? new FdWaiter(asyncFd, this, "async-" + deviceName) : null;
        attach();
    }

    /** The device's name, e.g. {@code mrce0}. */
    public String deviceName() {
        return deviceName;
    }

    /** The native {@code struct ibv_context *}. */
    public MemorySegment address() {
        return ptr;
    }

    @Override
    public String describe() {
        return "Context " + deviceName;
    }

    @Override
    void wakeBlockedCalls() {
        if (asyncWaiter != null) {
            asyncWaiter.wake();
        }
    }

    @Override
    void destroy() {
        try {
            CLOSE_DEVICE.check(ptr);
        } catch (RuntimeException e) {
            if (asyncWaiter != null) {
                asyncWaiter.rearm();
            }
            throw e;
        }
        if (asyncWaiter != null) {
            asyncWaiter.close();
        }
    }

    /**
     * Takes one pending asynchronous event without waiting ({@code ibv_get_async_event} on the
     * non-blocking {@code async_fd}, then {@code ibv_ack_async_event}), or returns null.
     */
    public AsyncEvent tryGetAsyncEvent() {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ev = a.allocate(Abi.ASYNC_EVENT_SIZE, 8);
            try {
                GET_ASYNC_EVENT.check(ptr, ev);
            } catch (VerbsException e) {
                if (e.errno() == Native.Errno.EAGAIN) {
                    return null;
                }
                throw e;
            }
            int raw = ev.get(JAVA_INT, Abi.ASYNC_EVENT_EVENT_TYPE);
            AsyncEvent.Type type = AsyncEvent.Type.of(raw);
            VerbsObject element = null;
            int port = 0;
            if (type != null && type.isPort()) {
                port = ev.get(JAVA_INT, Abi.ASYNC_EVENT_ELEMENT);
            } else if (type != null) {
                long addr = ev.get(ADDRESS, Abi.ASYNC_EVENT_ELEMENT).address();
                element = type == AsyncEvent.Type.CQ_ERR
                        ? cqs.get(addr)
                        : type.isQp() ? qps.get(addr) : type.isSrq() ? srqs.get(addr) : null;
            }
            ACK_ASYNC_EVENT.invoke(ev);
            return new AsyncEvent(type, raw, element, port);
        } finally {
            release();
        }
    }

    /**
     * Waits up to {@code timeout} for the device's next asynchronous event (a QP fatal error, an
     * SRQ below its limit, a port going down, ...) and returns it, acknowledged; null on timeout.
     * A virtual thread parks meanwhile (one platform thread per context polls for all of them).
     *
     * @throws IllegalStateException when the context is closed, also by a close during the wait
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public AsyncEvent awaitAsyncEvent(java.time.Duration timeout) throws InterruptedException {
        if (asyncWaiter == null) {
            throw new UnsupportedOperationException("the async_fd of " + deviceName + " cannot be made non-blocking");
        }
        long deadline = System.nanoTime() + Math.max(0, timeout.toNanos());
        for (; ; ) {
            AsyncEvent e = tryGetAsyncEvent();
            if (e != null) {
                return e;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            if (asyncWaiter.await(left) == FdWaiter.WOKEN) {
                ensureOpen();
                throw new IllegalStateException(describe() + " is closed");
            }
        }
    }

    /** {@code ibv_query_device}. */
    public DeviceAttributes queryDevice() {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.DEVICE_ATTR_SIZE, 8);
            QUERY_DEVICE.check(ptr, s);
            return new DeviceAttributes(
                    s.getString(Abi.DEVICE_ATTR_FW_VER),
                    Long.reverseBytes(s.get(JAVA_LONG, Abi.DEVICE_ATTR_NODE_GUID)),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_VENDOR_ID),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_VENDOR_PART_ID),
                    s.get(JAVA_LONG, Abi.DEVICE_ATTR_MAX_MR_SIZE),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_QP),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_QP_WR),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_SGE),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_CQ),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_CQE),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_MR),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_PD),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_QP_RD_ATOM),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_QP_INIT_RD_ATOM),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_ATOMIC_CAP),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_AH),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_SRQ),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_SRQ_WR),
                    s.get(JAVA_INT, Abi.DEVICE_ATTR_MAX_SRQ_SGE),
                    s.get(JAVA_BYTE, Abi.DEVICE_ATTR_PHYS_PORT_CNT) & 0xff);
        } finally {
            release();
        }
    }

    /** {@code ibv_query_port} of port {@code port} (1-based). */
    public PortAttributes queryPort(int port) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            // ibv_port_attr, with room to spare for a newer libibverbs' larger struct
            MemorySegment s = a.allocate(Abi.PORT_ATTR_SIZE + 64, 8);
            QUERY_PORT.check(ptr, (byte) port, s);
            return new PortAttributes(
                    s.get(JAVA_INT, Abi.PORT_ATTR_STATE),
                    Mtu.ofValue(s.get(JAVA_INT, Abi.PORT_ATTR_MAX_MTU)),
                    Mtu.ofValue(s.get(JAVA_INT, Abi.PORT_ATTR_ACTIVE_MTU)),
                    s.get(JAVA_INT, Abi.PORT_ATTR_GID_TBL_LEN),
                    s.get(JAVA_SHORT, Abi.PORT_ATTR_LID) & 0xffff,
                    s.get(JAVA_SHORT, Abi.PORT_ATTR_SM_LID) & 0xffff,
                    s.get(JAVA_BYTE, Abi.PORT_ATTR_LINK_LAYER) & 0xff,
                    s.get(JAVA_INT, Abi.PORT_ATTR_MAX_MSG_SZ) & 0xffffffffL,
                    s.get(JAVA_INT, Abi.PORT_ATTR_PORT_CAP_FLAGS));
        } finally {
            release();
        }
    }

    /** {@code ibv_query_gid}: entry {@code index} of port {@code port}'s GID table. */
    public Gid queryGid(int port, int index) {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(Abi.GID_SIZE, 8);
            QUERY_GID.check(ptr, (byte) port, index, s);
            return Gid.read(s, 0);
        } finally {
            release();
        }
    }

    /** {@code ibv_alloc_pd}. */
    public ProtectionDomain allocateProtectionDomain() {
        acquire();
        try {
            return new ProtectionDomain(this, ALLOC_PD.create(ptr));
        } finally {
            release();
        }
    }

    /** {@code ibv_create_comp_channel}: a file descriptor that wakes when an armed CQ completes. */
    public CompletionChannel createCompletionChannel() {
        acquire();
        try {
            return new CompletionChannel(this, CREATE_COMP_CHANNEL.create(ptr));
        } finally {
            release();
        }
    }

    /** {@code ibv_create_cq} with at least {@code minEntries} entries, no channel, vector 0. */
    public CompletionQueue createCompletionQueue(int minEntries) {
        return createCompletionQueue(minEntries, null, 0);
    }

    /**
     * {@code ibv_create_cq}: at least {@code minEntries} entries; completion events go to
     * {@code channel} (may be null) once {@link CompletionQueue#requestNotify} armed the CQ.
     */
    public CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int compVector) {
        acquire();
        try {
            if (channel != null) {
                channel.acquire();
            }
            try {
                MemorySegment cq = CREATE_CQ.create(
                        ptr,
                        minEntries,
                        MemorySegment.NULL,
                        channel == null ? MemorySegment.NULL : channel.ptr,
                        compVector);
                return new CompletionQueue(this, channel, cq);
            } finally {
                if (channel != null) {
                    channel.release();
                }
            }
        } finally {
            release();
        }
    }
}
