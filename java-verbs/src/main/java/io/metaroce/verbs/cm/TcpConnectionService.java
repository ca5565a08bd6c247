package io.metaroce.verbs.cm;

import io.metaroce.verbs.QueuePair;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;

/**
 * {@link ConnectionService} over ibv_rc_pingpong's TCP side channel ({@link SideChannel},
 * {@link QpEndpoint} wire format): the passive side connects its QP before replying, the active
 * side after reading the reply, exactly as the C program, so either side may be C. It carries no
 * private data (the options' is ignored) and cannot reject: {@link Listener#next()} is unsupported.
 * A listener binds its port at {@link #listen}, accepts with an optional timeout and is woken by
 * {@link Listener#close()}. Thread-safe: one accept at a time per listener (others wait).
 */
public final class TcpConnectionService implements ConnectionService {

    private final int connectTimeoutMs;

    public TcpConnectionService() {
        this(30_000);
    }

    /** {@code connectTimeoutMs}: how long {@link #connect} retries while nobody listens yet. */
    public TcpConnectionService(int connectTimeoutMs) {
        this.connectTimeoutMs = connectTimeoutMs;
    }

    /**
     * Binds {@code port} now (any address, SO_REUSEADDR, backlog 16): peers that connect before
     * {@link Listener#accept} wait in the backlog. {@link Listener#close()} releases the port and
     * wakes an accept in progress (it throws {@link SocketException} "listener ... closed").
     */
    @Override
    public Listener listen(int port) throws IOException {
        return new TcpListener(SideChannel.listen(port, 16));
    }

    /** A listening socket; one exchange per accept. Safe to close from any thread. */
    private static final class TcpListener implements Listener {
        private final ServerSocket socket;
        private final int port;
        private volatile boolean closed;

        TcpListener(ServerSocket socket) {
            this.socket = socket;
            this.port = socket.getLocalPort();
        }

        @Override
        public Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
            return accept(qp, options, Duration.ZERO);
        }

        /** {@code timeout} zero: no limit. The QP is not touched before a peer connects. */
        @Override
        public synchronized Connection accept(QueuePair qp, ConnectOptions options, Duration timeout)
                throws IOException {
            if (closed) {
                throw closedException(null);
            }
            long ms = timeout.toMillis();
            QpEndpoint[] local = new QpEndpoint[1];
            QpEndpoint[] remote = new QpEndpoint[1];
            try {
                // Inside the try: a close that lands between the check above and here makes this
                // throw "Socket is closed", which must read as the listener's close too.
                socket.setSoTimeout(timeout.isZero() ? 0 : (int) Math.max(1, Math.min(Integer.MAX_VALUE, ms)));
                SideChannel.serve(socket, QpEndpoint.WIRE_SIZE, msg -> {
                    local[0] = RcConnector.localEndpoint(qp, options);
                    remote[0] = QpEndpoint.fromWire(msg);
                    RcConnector.connect(qp, options, remote[0]);
                    return local[0].toWire();
                });
            } catch (UncheckedIOException e) {
                throw e.getCause();
            } catch (SocketTimeoutException e) {
                throw new SocketTimeoutException("no peer connected to port " + port + " within " + timeout);
            } catch (SocketException e) {
                if (closed) {
                    throw closedException(e);
                }
                throw e;
            }
            return new Connection(qp, local[0], remote[0]);
        }

        private SocketException closedException(Throwable cause) {
            SocketException e = new SocketException("listener on port " + port + " closed");
            if (cause != null) {
                e.initCause(cause);
            }
            return e;
        }

        @Override
        public void close() throws IOException {
            closed = true;
            socket.close();
        }
    }

    @Override
    public Connection connect(InetSocketAddress peer, QueuePair qp, ConnectOptions options) throws IOException {
        QpEndpoint local = RcConnector.localEndpoint(qp, options);
        byte[] reply = SideChannel.client(peer.getHostString(), peer.getPort(), local.toWire(), connectTimeoutMs);
        QpEndpoint remote = QpEndpoint.fromWire(reply);
        RcConnector.connect(qp, options, remote);
        return new Connection(qp, local, remote);
    }
}
