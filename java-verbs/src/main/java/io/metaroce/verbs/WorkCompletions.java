package io.metaroce.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A reusable native array of {@code struct ibv_wc} that {@link CompletionQueue#poll} fills, with
 * one {@link WorkCompletion} flyweight per slot: reading completions allocates nothing.
 *
 * <pre>{@code
 * try (WorkCompletions wcs = new WorkCompletions(16)) {
 *     int n = cq.poll(wcs);
 *     for (int i = 0; i < n; i++) {
 *         WorkCompletion wc = wcs.get(i).check();   // throws WorkCompletionException on error status
 *         handle(wc.wrId(), wc.byteLength());
 *     }
 * }
 * }</pre>
 *
 * Not thread-safe: one poller at a time. Closing frees the native array (double close: no-op).
 */
public final class WorkCompletions implements AutoCloseable {

    private final Arena arena;
    final MemorySegment segment;
    private final WorkCompletion[] slots;
    int count;

    public WorkCompletions(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1: " + capacity);
        }
        this.arena = Arena.ofShared();
        this.segment = arena.allocate(Abi.WC_SIZE * capacity, 8);
        this.slots = new WorkCompletion[capacity];
        for (int i = 0; i < capacity; i++) {
            slots[i] = new WorkCompletion(segment.asSlice(Abi.WC_SIZE * i, Abi.WC_SIZE));
        }
    }

    public int capacity() {
        return slots.length;
    }

    /** How many completions the last poll returned. */
    public int count() {
        return count;
    }

    /** The flyweight of slot {@code i}; valid until the next poll into this array. */
    public WorkCompletion get(int i) {
        return slots[i];
    }

    /** The native {@code struct ibv_wc[]}. */
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
