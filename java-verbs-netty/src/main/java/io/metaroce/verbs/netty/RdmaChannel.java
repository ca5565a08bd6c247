package io.metaroce.verbs.netty;

import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CompletableFuture;

/**
 * A Netty channel over one RC {@link Endpoint}: an unmodified pipeline of {@link ByteBuf}
 * handlers runs over RDMA SEND/RECV. Made by a {@code Bootstrap} with
 * {@code channelFactory(() -> new RdmaChannel(group, options))} and connected to
 * {@code new InetSocketAddress(daemonAddress, service)}, or accepted by an
 * {@link RdmaServerChannel}; registered with an {@link RdmaIoHandler} event loop.
 *
 * <ul>
 *   <li>Writes: each flushed buffer is cut into messages of at most
 *       {@link EndpointOptions#messageSize()} bytes, copied into the endpoint's registered send
 *       buffers and sent. Back-pressure comes from the send queue: when all
 *       {@code sendDepth} buffers are in flight the rest stays in the channel's outbound buffer
 *       (so {@code isWritable()} turns false past its high water mark) until a send completes.
 *   <li>Reads: each received message becomes one {@code channelRead} (a heap {@code ByteBuf}),
 *       one message per {@code read()}; with auto-read off, messages wait in the endpoint (the
 *       peer is held back by its own send queue and, past this side's posted receives, by RC
 *       RNR retries). Message boundaries are kept, but handlers should treat the channel as a
 *       stream, as over TCP.
 *   <li>The peer going away (or any failed request) closes the channel
 *       ({@code channelInactive}); {@code close()} closes the endpoint.
 * </ul>
 *
 * <p><b>Thread safety:</b> as any Netty channel: its state changes on its event loop; the
 * endpoint's completions are handed to that loop.
 */
public class RdmaChannel extends AbstractChannel {

    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private final EndpointGroup group;
    private final EndpointOptions options;
    private final ChannelConfig config = new DefaultChannelConfig(this);
    private final RdmaIoHandle handle = new RdmaIoHandle(this::closeFromLoop);
    private volatile Endpoint endpoint;
    private volatile boolean open = true;
    private IoRegistration registration;
    private boolean readPending;
    private boolean receiving;
    private boolean flushScheduled;

    /** An unconnected client channel: connect it to {@code new InetSocketAddress(daemonAddress, service)}. */
    public RdmaChannel(EndpointGroup group, EndpointOptions options) {
        super(null);
        this.group = group;
        this.options = options;
    }

    /** A channel over an accepted endpoint. */
    RdmaChannel(RdmaServerChannel parent, Endpoint endpoint) {
        super(parent);
        this.group = endpoint.group();
        this.options = endpoint.options();
        this.endpoint = endpoint;
        watch(endpoint);
    }

    /** The endpoint (null before the connect completed). */
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    public ChannelConfig config() {
        return config;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        Endpoint e = endpoint;
        return open && e != null && e.isOpen();
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return loop instanceof IoEventLoop l && l.isCompatible(RdmaIoHandle.class);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        ((IoEventLoop) eventLoop()).register(handle).addListener(f -> {
            if (f.isSuccess()) {
                registration = (IoRegistration) f.getNow();
                promise.setSuccess();
            } else {
                promise.setFailure(f.cause());
            }
        });
    }

    @Override
    protected void doDeregister() {
        if (registration != null) {
            registration.cancel();
        }
    }

    @Override
    protected SocketAddress localAddress0() {
        Endpoint e = endpoint;
        return e == null ? null : new InetSocketAddress(0);
    }

    @Override
    protected SocketAddress remoteAddress0() {
        Endpoint e = endpoint;
        return e == null ? null : e.peer();
    }

