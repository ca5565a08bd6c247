package io.metaroce.verbs.cm;

import io.metaroce.verbs.QueuePair;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * rdma_cm-style connection set-up: a passive side {@link #listen}s and takes requests, an active
 * side {@link #connect}s; both hand over a queue pair in INIT (receives may already be posted)
 * and get it back in RTS, connected to the peer's.
 *
 * <p>Implementations: {@link TcpConnectionService} exchanges the endpoints over a TCP side channel
 * in ibv_rc_pingpong's format (so it also connects to C programs using that format; no private
 * data, no reject). {@link DaemonConnectionService} goes through the MetaRoCE daemons' connection
 * manager (no application socket), with private data both ways and rejects.
 *
 * <p><b>Thread safety:</b> both implementations are safe to share; a {@link Listener} may be
 * closed from any thread (which wakes a wait in it), a {@link ConnectionRequest} is answered
 * once, a {@link Connection} is immutable and closed from one thread.
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
         * {@link #accept(QueuePair, ConnectOptions)} that gives up after {@code timeout} (zero: no
         * limit) with {@link java.net.SocketTimeoutException}; the same as
         * {@code next(timeout).accept(qp, options)} where the service shows requests.
         */
        default Connection accept(QueuePair qp, ConnectOptions options, java.time.Duration timeout) throws IOException {
            if (timeout.isZero()) {
                return accept(qp, options);
            }
            return next(timeout).accept(qp, options);
        }

        /**
         * {@link #next()} that gives up after {@code timeout} (zero: no limit) with
         * {@link java.net.SocketTimeoutException}.
         *
         * @throws UnsupportedOperationException where the service cannot show requests
         */
        default ConnectionRequest next(java.time.Duration timeout) throws IOException {
            if (timeout.isZero()) {
                return next();
            }
            throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot show requests before"
                    + " accepting them; use accept(qp, options, timeout)");
        }

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
     *
     * <p>A connection owns its queue pair, and with {@link #owning} whatever else the caller
     * hands it (its CQs, memory regions, protection domain, ...): {@link #close()} disconnects
     * and frees them all. Immutable; close it from one thread.
     */
    record Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote, byte[] privateData, List<AutoCloseable> owned)
            implements AutoCloseable {
        public Connection {
            privateData = privateData == null ? new byte[0] : privateData.clone();
            owned = owned == null ? List.of() : List.copyOf(owned);
        }

        /** Owning only its queue pair. */
        public Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote, byte[] privateData) {
            this(qp, local, remote, privateData, List.of());
        }

        /** No private data; owning only its queue pair. */
        public Connection(QueuePair qp, QpEndpoint local, QpEndpoint remote) {
            this(qp, local, remote, new byte[0]);
        }

        /** The peer's private data (a copy). */
        @Override
        public byte[] privateData() {
            return privateData.clone();
        }

        /**
         * The same connection, also owning {@code resources}: {@link #close()} closes them after
         * the queue pair, last first (list them in creation order: e.g. PD, CQ, MR).
         */
        public Connection owning(AutoCloseable... resources) {
            List<AutoCloseable> all = new ArrayList<>(owned);
            all.addAll(Arrays.asList(resources));
            return new Connection(qp, local, remote, privateData, all);
        }

        /**
         * Disconnects: moves the queue pair to the error state (its outstanding work requests
         * complete with WR_FLUSH_ERR, so a {@link io.metaroce.verbs.CompletionPoller} fails their
         * futures; the peer's next request fails once its retries run out), destroys it, then
         * closes what the connection owns, last first. The first failure is thrown after all
         * were tried, later ones suppressed. Closing again is a no-op for verbs objects.
         */
        @Override
        public void close() {
            RuntimeException failure = null;
            if (!qp.isClosed()) {
                try {
                    qp.modify(new QueuePair.Attributes().state(QueuePair.State.ERR));
                } catch (RuntimeException e) {
                    // already in error, or closed meanwhile: destroying is what matters
                }
                try {
                    qp.close();
                } catch (RuntimeException e) {
                    failure = e;
                }
            }
            for (int i = owned.size() - 1; i >= 0; i--) {
                try {
                    owned.get(i).close();
                } catch (Exception e) {
                    RuntimeException r = e instanceof RuntimeException re ? re : new IllegalStateException(e);
                    if (failure == null) {
                        failure = r;
                    } else {
                        failure.addSuppressed(r);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }
}
