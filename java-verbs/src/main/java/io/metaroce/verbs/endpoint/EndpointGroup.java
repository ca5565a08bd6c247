package io.metaroce.verbs.endpoint;

import io.metaroce.verbs.AsyncEvent;
import io.metaroce.verbs.CompletionChannel;
import io.metaroce.verbs.CompletionPoller;
import io.metaroce.verbs.CompletionQueue;
import io.metaroce.verbs.Context;
import io.metaroce.verbs.Device;
import io.metaroce.verbs.ProtectionDomain;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.cm.ConnectionService;
import io.metaroce.verbs.cm.DaemonConnectionService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Endpoints that share a device context, a protection domain, one completion queue (with a
 * completion channel of its own, on which the idle poller sleeps) and one
 * {@link CompletionPoller} thread, and a virtual thread that delivers the context's async
 * events (a QP error ends its endpoint). Connections are set up through the MetaRoCE daemons'
 * rdma_cm-style service ({@link DaemonConnectionService}): {@link #connect} on the active side,
 * {@link #bind} then {@link EndpointListener#accept} on the passive side.
 *
 * <pre>{@code
 * try (EndpointGroup group = EndpointGroup.open("mrce0");
 *      Endpoint ep = group.connect(new InetSocketAddress("198.18.0.2", 7000), EndpointOptions.defaults())) {
 *     ep.send("ping".getBytes()).join();
 *     byte[] answer = ep.receive().get(5, TimeUnit.SECONDS);
 * }
 * }</pre>
 *
 * <p>The CQ holds {@code cqEntries} completions: the endpoints' send and receive depths together
 * may not exceed it (a connect beyond it throws). <b>Thread safety:</b> safe to share; close it
 * after (or instead of) its endpoints: closing the group closes the endpoints still open.
 */
public final class EndpointGroup implements AutoCloseable {

    /** The completion queue size of {@link #open(String)}. */
    public static final int DEFAULT_CQ_ENTRIES = 4096;

    final Context context;
    final ProtectionDomain pd;
    final CompletionChannel channel;
    final CompletionQueue cq;
    final CompletionPoller poller;
    private final int cqEntries;
    private final AtomicInteger reserved = new AtomicInteger();
    private final AtomicLong wrIds = new AtomicLong(1);
    private final Map<QueuePair, Endpoint> endpoints = new ConcurrentHashMap<>();
    private final Thread events;
    private volatile boolean closed;

    private EndpointGroup(
            Context context,
            ProtectionDomain pd,
            CompletionChannel channel,
            CompletionQueue cq,
            CompletionPoller poller) {
        this.context = context;
        this.pd = pd;
        this.channel = channel;
        this.cq = cq;
        this.poller = poller;
        this.cqEntries = cq.capacity();
        this.events = Thread.ofVirtual()
                .name("jverbs-async-events-" + context.deviceName())
                .unstarted(this::events);
    }

    /** A group on {@code device} (null: the first device) with a {@value #DEFAULT_CQ_ENTRIES}-entry CQ. */
    public static EndpointGroup open(String device) {
        return open(device, DEFAULT_CQ_ENTRIES);
    }

    /** A group on {@code device} (null: the first device) whose CQ holds {@code cqEntries} completions. */
    public static EndpointGroup open(String device, int cqEntries) {
        Context ctx = Device.open(device);
        ProtectionDomain pd = null;
        CompletionChannel ch = null;
        CompletionQueue cq = null;
        try {
            pd = ctx.allocateProtectionDomain();
            ch = ctx.createCompletionChannel(); // the poller sleeps on it when idle
            cq = ctx.createCompletionQueue(cqEntries, ch, 0);
            EndpointGroup g = new EndpointGroup(ctx, pd, ch, cq, CompletionPoller.start(cq));
            g.events.start();
            return g;
        } catch (RuntimeException e) {
            for (AutoCloseable c : new AutoCloseable[] {cq, ch, pd, ctx}) {
                try {
                    if (c != null) {
                        c.close();
                    }
                } catch (Exception ignored) {
                    // best effort
                }
            }
            throw e;
        }
    }

    public Context context() {
        return context;
    }

    public ProtectionDomain protectionDomain() {
        return pd;
    }

    public CompletionQueue completionQueue() {
        return cq;
    }

    /** The poller of the group's CQ (register the futures of requests you post yourself here, with {@link #nextWrId()}). */
    public CompletionPoller poller() {
        return poller;
    }

    /** A wr_id no other request of this group uses. */
    public long nextWrId() {
        return wrIds.getAndIncrement();
    }

    /** Endpoints open in this group. */
    public int endpointCount() {
        return endpoints.size();
    }

    /**
     * Connects a new endpoint to the one listening on service {@code server.getPort()} at the
     * daemon address {@code server.getAddress()} (its IPv4 address on the fabric). Waits at most
     * {@link EndpointOptions#timeout()} for the answer.
     *
     * @throws java.net.ConnectException nobody listens there (at once)
     * @throws java.net.SocketTimeoutException no answer within the timeout
     * @throws io.metaroce.verbs.cm.ConnectionRejectedException the listener refused
     */
    public Endpoint connect(InetSocketAddress server, EndpointOptions options) throws IOException {
        return connect(server, options, false);
    }

    /**
     * {@link #connect(InetSocketAddress, EndpointOptions)} through another connection service:
     * e.g. {@link io.metaroce.verbs.cm.RdmaCmConnectionService} (rdma_cm; {@code server.getPort()}
     * is then the rdma_cm port). The endpoint behaves the same whichever service connected it.
     */
    public Endpoint connect(InetSocketAddress server, EndpointOptions options, ConnectionService service)
            throws IOException {
        return connect(server, options, false, service);
    }

    Endpoint connect(InetSocketAddress server, EndpointOptions options, boolean ownsGroup) throws IOException {
        return connect(server, options, ownsGroup, null);
    }

    private Endpoint connect(
            InetSocketAddress server, EndpointOptions options, boolean ownsGroup, ConnectionService service)
            throws IOException {
        checkOpen();
        Endpoint e = new Endpoint(this, options, ownsGroup);
        EndpointEvents.Connect ev = new EndpointEvents.Connect();
        ev.begin();
        try {
            ConnectionService svc = service != null ? service : new DaemonConnectionService(options.timeout());
            ConnectionService.Connection c = svc.connect(
                    server, e.qp, options.connect().withPrivateData(options.wirePrivateData(e.exposedBuffer())));
            e.connected(c, server);
            ev.remoteQpn = c.remote().qpn();
            return e;
        } catch (IOException | RuntimeException ex) {
            ev.error = ex.toString();
            e.close(); // and the group, when the endpoint owns it
            throw ex;
        } finally {
            ev.peer = server.toString();
            ev.service = Integer.toUnsignedLong(server.getPort());
            ev.localQpn = e.qp.qpNum();
            ev.commit();
        }
    }

    /**
     * Listens on service {@code service} (a nonzero id; one listener per service per daemon) for
     * endpoints built with {@code options}.
     *
     * @throws java.net.BindException when the service already has a listener on this daemon
     */
    public EndpointListener bind(int service, EndpointOptions options) throws IOException {
        checkOpen();
        return new EndpointListener(
                this, new DaemonConnectionService(options.timeout()).listen(service), service, options);
    }

    /**
     * {@link #bind(int, EndpointOptions)} through another connection service: e.g.
     * {@link io.metaroce.verbs.cm.RdmaCmConnectionService} (rdma_cm; {@code service} is then the
     * rdma_cm port, 1..65535). The listener and its endpoints behave the same.
     */
    public EndpointListener bind(int service, EndpointOptions options, ConnectionService via) throws IOException {
        checkOpen();
        return new EndpointListener(this, via.listen(service), service, options);
    }

    void reserve(int entries) {
        int now = reserved.addAndGet(entries);
        if (now > cqEntries) {
            reserved.addAndGet(-entries);
            throw new IllegalStateException("the group's CQ holds " + cqEntries + " completions and its endpoints"
                    + " already use " + (now - entries) + "; this one needs " + entries
                    + ": open the group with a larger CQ");
        }
    }

    void unreserve(int entries) {
        reserved.addAndGet(-entries);
    }

    void register(Endpoint e) {
        endpoints.put(e.qp, e);
    }

    void unregister(Endpoint e) {
        endpoints.remove(e.qp, e);
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("endpoint group on " + context.deviceName() + " is closed");
        }
    }

    /** The async-event loop: a QP error ends the QP's endpoint. Ends when the context closes. */
    private void events() {
        while (!closed) {
            AsyncEvent ev;
            try {
                ev = context.awaitAsyncEvent(Duration.ofSeconds(10));
            } catch (InterruptedException | RuntimeException e) {
                return; // the context closed (or this thread was interrupted by close)
            }
            if (ev == null || ev.type() == null) {
                continue;
            }
            switch (ev.type()) {
                case QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR -> {
                    if (ev.element() instanceof QueuePair qp) {
                        Endpoint e = endpoints.get(qp);
                        if (e != null) {
                            e.broke("async event " + ev.type(), new IllegalStateException(ev.toString()));
                        }
                    }
                }
                default -> {}
            }
        }
    }

    /** Closes the endpoints still open, then the poller, CQ, PD and context. Closing again: no-op. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Endpoint e : new ArrayList<>(endpoints.values())) {
            try {
                e.close();
            } catch (RuntimeException ignored) {
                // keep closing the rest
            }
        }
        poller.close();
        cq.close();
        channel.close();
        pd.close();
        context.close(); // wakes the async-event thread
        try {
            events.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "EndpointGroup[" + context.deviceName() + ", " + endpoints.size() + " endpoints]";
    }
}
