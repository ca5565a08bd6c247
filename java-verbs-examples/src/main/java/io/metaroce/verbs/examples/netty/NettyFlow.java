package io.metaroce.verbs.examples.netty;

import io.metaroce.verbs.endpoint.Endpoint;
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
import io.netty.channel.WriteBufferWaterMark;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

/**
 * {@code bin/jverbs netty-flow-server} and {@code netty-flow-client}: the RDMA channel's flow
 * control from posted receives. The client pushes {@code -t} bytes (64 MiB) in 16 KiB writes
 * while its channel is writable (water marks 32/64 KiB). The server reads with auto-read off,
 * only when the client is held back: when its endpoint has received {@code recvDepth - 1}
 * messages the pipeline has not read (the client's credits are spent) it reads {@code -r}
 * messages (64); then also all unread ones when nothing arrived for a millisecond (SlowReader.check
 * says why). Both print the bytes and their CRC; the server how often it held the client
 * back and the most unread messages, the client how often its channel turned unwritable and the
 * most bytes pending in its outbound buffer.
 *
 * <p><b>Thread safety:</b> the entry points are run once per process, from main.
 */
public final class NettyFlow {

    static final int CHUNK = 16 * 1024;
    /** The RDMA channel's flow-control header in front of each message (counted in the endpoint's bytes). */
    static final int HEADER = 4;

    private NettyFlow() {}

    /** Byte {@code i} of the stream. */
    static byte data(long i) {
        return (byte) (i * 31 + (i >>> 11));
    }

    /** Reads a burst each time the writer is held back; closes once it has all the bytes. */
    static final class SlowReader extends ChannelInboundHandlerAdapter {
        final CRC32 crc = new CRC32();
        final CompletableFuture<String> done = new CompletableFuture<>();
        final long total;
        final int burst;
        long bytes;
        long messagesRead;
        long budget;
        int heldBack;
        long mostUnread;
        long lastReceived;

        SlowReader(long total, int burst) {
            this.total = total;
            this.burst = burst;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            check(ctx);
            ctx.fireChannelActive();
        }

        /**
         * Every millisecond on the loop. First it waits until the writer is out of credits: its
         * endpoint holds {@code recvDepth - 1} messages the pipeline has not read (nothing is owed
         * back yet). Then it reads a burst each time that many are unread again, or all unread
         * when nothing arrived since the last tick: up to {@code (recvDepth - 1) / 2 - 1} credits
         * may be owed back below the credit-message threshold, so a held-back writer need not
         * fill the window again. The tail, once every byte arrived, is read at once.
         */
        private void check(ChannelHandlerContext ctx) {
            if (done.isDone() || !ctx.channel().isActive()) {
                return;
            }
            Endpoint e = ((RdmaChannel) ctx.channel()).endpoint();
            Endpoint.Stats s = e.stats();
            long received = s.receivedMessages();
            long unread = received - messagesRead;
            boolean quiet = received == lastReceived;
            lastReceived = received;
            boolean full = unread >= e.options().recvDepth() - 1;
            boolean allArrived = s.receivedBytes() - HEADER * received >= total;
            mostUnread = Math.max(mostUnread, unread);
            if (budget == 0 && unread > 0 && (full || (quiet && heldBack > 0) || allArrived)) {
                if (full) {
                    heldBack++;
                }
                budget = (full ? burst : unread) - 1;
                ctx.read();
            }
            ctx.executor().schedule(() -> check(ctx), 1, TimeUnit.MILLISECONDS);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                messagesRead++;
                byte[] a = new byte[b.readableBytes()];
                b.readBytes(a);
                for (int i = 0; i < a.length; i++) {
                    if (a[i] != data(bytes + i)) {
                        done.completeExceptionally(new IllegalStateException("byte " + (bytes + i) + " differs"));
                        ctx.close();
                        return;
                    }
                }
                crc.update(a);
                bytes += a.length;
                if (bytes == total) {
                    done.complete(String.format(
                            "OK bytes=%d crc=0x%08x heldBack=%d mostUnread=%d",
                            bytes, crc.getValue(), heldBack, mostUnread));
                } else if (bytes > total) {
                    done.completeExceptionally(new IllegalStateException(bytes + " bytes, more than " + total));
                }
            } finally {
                b.release();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (budget > 0) {
                budget--;
                ctx.read();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.completeExceptionally(new IllegalStateException("the connection closed after " + bytes + " bytes"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            ctx.close();
        }
    }

    public static int server(String[] args) throws Exception {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = NettyEcho.parse(args, pos);
        int port = Integer.parseInt(o.getOrDefault("p", "7310"));
        long total = Long.parseLong(o.getOrDefault("t", Long.toString(64L << 20)));
        SlowReader reader = new SlowReader(total, Integer.parseInt(o.getOrDefault("r", "64")));
        EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, RdmaIoHandler.newFactory());
        EndpointGroup group = EndpointGroup.open(o.getOrDefault("d", "mrce0"));
        try {
            Channel server = new ServerBootstrap()
                    .group(loops, loops)
                    .channelFactory(() -> new RdmaServerChannel(group, NettyEcho.options(o)))
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childHandler(new ChannelInitializer<>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline().addLast(reader);
                        }
                    })
                    .bind(new InetSocketAddress(port))
                    .sync()
                    .channel();
            System.out.println("netty-flow-server: listening on service " + port);
            System.out.flush();
            String result = reader.done.get(300, TimeUnit.SECONDS);
            System.out.println("netty-flow-server: " + result);
            server.close().sync();
            return 0;
        } catch (Exception e) {
            System.out.println("netty-flow-server: FAIL " + e + " after " + reader.bytes + " bytes, held back "
                    + reader.heldBack + " times, most unread " + reader.mostUnread); // racy reads: a hint
            return 1;
        } finally {
            loops.shutdownGracefully().sync();
            group.close();
        }
    }

