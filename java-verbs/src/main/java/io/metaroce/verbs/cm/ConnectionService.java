package io.metaroce.verbs.cm;

import io.metaroce.verbs.QueuePair;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * rdma_cm-style connection set-up: a passive side {@link #listen}s and {@link Listener#accept}s,
 * an active side {@link #connect}s; both hand over a queue pair in INIT (receives may already be
 * posted) and get it back in RTS, connected to the peer's.
 *
 * <p>Implementations: {@link TcpConnectionService} exchanges the endpoints over a TCP side channel
 * in ibv_rc_pingpong's format (so it also connects to C programs using that format). A service
 * through the soft-NIC daemon's own connection manager (daemon-to-daemon, no application socket)
 * belongs here once mrce-nicd offers one (issue 6); it will implement this interface.
 */
public interface ConnectionService {

    /** Starts listening on {@code port} for one or more connection requests. */
    Listener listen(int port) throws IOException;

    /** Connects {@code qp} (in INIT) to the peer listening at {@code peer}; returns with it in RTS. */
    Connection connect(InetSocketAddress peer, QueuePair qp, ConnectOptions options) throws IOException;

    /** A passive endpoint. */
    interface Listener extends AutoCloseable {
        /** Waits for the next request and connects {@code qp} (in INIT) to it; returns with it in RTS. */
        Connection accept(QueuePair qp, ConnectOptions options) throws IOException;

        @Override
        void close() throws IOException;
    }

    /** A connected queue pair and both ends' endpoints. */
    record Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote) {}
}
