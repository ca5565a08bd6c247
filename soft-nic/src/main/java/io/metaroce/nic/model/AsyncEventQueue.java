package io.metaroce.nic.model;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The async events of one control connection (mrce_abi.h, "Async events"): a bounded FIFO the
 * engine posts into and GET_ASYNC_EVENT takes from. Each queued event writes 1 to the connection's
 * EFD_SEMAPHORE eventfd, so the application's {@code ibv_get_async_event} wakes once per event; an
 * event that finds the queue full is dropped and counted. Thread-safe and allocation-free; a post
 * never blocks beyond the monitor and one eventfd write.
 */
public final class AsyncEventQueue implements AsyncEventSink {
    private static final MemorySegment ONE = Arena.global().allocateFrom(ValueLayout.JAVA_LONG, 1L);

    private final int eventFd;
    private final int[] types;
    private final int[] elements;
    private long head;
    private long tail;
    private long dropped;
    private boolean closed;

    /**
     * @param eventFd the eventfd to write 1 to per queued event, or -1 for none
     * @param capacity events queued at most (MRCE_MAX_ASYNC_EVENTS)
     */
    public AsyncEventQueue(int eventFd, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        this.eventFd = eventFd;
        this.types = new int[capacity];
        this.elements = new int[capacity];
    }

    @Override
    public synchronized void post(int eventType, int element) {
        if (closed) {
            return;
        }
        if (tail - head == types.length) {
            dropped++;
            return;
        }
        int i = (int) (tail % types.length);
        types[i] = eventType;
        elements[i] = element;
        tail++;
        if (eventFd >= 0) {
            LibC.write(eventFd, ONE, 8);
        }
    }

    /**
     * Takes the oldest event: {@code eventType << 32 | element} (element unsigned), or -1 when none
     * is queued.
     */
    public synchronized long poll() {
        if (head == tail) {
            return -1;
        }
        int i = (int) (head % types.length);
        head++;
        return ((long) types[i] << 32) | (elements[i] & 0xffffffffL);
    }

    public synchronized int size() {
        return (int) (tail - head);
    }

    /** Events dropped because the queue was full. */
    public synchronized long dropped() {
        return dropped;
    }

    /**
     * Discards what is queued and ignores later posts; call before the eventfd is closed, so that
     * no post writes to a closed (or reused) descriptor.
     */
    public synchronized void close() {
        closed = true;
        head = tail;
    }
}
