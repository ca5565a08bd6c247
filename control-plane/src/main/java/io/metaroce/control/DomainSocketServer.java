package io.metaroce.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Unix stream socket served by Netty's epoll transport on one event-loop thread: what the local
 * control server and the admin server share. {@link #bind} prepares the directory, replaces a
 * stale socket file (never a live one), binds, sets the file's permissions; {@link #close} stops
 * accepting, shuts the loop down and removes the file.
 */
final class DomainSocketServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DomainSocketServer.class);
    /** sun_path holds 108 bytes including the terminating NUL. */
    static final int MAX_SOCKET_PATH_BYTES = 107;
    /** Like /tmp: anyone may create, only the owner may remove; so unprivileged apps reach a root daemon. */
    private static final int DIR_MODE = 01777;

    final Path path;
    final EventLoopGroup group;
    final Channel channel;

    private DomainSocketServer(Path path, EventLoopGroup group, Channel channel) {
        this.path = path;
        this.group = group;
        this.channel = channel;
    }

    /**
     * Binds {@code socketPath} with a one-thread loop named {@code threadName}, file mode
     * {@code permissions} (e.g. "rw-------"), accepted connections set up by {@code init}.
     *
     * @throws IOException if epoll is unavailable, the path is unusable, or a live server already
     *     listens there
     */
    static DomainSocketServer bind(
            Path socketPath,
            String threadName,
            String permissions,
            String what,
            ChannelInitializer<EpollDomainSocketChannel> init)
            throws IOException {
        return bind(socketPath, threadName, permissions, null, what, init);
    }

    /** As above, the file's group set to {@code fileGroup} (a name; null: the daemon's) before its mode. */
    static DomainSocketServer bind(
            Path socketPath,
            String threadName,
            String permissions,
            String fileGroup,
            String what,
            ChannelInitializer<EpollDomainSocketChannel> init)
            throws IOException {
        if (!Epoll.isAvailable()) {
            throw new IOException("Netty epoll transport unavailable", Epoll.unavailabilityCause());
        }
        Path path = socketPath.toAbsolutePath();
        if (path.toString().getBytes(StandardCharsets.UTF_8).length > MAX_SOCKET_PATH_BYTES) {
            throw new IOException("socket path longer than " + MAX_SOCKET_PATH_BYTES + " bytes: " + path);
        }
        prepareDirectory(path.getParent());
        removeStaleSocket(path);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory(threadName, true), EpollIoHandler.newFactory());
        try {
            Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(EpollServerDomainSocketChannel.class)
                    .childHandler(init)
                    .bind(new DomainSocketAddress(path.toString()))
                    .sync()
                    .channel();
            if (fileGroup != null) {
                Files.setAttribute(
                        path,
                        "posix:group",
                        path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(fileGroup),
                        LinkOption.NOFOLLOW_LINKS);
            }
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(permissions));
            LOG.info("{} {} ready", what, path);
            return new DomainSocketServer(path, group, server);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("interrupted while binding " + path, e);
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e instanceof IOException io ? io : new IOException("cannot bind " + path + ": " + e, e);
        }
    }

    /** Stops accepting (no new connection), without touching accepted ones. */
    void stopAccepting() {
        channel.close().syncUninterruptibly();
    }

    /** Stops accepting, shuts the event loop down, removes the socket file. */
    @Override
    public void close() {
        stopAccepting();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", path, e.toString());
        }
    }

    static void prepareDirectory(Path dir) throws IOException {
        if (dir == null) {
            return;
        }
        if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            checkDirectory(dir, ownUid());
            return;
        }
        Files.createDirectories(dir);
        try {
            Posix.chmod(dir.toString(), DIR_MODE);
        } catch (IOException e) {
            LOG.warn("{}; unprivileged apps may not reach this daemon", e.getMessage());
        }
    }

    /**
     * Whoever owns the socket's directory (or may write it without the sticky bit) can replace the
     * daemon's socket with their own: accept only a real directory owned by root or by the daemon's
     * user ({@code ownUid}; a root daemon: root only), and when others may write it, only with the
     * sticky bit (like /tmp).
     */
    static void checkDirectory(Path dir, int ownUid) throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("refusing socket directory " + dir + ": not a directory (or a symbolic link)");
        }
        var attrs = Files.readAttributes(dir, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
        int uid = (Integer) attrs.get("uid");
        int mode = (Integer) attrs.get("mode");
        if (uid != 0 && uid != ownUid) {
            throw new IOException("refusing socket directory " + dir + ": owned by uid " + uid
                    + ", not root" + (ownUid != 0 ? " or uid " + ownUid : "")
                    + " (another user could replace the socket); remove it or choose --sock");
        }
        if ((mode & 0022) != 0 && (mode & 01000) == 0) {
            throw new IOException("refusing socket directory " + dir + ": writable by others without the"
                    + " sticky bit (mode 0" + Integer.toOctalString(mode & 07777) + "); chmod +t or o-w it");
        }
    }

    /** This process's effective uid (the owner of /proc/self). */
    static int ownUid() throws IOException {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    }

    /** Removes a socket file nobody listens on; refuses to touch a live one or a non-socket. */
    static void removeStaleSocket(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)
                || Files.isRegularFile(path, LinkOption.NOFOLLOW_LINKS)
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
