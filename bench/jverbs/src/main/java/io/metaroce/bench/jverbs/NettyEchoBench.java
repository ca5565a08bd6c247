package io.metaroce.bench.jverbs;

import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import io.metaroce.verbs.netty.RdmaChannel;
import io.metaroce.verbs.netty.RdmaIoHandler;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The round trip of a Netty echo: one {@code size}-byte message written and its whole echo read
 * back, over the RDMA transport ({@link RdmaChannel} on {@link RdmaIoHandler}, mrce0) or over TCP
 * with epoll, against {@code bin/jverbs netty-echo-server} (RDMA on service {@code rdmaService},
 * {@code --tcp} on port {@code tcpPort}) at {@code host}, in another namespace of the same fabric.
 * {@code run-jverbs-async-bench} sets it all up.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class NettyEchoBench {

    @Param({"rdma", "tcp"})
    public String transport;

    @Param("198.18.0.2")
    public String host;

    @Param("7300")
    public int rdmaService;

    @Param("7301")
    public int tcpPort;

    @Param("64")
    public int size;

    @Param("mrce0")
    public String device;

    private EventLoopGroup loop;
    private EndpointGroup group;
    private Channel ch;
    private ByteBuf message;
    private final Echo echo = new Echo();

    /** Completes the pending future once {@code expected} bytes came back. Runs on the loop. */
    static final class Echo extends ChannelInboundHandlerAdapter {
        volatile CompletableFuture<Void> done;
        int expected;
        int got;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            got += b.readableBytes();
            b.release();
            if (got >= expected) {
                got -= expected;
                done.complete(null);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }

    @Setup(Level.Trial)
    public void setup() throws Exception {
        boolean tcp = transport.equals("tcp");
        loop = new MultiThreadIoEventLoopGroup(1, tcp ? EpollIoHandler.newFactory() : RdmaIoHandler.newFactory());
        Bootstrap b = new Bootstrap().group(loop).handler(echo);
        if (tcp) {
            b.channel(EpollSocketChannel.class).option(ChannelOption.TCP_NODELAY, true);
        } else {
            group = EndpointGroup.open(device);
            EndpointOptions o = EndpointOptions.defaults()
                    .withDepths(32, 32)
                    .withMessageSize(8192)
                    .withTimeout(Duration.ofSeconds(30));
            b.channelFactory(() -> new RdmaChannel(group, o));
        }
        ch = b.connect(new InetSocketAddress(host, tcp ? tcpPort : rdmaService))
                .sync()
                .channel();
        message = Unpooled.directBuffer(size).writeZero(size);
        echo.expected = size;
    }

    @Benchmark
    public void roundTrip() throws Exception {
        CompletableFuture<Void> f = new CompletableFuture<>();
        echo.done = f;
        ch.writeAndFlush(message.retainedDuplicate());
        f.get(10, TimeUnit.SECONDS);
    }

    @TearDown(Level.Trial)
    public void teardown() throws Exception {
        ch.close().sync();
        loop.shutdownGracefully().sync();
        if (group != null) {
            group.close();
        }
        message.release();
    }
}
