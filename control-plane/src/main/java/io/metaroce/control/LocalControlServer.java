package io.metaroce.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.PeerCredentials;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
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
    /** sun_path holds 108 bytes including the terminating NUL. */
    private static final int MAX_SOCKET_PATH_BYTES = 107;
    /** Like /tmp: anyone may create, only the owner may remove; so unprivileged apps reach a root daemon. */
    private static final int DIR_MODE = 01777;

    private static final AtomicLong NEXT_SESSION_ID = new AtomicLong(1);

    private final Path socketPath;
    private final EventLoopGroup group;
    private final Channel serverChannel;
    private final ChannelGroup connections;

    private LocalControlServer(Path socketPath, EventLoopGroup group, Channel serverChannel, ChannelGroup connections) {
        this.socketPath = socketPath;
        this.group = group;
        this.serverChannel = serverChannel;
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
        if (!Epoll.isAvailable()) {
            throw new IOException("Netty epoll transport unavailable", Epoll.unavailabilityCause());
        }
        Path path = socketPath.toAbsolutePath();
        if (path.toString().getBytes(StandardCharsets.UTF_8).length > MAX_SOCKET_PATH_BYTES) {
            throw new IOException("socket path longer than " + MAX_SOCKET_PATH_BYTES + " bytes: " + path);
        }
        prepareDirectory(path.getParent());
        removeStaleSocket(path);

        ChannelGroup connections = new DefaultChannelGroup("mrce-control", GlobalEventExecutor.INSTANCE);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("mrce-control", true), EpollIoHandler.newFactory());
        try {
            ServerBootstrap bootstrap = new ServerBootstrap()
                    .group(group)
                    .channel(EpollServerDomainSocketChannel.class)
                    .childHandler(new ChannelInitializer<EpollDomainSocketChannel>() {
                        @Override
                        protected void initChannel(EpollDomainSocketChannel ch) {
                            initConnection(ch, handler, connections);
                        }
                    });
            Channel server = bootstrap.bind(new DomainSocketAddress(path.toString())).sync().channel();
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw-rw-"));
            LOG.info("local control socket {} ready", path);
            return new LocalControlServer(path, group, server, connections);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("interrupted while binding " + path, e);
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e instanceof IOException io ? io : new IOException("cannot bind " + path + ": " + e, e);
        }
    }

    public Path socketPath() {
        return socketPath;
    }

    /** Stops accepting, closes every connection (each session reports closed), removes the socket file. */
    @Override
    public void close() {
        serverChannel.close().syncUninterruptibly();
        // The event loop's shutdown does not close accepted sockets; providers must see EOF.
        connections.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", socketPath, e.toString());
        }
    }

    private static void initConnection(EpollDomainSocketChannel ch, LocalControlHandler handler,
            ChannelGroup connections) {
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

    static void prepareDirectory(Path dir) throws IOException {
        if (dir == null || Files.isDirectory(dir)) {
            return;
        }
        Files.createDirectories(dir);
        try {
            Posix.chmod(dir.toString(), DIR_MODE);
        } catch (IOException e) {
            LOG.warn("{}; unprivileged apps may not reach this daemon", e.getMessage());
        }
    }

    /** Removes a socket file nobody listens on; refuses to touch a live one or a non-socket. */
    static void removeStaleSocket(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS) || Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)
                || Files.isSymbolicLink(path)) {
            throw new IOException(path + " exists and is not a socket");
        }
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(path));
            throw new IOException("another server already listens on " + path);
        } catch (java.net.ConnectException e) {
            LOG.info("removing stale socket {}", path);
            Files.deleteIfExists(path);
        }
    }
}
