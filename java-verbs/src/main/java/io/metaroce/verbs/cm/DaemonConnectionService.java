package io.metaroce.verbs.cm;

import io.metaroce.verbs.Gid;
import io.metaroce.verbs.QueuePair;
import io.metaroce.verbs.cm.DaemonControl.Errnos;
import io.metaroce.verbs.cm.DaemonControl.Response;
import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link ConnectionService} through the MetaRoCE daemons' rdma_cm-style service
 * (docs/spec/connection-manager.md, "Service"): the application talks only to the daemon of its
 * network namespace, over its own connection to the daemon's local control socket (found as the
 * provider finds it: {@code $METAROCE_SOCK}, else {@code /tmp/metaroce/nicd-<netns inode>.sock}),
 * and the daemons carry the request, the answer and the private data between them over their
 * connection manager. No application socket, no port to open.
 *
 * <ul>
 *   <li>{@link #listen(int)}: the port is the service id (1 .. 2^32-1, one listener per service
 *       per daemon: a second one gets {@link BindException}). The listener's connection lives
 *       until {@link Listener#close()} or the process exits; either frees the service.
 *   <li>{@link Listener#next()} waits for a request ({@link Listener#next(Duration)}: at most that
 *       long, then {@link SocketTimeoutException}; {@link Listener#close()} ends a wait with
 *       {@link SocketException}); {@link ConnectionRequest#accept} moves the QP
 *       to RTR and RTS toward the requester (QPN, PSN and GID from the request), then answers
 *       with the options' private data and returns once the requester took the answer;
 *       {@link ConnectionRequest#reject} answers with private data.
 *   <li>{@link #connect}: the peer address is the remote daemon's address (IPv4, or IPv6 when the
 *       daemons serve IPv6) and the port the service id. Returns with the QP in RTS and the acceptor's private data in the
 *       {@link Connection}; a rejection throws {@link ConnectionRejectedException} carrying the
 *       rejecter's private data; nobody listening throws {@link ConnectException} at once
 *       (ECONNREFUSED); no answer within the timeout throws {@link SocketTimeoutException}.
 * </ul>
 *
 * A GID left zero (no GID index in the options) is replaced on the other side by the GID of the
 * sender's daemon address (IPv4-mapped, or the IPv6 address itself).
 *
 * <p><b>Thread safety:</b> immutable, thread-safe: each listen and connect opens its own daemon connection; a listener is safe to share (concurrent {@code next} calls each take a request), a request is answered once.
 */
public final class DaemonConnectionService implements ConnectionService {

    private final Path socket;
    private final int timeoutMs;
    private final int backlog;

    /** The daemon of this network namespace; the daemon's connect timeout; the default backlog. */
    public DaemonConnectionService() throws IOException {
        this(DaemonControl.defaultSocketPath(), 0, 0);
    }

    /**
     * The daemon of this network namespace; {@link #connect} waits at most {@code connectTimeout}
     * (whole milliseconds, at least 1) for the peer application's answer; the default backlog.
     */
    public DaemonConnectionService(Duration connectTimeout) throws IOException {
        this(
                DaemonControl.defaultSocketPath(),
                (int) Math.max(1, Math.min(Integer.MAX_VALUE, connectTimeout.toMillis())),
                0);
    }

    /**
     * @param socket the daemon's control socket
     * @param connectTimeoutMs how long {@link #connect} waits for the peer application's answer (0: the daemon's
     *     {@code --cm-connect-timeout-ms}, 10 s by default)
     * @param backlog requests a listener's daemon keeps for it at most (0: 64; at most 1024)
     */
    public DaemonConnectionService(Path socket, int connectTimeoutMs, int backlog) {
        if (connectTimeoutMs < 0 || backlog < 0 || backlog > 1024) {
            throw new IllegalArgumentException("connect timeout >= 0 ms, backlog 0..1024");
        }
        this.socket = socket;
        this.timeoutMs = connectTimeoutMs;
        this.backlog = backlog;
    }

    @Override
    public Listener listen(int port) throws IOException {
        if (port == 0) {
            throw new IllegalArgumentException("service id 0");
        }
        DaemonControl c = DaemonControl.open(socket);
        try {
            ByteBuffer p = le(DaemonControl.LISTEN_SIZE)
                    .putInt(DaemonControl.LISTEN_SERVICE, port)
                    .putInt(DaemonControl.LISTEN_BACKLOG, backlog);
            Response r = c.call(DaemonControl.OP_CM_LISTEN, p);
            if (r.status() == Errnos.EADDRINUSE) {
                throw new BindException("service " + Integer.toUnsignedString(port)
                        + " already has a listener on this daemon (EADDRINUSE)");
            }
            check(r, "CM_LISTEN of service " + Integer.toUnsignedString(port));
            return new DaemonListener(c, port);
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    @Override
    public Connection connect(InetSocketAddress peer, QueuePair qp, ConnectOptions options) throws IOException {
        InetAddress addr = peer.getAddress();
        if (addr == null) {
            throw new UnknownHostException(peer.getHostString());
        }
        int service = peer.getPort();
        if (service == 0) {
            throw new IllegalArgumentException("service id 0");
        }
        QpEndpoint local = RcConnector.localEndpoint(qp, options);
        Answer a = request(peer, local, options.privateData());
        RcConnector.connect(qp, options, a.remote());
        return new Connection(qp, local, a.remote(), a.privateData());
    }

    /** The acceptor's endpoint and private data. */
    record Answer(QpEndpoint remote, byte[] privateData) {}

    /** CM_CONNECT on a connection of its own: the acceptor's answer, or the exception that says why there is none. */
    Answer request(InetSocketAddress peer, QpEndpoint local, byte[] privateData) throws IOException {
        InetAddress addr = peer.getAddress();
        int service = peer.getPort();
        String what = "service " + service + " at " + addr.getHostAddress();
        try (DaemonControl c = DaemonControl.open(socket)) {
            ByteBuffer p = le(DaemonControl.CM_STRUCT_V6);
            if (addr instanceof Inet4Address) {
                p.put(DaemonControl.CONNECT_PEER, addr.getAddress());
            } else {
                p.put(DaemonControl.PEER_IPV6, addr.getAddress()); // CONNECT_PEER stays 0
            }
            p.putInt(DaemonControl.CONNECT_SERVICE, service);
            endpoint(p, local, ConnectOptions.checkPrivateData(privateData));
            p.putInt(DaemonControl.CONNECT_TIMEOUT, timeoutMs);
            Response r = c.call(DaemonControl.OP_CM_CONNECT, p);
            switch (r.status()) {
                case 0 -> {}
                case Errnos.ECONNREFUSED ->
                    throw new ConnectException("connection refused: nobody listens on " + what + " (ECONNREFUSED)");
                case Errnos.ENOBUFS ->
                    throw new ConnectException(
                            "connection refused: the listener of " + what + " has its backlog full (ENOBUFS)");
                case Errnos.ETIMEDOUT ->
                    throw new SocketTimeoutException("no answer from " + what + " within "
                            + (timeoutMs == 0 ? "the daemon's connect timeout" : timeoutMs + " ms") + " (ETIMEDOUT)");
                case Errnos.ECONNRESET ->
                    throw new SocketException("connection to " + what + " reset: its listener or"
                            + " its daemon went away before answering (ECONNRESET)");
                default -> check(r, "CM_CONNECT to " + what);
            }
            ByteBuffer a = r.payload();
            byte[] pd = readPrivateData(a, DaemonControl.PD_LEN, DaemonControl.PD);
            if (a.getInt(DaemonControl.RESP_RESULT) == DaemonControl.CM_REJECTED) {
                throw new ConnectionRejectedException(
                        "connection to " + what + " rejected by its listener (" + pd.length + " bytes of private data)",
                        pd);
            }
            return new Answer(
                    new QpEndpoint(
                            0,
                            a.getInt(DaemonControl.QPN),
                            a.getInt(DaemonControl.PSN),
                            gidOr(a, DaemonControl.GID, addr.getAddress())),
                    pd);
        }
    }

    /** A listening service: one daemon connection, which holds the listen. */
    private static final class DaemonListener implements Listener {
        /** Each long poll waits this long before it is renewed. */
        private static final int POLL_MS = 60_000;
        /** How long close waits for the daemon to confirm it dropped the listen. */
        private static final int UNLISTEN_WAIT_MS = 10_000;

        private final DaemonControl c;
        private final int service;
        private volatile boolean closed;

        DaemonListener(DaemonControl c, int service) {
            this.c = c;
            this.service = service;
        }

        @Override
        public ConnectionRequest next() throws IOException {
            return next(Duration.ZERO);
        }

        /** {@code timeout} zero: no limit; else the long polls stop at the deadline. */
        @Override
        public ConnectionRequest next(Duration timeout) throws IOException {
            long deadline = System.nanoTime() + (timeout.isZero() ? 0 : timeout.toNanos());
            while (true) {
                if (closed) {
                    throw closedException();
                }
                int pollMs = POLL_MS;
                if (!timeout.isZero()) {
                    long leftNs = deadline - System.nanoTime();
                    // 0 ms: the daemon answers EAGAIN at once when nothing is queued
                    pollMs = (int) Math.min(POLL_MS, Math.max(0, (leftNs + 999_999) / 1_000_000));
                }
                Response r;
                try {
                    r = c.call(
                            DaemonControl.OP_CM_GET_REQUEST,
                            le(DaemonControl.GET_REQUEST_SIZE).putInt(DaemonControl.GET_REQUEST_TIMEOUT, pollMs));
                } catch (IOException e) {
                    if (closed) {
                        throw closedException();
                    }
                    throw e;
                }
                if (closed) { // close's CM_UNLISTEN ended this poll (ECANCELED) or raced its answer
                    throw closedException();
                }
                if (r.status() == Errnos.EAGAIN) {
                    if (!timeout.isZero() && deadline - System.nanoTime() <= 0) {
                        throw new SocketTimeoutException("no connection request for service "
                                + Integer.toUnsignedString(service) + " within " + timeout);
                    }
                    continue;
                }
                check(r, "CM_GET_REQUEST on service " + Integer.toUnsignedString(service));
                return new DaemonRequest(c, r.payload());
            }
        }

        @Override
        public Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
            return next().accept(qp, options);
        }

        private SocketException closedException() {
            return new SocketException("listener of service " + Integer.toUnsignedString(service) + " is closed");
        }

        /**
         * Gives the service back before returning (CM_UNLISTEN, answered once the daemon dropped the
         * listen, which also ends a long poll in progress), so a listen of it right after succeeds;
         * then closes the connection, which drops anything left in the daemon either way.
         */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                c.send(
                                DaemonControl.OP_CM_UNLISTEN,
                                le(DaemonControl.LISTEN_SIZE).putInt(DaemonControl.LISTEN_SERVICE, service))
                        .get(UNLISTEN_WAIT_MS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // the connection is gone or the daemon is stuck: closing it drops the listen anyway
            } finally {
                c.close();
            }
        }
    }

    private static final class DaemonRequest extends ReceivedRequest {
        private final DaemonControl c;
        private final int handle;
        private final int service;
        private boolean answered;

        DaemonRequest(DaemonControl c, ByteBuffer r) {
            byte[] ip = new byte[4];
            r.get(DaemonControl.REQUEST_PEER, ip);
            if (Arrays.equals(ip, new byte[4]) && r.limit() >= DaemonControl.PEER_IPV6 + 16) {
                ip = new byte[16]; // an IPv6 requester: the daemon names it in peer_ipv6
                r.get(DaemonControl.PEER_IPV6, ip);
            }
            InetAddress a;
            try {
                a = InetAddress.getByAddress(ip);
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e); // 4 or 16 bytes are always an address
            }
            super(
                    new QpEndpoint(
                            0,
                            r.getInt(DaemonControl.QPN),
                            r.getInt(DaemonControl.PSN),
                            gidOr(r, DaemonControl.GID, ip)),
                    readPrivateData(r, DaemonControl.PD_LEN, DaemonControl.PD),
                    new InetSocketAddress(a, 0));
            this.c = c;
            this.handle = r.getInt(DaemonControl.REQUEST_HANDLE);
            this.service = r.getInt(DaemonControl.REQUEST_SERVICE);
        }

        private String what() {
            return "request " + handle + " from " + peer().getAddress().getHostAddress() + " for service "
                    + Integer.toUnsignedString(service);
        }

        @Override
        public synchronized Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
            once();
            QpEndpoint local;
            try {
                local = RcConnector.localEndpoint(qp, options);
                RcConnector.connect(qp, options, remote()); // RTR and RTS before the answer, as the IB CM does
            } catch (RuntimeException e) {
                // Do not leave the requester waiting for its timeout: refuse, then report.
                c.send(
                        DaemonControl.OP_CM_REJECT,
                        le(DaemonControl.REJECT_SIZE).putInt(DaemonControl.REJECT_HANDLE, handle));
                throw e;
            }
            ByteBuffer p = le(DaemonControl.CM_STRUCT).putInt(DaemonControl.ACCEPT_HANDLE, handle);
            endpoint(p, local, options.privateData());
            Response r = c.call(DaemonControl.OP_CM_ACCEPT, p);
            switch (r.status()) {
                case 0 -> {}
                case Errnos.ECONNABORTED ->
                    throw new SocketException(
                            what() + ": the requester gave up or went away" + " before the accept (ECONNABORTED)");
                case Errnos.ETIMEDOUT ->
                    throw new SocketTimeoutException(
                            what() + ": the requester did not take the" + " answer (ETIMEDOUT)");
                case Errnos.ECONNRESET ->
                    throw new SocketException(what() + ": the requester's daemon went away" + " (ECONNRESET)");
                default -> check(r, "CM_ACCEPT of " + what());
            }
            return new Connection(qp, local, remote(), receivedPrivateData());
        }

        @Override
        public synchronized void reject(byte[] data) throws IOException {
            byte[] pd = ConnectOptions.checkPrivateData(data);
            once();
            ByteBuffer p = le(DaemonControl.REJECT_SIZE)
                    .putInt(DaemonControl.REJECT_HANDLE, handle)
                    .putInt(DaemonControl.REJECT_PD_LEN, pd.length)
                    .put(DaemonControl.REJECT_PD, pd);
            Response r = c.call(DaemonControl.OP_CM_REJECT, p);
            if (r.status() == Errnos.ECONNABORTED) {
                throw new SocketException(
                        what() + ": the requester gave up or went away before the reject (ECONNABORTED)");
            }
            check(r, "CM_REJECT of " + what());
        }

        private void once() {
            if (answered) {
                throw new IllegalStateException(what() + " was already answered");
            }
            answered = true;
        }
    }

    // ---- helpers ----

    private static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** qpn, psn, gid and private data at the offsets the 232-byte CM structs share. */
    private static void endpoint(ByteBuffer p, QpEndpoint e, byte[] pd) {
        p.putInt(DaemonControl.QPN, e.qpn() & 0xffffff);
        p.putInt(DaemonControl.PSN, e.psn() & 0xffffff);
        p.put(DaemonControl.GID, e.gid().bytes());
        p.putInt(DaemonControl.PD_LEN, pd.length);
        p.put(DaemonControl.PD, pd);
    }

    private static byte[] readPrivateData(ByteBuffer b, int lenOff, int off) {
        int n = Math.min(Math.max(b.getInt(lenOff), 0), ConnectOptions.MAX_PRIVATE_DATA);
        byte[] pd = new byte[n];
        b.get(off, pd);
        return pd;
    }

    /**
     * The GID at {@code off}, or when it is all zero the GID of {@code ip}: IPv4-mapped for 4
     * bytes, the address itself for 16.
     */
    private static Gid gidOr(ByteBuffer b, int off, byte[] ip) throws IllegalStateException {
        byte[] g = new byte[16];
        b.get(off, g);
        if (Arrays.equals(g, new byte[16])) {
            if (ip.length == 16) {
                return Gid.of(ip.clone());
            }
            g[10] = (byte) 0xff;
            g[11] = (byte) 0xff;
            System.arraycopy(ip, 0, g, 12, 4);
        }
        return Gid.of(g);
    }

    private static void check(Response r, String what) throws IOException {
        if (r.status() == Errnos.EOPNOTSUPP) {
            throw new IOException(what + ": the daemon runs without its connection manager (--cm-port 0): EOPNOTSUPP");
        }
        if (r.status() != 0) {
            throw new IOException(what + " failed: " + Errnos.name(r.status()));
        }
    }
}