    @Override
    protected void doBind(SocketAddress localAddress) {
        throw new UnsupportedOperationException("an RDMA client channel does not bind: connect it");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doClose() {
        open = false;
        Endpoint e = endpoint;
        if (e != null) {
            e.close();
        }
    }

    private void closeFromLoop() {
        if (open) {
            unsafe().close(voidPromise());
        }
    }

    /** The peer going away closes the channel. */
    private void watch(Endpoint e) {
        e.disconnected().thenRun(() -> eventLoop().execute(this::closeFromLoop));
    }

    @Override
    protected void doBeginRead() {
        readPending = true;
        receiveNext();
    }

    private void receiveNext() {
        Endpoint e = endpoint;
        if (!readPending || receiving || e == null || !open) {
            return;
        }
        receiving = true;
        CompletableFuture<byte[]> f = e.receive();
        if (f.isDone() && !f.isCompletedExceptionally()) {
            onReceive(f.join(), null); // already here: no hop through the loop
        } else {
            f.whenComplete((m, ex) -> eventLoop().execute(() -> onReceive(m, ex)));
        }
    }

    private void onReceive(byte[] m, Throwable ex) {
        receiving = false;
        if (ex != null || !open) {
            closeFromLoop();
            return;
        }
        readPending = false;
        pipeline().fireChannelRead(Unpooled.wrappedBuffer(m));
        pipeline().fireChannelReadComplete(); // auto-read asks for the next one (doBeginRead)
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        Endpoint e = endpoint;
        if (e == null || !e.isOpen()) {
            throw new ClosedChannelException();
        }
        int max = options.messageSize();
        while (true) {
            Object msg = in.current();
            if (msg == null) {
                return;
            }
            ByteBuf buf = (ByteBuf) msg;
            if (!buf.isReadable()) {
                in.remove();
                continue;
            }
            int len = Math.min(buf.readableBytes(), max);
            MemorySegment seg = MemorySegment.ofBuffer(buf.nioBuffer(buf.readerIndex(), len));
            CompletableFuture<Void> sent = e.trySend(seg);
            if (sent == null) {
                return; // the send queue is full: the rest waits; a completion flushes again
            }
            sent.whenComplete((v, ex) -> eventLoop().execute(() -> afterSend(ex)));
            in.removeBytes(len);
        }
    }

    private void afterSend(Throwable ex) {
        if (ex != null) {
            closeFromLoop();
            return;
        }
        if (!flushScheduled && open) {
            flushScheduled = true;
            eventLoop().execute(() -> {
                flushScheduled = false;
                if (open) {
                    ((AbstractUnsafe) unsafe()).flush();
                }
            });
        }
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf) {
            return msg;
        }
        throw new UnsupportedOperationException("an RDMA channel writes ByteBufs, not " + msg.getClass().getName());
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new RdmaUnsafe();
    }

    private final class RdmaUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            if (!promise.setUncancellable() || !ensureOpen(promise)) {
                return;
            }
            if (endpoint != null) {
                promise.setFailure(new IllegalStateException("already connected"));
                return;
            }
            if (!(remote instanceof InetSocketAddress server)) {
                promise.setFailure(new IllegalArgumentException("connect to an InetSocketAddress (daemon address,"
                        + " service): " + remote));
                return;
            }
            // the set-up blocks (daemon round trips): a virtual thread does it, the loop stays free
            Thread.ofVirtual().name("rdma-connect").start(() -> {
                try {
                    Endpoint e = group.connect(server, options);
                    eventLoop().execute(() -> connected(e, promise));
                } catch (Exception ex) {
                    eventLoop().execute(() -> {
                        promise.tryFailure(annotateConnectException(ex, remote));
                        closeIfClosed();
                    });
                }
            });
        }

        private void connected(Endpoint e, ChannelPromise promise) {
            if (!open) {
                e.close();
                promise.tryFailure(new ClosedChannelException());
                return;
            }
            endpoint = e;
            watch(e);
            boolean wasActive = false;
            if (promise.trySuccess() && !wasActive) {
                pipeline().fireChannelActive(); // auto-read starts reading here
            }
        }
    }
}
