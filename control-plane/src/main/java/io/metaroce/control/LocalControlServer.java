package io.metaroce.control;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.unix.PeerCredentials;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the local control protocol ({@code mrce_abi.h}) on a Unix stream socket with Netty's epoll
 * transport: one connection per provider {@code ibv_context}, requests validated by
 * {@link ControlRequestDecoder}, responses (with fds) written by {@link ControlResponseEncoder}.
 * One event-loop thread carries every connection; the daemon answers from any thread.
 *
 * <pre>
 *  accept -> SO_PEERCRED -> LocalSession -> [ControlRequestDecoder] -> LocalControlChannelHandler
 *                                                                         -> LocalControlHandler.onRequest
 *  LocalSession.respond -> [ControlResponseEncoder] -> frame bytes, then per fd [FdSendHandler]:
 *                                                     1 zero byte + SCM_RIGHTS, retried on EPOLLOUT when full
 * </pre>
 */
public final class LocalControlServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LocalControlServer.class);

    private static final AtomicLong NEXT_SESSION_ID = new AtomicLong(1);

    private final DomainSocketServer server;
    private final ChannelGroup connections;

    private LocalControlServer(DomainSocketServer server, ChannelGroup connections) {
        this.server = server;
        this.connections = connections;
    }

    /**
     * Binds {@code socketPath} (creating its parent directory, replacing a stale socket file) and
     * serves {@code handler} until {@link #close()}.
     *
     * @throws IOException if epoll is unavailable, the path is unusable, or a live server already
     *     listens there
     */
    public static LocalControlServer bind(Path socketPath, LocalControlHandler handler) throws IOException {
        return bind(socketPath, handler, "rw-rw-rw-", null);
    }

    /**
     * As above, with who may connect: the socket file's {@code permissions} (e.g. "rw-rw----") and
     * {@code group} (a group name, or null for the daemon's).
     */
    public static LocalControlServer bind(
            Path socketPath, LocalControlHandler handler, String permissions, String group) throws IOException {
        ChannelGroup connections = new DefaultChannelGroup("mrce-control", GlobalEventExecutor.INSTANCE);
        DomainSocketServer server = DomainSocketServer.bind(
                socketPath,
                "mrce-control",
                permissions,
                group,
                "local control socket",
                new ChannelInitializer<EpollDomainSocketChannel>() {
                    @Override
                    protected void initChannel(EpollDomainSocketChannel ch) {
                        initConnection(ch, handler, connections);
                    }
                });
        return new LocalControlServer(server, connections);
    }

    public Path socketPath() {
        return server.path;
    }

    /** Stops accepting, closes every connection (each session reports closed), removes the socket file. */
    @Override
    public void close() {
        server.stopAccepting();
        // The event loop's shutdown does not close accepted sockets; providers must see EOF.
        connections.close().awaitUninterruptibly();
        server.close();
    }

    private static void initConnection(
            EpollDomainSocketChannel ch, LocalControlHandler handler, ChannelGroup connections) {
        long id = NEXT_SESSION_ID.getAndIncrement();
        PeerCredentials credentials;
        try {
            credentials = ch.peerCredentials();
        } catch (IOException e) {
            LOG.warn("closing local control connection {}: no peer credentials: {}", id, e.toString());
            ch.close();
            return;
        }
        int gid = credentials.gids().length > 0 ? credentials.gids()[0] : -1;
        ChannelSession session = new ChannelSession(id, credentials.pid(), credentials.uid(), gid, ch);
        ch.pipeline()
                .addLast("fds", FdSendHandler.INSTANCE)
                .addLast("decoder", new ControlRequestDecoder())
                .addLast("encoder", ControlResponseEncoder.INSTANCE)
                .addLast("session", new LocalControlChannelHandler(session, handler));
        connections.add(ch);
        LOG.debug("{} connected", session);
    }
}
