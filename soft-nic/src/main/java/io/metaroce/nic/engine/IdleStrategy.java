package io.metaroce.nic.engine;

/**
 * What an engine thread does after a duty cycle that found no work (as Aeron's {@code
 * IdleStrategy}): spin, yield the CPU, or go to sleep. Sleeping is the runner's part (NEED_WAKEUP
 * on every ring, a re-check, then epoll_wait on the doorbells, the port's fds and the wake
 * eventfd), so {@link #idle} only says when. One instance per thread: a strategy counts its idle
 * cycles.
 */
public interface IdleStrategy {
    /** {@link #idle} spun ({@link Thread#onSpinWait}). */
    int SPUN = 0;
    /** {@link #idle} yielded the CPU ({@link Thread#yield}). */
    int YIELDED = 1;
    /** {@link #idle} says: sleep now, until an fd or the next transport deadline wakes the thread. */
    int SLEEP = 2;

    /** Idles once after a duty cycle without work; returns {@link #SPUN}, {@link #YIELDED} or {@link #SLEEP}. */
    int idle();

    /** A duty cycle did work (or the thread slept): the next idle spell starts from the beginning. */
    void reset();

    /**
     * Spins {@code spins} idle cycles, yields {@code yields} more, then sleeps: mrce-nicd's
     * default (--idle-spins 20, --idle-yields 0).
     */
    static IdleStrategy backoff(int spins, int yields) {
        if (spins < 0 || yields < 0) {
            throw new IllegalArgumentException("spins and yields must be 0 or more");
        }
        return new IdleStrategy() {
            private int idle;

            @Override
            public int idle() {
                int n = ++idle;
                if (n < spins) {
                    Thread.onSpinWait();
                    return SPUN;
                }
                if (n < spins + yields) {
                    Thread.yield();
                    return YIELDED;
                }
                return SLEEP;
            }

            @Override
            public void reset() {
                idle = 0;
            }
        };
    }

    /** Never sleeps, never yields: a thread with a core of its own and the lowest latency. */
    static IdleStrategy busySpin() {
        return new IdleStrategy() {
            @Override
            public int idle() {
                Thread.onSpinWait();
                return SPUN;
            }

            @Override
            public void reset() {}
        };
    }

    /** Never sleeps: yields the CPU on every idle cycle. */
    static IdleStrategy yielding() {
        return new IdleStrategy() {
            @Override
            public int idle() {
                Thread.yield();
                return YIELDED;
            }

            @Override
            public void reset() {}
        };
    }
}
