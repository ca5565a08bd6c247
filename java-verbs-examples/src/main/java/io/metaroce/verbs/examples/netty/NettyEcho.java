package io.metaroce.verbs.examples.netty;

import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import io.metaroce.verbs.netty.RdmaChannel;
import io.metaroce.verbs.netty.RdmaIoHandler;
import io.metaroce.verbs.netty.RdmaServerChannel;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code bin/jverbs netty-echo-server} and {@code netty-echo-client}: the same Netty echo
 * pipeline over the RDMA transport ({@link RdmaChannel} on {@link RdmaIoHandler} loops; the
 * default) or over TCP with epoll ({@code --tcp}, the baseline). The client sends {@code -n}
 * messages of {@code -s} bytes, one at a time (each waits for its whole echo: a round trip),
 * then {@code -b} more all at once, checks every echoed byte and prints
 * {@code OK rtt_us_p50=... rtt_us_p99=... bytes=...}.
 *
 * <p><b>Thread safety:</b> the entry points are run once per process, from main.
 */
public final class NettyEcho {

    private NettyEcho() {}

    static Map<String, String> parse(String[] args, List<String> positional) {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--tcp")) {
                o.put("tcp", "1");
            } else if (a.startsWith("-") && i + 1 < args.length) {
                o.put(a.replaceFirst("^-+", ""), args[++i]);
            } else {
                positional.add(a);
            }
        }
        return o;
    }

    static EndpointOptions options(Map<String, String> o) {
        return EndpointOptions.defaults()
                .withDepths(32, 32)
                .withMessageSize(Integer.parseInt(o.getOrDefault("m", "8192")))
                .withTimeout(Duration.ofSeconds(30));
    }

    /** Echoes whatever it reads. */
    static final class EchoServerHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    public static int server(String[] args) throws Exception {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = parse(args, pos);
        int port = Integer.parseInt(o.getOrDefault("p", "7300"));
        boolean tcp = o.containsKey("tcp");
        EventLoopGroup boss =
                new MultiThreadIoEventLoopGroup(1, tcp ? EpollIoHandler.newFactory() : RdmaIoHandler.newFactory());
        EventLoopGroup workers =
                new MultiThreadIoEventLoopGroup(1, tcp ? EpollIoHandler.newFactory() : RdmaIoHandler.newFactory());
        EndpointGroup group = tcp ? null : EndpointGroup.open(o.getOrDefault("d", "mrce0"));
        try {
            ServerBootstrap b = new ServerBootstrap().group(boss, workers).childHandler(new ChannelInitializer<>() {
                @Override
                protected void initChannel(Channel ch) {
                    ch.pipeline().addLast(new EchoServerHandler());
                }
            });
            if (tcp) {
                b.channel(EpollServerSocketChannel.class).childOption(ChannelOption.TCP_NODELAY, true);
            } else {
                b.channelFactory(() -> new RdmaServerChannel(group, options(o)));
            }
            Channel server = b.bind(new InetSocketAddress(port)).sync().channel();
            System.out.println("netty-echo-server: listening on " + (tcp ? "TCP port " : "service ") + port);
            System.out.flush();
            server.closeFuture().sync(); // until killed
            return 0;
        } finally {
            boss.shutdownGracefully().sync();
            workers.shutdownGracefully().sync();
            if (group != null) {
                group.close();
            }
        }
    }

    /** Collects the echo of one message (or of a burst) and completes when all its bytes came back. */
    static final class EchoClientHandler extends ChannelInboundHandlerAdapter {
        private ByteBuf expected;
        private int matched;
        private CompletableFuture<Void> done;

        void expect(ByteBuf bytes, CompletableFuture<Void> f) {
            expected = bytes;
            matched = 0;
            done = f;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            try {
                while (in.isReadable()) {
                    if (expected == null || matched >= expected.readableBytes()) {
                        done.completeExceptionally(new IllegalStateException("more bytes than were sent"));
                        return;
                    }
                    byte b = in.readByte();
                    if (b != expected.getByte(expected.readerIndex() + matched)) {
                        done.completeExceptionally(new IllegalStateException("byte " + matched + " differs"));
                        return;
                    }
                    matched++;
                }
                if (matched == expected.readableBytes()) {
                    done.complete(null);
                }
            } finally {
                in.release();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (done != null) {
                done.completeExceptionally(new IllegalStateException("the connection closed"));
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (done != null) {
                done.completeExceptionally(cause);
            }
            ctx.close();
        }
    }

    static ByteBuf pattern(int seed, int size) {
        ByteBuf b = Unpooled.buffer(size);
        for (int i = 0; i < size; i++) {
            b.writeByte(seed * 31 + i * 7);
        }
        return b;
    }

    public static int client(String[] args) throws Exception {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = parse(args, pos);
        if (pos.size() != 1) {
            System.err.println("netty-echo-client: the server's address is required");
            return 2;
        }
        boolean tcp = o.containsKey("tcp");
        int port = Integer.parseInt(o.getOrDefault("p", "7300"));
        int n = Integer.parseInt(o.getOrDefault("n", "1000"));
        int size = Integer.parseInt(o.getOrDefault("s", "64"));
        int burst = Integer.parseInt(o.getOrDefault("b", "256"));
        EventLoopGroup loop =
                new MultiThreadIoEventLoopGroup(1, tcp ? EpollIoHandler.newFactory() : RdmaIoHandler.newFactory());
        EndpointGroup group = tcp ? null : EndpointGroup.open(o.getOrDefault("d", "mrce0"));
        EchoClientHandler h = new EchoClientHandler();
        try {
            Bootstrap b = new Bootstrap().group(loop).handler(h);
            if (tcp) {
                b.channel(EpollSocketChannel.class).option(ChannelOption.TCP_NODELAY, true);
            } else {
                b.channelFactory(() -> new RdmaChannel(group, options(o)));
            }
            Channel ch =
                    b.connect(new InetSocketAddress(pos.get(0), port)).sync().channel();
            long[] rtt = new long[n];
            long bytes = 0;
            for (int i = 0; i < n; i++) {
                ByteBuf m = pattern(i, size);
                CompletableFuture<Void> f = new CompletableFuture<>();
                ch.eventLoop().submit(() -> h.expect(m, f)).sync();
                long t0 = System.nanoTime();
                ch.writeAndFlush(m.retainedDuplicate());
                f.get(30, TimeUnit.SECONDS);
                rtt[i] = System.nanoTime() - t0;
                bytes += size;
                m.release();
            }
            // a burst: many messages in flight at once (the send queue's back-pressure at work)
            ByteBuf all = Unpooled.buffer(burst * size);
            for (int i = 0; i < burst; i++) {
                all.writeBytes(pattern(n + i, size));
            }
            CompletableFuture<Void> f = new CompletableFuture<>();
            ch.eventLoop().submit(() -> h.expect(all, f)).sync();
            for (int i = 0; i < burst; i++) {
                ch.write(all.retainedSlice(i * size, size));
            }
            ch.flush();
            f.get(60, TimeUnit.SECONDS);
            bytes += (long) burst * size;
            all.release();
            ch.close().sync();
            java.util.Arrays.sort(rtt);
            System.out.printf(
                    "netty-echo-client: OK transport=%s messages=%d burst=%d bytes=%d rtt_us_p50=%.1f"
                            + " rtt_us_p99=%.1f%n",
                    tcp ? "tcp-epoll" : "rdma",
                    n,
                    burst,
                    bytes,
                    rtt[n / 2] / 1e3,
                    rtt[Math.min(n - 1, (int) (n * 0.99))] / 1e3);
            return 0;
        } catch (Exception e) {
            System.out.println("netty-echo-client: FAIL " + e);
            return 1;
        } finally {
            loop.shutdownGracefully().sync();
            if (group != null) {
                group.close();
            }
        }
    }
}
