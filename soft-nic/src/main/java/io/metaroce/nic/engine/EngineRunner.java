package io.metaroce.nic.engine;

import io.metaroce.nic.dma.DmaBatch;
import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs {@link EngineAgent}s on one thread: a device's own ({@link #dedicated}, mrce-nicd with one
 * device or {@code --threading dedicated}) or one shared by several devices ({@code --threading
 * shared}, docs/multi-nic.md). Each pass gives every engine one duty cycle; after a pass without
 * work the {@link IdleStrategy} spins or yields, or says to sleep: then NEED_WAKEUP goes on every
 * ring, every engine is re-checked (the provider rings a doorbell only when that flag is set), and
 * the thread sleeps in epoll_wait until the next transport deadline (100 ms at most) on the
 * doorbells, the port's fds (UDP socket, or one AF_XDP socket per queue) and the wake eventfds:
 * one engine's own epoll set, or, with several, a set holding each engine's, so any device's
 * traffic wakes it. Engines join with {@link #add} and leave with {@link #remove} (after which the
 * caller owns the engine again).
 */
public final class EngineRunner implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EngineRunner.class);
    private static final int MAX_EVENTS = 64;
    /** epoll_event.data (u64 at offset 4, packed): one layout, not one built per event. */
    private static final ValueLayout.OfLong EVENT_DATA = ValueLayout.JAVA_LONG.withByteAlignment(4);

    private static final long REMOVE_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(5);
    private static final int MAX_SLEEP_MS = 100;

    /** An engine this thread runs, and its sleeps that ended with frames on receive queue q. */
    private record Slot(EngineAgent engine, long[] queueWakeups) {}

    private final IdleStrategy idle;
    private final int epollFd;
    private final Thread thread;
    private volatile Slot[] slots = new Slot[0];
    private volatile boolean running = true;
    /** Passes started; {@link #remove} waits for two more to know the thread let go of an engine. */
    private volatile long passes;
    // Duty cycle, written by the engine thread only (read after it stopped: see summary()).
    private long busyCycles;
    private long busyNs;
    private long spinCycles;
    private long yieldCycles;
    private long sleeps;
    private long wakeups;
    private long sleepTimeouts;
    private long sleepNs;
    private final long startNs = System.nanoTime();

    /** A runner for engines {@link #add}ed later, on thread {@code threadName}, idling with {@code idle}. */
    public EngineRunner(String threadName, IdleStrategy idle) throws NativeException {
        this.idle = idle;
        this.epollFd = LibC.epollCreate1(LibC.EPOLL_CLOEXEC);
        this.thread = Thread.ofPlatform().name(threadName).daemon(true).unstarted(this::run);
    }

    /** A runner of {@code engine} alone, on thread {@code mrce-engine}. */
    public static EngineRunner dedicated(EngineAgent engine, IdleStrategy idle) throws NativeException {
        EngineRunner r = new EngineRunner("mrce-engine", idle);
        r.add(engine);
        return r;
    }

    public void start() {
        thread.start();
    }

    /** Lets the thread run {@code engine} from its next pass on. */
    public synchronized void add(EngineAgent engine) throws NativeException {
        LibC.epollCtl(epollFd, LibC.EPOLL_CTL_ADD, engine.epollFd(), LibC.EPOLLIN, engine.epollFd());
        Slot[] next = Arrays.copyOf(slots, slots.length + 1);
        next[next.length - 1] = new Slot(engine, new long[engine.portQueues()]);
        slots = next;
    }

    /**
     * Takes {@code engine} out and returns once the thread no longer touches it; commands still
     * queued on it then run on the calling thread.
     */
    public void remove(EngineAgent engine) {
        synchronized (this) {
            slots = Arrays.stream(slots).filter(s -> s.engine() != engine).toArray(Slot[]::new);
        }
        long seen = passes;
        engine.submit(() -> {}); // wakes the thread if it sleeps (the engine's epoll is still in ours)
        long deadline = System.nanoTime() + REMOVE_TIMEOUT_NS;
        while (passes < seen + 2 && thread.isAlive() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(100_000);
        }
        try {
            LibC.epollCtl(epollFd, LibC.EPOLL_CTL_DEL, engine.epollFd(), 0, 0);
        } catch (NativeException e) {
            LOG.warn("engine epoll fd {} not removed from the runner's set: {}", engine.epollFd(), e.getMessage());
        }
        engine.doWork(System.nanoTime());
    }

    private void run() {
        if (!DmaBatch.enterCopyThread()) {
            LOG.info("engine thread {}: application memory through /proc/<pid>/mem only", thread.getName());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment events = arena.allocate(LibC.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
            MemorySegment scratch = arena.allocate(8, 8);
            while (running) {
                passes++;
                Slot[] ss = slots;
                long start = System.nanoTime();
                long now = start;
                int work = 0;
                for (Slot s : ss) {
                    work += s.engine().doWork(now);
                    now = System.nanoTime();
                }
                if (work > 0) {
                    busyNs += now - start;
                    busyCycles++;
                    idle.reset();
                    continue;
                }
                int phase = idle.idle();
                if (phase == IdleStrategy.SPUN) {
                    spinCycles++;
                    continue;
                }
                if (phase == IdleStrategy.YIELDED) {
                    yieldCycles++;
                    continue;
                }
                for (Slot s : ss) {
                    s.engine().needWakeup(true);
                }
                long deadline = Long.MAX_VALUE;
                for (Slot s : ss) {
                    work += s.engine().doWork(System.nanoTime());
                    deadline = Math.min(deadline, s.engine().nextDeadlineNs());
                }
                if (work == 0) {
                    sleep(ss, deadline, events, scratch);
                }
                for (Slot s : ss) {
                    s.engine().needWakeup(false);
                }
                idle.reset();
            }
        } catch (Throwable t) {
            LOG.error("engine thread {} died", thread.getName(), t);
        }
    }

    /** Sleeps in epoll_wait until an fd is ready or {@code deadlineNs}; resets the eventfds that woke it. */
    private void sleep(Slot[] ss, long deadlineNs, MemorySegment events, MemorySegment scratch) {
        int timeoutMs = MAX_SLEEP_MS;
        if (deadlineNs != Long.MAX_VALUE) {
            long waitNs = deadlineNs - System.nanoTime();
            timeoutMs = (int) Math.max(0, Math.min(MAX_SLEEP_MS, (waitNs + 999_999) / 1_000_000));
        }
        sleeps++;
        long slept = System.nanoTime();
        int ready = 0;
        if (ss.length == 1) {
            ready = drain(ss[0], timeoutMs, events, scratch); // the engine's own set: one syscall
        } else {
            LibC.epollWait(epollFd, events, MAX_EVENTS, timeoutMs);
            for (Slot s : ss) {
                ready += drain(s, 0, events, scratch);
            }
        }
        sleepNs += System.nanoTime() - slept;
        if (ready == 0) {
            sleepTimeouts++;
        } else {
            wakeups++;
        }
    }

    /** Waits up to {@code timeoutMs} on one engine's set; resets its ready eventfds, counts its queues. */
    private static int drain(Slot s, int timeoutMs, MemorySegment events, MemorySegment scratch) {
        int n = LibC.epollWait(s.engine().epollFd(), events, MAX_EVENTS, timeoutMs);
        for (int i = 0; i < n; i++) {
            int fd = (int) events.get(EVENT_DATA, i * LibC.EPOLL_EVENT_SIZE + 4);
            int q = s.engine().portQueueOf(fd);
            if (q < 0) {
                LibC.read(fd, scratch, 8); // reset an eventfd (doorbell or wake)
            } else {
                s.queueWakeups()[q]++;
            }
        }
        return Math.max(n, 0);
    }

    /**
     * The duty cycle since start: cycles that did work (and the wall time they took, which includes
     * any time the thread was preempted in them), idle cycles spent spinning and yielding,
     * sleeps in epoll_wait (woken by an fd or timed out) and the time asleep. Exact once
     * {@link #close} returned; a racy estimate before.
     */
    public String summary() {
        double s = (System.nanoTime() - startNs) / 1e9;
        StringBuilder queues = new StringBuilder();
        for (Slot slot : slots) {
            queues.append(queues.isEmpty() ? "" : " ").append(Arrays.toString(slot.queueWakeups()));
        }
        return String.format(
                "%s: busy cycles %d (%.1f ms), spins %d, yields %d, sleeps %d (woken %d, timed out"
                        + " %d; by frames on queues %s), asleep %.1f %% of %.1f s",
                thread.getName(),
                busyCycles,
                busyNs / 1e6,
                spinCycles,
                yieldCycles,
                sleeps,
                wakeups,
                sleepTimeouts,
                queues,
                100.0 * sleepNs / 1e9 / Math.max(s, 1e-9),
                s);
    }

    /**
     * Stops the thread; commands queued while stopping (session teardown) still run, on the
     * calling thread, on the engines not {@link #remove}d.
     */
    @Override
    public void close() {
        running = false;
        Slot[] ss = slots;
        for (Slot s : ss) {
            s.engine().submit(() -> {});
        }
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!thread.isAlive()) {
            for (Slot s : ss) {
                s.engine().doWork(System.nanoTime());
            }
        }
        LibC.close(epollFd);
    }
}
