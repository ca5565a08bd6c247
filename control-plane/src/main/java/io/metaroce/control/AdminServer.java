package io.metaroce.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.PeerCredentials;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's operator socket (what {@code mrce-ctl} talks to): a Unix stream socket beside the
 * control socket ({@link LocalControlPaths#adminSocketPathFor}), mode 0600 and served only to
 * clients with the daemon's uid or root. Protocol: the client sends one command line (at most
 * {@value #MAX_LINE} bytes, {@code \n}-terminated); the server answers one JSON document and a
 * {@code \n}, then closes. An unknown command gets {@code {"error":"..."}}; a line too long, or none
 * within {@value #READ_TIMEOUT_S} s, closes the connection.
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);
    public static final int MAX_LINE = 256;
    static final int READ_TIMEOUT_S = 5;

    private final Path socketPath;
    private final EventLoopGroup group;
    private final Channel serverChannel;

    private AdminServer(Path socketPath, EventLoopGroup group, Channel serverChannel) {
        this.socketPath = socketPath;
        this.group = group;
        this.serverChannel = serverChannel;
    }

    /** Binds {@code socketPath} (replacing a stale socket) and serves {@code handler}. */
    public static AdminServer bind(Path socketPath, AdminHandler handler) throws IOException {
        if (!Epoll.isAvailable()) {
            throw new IOException("Netty epoll transport unavailable", Epoll.unavailabilityCause());
        }
        Path path = socketPath.toAbsolutePath();
        LocalControlServer.prepareDirectory(path.getParent());
        LocalControlServer.removeStaleSocket(path);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("mrce-admin", true), EpollIoHandler.newFactory());
        long ownUid = ownUid();
        try {
            Channel server = new ServerBootstrap()
                    .group(group)
                    .channel(EpollServerDomainSocketChannel.class)
                    .childHandler(new ChannelInitializer<EpollDomainSocketChannel>() {
                        @Override
                        protected void initChannel(EpollDomainSocketChannel ch) throws IOException {
                            PeerCredentials cred = ch.peerCredentials();
                            if (cred.uid() != 0 && cred.uid() != ownUid) {
                                LOG.warn("admin socket: refusing uid {} (pid {})", cred.uid(), cred.pid());
                                ch.close();
                                return;
                            }
                            ch.pipeline()
                                    .addLast(new LineBasedFrameDecoder(MAX_LINE, true, true))
                                    .addLast(new Responder(handler));
                        }
                    })
                    .bind(new DomainSocketAddress(path.toString())).sync().channel();
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
            LOG.info("admin socket {} ready", path);
            return new AdminServer(path, group, server);
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

    @Override
    public void close() {
        serverChannel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", socketPath, e.toString());
        }
    }

    private static long ownUid() throws IOException {
        return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
    }

    /** Escapes a string as a JSON string literal. */
    public static String jsonString(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private static final class Responder extends SimpleChannelInboundHandler<ByteBuf> {
        private final AdminHandler handler;
        private boolean answered;

        Responder(AdminHandler handler) {
            this.handler = handler;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            // A client that never sends its line is cut off.
            ctx.executor().schedule(() -> {
                if (!answered) {
                    ctx.close();
                }
            }, READ_TIMEOUT_S, TimeUnit.SECONDS);
            ctx.fireChannelActive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf line) {
            if (answered) {
                return;
            }
            answered = true;
            String command = line.toString(StandardCharsets.UTF_8).trim();
            String json;
            try {
                json = handler.handle(command);
            } catch (IllegalArgumentException e) {
                json = "{\"error\":" + jsonString(String.valueOf(e.getMessage())) + "}";
            } catch (RuntimeException e) {
                LOG.warn("admin command '{}' failed", command, e);
                json = "{\"error\":" + jsonString("internal error: " + e) + "}";
            }
            ctx.writeAndFlush(Unpooled.copiedBuffer(json + "\n", StandardCharsets.UTF_8))
                    .addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException) {
                LOG.warn("admin socket: command longer than {} bytes, closing", MAX_LINE);
            } else {
                LOG.debug("admin socket: {}", cause.toString());
            }
            ctx.close();
        }
    }
}
