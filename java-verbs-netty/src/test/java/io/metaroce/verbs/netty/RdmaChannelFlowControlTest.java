package io.metaroce.verbs.netty;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The RDMA channel's credit-based flow control, on {@link RdmaIoHandler} loops over an in-memory
 * {@link TestLinkPair} that counts every message finding no posted receive: a reader with
 * auto-read off that reads in bursts holds a 64 MiB writer back (its pending bytes stay under the
 * high water mark plus one write, the channel turns unwritable and writable again), every byte
 * arrives in order, and no message ever lacks a receive; an echo both ways returns every credit.
 */
class RdmaChannelFlowControlTest {

    private static final int MESSAGE_SIZE = 4096;
    private static final int CHUNK = 16 * 1024;
    private static final int LOW_WATER = 32 * 1024;
    private static final int HIGH_WATER = 64 * 1024;

    private EventLoopGroup loops;
    private TestLinkPair pair;

    @BeforeEach
    void start() {
        loops = new MultiThreadIoEventLoopGroup(2, RdmaIoHandler.newFactory());
    }

    @AfterEach
    void stop() throws Exception {
        if (pair != null) {
            pair.close();
        }
        loops.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
    }

    /** An RDMA channel over {@code end} with {@code handlers}, registered with a loop (and active: the link is up). */
    private RdmaChannel open(TestLinkPair.End end, boolean autoRead, ChannelHandler... handlers) throws Exception {
        RdmaChannel ch = new RdmaChannel(null, end);
        ch.config().setAutoRead(autoRead);
        ch.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(LOW_WATER, HIGH_WATER));
        ch.pipeline().addLast(handlers);
        loops.register(ch).sync();
        return ch;
    }

    /** A stream of {@code total} bytes that is not periodic within a message, and its CRC. */
    private static ByteBuf stream(long total, CRC32 crc) {
        byte[] a = new byte[(int) total];
        new java.util.Random(total).nextBytes(a);
        crc.update(a);
        return Unpooled.wrappedBuffer(a);
    }

    /** Writes slices of {@code source} while the channel is writable; resumes when it is writable again. */
    private static final class Writer extends ChannelInboundHandlerAdapter {
        final ByteBuf source;
        final AtomicInteger unwritable = new AtomicInteger();
        final AtomicInteger writableAgain = new AtomicInteger();
        final AtomicLong mostPending = new AtomicLong();
        final AtomicBoolean allWritten = new AtomicBoolean();

        Writer(ByteBuf source) {
            this.source = source;
        }

        /** Starts writing on {@code ch}'s loop (the test's channels are active once registered). */
        void start(RdmaChannel ch) {
            ch.eventLoop().execute(() -> writeMore(ch.pipeline().context(this)));
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (!ctx.channel().isWritable()) {
                unwritable.incrementAndGet();
                return;
            }
            writableAgain.incrementAndGet();
            writeMore(ctx);
        }

        private void writeMore(ChannelHandlerContext ctx) {
            ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
            for (;
                    ctx.channel().isWritable() && source.isReadable();
                    mostPending.accumulateAndGet(out.totalPendingWriteBytes(), Math::max)) {
                ctx.write(source.readRetainedSlice(Math.min(CHUNK, source.readableBytes())));
            }
            ctx.flush();
            allWritten.set(!source.isReadable());
        }
    }

    /** Reads only as many messages as it was granted, checks the stream with a CRC. */
    private static final class SlowReader extends ChannelInboundHandlerAdapter {
        final CRC32 crc = new CRC32();
        final AtomicLong bytes = new AtomicLong();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final long total;
        long budget;

        SlowReader(long total) {
            this.total = total;
        }

        /** On the reader's loop: read {@code messages} more. */
        void grant(ChannelHandlerContext ctx, long messages) {
            boolean idle = budget == 0;
            budget = Math.min(Long.MAX_VALUE / 2, budget + messages);
            if (idle) {
                budget--;
                ctx.read();
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            int n = b.readableBytes();
            crc.update(b.nioBuffer());
            b.release();
            if (bytes.addAndGet(n) == total) {
                done.complete(null);
            }
            if (budget > 0) { // one message per read(): ask for the next while the grant lasts
                budget--;
                ctx.read();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }

    @Test
    void aSlowReaderWithAutoReadOffHoldsBackA64MiBWriterAndEveryByteArrivesInOrder() throws Exception {
        long total = 64L << 20;
        int recvDepth = 16;
        pair = new TestLinkPair(8, recvDepth, recvDepth, MESSAGE_SIZE);
        CRC32 sent = new CRC32();
        Writer writer = new Writer(stream(total, sent));
        SlowReader reader = new SlowReader(total);

        RdmaChannel r = open(pair.b, false, reader);
        ChannelHandlerContext readerCtx = r.pipeline().context(reader);
        RdmaChannel w = open(pair.a, true, writer);
        writer.start(w);

        // each time the writer is held back (unwritable, no credit left), the reader reads a burst of 64 messages
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        int bursts = 0;
        while (!writer.allWritten.get()) {
            assertThat(System.nanoTime())
                    .as("the writer wrote %d of %d bytes", writer.source.readerIndex(), total)
                    .isLessThan(deadline);
            boolean heldBack = w.eventLoop()
                    .submit(() -> !w.isWritable() && w.sendCredits() == 0)
                    .get();
            if (heldBack) {
                if (bursts == 0) {
                    // the writer's last credited messages may still be on the wire: the reader has
                    // read nothing yet, so it holds all of them before its first grant
                    while (r.eventLoop().submit(r::mostWaiting).get() < recvDepth - 1) {
                        assertThat(System.nanoTime())
                                .as("the reader holds the writer's credits")
                                .isLessThan(deadline);
                        java.util.concurrent.locks.LockSupport.parkNanos(50_000);
                    }
                }
                r.eventLoop().execute(() -> reader.grant(readerCtx, 64));
                bursts++;
                // bounded wait until the burst let the writer go on, or until the reader used up its
                // grant (the burst may free the writer and see it held back again before this thread
                // looks: a new hold, which the outer loop answers with a new grant)
                while (w.eventLoop()
                                .submit(() -> !w.isWritable() && w.sendCredits() == 0)
                                .get()
                        && r.eventLoop().submit(() -> reader.budget > 0).get()
                        && !writer.allWritten.get()) {
                    assertThat(System.nanoTime()).isLessThan(deadline);
                    java.util.concurrent.locks.LockSupport.parkNanos(50_000);
                }
            } else {
                java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }
        }
        r.eventLoop().execute(() -> reader.grant(readerCtx, Long.MAX_VALUE / 4));
        reader.done.get(120, TimeUnit.SECONDS);

        assertThat(reader.bytes.get()).isEqualTo(total);
        assertThat(reader.crc.getValue()).isEqualTo(sent.getValue());
        assertThat(pair.rnr.get()).as("messages that found no posted receive").isZero();
        assertThat(pair.b.mostUntaken()).isLessThanOrEqualTo(recvDepth);
        assertThat(r.mostWaiting())
                .as("unread messages at the reader: exactly the writer's credits")
                .isEqualTo(recvDepth - 1);
        assertThat(bursts).as("times the writer was held back by credits").isGreaterThanOrEqualTo(100);
        assertThat(writer.mostPending.get()).as("the writer's pending bytes").isLessThanOrEqualTo(HIGH_WATER + CHUNK);
        assertThat(writer.unwritable.get())
                .as("times the writer turned unwritable")
                .isGreaterThanOrEqualTo(2);
        assertThat(writer.writableAgain.get())
                .as("times it turned writable again")
                .isGreaterThanOrEqualTo(2);
        assertThat(w.isActive()).isTrue();
        System.out.printf(
                "flow control: %d MiB, held back %d times, unwritable %d times, most pending %d bytes,"
                        + " most unread %d%n",
                total >> 20, bursts, writer.unwritable.get(), writer.mostPending.get(), r.mostWaiting());
    }

    /** Echoes each message it reads (auto-read on). */
    private static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.writeAndFlush(msg);
        }
    }

    @Test
    void anEchoBothWaysWithSmallDepthsReturnsEveryCredit() throws Exception {
        long total = 8L << 20;
        pair = new TestLinkPair(4, 2, 3, MESSAGE_SIZE); // one data credit one way, two the other
        CRC32 sent = new CRC32();
        Writer writer = new Writer(stream(total, sent));
        SlowReader back = new SlowReader(total);

        open(pair.b, true, new Echo());
        RdmaChannel client = open(pair.a, true, back, writer);
        writer.start(client);
        client.eventLoop().execute(() -> back.grant(client.pipeline().context(back), Long.MAX_VALUE / 4));

        back.done.get(120, TimeUnit.SECONDS);
        assertThat(back.crc.getValue()).isEqualTo(sent.getValue());
        assertThat(pair.rnr.get()).isZero();
        assertThat(pair.a.mostUntaken()).isLessThanOrEqualTo(2);
        assertThat(pair.b.mostUntaken()).isLessThanOrEqualTo(3);
    }

    @Test
    void closingTheReaderWhileTheWriterIsHeldBackClosesTheWriterAndFailsItsPendingWrites() throws Exception {
        pair = new TestLinkPair(8, 16, 16, MESSAGE_SIZE);
        Writer writer = new Writer(stream(64L << 20, new CRC32()));
        RdmaChannel r = open(pair.b, false);
        RdmaChannel w = open(pair.a, true, writer);
        writer.start(w);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!w.eventLoop()
                .submit(() -> !w.isWritable() && w.sendCredits() == 0)
                .get()) {
            assertThat(System.nanoTime()).as("the writer is held back").isLessThan(deadline);
            java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
        io.netty.channel.ChannelFuture pending = w.eventLoop()
                .submit(() -> w.write(Unpooled.wrappedBuffer(new byte[10])))
                .get();

        r.close().sync(); // the link ends at both sides, as when the peer's daemon announces it

        assertThat(w.closeFuture().await(30, TimeUnit.SECONDS))
                .as("the writer closed")
                .isTrue();
        assertThat(pending.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(pending.cause())
                .as("a write pending at the close")
                .isInstanceOf(java.nio.channels.ClosedChannelException.class);
        io.netty.channel.ChannelFuture late = w.writeAndFlush(Unpooled.wrappedBuffer(new byte[10]));
        assertThat(late.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(late.cause())
                .as("a write after the close")
                .isInstanceOf(java.nio.channels.ClosedChannelException.class);
        assertThat(pair.rnr.get()).isZero();
    }

    /**
     * The link ends and a flush comes before the close that the link's disconnect queues on the
     * loop (a send completion resuming the writes, in a CI run): the flushed write fails as closed,
     * not as "not yet connected". Both steps run in one task on the loop, so the order is fixed.
     */
    @Test
    void aFlushAfterTheLinkEndedBeforeTheChannelClosedFailsTheWriteAsClosed() throws Exception {
        pair = new TestLinkPair(8, 16, 16, MESSAGE_SIZE);
        open(pair.b, false);
        RdmaChannel w = open(pair.a, false);
        io.netty.channel.ChannelFuture pending = w.eventLoop()
                .submit(() -> {
                    pair.a.close();
                    return w.writeAndFlush(Unpooled.wrappedBuffer(new byte[10]));
                })
                .get();
        assertThat(pending.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(pending.cause())
                .as("a write flushed after the link ended")
                .isInstanceOf(java.nio.channels.ClosedChannelException.class);
        assertThat(w.closeFuture().await(30, TimeUnit.SECONDS))
                .as("the channel closed")
                .isTrue();
    }

    @Test
    void aPeerReturningMoreCreditsThanItsWindowIsAProtocolError() {
        CreditFlow f = new CreditFlow(4, 4);
        byte[] tooMany = {0, 4, 0, 0, 1};
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> f.received(tooMany))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("window is 3");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new CreditFlow(1, 16))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("kept for credit messages");
    }

    @Test
    void creditsGoBackPiggybackedOrInOneCreditMessageAtATime() {
        CreditFlow f = new CreditFlow(9, 9); // window 8, threshold 4
        byte[] h = new byte[CreditFlow.HEADER];
        for (int i = 0; i < 8; i++) {
            assertThat(f.canSendData()).isTrue();
            f.writeHeader(h);
            f.dataSent();
        }
        assertThat(f.canSendData()).isFalse();
        for (int i = 0; i < 4; i++) {
            assertThat(f.received(new byte[] {0, 0, 0, 0, 42})).isTrue();
            f.delivered();
        }
        assertThat(f.creditMessageDue()).isTrue();
        f.writeHeader(h);
        f.creditMessageSent();
        assertThat(h).containsExactly(0, 4, 0, 0);
        for (int i = 0; i < 4; i++) {
            f.received(new byte[] {0, 0, 0, 0, 42});
            f.delivered();
        }
        assertThat(f.creditMessageDue()).as("one credit message outstanding").isFalse();
        assertThat(f.received(new byte[] {0, 8, 0, 1}))
                .as("a credit message seeing ours")
                .isFalse();
        assertThat(f.sendCredits()).isEqualTo(8);
        assertThat(f.creditMessageDue()).isTrue();
        f.writeHeader(h);
        assertThat(h).containsExactly(0, 4, 0, 1);
    }
}
