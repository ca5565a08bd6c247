package io.metaroce.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * A completion channel ({@code struct ibv_comp_channel}): a file descriptor on which armed
 * completion queues ({@link CompletionQueue#requestNotify}) signal their next completion.
 * {@link #await(Duration)} waits for one event and returns its CQ; events are acknowledged by
 * {@link CompletionQueue#ackEvents()} (and at the latest when the CQ is closed).
 *
 * <p>The channel's fd is made non-blocking at creation, so {@code ibv_get_cq_event} never blocks
 * in native code: waits are a {@code poll()} with a timeout; for virtual threads one platform
 * thread per channel polls and the virtual threads park (their carriers stay free, however many
 * wait), and {@link #close()} wakes every wait in progress (it then throws
 * IllegalStateException).
 *
 * <p><b>Thread safety:</b> safe to share; several threads may wait at once (each event goes to
 * one of them).
 */
public final class CompletionChannel extends VerbsObject {

    static final Native.Verb DESTROY_COMP_CHANNEL =
            Native.verb("ibv_destroy_comp_channel", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final Native.Verb GET_CQ_EVENT =
            Native.verb("ibv_get_cq_event", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

    private final Context context;
    final MemorySegment ptr;
    private final int fd;
    private final FdWaiter waiter;

    CompletionChannel(Context context, MemorySegment ptr) {
        super(context);
        this.context = context;
        this.ptr = ptr.reinterpret(16);
        this.fd = this.ptr.get(JAVA_INT, Abi.COMP_CHANNEL_FD);
        int rc = Posix.setNonBlocking(fd);
        this.waiter = rc == 0 ? new FdWaiter(fd, this, "channel-fd-" + fd) : null;
        if (rc != 0) {
            DESTROY_COMP_CHANNEL.check(this.ptr);
            throw new VerbsException("fcntl", -rc, "making the completion channel's fd " + fd + " non-blocking");
        }
        attach();
    }

    /** The channel's file descriptor (non-blocking; to poll/epoll it yourself). */
    public int fd() {
        return fd;
    }

    /**
     * Takes one pending event without waiting: its CQ, or null when none is pending. Re-arm the
     * CQ with {@link CompletionQueue#requestNotify} before polling it empty.
     */
    public CompletionQueue tryGetEvent() {
        acquire();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cqOut = a.allocate(ADDRESS);
            MemorySegment ctxOut = a.allocate(ADDRESS);
            try {
                GET_CQ_EVENT.check(ptr, cqOut, ctxOut);
            } catch (VerbsException e) {
                if (e.errno() == Native.Errno.EAGAIN) {
                    return null;
                }
                throw e;
            }
            long addr = cqOut.get(ADDRESS, 0).address();
            CompletionQueue cq = context.cqs.get(addr);
            if (cq == null) {
                throw new IllegalStateException(String.format("completion event for an unknown CQ at 0x%x", addr));
            }
            cq.unackedEvents.incrementAndGet();
            return cq;
        } finally {
            release();
        }
    }

    /**
     * {@code ibv_get_cq_event} with a timeout: waits until an armed CQ of this channel completes
     * and returns it, or returns null when {@code timeout} passes first. A virtual thread parks
     * meanwhile (its carrier is free).
     *
     * @throws IllegalStateException when the channel is closed, also by a close during the wait
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public CompletionQueue await(Duration timeout) throws InterruptedException {
        long timeoutNs = timeout.isNegative() ? 0 : saturatedNanos(timeout);
        long deadline = System.nanoTime() + timeoutNs;
        for (; ; ) {
            CompletionQueue cq = tryGetEvent();
            if (cq != null) {
                return cq;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            if (waiter.await(left) == FdWaiter.WOKEN) {
                ensureOpen();
                throw new IllegalStateException(describe() + " is closed");
            }
        }
    }

    /**
     * Waits without a time limit for the next event and returns its CQ (see {@link #await}).
     *
     * @throws IllegalStateException when the channel is closed, also by a close during the wait
     */
    public CompletionQueue awaitEvent() {
        for (; ; ) {
            try {
                CompletionQueue cq = await(Duration.ofDays(1));
                if (cq != null) {
                    return cq;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting on " + describe(), e);
            }
        }
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }

    @Override
    public String describe() {
        return "CompletionChannel fd " + fd + " of " + context.deviceName();
    }

    @Override
    void wakeBlockedCalls() {
        waiter.wake();
    }

    @Override
    void destroy() {
        try {
            DESTROY_COMP_CHANNEL.check(ptr);
        } catch (RuntimeException e) {
            waiter.rearm();
            throw e;
        }
        waiter.close();
    }
}
