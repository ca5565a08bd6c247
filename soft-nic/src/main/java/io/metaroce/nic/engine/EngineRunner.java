package io.metaroce.nic.engine;

import io.metaroce.nic.sys.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an {@link EngineAgent} on its own thread. Idle strategy: spin, then yield, then sleep in
 * epoll_wait on the doorbells, the port's fds (UDP socket, or one AF_XDP socket per queue) and
 * the wake eventfd, after setting NEED_WAKEUP on every ring and re-checking (the provider rings a
 * doorbell only when that flag is set). The daemon spins briefly and does not yield by default:
 * on a machine shared with the applications, sleeping early leaves them the cores.
 */
public final class EngineRunner implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EngineRunner.class);
    private static final int MAX_EVENTS = 64;
    /** epoll_event.data (u64 at offset 4, packed): one layout, not one built per event. */
    private static final ValueLayout.OfLong EVENT_DATA = ValueLayout.JAVA_LONG.withByteAlignment(4);

    private final EngineAgent engine;
    private final int spins;
    private final int yields;
    private final Thread thread;
    private volatile boolean running = true;
    public volatile long sleeps;
    public volatile long wakeups;
    // Duty cycle, written by the engine thread only (read after it stopped: see summary()).
    private long busyCycles;
    private long busyNs;
    private long spinCycles;
    private long yieldCycles;
    private long sleepTimeouts;
    private long sleepNs;
    private final long startNs = System.nanoTime();
    /** Sleeps that ended with frames on receive queue q (its fd readable). */
    private final long[] queueWakeups;

    public EngineRunner(EngineAgent engine, int spins, int yields) {
        this.engine = engine;
        this.spins = spins;
        this.yields = yields;
        this.queueWakeups = new long[engine.portQueues()];
        this.thread = Thread.ofPlatform().name("mrce-engine").daemon(true).unstarted(this::run);
    }

    public void start() {
        thread.start();
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment events = arena.allocate(LibC.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
            MemorySegment scratch = arena.allocate(8, 8);
            int idle = 0;
            while (running) {
                long now = System.nanoTime();
                int work = engine.doWork(now);
                if (work > 0) {
                    busyNs += System.nanoTime() - now;
                    busyCycles++;
                    idle = 0;
                    continue;
                }
                idle++;
                if (idle < spins) {
                    spinCycles++;
                    Thread.onSpinWait();
                    continue;
                }
                if (idle < spins + yields) {
                    yieldCycles++;
                    Thread.yield();
                    continue;
                }
                engine.needWakeup(true);
                if (engine.doWork(System.nanoTime()) > 0) {
                    engine.needWakeup(false);
                    idle = 0;
                    continue;
                }
                long deadline = engine.nextDeadlineNs();
                int timeoutMs = 100;
                if (deadline != Long.MAX_VALUE) {
                    long waitNs = deadline - System.nanoTime();
                    timeoutMs = (int) Math.max(0, Math.min(100, (waitNs + 999_999) / 1_000_000));
                }
                sleeps++;
                long slept = System.nanoTime();
                int n = LibC.epollWait(engine.epollFd(), events, MAX_EVENTS, timeoutMs);
                sleepNs += System.nanoTime() - slept;
                if (n == 0) {
                    sleepTimeouts++;
                }
                for (int i = 0; i < n; i++) {
                    int fd = (int) events.get(EVENT_DATA,
                            i * LibC.EPOLL_EVENT_SIZE + 4);
                    int q = engine.portQueueOf(fd);
                    if (q < 0) {
                        LibC.read(fd, scratch, 8); // reset an eventfd (doorbell or wake)
                    } else {
                        queueWakeups[q]++;
                    }
                }
                if (n > 0) {
                    wakeups++;
                }
                engine.needWakeup(false);
                idle = 0;
            }
        } catch (Throwable t) {
            LOG.error("engine thread died", t);
        }
    }

    /**
     * The duty cycle since start: cycles that did work (and the wall time they took, which includes
     * any time the thread was preempted in them), idle cycles spent spinning and yielding,
     * sleeps in epoll_wait (woken by an fd or timed out) and the time asleep. Exact once
     * {@link #close} returned; a racy estimate before.
     */
    public String summary() {
        double s = (System.nanoTime() - startNs) / 1e9;
        return String.format("busy cycles %d (%.1f ms), spins %d, yields %d, sleeps %d (woken %d, timed out"
                + " %d; by frames on queues %s), asleep %.1f %% of %.1f s", busyCycles, busyNs / 1e6, spinCycles,
                yieldCycles, sleeps, wakeups, sleepTimeouts, java.util.Arrays.toString(queueWakeups),
                100.0 * sleepNs / 1e9 / Math.max(s, 1e-9), s);
    }

    @Override
    public void close() {
        running = false;
        engine.submit(() -> { });
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!thread.isAlive()) {
            // Commands queued while stopping (session teardown) still run, on this thread now.
            engine.doWork(System.nanoTime());
        }
    }
}
