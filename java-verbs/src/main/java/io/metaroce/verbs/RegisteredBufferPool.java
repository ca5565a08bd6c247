package io.metaroce.verbs;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A pool of fixed-size registered buffers: one {@link MemoryRegion} that owns its memory
 * ({@link ProtectionDomain#allocateRegistered}), cut into {@code count} buffers of
 * {@code bufferSize} bytes, each with a {@link MemorySegment} and a {@link ByteBuffer} view, its
 * offset in the region and the region's keys.
 *
 * <pre>{@code
 * try (RegisteredBufferPool pool = RegisteredBufferPool.create(pd, 64, 4096, Access.LOCAL_WRITE)) {
 *     RegisteredBufferPool.Buffer b = pool.take();             // null when all are out
 *     b.segment().copyFrom(message);
 *     qp.postSend(wr.sge(b.region(), b.offset(), (int) message.byteSize()));
 *     ... once the send completed: pool.give(b);
 * }
 * }</pre>
 *
 * <p>{@link #take()} and {@link #give} allocate nothing (a stack of indices under a lock held
 * for a few instructions). Closing the pool closes the region and frees the memory: buffers still
 * out then throw on access, and posts over them throw. <b>Thread safety:</b> take and give from
 * any threads; a buffer belongs to one user between take and give.
 */
public final class RegisteredBufferPool implements AutoCloseable {

    private final MemoryRegion region;
    private final int bufferSize;
    private final Buffer[] buffers;
    /** Indices of the buffers in the pool, [0, top). Guarded by this. */
    private final int[] free;

    private final boolean[] out;
    private int top;

    private RegisteredBufferPool(MemoryRegion region, int count, int bufferSize) {
        this.region = region;
        this.bufferSize = bufferSize;
        this.buffers = new Buffer[count];
        this.free = new int[count];
        this.out = new boolean[count];
        for (int i = 0; i < count; i++) {
            buffers[i] = new Buffer(i);
            free[i] = count - 1 - i; // take() hands out buffer 0 first
        }
        this.top = count;
    }

    /**
     * Allocates and registers {@code count * bufferSize} bytes ({@code bufferSize} rounded up to
     * a multiple of 64, so buffers start on cache lines) in {@code pd} with {@link Access} flags
     * {@code access}.
     */
    public static RegisteredBufferPool create(ProtectionDomain pd, int count, int bufferSize, int access) {
        if (count < 1 || bufferSize < 1) {
            throw new IllegalArgumentException("count and bufferSize must be positive: " + count + ", " + bufferSize);
        }
        int size = (bufferSize + 63) & ~63;
        MemoryRegion mr = pd.allocateRegistered((long) size * count, access);
        return new RegisteredBufferPool(mr, count, size);
    }

    /** The region all buffers live in. */
    public MemoryRegion region() {
        return region;
    }

    /** Bytes per buffer (the requested size rounded up to 64). */
    public int bufferSize() {
        return bufferSize;
    }

    public int capacity() {
        return buffers.length;
    }

    /** Buffers in the pool now. */
    public synchronized int available() {
        return top;
    }

    /** A buffer out of the pool, or null when all are out. Its byte buffer is cleared. */
    public Buffer take() {
        region.ensureUsable();
        int i;
        synchronized (this) {
            if (top == 0) {
                return null;
            }
            i = free[--top];
            out[i] = true;
        }
        Buffer b = buffers[i];
        b.byteBuffer.clear();
        return b;
    }

    /**
     * Returns {@code b} to the pool (after the work requests that use it completed).
     *
     * @throws IllegalArgumentException when it is not of this pool or already returned
     */
    public void give(Buffer b) {
        if (b.pool() != this) {
            throw new IllegalArgumentException("buffer " + b.index + " is not from this pool");
        }
        synchronized (this) {
            if (!out[b.index]) {
                throw new IllegalArgumentException("buffer " + b.index + " was already given back");
            }
            out[b.index] = false;
            free[top++] = b.index;
        }
    }

    /** Closes the region: deregisters it and frees the memory. Double close: no-op. */
    @Override
    public void close() {
        region.close();
    }

    /** One buffer of the pool: a slice of the region. Valid while the pool is open. */
    public final class Buffer {
        private final int index;
        private final MemorySegment segment;
        private final ByteBuffer byteBuffer;

        private Buffer(int index) {
            this.index = index;
            this.segment = region.segment().asSlice((long) index * bufferSize, bufferSize);
            this.byteBuffer = segment.asByteBuffer();
        }

        RegisteredBufferPool pool() {
            return RegisteredBufferPool.this;
        }

        /** Its position in the pool, 0 .. capacity-1. */
        public int index() {
            return index;
        }

        /** Its memory. */
        public MemorySegment segment() {
            return segment;
        }

        /** A {@link ByteBuffer} view of its memory (one per buffer, cleared by {@link #take()}). */
        public ByteBuffer byteBuffer() {
            return byteBuffer;
        }

        /** Its offset in {@link #region()}: for {@code sge(region, offset, length)}. */
        public long offset() {
            return (long) index * bufferSize;
        }

        public MemoryRegion region() {
            return region;
        }

        /** Its address (what a peer puts in {@code remote_addr}). */
        public long address() {
            return region.address() + offset();
        }

        public int length() {
            return bufferSize;
        }

        public int lkey() {
            return region.lkey();
        }

        public int rkey() {
            return region.rkey();
        }
    }
}
