package io.metaroce.verbs.netty;

import io.metaroce.verbs.endpoint.Endpoint;
import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;
import java.util.concurrent.CompletableFuture;

/**
 * The message link an {@link RdmaChannel} runs over: an {@link Endpoint} in production
 * ({@link #of(Endpoint)}), an in-memory pair in the tests. Messages keep their boundaries and
 * their order; a send's future completes when the peer has it.
 *
 * <p><b>Thread safety:</b> as {@link Endpoint}: any thread.
 */
interface RdmaLink {

    /** The largest message in bytes (header included). */
    int messageSize();

    /** Receives this side keeps posted (told to the peer at connect). */
    int recvDepth();

    /** Receives the peer keeps posted. */
    int peerRecvDepth();

    /** {@code head} then {@code body} as one message; null when the send queue is full. */
    CompletableFuture<Void> trySend(MemorySegment head, MemorySegment body);

    /** The next message, in arrival order. */
    CompletableFuture<byte[]> receive();

    boolean isOpen();

    /** Completes when the link ended (closed here or the peer went away). */
    CompletableFuture<?> disconnected();

    SocketAddress remoteAddress();

    void close();

    /** The endpoint under it (null for a test link). */
    default Endpoint endpoint() {
        return null;
    }

    static RdmaLink of(Endpoint e) {
        return new RdmaLink() {
            @Override
            public int messageSize() {
                return e.options().messageSize();
            }

            @Override
            public int recvDepth() {
                return e.options().recvDepth();
            }

            @Override
            public int peerRecvDepth() {
                return e.peerRecvDepth();
            }

            @Override
            public CompletableFuture<Void> trySend(MemorySegment head, MemorySegment body) {
                return e.trySend(head, body);
            }

            @Override
            public CompletableFuture<byte[]> receive() {
                return e.receive();
            }

            @Override
            public boolean isOpen() {
                return e.isOpen();
            }

            @Override
            public CompletableFuture<?> disconnected() {
                return e.disconnected();
            }

            @Override
            public SocketAddress remoteAddress() {
                return e.peer();
            }

            @Override
            public void close() {
                e.close();
            }

            @Override
            public Endpoint endpoint() {
                return e;
            }
        };
    }
}
