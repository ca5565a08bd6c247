package io.metaroce.nic.verbs;

import io.metaroce.nic.sys.LibC;
import io.metaroce.nic.sys.NativeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the pidfds of the sessions' processes (epoll, one daemon thread): when a process exits
 * its pidfd becomes readable and {@code onExit} gets the session id at once, whoever still holds
 * the socket (a child it was passed to, for instance). One-shot per pidfd: the session's teardown
 * closes it.
 */
final class ProcessWatcher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ProcessWatcher.class);
    private static final int EPOLLONESHOT = 1 << 30;
    private static final int MAX_EVENTS = 16;

    private final int epfd;
    private final int wakeFd;
    private final LongConsumer onExit;
    private final Thread thread;
    private volatile boolean running = true;

    ProcessWatcher(LongConsumer onExit) throws NativeException {
        this.onExit = onExit;
        this.epfd = LibC.epollCreate1(LibC.EPOLL_CLOEXEC);
        try {
            this.wakeFd = LibC.eventfd(0, LibC.EFD_CLOEXEC | LibC.EFD_NONBLOCK);
            LibC.epollCtl(epfd, LibC.EPOLL_CTL_ADD, wakeFd, LibC.EPOLLIN, -1L);
        } catch (NativeException e) {
            LibC.close(epfd);
            throw e;
        }
        this.thread = new Thread(this::run, "mrce-process-watcher");
        thread.setDaemon(true);
        thread.start();
    }

    /** Reports {@code sessionId} once the process of {@code pidFd} exits. */
    void watch(int pidFd, long sessionId) throws NativeException {
        LibC.epollCtl(epfd, LibC.EPOLL_CTL_ADD, pidFd, LibC.EPOLLIN | EPOLLONESHOT, sessionId);
    }

    private void run() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment events = arena.allocate(LibC.EPOLL_EVENT_SIZE * MAX_EVENTS, 8);
            ValueLayout.OfLong data = ValueLayout.JAVA_LONG.withByteAlignment(4);
            while (running) {
                int n = LibC.epollWait(epfd, events, MAX_EVENTS, -1);
                for (int i = 0; i < n; i++) {
                    long id = events.get(data, i * LibC.EPOLL_EVENT_SIZE + 4);
                    if (id != -1L) {
                        try {
                            onExit.accept(id);
                        } catch (RuntimeException e) {
                            LOG.warn("revoking session {}: {}", id, e.toString());
                        }
                    }
                }
            }
        }
    }

    @Override
    public void close() {
        running = false;
        try (Arena arena = Arena.ofConfined()) {
            LibC.write(wakeFd, arena.allocateFrom(ValueLayout.JAVA_LONG, 1L), 8);
        }
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LibC.close(wakeFd);
        LibC.close(epfd);
    }
}
