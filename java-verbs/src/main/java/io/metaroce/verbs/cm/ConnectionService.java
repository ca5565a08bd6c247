package io.metaroce.verbs.cm;

import io.metaroce.verbs.QueuePair;
import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * rdma_cm-style connection set-up: a passive side {@link #listen}s and takes requests, an active
 * side {@link #connect}s; both hand over a queue pair in INIT (receives may already be posted)
 * and get it back in RTS, connected to the peer's.
 *
 * <p>Implementations: {@link TcpConnectionService} exchanges the endpoints over a TCP side channel
 * in ibv_rc_pingpong's format (so it also connects to C programs using that format; no private
 * data, no reject). {@link DaemonConnectionService} goes through the MetaRoCE daemons' connection
 * manager (no application socket), with private data both ways and rejects.
 */
public interface ConnectionService {

    /** Starts listening on {@code port} (the service id) for one or more connection requests. */
    Listener listen(int port) throws IOException;

    /**
     * Connects {@code qp} (in INIT) to the peer listening at {@code peer}; returns with it in RTS.
     * The request carries {@link ConnectOptions#privateData()} where the service supports it; a
     * peer that rejects the request makes this throw {@link ConnectionRejectedException}.
     */
    Connection connect(InetSocketAddress peer, QueuePair qp, ConnectOptions options) throws IOException;

    /** A passive endpoint. */
    interface Listener extends AutoCloseable {
        /**
         * Waits for the next request and connects {@code qp} (in INIT) to it, with the options'
         * private data; returns with it in RTS. The same as {@code next().accept(qp, options)}.
         */
        Connection accept(QueuePair qp, ConnectOptions options) throws IOException;

        /**
         * Waits for the next connection request, to look at (its private data, its endpoint) and
         * then {@link ConnectionRequest#accept accept} or {@link ConnectionRequest#reject reject}.
         *
         * @throws UnsupportedOperationException where the service cannot show a request before
         *     answering it ({@link TcpConnectionService})
         */
        default ConnectionRequest next() throws IOException {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot show requests before"
                    + " accepting them (no private data, no reject); use accept(qp, options)");
        }

        @Override
        void close() throws IOException;
    }

    /** One connection request, answered once: accepted or rejected. */
    interface ConnectionRequest {
        /** The requester's QP endpoint (LID, QPN, first PSN, GID). */
        QpEndpoint remote();

        /** The private data the requester sent (a copy; may be empty). */
        byte[] privateData();

        /** The requester's address (its daemon's). */
        InetSocketAddress peer();

        /**
         * Connects {@code qp} (in INIT) to the requester and answers with the options' private
         * data; returns with it in RTS once the requester took the answer.
         */
        Connection accept(QueuePair qp, ConnectOptions options) throws IOException;

        /** Refuses the request; the requester's connect throws {@link ConnectionRejectedException} with {@code privateData}. */
        void reject(byte[] privateData) throws IOException;
    }

    /**
     * A connected queue pair, both ends' endpoints, and the private data the peer answered with
     * (the acceptor's on the active side, the requester's on the passive side; empty without).
     */
    record Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote, byte[] privateData) {
        public Connection {
            privateData = privateData == null ? new byte[0] : privateData.clone();
        }

        /** No private data. */
        public Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote) {
            this(qp, local, remote, new byte[0]);
        }

        /** The peer's private data (a copy). */
        @Override
        public byte[] privateData() {
            return privateData.clone();
        }
    }
}
