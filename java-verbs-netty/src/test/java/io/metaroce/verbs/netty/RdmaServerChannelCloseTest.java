package io.metaroce.verbs.netty;

import static org.assertj.core.api.Assertions.assertThat;

import io.metaroce.verbs.endpoint.Endpoint;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Closing an {@link RdmaServerChannel} while its accept is pending closes the listener, which
 * wakes the accept (as {@code EndpointListener.close()} does: the accept throws
 * {@link SocketException}); the accepting virtual thread then ends without accepting again.
 * The listener is a fake that blocks in {@code accept()} until closed, so the test controls when
 * the accept is pending: it closes only once the accept has been entered.
 */
class RdmaServerChannelCloseTest {

    /** Blocks every accept until closed, then throws SocketException, as EndpointListener does. */
    static final class BlockingAcceptor implements RdmaServerChannel.Acceptor {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch closed = new CountDownLatch(1);
        final AtomicInteger accepts = new AtomicInteger();
        final AtomicInteger closes = new AtomicInteger();
        final CompletableFuture<Thread> acceptor = new CompletableFuture<>();

        @Override
        public Endpoint accept() throws IOException {
            accepts.incrementAndGet();
            acceptor.complete(Thread.currentThread());
            entered.countDown();
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            throw new SocketException("listener closed");
        }

        @Override
        public void close() {
            closes.incrementAndGet();
            closed.countDown();
        }
    }

    @Test
    void closingTheServerChannelWakesItsPendingAcceptAndEndsTheAcceptThread() throws Exception {
        EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, RdmaIoHandler.newFactory());
        BlockingAcceptor fake = new BlockingAcceptor();
        AtomicInteger boundService = new AtomicInteger();
        try {
            RdmaServerChannel ch = new RdmaServerChannel(service -> {
                boundService.set(service);
                return fake;
            });
            loops.register(ch).sync();
            ch.bind(new InetSocketAddress(7320)).sync();
            assertThat(boundService.get()).as("the port is the service id").isEqualTo(7320);
            assertThat(ch.isActive()).isTrue();

            assertThat(fake.entered.await(30, TimeUnit.SECONDS))
                    .as("the accept thread entered accept()")
                    .isTrue();
            Thread acceptThread = fake.acceptor.get();
            assertThat(acceptThread.isVirtual()).isTrue();
            assertThat(acceptThread.getName()).isEqualTo("rdma-accept-7320");
            assertThat(acceptThread.isAlive()).as("accept is pending").isTrue();

            ch.close().sync();

            assertThat(ch.isOpen()).isFalse();
            assertThat(fake.closes.get()).as("the listener was closed once").isEqualTo(1);
            assertThat(acceptThread.join(java.time.Duration.ofSeconds(30)))
                    .as("the accept thread ended")
                    .isTrue();
            assertThat(fake.accepts.get()).as("no accept after the close").isEqualTo(1);
        } finally {
            fake.closed.countDown();
            loops.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }
}
