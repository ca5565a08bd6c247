package io.metaroce.verbs.netty;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Two {@link RdmaLink} ends joined in memory, stricter than an RC endpoint: a receive is posted
 * again only when the channel takes its message, and a message that finds no posted receive is
 * counted as an RNR (an endpoint would retry it; here it is a failure the tests assert against).
 * One "wire" thread delivers in order and completes the sends, as the poller would.
 */
final class TestLinkPair implements AutoCloseable {

    final End a;
    final End b;
    /** Messages that arrived with no receive posted. */
    final AtomicInteger rnr = new AtomicInteger();

    private final ExecutorService wire = Executors.newSingleThreadExecutor(r -> new Thread(r, "test-wire"));
    private final int messageSize;

    TestLinkPair(int sendDepth, int recvDepthA, int recvDepthB, int messageSize) {
        this.messageSize = messageSize;
        this.a = new End(sendDepth, recvDepthA, "a");
        this.b = new End(sendDepth, recvDepthB, "b");
        a.peer = b;
        b.peer = a;
    }

    @Override
    public void close() {
        a.close();
        wire.shutdownNow();
    }

    final class End implements RdmaLink {
        private final Semaphore slots;
        private final int recvDepth;
        private final String name;
        private final ArrayDeque<byte[]> inbox = new ArrayDeque<>();
        private final ArrayDeque<CompletableFuture<byte[]>> receivers = new ArrayDeque<>();
        private final CompletableFuture<Void> disconnected = new CompletableFuture<>();
        private End peer;
        private int posted;
        private int mostUntaken;
        private volatile boolean open = true;

        End(int sendDepth, int recvDepth, String name) {
            this.slots = new Semaphore(sendDepth);
            this.recvDepth = recvDepth;
            this.posted = recvDepth;
            this.name = name;
        }

        /** The most messages that had arrived here and were not yet taken (at most recvDepth without RNR). */
        synchronized int mostUntaken() {
            return mostUntaken;
        }

        @Override
        public int messageSize() {
            return messageSize;
        }

        @Override
        public int recvDepth() {
            return recvDepth;
        }

        @Override
        public int peerRecvDepth() {
            return peer.recvDepth;
        }

        @Override
        public CompletableFuture<Void> trySend(MemorySegment head, MemorySegment body) {
            if (!open) {
                throw new IllegalStateException(name + " is closed");
            }
            long len = head.byteSize() + body.byteSize();
            if (len > messageSize) {
                throw new IllegalArgumentException(len + " bytes > " + messageSize);
            }
            if (!slots.tryAcquire()) {
                return null;
            }
            byte[] m = new byte[(int) len];
            MemorySegment.copy(head, 0, MemorySegment.ofArray(m), 0, head.byteSize());
            MemorySegment.copy(body, 0, MemorySegment.ofArray(m), head.byteSize(), body.byteSize());
            CompletableFuture<Void> f = new CompletableFuture<>();
            wire.execute(() -> {
                slots.release();
                if (peer.arrive(m)) {
                    f.complete(null);
                } else {
                    f.completeExceptionally(new IllegalStateException("RNR: no receive posted at " + peer.name));
                }
            });
            return f;
        }

        private boolean arrive(byte[] m) {
            CompletableFuture<byte[]> r;
            synchronized (this) {
                if (!open) {
                    return false;
                }
                if (posted == 0) {
                    rnr.incrementAndGet();
                    return false;
                }
                posted--;
                mostUntaken = Math.max(mostUntaken, recvDepth - posted);
                r = receivers.poll();
                if (r == null) {
                    inbox.add(m);
                    return true;
                }
                posted++; // taken at once: posted again
            }
            r.complete(m);
            return true;
        }

        @Override
        public synchronized CompletableFuture<byte[]> receive() {
            byte[] m = inbox.poll();
            if (m != null) {
                posted++;
                return CompletableFuture.completedFuture(m);
            }
            if (!open) {
                return CompletableFuture.failedFuture(new IllegalStateException(name + " is closed"));
            }
            CompletableFuture<byte[]> f = new CompletableFuture<>();
            receivers.add(f);
            return f;
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public CompletableFuture<?> disconnected() {
            return disconnected;
        }

        @Override
        public SocketAddress remoteAddress() {
            return new InetSocketAddress(0);
        }

        @Override
        public void close() {
            end();
            peer.end(); // the peer learns it, as from its daemon
        }

        private void end() {
            ArrayDeque<CompletableFuture<byte[]>> waiting;
            synchronized (this) {
                if (!open) {
                    return;
                }
                open = false;
                waiting = new ArrayDeque<>(receivers);
                receivers.clear();
            }
            for (CompletableFuture<byte[]> r : waiting) {
                r.completeExceptionally(new IllegalStateException(name + " is closed"));
            }
            disconnected.complete(null);
        }
    }
}