    /** Writes the stream while the channel is writable; goes on when it is writable again. */
    static final class Writer extends ChannelInboundHandlerAdapter {
        final CRC32 crc = new CRC32();
        final CompletableFuture<Void> written = new CompletableFuture<>();
        final long total;
        long offset;
        int unwritable;
        int writableAgain;
        long mostPending;

        Writer(long total) {
            this.total = total;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            writeMore(ctx);
            ctx.fireChannelActive();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                writableAgain++;
                writeMore(ctx);
            } else {
                unwritable++;
            }
        }

        private void writeMore(ChannelHandlerContext ctx) {
            while (ctx.channel().isWritable() && offset < total) {
                int n = (int) Math.min(CHUNK, total - offset);
                byte[] a = new byte[n];
                for (int j = 0; j < n; j++) {
                    a[j] = data(offset + j);
                }
                crc.update(a);
                offset += n;
                if (offset == total) {
                    ctx.writeAndFlush(Unpooled.wrappedBuffer(a)).addListener(f -> {
                        if (f.isSuccess()) {
                            written.complete(null);
                        } else {
                            written.completeExceptionally(f.cause());
                        }
                    });
                } else {
                    ctx.write(Unpooled.wrappedBuffer(a));
                }
                mostPending = Math.max(
                        mostPending, ctx.channel().unsafe().outboundBuffer().totalPendingWriteBytes());
            }
            ctx.flush();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            written.completeExceptionally(
                    new IllegalStateException("the connection closed after " + offset + " bytes were written"));
        }
    }

    public static int client(String[] args) throws Exception {
        List<String> pos = new ArrayList<>();
        Map<String, String> o = NettyEcho.parse(args, pos);
        if (pos.size() != 1) {
            System.err.println("netty-flow-client: the server's address is required");
            return 2;
        }
        int port = Integer.parseInt(o.getOrDefault("p", "7310"));
        Writer writer = new Writer(Long.parseLong(o.getOrDefault("t", Long.toString(64L << 20))));
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, RdmaIoHandler.newFactory());
        EndpointGroup group = EndpointGroup.open(o.getOrDefault("d", "mrce0"));
        EndpointOptions options = NettyEcho.options(o);
        try {
            Channel ch = new Bootstrap()
                    .group(loop)
                    .handler(writer)
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 * 1024, 64 * 1024))
                    .channelFactory(() -> new RdmaChannel(group, options))
                    .connect(new InetSocketAddress(pos.get(0), port))
                    .sync()
                    .channel();
            writer.written.get(300, TimeUnit.SECONDS); // every byte handed to the endpoint
            String result = ch.eventLoop()
                    .submit(() -> String.format(
                            "OK bytes=%d crc=0x%08x unwritable=%d" + " writableAgain=%d mostPending=%d",
                            writer.offset,
                            writer.crc.getValue(),
                            writer.unwritable,
                            writer.writableAgain,
                            writer.mostPending))
                    .get();
            ch.closeFuture().await(60, TimeUnit.SECONDS); // the server closes once it has read everything
            System.out.println("netty-flow-client: " + result);
            return 0;
        } catch (Exception e) {
            System.out.println("netty-flow-client: FAIL " + e);
            return 1;
        } finally {
            loop.shutdownGracefully().sync();
            group.close();
        }
    }
}
