package io.metaroce.verbs.cm;

import io.metaroce.verbs.QueuePair;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;

/**
 * {@link ConnectionService} over ibv_rc_pingpong's TCP side channel ({@link SideChannel},
 * {@link QpEndpoint} wire format): the passive side connects its QP before replying, the active
 * side after reading the reply, exactly as the C program, so either side may be C. It carries no
 * private data (the options' is ignored) and cannot reject: {@link Listener#next()} is unsupported.
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

    @Override
    public Listener listen(int port) {
        return new Listener() {
            @Override
            public Connection accept(QueuePair qp, ConnectOptions options) throws IOException {
                QpEndpoint local = RcConnector.localEndpoint(qp, options);
                QpEndpoint[] remote = new QpEndpoint[1];
                try {
                    SideChannel.server(port, QpEndpoint.WIRE_SIZE, msg -> {
                        remote[0] = QpEndpoint.fromWire(msg);
                        RcConnector.connect(qp, options, remote[0]);
                        return local.toWire();
                    });
                } catch (UncheckedIOException e) {
                    throw e.getCause();
                }
                return new Connection(qp, local, remote[0]);
            }

            @Override
            public void close() {
                // one ServerSocket per accept, closed by it: nothing stays open
            }
        };
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
