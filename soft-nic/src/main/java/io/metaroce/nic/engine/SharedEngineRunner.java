package io.metaroce.nic.engine;

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
 * One thread that runs the {@link EngineAgent}s of several devices (mrce-nicd {@code --threading
 * shared}, docs/multi-nic.md): each pass gives every engine one duty cycle; when none had work it
 * spins, yields, then sets NEED_WAKEUP on every engine, re-checks, and sleeps in epoll_wait on an
 * epoll set holding each engine's own epoll fd (doorbells, port fds, wake eventfd), so any
 * device's traffic wakes it. The same idle strategy as {@link EngineRunner}, which runs one
 * engine on a thread of its own. Engines join with {@link #add} and leave with {@link #remove}
 * (after which the caller owns the engine again); the single-device daemon does not use this.
 */
public final class SharedEngineRunner implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SharedEngineRunner.class);
    private static final int MAX_EVENTS = 64;
    private static final ValueLayout.OfLong EVENT_DATA = ValueLayout.JAVA_LONG.withByteAlignment(4);
    private static final long REMOVE_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(5);

    private final int spins;
    private final int yields;
    private final int epollFd;
    private final Thread thread;
    private volatile EngineAgent[] engines = new EngineAgent[0];
    private volatile boolean running = true;
    /** Passes started; {@link #remove} waits for two more to know the thread let go of an engine. */
    private volatile long passes;
    private volatile long sleeps;
    private volatile long busyPasses;

    public SharedEngineRunner(int spins, int yields) throws NativeException {
        this.spins = spins;
        this.yields = yields;
        this.epollFd = LibC.epollCreate1(LibC.EPOLL_CLOEXEC);
        this.thread = Thread.ofPlatform().name("mrce-engine-shared").daemon(true).unstarted(this::run);
    }

    public void start() {
        thread.start();
    }

    /** Lets the shared thread run {@code engine} from its next pass on. */
    public synchronized void add(EngineAgent engine) throws NativeException {
        LibC.epollCtl(epollFd, LibC.EPOLL_CTL_ADD, engine.epollFd(), LibC.EPOLLIN, engine.epollFd());
        EngineAgent[] next = Arrays.copyOf(engines, engines.length + 1);
        next[next.length - 1] = engine;
        engines = next;
    }

    /**
     * Takes {@code engine} out and returns once the shared thread no longer touches it; commands
     * still queued on it then run on the calling thread, as {@link EngineRunner#close} does.
     */
    public void remove(EngineAgent engine) {
        synchronized (this) {
            engines = Arrays.stream(engines).filter(e -> e != engine).toArray(EngineAgent[]::new);
        }
        long seen = passes;
        engine.submit(() -> { }); // wakes the thread if it sleeps (the engine's epoll is still in ours)
        long deadline = System.nanoTime() + REMOVE_TIMEOUT_NS;
        while (passes < seen + 2 && thread.isAlive() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(100_000);
        }
        try {
            LibC.epollCtl(epollFd, LibC.EPOLL_CTL_DEL, engine.epollFd(), 0, 0);
        } catch (NativeException e) {
            LOG.warn("engine epoll fd {} not removed from the shared set: {}", engine.epollFd(), e.getMessage());
        }
        engine.doWork(System.nanoTime());
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment events = arena.allocate(LibC.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
            MemorySegment scratch = arena.allocate(8, 8);
            int idle = 0;
            while (running) {
                passes++;
                EngineAgent[] es = engines;
                int work = 0;
                for (EngineAgent e : es) {
                    work += e.doWork(System.nanoTime());
                }
                if (work > 0) {
                    busyPasses++;
                    idle = 0;
                    continue;
                }
                idle++;
                if (idle < spins) {
                    Thread.onSpinWait();
                    continue;
                }
                if (idle < spins + yields) {
                    Thread.yield();
                    continue;
                }
                long deadline = Long.MAX_VALUE;
                for (EngineAgent e : es) {
                    e.needWakeup(true);
                }
                for (EngineAgent e : es) {
                    work += e.doWork(System.nanoTime());
                    deadline = Math.min(deadline, e.nextDeadlineNs());
                }
                if (work == 0) {
                    int timeoutMs = 100;
                    if (deadline != Long.MAX_VALUE) {
                        long waitNs = deadline - System.nanoTime();
                        timeoutMs = (int) Math.max(0, Math.min(100, (waitNs + 999_999) / 1_000_000));
                    }
                    sleeps++;
                    LibC.epollWait(epollFd, events, MAX_EVENTS, timeoutMs);
                    // Reset the eventfds (doorbells, wake) that woke us, engine by engine.
                    for (EngineAgent e : es) {
                        int n = LibC.epollWait(e.epollFd(), events, MAX_EVENTS, 0);
                        for (int i = 0; i < n; i++) {
                            int fd = (int) events.get(EVENT_DATA, i * LibC.EPOLL_EVENT_SIZE + 4);
                            if (e.portQueueOf(fd) < 0) {
                                LibC.read(fd, scratch, 8);
                            }
                        }
                    }
                }
                for (EngineAgent e : es) {
                    e.needWakeup(false);
                }
                idle = 0;
            }
        } catch (Throwable t) {
            LOG.error("shared engine thread died", t);
        }
    }

    /** Passes that did work and sleeps in epoll_wait since start (racy while running). */
    public String summary() {
        return "shared engine thread: passes " + passes + ", busy " + busyPasses + ", sleeps " + sleeps;
    }

    @Override
    public void close() {
        running = false;
        for (EngineAgent e : engines) {
            e.submit(() -> { });
        }
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LibC.close(epollFd);
    }
}
