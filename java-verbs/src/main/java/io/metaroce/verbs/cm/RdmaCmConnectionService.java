package io.metaroce.verbs.cm;

import io.metaroce.verbs.AddressHandle;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.RdmaCm;
import io.metaroce.verbs.VerbsException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A {@link ConnectionService} over rdma_cm ({@link RdmaCm}: MetaRoCE's
 * {@code libmetaroce-rdmacm.so}, so it also talks to C programs that use librdmacm under
 * {@code bin/mrce-run}, e.g. {@code rdma_server}). The service id is the rdma_cm port (TCP port
 * space, 1..65535); the peer's address is its daemon's IPv4 address, as for the daemon service.
 *
 * <p>The queue pair stays the caller's (made with the binding's verbs, in INIT, receives may be
 * posted): it goes to rdma_cm as {@code conn_param.qp_num}, and {@code rdma_init_qp_attr} gives
 * the peer's QPN, PSN and GID and this side's PSN; RTR and RTS are then set with the
 * {@link ConnectOptions}' MTU and {@link ConnectOptions.RcParameters} (so the RC timeout and
 * retry counts are the caller's). Private data: at most 168 bytes on connect and accept (the
 * library's limit), 192 on reject.
 *
 * <p>Each connection has its own event channel (a passive one is migrated to it from the
 * listener's) and a virtual thread that waits on it: the peer's {@code DISCONNECTED} (its
 * {@code rdma_disconnect}, its exit, its daemon's loss) or {@code DEVICE_REMOVAL} moves the QP
 * to the error state, so its outstanding work fails and an endpoint on it ends. Closing the
 * {@link Connection} disconnects ({@code rdma_disconnect}) and frees the id and the channel.
 * Waits never pin a virtual thread's carrier (the channel fd is polled by the binding's waiter).
 * Thread-safe; a listener's {@code close()} from any thread wakes its {@code next}.
 */
public final class RdmaCmConnectionService implements ConnectionService {

    /** librdmacm's own limit on connect/accept private data under MetaRoCE (192 less its 24-byte header). */
    public static final int MAX_PRIVATE_DATA = 168;

    private final long timeoutNs;

    /** A service whose connects and accepts wait at most {@code timeout} for each rdma_cm step (zero: 30 s). */
    public RdmaCmConnectionService(Duration timeout) {
        this.timeoutNs = (timeout.isZero() ? Duration.ofSeconds(30) : timeout).toNanos();
    }

    /** True when an rdma_cm library is loaded ({@link RdmaCm#available()}). */
    public static boolean available() {
        return RdmaCm.available();
    }

    @Override
    public Connection connect(InetSocketAddress peer, QueuePair qp, ConnectOptions options) throws IOException {
        byte[] pd = options.privateData();
        if (pd.length > MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("rdma_cm carries at most " + MAX_PRIVATE_DATA
                    + " bytes of private data on connect; got " + pd.length);
        }
        String what = "rdma_cm connect to " + peer.getAddress().getHostAddress() + ":" + peer.getPort();
        int ms = (int) Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(timeoutNs));
        RdmaCm.Channel ch = new RdmaCm.Channel();
        RdmaCm.Id id = null;
        try {
            id = RdmaCm.Id.create(ch);
            step(id.resolveAddr(peer, ms), "rdma_resolve_addr", what);
            expect(ch.next(timeoutNs, what), RdmaCm.ADDR_RESOLVED, what);
            step(id.resolveRoute(ms), "rdma_resolve_route", what);
            expect(ch.next(timeoutNs, what), RdmaCm.ROUTE_RESOLVED, what);
            ConnectOptions.RcParameters rc = options.rc();
            step(
                    id.connect(pd, qp.qpNum(), rc.maxDestRdAtomic(), rc.maxRdAtomic(), rc.retryCount(), rc.rnrRetry()),
                    "rdma_connect",
                    what);
            RdmaCm.Event e = ch.next(timeoutNs, what);
            if (e.type() != RdmaCm.CONNECT_RESPONSE && e.type() != RdmaCm.ESTABLISHED) {
                throw failed(e, what);
            }
            RdmaCm.QpAttributes a = id.qpAttributes();
            ConnectOptions o = withPsn(options, a.sqPsn());
            QpEndpoint remote = new QpEndpoint(0, a.destQpNum(), a.rqPsn(), a.destGid());
            QpEndpoint local = RcConnector.localEndpoint(qp, o);
            RcConnector.connect(qp, o, remote);
            step(id.establish(), "rdma_establish", what);
            Link link = new Link(ch, id, qp);
            return new Connection(qp, local, remote, e.privateData()).owning(link);
        } catch (IOException | RuntimeException ex) {
            if (id != null) {
                id.destroy();
            }
            ch.close();
            throw ex;
        }
    }

    @Override
    public Listener listen(int port) throws IOException {
        if (port <= 0 || port > 0xffff) {
            throw new IllegalArgumentException("an rdma_cm port is 1..65535: " + port);
        }
        RdmaCm.Channel ch = new RdmaCm.Channel();
        RdmaCm.Id id = null;
        try {
            id = RdmaCm.Id.create(ch);
            int err = id.bind(new InetSocketAddress("0.0.0.0", port));
            if (err == 98) { // EADDRINUSE
                throw new java.net.BindException("rdma_cm port " + port + " already has a listener (EADDRINUSE)");
            }
            step(err, "rdma_bind_addr", "rdma_cm listen on port " + port);
            step(id.listen(16), "rdma_listen", "rdma_cm listen on port " + port);
            return new CmListener(ch, id, port);
        } catch (IOException | RuntimeException ex) {
            if (id != null) {
                id.destroy();
            }
            ch.close();
            throw ex;
        }
    }

    private static ConnectOptions withPsn(ConnectOptions o, int psn) {
        return new ConnectOptions(o.port(), o.gidIndex(), o.mtu(), o.sl(), psn, o.privateData(), o.rc());
    }

    private static void step(int errno, String call, String what) throws IOException {
        if (errno == 0) {
            return;
        }
        VerbsException v = new VerbsException(call, errno);
        throw new SocketException(what + ": " + v.getMessage());
    }

    private static void expect(RdmaCm.Event e, int type, String what) throws IOException {
        if (e.type() != type) {
            throw failed(e, what);
        }
    }

    /** The exception an unexpected event means. */
    private static IOException failed(RdmaCm.Event e, String what) {
        return switch (e.type()) {
            case RdmaCm.REJECTED ->
                e.status() == 8
                        ? new ConnectException(what + ": connection refused: nobody listens there (REJECTED, status 8)")
                        : new ConnectionRejectedException(
                                what + ": rejected by its listener (" + e.privateData().length
                                        + " bytes of private data)",
                                e.privateData());
            case RdmaCm.UNREACHABLE ->
                e.status() == -110
                        ? new SocketTimeoutException(what + ": no answer (UNREACHABLE, ETIMEDOUT)")
                        : new ConnectException(what + ": unreachable (status " + e.status() + ")");
            case RdmaCm.ADDR_ERROR, RdmaCm.ROUTE_ERROR -> new java.net.NoRouteToHostException(what + ": " + e);
            default -> new SocketException(what + ": unexpected " + e);
        };
    }

    /** A connection's rdma_cm side: its id, channel and the watcher of the peer's disconnect. */
    private static final class Link implements AutoCloseable {
        private final RdmaCm.Channel ch;
        private final RdmaCm.Id id;
        private final QueuePair qp;
        private final Thread watcher;
        private volatile boolean closing;

        Link(RdmaCm.Channel ch, RdmaCm.Id id, QueuePair qp) {
            this.ch = ch;
            this.id = id;
            this.qp = qp;
            this.watcher =
                    Thread.ofVirtual().name("jverbs-rdmacm-" + qp.qpNum()).start(this::watch);
        }

        private void watch() {
            for (; ; ) {
                RdmaCm.Event e;
                try {
                    e = ch.next(-1, "rdma_cm watch");
                } catch (IOException | RuntimeException ex) {
                    return; // closed
                }
                if (e.type() == RdmaCm.DISCONNECTED || e.type() == RdmaCm.DEVICE_REMOVAL) {
                    if (!closing && !qp.isClosed()) {
                        try {
                            qp.modify(new QueuePair.Attributes().state(QueuePair.State.ERR));
                        } catch (RuntimeException ignored) {
                            // closed meanwhile, or already in error
                        }
                    }
                    return;
                }
            }
        }

        @Override
        public void close() {
            closing = true;
            id.disconnect(); // EINVAL when the peer disconnected first: nothing to do
            ch.wake();
            boolean interrupted = false;
            while (watcher.isAlive()) {
                try {
                    watcher.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            id.destroy();
            ch.close();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private final class CmListener implements Listener {
        private final RdmaCm.Channel ch;
        private final RdmaCm.Id id;
        private final int port;
        private boolean closed;

        CmListener(RdmaCm.Channel ch, RdmaCm.Id id, int port) {
            this.ch = ch;
            this.id = id;
            this.port = port;
        }

        @Override
        public Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
            return next().accept(qp, options);
        }

        @Override
        public ConnectionRequest next() throws IOException {
            return next(Duration.ZERO);
        }

        @Override
        public ConnectionRequest next(Duration timeout) throws IOException {
            long deadline = timeout.isZero() ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
            String what = "rdma_cm listener on port " + port;
            for (; ; ) {
                long left = timeout.isZero() ? -1 : deadline - System.nanoTime();
                if (!timeout.isZero() && left <= 0) {
                    throw new SocketTimeoutException(what + ": no request within " + timeout.toMillis() + " ms");
                }
                RdmaCm.Event e;
                try {
                    e = ch.next(left, what);
                } catch (SocketTimeoutException te) {
                    throw new SocketTimeoutException(what + ": no request within " + timeout.toMillis() + " ms");
                }
                if (e.type() == RdmaCm.CONNECT_REQUEST) {
                    return new CmRequest(e);
                }
                // events of requests not yet migrated (e.g. the requester gave up): nothing to do
            }
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            ch.quiesce(); // a next() in progress throws SocketException and leaves
            id.destroy();
            ch.close();
        }
    }

    private final class CmRequest extends ReceivedRequest {
        private final RdmaCm.Id id;
        private boolean answered;

        CmRequest(RdmaCm.Event e) {
            RdmaCm.Id id = e.id();
            RdmaCm.QpAttributes a = id.qpAttributes();
            super(new QpEndpoint(0, a.destQpNum(), a.rqPsn(), a.destGid()), e.privateData(), id.peerAddress());
            this.id = id;
        }

        @Override
        public synchronized Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
            once();
            byte[] pd = options.privateData();
            String what = "rdma_cm accept of " + peer().getAddress().getHostAddress();
            RdmaCm.Channel ch = new RdmaCm.Channel();
            try {
                if (pd.length > MAX_PRIVATE_DATA) {
                    throw new IllegalArgumentException("rdma_cm carries at most " + MAX_PRIVATE_DATA
                            + " bytes of private data on accept; got " + pd.length);
                }
                id.migrate(ch);
                ConnectOptions.RcParameters rc = options.rc();
                try {
                    // RTR toward the requester before the answer; RTS once the library chose our PSN
                    AddressHandle.Attributes path = AddressHandle.Attributes.forPeer(
                            remote().gid(),
                            remote().lid(),
                            options.sl(),
                            Math.max(options.gidIndex(), 0),
                            options.port());
                    qp.toRtr(
                            options.mtu(),
                            remote().qpn(),
                            remote().psn(),
                            path,
                            rc.maxDestRdAtomic(),
                            rc.minRnrTimer());
                } catch (RuntimeException ex) {
                    id.reject(new byte[0]);
                    throw ex;
                }
                step(
                        id.accept(pd, qp.qpNum(), rc.maxDestRdAtomic(), rc.maxRdAtomic(), rc.rnrRetry()),
                        "rdma_accept",
                        what);
                int psn = id.qpAttributes().sqPsn();
                qp.toRts(psn, rc.timeout(), rc.retryCount(), rc.rnrRetry(), rc.maxRdAtomic());
                RdmaCm.Event e = ch.next(timeoutNs, what);
                if (e.type() != RdmaCm.ESTABLISHED) {
                    throw failed(e, what);
                }
                QpEndpoint local = RcConnector.localEndpoint(qp, withPsn(options, psn));
                return new Connection(qp, local, remote(), receivedPrivateData()).owning(new Link(ch, id, qp));
            } catch (IOException | RuntimeException ex) {
                id.destroy();
                ch.close();
                throw ex;
            }
        }

        @Override
        public synchronized void reject(byte[] data) throws IOException {
            once();
            byte[] pd = ConnectOptions.checkPrivateData(data);
            try {
                step(
                        id.reject(pd),
                        "rdma_reject",
                        "rdma_cm reject of " + peer().getAddress().getHostAddress());
            } finally {
                id.destroy();
            }
        }

        private void once() {
            if (answered) {
                throw new IllegalStateException("request of " + peer() + " was already answered");
            }
            answered = true;
        }
    }
}
