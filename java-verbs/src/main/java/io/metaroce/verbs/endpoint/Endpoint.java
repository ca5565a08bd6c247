package io.metaroce.verbs.endpoint;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.metaroce.verbs.AccessFlag;
import io.metaroce.verbs.CompletionPoller;
import io.metaroce.verbs.MemoryRegion;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RecvWorkRequest;
import io.metaroce.verbs.RegisteredBufferPool;
import io.metaroce.verbs.SendWorkRequest;
import io.metaroce.verbs.WorkCompletion;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.QpEndpoint;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * One end of a connected RC queue pair, with everything it needs: its queue pair (on its
 * {@link EndpointGroup}'s completion queue), registered send and receive buffers, optionally a
 * region it exposes to the peer, and the peer's {@link RemoteBuffer}. Made by
 * {@link EndpointGroup#connect} (active side), {@link EndpointListener#accept} (passive side)
 * or {@link #connect(String, InetSocketAddress, EndpointOptions)} (a private group).
 *
 * <ul>
 *   <li>{@link #send} copies a message into a free registered buffer and posts a SEND;
 *       {@link #receive()} takes the next message that arrived. {@link #write} and
 *       {@link #read} RDMA WRITE into / READ from the peer's {@link #remoteBuffer()}. Each
 *       returns a {@link CompletableFuture} completed by the group's poller thread (use the
 *       {@code *Async} stages for slow work); a virtual thread that {@code join()}s one parks,
 *       its carrier stays free.
 *   <li>Back-pressure: at most {@link EndpointOptions#sendDepth()} sends, WRITEs and READs are in
 *       flight; a caller beyond that waits (parks) in {@code send}/{@code write}/{@code read}
 *       until one completes, or until the endpoint ends. {@link #trySend} does not wait.
 *   <li>Receives: {@link EndpointOptions#recvDepth()} buffers stay posted; each message is copied
 *       out and its buffer posted again at once, so the peer may keep {@link #peerRecvDepth()}
 *       messages in flight toward this side (more: the peer's RNR retries apply). Messages wait
 *       in order until {@link #receive()} takes them; keep within the depth with credits, as the
 *       RPC example does.
 *   <li>The peer going away: its daemon announces it (its process exited or closed its QP) or the
 *       QP's retries run out (its daemon or the path died); the QP goes to the error state, every
 *       request in flight completes with an error, and the endpoint ends: every pending future
 *       and every later call fail with {@link EndpointClosedException}
 *       ({@link EndpointClosedException#isLocal()} false, the completion error as cause), and
 *       {@link #disconnected()} completes. A QP error async event ends it the same way.
 *   <li>{@link #close()} disconnects (the peer learns it from its daemon), fails what is pending
 *       with {@link EndpointClosedException} (local), destroys the QP and frees the memory.
 * </ul>
 *
 * <p><b>Thread safety:</b> safe to share: any number of threads (virtual or platform) may send,
 * receive, read, write and close concurrently; a close during a call makes it throw
 * {@link EndpointClosedException} or {@link IllegalStateException}, never crash.
 */
public final class Endpoint implements AutoCloseable {

    private final EndpointGroup group;
    private final boolean ownsGroup;
    private final EndpointOptions options;
    private final CompletionPoller poller;
    final QueuePair qp;
    private final RegisteredBufferPool sendPool;
    private final RegisteredBufferPool recvPool;
    private final RegisteredBufferPool.Buffer[] recvBuffers;
    private final MemoryRegion exposed;
    private final SendWorkRequest[] sendWrs;
    private final RecvWorkRequest[] recvWrs;
    private final Semaphore sendSlots;
    /** The poller futures of the requests in flight, by wr_id. */
    private final Map<Long, CompletableFuture<WorkCompletion.Snapshot>> inflight = new ConcurrentHashMap<>();

    private final ReentrantLock lock = new ReentrantLock();
    /** Messages not yet taken (guarded by lock). */
    private final ArrayDeque<byte[]> inbox = new ArrayDeque<>();
    /** receive() futures waiting for a message (guarded by lock). */
    private final ArrayDeque<CompletableFuture<byte[]>> receivers = new ArrayDeque<>();

    private final CompletableFuture<Disconnect> disconnected = new CompletableFuture<>();
    private final AtomicReference<EndpointClosedException> ended = new AtomicReference<>();
    private final AtomicBoolean closing = new AtomicBoolean();

    private final java.util.concurrent.atomic.LongAdder sentMessages = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder sentBytes = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder receivedMessages = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder receivedBytes = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder writes = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder reads = new java.util.concurrent.atomic.LongAdder();
    private final java.util.concurrent.atomic.LongAdder failed = new java.util.concurrent.atomic.LongAdder();

    private volatile QpEndpoint local;
    private volatile QpEndpoint remote;
    private volatile RemoteBuffer remoteBuffer = RemoteBuffer.NONE;
    private volatile int peerRecvDepth;
    private volatile byte[] peerPrivateData = new byte[0];
    private volatile InetSocketAddress peer;

    /** Creates the QP (in INIT), the buffers and the exposed region, and posts the receives. */
    Endpoint(EndpointGroup group, EndpointOptions o, boolean ownsGroup) {
        this.group = group;
        this.ownsGroup = ownsGroup;
        this.options = o;
        this.poller = group.poller;
        group.reserve(o.sendDepth() + o.recvDepth());
        QueuePair q = null;
        RegisteredBufferPool sp = null;
        RegisteredBufferPool rp = null;
        MemoryRegion ex = null;
        SendWorkRequest[] swr = new SendWorkRequest[o.sendDepth()];
        RecvWorkRequest[] rwr = new RecvWorkRequest[o.recvDepth()];
        try {
            q = group.pd.createQueuePair(
                    QueuePair.rc(group.cq, group.cq).maxSendWr(o.sendDepth()).maxRecvWr(o.recvDepth()));
            EnumSet<AccessFlag> qpAccess = EnumSet.of(AccessFlag.LOCAL_WRITE);
            qpAccess.addAll(o.exposedAccess());
            q.toInit(o.connect().port(), qpAccess);
            sp = RegisteredBufferPool.create(
                    group.pd, o.sendDepth(), o.messageSize(), AccessFlag.toBits(Set.of(AccessFlag.LOCAL_WRITE)));
            rp = RegisteredBufferPool.create(
                    group.pd, o.recvDepth(), o.messageSize(), AccessFlag.toBits(Set.of(AccessFlag.LOCAL_WRITE)));
            if (o.exposedSize() > 0) {
                ex = group.pd.allocateRegistered(o.exposedSize(), qpAccess);
            }
            for (int i = 0; i < swr.length; i++) {
                swr[i] = new SendWorkRequest(1);
            }
            for (int i = 0; i < rwr.length; i++) {
                rwr[i] = new RecvWorkRequest(1);
            }
        } catch (RuntimeException e) {
            closeQuietly(swr);
            closeQuietly(rwr);
            closeQuietly(ex, rp, sp, q);
            group.unreserve(o.sendDepth() + o.recvDepth());
            throw e;
        }
        this.qp = q;
        this.sendPool = sp;
        this.recvPool = rp;
        this.exposed = ex;
        this.sendWrs = swr;
        this.recvWrs = rwr;
        this.sendSlots = new Semaphore(o.sendDepth());
        this.recvBuffers = new RegisteredBufferPool.Buffer[o.recvDepth()];
        group.register(this);
        try {
            for (int i = 0; i < recvBuffers.length; i++) {
                recvBuffers[i] = rp.take();
                recvWrs[i].sge(rp.region(), recvBuffers[i].offset(), o.messageSize());
                postRecv(i);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * Connects to the endpoint listening on service {@code server.getPort()} at the daemon
     * address {@code server.getAddress()}, in a group of its own on {@code device} (null: the
     * first device) that this endpoint owns and closes.
     */
    public static Endpoint connect(String device, InetSocketAddress server, EndpointOptions options)
            throws java.io.IOException {
        EndpointGroup g = EndpointGroup.open(device, options.sendDepth() + options.recvDepth());
        try {
            return g.connect(server, options, true);
        } catch (java.io.IOException | RuntimeException e) {
            g.close();
            throw e;
        }
    }

    /** Called once the connection is set up. */
    void connected(ConnectionService.Connection c, InetSocketAddress peerAddress) {
        EndpointOptions.PeerHeader h = EndpointOptions.PeerHeader.parse(c.privateData());
        this.local = c.local();
        this.remote = c.remote();
        this.remoteBuffer = h.buffer();
        this.peerRecvDepth = h.recvDepth();
        this.peerPrivateData = h.privateData();
        this.peer = peerAddress;
    }

    /** The buffer this side exposes ({@link RemoteBuffer#NONE} without). */
    RemoteBuffer exposedBuffer() {
        return exposed == null ? RemoteBuffer.NONE : RemoteBuffer.of(exposed);
    }

    // ---- accessors ----

    public EndpointOptions options() {
        return options;
    }

    public EndpointGroup group() {
        return group;
    }

    /** The queue pair (to post on it directly; its completions go to the group's poller, so register them there). */
    public QueuePair queuePair() {
        return qp;
    }

    /** This side's QPN, PSN and GID. */
    public QpEndpoint localEndpoint() {
        return local;
    }

    /** The peer's QPN, PSN and GID. */
    public QpEndpoint remoteEndpoint() {
        return remote;
    }

    /** The peer's daemon address (port: the service id on the active side, 0 on the passive side). */
    public InetSocketAddress peer() {
        return peer;
    }

    /** The buffer the peer exposes to {@link #read}/{@link #write} ({@link RemoteBuffer#NONE} without). */
    public RemoteBuffer remoteBuffer() {
        return remoteBuffer;
    }

    /** The region this side exposes to the peer (null without): read what the peer wrote, write what it reads. */
    public MemoryRegion exposedRegion() {
        return exposed;
    }

    /** How many messages the peer keeps receives posted for. */
    public int peerRecvDepth() {
        return peerRecvDepth;
    }

    /** The application private data the peer sent with its request or accept (a copy). */
    public byte[] peerPrivateData() {
        return peerPrivateData.clone();
    }

    /** Completes (normally, with the reason) when the connection ends: closed here, or the peer went away. */
    public CompletableFuture<Disconnect> disconnected() {
        return disconnected;
    }

    /** False once the endpoint ended (closed or broken). */
    public boolean isOpen() {
        return ended.get() == null;
    }

    /**
     * The endpoint's counters: messages and bytes sent (acknowledged) and received, RDMA WRITEs
     * and READs completed, requests that completed with an error. Immutable, thread-safe.
     */
    public record Stats(
            long sentMessages,
            long sentBytes,
            long receivedMessages,
            long receivedBytes,
            long writes,
            long reads,
            long failedRequests) {}

    /** A snapshot of the counters (each read on its own: not one atomic cut across them). */
    public Stats stats() {
        return new Stats(
                sentMessages.sum(),
                sentBytes.sum(),
                receivedMessages.sum(),
                receivedBytes.sum(),
                writes.sum(),
                reads.sum(),
                failed.sum());
    }

    /** Requests in flight (sends, WRITEs, READs and the posted receives). */
    public int inflightCount() {
        return inflight.size();
    }

    // ---- messages ----

    /** {@link #send(MemorySegment)} of a byte array. */
    public CompletableFuture<Void> send(byte[] message) {
        return send(MemorySegment.ofArray(message));
    }

    /**
     * Sends {@code message} (at most {@link EndpointOptions#messageSize()} bytes; copied before
     * this returns, so the caller may reuse it). Waits (parks) while {@code sendDepth} requests are
     * in flight. The future completes when the peer acknowledged the message.
     *
     * @throws EndpointClosedException when the endpoint has ended (also while waiting)
     * @throws IllegalArgumentException when the message is too long
     */
    public CompletableFuture<Void> send(MemorySegment message) {
        checkLength(message.byteSize());
        acquireSlot();
        return sendTaken(message);
    }

    /** {@link #send(MemorySegment)} that does not wait: null when {@code sendDepth} requests are in flight. */
    public CompletableFuture<Void> trySend(MemorySegment message) {
        checkLength(message.byteSize());
        checkOpen();
        if (!sendSlots.tryAcquire()) {
            return null;
        }
        return sendTaken(message);
    }

    /**
     * {@link #trySend(MemorySegment)} of {@code head} then {@code body} as one message (both
     * copied into the registered send buffer, so a transport can add its own header without a
     * copy of its own): null when {@code sendDepth} requests are in flight.
     *
     * @throws IllegalArgumentException when both together exceed {@link EndpointOptions#messageSize()}
     */
    public CompletableFuture<Void> trySend(MemorySegment head, MemorySegment body) {
        checkLength(head.byteSize() + body.byteSize());
        checkOpen();
        if (!sendSlots.tryAcquire()) {
            return null;
        }
        return sendTaken(head, body);
    }

    /** Whether a {@link #trySend} would find a free send slot now. */
    public boolean isWritable() {
        return isOpen() && sendSlots.availablePermits() > 0;
    }

    private CompletableFuture<Void> sendTaken(MemorySegment message) {
        return sendTaken(MemorySegment.NULL, message);
    }

    private CompletableFuture<Void> sendTaken(MemorySegment head, MemorySegment body) {
        int headLen = (int) head.byteSize();
        int len = headLen + (int) body.byteSize();
        RegisteredBufferPool.Buffer b = takeBuffer();
        try {
            MemorySegment.copy(head, 0, b.segment(), 0, headLen);
            MemorySegment.copy(body, 0, b.segment(), headLen, len - headLen);
            SendWorkRequest wr = sendWrs[b.index()]
                    .wrId(group.nextWrId())
                    .send()
                    .sge(sendPool.region(), b.offset(), len)
                    .signaled(true);
            return post(wr, b, wc -> {
                sentMessages.increment();
                sentBytes.add(len);
                return null;
            });
        } catch (RuntimeException e) {
            giveBuffer(b);
            throw closedOr(e);
        }
    }

    /**
     * The next message from the peer, in arrival order: a future already complete when one is
     * waiting. Messages that arrived before the connection ended are still handed out; after
     * them, the future fails with {@link EndpointClosedException}.
     */
    public CompletableFuture<byte[]> receive() {
        lock.lock();
        try {
            byte[] m = inbox.poll();
            if (m != null) {
                return CompletableFuture.completedFuture(m);
            }
            EndpointClosedException e = ended.get();
            if (e != null) {
                return CompletableFuture.failedFuture(e);
            }
            CompletableFuture<byte[]> f = new CompletableFuture<>();
            receivers.add(f);
            return f;
        } finally {
            lock.unlock();
        }
    }

    /** Messages received and not yet taken. */
    public int pendingMessages() {
        lock.lock();
        try {
            return inbox.size();
        } finally {
            lock.unlock();
        }
    }

    // ---- one-sided ----

    /**
     * RDMA WRITEs {@code data} (at most {@code messageSize} bytes, copied before this returns) to
     * the peer's {@link #remoteBuffer()} at {@code offset}. Waits like {@link #send}.
     *
     * @throws IndexOutOfBoundsException when it does not fit the peer's buffer
     */
    public CompletableFuture<Void> write(long offset, MemorySegment data) {
        checkLength(data.byteSize());
        remoteBuffer.check(offset, data.byteSize());
        acquireSlot();
        int len = (int) data.byteSize();
        RegisteredBufferPool.Buffer b = takeBuffer();
        try {
            MemorySegment.copy(data, 0, b.segment(), 0, len);
            RemoteBuffer rb = remoteBuffer;
            SendWorkRequest wr = sendWrs[b.index()]
                    .wrId(group.nextWrId())
                    .rdmaWrite(rb.address() + offset, rb.rkey())
                    .sge(sendPool.region(), b.offset(), len)
                    .signaled(true);
            return post(wr, b, wc -> {
                writes.increment();
                return null;
            });
        } catch (RuntimeException e) {
            giveBuffer(b);
            throw closedOr(e);
        }
    }

    /** RDMA READs {@code length} bytes (at most {@code messageSize}) of the peer's {@link #remoteBuffer()} at {@code offset}. */
    public CompletableFuture<byte[]> read(long offset, int length) {
        checkLength(length);
        remoteBuffer.check(offset, length);
        acquireSlot();
        RegisteredBufferPool.Buffer b = takeBuffer();
        try {
            RemoteBuffer rb = remoteBuffer;
            SendWorkRequest wr = sendWrs[b.index()]
                    .wrId(group.nextWrId())
                    .rdmaRead(rb.address() + offset, rb.rkey())
                    .sge(sendPool.region(), b.offset(), length)
                    .signaled(true);
            return post(wr, b, wc -> {
                reads.increment();
                byte[] out = new byte[length];
                MemorySegment.copy(b.segment(), JAVA_BYTE, 0, out, 0, length);
                return out;
            });
        } catch (RuntimeException e) {
            giveBuffer(b);
            throw closedOr(e);
        }
    }

    // ---- internals ----

    private void checkLength(long len) {
        if (len < 0 || len > options.messageSize()) {
            throw new IllegalArgumentException(
                    len + " bytes; this endpoint's messages take at most " + options.messageSize());
        }
    }

    private void checkOpen() {
        EndpointClosedException e = ended.get();
        if (e != null) {
            throw e;
        }
    }

    private void acquireSlot() {
        checkOpen();
        sendSlots.acquireUninterruptibly();
        EndpointClosedException e = ended.get();
        if (e != null) {
            sendSlots.release();
            throw e;
        }
    }

    private RegisteredBufferPool.Buffer takeBuffer() {
        RegisteredBufferPool.Buffer b;
        try {
            b = sendPool.take();
        } catch (RuntimeException e) {
            sendSlots.release();
            throw closedOr(e);
        }
        if (b == null) { // a slot always has a buffer; only a closed pool has none
            sendSlots.release();
            checkOpen();
            throw new IllegalStateException("no send buffer free with a send slot held");
        }
        return b;
    }

    private void giveBuffer(RegisteredBufferPool.Buffer b) {
        try {
            sendPool.give(b);
        } catch (RuntimeException e) {
            // the pool was closed with the endpoint
        }
        sendSlots.release();
    }

    /** An exception from a closed QP or pool, as the endpoint's end when it has ended. */
    private RuntimeException closedOr(RuntimeException e) {
        EndpointClosedException c = ended.get();
        if (c != null && e != c) {
            c = new EndpointClosedException(c.getMessage(), c.isLocal(), c.getCause() != null ? c.getCause() : e);
            return c;
        }
        return e;
    }

    private <T> CompletableFuture<T> post(
            SendWorkRequest wr, RegisteredBufferPool.Buffer b, Function<WorkCompletion.Snapshot, T> onSuccess) {
        long id = wr.wrId();
        CompletableFuture<WorkCompletion.Snapshot> f = poller.expect(id);
        inflight.put(id, f);
        try {
            checkOpen();
            qp.postSend(wr);
        } catch (RuntimeException e) {
            inflight.remove(id);
            poller.fail(id, e);
            throw e;
        }
        return f.handle((wc, ex) -> {
            inflight.remove(id);
            try {
                if (ex != null) {
                    Throwable cause = unwrap(ex);
                    if (!(cause instanceof EndpointClosedException)) {
                        failed.increment();
                        broke("a " + WorkCompletion.opcodeName(wr.opcode()) + " failed: " + cause.getMessage(), cause);
                    }
                    throw endedWith(cause);
                }
                return onSuccess.apply(wc);
            } finally {
                giveBuffer(b);
            }
        });
    }

    private EndpointClosedException endedWith(Throwable cause) {
        EndpointClosedException e = ended.get();
        if (cause instanceof EndpointClosedException c) {
            return c;
        }
        return e != null ? e : new EndpointClosedException("the connection broke: " + cause, false, cause);
    }

    private void postRecv(int i) {
        long id = group.nextWrId();
        RecvWorkRequest wr = recvWrs[i].wrId(id);
        CompletableFuture<WorkCompletion.Snapshot> f = poller.expect(id);
        inflight.put(id, f);
        try {
            checkOpen();
            qp.postRecv(wr);
        } catch (RuntimeException e) {
            inflight.remove(id);
            poller.fail(id, e);
            throw e;
        }
        f.whenComplete((wc, ex) -> onRecv(i, id, wc, ex));
    }

    private void onRecv(int i, long id, WorkCompletion.Snapshot wc, Throwable ex) {
        inflight.remove(id);
        if (ex != null) {
            Throwable cause = unwrap(ex);
            if (!(cause instanceof EndpointClosedException)) {
                failed.increment();
                broke("a receive failed: " + cause.getMessage(), cause);
            }
            return;
        }
        byte[] m = new byte[wc.byteLength()];
        receivedMessages.increment();
        receivedBytes.add(m.length);
        try {
            MemorySegment.copy(recvBuffers[i].segment(), JAVA_BYTE, 0, m, 0, m.length);
        } catch (RuntimeException e) {
            return; // closed meanwhile
        }
        if (isOpen()) {
            try {
                postRecv(i);
            } catch (RuntimeException e) {
                if (isOpen()) {
                    broke("reposting a receive failed: " + e.getMessage(), e);
                }
            }
        }
        CompletableFuture<byte[]> r;
        lock.lock();
        try {
            r = receivers.poll();
            if (r == null) {
                inbox.add(m);
                return;
            }
        } finally {
            lock.unlock();
        }
        r.complete(m);
    }

    private static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** The connection broke (a failed request, a QP error event): end with a non-local EndpointClosedException. */
    void broke(String reason, Throwable cause) {
        end(
                new EndpointClosedException("the connection to " + describePeer() + " broke: " + reason, false, cause),
                new Disconnect(false, reason, cause));
    }

    private String describePeer() {
        InetSocketAddress p = peer;
        QpEndpoint r = remote;
        return (p == null ? "?" : p.getAddress().getHostAddress())
                + (r == null ? "" : String.format(" (QPN 0x%06x)", r.qpn()));
    }

    private void end(EndpointClosedException e, Disconnect d) {
        if (!ended.compareAndSet(null, e)) {
            return;
        }
        EndpointEvents.Disconnect ev = new EndpointEvents.Disconnect();
        if (ev.isEnabled()) {
            ev.peer = describePeer();
            ev.localQpn = qp.qpNum();
            ev.local = d.local();
            ev.reason = d.reason();
            ev.commit();
        }
        sendSlots.release(1 << 20); // wake every waiter: each sees the end and gives its permit back
        ArrayDeque<CompletableFuture<byte[]>> waiting;
        lock.lock();
        try {
            waiting = new ArrayDeque<>(receivers);
            receivers.clear();
        } finally {
            lock.unlock();
        }
        for (CompletableFuture<byte[]> r : waiting) {
            r.completeExceptionally(e);
        }
        for (Long id : inflight.keySet()) {
            poller.fail(id, e);
        }
        disconnected.complete(d);
    }

    /**
     * Disconnects and frees everything: the QP goes to the error state, pending futures fail
     * with a local {@link EndpointClosedException}, the QP is destroyed (its daemon tells the
     * peer's), then the buffers are freed; a private group is closed too. Closing again: no-op.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        end(
                new EndpointClosedException("endpoint to " + describePeer() + " is closed", true, null),
                new Disconnect(true, "closed by this side", null));
        RuntimeException failure = null;
        try {
            qp.modify(new QueuePair.Attributes().state(QueuePair.State.ERR));
        } catch (RuntimeException e) {
            // already in error or closed: destroying is what matters
        }
        group.unregister(this);
        try {
            qp.close();
        } catch (RuntimeException e) {
            failure = e;
        }
        for (Long id : inflight.keySet()) {
            poller.fail(id, ended.get());
        }
        closeQuietly(sendWrs);
        closeQuietly(recvWrs);
        for (AutoCloseable c : new AutoCloseable[] {exposed, recvPool, sendPool}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                }
            }
        }
        group.unreserve(options.sendDepth() + options.recvDepth());
        if (ownsGroup) {
            group.close();
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void closeQuietly(AutoCloseable... cs) {
        for (AutoCloseable c : cs) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    // best effort on a failed set-up
                }
            }
        }
    }

    @Override
    public String toString() {
        return "Endpoint[" + (qp == null ? "?" : qp.describe()) + " to " + describePeer() + (isOpen() ? "" : ", ended")
                + "]";
    }
}
