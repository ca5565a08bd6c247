package io.metaroce.control;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.unix.PeerCredentials;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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

    private final DomainSocketServer server;

    private AdminServer(DomainSocketServer server) {
        this.server = server;
    }

    /** Binds {@code socketPath} (replacing a stale socket) and serves {@code handler}. */
    public static AdminServer bind(Path socketPath, AdminHandler handler) throws IOException {
        long ownUid = ownUid();
        return new AdminServer(DomainSocketServer.bind(
                socketPath,
                "mrce-admin",
                "rw-------",
                "admin socket",
                new ChannelInitializer<EpollDomainSocketChannel>() {
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
                }));
    }

    public Path socketPath() {
        return server.path;
    }

    @Override
    public void close() {
        server.close();
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
            ctx.executor()
                    .schedule(
                            () -> {
                                if (!answered) {
                                    ctx.close();
                                }
                            },
                            READ_TIMEOUT_S,
                            TimeUnit.SECONDS);
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
