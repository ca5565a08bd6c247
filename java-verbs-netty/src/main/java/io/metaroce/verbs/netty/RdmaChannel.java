package io.metaroce.verbs.netty;

import io.metaroce.verbs.endpoint.Endpoint;
import io.metaroce.verbs.endpoint.EndpointGroup;
import io.metaroce.verbs.endpoint.EndpointOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.EventLoop;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * A Netty channel over one RC {@link Endpoint}: an unmodified pipeline of {@link ByteBuf}
 * handlers runs over RDMA SEND/RECV. Made by a {@code Bootstrap} with
 * {@code channelFactory(() -> new RdmaChannel(group, options))} and connected to
 * {@code new InetSocketAddress(daemonAddress, service)}, or accepted by an
 * {@link RdmaServerChannel}; registered with an {@link RdmaIoHandler} event loop. Both ends
 * must be {@code RdmaChannel}s: each message carries a 4-byte flow-control header.
 *
 * <ul>
 *   <li>Writes: each flushed buffer is cut into messages of at most
 *       {@link EndpointOptions#messageSize()} - 4 bytes, copied into the endpoint's registered
 *       send buffers and sent, while the endpoint has a free send slot and the peer has credits
 *       (see {@link CreditFlow}); the rest stays in the channel's outbound buffer, so
 *       {@code isWritable()} turns false past its high water mark and true again below the low
 *       one as sends complete and credits come back.
 *   <li>Reads: the channel takes every message from the endpoint as it arrives (credit messages
 *       are handled there and then) and keeps the data until the pipeline reads it: one
 *       {@code channelRead} (a heap {@code ByteBuf}) per {@code read()}. A data message's credit
 *       goes back to the peer when it is read, so with auto-read off at most
 *       {@code recvDepth - 1} messages wait here and the peer's writes stall. Message boundaries
 *       are kept, but handlers should treat the channel as a stream, as over TCP.
 *   <li>The peer going away (or any failed request, or a peer breaking the credit protocol)
 *       closes the channel ({@code channelInactive}); {@code close()} closes the endpoint.
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
    private final byte[] header = new byte[CreditFlow.HEADER];
    private final MemorySegment headerSegment = MemorySegment.ofArray(header);
    /** Data received and not yet read by the pipeline. */
    private final ArrayDeque<ByteBuf> received = new ArrayDeque<>();

    private volatile RdmaLink link;
    private volatile boolean open = true;
    private CreditFlow credits;
    private boolean readPending;
    private boolean receiving;
    private boolean delivering;
    private int mostWaiting;

    /** An unconnected client channel: connect it to {@code new InetSocketAddress(daemonAddress, service)}. */
    public RdmaChannel(EndpointGroup group, EndpointOptions options) {
        super(null);
        this.group = group;
        this.options = checked(options);
    }

    /** A channel over a connected link (an accepted endpoint, or a test's link). */
    RdmaChannel(Channel parent, RdmaLink link) {
        super(parent);
        this.group = null;
        this.options = null;
        this.credits = new CreditFlow(link.recvDepth(), link.peerRecvDepth());
        this.link = link;
        watch(link);
    }

    /** Options an RDMA channel can run with: room for a receive kept for credits and for the header. */
    static EndpointOptions checked(EndpointOptions o) {
        if (o.recvDepth() < 2 || o.messageSize() <= CreditFlow.HEADER) {
            throw new IllegalArgumentException("an RDMA channel needs recvDepth >= 2 (one receive is kept for credit"
                    + " messages) and messageSize > " + CreditFlow.HEADER + ": " + o);
        }
        return o;
    }

    /** The endpoint (null before the connect completed). */
    public Endpoint endpoint() {
        RdmaLink l = link;
        return l == null ? null : l.endpoint();
    }

    /** The most data messages that waited here for the pipeline to read them (at most the peer's credits). */
    int mostWaiting() {
        return mostWaiting;
    }

    /** Data messages the peer has room for now (on the event loop; -1 before the connect completed). */
    int sendCredits() {
        CreditFlow c = credits;
        return c == null ? -1 : c.sendCredits();
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
        RdmaLink l = link;
        return open && l != null && l.isOpen();
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return RdmaIoHandle.isCompatible(loop);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        handle.register(eventLoop(), promise);
        if (link != null) {
            eventLoop().execute(this::receiveAll); // after channelActive
        }
    }

    @Override
    protected void doDeregister() {
        handle.deregister();
    }

    @Override
    protected SocketAddress localAddress0() {
        return link == null ? null : new InetSocketAddress(0);
    }

    @Override
    protected SocketAddress remoteAddress0() {
        RdmaLink l = link;
        return l == null ? null : l.remoteAddress();
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
        RdmaLink l = link;
        if (l != null) {
            l.close();
        }
        for (ByteBuf b; (b = received.poll()) != null; ) {
            b.release();
        }
    }

    private void closeFromLoop() {
        if (open) {
            unsafe().close(voidPromise());
        }
    }

    /** The peer going away closes the channel. */
    private void watch(RdmaLink l) {
        l.disconnected().thenRun(() -> {
            if (isRegistered()) {
                eventLoop().execute(this::closeFromLoop);
            }
        });
    }

    // ---- reads ----

    @Override
    protected void doBeginRead() {
        readPending = true;
        deliver();
    }

    /** Takes the link's messages as they arrive, whatever the pipeline reads (credit messages must not wait). */
    private void receiveAll() {
        while (!receiving && open && link != null) {
            CompletableFuture<byte[]> f = link.receive();
            if (f.isDone() && !f.isCompletedExceptionally()) {
                onMessage(f.join()); // already here: no hop through the loop
                continue;
            }
            receiving = true;
            f.whenComplete((m, ex) -> eventLoop().execute(() -> {
                receiving = false;
                if (ex != null) {
                    closeFromLoop();
                    return;
                }
                onMessage(m);
                receiveAll();
            }));
        }
    }

    private void onMessage(byte[] m) {
        if (!open) {
            return;
        }
        boolean data;
        try {
            data = credits.received(m);
        } catch (IllegalStateException e) {
            pipeline().fireExceptionCaught(e);
            closeFromLoop();
            return;
        }
        if (data) {
            received.add(Unpooled.wrappedBuffer(m, CreditFlow.HEADER, m.length - CreditFlow.HEADER));
            mostWaiting = Math.max(mostWaiting, received.size());
            deliver();
        }
        sendCreditsIfDue(); // the peer may have seen our last credit message
        resumeWrites(); // credits may have come back
    }

    /** Hands waiting data to the pipeline, one message per read(); auto-read asks again in channelReadComplete. */
    private void deliver() {
        if (delivering) {
            return; // a read() from a handler inside the loop below
        }
        delivering = true;
        try {
            while (readPending && open) {
                ByteBuf b = received.poll();
                if (b == null) {
                    break;
                }
                readPending = false;
                credits.delivered();
                pipeline().fireChannelRead(b);
                pipeline().fireChannelReadComplete();
            }
        } finally {
            delivering = false;
        }
        sendCreditsIfDue();
    }

    // ---- writes ----

    private void sendCreditsIfDue() {
        RdmaLink l = link;
        if (!open || l == null || !credits.creditMessageDue()) {
            return;
        }
        credits.writeHeader(header);
        CompletableFuture<Void> sent;
        try {
            sent = l.trySend(headerSegment, MemorySegment.NULL);
        } catch (RuntimeException e) {
            closeFromLoop();
            return;
        }
        if (sent != null) { // else the send queue is full: a send completion tries again
            credits.creditMessageSent();
            sent.whenComplete((v, ex) -> eventLoop().execute(() -> afterSend(ex)));
        }
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        RdmaLink l = link;
        if (l == null || !l.isOpen()) {
            throw new ClosedChannelException();
        }
        int max = l.messageSize() - CreditFlow.HEADER;
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
            if (!credits.canSendData()) {
                return; // the peer has no receive free for us: the rest waits for credits
            }
            int len = Math.min(buf.readableBytes(), max);
            MemorySegment seg = MemorySegment.ofBuffer(buf.nioBuffer(buf.readerIndex(), len));
            credits.writeHeader(header);
            CompletableFuture<Void> sent = l.trySend(headerSegment, seg);
            if (sent == null) {
                return; // the send queue is full: the rest waits; a completion flushes again
            }
            credits.dataSent();
            sent.whenComplete((v, ex) -> eventLoop().execute(() -> afterSend(ex)));
            in.removeBytes(len);
        }
    }

    private void afterSend(Throwable ex) {
        if (ex != null) {
            closeFromLoop();
            return;
        }
        sendCreditsIfDue();
        resumeWrites();
    }

    /** Writes what was flushed and waits (for a send slot or credits); never flushes what is only written. */
    private void resumeWrites() {
        if (open) {
            ((RdmaUnsafe) unsafe()).resume();
        }
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf) {
            return msg;
        }
        throw new UnsupportedOperationException(
                "an RDMA channel writes ByteBufs, not " + msg.getClass().getName());
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new RdmaUnsafe();
    }

    private final class RdmaUnsafe extends AbstractUnsafe {

        void resume() {
            flush0();
        }

        /**
         * A link that ended before the channel's close (which the link's disconnect queues on the
         * loop) closes the channel here: the flushed writes fail as closed, as they will once it
         * is, not with Netty's "not yet connected" for a channel that is open but inactive.
         */
        @Override
        protected void flush0() {
            RdmaLink l = link;
            if (open && l != null && !l.isOpen()) {
                close(voidPromise());
                return;
            }
            super.flush0();
        }

        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            if (!promise.setUncancellable() || !ensureOpen(promise)) {
                return;
            }
            if (link != null) {
                promise.setFailure(new IllegalStateException("already connected"));
                return;
            }
            if (!(remote instanceof InetSocketAddress server)) {
                promise.setFailure(new IllegalArgumentException(
                        "connect to an InetSocketAddress (daemon address," + " service): " + remote));
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
            RdmaLink l = RdmaLink.of(e);
            try {
                credits = new CreditFlow(l.recvDepth(), l.peerRecvDepth());
            } catch (IllegalArgumentException bad) { // the peer's receive depth leaves no credits
                e.close();
                promise.tryFailure(bad);
                closeIfClosed();
                return;
            }
            link = l;
            watch(l);
            if (promise.trySuccess()) {
                pipeline().fireChannelActive(); // auto-read starts reading here
            }
            receiveAll();
        }
    }
}
