package io.metaroce.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Waits for a file descriptor to become readable, with a timeout, woken early by
 * {@link #wake()}: {@code poll()} on the fd and a private eventfd. A platform thread calls
 * {@code poll()} itself; a virtual thread hands the {@code poll()} to a platform thread of a
 * shared pool and parks on its result, so a waiting virtual thread never holds its carrier
 * (a native call cannot unmount it). Once woken the waiter stays woken (every later wait returns
 * {@link #WOKEN} at once): it is meant for close.
 */
final class FdWaiter implements AutoCloseable {

    static final int READY = 1;
    static final int TIMEOUT = 0;
    static final int WOKEN = -1;

    /** Platform threads that run the poll() of waiting virtual threads (one per concurrent wait). */
    private static final ExecutorService POLLERS = Executors.newCachedThreadPool(
            Thread.ofPlatform().daemon().name("jverbs-fd-wait-", 0).factory());

    private final int wakeFd;
    private volatile boolean woken;

    FdWaiter() {
        int fd = Posix.eventfd();
        if (fd < 0) {
            throw new VerbsException("eventfd", -fd);
        }
        this.wakeFd = fd;
    }

    /**
     * Waits until {@code fd} is readable ({@link #READY}), {@code timeoutNs} passed
     * ({@link #TIMEOUT}; negative: no limit) or {@link #wake()} was called ({@link #WOKEN}).
     * {@code guard}, when not null, is held (acquired) for the duration of the native poll.
     */
    int await(int fd, long timeoutNs, VerbsObject guard) throws InterruptedException {
        if (woken) {
            return WOKEN;
        }
        if (!Thread.currentThread().isVirtual()) {
            return pollOnce(fd, timeoutNs, guard);
        }
        Future<Integer> f = POLLERS.submit(() -> pollOnce(fd, timeoutNs, guard));
        try {
            return timeoutNs < 0 ? f.get() : f.get(timeoutNs + TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return TIMEOUT; // the poll ends by its own timeout
        } catch (ExecutionException e) {
            throw CompletionQueue.rethrow(e.getCause());
        }
    }

    private int pollOnce(int fd, long timeoutNs, VerbsObject guard) {
        int timeoutMs = timeoutNs < 0 ? -1 : (int) Math.min(Integer.MAX_VALUE, (timeoutNs + 999_999) / 1_000_000);
        if (guard != null) {
            guard.acquire();
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment fds = a.allocate(2 * Posix.POLLFD_SIZE, 8);
            Posix.setPollFd(fds, 0, fd);
            Posix.setPollFd(fds, 1, wakeFd);
            int n = Posix.poll(fds, 2, timeoutMs);
            if (n == -Posix.EINTR) {
                return TIMEOUT; // the caller loops on its own deadline
            }
            if (n < 0) {
                throw new VerbsException("poll", -n, "waiting for fd " + fd);
            }
            if (woken || Posix.revents(fds, 1) != 0) {
                return WOKEN;
            }
            return n > 0 ? READY : TIMEOUT;
        } finally {
            if (guard != null) {
                guard.release();
            }
        }
    }

    /** Makes every wait, in progress or later, return {@link #WOKEN}. */
    void wake() {
        woken = true;
        Posix.writeCounter(wakeFd, 1);
    }

    /** Undoes {@link #wake()} (a close that failed). */
    void rearm() {
        woken = false;
        Posix.readCounter(wakeFd);
    }

    @Override
    public void close() {
        Posix.close(wakeFd);
    }
}
