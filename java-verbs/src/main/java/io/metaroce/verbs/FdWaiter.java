package io.metaroce.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Waits for one file descriptor to become readable, with a timeout, woken early by
 * {@link #wake()}: {@code poll()} on the fd and a private eventfd.
 *
 * <p>A platform thread calls {@code poll()} itself. Virtual threads never do (a native call
 * cannot unmount them, so it would hold the carrier): they park on a {@link Condition} while one
 * platform thread per waiter object, started on demand and gone after {@link #IDLE_EXIT_S}
 * seconds without waiters, polls for all of them and signals them when the fd is readable. Any
 * number of waiting virtual threads thus cost one platform thread. Readiness is level-triggered:
 * after a signal each waiter tries its non-blocking read and waits again if another took it.
 *
 * <p>Once woken the waiter stays woken (every later wait returns {@link #WOKEN} at once): it is
 * meant for close. Thread-safe.
 */
final class FdWaiter implements AutoCloseable {

    static final int READY = 1;
    static final int TIMEOUT = 0;
    static final int WOKEN = -1;

    /** Longest single poll() of the shared poller, so it notices that every waiter left. */
    private static final int POLL_SLICE_MS = 100;
    /** The shared poller thread ends after this long without waiters. */
    static final int IDLE_EXIT_S = 10;

    private final int fd;
    private final VerbsObject guard;
    private final int wakeFd;
    private final String name;
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when the fd was seen readable (a new generation) or on wake. */
    private final Condition changed = lock.newCondition();
    /** Signalled when a virtual thread starts waiting. */
    private final Condition wanted = lock.newCondition();

    private long generation;
    /** Virtual threads waiting for the current generation. */
    private int waiting;

    private Thread poller;
    private volatile boolean woken;

    /**
     * @param fd the descriptor to wait on
     * @param guard when not null, held (acquired) during every native poll of {@code fd}, so its
     *     close waits for the poll (and a closing guard ends the waits)
     */
    FdWaiter(int fd, VerbsObject guard, String name) {
        int w = Posix.eventfd();
        if (w < 0) {
            throw new VerbsException("eventfd", -w);
        }
        this.fd = fd;
        this.guard = guard;
        this.wakeFd = w;
        this.name = name;
    }

    /**
     * Waits until the fd is readable ({@link #READY}), {@code timeoutNs} passed ({@link #TIMEOUT};
     * negative: no limit) or {@link #wake()} was called ({@link #WOKEN}). A virtual thread parks.
     */
    int await(long timeoutNs) throws InterruptedException {
        if (woken) {
            return WOKEN;
        }
        if (!Thread.currentThread().isVirtual()) {
            long ms = timeoutNs < 0 ? -1 : Math.min(Integer.MAX_VALUE, (timeoutNs + 999_999) / 1_000_000);
            return pollOnce((int) ms);
        }
        lock.lock();
        try {
            if (woken) {
                return WOKEN;
            }
            long gen = generation;
            waiting++;
            if (poller == null) {
                poller = Thread.ofPlatform()
                        .daemon()
                        .name("jverbs-fd-wait-" + name)
                        .start(this::pollForWaiters);
            }
            wanted.signal();
            long left = timeoutNs < 0 ? Long.MAX_VALUE : timeoutNs;
            try {
                while (generation == gen) {
                    if (left <= 0) {
                        waiting--;
                        return TIMEOUT;
                    }
                    left = changed.awaitNanos(left);
                }
            } catch (InterruptedException e) {
                if (generation == gen) {
                    waiting--;
                }
                throw e;
            }
            return woken ? WOKEN : READY;
        } finally {
            lock.unlock();
        }
    }

    /** The shared poller: polls while virtual threads wait, signals them, ends when idle or woken. */
    private void pollForWaiters() {
        for (; ; ) {
            lock.lock();
            try {
                while (waiting == 0 && !woken) {
                    if (!wanted.await(IDLE_EXIT_S, TimeUnit.SECONDS) && waiting == 0) {
                        poller = null;
                        return;
                    }
                }
                if (woken) {
                    poller = null;
                    return;
                }
            } catch (InterruptedException e) {
                poller = null;
                return;
            } finally {
                lock.unlock();
            }
            int r = pollOnce(POLL_SLICE_MS);
            if (r != TIMEOUT) {
                lock.lock();
                try {
                    generation++;
                    waiting = 0;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    private int pollOnce(int timeoutMs) {
        if (guard != null) {
            try {
                guard.acquire();
            } catch (IllegalStateException closing) {
                return WOKEN;
            }
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment fds = a.allocate(2 * Posix.POLLFD_SIZE, 8);
            Posix.setPollFd(fds, 0, fd);
            Posix.setPollFd(fds, 1, wakeFd);
            int n = Posix.poll(fds, 2, timeoutMs);
            if (n == -Native.Errno.EINTR) {
                return TIMEOUT; // the callers loop on their own deadlines
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
        lock.lock();
        try {
            woken = true;
            generation++;
            waiting = 0;
            changed.signalAll();
            wanted.signalAll();
        } finally {
            lock.unlock();
        }
        Posix.writeCounter(wakeFd, 1);
    }

    /** Undoes {@link #wake()} (a close that failed). */
    void rearm() {
        woken = false;
        Posix.readCounter(wakeFd);
    }

    /** Wakes every wait, waits for the shared poller to end, frees the eventfd. */
    @Override
    public void close() {
        if (!woken) {
            wake();
        }
        Thread t;
        lock.lock();
        try {
            t = poller;
        } finally {
            lock.unlock();
        }
        if (t != null && t != Thread.currentThread()) {
            boolean interrupted = false;
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        Posix.close(wakeFd);
    }
}
